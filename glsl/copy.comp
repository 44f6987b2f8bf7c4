#version 450
#extension GL_GOOGLE_include_directive : require
// Grid-stride coalesced copy, one uvec4 per invocation per step: the bandwidth ceiling the benchmark compares
// the morph pass against (dispatch any number of workgroups; each invocation strides by the grid size), and
// the round-trip test kernel: dst = src ^ xorMask (xorMask = 0: a pure copy).
#include "gen/copy.glsl"

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += stride) dst[i] = src[i] ^ uvec4(pc.xorMask);
}
