#version 450
#extension GL_GOOGLE_include_directive : require
// Unskinned items (morph-only meshes, the ground plane): same outputs as skin.vert.
#include "scene.glsl"
#include "gen/static_vertex.glsl"
#include "vertex_out.glsl"

void main() {
    emitVertex(inPosition, inNormal, inTangent, inTexcoord, 0.0);
}
