#version 450
#extension GL_GOOGLE_include_directive : require
// Skinned items: reads the morph pass output (or the static vertex buffer) as vertex input and the skinning
// palette (skin matrices, one per joint) from a storage buffer.
#include "scene.glsl"
#include "skinning.glsl"
#include "gen/skinned_vertex.glsl"

layout(location = 0) out vec3 outWorld;
layout(location = 1) out vec3 outNormal;
layout(location = 2) out vec2 outTexcoord;
layout(location = 3) out float outHeat;

void main() {
    mat4 skin = blendJoints(palette.joints[inJoints.x], palette.joints[inJoints.y], palette.joints[inJoints.z],
                            palette.joints[inJoints.w], inWeights);
    vec3 p = inPosition;
    vec3 n = inNormal;
    vec3 t = inTangent.xyz;
    skinVertex(skin, p, n, t);
    vec4 world = item.model * vec4(p, 1.0);
    outWorld = world.xyz;
    outNormal = transpose(inverse(mat3(item.model))) * n;
    outTexcoord = inTexcoord;
    float heat = 0.0;
    for (int k = 0; k < 4; ++k) {
        if (int(inJoints[k]) == item.heatJoint) heat += inWeights[k];
    }
    outHeat = heat;
    gl_Position = (item.pass == 1 ? frame.lightViewProj : frame.viewProj) * world;
}
