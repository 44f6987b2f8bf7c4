"""LOD index lists (vkmorph/asset/lod.py, no Vulkan): every level indexes only vertices level 0 already uses, has
fewer triangles than the one before, no degenerate or repeated triangle, is deterministic (and cached by content),
and simplifies a mesh whose vertices are all split (each triangle its own three vertices, as hard edges give)."""

from __future__ import annotations

import numpy as np
import pytest

from vkmorph.asset import lod as L
from vkmorph.errors import UsageError


def sphere(n: int = 24, split: bool = False):
    """A UV sphere of (n x 2n) quads; ``split``: every triangle its own three vertices."""
    th, ph = np.meshgrid(np.linspace(0, np.pi, n + 1), np.linspace(0, 2 * np.pi, 2 * n + 1), indexing="ij")
    p = np.stack([np.sin(th) * np.cos(ph), np.cos(th), np.sin(th) * np.sin(ph)], -1).reshape(-1, 3)
    W = 2 * n + 1
    i, j = np.meshgrid(np.arange(n), np.arange(2 * n), indexing="ij")
    a, b, c, d = i * W + j, i * W + j + 1, (i + 1) * W + j, (i + 1) * W + j + 1
    tris = np.concatenate([np.stack([a, c, b], -1).reshape(-1, 3), np.stack([b, c, d], -1).reshape(-1, 3)])
    if split:
        p, tris = p[tris.reshape(-1)], np.arange(tris.size).reshape(-1, 3)
    return p.astype(np.float32), tris.reshape(-1).astype(np.uint32)


def _tris(idx):
    return np.asarray(idx, np.int64).reshape(-1, 3)


@pytest.mark.parametrize("split", [False, True])
def test_levels_use_original_vertices_fewer_triangles_and_no_degenerates(split):
    p, idx = sphere(split=split)
    levels = L.lod_indices(p, idx)
    assert len(levels) == 1 + len(L.DEFAULT_RATIOS) and np.array_equal(levels[0], idx)
    used = set(np.unique(idx).tolist())
    counts = [len(x) // 3 for x in levels]
    assert all(b < a for a, b in zip(counts, counts[1:])), counts
    for r, lv in zip(L.DEFAULT_RATIOS, levels[1:]):
        t = _tris(lv)
        assert lv.dtype == np.uint32 and not lv.flags.writeable
        assert set(np.unique(t).tolist()) <= used                     # only vertices level 0 draws
        assert ((t[:, 0] != t[:, 1]) & (t[:, 1] != t[:, 2]) & (t[:, 0] != t[:, 2])).all()
        rot = np.stack([np.roll(t, -k, axis=1) for k in range(3)])       # no triangle twice, same winding
        canon = rot[np.argmin(t, axis=1), np.arange(len(t))]
        assert len(np.unique(canon, axis=0)) == len(t)
        assert 0.25 * r < len(t) / counts[0] < 2.0 * r, (r, len(t), counts[0])


def test_deterministic_and_cached_by_content():
    p, idx = sphere(16, split=True)
    a = L.lod_indices(p, idx, (0.5, 0.1))
    assert L.lod_indices(p.copy(), idx.copy(), (0.5, 0.1)) is a          # the cache: same content, same result
    L._CACHE.clear()
    b = L.lod_indices(p.copy(), idx.copy(), (0.5, 0.1))
    assert b is not a and all(np.array_equal(x, y) for x, y in zip(a, b))
    moved = p.copy()
    moved[0, 0] += 0.5
    assert L.lod_indices(moved, idx, (0.5, 0.1)) is not b                # new content, new entry


def test_groups_keep_clusters_apart():
    """Two spheres in one cell grid, one per group (a skinned primitive's dominant joint): no triangle of a level
    mixes vertices of both."""
    p, idx = sphere(12)
    q = np.concatenate([p, p + np.float32([0.3, 0, 0])])
    t = np.concatenate([idx, idx + len(p)])
    g = np.repeat([0, 1], len(p))
    for lv in L.lod_indices(q, t, (0.3, 0.1), groups=g)[1:]:
        side = g[_tris(lv)]
        assert (side == side[:, :1]).all()


def test_bad_input_is_refused_by_name():
    p, idx = sphere(4)
    with pytest.raises(UsageError, match="out of range"):
        L.lod_indices(p[:10], idx)
    with pytest.raises(UsageError, match="multiple of 3"):
        L.lod_indices(p, idx[:-1])
    with pytest.raises(UsageError, match="ratios"):
        L.lod_indices(p, idx, (0.1, 0.5))
    with pytest.raises(UsageError, match="LOD ratios must be a list of numbers"):
        L.lod_indices(p, idx, 0.5)                   # not a list: one line, not a TypeError
    with pytest.raises(UsageError, match="LOD ratios must be a list of numbers"):
        L.lod_indices(p, idx, ("half",))
    with pytest.raises(UsageError, match="3 vertex groups for"):
        L.lod_indices(p, idx, groups=np.zeros(3))


def test_robot_expressive_levels_if_present():
    from vkmorph.app.bench_data import find_model

    path = find_model("RobotExpressive")
    if path is None:
        pytest.skip("RobotExpressive not found (VKMORPH_ASSETS)")
    from vkmorph.asset.importer import load_scene

    scene = load_scene(str(path))
    total = np.zeros(4)
    for m in scene.meshes:
        for prim in m.primitives:
            lv = L.primitive_lods(prim)
            total += [len(x) // 3 for x in lv]
            assert all(int(x.max(initial=0)) < prim.vertex_count for x in lv)
    frac = total / total[0]
    assert 0.35 < frac[1] < 0.65 and 0.12 < frac[2] < 0.28 and 0.03 < frac[3] < 0.12, frac
