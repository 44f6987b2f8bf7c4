"""Sparse GPU morph data (seed 000 ``buildGpuMorphData``): CSR deltas per vertex, std430 layouts as numpy dtypes.

The numpy dtypes below are the single source of truth for the shader's struct layouts: gpu/interface.py
declares them as the morph pipelines' storage-buffer elements and generates the GLSL structs from them.
Building is vectorized per target (a loop over T, never over V), so 1M vertices x 50 targets is seconds, and
memory stays O(non-zero deltas) beyond the asset itself.
"""

from __future__ import annotations

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
    mask = np.zeros(prim.vertex_count, bool)
    for d in _target_arrays(prim, t):
        if d is not None:
            mask |= np.any(d != 0, axis=1)
    return np.flatnonzero(mask)


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

