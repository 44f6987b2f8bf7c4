"""Sparse GPU morph data (seed 000 ``buildGpuMorphData``): CSR deltas per vertex, std430 layouts as numpy dtypes.

The CSR form (``build_gpu_morph_data``) is the readable description of the data (tests, ``vkmorph info``); the
GPU kernel reads the chunked target-major form below (``build_chunked_batch``), whose reasons are written down
at its definition. Building is vectorized per target (a loop over T, never over V) and memory stays
O(non-zero deltas) beyond the asset itself.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from ..asset.model import MeshPrimitiveAsset

BASE_VERTEX = np.dtype([("position", "<f4", 4), ("normal", "<f4", 4), ("tangent", "<f4", 4)])
MORPH_DELTA = np.dtype([("position", "<f4", 4), ("normal", "<f4", 4), ("tangent", "<f4", 4),
                        ("metadata", "<u4", 4)])
# 24-byte delta: snorm16 position/normal/tangent (scaled per target) + weight index, see morph_compact.comp
COMPACT_DELTA = np.dtype([("a", "<u4", 2), ("b", "<u4", 2), ("c", "<u4", 2)])
assert BASE_VERTEX.itemsize == 48 and MORPH_DELTA.itemsize == 64 and COMPACT_DELTA.itemsize == 24
DELTA_FORMATS = ("full", "compact")


@dataclass
class GpuMorphData:
    base_vertices: np.ndarray      # (V,) BASE_VERTEX
    vertex_offsets: np.ndarray     # (V + 1,) uint32; deltas of vertex i: [offsets[i], offsets[i+1])
    deltas: np.ndarray             # (D,) MORPH_DELTA, metadata.x = target index
    conservative_bounds: np.ndarray  # (2, 3) min, max over every weight combination in range
    maximum_position_delta: float  # largest displacement any vertex can reach
    target_count: int

    @property
    def vertex_count(self) -> int:
        return len(self.base_vertices)

    @property
    def delta_count(self) -> int:
        return len(self.deltas)


def _target_arrays(prim: MeshPrimitiveAsset, t: int):
    tgt = prim.morph_targets[t]
    return tgt.position_deltas, tgt.normal_deltas, tgt.tangent_deltas


def nonzero_vertices(prim: MeshPrimitiveAsset, t: int) -> np.ndarray:
    """Vertices where target t has any non-zero position, normal or tangent delta."""
    bits = np.zeros(prim.vertex_count, np.uint32)
    for d in _target_arrays(prim, t):
        if d is not None:       # OR of the words, sign bit dropped (-0.0 is zero): faster than np.any(d != 0, 1)
            w = np.ascontiguousarray(d, np.float32).view(np.uint32)
            bits |= w[:, 0] | w[:, 1] | w[:, 2]
    return np.flatnonzero(bits << np.uint32(1))


def count_deltas(prim: MeshPrimitiveAsset) -> int:
    """Number of stored (target, vertex) pairs: those whose three deltas are not all zero."""
    return int(sum(len(nonzero_vertices(prim, t)) for t in range(len(prim.morph_targets))))


def build_gpu_morph_data(prim: MeshPrimitiveAsset, weight_range: tuple[float, float] = (0.0, 1.0)
                         ) -> GpuMorphData:
    """Turn a validated primitive into base vertices + CSR deltas + conservative bounds."""
    V = prim.vertex_count
    T = len(prim.morph_targets)
    v = prim.vertices
    base = np.zeros(V, BASE_VERTEX)
    base["position"][:, :3] = v["position"]
    base["position"][:, 3] = 1.0
    base["normal"][:, :3] = v["normal"]
    base["tangent"] = v["tangent"]

    vert_parts, targ_parts = [], []
    for t in range(T):
        nz = nonzero_vertices(prim, t)
        vert_parts.append(nz)
        targ_parts.append(np.full(len(nz), t, np.int64))
    vert = np.concatenate(vert_parts) if vert_parts else np.zeros(0, np.int64)
    targ = np.concatenate(targ_parts) if targ_parts else np.zeros(0, np.int64)
    order = np.argsort(vert * max(T, 1) + targ, kind="stable")   # vertex-major, then target order
    vert, targ = vert[order], targ[order]
    D = len(vert)
    deltas = np.zeros(D, MORPH_DELTA)
    deltas["metadata"][:, 0] = targ
    for t in range(T):
        sel = np.flatnonzero(targ == t)
        if not len(sel):
            continue
        vs = vert[sel]
        for field, d in zip(("position", "normal", "tangent"), _target_arrays(prim, t)):
            if d is not None:
                deltas[field][sel, :3] = d[vs]
    counts = np.bincount(vert, minlength=V)
    offsets = np.zeros(V + 1, np.uint32)
    np.cumsum(counts, out=offsets[1:])

    lo_w, hi_w = weight_range
    pos = deltas["position"][:, :3].astype(np.float64)
    lo = np.minimum(pos * lo_w, pos * hi_w)
    hi = np.maximum(pos * lo_w, pos * hi_w)
    neg = np.zeros((V, 3))
    posd = np.zeros((V, 3))
    has = np.flatnonzero(counts)
    if D:
        starts = offsets[:-1][has].astype(np.int64)
        neg[has] = np.add.reduceat(lo, starts, axis=0)
        posd[has] = np.add.reduceat(hi, starts, axis=0)
    p = v["position"].astype(np.float64)
    bounds = np.stack([(p + neg).min(axis=0), (p + posd).max(axis=0)])
    reach = np.maximum(np.abs(neg), np.abs(posd))
    max_delta = float(np.sqrt((reach ** 2).sum(axis=1)).max()) if V else 0.0
    return GpuMorphData(base_vertices=base, vertex_offsets=offsets, deltas=deltas, conservative_bounds=bounds,
                        maximum_position_delta=max_delta, target_count=T)


def _snorm16(x: np.ndarray) -> np.ndarray:
    """GLSL packSnorm2x16's per-component rule: round(clamp(x, -1, 1) * 32767) as 16-bit two's complement."""
    return (np.round(np.clip(x, -1.0, 1.0) * 32767.0).astype(np.int32) & 0xFFFF).astype(np.uint32)


def _pack2(lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    return _snorm16(lo) | (_snorm16(hi) << 16)


def target_scales(data: GpuMorphData) -> np.ndarray:
    """(T, 3) per-target max |component| of position, normal and tangent deltas (1 where all are zero)."""
    T = data.target_count
    out = np.ones((T, 3), np.float64)
    t = data.deltas["metadata"][:, 0]
    for k, field in enumerate(("position", "normal", "tangent")):
        mag = np.abs(data.deltas[field][:, :3]).max(axis=1) if len(t) else np.zeros(0)
        m = np.zeros(T)
        np.maximum.at(m, t, mag)
        out[:, k] = np.where(m > 0, m, 1.0)
    return out


def compact_deltas(data: GpuMorphData, weight_offset: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(COMPACT_DELTA records, (T, 3) scales). Quantization error per component <= scale / 65534."""
    scales = target_scales(data)
    d = data.deltas
    t = d["metadata"][:, 0].astype(np.int64)
    s = scales[t]
    p = d["position"][:, :3] / s[:, 0:1]
    n = d["normal"][:, :3] / s[:, 1:2]
    g = d["tangent"][:, :3] / s[:, 2:3]
    out = np.zeros(len(d), COMPACT_DELTA)
    out["a"][:, 0] = _pack2(p[:, 0], p[:, 1])
    out["a"][:, 1] = _pack2(p[:, 2], n[:, 0])
    out["b"][:, 0] = _pack2(n[:, 1], n[:, 2])
    out["b"][:, 1] = _pack2(g[:, 0], g[:, 1])
    out["c"][:, 0] = _pack2(g[:, 2], np.zeros(len(d)))
    out["c"][:, 1] = t + weight_offset
    return out, scales


