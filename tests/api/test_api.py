"""vkmorph.open / pose / bake against the numpy reference, and exports that other tools load back."""

from __future__ import annotations

import os

import numpy as np
import pytest

import vkmorph
from tests.helpers import asset
from vkmorph.anim.player import AnimationPlayer
from vkmorph.anim.skeleton import Skeleton
from vkmorph.api import bake_numpy, measure_bake_throughput
from vkmorph.morph.reference import morph_reference, skin_reference
from vkmorph.morph.state import SceneMorphPose

pytestmark = pytest.mark.gpu


ROBOT = ("RobotExpressive", "RobotExpressive.glb")
CUBE = ("AnimatedMorphCube", "AnimatedMorphCube.gltf")
SKIN = ("SimpleSkin", "SimpleSkin.gltf")


@pytest.mark.parametrize("model", [SKIN], indirect=True)
def test_pose_skinned_matches_independent_reference(model):
    """Mesh space = inverse(mesh node world) x joint world x inverse bind, computed here from the scene."""
    scene = model.scene
    skel = Skeleton(scene)
    AnimationPlayer(scene, SceneMorphPose(scene), skel).apply(1.75)
    (prim,) = scene.primitives
    node = next(i for i, n in enumerate(scene.nodes) if n.mesh == 0)
    v = prim.vertices
    world = skel.world_matrices()
    s = scene.skins[prim.skin]
    for space, mats in (("mesh", skel.skin_matrices(prim.skin, node)),
                        ("world", world[s.joints] @ s.inverse_bind_matrices)):
        p, n, _ = skin_reference(v["position"], v["normal"], v["tangent"], v["joints"], v["weights"], mats)
        pose = model.pose(clip=0, time=1.75, space=space)
        np.testing.assert_allclose(pose[0].positions, p, atol=1e-5)
        np.testing.assert_allclose(pose[0].normals, n, atol=1e-5)
        np.testing.assert_array_equal(pose[0].indices, prim.indices)


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_named_weights_drive_every_node_with_that_target(model):
    assert {"Surprised", "Angry", "Sad"} <= set(model.target_names)
    pose = model.pose(weights={"Surprised": 1.0}, skinning=False)
    heads = [n for n in model.runtime.pose.morph_nodes if "Surprised" in model._node_targets(n)]
    assert len(heads) >= 2  # the head is several nodes: one name drives them all
    moved = 0.0
    for node in heads:
        k = model._node_targets(node).index("Surprised")
        names = model._node_targets(node)
        w = np.array([1.0 if i == k else float(model.scene.nodes[node].default_weights[i]
                                               if model.scene.nodes[node].default_weights is not None else 0.0)
                      for i in range(len(names))])
        for prim_i, prim in enumerate(model.scene.meshes[model.scene.nodes[node].mesh].primitives):
            p, n, _ = morph_reference(prim, w)
            got = pose[f"{model.scene.nodes[node].name}/{prim_i}"]
            np.testing.assert_allclose(got.positions, p, atol=1e-5)
            moved = max(moved, float(np.abs(p - prim.vertices["position"]).max()))
    assert moved > 1e-3  # the weight moved something (some parts have all-zero deltas)


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_bake_in_batches_equals_numpy_and_single_frames(model):
    times = np.linspace(0.0, 1.0, 5)
    for space in ("mesh", "world"):
        gpu = model.bake(clip="Dance", times=times, space=space, batch_frames=2)   # 3 command buffers
        ref = bake_numpy(model, clip="Dance", times=times, space=space)
        assert gpu.positions.shape == (5, sum(i.prim.vertex_count for i in model.instances), 3)
        np.testing.assert_allclose(gpu.positions, ref.positions, atol=2e-5)
        np.testing.assert_allclose(gpu.normals, ref.normals, atol=2e-4)
        one = model.pose(clip="Dance", time=times[3], space=space)
        np.testing.assert_allclose(gpu.primitive(one[5].name)[0][3], one[5].positions, atol=1e-6)
    assert np.abs(gpu.positions[0] - gpu.positions[4]).max() > 1e-2  # it moved


@pytest.mark.parametrize("model", [CUBE], indirect=True)
def test_misuse_is_one_clear_error(model):
    with pytest.raises(vkmorph.UsageError, match="needs a clip"):
        model.pose(time=1.0)
    with pytest.raises(vkmorph.UsageError, match="unknown morph target 'Smile'"):
        model.pose(weights={"Smile": 1.0})
    with pytest.raises(vkmorph.UsageError, match="finite"):
        model.pose(weights={"target_0": float("nan")})
    with pytest.raises(vkmorph.UsageError, match="space"):
        model.pose(space="camera")
    with pytest.raises(vkmorph.UsageError, match="unknown clip"):
        model.bake(clip="Nope", times=[0.0])
    with pytest.raises(vkmorph.UsageError, match="2 targets"):
        model.pose(weights=[1.0])


