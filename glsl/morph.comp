#version 450
// Sparse morph-target deformation (seed 000): one invocation per vertex, loop over its CSR delta range,
// out = base + sum(weight[target] * delta). Writes position, normal and tangent.xyz into the vertex buffer
// at vertex * strideWords + offsetWords; texcoord, joints, weights and tangent.w stay as uploaded.
layout(local_size_x = 64) in;

struct BaseVertex {      // 48 bytes, numpy vkmorph.morph.gpu_data.BASE_VERTEX
    vec4 position;
    vec4 normal;
    vec4 tangent;        // w = handedness (not written back)
};

struct MorphDelta {      // 64 bytes, numpy vkmorph.morph.gpu_data.MORPH_DELTA
    vec4 position;
    vec4 normal;
    vec4 tangent;
    uvec4 metadata;      // x = target index
};

layout(std430, set = 0, binding = 0) readonly buffer BaseVertices { BaseVertex baseVertices[]; };
layout(std430, set = 0, binding = 1) readonly buffer VertexOffsets { uint vertexOffsets[]; };
layout(std430, set = 0, binding = 2) readonly buffer Deltas { MorphDelta deltas[]; };
layout(std430, set = 0, binding = 3) readonly buffer Weights { float weights[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Output { float outWords[]; };

layout(push_constant) uniform Push {
    uint vertexCount;
    uint strideWords;
    uint positionOffsetWords;
    uint normalOffsetWords;
    uint tangentOffsetWords;
} pc;

const float NORMALIZE_EPSILON = 1e-12;  // squared length; same constant in vkmorph/morph/reference.py

vec3 normalizeOr(vec3 v, vec3 fallback) {
    float len2 = dot(v, v);
    return len2 > NORMALIZE_EPSILON ? v * inversesqrt(len2) : fallback;
}

void main() {
    uint v = gl_GlobalInvocationID.x;
    if (v >= pc.vertexCount) return;

    vec3 p = baseVertices[v].position.xyz;
    vec3 n0 = baseVertices[v].normal.xyz;
    vec3 t0 = baseVertices[v].tangent.xyz;
    vec3 n = n0;
    vec3 t = t0;
    uint end = vertexOffsets[v + 1];
    for (uint i = vertexOffsets[v]; i < end; ++i) {
        float w = weights[deltas[i].metadata.x];
        if (w == 0.0) continue;                 // inactive target: skip its 48-byte payload
        p += w * deltas[i].position.xyz;
        n += w * deltas[i].normal.xyz;
        t += w * deltas[i].tangent.xyz;
    }
    n = normalizeOr(n, n0);
    t = normalizeOr(t, t0);

    uint o = v * pc.strideWords;
    uint po = o + pc.positionOffsetWords;
    uint no = o + pc.normalOffsetWords;
    uint to = o + pc.tangentOffsetWords;
    outWords[po] = p.x; outWords[po + 1] = p.y; outWords[po + 2] = p.z;
    outWords[no] = n.x; outWords[no + 1] = n.y; outWords[no + 2] = n.z;
    outWords[to] = t.x; outWords[to + 1] = t.y; outWords[to + 2] = t.z;
}
