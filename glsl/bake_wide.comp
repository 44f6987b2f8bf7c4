#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_ARB_gpu_shader_int64 : require
#extension GL_EXT_scalar_block_layout : require
// bake.comp (its comments say what it does) for CPU devices (vkmorph/bake.py, GpuBaker.wide_stores): each plane's
// whole quads written as two vertex pairs of 64-bit words (llvmpipe's store loop over the lanes runs per
// component), the batch's matrices read through a uniform texel buffer (a vector gather on llvmpipe, where a
// uniform-buffer load at a per-item offset is a load per lane): bake_body.glsl, BAKE_WIDE. Needs shaderInt64 and
// scalarBlockLayout.
#define BAKE_WIDE 1
#include "gen/bake_wide.glsl"
#include "bake_body.glsl"
