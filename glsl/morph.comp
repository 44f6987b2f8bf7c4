#version 450
#extension GL_GOOGLE_include_directive : require
// Morph pass, full-precision deltas (36 bytes each), for GPUs: active blocks compacted per workgroup.
#ifndef EXPERIMENT                  // bench/variants.py builds the measured alternatives
#define SUBGROUP                    // compaction by subgroup ballots (the shared-memory scan is the alternative)
#define PREFETCH                    // block masks loaded with the weights (one memory round trip less)
#define LATE_BASE                   // base vertex loaded after the deltas: fewer live registers, more workgroups
#endif
#include "gen/morph.glsl"
#include "morph_full.glsl"
#include "morph_common.glsl"
