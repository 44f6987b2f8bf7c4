// The bake kernel's code, shared by bake.comp (matrices in a storage buffer), bake_ubo.comp (a window of frames'
// matrices in a dynamic uniform buffer) and bake_wide.comp (the batch's matrices in a uniform texel buffer, 64-bit
// stores); each includes its generated header first. matrixAt(i) is matrix i of frame pc.matrixFrame onwards (0
// with the storage and texel buffers: the batch's first frame).
#include "skinning.glsl"

// An invocation owns a quad: 4 consecutive vertices of one item (instance), item-local (vertex 4 q .. 4 q + 3 of
// the item), and holds them in registers while it loops over the frames. The item's last quad, where its vertex
// count is not a multiple of 4, repeats the item's last vertex in its missing places: it reads that vertex and
// writes its values to that vertex's addresses again, in the same invocation (program order: no other invocation
// ever writes an address of another item's vertex, with no padding between items or frames). The outputs are
// float stores at any vertex, so the planes need no alignment: the result's own layout (vkmorph/bake.py writes
// the Bake's array itself where the device imports host memory). On lavapipe every storage-buffer access is
// one scalar access per lane, even at an address uniform over the workgroup (Mesa 22.3: an item's world matrix
// at `matrices[it.matrix]` cost as much as one gathered per lane), and a vec4 store is a loop over the lanes per
// component, as four float stores are; so a rigid item's 16-float matrix is read once per frame for 4 vertices
// instead of once per (vertex, frame) (bench/2026-12-01-lavapipe-bake-kernel.txt: matrix loads were half of the
// rigid parts' time, the output stores most of the rest).
const uint K = 4;

// MODE_ANY: each item's own mode (it.mode); one of the modes: a pipeline for items of that mode only, in which
// the other modes' code folds away (vkmorph/bake.py: one such pipeline per mode on CPU devices)
layout(constant_id = 0) const uint BAKE_MODE = MODE_ANY;
// skinning: whether a joint of weight zero is skipped (true, the default: a GPU saves the reads) or read (false,
// bake.py on CPU devices)
layout(constant_id = 1) const bool BAKE_SKIP_ZERO = true;

#ifdef BAKE_WIDE
// column c of matrix i: texels 4 i .. 4 i + 3 of the RGBA32F view (the floats as stored: bit for bit the load)
vec4 matrixColumn(uint i, uint c) { return texelFetch(matrixTexels, int(4u * i + c)); }
mat4 matrixAt(uint i) { return mat4(matrixColumn(i, 0), matrixColumn(i, 1), matrixColumn(i, 2), matrixColumn(i, 3)); }
#else
vec4 matrixColumn(uint i, uint c) { return matrices[i][c]; }
mat4 matrixAt(uint i) { return matrices[i]; }
#endif

vec3 unitOrZero(vec3 v) { float l = length(v); return l > 1e-20 ? v / l : vec3(0.0); }

// A quad's values of a frame into the three planes: float `o[k]` of each bound plane window is vertex k's x
void writeVertices(uint o[K], vec3 p[K], vec3 n[K], vec3 t[K]) {
    for (uint k = 0; k < K; ++k) {
        for (uint c = 0; c < 3; ++c) {
            out0.values[o[k] + c] = p[k][c];
            out1.values[o[k] + c] = n[k][c];
            out2.values[o[k] + c] = t[k][c];
        }
    }
}

#ifdef BAKE_WIDE
// Two vertices' xyz as 3 64-bit words (x0 y0 | z0 x1 | y1 z1): the bits the float stores would write, in 3
// store components instead of 6 (llvmpipe's per-lane store loop runs per component and per store:
// bench/2026-12-02h-lavapipe-store-probe.txt)
Pair pairOf(vec3 a, vec3 b) {
    uvec3 x = floatBitsToUint(a), y = floatBitsToUint(b);
    return Pair(u64vec2(packUint2x32(x.xy), packUint2x32(uvec2(x.z, y.x))), packUint2x32(y.yz));
}

// A quad of consecutive vertices, the first at pair i of each plane window
void writePairs(uint i, vec3 p[K], vec3 n[K], vec3 t[K]) {
    out0p.pairs[i] = pairOf(p[0], p[1]);
    out0p.pairs[i + 1] = pairOf(p[2], p[3]);
    out1p.pairs[i] = pairOf(n[0], n[1]);
    out1p.pairs[i + 1] = pairOf(n[2], n[3]);
    out2p.pairs[i] = pairOf(t[0], t[1]);
    out2p.pairs[i + 1] = pairOf(t[2], t[3]);
}
#endif