# ---------------------------------------------------------------------------------------------------------------
# Chunked target-major layout: what the GPU kernel (glsl/morph_common.glsl) reads. The CSR form above stays the
# readable description of the data (tests, `vkmorph info`); this one is designed against the bandwidth floor.
#
# Why this layout (measured on an H200 and lavapipe; numbers in bench/):
# - One 256-thread workgroup owns one *chunk*: up to 256 consecutive vertices of ONE primitive (chunks never
#   straddle primitives, so each chunk has one output base address and stride and no per-vertex address table).
# - Base vertices are stored as the first 48 bytes of the output vertex (position, normal, tangent, texcoord) so
#   each thread reads 3 x vec4 and writes 3 x vec4 whole: full 16-byte stores, no scalar read-modify-write
#   traffic at a 48/80-byte stride (nine scalar stores per vertex were slow even without deltas).
# - Deltas are grouped per (chunk, target) *block*, in vertex order (blocks stored target-major: cheap to
#   build). A block has one table entry (weight slot, first delta) and a 256-bit mask of the chunk's vertices it
#   moves. An inactive target costs 8 bytes per chunk it touches (its table entry), never its deltas: the
#   few-active case reads only what it uses.
# - Per frame each workgroup compacts the active blocks of its chunk into shared memory with subgroup ballots
#   (deterministic order: table order; the block masks are loaded with the weights, one memory round trip less),
#   and each thread finds its own delta in a block by a popcount of the mask bits below it. Loads of up to four
#   deltas are issued back to back (branch-free, a miss reads the zero delta at index 0). No atomics: the
#   summation order is fixed and results repeat. Devices without subgroup ballots, CPU devices (lavapipe,
#   where barriers, shared memory and work per (block x lane) are what cost), and GPU batches whose blocks are
#   sparse (mean block fill below render/morph_batch.py VERTEX_KERNEL_BELOW_FILL: the workgroup kernel's work grows with
#   the active blocks of its chunk, whether or not they move its vertex) use a per-vertex kernel over the
#   same deltas stored vertex-major with a record per vertex (first delta, target bitmask) built only for it;
#   per frame the mask is ANDed with the active-target bits, so inactive targets cost nothing per vertex (a
#   uniform walk of the block table was up to 15x slower there on sparse random targets; a (delta, slot) list
#   per vertex, which read every delta's slot and weight, was about 1.5-3x slower with 5 of 52 targets active).
# Measured alternatives (bench/variants.py, bench/variants-*.txt): a shared-memory scan instead of ballots,
# one dependent delta load per trip instead of four, masks loaded after compaction, the CSR layout before.
# - Delta payload, no index: full = 2 x vec4 (p.xyz n.x | n.yz t.xy) + 1 float (t.z) = 36 bytes; compact =
#   1 x uvec4 of snorm16 pairs + one 16-bit t.z = 18 bytes, scaled per target.
# ---------------------------------------------------------------------------------------------------------------
CHUNK = 256                   # vertices per chunk (= local_size_x of the workgroup kernel); mask bits per block
MASK_WORDS = CHUNK // 32
# std430 records the kernels read (gpu/interface.py generates their GLSL structs from these dtypes)
# first_entry/end_entry: the chunk's block-table range (workgroup kernel); the per-vertex kernel reads its vertex
# records from word first_entry on (end_entry unused) and slot_words = (weight slot of target 0, target mask
# words per vertex); the workgroup kernel leaves slot_words 0 (its padding: its SPIR-V is unchanged).
CHUNK_HEADER = np.dtype([("first_vertex", "<u4"), ("vertex_count", "<u4"), ("first_entry", "<u4"),
                         ("end_entry", "<u4"), ("out_vec4", "<u4"), ("stride_vec4", "<u4"),
                         ("slot_words", "<u4", 2)])
