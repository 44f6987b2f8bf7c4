#version 450
#extension GL_GOOGLE_include_directive : require
// Unskinned items (morph-only meshes, the ground plane): same outputs as skin.vert.
#include "scene.glsl"
#include "gen/static_vertex.glsl"

layout(location = 0) out vec3 outWorld;
layout(location = 1) out vec3 outNormal;
layout(location = 2) out vec2 outTexcoord;
layout(location = 3) out float outHeat;

void main() {
    vec4 world = item.model * vec4(inPosition, 1.0);
    outWorld = world.xyz;
    outNormal = transpose(inverse(mat3(item.model))) * inNormal;
    outTexcoord = inTexcoord;
    outHeat = 0.0;
    gl_Position = (item.pass == 1 ? frame.lightViewProj : frame.viewProj) * world;
}
