#version 450
#extension GL_GOOGLE_include_directive : require
// Morph pass, compact snorm16 deltas (18 bytes each), for GPUs: active blocks compacted per workgroup.
#include "morph_snorm16.glsl"
#include "morph_common.glsl"
