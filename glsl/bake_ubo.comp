#version 450
#extension GL_GOOGLE_include_directive : require
// bake.comp (its comments say what it does) with the frames' matrices in a dynamic uniform buffer: a window of
// BAKE_UBO_MATRICES mat4 from frame pc.matrixFrame on, placed by the dispatch's dynamic offset (vkmorph/bake.py).
// llvmpipe lowers each storage-buffer load to a loop over the lanes; a uniform load is one load, which makes the
// palette and world-matrix reads several times cheaper there (bench/2026-12-02-lavapipe-bake-kernel.txt).
#include "gen/bake_ubo.glsl"
#include "bake_body.glsl"
