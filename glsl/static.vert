#version 450
#extension GL_GOOGLE_include_directive : require
// Unskinned items (morph-only meshes, the ground plane): same outputs as skin.vert.
#include "scene.glsl"
#include "vertex_out.glsl"

layout(location = 0) in vec3 inPosition;
layout(location = 1) in vec3 inNormal;
layout(location = 2) in vec4 inTangent;
layout(location = 3) in vec2 inTexcoord;

void main() {
    emitVertex(inPosition, inNormal, inTangent, inTexcoord, 0.0);
}
