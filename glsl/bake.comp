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
// microseconds of its own, one workgroup per item and run of frames (vkmorph/bake.py _shape). A thread reads its
// vertex once and writes it for every frame of the run: on lavapipe a copy-only run of the rest parts went from
// 0.136 to 0.050 s per 64 frames so; with the transforms the two orders were equal within this host's noise
// (0.15-0.23 s; the transform and the matrix gathers dominate there). The mode is the item's, uniform in a
// workgroup. Tried and slower on lavapipe: staging the outputs in shared memory to write whole words per thread
// (barriers: 3.5x slower), one output float per thread (2x), the cofactor formed on the host (an extra gather).
void main() {
    BakeItem it = items[pc.itemFirst + gl_WorkGroupID.y];
    uint f0 = pc.frameFirst + gl_WorkGroupID.z * pc.framesPerGroup;
    uint f1 = min(f0 + pc.framesPerGroup, pc.frameFirst + pc.frameCount);
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint quads = it.strideWords / 4;
    for (uint v = gl_GlobalInvocationID.x; v < it.vertexCount; v += step) {
        uint base = it.sourceWord / 4 + v * quads;
        vec3 p0, n0, t0;
        readVertex(base, p0, n0, t0);
        uint out0 = 3 * (it.outVertex + v);
        if (it.mode == MODE_SKINNED) {
            uvec4 j = src.quads[base + 3] + it.matrix;
            vec4 w = uintBitsToFloat(src.quads[base + 4]);
            for (uint frame = f0; frame < f1; ++frame) {
                uint m = frame * pc.matricesPerFrame;
                mat4 skin = blendJoints(matrices[j.x + m], matrices[j.y + m], matrices[j.z + m], matrices[j.w + m], w);
                vec3 p = p0, n = n0, t = t0;
                skinVertex(skin, p, n, t);
                writeVertex(out0 + 3 * frame * pc.frameVertices, p, n, t);
            }
        } else if (it.mode == MODE_RIGID) {
            for (uint frame = f0; frame < f1; ++frame) {
                mat4 world = matrices[frame * pc.matricesPerFrame + it.matrix];
                mat3 a = mat3(world);
                mat3 cofactor = mat3(cross(a[1], a[2]), cross(a[2], a[0]), cross(a[0], a[1]));
                writeVertex(out0 + 3 * frame * pc.frameVertices, (world * vec4(p0, 1.0)).xyz,
                            unitOrZero(cofactor * n0), unitOrZero(a * t0));
            }
        } else {
            for (uint frame = f0; frame < f1; ++frame) {
                writeVertex(out0 + 3 * frame * pc.frameVertices, p0, n0, t0);
            }
        }
    }
}