void store(bool wide, uint o[K], vec3 p[K], vec3 n[K], vec3 t[K]) {
#ifdef BAKE_WIDE
    if (wide) {
        writePairs(o[0] / 6, p, n, t);
        return;
    }
#endif
    writeVertices(o, p, n, t);
}

// The 3x4 affine part of a joint matrix, weighted: the bottom row of a palette matrix is (0, 0, 0, 1) (affine
// transforms), so only 12 of its 16 floats are read (a quarter fewer loads; skinVertex uses only these).
mat4 weighted(uint m, float w) {
    return mat4(vec4(w * matrixColumn(m, 0).xyz, 0.0), vec4(w * matrixColumn(m, 1).xyz, 0.0),
                vec4(w * matrixColumn(m, 2).xyz, 0.0), vec4(w * matrixColumn(m, 3).xyz, w));
}

// Grid-stride over the item's quads (x) and a run of frames per workgroup (z): on a GPU the host dispatches a
// workgroup per 64 quads and frame; on a CPU device (lavapipe), where each workgroup costs tens of microseconds
// of its own, one workgroup per item and run of frames (vkmorph/bake.py _shape). An invocation reads its vertices
// once and writes them for every frame of the run. The mode is the item's, uniform in a workgroup. Tried and
// slower on lavapipe: staging the outputs in shared memory (barriers: 3.5x slower), one output float per thread
// (2x), the cofactor formed on the host (an extra gather).
//
// Each mode's frames are a loop of their own, the loop's condition saying where it applies, instead of one loop
// with branches in it: llvmpipe (Mesa 22.3) runs both sides of every branch for all lanes, masked, even where the
// condition is uniform, but leaves a loop once no lane is in it; with branches inside the frame loop, every frame
// of a rigid quad paid for the skinned code (bench/2026-12-02-lavapipe-bake-kernel.txt: 30 % of the kernel's
// time). An item's last quad repeats its last vertex rather than branching on the vertices it lacks (quads that
// straddled two items, written component by component behind a branch, cost another 20 % there).
void skinFrame(uint m, vec3 p0[K], vec3 n0[K], vec3 t0[K], uvec4 joints[K], vec4 weights[K],
               out vec3 p[K], out vec3 n[K], out vec3 t[K]) {
    for (uint k = 0; k < K; ++k) {
        p[k] = p0[k]; n[k] = n0[k]; t[k] = t0[k];
        uvec4 j = joints[k] + m;
        vec4 w = weights[k];
        // BAKE_SKIP_ZERO: a joint of weight zero is not read (most vertices have one or two influences); the
        // sum is that of blendJoints over the non-zero terms, in the same order. Else all four terms, the same
        // sum (a zero-weight term adds zeros): llvmpipe runs both sides of a branch anyway, masked, and the
        // branches cost it more than the reads (7 % of the kernel on RobotExpressive)
        mat4 skin = weighted(j.x, w.x);
        if (!BAKE_SKIP_ZERO || w.y != 0.0) skin += weighted(j.y, w.y);
        if (!BAKE_SKIP_ZERO || w.z != 0.0) skin += weighted(j.z, w.z);
        if (!BAKE_SKIP_ZERO || w.w != 0.0) skin += weighted(j.w, w.w);
        skinVertex(skin, p[k], n[k], t[k]);
    }
}

void rigidFrame(mat4 world, vec3 p0[K], vec3 n0[K], vec3 t0[K], out vec3 p[K], out vec3 n[K], out vec3 t[K]) {
    mat3 a = mat3(world);
    mat3 cofactor = mat3(cross(a[1], a[2]), cross(a[2], a[0]), cross(a[0], a[1]));
    for (uint k = 0; k < K; ++k) {
        p[k] = (world * vec4(p0[k], 1.0)).xyz;
        n[k] = unitOrZero(cofactor * n0[k]);
        t[k] = unitOrZero(a * t0[k]);
    }
}

