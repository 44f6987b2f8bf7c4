#version 450
#extension GL_GOOGLE_include_directive : require
#extension GL_ARB_gpu_shader_int64 : require
#extension GL_EXT_scalar_block_layout : require
// bake_ubo.comp (bake.comp's comments say what it does) writing each plane's whole quads as two vertex pairs of
// 64-bit words (bake_body.glsl, BAKE_WIDE): vkmorph/bake.py picks it on CPU devices (GpuBaker.wide_stores), where
// llvmpipe's store loop over the lanes runs per component. Needs shaderInt64 and scalarBlockLayout.
#define BAKE_WIDE 1
#include "gen/bake_wide.glsl"
#include "bake_body.glsl"
