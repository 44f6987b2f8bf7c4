#version 450
#extension GL_GOOGLE_include_directive : require
// Outline of the selected mesh: drawn where the stencil written by its forward draw is not set.
#include "scene.glsl"
#include "gen/scene_varyings_in.glsl"

#include "gen/scene_target_out.glsl"

void main() {
    outColor = frame.outlineColor;
}