// Vertices v[k] of item `it`, frames [f0, f1): read once, then written for every frame. wide false: floats at
// each vertex's own addresses (any vertices, repeats allowed: the repeat rule above). wide true (BAKE_WIDE): the
// quad v[k] = v[0] + k as two vertex pairs of 64-bit words, v[0] an even vertex of the frame. `wide` is a
// literal at each call: the branch on it folds away after inlining.
void bakeVertices(BakeItem it, uint mode, uint v[K], uint f0, uint f1, bool wide) {
    vec3 p0[K], n0[K], t0[K], p[K], n[K], t[K];
    uvec4 joints[K];
    vec4 weights[K];
    uint o[K];                                            // float of vertex k's x in frame f0's part of a plane
    uint quads = it.strideWords / 4;
    for (uint k = 0; k < K; ++k) {
        uint base = it.sourceWord / 4 + v[k] * quads;
        // position, normal, tangent at words 0, 3, 6; joints and weights at words 12 and 16 (the vertex
        // layouts of asset/model.py, which bake.py checks): 3 (or 5) whole uvec4
        vec4 a = uintBitsToFloat(src.quads[base]);
        vec4 b = uintBitsToFloat(src.quads[base + 1]);
        vec4 c = uintBitsToFloat(src.quads[base + 2]);
        p0[k] = a.xyz;
        n0[k] = vec3(a.w, b.xy);
        t0[k] = vec3(b.zw, c.x);
        joints[k] = uvec4(0);
        weights[k] = vec4(0.0);
        if (mode == MODE_SKINNED) {
            joints[k] = src.quads[base + 3] + it.matrix;
            weights[k] = uintBitsToFloat(src.quads[base + 4]);
        }
        o[k] = pc.outShift + 3 * (f0 * pc.frameVertices + it.outVertex + v[k]);
    }
    uint frameFloats = 3 * pc.frameVertices;
    for (uint frame = f0; mode == MODE_SKINNED && frame < f1; ++frame) {
        skinFrame((frame - pc.matrixFrame) * pc.matricesPerFrame, p0, n0, t0, joints, weights, p, n, t);
        store(wide, o, p, n, t);
        for (uint k = 0; k < K; ++k) o[k] += frameFloats;
    }
    for (uint frame = f0; mode == MODE_RIGID && frame < f1; ++frame) {
        rigidFrame(matrixAt((frame - pc.matrixFrame) * pc.matricesPerFrame + it.matrix), p0, n0, t0, p, n, t);
        store(wide, o, p, n, t);
        for (uint k = 0; k < K; ++k) o[k] += frameFloats;
    }
    for (uint frame = f0; mode == MODE_COPY && frame < f1; ++frame) {
        store(wide, o, p0, n0, t0);
        for (uint k = 0; k < K; ++k) o[k] += frameFloats;
    }
}

void main() {
    BakeItem it = items[pc.itemFirst + gl_WorkGroupID.y];
    uint mode = BAKE_MODE == MODE_ANY ? it.mode : BAKE_MODE;
    uint f0 = pc.frameFirst + gl_WorkGroupID.z * pc.framesPerGroup;
    uint f1 = min(f0 + pc.framesPerGroup, pc.frameFirst + pc.frameCount);
    uint step = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    uint v[K];
#ifdef BAKE_WIDE
    // Whole quads that start at an even vertex of the frame: from the item's first vertex where outVertex is
    // even, its second where odd (bake.py binds BAKE_WIDE only where pc.frameVertices is even and pc.outShift a
    // multiple of 6 floats, so a vertex's parity in the window is that of outVertex + v in every frame: quad q's
    // pairs are pairs o / 6 and o / 6 + 1). The rest of the item, at most 4 vertices (the first where outVertex
    // is odd, the last (vertexCount - lead) % 4), goes as one float quad (the repeat rule) of invocation 0, the
    // loop's condition confining it (llvmpipe leaves a loop no lane is in; a branch it would run for all lanes).
    uint lead = it.outVertex & 1u;
    uint whole = (it.vertexCount - lead) / 4;
    for (uint quad = gl_GlobalInvocationID.x; quad < whole; quad += step) {
        for (uint k = 0; k < K; ++k) v[k] = lead + 4 * quad + k;
        bakeVertices(it, mode, v, f0, f1, true);
    }
    uint rest = it.vertexCount - 4 * whole;               // 0 .. 4 vertices
    for (uint e = gl_GlobalInvocationID.x; e < min(rest, 1u); e += step) {
        for (uint k = 0; k < K; ++k) {
            uint j = min(k, rest - 1);                     // the repeat rule: the last of them again
            v[k] = j < lead ? 0 : 4 * whole + j;           // the first vertex, then the tail's
        }
        bakeVertices(it, mode, v, f0, f1, false);
    }
#else
    uint last = it.vertexCount - 1;
    for (uint quad = gl_GlobalInvocationID.x; 4 * quad < it.vertexCount; quad += step) {
        for (uint k = 0; k < K; ++k) v[k] = min(4 * quad + k, last);     // the last quad repeats the last vertex
        bakeVertices(it, mode, v, f0, f1, false);
    }
#endif
}
