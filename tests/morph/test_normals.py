"""Normals that follow the surface: area-weighted base normals for files without normals, derived normal deltas
for targets without them, hard edges kept; checked against an independent per-triangle loop."""

from __future__ import annotations

import numpy as np
import pytest

from tests.gltf_write import GltfWriter, grid
from tests.helpers import asset
from vkmorph import load_scene
from vkmorph.morph.gpu_data import count_deltas
from vkmorph.morph.reference import morph_reference


def independent_normals(positions, indices) -> np.ndarray:
    """Plain loop: each triangle adds its cross product (2 x area x unit normal) to its three vertices."""
    acc = [np.zeros(3) for _ in range(len(positions))]
    p = np.asarray(positions, np.float64)
    for a, b, c in np.asarray(indices).reshape(-1, 3):
        n = np.cross(p[b] - p[a], p[c] - p[a])
        for v in (a, b, c):
            acc[v] = acc[v] + n
    return np.array([v / np.linalg.norm(v) if np.linalg.norm(v) > 1e-12 else (0, 0, 1.0) for v in acc])


def folded_grid():
    """A 7 x 7 grid folded along row 3 (a crease the file stores as split vertices) and slightly bumped."""
    pos, idx = grid(7, split_row=3)
    pos[:, 2] = 0.6 * np.abs(pos[:, 1]) + 0.05 * np.sin(3 * pos[:, 0])
    return pos, idx


def targets_for(pos):
    bump = np.zeros_like(pos)
    bump[:, 2] = 0.4 * np.exp(-4 * (pos[:, 0] ** 2 + (pos[:, 1] - 0.5) ** 2))
    twist = np.zeros_like(pos)
    twist[:, 0] = 0.3 * pos[:, 1] * pos[:, 2]
    twist[pos[:, 1] < 0] = 0.0                      # only the upper half moves: the rest must stay sparse
    return [bump, twist]


def write(tmp_path, *, normals: bool, target_normals=None):
    pos, idx = folded_grid()
    w = GltfWriter()
    tn = None
    if target_normals is not None:
        tn = [target_normals, None]
    w.mesh(pos, idx, normals=independent_normals(pos, idx) * [1, 1, -1] if normals else None,
           targets=targets_for(pos), target_normals=tn, target_names=["Bump", "Twist"])
    w.node("Sheet", mesh=0)
    return w.save(tmp_path / "sheet.gltf"), pos, idx


def test_file_without_normals_gets_area_weighted_normals_and_keeps_hard_edges(tmp_path):
    path, pos, idx = write(tmp_path, normals=False)
    prim = load_scene(path).primitives[0]
    expected = independent_normals(pos, idx)
    np.testing.assert_allclose(prim.vertices["normal"], expected, atol=1e-6)
    # the crease row: each copy sees only its own side's faces, so the two copies differ (not averaged)
    n = prim.vertices["normal"]
    below, above = n[21:28], n[49:56]
    assert (np.einsum("ij,ij->i", below, above) < 0.9).all()


def test_targets_without_normals_get_derived_deltas_that_match_the_morphed_surface(tmp_path):
    path, pos, idx = write(tmp_path, normals=False)
    prim = load_scene(path).primitives[0]
    assert [t.normals_derived for t in prim.morph_targets] == [True, True]
    for k, tgt in enumerate(targets_for(pos)):
        w = np.zeros(2)
        w[k] = 1.0
        _, n, _ = morph_reference(prim, w)
        np.testing.assert_allclose(n, independent_normals(pos + tgt, idx), atol=2e-5)
    # vertices whose faces the Twist target leaves alone store no normal delta: CSR stays sparse
    twist = prim.morph_targets[1]
    moved_faces = np.any(np.abs(targets_for(pos)[1])[idx.reshape(-1, 3)].sum(axis=2) > 0, axis=1)
    touched = np.zeros(len(pos), bool)
    touched[idx.reshape(-1, 3)[moved_faces].reshape(-1)] = True
    assert not np.any(twist.normal_deltas[~touched])


def test_authored_normals_are_kept_at_rest_and_file_target_normals_used(tmp_path):
    pos, idx = folded_grid()
    given = np.tile([0.0, 0.0, 1.0], (len(pos), 1)) * 0.5
    path, _, _ = write(tmp_path, normals=True, target_normals=given)
    prim = load_scene(path).primitives[0]
    assert [t.normals_derived for t in prim.morph_targets] == [False, True]
    np.testing.assert_allclose(prim.morph_targets[0].normal_deltas, given, atol=1e-6)
    base = prim.vertices["normal"].astype(np.float64)
    np.testing.assert_allclose(base, independent_normals(pos, idx) * [1, 1, -1], atol=1e-6)
    _, n, _ = morph_reference(prim, [0.0, 1.0])
    change = independent_normals(pos + targets_for(pos)[1], idx) - independent_normals(pos, idx)
    expected = base + change
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    np.testing.assert_allclose(n, expected, atol=2e-5)


