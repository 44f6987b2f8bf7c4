#version 450
#extension GL_GOOGLE_include_directive : require
// Morph pass, full-precision deltas (36 bytes each), for GPUs: active blocks compacted per workgroup.
#include "morph_full.glsl"
#include "morph_common.glsl"
