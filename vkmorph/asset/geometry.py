"""Vertex normals and tangents for files that lack them, computed per vertex without welding (vertex order and
count must stay those of the file)."""

from __future__ import annotations

import numpy as np


def _normalize(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    length = np.linalg.norm(v, axis=-1, keepdims=True)
    ok = length[..., 0] > 1e-12
    out = np.where(length > 1e-12, v / np.maximum(length, 1e-30), 0.0)
    return out, ok


def vertex_normals(positions: np.ndarray, indices: np.ndarray) -> np.ndarray:
    """Area-weighted face normals accumulated per vertex; isolated vertices get +Z."""
    p = positions.astype(np.float64)
    tri = indices.reshape(-1, 3)
    fn = np.cross(p[tri[:, 1]] - p[tri[:, 0]], p[tri[:, 2]] - p[tri[:, 0]])
    acc = np.zeros_like(p)
    for k in range(3):
        np.add.at(acc, tri[:, k], fn)
    n, ok = _normalize(acc)
    n[~ok] = (0.0, 0.0, 1.0)
    return n.astype(np.float32)


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
        for k in range(3):
            np.add.at(t_acc, tri[:, k], ft)
            np.add.at(b_acc, tri[:, k], fb)
    t = t_acc - n * np.sum(n * t_acc, axis=1, keepdims=True)
    t, ok = _normalize(t)
    fallback = any_perpendicular(n)
    t[~ok] = fallback[~ok]
    w = np.where(np.sum(np.cross(n, t) * b_acc, axis=1) < 0.0, -1.0, 1.0)
    return np.concatenate([t, w[:, None]], axis=1).astype(np.float32)
