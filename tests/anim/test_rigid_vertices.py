"""Vertices of a skinned primitive with no bone influence import as rigid with their mesh node (no failure)."""

from __future__ import annotations

import math

import numpy as np

from tests.gltf_write import GltfWriter, grid
from vkmorph import load_scene
from vkmorph.anim.player import AnimationPlayer
from vkmorph.anim.skeleton import Skeleton
from vkmorph.app.info import scene_summary
from vkmorph.morph.reference import skin_reference
from vkmorph.morph.state import SceneMorphPose


def skinned_file(tmp_path):
    """A 5 x 5 sheet: rows 0-1 follow Bone0, rows 2-3 Bone1, row 4 has no influence at all."""
    pos, idx = grid(5)
    pos[:, 1] += 1.0                                  # y in [0, 2]
    row = np.repeat(np.arange(5), 5)
    joints = np.zeros((25, 4), np.uint16)
    weights = np.zeros((25, 4), np.float32)
    joints[row >= 2, 0] = 1
    weights[row < 4, 0] = 1.0
    w = GltfWriter()
    w.mesh(pos, idx, joints=joints, joint_weights=weights, name="sheet")
    w.node("Mesh", mesh=0, skin=0, translation=[3.0, 0.0, 0.0])
    b0 = w.node("Bone0")
    b1 = w.node("Bone1", root=False, translation=[0.0, 1.0, 0.0])
    w.doc["nodes"][b0]["children"] = [b1]
    w.skin([b0, b1], [np.eye(4), np.array([[1, 0, 0, 0], [0, 1, 0, -1.0], [0, 0, 1, 0], [0, 0, 0, 1]])])
    q = [0.0, 0.0, math.sin(math.pi / 4), math.cos(math.pi / 4)]
    w.animation("bend", [(b1, "rotation", [0.0, 1.0], [[0, 0, 0, 1.0], q], "LINEAR")])
    return w.save(tmp_path / "skinned.gltf"), int((weights.sum(axis=1) == 0).sum())


def test_unweighted_vertices_are_rigid_with_their_mesh_node(tmp_path):
    path, unweighted = skinned_file(tmp_path)
    scene = load_scene(path)                          # used to fail: "joint weights sum to 0.0000"
    prim = scene.primitives[0]
    assert unweighted == 5 and prim.unweighted_vertices == unweighted
    assert scene_summary(scene)["primitives"][0]["unweighted_vertices"] == unweighted
    skel = Skeleton(scene)
    player = AnimationPlayer(scene, SceneMorphPose(scene), skel)
    player.play("bend", loop=False, time=1.0)
    mesh_node = scene.node_index("Mesh")
    mats = skel.skin_matrices(prim.skin, mesh_node)
    v = prim.vertices
    p, n, _ = skin_reference(v["position"], v["normal"], v["tangent"], v["joints"], v["weights"], mats)
    rigid = np.arange(20, 25)
    np.testing.assert_allclose(p[rigid], v["position"][rigid], atol=1e-6)
    np.testing.assert_allclose(n[rigid], v["normal"][rigid], atol=1e-6)
    moved = np.linalg.norm(p[10:20] - v["position"][10:20], axis=1)
    assert (moved[5:] > 0.5).all()                    # Bone1's rows did bend
    # Bone0 did not move: in the mesh node's space (skin matrices' space) that is minus the node's translation
    np.testing.assert_allclose(p[:10], v["position"][:10] - [3.0, 0.0, 0.0], atol=1e-6)
