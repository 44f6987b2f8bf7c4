#version 450
#extension GL_GOOGLE_include_directive : require
// Morphing crowd primitives skinned in the vertex shader (render/crowd_render.py, mode "vertex", pulled): every
// instance's morphed SKINNED_VERTEX vertices are its own range of the morph output, pulled from set 1's
// crowd_vertices instead of being vertex input, so one instanced draw covers a run of consecutive instances:
// instance gl_InstanceIndex (firstInstance included) reads its vertex gl_VertexIndex at vec4 gl_InstanceIndex x
// item.instanceVec4 + gl_VertexIndex x PULLED_SKINNED_VEC4 (position, normal, tangent, texcoord, joints as uint
// bits, weights: the SKINNED_VERTEX dtype). The rest is crowd_skin.vert's: the instance's world-space palette in
// set 1's palette at gl_InstanceIndex x item.instanceMatrices + item.matrixFirst, skinning.glsl's blend. Binding 1
// (colour, TEXCOORD_1: shared by the instances) stays vertex input.
#include "scene.glsl"
#include "skinning.glsl"
#include "vertex_out.glsl"

void main() {
    uint v = uint(gl_InstanceIndex) * uint(item.instanceVec4) + uint(gl_VertexIndex) * PULLED_SKINNED_VEC4;
    vec4 a = pulled.values[v];        // position.xyz, normal.x
    vec4 b = pulled.values[v + 1u];   // normal.yz, tangent.xy
    vec4 c = pulled.values[v + 2u];   // tangent.zw, texcoord
    uvec4 joints = floatBitsToUint(pulled.values[v + 3u]);
    vec4 weights = pulled.values[v + 4u];
    uint base = uint(gl_InstanceIndex) * uint(item.instanceMatrices) + uint(item.matrixFirst);
    mat4 skin = blendJoints(palette.joints[base + joints.x], palette.joints[base + joints.y],
                            palette.joints[base + joints.z], palette.joints[base + joints.w], weights);
    vec3 p = a.xyz;
    vec3 n = vec3(a.w, b.xy);
    vec3 t = vec3(b.zw, c.x);
    skinVertex(skin, p, n, t);
    float heat = 0.0;
    for (int k = 0; k < 4; ++k) {
        heat += weights[k] * float(int(joints[k]) == item.heatJoint);   // no branch on a push constant
    }
    emitVertex(p, n, vec4(t, c.y), c.zw, heat);
}
