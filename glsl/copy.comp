#version 450
// Grid-stride coalesced copy, one uvec4 per invocation per step: the bandwidth ceiling the benchmark compares
// the morph pass against (dispatch any number of workgroups; each invocation strides by the grid size), and
// the round-trip test kernel: out = in ^ xorMask (0 for a pure copy).
layout(local_size_x = 256) in;

layout(std430, binding = 0) readonly buffer Src { uvec4 src[]; };
layout(std430, binding = 1) writeonly buffer Dst { uvec4 dst[]; };

layout(push_constant) uniform Push {
    uint count;   // number of uvec4 elements
    uint xorMask; // 0 for a pure copy; tests use a mask to prove the kernel ran
} pc;

void main() {
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.count; i += stride) dst[i] = src[i] ^ uvec4(pc.xorMask);
}
