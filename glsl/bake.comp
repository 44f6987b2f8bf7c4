#version 450
#extension GL_GOOGLE_include_directive : require
// Bake (vkmorph/bake.py): workgroup (x, y, z) = (vertices, item, run of frames of the batch). Reads one
// instance's vertices from the bound source (the morph output buffer, or the bake's copy of the rest vertices)
// as uvec4, transforms them by the frame's matrices and writes three planes of float x 3 (positions, normals,
// tangents), each laid out [frame][vertex][xyz] like the Bake's arrays, so the host copies a batch in one go.
//   MODE_SKINNED: four-bone skinning, the code of skin.vert (skinning.glsl); palette at `matrix`.
//   MODE_RIGID:   the node's world matrix at `matrix`: normals by its cofactor, tangents by its 3x3, both
//                 renormalized with a zero fallback (a node scaled to zero gives zero normals, as bake_numpy).
//   MODE_COPY:    as stored (mesh space without skinning).
#include "gen/bake.glsl"
#include "skinning.glsl"

// Vertices one invocation holds in registers while it loops over the frames. On lavapipe every storage-buffer
// load is one scalar load per lane, even at an address uniform over the workgroup (Mesa 22.3: an item's
// world matrix at `matrices[it.matrix]` cost as much as one gathered per lane), so a rigid item's 16-float
// matrix is read once per frame for K vertices instead of once per (vertex, frame); measured on lavapipe
// (/tmp harness, 64 frames of RobotExpressive): matrix loads were half of the rigid parts' time, the nine
// scalar output stores per vertex and frame the other half.
const uint K = 4;

vec3 unitOrZero(vec3 v) { float l = length(v); return l > 1e-20 ? v / l : vec3(0.0); }

void write3(uint o, vec3 v) {
    dst.values[o] = v.x;
    dst.values[o + 1] = v.y;
    dst.values[o + 2] = v.z;
}

void writeVertex(uint o, vec3 p, vec3 n, vec3 t) {
    write3(o, p);
    write3(pc.planeFloats + o, n);
    write3(2 * pc.planeFloats + o, t);
}

// The 3x4 affine part of a joint matrix, weighted: the bottom row of a palette matrix is (0, 0, 0, 1) (affine
// transforms), so only 12 of its 16 floats are read (a quarter fewer loads; skinVertex uses only these).
mat4 weighted(uint m, float w) {
    return mat4(vec4(w * matrices[m][0].xyz, 0.0), vec4(w * matrices[m][1].xyz, 0.0),
                vec4(w * matrices[m][2].xyz, 0.0), vec4(w * matrices[m][3].xyz, w));
}

// Grid-stride over the item's vertices (x), K at a time per invocation, and a run of frames per workgroup (z):
// on a GPU the host dispatches a workgroup per 64 vertices and frame; on a CPU device (lavapipe), where each
// workgroup costs tens of microseconds of its own, one workgroup per item and run of frames (vkmorph/bake.py
// _shape). An invocation reads its vertices once and writes them for every frame of the run. The mode is the
// item's, uniform in a workgroup. Tried and slower on lavapipe: staging the outputs in shared memory to write
// whole words per thread (barriers: 3.5x slower), one output float per thread (2x), the cofactor formed on the
// host (an extra gather).
void main() {
    BakeItem it = items[pc.itemFirst + gl_WorkGroupID.y];
    uint f0 = pc.frameFirst + gl_WorkGroupID.z * pc.framesPerGroup;
    uint f1 = min(f0 + pc.framesPerGroup, pc.frameFirst + pc.frameCount);
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint quads = it.strideWords / 4;
    for (uint v0 = gl_GlobalInvocationID.x; v0 < it.vertexCount; v0 += K * step) {
        vec3 p0[K], n0[K], t0[K];
        uint out0[K];
        uvec4 joints[K];
        vec4 weights[K];
        uint live = 0;                                    // vertices v0, v0 + step, ... that exist
        for (uint k = 0; k < K; ++k) {
            uint v = v0 + k * step;
            if (v < it.vertexCount) {
                live = k + 1;
                uint base = it.sourceWord / 4 + v * quads;
                // position, normal, tangent at words 0, 3, 6; joints and weights at words 12 and 16 (the vertex
                // layouts of asset/model.py, which bake.py checks): 3 (or 5) whole uvec4
                vec4 a = uintBitsToFloat(src.quads[base]);
                vec4 b = uintBitsToFloat(src.quads[base + 1]);
                vec4 c = uintBitsToFloat(src.quads[base + 2]);
                p0[k] = a.xyz;
                n0[k] = vec3(a.w, b.xy);
                t0[k] = vec3(b.zw, c.x);
                out0[k] = 3 * (it.outVertex + v);
                if (it.mode == MODE_SKINNED) {
                    joints[k] = src.quads[base + 3] + it.matrix;
                    weights[k] = uintBitsToFloat(src.quads[base + 4]);
                }
            }
        }
        if (it.mode == MODE_SKINNED) {
            for (uint frame = f0; frame < f1; ++frame) {
                uint m = frame * pc.matricesPerFrame;
                for (uint k = 0; k < K; ++k) if (k < live) {
                    uvec4 j = joints[k] + m;
                    vec4 w = weights[k];
                    // a joint of weight zero is not read (most vertices have one or two influences); the
                    // sum is that of blendJoints over the non-zero terms, in the same order
                    mat4 skin = weighted(j.x, w.x);
                    if (w.y != 0.0) skin += weighted(j.y, w.y);
                    if (w.z != 0.0) skin += weighted(j.z, w.z);
                    if (w.w != 0.0) skin += weighted(j.w, w.w);
                    vec3 p = p0[k], n = n0[k], t = t0[k];
                    skinVertex(skin, p, n, t);
                    writeVertex(out0[k] + 3 * frame * pc.frameVertices, p, n, t);
                }
            }
        } else if (it.mode == MODE_RIGID) {
            for (uint frame = f0; frame < f1; ++frame) {
                mat4 world = matrices[frame * pc.matricesPerFrame + it.matrix];
                mat3 a = mat3(world);
                mat3 cofactor = mat3(cross(a[1], a[2]), cross(a[2], a[0]), cross(a[0], a[1]));
                for (uint k = 0; k < K; ++k) if (k < live) {
                    writeVertex(out0[k] + 3 * frame * pc.frameVertices, (world * vec4(p0[k], 1.0)).xyz,
                                unitOrZero(cofactor * n0[k]), unitOrZero(a * t0[k]));
                }
            }
        } else {
            for (uint frame = f0; frame < f1; ++frame) {
                for (uint k = 0; k < K; ++k) if (k < live) {
                    writeVertex(out0[k] + 3 * frame * pc.frameVertices, p0[k], n0[k], t0[k]);
                }
            }
        }
    }
}
