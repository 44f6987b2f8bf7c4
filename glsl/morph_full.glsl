// Full-precision delta streams (exact): included by morph.comp and morph_vertex.comp.
#define WEIGHT float


float activeWeight(uint slot, float w) { return w; }
#define SLOT_WEIGHT(s) weights[s]

void accumulate1(uint d, float w, inout vec3 p, inout vec3 n, inout vec3 t) {
    vec4 a = deltaA[2u * d], c = deltaA[2u * d + 1u];
    p += w * a.xyz;
    n += w * vec3(a.w, c.xy);
    t += w * vec3(c.zw, deltaB[d]);
}

void accumulate4(uint d0, uint d1, uint d2, uint d3, float w0, float w1, float w2, float w3,
                 inout vec3 p, inout vec3 n, inout vec3 t) {
    vec4 a0 = deltaA[2u * d0], c0 = deltaA[2u * d0 + 1u];
    vec4 a1 = deltaA[2u * d1], c1 = deltaA[2u * d1 + 1u];
    vec4 a2 = deltaA[2u * d2], c2 = deltaA[2u * d2 + 1u];
    vec4 a3 = deltaA[2u * d3], c3 = deltaA[2u * d3 + 1u];
    float z0 = deltaB[d0], z1 = deltaB[d1], z2 = deltaB[d2], z3 = deltaB[d3];
    p += w0 * a0.xyz + w1 * a1.xyz + w2 * a2.xyz + w3 * a3.xyz;
    n += w0 * vec3(a0.w, c0.xy) + w1 * vec3(a1.w, c1.xy) + w2 * vec3(a2.w, c2.xy) + w3 * vec3(a3.w, c3.xy);
    t += w0 * vec3(c0.zw, z0) + w1 * vec3(c1.zw, z1) + w2 * vec3(c2.zw, z2) + w3 * vec3(c3.zw, z3);
}
