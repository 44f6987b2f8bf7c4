from __future__ import annotations

import math

import numpy as np
import pytest

from tests.gltf_ref import Gltf
from tests.helpers import asset
from vkmorph import load_scene
from vkmorph.anim.player import AnimationPlayer, SineDriver
from vkmorph.anim.sampler import sample
from vkmorph.anim.skeleton import Skeleton
from vkmorph.morph.reference import skin_reference
from vkmorph.morph.state import SceneMorphPose

T = np.array([1.0, 2.0, 4.0])
V = np.array([[0.0], [10.0], [30.0]])


def test_linear_step_hold_and_single_key():
    assert sample(T, V, 1.5)[0] == pytest.approx(5.0)
    assert sample(T, V, 3.0)[0] == pytest.approx(20.0)
    assert sample(T, V, 0.0)[0] == 0.0 and sample(T, V, 9.0)[0] == 30.0   # hold first / last
    assert sample(T, V, 1.99, "STEP")[0] == 0.0 and sample(T, V, 2.0, "STEP")[0] == 10.0
    assert sample(np.array([0.5]), np.array([[7.0]]), 3.0)[0] == 7.0


def test_cubicspline_hand_values():
    # keys at t=0 (value 0, out-tangent 1) and t=2 (value 1, in-tangent 0): Hermite with dt = 2
    vals = np.array([[0.0], [0.0], [1.0], [0.0], [1.0], [0.0]])
    times = np.array([0.0, 2.0])
    a = 0.5
    p0, m0, p1, m1 = 0.0, 1.0 * 2, 1.0, 0.0
    expected = ((2 * a**3 - 3 * a**2 + 1) * p0 + (a**3 - 2 * a**2 + a) * m0 + (-2 * a**3 + 3 * a**2) * p1
                + (a**3 - a**2) * m1)
    assert sample(times, vals, 1.0, "CUBICSPLINE")[0] == pytest.approx(expected)
    assert sample(times, vals, 2.0, "CUBICSPLINE")[0] == 1.0


def test_quaternion_slerp_halfway():
    q0 = np.array([0, 0, 0, 1.0])
    q1 = np.array([0, 0, math.sin(math.pi / 4), math.cos(math.pi / 4)])  # 90 deg about Z
    q = sample(np.array([0.0, 1.0]), np.stack([q0, q1]), 0.5, quaternion=True)
    np.testing.assert_allclose(q, [0, 0, math.sin(math.pi / 8), math.cos(math.pi / 8)], atol=1e-9)


def test_player_loops_and_clamps():
    scene = load_scene()
    pose = SceneMorphPose(scene)
    player = AnimationPlayer(scene, pose, Skeleton(scene))
    player.play("Wave", loop=True)
    player.advance(5.0)                      # 5 s into a 4 s loop = 1 s
    assert player.local_time() == pytest.approx(1.0)
    np.testing.assert_allclose(pose.weights("Red"), [1.0, 0.0], atol=1e-6)
    player.play("Wave", loop=False)
    player.advance(9.0)
    assert player.local_time() == pytest.approx(4.0)
    v = pose.version
    player.pause()
    player.advance(1.0)
    assert pose.version == v                 # paused: same values, version unchanged


def test_sine_driver_matches_seed_003_formula():
    d = SineDriver(0.0, 100.0, phase=2.0, offset=0.25)
    t = 0.3
    expected = 100.0 * 0.5 * (math.sin(2 * math.pi * 0.5 * (t + 0.5)) + 1)
    assert float(d.value(t)) == pytest.approx(expected)


def _gltf_weights_at(ref: Gltf, anim: dict, t: float) -> np.ndarray:
    for ch in anim["channels"]:
        if ch["target"]["path"] == "weights":
            s = anim["samplers"][ch["sampler"]]
            times = ref.accessor(s["input"])[:, 0]
            out = ref.accessor(s["output"]).reshape(len(times), -1)
            i = np.searchsorted(times, t, side="right") - 1
            if i < 0:
                return out[0]
            if i >= len(times) - 1:
                return out[-1]
            a = (t - times[i]) / (times[i + 1] - times[i])
            return (1 - a) * out[i] + a * out[i + 1]
    raise AssertionError("no weights channel")


