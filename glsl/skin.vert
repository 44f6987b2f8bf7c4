#version 450
#extension GL_GOOGLE_include_directive : require
// Skinned items: reads the morph pass output (or the static vertex buffer) as vertex input and the skinning
// palette (skin matrices, one per joint) from a storage buffer. Used by the shadow, forward and outline passes.
#include "scene.glsl"
#include "skinning.glsl"
#include "gen/skinned_vertex.glsl"
#include "vertex_out.glsl"

void main() {
    mat4 skin = blendJoints(palette.joints[inJoints.x], palette.joints[inJoints.y], palette.joints[inJoints.z],
                            palette.joints[inJoints.w], inWeights);
    vec3 p = inPosition;
    vec3 n = inNormal;
    vec3 t = inTangent.xyz;
    skinVertex(skin, p, n, t);
    float heat = 0.0;
    for (int k = 0; k < 4; ++k) {
        heat += inWeights[k] * float(int(inJoints[k]) == item.heatJoint);   // no branch on a push constant
    }
    emitVertex(p, n, vec4(t, inTangent.w), inTexcoord, heat);
}
