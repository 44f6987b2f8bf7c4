"""PoseBatch (all frames at once) against the per-frame path: AnimationPlayer + Skeleton, frame by frame."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import asset
from vkmorph.anim.player import AnimationPlayer
from vkmorph.anim.pose_batch import PoseBatch, affine_inverses, sample_many
from vkmorph.anim.sampler import sample
from vkmorph.anim.skeleton import Skeleton, affine_inverse
from vkmorph.asset.importer import load_scene
from vkmorph.morph.state import SceneMorphPose


@pytest.mark.parametrize("interp", ["STEP", "LINEAR", "CUBICSPLINE"])
@pytest.mark.parametrize("quaternion", [False, True])
def test_sample_many_equals_sample_at_every_time(interp, quaternion):
    rng = np.random.default_rng(7)
    times = np.array([0.0, 0.25, 0.25, 0.7, 1.5])            # a zero-length segment too
    n = 4 if quaternion else 3
    k = len(times) * (3 if interp == "CUBICSPLINE" else 1)
    values = rng.normal(size=(k, n))
    if quaternion and interp != "CUBICSPLINE":
        values /= np.linalg.norm(values, axis=1, keepdims=True)
        values[2] = values[1] * (1 - 1e-12)                    # nearly identical keys: the lerp branch
        values[3] = -values[3]                                  # the shortest-path flip
    ts = np.r_[-1.0, times, np.linspace(-0.1, 1.7, 41), 9.0]
    got = sample_many(times, values, ts, interp, quaternion)
    want = np.stack([sample(times, values, t, interp, quaternion) for t in ts])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("clip", ["Dance", "Death", "Wave"])
def test_world_matrices_and_palettes_equal_the_skeleton_frame_by_frame(clip):
    scene = load_scene(asset("RobotExpressive", "RobotExpressive.glb"))
    c = scene.clip(clip)
    times = np.linspace(0.0, c.duration, 17)
    batch = PoseBatch(scene)
    world = batch.world_matrices(*batch.sample(c, times))
    mesh_nodes = [i for i, n in enumerate(scene.nodes) if n.skin is not None]
    assert mesh_nodes
    palettes = {(s, m): batch.skin_matrices(world, s, m) for s in range(len(scene.skins)) for m in (None, *mesh_nodes)}
    for f, t in enumerate(times):
        sk = Skeleton(scene)
        player = AnimationPlayer(scene, SceneMorphPose(scene), sk)
        player.clip = c
        player.apply(t)
        np.testing.assert_allclose(world[f], sk.world_matrices(), rtol=1e-12, atol=1e-12)
        for (s, m), pal in palettes.items():
            np.testing.assert_allclose(pal[f], sk.skin_matrices(s, m), rtol=1e-6, atol=1e-6)


def test_affine_inverses_match_including_a_singular_node():
    rng = np.random.default_rng(3)
    m = np.tile(np.eye(4), (3, 1, 1))
    m[:, :3, :] = rng.normal(size=(3, 3, 4))
    m[1, :3, 2] = 0.0                                           # scaled to zero along one axis
    np.testing.assert_allclose(affine_inverses(m), np.stack([affine_inverse(x) for x in m]), rtol=1e-10,
                               atol=1e-12)
