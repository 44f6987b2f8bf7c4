// The morph kernel, shared by morph.comp (full-precision deltas) and morph_compact.comp (snorm16 deltas).
//
// Layout (built by vkmorph/morph/gpu_data.py build_chunked_batch, where the reasons are written down): one
// 256-thread workgroup per chunk of <= 256 consecutive vertices of one primitive; per (chunk, target) block a
// table entry (weight slot, first delta) and a 256-bit vertex mask; deltas in block order, vertex order inside
// a block, no per-delta index. Per round of <= ROUND (64) table entries the workgroup
//   1. reads the entries' weights and compacts the active ones (w != 0) in table order into shared memory,
//      with each block's mask words and the index of the first delta of each mask word (prefix popcounts);
//   2. each thread collects, per window of 32 active blocks, a bitmask of the blocks that move its vertex and
//      walks it four hits at a time: delta index = first of its mask word + popcount(mask bits below it).
//      The four loads are independent (a miss reads delta 0, which is zero, with weight 0), so the memory
//      system sees them together instead of one dependent load per loop trip.
// Finally each thread adds its sums to the base vertex, renormalizes the normal, re-orthogonalizes the
// tangent against it (Gram-Schmidt), and writes the vertex's first 48 bytes as three whole vec4 stores.
// No atomics: the summation order is fixed, so results are deterministic.

#ifdef SUBGROUP
#extension GL_KHR_shader_subgroup_ballot : require
#endif

// Declarations (bindings, the Chunk and Block structs, push constants, CHUNK, NORMALIZE_EPSILON, local size)
// come from the generated header each kernel includes first (glsl/gen/<kernel>.glsl, vkmorph/gpu/interface.py).
const uint WORDS = CHUNK / 32u;

vec3 normalizeOr(vec3 v, vec3 fallback) {
    float len2 = dot(v, v);
    return len2 > NORMALIZE_EPSILON ? v * inversesqrt(len2) : fallback;
}

// Base normal bn + sum n renormalized (bn when degenerate); base tangent bt + sum t re-orthogonalized against
// it (Gram-Schmidt, bt when degenerate). Both kernels' vertex writes use it.
void renormalize(vec3 bn, vec3 bt, vec3 n, vec3 t, out vec3 nn, out vec3 tt) {
    nn = normalizeOr(bn + n, bn);
    tt = bt + t;
    tt -= nn * dot(nn, tt);
    tt = normalizeOr(tt, bt);
}

// base + sums, renormalized (tangent w kept); the vertex's first 48 bytes written as three whole vec4 stores
// (texcoord rewritten as is).
void writeVertex(uint o, vec4 b0, vec4 b1, vec4 b2, vec3 p, vec3 n, vec3 t) {
    vec3 nn, tt;
    renormalize(vec3(b0.w, b1.xy), vec3(b1.zw, b2.x), n, t, nn, tt);
    outVec4[o] = vec4(b0.xyz + p, nn.x);
    outVec4[o + 1u] = vec4(nn.yz, tt.xy);
    outVec4[o + 2u] = vec4(tt.z, b2.yzw);
}

#ifdef VERTEX_LISTS
// CPU devices and GPU batches with sparse blocks (mean block fill below VERTEX_KERNEL_BELOW_FILL in
// render/morph_batch.py: on a GPU the
// workgroup kernel's per-thread work grows with the chunk's active blocks). On CPU devices lavapipe runs a
// workgroup as SIMD batches of invocations and loads per lane; barriers, shared memory and per-block work for
// every lane are what cost there (measured: a uniform walk of the block table was
// up to 15x slower than this on sparse random targets): each invocation morphs its own vertex from its deltas,
// stored vertex-major (contiguous for the CPU's caches) in target order. Its record holds its first delta and a
// bitmask of the targets it has a delta for; ANDed with the frame's active-target bits (uploaded with the
// weights) it yields exactly the deltas to add, each at first + popcount(mask bits below its target): an
// inactive target costs nothing per vertex (the per-delta slot list this replaces read a slot and a weight for
// every delta, active or not). Same delta encoding, base and output as the workgroup kernel.

