#version 450
#extension GL_GOOGLE_include_directive : require
// Shadow pass for alpha-tested materials: MASK cuts at its cutoff, BLEND casts where alpha >= 0.5.
// Depth only; opaque materials use the shadow pipeline without a fragment shader.
#include "scene.glsl"
#include "gen/scene_varyings_in.glsl"
#include "material.glsl"

void main() {
    float cutoff = material.modes.x == ALPHA_MASK ? material.params.w : 0.5;
    if (baseColor().a < cutoff) discard;
}
