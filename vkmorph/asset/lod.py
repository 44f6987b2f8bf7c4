"""Levels of detail as index buffers into a primitive's ORIGINAL vertices (no Vulkan, numpy).

A crowd draws far instances with fewer triangles (render/crowd_lod.py picks the level per instance and pass). The
levels here only re-index the primitive's own vertices: the morph and skinning outputs are shared by every level
and stay exact, nothing is deformed per level, and the posed bounds of the full mesh still hold (a level uses a
subset of its vertices).

Why a simplifier of our own: the well-kept libraries do not fit. ``meshopt`` (a dependency) is only the codec;
PyPI's ``meshoptimizer`` (whose ``simplify`` keeps the vertex buffer) ships an sdist only, which needs a C++
compiler that neither CI (a clean Debian 12) nor the device machine (pure wheels from a folder) has; ``pyfqmr``
and ``fast-simplification`` ship wheels but write new vertices. So: vertex clustering (Rossignac-Borrel), the
simplest scheme that keeps original vertices:

* a uniform grid over the primitive's box (``res`` cells along its longest side); every referenced vertex falls in
  one cell, keyed also by a group (the dominant joint of a skinned vertex, so a hand's vertices do not merge with
  a hip's that share a cell: the merged triangles would stretch when the skeleton moves them apart);
* per (cell, group) one representative ORIGINAL vertex, the one nearest the cell's mean (ties: the lowest index);
* triangles re-indexed to the representatives; degenerate ones (two corners in one cell) dropped, one folded
  over (its normal now against the original triangle's) turned back (back-face culling would cut a hole), and
  repeats of one triangle (same corners, same winding, any rotation) kept once, in their first order.

Split vertices (hard edges, seams: RobotExpressive's 7,214 vertices for 3,237 triangles barely share an index)
are no obstacle: the copies of a corner share a position, so they share a cell and the level is welded there.
The level's shading at a welded hard edge takes the representative's normal, the usual cost of clustering.

The grid per level comes from one scan of grid sizes (``RES_STEPS``, 1..1024 cells): among the grids that leave
triangles (a small part keeps a few rather than vanishing) and no more than the level before, those that keep at
least ``AREA_KEEP[level]`` of the surface area (a coarse grid folds whole parts away: holes), and of those the one
whose triangle count is nearest ``ratio`` of the original's. The area floor lowers with the level (0.6, 0.5, 0.3)
because the coarse levels are drawn small. For RobotExpressive's 19 primitives (3,237 triangles) the defaults give
1,595 / 737 / 322 triangles (49 / 23 / 10 %; the area floor holds back the big head and torso parts, so the
coarse levels sit above their ratios). Results are cached by
content (positions, indices, groups, ratios: a SHA-1), so building several renderers over one scene, or one
scene's copies, simplifies once. Deterministic: numpy's sorts and ``unique`` only.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

import numpy as np

from ..errors import UsageError

DEFAULT_RATIOS = (0.5, 0.2, 0.07)     # triangles of levels 1, 2, 3 as a fraction of level 0's
RES_STEPS = np.unique(np.round(np.geomspace(1, 1024, 64)).astype(np.int64))   # grids tried (cells, longest side)
AREA_KEEP = (0.6, 0.5, 0.3)           # per level (the last for any further): the least share of the surface area
_CACHE: OrderedDict[bytes, tuple[np.ndarray, ...]] = OrderedDict()
_CACHE_SIZE = 512


def float_tuple(values, what: str) -> tuple[float, ...]:
    """``values`` as a tuple of floats, or one UsageError naming the option ``what``."""
    try:
        return tuple(float(x) for x in values)
    except (TypeError, ValueError):
        raise UsageError(f"LOD {what} must be a list of numbers, got {values!r}") from None


def check_ratios(ratios) -> tuple[float, ...]:
    r = float_tuple(ratios, "ratios")
    if not r or any(not (0.0 < x < 1.0) for x in r) or any(b > a for a, b in zip(r, r[1:])):
        raise UsageError(f"LOD ratios must be a non-empty non-increasing list within (0, 1), got {ratios!r}")
    return r


def cluster(positions: np.ndarray, triangles: np.ndarray, res: int, groups: np.ndarray | None = None) -> np.ndarray:
    """(T', 3) triangles of ``triangles`` (T, 3) clustered on a grid of ``res`` cells along the box's longest side:
    every index is an index of ``positions`` that ``triangles`` already used (module docstring)."""
    tris = np.asarray(triangles, np.int64).reshape(-1, 3)
    if not len(tris):
        return tris
    p = np.asarray(positions, np.float64)
    used = np.unique(tris)
    pu = p[used]
    lo, hi = pu.min(axis=0), pu.max(axis=0)
    size = float((hi - lo).max())
    if size <= 0 or not np.isfinite(size):
        return tris
    n = int(res) + 1
    q = np.clip(np.floor((pu - lo) * (res / size)).astype(np.int64), 0, res)
    key = (q[:, 0] * n + q[:, 1]) * n + q[:, 2]
    if groups is not None:
        key = key * (int(groups.max()) + 1) + np.asarray(groups, np.int64)[used]
    cells, inv = np.unique(key, return_inverse=True)
    inv = inv.reshape(-1)
    counts = np.bincount(inv, minlength=len(cells)).astype(np.float64)
    mean = np.stack([np.bincount(inv, pu[:, k], len(cells)) for k in range(3)], axis=1) / counts[:, None]
    d2 = ((pu - mean[inv]) ** 2).sum(axis=1)
    order = np.lexsort((used, d2, inv))                  # per cell: nearest the mean first, then the lowest index
    first = order[np.r_[0, np.flatnonzero(np.diff(inv[order])) + 1]]
    rep = np.empty(len(cells), np.int64)
    rep[inv[first]] = used[first]
    remap = np.zeros(int(tris.max()) + 1, np.int64)
    remap[used] = rep[inv]
    t = remap[tris]
    keep = (t[:, 0] != t[:, 1]) & (t[:, 1] != t[:, 2]) & (t[:, 0] != t[:, 2])
    t, src = t[keep], tris[keep]
    if not len(t):
        return t
    # a triangle folded over by the clustering (its normal now against the original triangle's) is turned back,
    # or back-face culling would cut a hole where the mesh still faces the viewer
    n0 = np.cross(p[src[:, 1]] - p[src[:, 0]], p[src[:, 2]] - p[src[:, 0]])
    n1 = np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]])
    flip = (n0 * n1).sum(axis=1) < 0
    t[flip] = t[flip][:, [0, 2, 1]]
    # one of each triangle (its corners rotated so the smallest comes first: winding kept), first order kept
    r = np.argmin(t, axis=1)
    canon = np.stack([t[np.arange(len(t)), (r + k) % 3] for k in range(3)], axis=1)
    _, keep = np.unique(canon, axis=0, return_index=True)
    return t[np.sort(keep)]


def _area(p: np.ndarray, t: np.ndarray) -> float:
    if not len(t):
        return 0.0
    return float(np.linalg.norm(np.cross(p[t[:, 1]] - p[t[:, 0]], p[t[:, 2]] - p[t[:, 0]]), axis=1).sum() / 2)


def _levels(p, tris, groups, ratios) -> list[np.ndarray]:
    """Level 0 and one clustering per ratio, from one scan of grid sizes (``RES_STEPS``): per level, among the
    grids with triangles, no more than the level before and at least ``AREA_KEEP`` of the surface area (a coarse
    grid folds and drops whole parts: holes), the one whose count is nearest the ratio's (ties: fewer); when no
    grid keeps that much area, the one that keeps the most."""
    scan = []
    for res in RES_STEPS:
        t = cluster(p, tris, int(res), groups)
        if len(t):
            scan.append((len(t), _area(p, t), t))
        if len(t) >= len(tris):
            break
    a0 = _area(p, tris)
    levels = [tris]
    for k, r in enumerate(ratios):
        target, cap = r * len(tris), len(levels[-1])
        area_keep = AREA_KEEP[min(k, len(AREA_KEEP) - 1)]
        ok = [c for c in scan if c[0] <= cap]
        if not ok:
            levels.append(levels[-1])
            continue
        keep = [c for c in ok if c[1] >= area_keep * a0]
        best = min(keep, key=lambda c: (abs(c[0] - target), c[0])) if keep else max(ok, key=lambda c: (c[1], -c[0]))
        levels.append(best[2])
    return levels


def lod_indices(positions: np.ndarray, indices: np.ndarray, ratios=DEFAULT_RATIOS,
                groups: np.ndarray | None = None) -> tuple[np.ndarray, ...]:
    """(level 0 = ``indices``, level 1, ...): uint32 triangle lists into ``positions``' own vertices, one per
    ratio of ``ratios`` (about that fraction of the triangles, non-increasing), read-only, cached by content."""
    ratios = check_ratios(ratios)
    idx = np.ascontiguousarray(indices, np.uint32).reshape(-1)
    if len(idx) % 3:
        raise UsageError(f"LOD: index count {len(idx)} is not a multiple of 3")
    p = np.ascontiguousarray(positions, np.float32).reshape(-1, 3)
    if len(idx) and int(idx.max()) >= len(p):
        raise UsageError(f"LOD: index {int(idx.max())} out of range for {len(p)} vertices")
    g = None if groups is None else np.ascontiguousarray(groups, np.int64).reshape(-1)
    if g is not None and len(g) != len(p):
        raise UsageError(f"LOD: {len(g)} vertex groups for {len(p)} vertices")
    h = hashlib.sha1()
    for part in (p, idx, g if g is not None else np.zeros(0), np.array(ratios)):
        h.update(part.tobytes())
        h.update(b"|")
    key = h.digest()
    hit = _CACHE.get(key)
    if hit is not None:
        _CACHE.move_to_end(key)
        return hit
    tris = idx.astype(np.int64).reshape(-1, 3)
    levels = _levels(p.astype(np.float64), tris, g, ratios)
    out = tuple(_frozen(np.ascontiguousarray(t, np.uint32).reshape(-1)) for t in levels)
    _CACHE[key] = out
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return out


def primitive_lods(prim, ratios=DEFAULT_RATIOS) -> tuple[np.ndarray, ...]:
    """``lod_indices`` of a ``MeshPrimitiveAsset``: its base positions, grouped by each vertex's dominant joint
    when skinned."""
    v = prim.vertices
    groups = None
    if prim.is_skinned:
        groups = v["joints"][np.arange(len(v)), np.argmax(v["weights"], axis=1)].astype(np.int64)
    return lod_indices(v["position"], prim.indices, ratios, groups)


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a
