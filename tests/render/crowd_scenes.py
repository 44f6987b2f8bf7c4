"""Crowd test scenes (not a test module): shared by tests/render/test_crowd*.py."""

from __future__ import annotations

import numpy as np

from tests.helpers import random_prim
from vkmorph.asset.model import SKINNED_VERTEX, STATIC_VERTEX, MeshAsset, NodeAsset, SceneAsset, SkinAsset
from vkmorph.gpu import memory as M
from vkmorph.morph.reference import morph_reference, skin_reference


def crowd_scene(rng) -> SceneAsset:
    """Two morphing primitives (one skinned by a 3-joint chain), one static one without targets."""
    a, b, c = random_prim(rng, 300, 5, 0.4), random_prim(rng, 700, 40, 0.2), random_prim(rng, 50, 0, 0.0)
    v = np.zeros(len(b.vertices), SKINNED_VERTEX)
    for f in b.vertices.dtype.names:
        v[f] = b.vertices[f]
    v["joints"] = rng.integers(0, 3, (len(v), 4))
    w = rng.random((len(v), 4))
    v["weights"] = w / w.sum(axis=1, keepdims=True)
    b.vertices, b.skin = v, 0
    nodes = [NodeAsset("a", mesh=0), NodeAsset("b", mesh=1, skin=0), NodeAsset("c", mesh=2),
             NodeAsset("j0", children=[4]), NodeAsset("j1", parent=3, children=[5], translation=[0, 1, 0]),
             NodeAsset("j2", parent=4, translation=[0, 1, 0])]
    inv = np.stack([np.eye(4)] * 3)
    inv[1, 1, 3], inv[2, 1, 3] = -1.0, -2.0
    skins = [SkinAsset(np.array([3, 4, 5]), inv)]
    meshes = [MeshAsset("ma", [a]), MeshAsset("mb", [b]), MeshAsset("mc", [c])]
    return SceneAsset(nodes=nodes, meshes=meshes, skins=skins, animations=[], roots=[0, 1, 2, 3])


def expected_world(rt, inst, i):
    """numpy: instance i's primitive morphed at its own weights, skinned by its own palette (world space)."""
    crowd = rt.crowd
    v = inst.prim.vertices
    if inst.is_morphing:
        w = crowd.weights[i][rt.pose.slice_of(inst.node)][:inst.target_count]
        p, n, t = morph_reference(inst.prim, w)
    else:
        p, n, t = v["position"], v["normal"], v["tangent"]
    return skin_reference(p, n, np.asarray(t), v["joints"], v["weights"], crowd.skin_matrices(inst.prim.skin)[i])


def pose_randomly(rt, rng, rows=None):
    crowd = rt.crowd
    r = np.arange(crowd.count) if rows is None else np.asarray(rows)
    crowd.set_all_weights(rng.random((len(r), crowd.weights.shape[1])), rows=r)
    T, R, S = (np.array(a)[r] for a in crowd.local)
    ang = rng.random(R.shape[:2]) * 1.5
    R[:] = np.stack([np.zeros_like(ang), np.sin(ang / 2), np.zeros_like(ang), np.cos(ang / 2)], -1)
    crowd.set_local(rotation=R, rows=r)


def skinned_positions(ctx, skin, slot, d, i):
    raw = M.readback(ctx, skin.outputs[slot], np.uint8, count=48 * d.vertex_count, offset=d.offset_of(i))
    return raw.view(STATIC_VERTEX)["position"].copy()
