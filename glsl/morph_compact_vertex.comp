#version 450
#extension GL_GOOGLE_include_directive : require
// Morph pass, compact snorm16 deltas, for CPU devices (lavapipe) and GPUs without subgroup ballots: one invocation
// per vertex adds the deltas of its active targets (a target bitmask per vertex); no barriers or shared memory
// (morph_common.glsl).
#define VERTEX_LISTS
#define SCALED_WEIGHTS              // weights x per-target scales, premultiplied per frame on the CPU
#include "gen/morph_compact_vertex.glsl"
#include "morph_snorm16.glsl"
#include "morph_common.glsl"
