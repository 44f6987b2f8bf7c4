#version 450
#extension GL_GOOGLE_include_directive : require
// Coalesced copy, one uvec4 per invocation: the round-trip test kernel and the bandwidth ceiling the
// benchmark compares the morph pass against. dst = src ^ xorMask (xorMask = 0: a pure copy).
#include "gen/copy.glsl"

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    dst[i] = src[i] ^ uvec4(pc.xorMask);
}