// Active bits of weight slots s0 .. s0 + 31 (s0 need not be a multiple of 32; `activeBits` has a spare last word).
uint activeWord(uint s0) {
    uint i = s0 >> 5u, sh = s0 & 31u;
    uint a = activeBits[i] >> sh;
    return sh == 0u ? a : a | (activeBits[i + 1u] << (32u - sh));
}

void main() {
    uint lane = gl_LocalInvocationID.x;
    Chunk h = chunks[pc.firstChunk + gl_WorkGroupID.x];
    if (lane >= h.vertexCount) return;
    // crowds: this row's instance has its own weight slots (and active bits: instanceSlots is a multiple of 32)
    // and its own output range; base, records and deltas are shared by every instance
    uint inst = pc.fromList != 0u ? instanceList[pc.firstInstance + gl_WorkGroupID.y]
                                  : pc.firstInstance + gl_WorkGroupID.y;
    uint slot0 = h.slotWords.x + inst * pc.instanceSlots;
    uint v = h.firstVertex + lane;
    uint r = h.firstEntry + lane * (h.slotWords.y + 1u);
    uint d = vertexRecords[r];
    vec3 p = vec3(0.0), n = vec3(0.0), t = vec3(0.0);
#ifdef WORD_LOOP
    // experiment: a loop per mask word
    for (uint k = 0u; k < h.slotWords.y; ++k) {
        uint present = vertexRecords[r + 1u + k];
        uint s0 = slot0 + 32u * k;
        uint hits = present & activeWord(s0);
        while (hits != 0u) {
            uint j = uint(findLSB(hits));
            hits &= hits - 1u;
            uint s = s0 + j;
            accumulate1(d + bitCount(present & ((1u << j) - 1u)), SLOT_WEIGHT(s), p, n, t);
        }
        d += bitCount(present);
    }
#else
#ifdef VIO
    if (lane == 9999u)          // experiment: vertex I/O only
#endif
    // Mask words in pairs, one loop trip per delta of the pair (no loop per word: in a SIMD batch of lanes a
    // loop runs as many trips as its busiest lane, and per-word maxima add up).
    for (uint k = 0u; k < h.slotWords.y; k += 2u) {
        uint s0 = slot0 + 32u * k;
        uint m0 = vertexRecords[r + 1u + k];
        uint m1 = k + 1u < h.slotWords.y ? vertexRecords[r + 2u + k] : 0u;
        uint h0 = m0 & activeWord(s0);
        uint h1 = k + 1u < h.slotWords.y ? m1 & activeWord(s0 + 32u) : 0u;
        uint d1 = d + bitCount(m0);
        while ((h0 | h1) != 0u) {
            bool lo = h0 != 0u;
            uint hw = lo ? h0 : h1;
            uint j = uint(findLSB(hw));
            uint below = (lo ? m0 : m1) & ((1u << j) - 1u);
            uint s = s0 + (lo ? j : 32u + j);
            if (lo) h0 &= h0 - 1u; else h1 &= h1 - 1u;
            accumulate1((lo ? d : d1) + bitCount(below), SLOT_WEIGHT(s), p, n, t);
        }
        d = d1 + bitCount(m1);
    }
#endif
    // Nine floats read and written (texcoord left as the output buffer already holds it): measured ~3 % faster
    // on lavapipe than whole-vec4 I/O in an A/B of variants (bench/variants.py).
    uint o = h.outVec4 + (inst - pc.outputInstance) * pc.instanceVec4 + lane * h.strideVec4;
    vec4 b0 = base[3u * v], b1 = base[3u * v + 1u];
    float b2x = base[3u * v + 2u].x;
    vec3 nn, tt;
    renormalize(vec3(b0.w, b1.xy), vec3(b1.zw, b2x), n, t, nn, tt);
    outVec4[o] = vec4(b0.xyz + p, nn.x);
    outVec4[o + 1u] = vec4(nn.yz, tt.xy);
    outVec4[o + 2u].x = tt.z;
}
#else
// Table entries per round. Shared memory per workgroup is what bounds the kernel's occupancy on the H200:
// with rounds of 256 entries (18 KB of shared memory, full format) the same kernel ran at 0.30-0.75 of the copy
// floor, with rounds of 64 (5 KB) at 0.39-0.75 on the same six cases in the same windows (0.49 -> 0.67 at 5M
// vertices, 0.46 -> 0.68 at 2M x 25 % random); a variant that parked the base vertices in shared memory (+12 KB)
// fell to 0.20-0.30 (bench/variants-2026-11-30-h200-e.txt). 64 entries hold a 52-target rig's chunk in one
// round; more targets take more rounds (two barriers each). Rounds of 32 measured within +-0.04 of 64.
#ifndef ROUND
#define ROUND 64u
#endif
shared uint sMask[ROUND * WORDS];    // compacted active blocks of this round: mask words
shared uint sFirst[ROUND * WORDS];   // index of the first delta of each mask word
shared WEIGHT sWeight[ROUND];        // weight (full) or weight * per-target scales (compact)
shared uint sScan[CHUNK];

