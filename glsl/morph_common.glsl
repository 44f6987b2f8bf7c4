// Shared by morph.comp (full-precision deltas) and morph_compact.comp (16-bit deltas).
// Batched layout: every morphing primitive of the runtime lives in one set of buffers, so one descriptor set
// and, when many primitives changed, one dispatch cover them all. Vertex v (global) reads its base vertex, its
// CSR delta range and writes position/normal/tangent.xyz at outWords[outWord[v] + 0/3/6]: both vertex layouts
// (static 48 B, skinned 80 B) start with position, normal, tangent, so only the per-vertex base word differs.

// Declarations (bindings, structs, push constants, NORMALIZE_EPSILON) come from the generated header each
// kernel includes first: gen/morph.glsl or gen/morph_compact.glsl (vkmorph/gpu/interface.py).

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
