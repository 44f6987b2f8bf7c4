#version 450
#extension GL_GOOGLE_include_directive : require
// Crowd primitives whose instances each have their own STATIC_VERTEX range (render/crowd_render.py): compute-skinned
// ones (world-space vertices written by crowd_skin.comp) and morphing rigid ones (the morph output), every
// instance's in its own range of one buffer, pulled from set 1's crowd_vertices instead of being vertex input, so
// one instanced draw covers a run of consecutive instances: instance gl_InstanceIndex (firstInstance included)
// reads its vertex gl_VertexIndex at vec4 gl_InstanceIndex x item.instanceVec4 + gl_VertexIndex x
// PULLED_VERTEX_VEC4 (position, normal, tangent, texcoord packed as the STATIC_VERTEX dtype). Binding 1 (colour,
// TEXCOORD_1: shared by the instances) stays vertex input. The model matrix is read as crowd_static.vert reads it:
// matrix 0 of the identity palette for compute-skinned items (instanceMatrices = 0), the instance's model matrix
// for rigid ones.
#include "scene.glsl"
#include "vertex_out.glsl"

void main() {
    uint v = uint(gl_InstanceIndex) * uint(item.instanceVec4) + uint(gl_VertexIndex) * PULLED_VERTEX_VEC4;
    vec4 a = pulled.values[v];        // position.xyz, normal.x
    vec4 b = pulled.values[v + 1u];   // normal.yz, tangent.xy
    vec4 c = pulled.values[v + 2u];   // tangent.zw, texcoord
    mat4 model = palette.joints[uint(gl_InstanceIndex) * uint(item.instanceMatrices) + uint(item.matrixFirst)];
    emitVertexModel(model, a.xyz, vec3(a.w, b.xy), vec4(b.zw, c.xy), c.zw, 0.0);
}