// Exclusive rank of `flag` among the first n lanes (table order) and the total; deterministic.
uint compactRank(uint lane, bool flag, uint n, out uint total) {
#ifdef SUBGROUP
    uvec4 ballot = subgroupBallot(flag);
    uint below = subgroupBallotExclusiveBitCount(ballot);
    if (subgroupElect()) sScan[gl_SubgroupID] = subgroupBallotBitCount(ballot);
    barrier();
    uint offset = 0u;
    total = 0u;
    for (uint i = 0u; i < gl_NumSubgroups; ++i) {
        uint c = sScan[i];
        offset += i < gl_SubgroupID ? c : 0u;
        total += c;
    }
    return offset + below;
#else
    sScan[lane] = flag ? 1u : 0u;
    barrier();
    for (uint off = 1u; off < n; off <<= 1u) {      // Hillis-Steele inclusive scan over the n used lanes
        uint x = lane >= off ? sScan[lane - off] : 0u;
        barrier();
        sScan[lane] += x;
        barrier();
    }
    total = sScan[n - 1u];
    return sScan[lane] - (flag ? 1u : 0u);
#endif
}

// The next block (lowest set bit of `hits`, relative to k0) that moves this thread's vertex: its delta index and
// weight; delta 0 (zero) and weight 0 when none is left.
void nextHit(inout uint hits, uint k0, uint word, uint below, out uint d, out WEIGHT w) {
    int j = findLSB(hits);
    hits &= hits - 1u;
    d = 0u;
    w = WEIGHT(0.0);
    if (j >= 0) {
        uint k = k0 + uint(j);
        uint s = k * WORDS + word;
        d = sFirst[s] + bitCount(sMask[s] & below);
        w = sWeight[k];
    }
}

