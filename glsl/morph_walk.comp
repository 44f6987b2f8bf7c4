#version 450
#extension GL_GOOGLE_include_directive : require
// Morph pass, full-precision deltas, for CPU devices (lavapipe): a uniform walk of the chunk's table, no
// barriers or shared memory (see morph_common.glsl, WALK).
#define WALK
#include "gen/morph_walk.glsl"
#include "morph_full.glsl"
#include "morph_common.glsl"
