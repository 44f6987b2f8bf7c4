"""Crowd test scenes (not a test module): shared by tests/render/test_crowd*.py."""

from __future__ import annotations

import numpy as np

from tests.helpers import random_prim
from vkmorph.asset.model import SKINNED_VERTEX, MeshAsset, NodeAsset, SceneAsset, SkinAsset


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