void main() {
#ifdef EMPTY
    return;                             // experiment: the cost of a frame around the kernel
#endif
    uint lane = gl_LocalInvocationID.x;
    uint c = pc.firstChunk + gl_WorkGroupID.x;
    Chunk h = chunks[c];
    uvec4 head = uvec4(h.firstVertex, h.vertexCount, h.firstEntry, h.endEntry);
    // crowds: this row's instance reads its own weights (scales stay per target) and writes its own range
    uint inst = pc.fromList != 0u ? instanceList[pc.firstInstance + gl_WorkGroupID.y]
                                  : pc.firstInstance + gl_WorkGroupID.y;
    uint wBase = inst * pc.instanceSlots;
    uvec2 dst = uvec2(h.outVec4 + (inst - pc.outputInstance) * pc.instanceVec4, h.strideVec4);
    bool live = lane < head.y;
    uint v = head.x + lane;
    vec4 b0 = vec4(0.0), b1 = vec4(0.0), b2 = vec4(0.0);
#ifndef LATE_BASE
    if (live) {                             // alternative: issued first to overlap the table walk
        b0 = base[3u * v];
        b1 = base[3u * v + 1u];
        b2 = base[3u * v + 2u];
    }
#endif
    vec3 p = vec3(0.0), n = vec3(0.0), t = vec3(0.0);
    uint word = lane >> 5u;
    uint below = (1u << (lane & 31u)) - 1u;
    uint bit = lane & 31u;
    for (uint r = head.z; r < head.w; r += ROUND) {
        uint e = r + lane;
        uint count = min(ROUND, head.w - r);
        bool act = false;
        uvec2 entry = uvec2(0u);
        float wt = 0.0;
#ifdef PREFETCH
        uvec4 m0 = uvec4(0u), m1 = uvec4(0u);
#endif
        if (lane < ROUND && e < head.w) {
            entry = uvec2(table[e].slot, table[e].firstDelta);
#ifdef PREFETCH
            m0 = masks[2u * e];                 // experiment: masks loaded with the weight, active or not
            m1 = masks[2u * e + 1u];
#endif
            wt = weights[entry.x + wBase];
            act = wt != 0.0;
        }
#ifdef IO_ONLY
        act = false;                        // experiment: table walk and vertex I/O only
#endif
        uint total;
        uint k = compactRank(lane, act, count, total);
        if (act) {
            sWeight[k] = activeWeight(entry.x, wt);
#ifndef PREFETCH
            uvec4 m0 = masks[2u * e], m1 = masks[2u * e + 1u];
#endif
            uint f = entry.y;
            uint s = k * WORDS;
            sMask[s] = m0.x; sFirst[s] = f; f += bitCount(m0.x);
            sMask[s + 1u] = m0.y; sFirst[s + 1u] = f; f += bitCount(m0.y);
            sMask[s + 2u] = m0.z; sFirst[s + 2u] = f; f += bitCount(m0.z);
            sMask[s + 3u] = m0.w; sFirst[s + 3u] = f; f += bitCount(m0.w);
            sMask[s + 4u] = m1.x; sFirst[s + 4u] = f; f += bitCount(m1.x);
            sMask[s + 5u] = m1.y; sFirst[s + 5u] = f; f += bitCount(m1.y);
            sMask[s + 6u] = m1.z; sFirst[s + 6u] = f; f += bitCount(m1.z);
            sMask[s + 7u] = m1.w; sFirst[s + 7u] = f;
        }
        barrier();
        for (uint k0 = 0u; k0 < total; k0 += 32u) {
            uint kn = min(32u, total - k0);
            uint hits = 0u;
            for (uint j = 0u; j < kn; ++j) hits |= ((sMask[(k0 + j) * WORDS + word] >> bit) & 1u) << j;
#if defined(UNROLL2)
            while (hits != 0u) {                // experiment: two delta loads per trip
                uint d0, d1;
                WEIGHT w0, w1;
                nextHit(hits, k0, word, below, d0, w0);
                nextHit(hits, k0, word, below, d1, w1);
                accumulate4(d0, d1, 0u, 0u, w0, w1, WEIGHT(0.0), WEIGHT(0.0), p, n, t);
            }
#elif defined(UNROLL1)
            while (hits != 0u) {                // experiment: one (dependent) delta load per trip
                uint d0;
                WEIGHT w0;
                nextHit(hits, k0, word, below, d0, w0);
                accumulate4(d0, 0u, 0u, 0u, w0, WEIGHT(0.0), WEIGHT(0.0), WEIGHT(0.0), p, n, t);
            }
#else
            while (hits != 0u) {
                uint d0, d1, d2, d3;
                WEIGHT w0, w1, w2, w3;
                nextHit(hits, k0, word, below, d0, w0);
                nextHit(hits, k0, word, below, d1, w1);
                nextHit(hits, k0, word, below, d2, w2);
                nextHit(hits, k0, word, below, d3, w3);
                accumulate4(d0, d1, d2, d3, w0, w1, w2, w3, p, n, t);
            }
#endif
        }
        barrier();
    }
#ifdef LATE_BASE
    if (live) {                             // measured better on the H200 (bench/variants-*-c.txt)
        b0 = base[3u * v];
        b1 = base[3u * v + 1u];
        b2 = base[3u * v + 2u];
    }
#endif
    if (live) writeVertex(dst.x + lane * dst.y, b0, b1, b2, p, n, t);
}
#endif
