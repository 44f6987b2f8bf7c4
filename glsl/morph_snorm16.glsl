// Compact delta streams: included by morph_compact.comp and morph_compact_vertex.comp.
// 18 bytes per delta (snorm16, scaled per target: scales[slot] = position, normal,
// tangent scale). Error per component <= sum(w * scale) / 65534. See morph_common.glsl for the layout.
#define WEIGHT vec4


#ifdef SCALED_WEIGHTS
// per-vertex kernel: the frame's weights arrive multiplied by the scales (vec4 per slot, see morph_batch.py)
#define SLOT_WEIGHT(s) weights[s]
#else
vec4 activeWeight(uint slot, float w) { return w * scales[slot]; }
#define SLOT_WEIGHT(s) activeWeight(s, weights[s])
#endif

void add1(uint d, vec4 w, inout vec3 p, inout vec3 n, inout vec3 t, uvec4 a, uint z) {
    vec2 pxy = unpackSnorm2x16(a.x), pzn = unpackSnorm2x16(a.y), nyz = unpackSnorm2x16(a.z);
    vec2 txy = unpackSnorm2x16(a.w);
    float tz = unpackSnorm2x16(z >> (16u * (d & 1u))).x;
    p += w.x * vec3(pxy, pzn.x);
    n += w.y * vec3(pzn.y, nyz);
    t += w.z * vec3(txy, tz);
}

void accumulate1(uint d, vec4 w, inout vec3 p, inout vec3 n, inout vec3 t) {
    add1(d, w, p, n, t, deltaA[d], deltaB[d >> 1u]);
}

void accumulate4(uint d0, uint d1, uint d2, uint d3, vec4 w0, vec4 w1, vec4 w2, vec4 w3,
                 inout vec3 p, inout vec3 n, inout vec3 t) {
    uvec4 a0 = deltaA[d0], a1 = deltaA[d1], a2 = deltaA[d2], a3 = deltaA[d3];
    uint z0 = deltaB[d0 >> 1u], z1 = deltaB[d1 >> 1u], z2 = deltaB[d2 >> 1u], z3 = deltaB[d3 >> 1u];
    add1(d0, w0, p, n, t, a0, z0);
    add1(d1, w1, p, n, t, a1, z1);
    add1(d2, w2, p, n, t, a2, z2);
    add1(d3, w3, p, n, t, a3, z3);
}
