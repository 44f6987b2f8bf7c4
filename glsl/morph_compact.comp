#version 450
#extension GL_GOOGLE_include_directive : require
// Sparse morph-target deformation, compact deltas: 24 bytes instead of 64. Position, normal and tangent deltas
// are snorm16 scaled per target (scales[weight index] = position, normal, tangent scale); the weight index is
// read first so an inactive target costs 8 bytes. Error per component <= sum(w * scale) / 65534.
#include "gen/morph_compact.glsl"
#include "morph_common.glsl"

void main() {
    if (gl_GlobalInvocationID.x >= pc.vertexCount) return;
    uint v = pc.firstVertex + gl_GlobalInvocationID.x;
    vec3 p = baseVertices[v].position.xyz;
    vec3 n0 = baseVertices[v].normal.xyz;
    vec3 t0 = baseVertices[v].tangent.xyz;
    vec3 n = n0;
    vec3 t = t0;
    uint end = vertexOffsets[v + 1];
    for (uint i = vertexOffsets[v]; i < end; ++i) {
        uvec2 c = deltas[i].c;
        float w = weights[c.y];
        if (w == 0.0) continue;
        uvec2 a = deltas[i].a;
        uvec2 b = deltas[i].b;
        vec2 pxy = unpackSnorm2x16(a.x);
        vec2 pzn = unpackSnorm2x16(a.y);
        vec2 nyz = unpackSnorm2x16(b.x);
        vec2 txy = unpackSnorm2x16(b.y);
        float tz = unpackSnorm2x16(c.x).x;
        vec3 s = w * scales[c.y].xyz;
        p += s.x * vec3(pxy, pzn.x);
        n += s.y * vec3(pzn.y, nyz);
        t += s.z * vec3(txy, tz);
    }
    writeVertex(v, p, normalizeOr(n, n0), normalizeOr(t, t0));
}