def test_robot_face_targets_get_sparse_derived_normals():
    scene = load_scene(asset("RobotExpressive", "RobotExpressive.glb"))
    prims = [p for p in scene.primitives if p.morph_targets]
    assert prims and all(t.normals_derived for p in prims for t in p.morph_targets)
    for p in prims:
        moved = sum(int(np.any(t.position_deltas != 0, axis=1).sum()) for t in p.morph_targets)
        assert count_deltas(p) <= 4 * moved + 1      # the derived normals only touch the moved neighbourhood


@pytest.mark.gpu
def test_gpu_pass_matches_independent_normals_of_the_morphed_surface(ctx, tmp_path):
    from vkmorph.render.morph_pass import MorphRuntime

    path, pos, idx = write(tmp_path, normals=False)
    scene = load_scene(path)
    with MorphRuntime(ctx, scene) as rt:
        inst = rt.morphing[0]
        for k, tgt in enumerate(targets_for(pos)):
            w = np.zeros(2)
            w[k] = 1.0
            rt.set_weights("Sheet", w)
            ctx.submit_and_wait(rt.record)
            out = rt.read_vertices(inst)
            np.testing.assert_allclose(out["normal"], independent_normals(pos + tgt, idx), atol=2e-5)


@pytest.mark.parametrize("source", ["default", "AnimatedMorphCube"])
def test_tangents_gram_schmidt_against_the_morphed_normal_keep_handedness(source):
    path = None if source == "default" else asset("AnimatedMorphCube", "AnimatedMorphCube.gltf")
    prim = next(p for p in load_scene(path).primitives if p.morph_targets)
    w = np.linspace(1.0, 0.4, len(prim.morph_targets))
    _, n, t = morph_reference(prim, w, orthogonalize=True)
    v = prim.vertices
    raw_n = v["normal"] + sum(wk * tg.normal_deltas for wk, tg in zip(w, prim.morph_targets))
    raw_t = v["tangent"][:, :3] + sum(wk * tg.tangent_deltas for wk, tg in zip(w, prim.morph_targets)
                                      if tg.tangent_deltas is not None)
    un = raw_n / np.linalg.norm(raw_n, axis=1, keepdims=True)
    expected = raw_t - un * np.einsum("ij,ij->i", un, raw_t)[:, None]
    length = np.linalg.norm(expected, axis=1)
    ok = length > 1e-6                   # a tangent parallel to its normal falls back to the base tangent
    assert ok.mean() > 0.5
    np.testing.assert_allclose(t[ok, :3], expected[ok] / length[ok, None], atol=1e-5)
    np.testing.assert_allclose(t[~ok, :3], v["tangent"][~ok, :3], atol=1e-6)
    assert np.abs(np.einsum("ij,ij->i", n[ok], t[ok, :3])).max() < 1e-5
    assert t[:, 3].tobytes() == v["tangent"][:, 3].tobytes()
    _, n0, t0 = morph_reference(prim, w, orthogonalize=False)
    assert np.abs(np.einsum("ij,ij->i", n0, t0[:, :3])).max() > 1e-2   # plain normalizing leaves them skewed


@pytest.mark.parametrize("authored", [False, True], ids=["no-normals", "authored-normals"])
def test_gpu_normals_pass_is_exact_for_any_weights_and_keeps_hard_edges(ctx, tmp_path, authored):
    from vkmorph.render.morph_pass import MorphRuntime
    from vkmorph.render.normals_pass import NormalsPass

    path, pos, idx = write(tmp_path, normals=authored)
    scene = load_scene(path)
    rng = np.random.default_rng(4)
    with MorphRuntime(ctx, scene, weight_range=(-1.0, 1.0), slots=2) as rt, NormalsPass(rt) as normals:
        inst = rt.morphing[0]
        for slot, w in enumerate([rng.uniform(-0.5, 1.0, 2), np.array([0.7, 0.9])]):
            rt.set_weights("Sheet", w)

            def frame(cb, slot=slot):
                rt.record(cb, slot=slot, consumer="compute")
                assert normals.record(cb, slot=slot) == 1

            ctx.submit_and_wait(frame)
            out = rt.read_vertices(inst, slot=slot)
            p, _, _ = morph_reference(inst.prim, w)
            np.testing.assert_allclose(out["position"], p, atol=1e-5)
            want = independent_normals(p.astype(np.float64), idx)
            np.testing.assert_allclose(out["normal"], want, atol=2e-5)
            assert np.abs(np.einsum("ij,ij->i", out["normal"], out["tangent"][:, :3])).max() < 1e-5
            assert out["tangent"][:, 3].tobytes() == inst.prim.vertices["tangent"][:, 3].tobytes()
            n = out["normal"]
            assert (np.einsum("ij,ij->i", n[21:28], n[49:56]) < 0.9).all()   # the crease stays hard
        recorded = []
        ctx.submit_and_wait(lambda cb: recorded.append((rt.record(cb, slot=1, consumer="compute").dispatched,
                                                        normals.record(cb, slot=1))))
        assert recorded == [(0, 0)]     # unchanged pose in that slot: neither pass records anything
