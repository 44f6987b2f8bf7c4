#version 450
#extension GL_GOOGLE_include_directive : require
// Crowd items drawn as plain vertices (render/crowd_render.py): rigid primitives (morphed or not) with one model
// matrix per instance, and compute-skinned ones (world-space vertices from crowd_skin.comp, identity). Set 1's
// buffer holds item.instanceMatrices mat4s per instance; gl_InstanceIndex (firstInstance included) picks the
// instance, so instances sharing one vertex range are one instanced draw. instanceMatrices = 0: matrix 0 for
// every instance (the identity palette of compute-skinned items). item.matrixFirst: the item's first matrix within
// an instance's (GPU crowd animation: anim.palettes rows hold every skin's block and the rigid nodes' model columns).
#include "scene.glsl"
#include "gen/static_vertex.glsl"
#include "vertex_out.glsl"

void main() {
    mat4 model = palette.joints[uint(gl_InstanceIndex) * uint(item.instanceMatrices) + uint(item.matrixFirst)];
    emitVertexModel(model, inPosition, inNormal, inTangent, inTexcoord, 0.0);
}
