"""Bounds of a morphed primitive for the CURRENT weights: conservative and tight, in microseconds.

The vertices are grouped into clusters: the cells of a ``GRID``^3 grid laid over the base positions' box, so a
cluster is a small patch of the surface. Per cluster we keep the min/max of the base positions and, per target,
the min/max of that target's position deltas. For weights w, every vertex v of cluster c satisfies

    base_v + sum_t w_t d_vt  >=  base_min_c + sum_t min(w_t dmin_ct, w_t dmax_ct)     (and <= likewise)

so the union over clusters contains every deformed vertex (conservative, for any real weights, negative too).
It is tight because the only slack is that, inside one small patch, the extreme base vertex and the extreme
delta need not be the same vertex: at most a cell (1/GRID of the box per side) plus how much neighbouring
vertices' deltas differ. Evaluating is one (C, T, 3) multiply-and-reduce in numpy: no GPU readback.

Skinned primitives: a skinned position is a convex blend (weights >= 0, sum 1) of the joint matrices applied to
the morphed position, so it lies in the box of the cluster's morphed box transformed by each joint the cluster's
vertices use; ``at(weights, skin_matrices)`` returns the union of those (still conservative and tight: clusters
are small).

Unlike ``GpuMorphData.conservative_bounds`` (every weight combination of the range at once, which frames a
galloping-horse file whose targets are whole-body poses at 2.5-10x its size), these follow the pose.
"""

from __future__ import annotations

import numpy as np

from ..asset.model import MeshPrimitiveAsset

GRID = 16


class ClusterBounds:
    """Per-cluster base and per-target delta extents of one primitive; ``at(weights)`` gives (2, 3) min, max."""

    def __init__(self, prim: MeshPrimitiveAsset, grid: int = GRID):
        p = prim.vertices["position"].astype(np.float64)
        lo, hi = p.min(axis=0), p.max(axis=0)
        span = np.where(hi > lo, hi - lo, 1.0)
        cell = np.minimum(((p - lo) / span * grid).astype(np.int64), grid - 1)
        key = (cell[:, 0] * grid + cell[:, 1]) * grid + cell[:, 2]
        order = np.argsort(key, kind="stable")
        sorted_key = key[order]
        starts = np.flatnonzero(np.r_[True, sorted_key[1:] != sorted_key[:-1]])
        self._pair_cluster = self._pair_joint = None
        if prim.is_skinned:   # (cluster, joint) pairs that some vertex of the cluster uses with weight > 0
            cluster_of = np.empty(len(p), np.int64)
            cluster_of[order] = np.searchsorted(starts, np.arange(len(p)), side="right") - 1
            j = prim.vertices["joints"].astype(np.int64)
            used = prim.vertices["weights"] > 0
            J = int(j.max()) + 1 if len(j) else 1
            pairs = np.unique((np.repeat(cluster_of, 4).reshape(-1, 4) * J + j)[used])
            self._pair_cluster, self._pair_joint = pairs // J, pairs % J
        ps = p[order]
        self.base_min = np.minimum.reduceat(ps, starts, axis=0)          # (C, 3)
        self.base_max = np.maximum.reduceat(ps, starts, axis=0)
        T = len(prim.morph_targets)
        self.delta_min = np.zeros((len(starts), T, 3))                    # (C, T, 3)
        self.delta_max = np.zeros((len(starts), T, 3))
        for t, tgt in enumerate(prim.morph_targets):
            d = tgt.position_deltas.astype(np.float64)[order]
            self.delta_min[:, t] = np.minimum.reduceat(d, starts, axis=0)
            self.delta_max[:, t] = np.maximum.reduceat(d, starts, axis=0)

    @property
    def cluster_count(self) -> int:
        return self.base_min.shape[0]

    @property
    def target_count(self) -> int:
        return self.delta_min.shape[1]

    def at(self, weights, skin_matrices: np.ndarray | None = None, matrix: np.ndarray | None = None) -> np.ndarray:
        """(2, 3) float64 [min, max] of every vertex of ``base + sum_t w_t delta_t``, in the mesh's space; with
        ``skin_matrices`` (the (J, 4, 4) palette of a skinned primitive) of the skinned vertices, in the
        palette's space (world for ``Skeleton.skin_matrices(skin)``); with ``matrix`` (one 4x4 affine, e.g. a
        rigid node's world matrix) each cluster's box through it: tight under rotation, unlike transforming
        the whole box."""
        w = np.asarray(weights, np.float64).reshape(-1)
        if w.shape != (self.target_count,):
            raise ValueError(f"expected {self.target_count} weights, got {w.shape[0]}")
        a = self.delta_min * w[None, :, None]
        b = self.delta_max * w[None, :, None]
        lo = self.base_min + np.minimum(a, b).sum(axis=1)
        hi = self.base_max + np.maximum(a, b).sum(axis=1)
        if matrix is not None:
            return transform_box(np.stack([lo, hi], axis=1), matrix, union=True)
        if skin_matrices is None or self._pair_cluster is None:
            return np.stack([lo.min(axis=0), hi.max(axis=0)])
        m = np.asarray(skin_matrices, np.float64)[self._pair_joint]              # (P, 4, 4)
        c, pc = (lo + hi) / 2, self._pair_cluster
        center = np.einsum("pij,pj->pi", m[:, :3, :3], c[pc]) + m[:, :3, 3]
        half = np.einsum("pij,pj->pi", np.abs(m[:, :3, :3]), ((hi - lo) / 2)[pc])
        return np.stack([(center - half).min(axis=0), (center + half).max(axis=0)])


def transform_box(bounds: np.ndarray, matrix: np.ndarray, union: bool = False) -> np.ndarray:
    """(2, 3) axis-aligned box of the 8 corners of ``bounds`` under a 4x4 affine ``matrix`` (column vectors):
    mesh-space bounds to world space for framing, culling and ground placement. ``union``: ``bounds`` is
    (N, 2, 3), many boxes; the box of all of them transformed."""
    b = np.asarray(bounds, np.float64).reshape(-1, 2, 3)
    if not union and len(b) != 1:
        raise ValueError(f"expected one (2, 3) box, got {np.shape(bounds)}")
    m = np.asarray(matrix, np.float64)
    center, half = (b[:, 0] + b[:, 1]) / 2, (b[:, 1] - b[:, 0]) / 2
    c = center @ m[:3, :3].T + m[:3, 3]
    r = half @ np.abs(m[:3, :3]).T
    return np.stack([(c - r).min(axis=0), (c + r).max(axis=0)])