@pytest.mark.parametrize("model", [CUBE], indirect=True)
def test_exports_load_back_in_other_tools(model, tmp_path):
    import pygltflib
    import trimesh

    bake = model.bake(clip="Square", times=np.linspace(0, 2, 4))
    bake.export(tmp_path / "b.glb")
    g = pygltflib.GLTF2().load(str(tmp_path / "b.glb"))
    assert len(g.meshes[0].primitives[0].targets) == 3 and g.animations[0].channels[0].target.path == "weights"
    # our own importer (Assimp) reads the baked file back: frame f = base + target f-1
    scene = vkmorph.load_scene(tmp_path / "b.glb")
    (prim,) = scene.primitives
    np.testing.assert_allclose(prim.vertices["position"], bake.positions[0], atol=1e-6)
    for f in range(1, 4):
        np.testing.assert_allclose(prim.vertices["position"] + prim.morph_targets[f - 1].position_deltas,
                                   bake.positions[f], atol=1e-5)
    pose = model.pose(weights={"target_1": 1.0})
    # a .glb carries the node hierarchy: trimesh flattens it to world space; .obj/.ply hold the pose's space
    world = model.pose(weights={"target_1": 1.0}, space="world")
    for suffix in ("glb", "obj", "ply"):
        pose.export(tmp_path / f"p.{suffix}")
        loaded = trimesh.load(tmp_path / f"p.{suffix}", force="mesh", process=False)
        assert len(loaded.faces) == len(pose[0].indices) // 3
        want = (world if suffix == "glb" else pose)[0].positions
        np.testing.assert_allclose(np.sort(loaded.vertices, axis=0), np.sort(want, axis=0), atol=1e-5)
    with pytest.raises(vkmorph.UsageError, match="must end with"):
        pose.export(tmp_path / "p.png")
    with pytest.raises(vkmorph.UsageError, match="does not exist"):
        pose.export(tmp_path / "missing" / "p.glb")


def test_throughput_measurement_reports_both():
    r = measure_bake_throughput(asset(*SKIN), frames=8)
    assert r["frames"] == 8 and r["vertices"] == 10
    assert r["gpu_vps"] > 0 and r["numpy_vps"] > 0 and r["max_error"] < 1e-4


def test_close_is_idempotent_and_use_after_close_raises(tmp_path):
    with vkmorph.open(asset(*CUBE)) as m:
        pose = m.pose(weights=[0.5, 1.0])
        with pytest.raises(vkmorph.UsageError, match="list of seconds"):
            m.bake(clip=0, times=["a"])
    m.close()
    assert m.ctx is None and m.runtime is None
    with pytest.raises(vkmorph.UsageError, match="closed"):
        m.pose()
    with pytest.raises(vkmorph.UsageError, match="closed"):
        m.bake(clip=0, times=[0.0])
    with pytest.raises(vkmorph.UsageError):
        vkmorph.open(5)
    import pygltflib

    pose.export(tmp_path / "p.gltf")           # .gltf: one self-contained JSON file (data URI buffer)
    g = pygltflib.GLTF2().load(str(tmp_path / "p.gltf"))
    assert g.buffers[0].uri.startswith("data:") and len(os.listdir(tmp_path)) == 1
    scene = vkmorph.load_scene(tmp_path / "p.gltf")
    np.testing.assert_allclose(scene.primitives[0].vertices["position"], pose[0].positions, atol=1e-6)


def test_open_with_clamp_clamps_and_warns():
    """The range error's advice (clamp=True) is available on vkmorph.open: clamped to the file's range, warned."""
    from vkmorph.morph.state import WeightClampedWarning

    with vkmorph.open(asset("RobotExpressive", "RobotExpressive.glb"), validation=True, clamp=True) as m:
        with pytest.warns(WeightClampedWarning, match="outside the weight range"):
            over = m.pose(weights={"Surprised": 5.0})
        at_one = m.pose(weights={"Surprised": 1.0})
        np.testing.assert_array_equal(over["Head_4/0"].positions, at_one["Head_4/0"].positions)
    with vkmorph.open(asset("RobotExpressive", "RobotExpressive.glb")) as m:
        with pytest.raises(vkmorph.UsageError, match="outside the weight range"):
            m.pose(weights={"Surprised": 5.0})