BLOCK_ENTRY = np.dtype([("slot", "<u4"), ("first_delta", "<u4")])
CHUNK_RECORD = CHUNK_HEADER.itemsize // 4
DELTA_A_WORDS = {"full": 8, "compact": 4}   # per delta, stream A (vec4-aligned)


@dataclass
class ChunkedPrimitive:
    """One primitive laid out for the chunked kernel with local indices (vertex 0, target 0, delta 1: row 0 of
    the delta streams is the zero delta that misses read). Instances of one primitive share it."""

    vertex_count: int
    target_count: int
    vertex_stride_vec4: int
    chunks: np.ndarray        # (C, 4) int64: first vertex, vertex count, first table entry, end table entry
    table: np.ndarray         # (B, 2) uint32: target, first delta
    masks: np.ndarray         # (B, 8) uint32
    delta_a: np.ndarray       # (D + 1, 8) float32 | (D + 1, 4) uint32
    delta_b: np.ndarray       # (D + 1,) float32 | uint16
    base: np.ndarray          # (V, 12) float32
    scales: np.ndarray        # (T, 3) float32 (compact) / ones
    conservative_bounds: np.ndarray
    maximum_position_delta: float
    vertex_records: np.ndarray | None = None  # vertex-major form: (V, 1 + W) uint32, see _vertex_records

    @property
    def delta_count(self) -> int:
        return len(self.delta_a) - 1


