#version 450
#extension GL_GOOGLE_include_directive : require
// Optional pass after the morph pass: exact area-weighted vertex normals of the morphed surface, every frame.
// One invocation per vertex (batch-global index v): sum the cross products (2 x area x unit normal) of the
// triangles that use v, read from the morphed positions of this output slot; normalize; then re-orthogonalize
// the morphed tangent against the new normal (Gram-Schmidt, w untouched). Adjacency is by vertex index, so
// vertices the file split along a hard edge keep their own sides' faces: hard edges stay hard. No atomics:
// each triangle is visited by its three vertices. A vertex without usable faces keeps the morphed normal.
#include "gen/normals.glsl"

vec3 position(uint v) {
    uint o = outWord[v];
    return vec3(outWords[o], outWords[o + 1], outWords[o + 2]);
}

void main() {
    if (gl_GlobalInvocationID.x >= pc.vertexCount) return;
    uint v = pc.firstVertex + gl_GlobalInvocationID.x;
    vec3 acc = vec3(0.0);
    uint end = faceOffsets[v + 1];
    for (uint i = faceOffsets[v]; i < end; ++i) {
        uint f = 3u * vertexFaces[i];
        vec3 a = position(faceVertices[f]);
        acc += cross(position(faceVertices[f + 1]) - a, position(faceVertices[f + 2]) - a);
    }
    float len2 = dot(acc, acc);
    if (len2 <= AREA_EPSILON) return;
    vec3 n = acc * inversesqrt(len2);
    uint o = outWord[v];
    vec3 t = vec3(outWords[o + 6], outWords[o + 7], outWords[o + 8]);
    vec3 tp = t - n * dot(n, t);
    float t2 = dot(tp, tp);
    if (t2 > NORMALIZE_EPSILON) t = tp * inversesqrt(t2);
    outWords[o + 3] = n.x; outWords[o + 4] = n.y; outWords[o + 5] = n.z;
    outWords[o + 6] = t.x; outWords[o + 7] = t.y; outWords[o + 8] = t.z;
}
