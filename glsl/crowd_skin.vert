#version 450
#extension GL_GOOGLE_include_directive : require
// Crowd items skinned in the vertex shader (the vertex-shader path of render/skin_cost.py): set 1's buffer holds
// every instance's world-space palette, item.instanceMatrices mat4s each; gl_InstanceIndex (firstInstance
// included) picks the instance's, so instances sharing one vertex range are one instanced draw. The skinning
// code is skin.vert's (skinning.glsl); the palette is world space, so the model matrix is item.model (identity).
// item.matrixFirst: the skin's block within an instance's matrices (GPU crowd animation's palette rows; else 0).
#include "scene.glsl"
#include "skinning.glsl"
#include "gen/skinned_vertex.glsl"
#include "vertex_out.glsl"

void main() {
    uint base = uint(gl_InstanceIndex) * uint(item.instanceMatrices) + uint(item.matrixFirst);
    mat4 skin = blendJoints(palette.joints[base + inJoints.x], palette.joints[base + inJoints.y],
                            palette.joints[base + inJoints.z], palette.joints[base + inJoints.w], inWeights);
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