_BYTE_BITS = np.array([bin(i).count("1") for i in range(256)], np.uint8)


def _popcount32(x: np.ndarray) -> np.ndarray:
    """Set bits of each uint32 (numpy >= 2 has it built in; a byte table otherwise)."""
    if hasattr(np, "bitwise_count"):
        return np.bitwise_count(x)
    x = np.ascontiguousarray(x, np.uint32)      # a column of the records is strided: view() needs contiguity
    return _BYTE_BITS[x.view(np.uint8).reshape(*x.shape, 4)].sum(axis=-1, dtype=np.uint8)


def _vertex_records(V: int, nz: list) -> np.ndarray:
    """Vertex-major form for the per-vertex kernel, by counting (no sort): (V, 1 + W) uint32, W = ceil(T / 32):
    column 0 the vertex's first delta (vertex-major, 1-based: row 0 is the zero delta), then a bitmask of the
    targets it has a delta for. Its deltas are stored in target order, so the delta of target t is
    first + popcount(mask bits below t) (``_vertex_rows``): a kernel finds the deltas of the frame's active
    targets with one AND of the mask with the active-target bits, never reading the others."""
    W = max(1, (len(nz) + 31) // 32)
    records = np.zeros((V, 1 + W), np.uint32)
    counts = np.zeros(V, np.int64)
    for t, v in enumerate(nz):      # per target: no temporaries of the batch's size
        if len(v):
            records[v, 1 + t // 32] |= np.uint32(1 << (t % 32))
    for w in range(W):
        counts += _popcount32(records[:, 1 + w])
    first = np.zeros(V + 1, np.int64)
    np.cumsum(counts, out=first[1:])
    records[:, 0] = first[:-1] + 1
    return records


def _vertex_rows(records: np.ndarray, v: np.ndarray, t: int) -> np.ndarray:
    """Vertex-major delta rows of target t at vertices ``v`` (which all have a delta of t)."""
    w, b = divmod(t, 32)
    below = records[v, 1 + w] & np.uint32((1 << b) - 1)
    rows = records[v, 0].astype(np.int64) + _popcount32(below)
    for k in range(w):
        rows += _popcount32(records[v, 1 + k])
    return rows


@dataclass
class PrimitiveScan:
    """The non-zero vertices of each target of one primitive (what every layout starts from) and its blocks."""

    nonzero: list             # per target: sorted vertex indices with a non-zero delta
    deltas: int
    blocks: int               # (chunk, target) pairs with at least one delta


def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=max(1, min(8, os.cpu_count() or 1)))   # numpy releases the GIL


def scan_primitive(prim: MeshPrimitiveAsset) -> PrimitiveScan:
    with _pool() as pool:
        nz = list(pool.map(lambda t: nonzero_vertices(prim, t), range(len(prim.morph_targets))))
    blocks = sum(int(np.count_nonzero(np.diff(v // CHUNK))) + 1 for v in nz if len(v))
    return PrimitiveScan(nz, sum(len(v) for v in nz), blocks)


def batch_block_fill(prims, scans: dict) -> float:
    """Mean block fill over the instances of a batch (``scans``: id(prim) -> PrimitiveScan): the mean fraction
    of a block's CHUNK vertices that it moves (1.0 without deltas), the statistic the kernel choice reads
    (vkmorph/render/morph_batch.py VERTEX_KERNEL_BELOW_FILL)."""
    deltas = sum(scans[id(p)].deltas for p in prims)
    blocks = sum(scans[id(p)].blocks for p in prims)
    return deltas / (blocks * CHUNK) if blocks else 1.0


def layout_primitive(prim: MeshPrimitiveAsset, delta_format: str = "full",
                     weight_range: tuple[float, float] = (0.0, 1.0), vertex_lists: bool = False,
                     scan: PrimitiveScan | None = None) -> ChunkedPrimitive:
    """Chunked layout of one primitive, vectorized per target (no loop over vertices).

    The block TABLE is chunk-major (what a workgroup walks); the DELTAS are stored target-major, vertex order
    (each target's non-zero deltas, concatenated), which already makes every (chunk, target) block one
    contiguous run: the build writes each target's deltas sequentially instead of scattering them.
    """
    if delta_format not in DELTA_FORMATS:
        raise ValueError(f"delta_format must be one of {DELTA_FORMATS}")
    compact = delta_format == "compact"
    V, T = prim.vertex_count, len(prim.morph_targets)
    C = (V + CHUNK - 1) // CHUNK
    nz = (scan or scan_primitive(prim)).nonzero
    pool = _pool()
    counts = np.zeros((C, T), np.int64)
    for t, v in enumerate(nz):
        counts[:, t] = np.bincount(v // CHUNK, minlength=C)
    target_first = np.ones(T + 1, np.int64)             # delta 0 is the zero delta misses read
    np.cumsum([len(v) for v in nz], out=target_first[1:])
    target_first[1:] += 1
    first = target_first[None, :T] + np.cumsum(counts, axis=0) - counts   # (C, T) first delta of each block
    exists = counts.ravel() > 0                         # blocks in chunk-major, then target order
    blk = np.cumsum(exists) - 1
    ex = np.flatnonzero(exists)
    B, D = len(ex), int(counts.sum())
    table = np.zeros((B, 2), np.uint32)
    table[:, 0] = ex % max(T, 1)
    table[:, 1] = first.ravel()[ex]
    entries = np.zeros(C + 1, np.int64)
    np.cumsum(exists.reshape(C, T).sum(axis=1), out=entries[1:])
    chunks = np.zeros((C, 4), np.int64)
    chunks[:, 0] = np.arange(C) * CHUNK
    chunks[:, 1] = np.minimum(CHUNK, V - chunks[:, 0])
    chunks[:, 2], chunks[:, 3] = entries[:-1], entries[1:]
    masks = np.zeros((B, MASK_WORDS), np.uint32)
    m_flat = masks.reshape(-1)
    delta_a = np.zeros((D + 1, DELTA_A_WORDS[delta_format]), np.uint32 if compact else np.float32)
    delta_b = np.zeros(D + 1, np.uint16 if compact else np.float32)
    positions = np.zeros((D + 1, 3), np.float32) if compact else delta_a[:, :3]    # for the bounds
    scales = np.ones((T, 3), np.float32)
    base = np.zeros((V, 12), np.float32)
    base.view(np.uint8)[:] = prim.vertices.view(np.uint8).reshape(V, -1)[:, :48]
    zeros = np.zeros((0, 3), np.float32)
    # Per-vertex layout (vertex_lists): the same rows written straight to their vertex-major places (each
    # vertex's deltas contiguous, targets ascending; a record (first delta, target bitmask) per vertex); no
    # block table or masks. Otherwise target-major: each target's deltas one contiguous run.
    records = _vertex_records(V, nz) if vertex_lists else None

    def fill(t: int) -> None:   # target t writes only its own rows, scale and blocks: targets run in parallel
        v = nz[t]
        if not len(v):
            return
        rows = _vertex_rows(records, v, t) if vertex_lists else slice(target_first[t], target_first[t + 1])
        tgt = prim.morph_targets[t]
        dp = tgt.position_deltas[v]
        dn = tgt.normal_deltas[v] if tgt.normal_deltas is not None else np.resize(zeros, (len(v), 3))
        dt = tgt.tangent_deltas[v] if tgt.tangent_deltas is not None else np.resize(zeros, (len(v), 3))
        a = np.empty((len(v), delta_a.shape[1]), delta_a.dtype) if vertex_lists else delta_a[rows]
        if compact:
            s = [float(np.abs(x).max()) or 1.0 for x in (dp, dn, dt)]
            scales[t] = s
            qp, qn, qt = (x / sx for x, sx in zip((dp, dn, dt), s))
            a[:, 0] = _pack2(qp[:, 0], qp[:, 1])
            a[:, 1] = _pack2(qp[:, 2], qn[:, 0])
            a[:, 2] = _pack2(qn[:, 1], qn[:, 2])
            a[:, 3] = _pack2(qt[:, 0], qt[:, 1])
            delta_b[rows] = _snorm16(qt[:, 2])
            positions[rows] = dp
        else:
            a[:, 0:3] = dp
            a[:, 3:6] = dn
            a[:, 6:8] = dt[:, :2]
            delta_b[rows] = dt[:, 2]
        if vertex_lists:        # scattered to the vertex-major rows; this layout has no block masks
            delta_a[rows] = a
            return
        c = v // CHUNK
        local = v % CHUNK
        key = c * MASK_WORDS + local // 32
        bits = np.left_shift(np.uint32(1), (local % 32).astype(np.uint32))
        run = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        kc = key[run]
        m_flat[blk[(kc // MASK_WORDS) * T + t] * MASK_WORDS + kc % MASK_WORDS] = np.bitwise_or.reduceat(bits, run)

    list(pool.map(fill, range(T)))
    # conservative bounds: with lo <= hi, min(lo d, hi d) = lo d for d >= 0 and hi d for d < 0
    lo_w, hi_w = weight_range
    if vertex_lists:            # the vertex of each delta row, in row order
        vert = np.r_[0, np.repeat(np.arange(V), np.diff(np.r_[records[:, 0], D + 1]))]
    else:
        vert = np.concatenate([np.zeros(1, np.int64)] + nz) if T else np.zeros(1, np.int64)
    up, down = np.zeros((V, 3)), np.zeros((V, 3))

    def sums(k: int) -> None:
        comp = np.ascontiguousarray(positions[1:, k])
        up[:, k] = np.bincount(vert[1:], np.maximum(comp, 0), minlength=V)
        down[:, k] = np.bincount(vert[1:], np.minimum(comp, 0), minlength=V)

    list(pool.map(sums, range(3 if D else 0)))
    pool.shutdown()
    neg, pos = lo_w * up + hi_w * down, hi_w * up + lo_w * down
    p = prim.vertices["position"].astype(np.float64)
    bounds = np.stack([(p + neg).min(axis=0), (p + pos).max(axis=0)]) if V else np.zeros((2, 3))
    reach = np.maximum(np.abs(neg), np.abs(pos))
    max_delta = float(np.sqrt((reach ** 2).sum(axis=1)).max()) if V else 0.0
    if not vertex_lists:
        return ChunkedPrimitive(V, T, prim.vertices.dtype.itemsize // 16, chunks, table, masks, delta_a, delta_b,
                                base, scales, bounds, max_delta)
    chunks[:, 2:] = 0
    return ChunkedPrimitive(V, T, prim.vertices.dtype.itemsize // 16, chunks, np.zeros((0, 2), np.uint32),
                            np.zeros((0, MASK_WORDS), np.uint32), delta_a, delta_b, base, scales, bounds,
                            max_delta, records)


@dataclass
class PrimitiveSlot:
    """Where one primitive instance lives in a :class:`ChunkedBatch`."""

    first_vertex: int
    first_chunk: int
    chunk_count: int
    weight_offset: int
    delta_count: int
    block_count: int
    conservative_bounds: np.ndarray
    maximum_position_delta: float


@dataclass
class ChunkedBatch:
    """All morphing primitives of a runtime in the chunked target-major layout (arrays ready to upload)."""

    delta_format: str
    chunks: np.ndarray        # (C, 8) uint32: first vertex, count, first entry, end entry | out vec4, stride
    table: np.ndarray         # (B, 2) uint32: weight slot, global index of the block's first delta
    masks: np.ndarray         # (B, 8) uint32: bit i = chunk vertex i has a delta in this block
    delta_a: np.ndarray       # full (D + 1, 8) float32 / compact (D + 1, 4) uint32; row 0 = the zero delta
    delta_b: np.ndarray       # full (D + 1,) float32 t.z / compact uint32 holding two snorm16 t.z each
    base: np.ndarray          # (V, 12) float32: the first 48 bytes of each vertex
    scales: np.ndarray        # (S, 4) float32 per weight slot (compact: position, normal, tangent scale)
    slots: list
    vertex_records: np.ndarray | None = None  # vertex-major form only: uint32 per vertex: its first delta (global),
    #                                           then its target bitmask (mask_words words; see _vertex_records)

    @property
    def delta_count(self) -> int:
        return len(self.delta_a) - 1


def scan_batch(prims) -> dict:
    """id(prim) -> PrimitiveScan for each distinct primitive of ``prims`` (instances share one scan)."""
    scans: dict[int, PrimitiveScan] = {}
    for p in prims:
        if id(p) not in scans:
            scans[id(p)] = scan_primitive(p)
    return scans


def build_chunked_batch(prims, weight_offsets, out_vec4, weight_range=(0.0, 1.0), delta_format="full",
                        slot_count: int | None = None, vertex_lists: bool = False,
                        scans: dict | None = None) -> ChunkedBatch:
    """Lay out ``prims`` (validated primitives with targets; the same object may repeat: instances share one
    layout) for the chunked kernel. ``weight_offsets[i]``: weight slot of target 0 of prims[i];
    ``out_vec4[i]``: vec4 index of its vertex 0 in the output buffer (stride = vertex size / 16); ``scans``:
    ``scan_batch(prims)`` when the caller already has it."""
    scans = scans if scans is not None else scan_batch(prims)
    cache: dict[int, ChunkedPrimitive] = {}
    locs = []
    for p in prims:
        if id(p) not in cache:
            cache[id(p)] = layout_primitive(p, delta_format, weight_range, vertex_lists, scans[id(p)])
        locs.append(cache[id(p)])
    S = slot_count if slot_count is not None else max([w + lp.target_count for w, lp in zip(weight_offsets, locs)]
                                                      + [1])
    Ctot = sum(len(lp.chunks) for lp in locs)
    Btot = sum(len(lp.table) for lp in locs)
    Vtot = sum(lp.vertex_count for lp in locs)
    chunks = np.zeros((max(1, Ctot), CHUNK_RECORD), np.uint32)
    table = np.zeros((max(1, Btot), 2), np.uint32)
    masks = np.zeros((max(1, Btot), MASK_WORDS), np.uint32)
    scales = np.ones((max(1, S), 4), np.float32)
    if len(locs) == 1:                         # one big primitive: no copy of its deltas
        delta_a, delta_b = locs[0].delta_a, locs[0].delta_b
        base = locs[0].base if Vtot else np.zeros((1, 12), np.float32)
    else:
        delta_a = np.concatenate([locs[0].delta_a[:1]] + [lp.delta_a[1:] for lp in locs]) if locs else \
            np.zeros((1, DELTA_A_WORDS[delta_format]), np.float32)
        delta_b = np.concatenate([locs[0].delta_b[:1]] + [lp.delta_b[1:] for lp in locs]) if locs else \
            np.zeros(1, np.float32)
        base = np.concatenate([lp.base for lp in locs]) if Vtot else np.zeros((1, 12), np.float32)
    if delta_format == "compact":
        delta_b = np.concatenate([delta_b, np.zeros(len(delta_b) % 2, np.uint16)]).view(np.uint32)
    slots = []
    if vertex_lists:
        records = np.zeros(max(1, sum(lp.vertex_records.size for lp in locs)), np.uint32)
    c0 = b0 = v0 = r0 = 0
    d0 = 0
    for lp, w_off, o_vec4 in zip(locs, weight_offsets, out_vec4):
        C, B = len(lp.chunks), len(lp.table)
        if vertex_lists:
            rec = records[r0:r0 + lp.vertex_records.size].reshape(lp.vertex_records.shape)
            rec[:] = lp.vertex_records
            rec[:, 0] += d0
            width = lp.vertex_records.shape[1]
            chunks[c0:c0 + C, 2] = r0 + lp.chunks[:, 0] * width
            chunks[c0:c0 + C, 6] = w_off
            chunks[c0:c0 + C, 7] = width - 1
            r0 += lp.vertex_records.size
        ch = chunks[c0:c0 + C]
        ch[:, 0] = v0 + lp.chunks[:, 0]
        ch[:, 1] = lp.chunks[:, 1]
        if not vertex_lists:
            ch[:, 2] = b0 + lp.chunks[:, 2]
            ch[:, 3] = b0 + lp.chunks[:, 3]
        ch[:, 4] = o_vec4 + lp.chunks[:, 0] * lp.vertex_stride_vec4
        ch[:, 5] = lp.vertex_stride_vec4
        table[b0:b0 + B, 0] = lp.table[:, 0] + w_off
        table[b0:b0 + B, 1] = lp.table[:, 1] + d0
        masks[b0:b0 + B] = lp.masks
        scales[w_off:w_off + lp.target_count, :3] = lp.scales
        slots.append(PrimitiveSlot(v0, c0, C, w_off, lp.delta_count, B, lp.conservative_bounds,
                                   lp.maximum_position_delta))
        c0, b0, v0, d0 = c0 + C, b0 + B, v0 + lp.vertex_count, d0 + lp.delta_count
    return ChunkedBatch(delta_format, chunks, table, masks, delta_a, delta_b, base, scales, slots,
                        records if vertex_lists else None)
