"""Vertex normals and tangents for files that lack them, and normal deltas for morph targets that lack them,
computed per vertex without welding (vertex order and count stay those of the file)."""

from __future__ import annotations

import numpy as np


def _normalize(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    length = np.linalg.norm(v, axis=-1, keepdims=True)
    ok = length[..., 0] > 1e-12
    out = np.where(length > 1e-12, v / np.maximum(length, 1e-30), 0.0)
    return out, ok


def _accumulate(values: np.ndarray, tri: np.ndarray, V: int) -> np.ndarray:
    """Sum per-face (F, 3) ``values`` into each of the face's three vertices (bincount: fast and ordered)."""
    idx = tri.reshape(-1)
    rep = np.repeat(values, 3, axis=0)
    return np.stack([np.bincount(idx, rep[:, k], minlength=V) for k in range(3)], axis=1)


def area_weighted_normals(positions: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """float64 (V, 3): each vertex gets the sum of its faces' cross products (twice the area times the unit
    normal), normalized; isolated or degenerate vertices get +Z. Vertices are never welded, so a vertex that the
    file split along a hard edge only sees the faces that use that copy: hard edges stay hard."""
    p = np.asarray(positions, np.float64)
    tri = np.asarray(indices, np.int64).reshape(-1, 3)
    fn = np.cross(p[tri[:, 1]] - p[tri[:, 0]], p[tri[:, 2]] - p[tri[:, 0]])
    n, ok = _normalize(_accumulate(fn, tri, len(p)))
    n[~ok] = (0.0, 0.0, 1.0)
    return n


def vertex_normals(positions: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Area-weighted vertex normals (float32) for files that have none."""
    return area_weighted_normals(positions, indices).astype(np.float32)


def derived_normal_deltas(positions: np.ndarray, indices: np.ndarray, position_deltas: np.ndarray,
                          base: np.ndarray | None = None) -> np.ndarray:
    """Normal deltas for a morph target that has none: N(base + target) - N(base), both area-weighted.

    With base normals that are themselves area-weighted (files without normals) the morphed normal at weight 1
    is exactly the area-weighted normal of the morphed surface. With authored base normals they stay as authored
    at weight 0 and the target adds the change of the surface's normal; vertices whose faces the target does not
    move get exactly zero, so the sparse delta storage stays sparse. ``base`` may pass N(base) precomputed."""
    if base is None:
        base = area_weighted_normals(positions, indices)
    moved = np.asarray(positions, np.float64) + position_deltas
    return (area_weighted_normals(moved, indices) - base).astype(np.float32)


def any_perpendicular(normals: np.ndarray) -> np.ndarray:
    """A unit vector perpendicular to each normal (a stable choice: cross with the least-aligned axis)."""
    n = normals.astype(np.float64)
    axis = np.zeros_like(n)
    axis[np.arange(len(n)), np.argmin(np.abs(n), axis=1)] = 1.0
    t, _ = _normalize(np.cross(axis, n))
    return t


def vertex_tangents(positions, normals, texcoords, indices) -> np.ndarray:
    """(V, 4) tangents from UV derivatives (w = handedness), Gram-Schmidt against the normal; vertices with no
    usable UV gradient fall back to any perpendicular vector with w = 1."""
    p = positions.astype(np.float64)
    n = normals.astype(np.float64)
    V = len(p)
    t_acc = np.zeros((V, 3))
    b_acc = np.zeros((V, 3))
    if texcoords is not None and len(indices):
        uv = texcoords.astype(np.float64)
        tri = indices.reshape(-1, 3)
        e1, e2 = p[tri[:, 1]] - p[tri[:, 0]], p[tri[:, 2]] - p[tri[:, 0]]
        d1, d2 = uv[tri[:, 1]] - uv[tri[:, 0]], uv[tri[:, 2]] - uv[tri[:, 0]]
        det = d1[:, 0] * d2[:, 1] - d2[:, 0] * d1[:, 1]
        good = np.abs(det) > 1e-20
        r = np.where(good, 1.0 / np.where(good, det, 1.0), 0.0)[:, None]
        ft = (e1 * d2[:, 1:2] - e2 * d1[:, 1:2]) * r
        fb = (e2 * d1[:, 0:1] - e1 * d2[:, 0:1]) * r
        t_acc = _accumulate(ft, tri, V)
        b_acc = _accumulate(fb, tri, V)
    t = t_acc - n * np.sum(n * t_acc, axis=1, keepdims=True)
    t, ok = _normalize(t)
    fallback = any_perpendicular(n)
    t[~ok] = fallback[~ok]
    w = np.where(np.sum(np.cross(n, t) * b_acc, axis=1) < 0.0, -1.0, 1.0)
    return np.concatenate([t, w[:, None]], axis=1).astype(np.float32)
