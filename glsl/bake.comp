#version 450
#extension GL_GOOGLE_include_directive : require
// Bake (vkmorph/bake.py): workgroup (x, y, z) = (vertices, item, run of frames of the batch). Reads one
// instance's vertices from the bound source (the morph output buffer, or the bake's copy of the rest vertices)
// as uvec4, transforms them by the frame's matrices and writes three planes of float x 3 (positions, normals,
// tangents), each laid out [frame][vertex][xyz] like the Bake's arrays: windows of the Bake's own result where the
// device imports host memory, else the slot's planes that the host copies out in one go per batch.
//   MODE_SKINNED: four-bone skinning, the code of skin.vert (skinning.glsl); palette at `matrix`.
//   MODE_RIGID:   the node's world matrix at `matrix`: normals by its cofactor, tangents by its 3x3, both
//                 renormalized with a zero fallback (a node scaled to zero gives zero normals, as bake_numpy).
//   MODE_COPY:    as stored (mesh space without skinning).
// Matrices in a storage buffer (the batch's); bake_ubo.comp is the same code with a uniform window of them.
#include "gen/bake.glsl"
#include "bake_body.glsl"
