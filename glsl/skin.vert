#version 450
#extension GL_GOOGLE_include_directive : require
// Skinned items: reads the morph pass output (or the static vertex buffer) as vertex input and the skinning
// palette (skin matrices, one per joint) from a storage buffer. Used by the shadow, forward and outline passes.
#include "scene.glsl"
#include "skinning.glsl"
#include "vertex_out.glsl"

layout(location = 0) in vec3 inPosition;
layout(location = 1) in vec3 inNormal;
layout(location = 2) in vec4 inTangent;
layout(location = 3) in vec2 inTexcoord;
layout(location = 4) in uvec4 inJoints;
layout(location = 5) in vec4 inWeights;

layout(std430, set = 1, binding = 0) readonly buffer Palette { mat4 joints[]; } palette;

void main() {
    mat4 skin = blendJoints(palette.joints[inJoints.x], palette.joints[inJoints.y], palette.joints[inJoints.z],
                            palette.joints[inJoints.w], inWeights);
    vec3 p = inPosition;
    vec3 n = inNormal;
    vec3 t = inTangent.xyz;
    skinVertex(skin, p, n, t);
    float heat = 0.0;
    for (int k = 0; k < 4; ++k) {
        if (int(inJoints[k]) == item.heatJoint) heat += inWeights[k];
    }
    emitVertex(p, n, vec4(t, inTangent.w), inTexcoord, heat);
}
