#version 450
// Coalesced copy, one uvec4 per invocation: the round-trip test kernel and the bandwidth ceiling the
// benchmark compares the morph pass against. out = in * scale (scale = 1 for a pure copy is exact).
layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Src { uvec4 src[]; };
layout(std430, binding = 1) writeonly buffer Dst { uvec4 dst[]; };

layout(push_constant) uniform Push {
    uint count;   // number of uvec4 elements
    uint xorMask; // 0 for a pure copy; tests use a mask to prove the kernel ran
} pc;

void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i >= pc.count) return;
    dst[i] = src[i] ^ uvec4(pc.xorMask);
}
