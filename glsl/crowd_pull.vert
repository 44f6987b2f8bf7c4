#version 450
#extension GL_GOOGLE_include_directive : require
// Compute-skinned crowd primitives (render/crowd_render.py, mode "compute"): world-space STATIC_VERTEX vertices
// written by crowd_skin.comp, every instance's in its own range of one output buffer, pulled from set 1's
// crowd_vertices instead of being vertex input, so one instanced draw covers a run of consecutive instances:
// instance gl_InstanceIndex (firstInstance included) reads vertex gl_InstanceIndex x item.instanceVertices +
// gl_VertexIndex (PULLED_VERTEX_VEC4 vec4s: position, normal, tangent, texcoord packed as the STATIC_VERTEX dtype).
// Binding 1 (colour, TEXCOORD_1: shared by the instances) stays vertex input. The model matrix is matrix 0 of the
// identity palette, as crowd_static.vert reads it for these items (instanceMatrices = 0).
#include "scene.glsl"
#include "vertex_out.glsl"

void main() {
    uint v = (uint(gl_InstanceIndex) * uint(item.instanceVertices) + uint(gl_VertexIndex)) * PULLED_VERTEX_VEC4;
    vec4 a = pulled.values[v];        // position.xyz, normal.x
    vec4 b = pulled.values[v + 1u];   // normal.yz, tangent.xy
    vec4 c = pulled.values[v + 2u];   // tangent.zw, texcoord
    mat4 model = palette.joints[uint(gl_InstanceIndex) * uint(item.instanceMatrices) + uint(item.matrixFirst)];
    emitVertexModel(model, a.xyz, vec3(a.w, b.xy), vec4(b.zw, c.xy), c.zw, 0.0);
}
