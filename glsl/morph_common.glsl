// Shared by morph.comp (full-precision deltas) and morph_compact.comp (16-bit deltas).
// Batched layout: every morphing primitive of the runtime lives in one set of buffers, so one descriptor set
// and, when many primitives changed, one dispatch cover them all. Vertex v (global) reads its base vertex, its
// CSR delta range and writes position/normal/tangent.xyz at outWords[outWord[v] + 0/3/6]: both vertex layouts
// (static 48 B, skinned 80 B) start with position, normal, tangent, so only the per-vertex base word differs.

struct BaseVertex {      // 48 bytes, numpy vkmorph.morph.gpu_data.BASE_VERTEX
    vec4 position;
    vec4 normal;
    vec4 tangent;        // w = handedness (not written back)
};

layout(std430, set = 0, binding = 0) readonly buffer BaseVertices { BaseVertex baseVertices[]; };
layout(std430, set = 0, binding = 1) readonly buffer VertexOffsets { uint vertexOffsets[]; };
layout(std430, set = 0, binding = 3) readonly buffer Weights { float weights[]; };
layout(std430, set = 0, binding = 4) writeonly buffer Output { float outWords[]; };
layout(std430, set = 0, binding = 5) readonly buffer OutputBase { uint outWord[]; };

layout(push_constant) uniform Push {
    uint firstVertex;    // global index of the first vertex of this dispatch
    uint vertexCount;
} pc;

const float NORMALIZE_EPSILON = 1e-12;  // squared length; same constant in vkmorph/morph/reference.py

vec3 normalizeOr(vec3 v, vec3 fallback) {
    float len2 = dot(v, v);
    return len2 > NORMALIZE_EPSILON ? v * inversesqrt(len2) : fallback;
}

void writeVertex(uint v, vec3 p, vec3 n, vec3 t) {
    uint o = outWord[v];
    outWords[o] = p.x; outWords[o + 1] = p.y; outWords[o + 2] = p.z;
    outWords[o + 3] = n.x; outWords[o + 4] = n.y; outWords[o + 5] = n.z;
    outWords[o + 6] = t.x; outWords[o + 7] = t.y; outWords[o + 8] = t.z;
}