@pytest.mark.parametrize("folder,name", [("AnimatedMorphCube", "AnimatedMorphCube.gltf"),
                                         ("MorphStressTest", "MorphStressTest.gltf")])
def test_sampled_weights_equal_the_files_samplers(folder, name):
    path = asset(folder, name)
    ref = Gltf(path)
    scene = load_scene(path)
    for clip, ga in zip(scene.animations, ref.json["animations"]):
        pose = SceneMorphPose(scene)
        player = AnimationPlayer(scene, pose)
        player.clip = clip
        node = clip.morph_channels[0].node
        for t in (0.0, 0.37, clip.duration * 0.5, clip.duration * 0.91, clip.duration + 1):
            player.apply(min(t, clip.duration))
            np.testing.assert_allclose(pose.weights(node), _gltf_weights_at(ref, ga, min(t, clip.duration)),
                                       atol=1e-5)


def test_simple_skin_reference_matches_direct_computation():
    path = asset("SimpleSkin", "SimpleSkin.gltf")
    ref = Gltf(path)
    scene = load_scene(path)
    skel = Skeleton(scene)
    player = AnimationPlayer(scene, SceneMorphPose(scene), skel)
    player.clip = scene.animations[0]
    player.apply(2.25)
    (prim,) = scene.primitives
    mesh_node = next(i for i, n in enumerate(scene.nodes) if n.mesh == 0)
    mats = skel.skin_matrices(prim.skin, mesh_node)
    v = prim.vertices
    p, _, _ = skin_reference(v["position"], v["normal"], v["tangent"], v["joints"], v["weights"], mats)
    # direct: glTF joints/weights and the joint rotation read from the file's sampler at t = 2.25
    gj = ref.accessor(ref.json["meshes"][0]["primitives"][0]["attributes"]["JOINTS_0"])
    gw = ref.accessor(ref.json["meshes"][0]["primitives"][0]["attributes"]["WEIGHTS_0"])
    ibm = ref.accessor(ref.json["skins"][0]["inverseBindMatrices"]).reshape(-1, 4, 4).transpose(0, 2, 1)
    s = ref.json["animations"][0]["samplers"][0]
    times, quats = ref.accessor(s["input"])[:, 0], ref.accessor(s["output"])
    i = int(np.searchsorted(times, 2.25, side="right")) - 1
    a = (2.25 - times[i]) / (times[i + 1] - times[i])
    q0, q1 = quats[i], quats[i + 1] * (1 if np.dot(quats[i], quats[i + 1]) >= 0 else -1)
    th = np.arccos(np.clip(np.dot(q0, q1), -1, 1))
    q = q0 if th < 1e-9 else (np.sin((1 - a) * th) * q0 + np.sin(a * th) * q1) / np.sin(th)
    q = q / np.linalg.norm(q)  # the file's keys are unit to 3 decimals only; rotations use the unit quaternion
    x, y, z, w = q
    rot = np.eye(4)
    rot[:3, :3] = [[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                   [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                   [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]]
    nodes = ref.json["nodes"]
    j0, j1 = ref.json["skins"][0]["joints"]
    target = ref.json["animations"][0]["channels"][0]["target"]["node"]

    def local(n):
        m = np.eye(4)
        m[:3, 3] = nodes[n].get("translation", [0, 0, 0])
        return m @ rot if n == target else m

    world = {j0: local(j0), j1: local(j0) @ local(j1)}  # node j1 is the child of j0 in this file
    for k in range(len(gj)):
        m = sum(gw[k, c] * (world[[j0, j1][gj[k, c]]] @ ibm[gj[k, c]]) for c in range(4) if gw[k, c] > 0)
        expected = (m @ np.append(ref.accessor(ref.json["meshes"][0]["primitives"][0]["attributes"]["POSITION"])[k],
                                  1.0))[:3]
        np.testing.assert_allclose(p[k], expected, atol=1e-5)
