#version 450
#extension GL_GOOGLE_include_directive : require
// Bake (vkmorph/bake.py): workgroup (x, y, z) = (64 vertices, item, frame of the batch). Reads one instance's
// vertices from the bound source (the morph output buffer, or the bake's copy of the rest vertices) as uvec4, transforms them by the frame's matrices and writes three planes of float x 3 (positions, normals,
// tangents), each laid out [frame][vertex][xyz] like the Bake's arrays, so the host copies each plane in one go.
//   MODE_SKINNED: four-bone skinning, the code of skin.vert (skinning.glsl); palette at `matrix`.
//   MODE_RIGID:   the node's world matrix at `matrix`: normals by its cofactor, tangents by its 3x3, both
//                 renormalized with a zero fallback (a node scaled to zero gives zero normals, as bake_numpy).
//   MODE_COPY:    as stored (mesh space without skinning).
#include "gen/bake.glsl"
#include "skinning.glsl"

vec3 unitOrZero(vec3 v) { float l = length(v); return l > 1e-20 ? v / l : vec3(0.0); }

void write3(uint o, vec3 v) {
    dst.values[o] = v.x;
    dst.values[o + 1] = v.y;
    dst.values[o + 2] = v.z;
}

// The vertex layouts of asset/model.py (bake.py checks them): position, normal, tangent at words 0, 3, 6, and
// for skinned vertices joints and weights at words 12 and 16, so a vertex is read as 3 (or 5) whole uvec4.
void readVertex(uint base, out vec3 p, out vec3 n, out vec3 t) {
    vec4 a = uintBitsToFloat(src.quads[base]);
    vec4 b = uintBitsToFloat(src.quads[base + 1]);
    vec4 c = uintBitsToFloat(src.quads[base + 2]);
    p = a.xyz;
    n = vec3(a.w, b.xy);
    t = vec3(b.zw, c.x);
}

void writeVertex(uint o, vec3 p, vec3 n, vec3 t) {
    write3(o, p);
    write3(pc.planeFloats + o, n);
    write3(2 * pc.planeFloats + o, t);
}

// Grid-stride over the item's vertices (x) and a run of frames per workgroup (z): on a GPU the host dispatches
// one workgroup per 64 vertices and frame; on a CPU device (lavapipe), where each workgroup costs tens of
// microseconds of its own, one workgroup per item and run of frames (vkmorph/bake.py _shape). The mode is the
// item's (uniform in a workgroup) and a rigid part's matrices are formed once per frame, not per vertex.
void main() {
    BakeItem it = items[pc.itemFirst + gl_WorkGroupID.y];
    uint f0 = pc.frameFirst + gl_WorkGroupID.z * pc.framesPerGroup;
    uint f1 = min(f0 + pc.framesPerGroup, pc.frameFirst + pc.frameCount);
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint quads = it.strideWords / 4;
    for (uint frame = f0; frame < f1; ++frame) {
        uint m = frame * pc.matricesPerFrame + it.matrix;
        uint out0 = 3 * (frame * pc.frameVertices + it.outVertex);
        vec3 p, n, t;
        if (it.mode == MODE_SKINNED) {
            for (uint v = gl_GlobalInvocationID.x; v < it.vertexCount; v += step) {
                uint base = it.sourceWord / 4 + v * quads;
                readVertex(base, p, n, t);
                uvec4 j = src.quads[base + 3] + m;
                vec4 w = uintBitsToFloat(src.quads[base + 4]);
                mat4 skin = blendJoints(matrices[j.x], matrices[j.y], matrices[j.z], matrices[j.w], w);
                skinVertex(skin, p, n, t);
                writeVertex(out0 + 3 * v, p, n, t);
            }
        } else if (it.mode == MODE_RIGID) {
            mat4 world = matrices[m];
            mat3 a = mat3(world);
            mat3 cofactor = mat3(cross(a[1], a[2]), cross(a[2], a[0]), cross(a[0], a[1]));
            for (uint v = gl_GlobalInvocationID.x; v < it.vertexCount; v += step) {
                readVertex(it.sourceWord / 4 + v * quads, p, n, t);
                writeVertex(out0 + 3 * v, (world * vec4(p, 1.0)).xyz, unitOrZero(cofactor * n), unitOrZero(a * t));
            }
        } else {
            for (uint v = gl_GlobalInvocationID.x; v < it.vertexCount; v += step) {
                readVertex(it.sourceWord / 4 + v * quads, p, n, t);
                writeVertex(out0 + 3 * v, p, n, t);
            }
        }
    }
}
