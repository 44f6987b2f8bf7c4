#version 450
#extension GL_GOOGLE_include_directive : require
// Sparse morph-target deformation (seed 000), full-precision deltas: one invocation per vertex, loop over its
// CSR delta range, out = base + sum(weight[metadata.x] * delta), normal/tangent renormalized with fallback.
#include "gen/morph.glsl"
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
        float w = weights[deltas[i].metadata.x];
        if (w == 0.0) continue;                 // inactive target: skip its 48-byte payload
        p += w * deltas[i].position.xyz;
        n += w * deltas[i].normal.xyz;
        t += w * deltas[i].tangent.xyz;
    }
    writeVertex(v, p, normalizeOr(n, n0), normalizeOr(t, t0));
}
