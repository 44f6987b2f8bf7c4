"""The skeleton half of the scene state: vectorized world matrices equal the per-node loop they replaced,
versions move per node on a real change only, and the arrays can be changed only through the setters."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import asset
from vkmorph import UsageError, load_scene
from vkmorph.anim.player import AnimationPlayer
from vkmorph.anim.scene_state import SceneState
from vkmorph.anim.skeleton import Skeleton


def loop_trs(t, q, s):
    """The per-node TRS matrix exactly as the loop implementation built it."""
    x, y, z, w = q
    r = np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                  [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                  [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])
    m = np.eye(4)
    m[:3, :3] = r * np.asarray(s)[None, :]
    m[:3, 3] = t
    return m


def loop_world(sk: Skeleton) -> np.ndarray:
    nodes = sk.scene.nodes
    world = np.empty((len(nodes), 4, 4))
    stack = [i for i, n in enumerate(nodes) if n.parent is None]
    while stack:
        i = stack.pop()
        local = loop_trs(sk.translation[i], sk.rotation[i], sk.scale[i])
        p = nodes[i].parent
        world[i] = local if p is None else world[p] @ local
        stack.extend(reversed(nodes[i].children))
    return world


@pytest.mark.parametrize("clip,time", [("Dance", 0.0), ("Dance", 0.77), ("Death", 1.1), ("Idle", 2.0)])
def test_vectorized_world_matrices_equal_the_loop(clip, time):
    scene = load_scene(asset("RobotExpressive", "RobotExpressive.glb"))
    state = SceneState(scene)
    AnimationPlayer(scene, state).play(clip, time=time)
    sk = state.skeleton
    world = sk.world_matrices()
    ref = loop_world(sk)
    assert np.array_equal(world, ref), float(np.abs(world - ref).max())
    for s, skin in enumerate(scene.skins):
        pal = (ref[skin.joints] @ skin.inverse_bind_matrices).astype(np.float32)
        assert np.array_equal(sk.skin_matrices(s), pal)


def test_versions_per_node_and_world_versions_follow_the_hierarchy():
    scene = load_scene(asset("RobotExpressive", "RobotExpressive.glb"))
    sk = Skeleton(scene)
    assert sk.version == 0 and not sk.world_versions().any()
    child = next(i for i, n in enumerate(scene.nodes) if n.parent is not None and n.children)
    parent = scene.nodes[child].parent
    below = {child}
    stack = list(scene.nodes[child].children)
    while stack:
        i = stack.pop()
        below.add(i)
        stack.extend(scene.nodes[i].children)
    assert not sk.set_trs(child, "translation", sk.translation[child])    # no change: no version
    assert sk.version == 0
    assert sk.set_trs(child, "translation", sk.translation[child] + 1.0) and sk.version == 1
    wv = sk.world_versions()
    assert {int(i) for i in np.flatnonzero(wv == 1)} == below and wv[parent] == 0
    assert sk.local_versions[child] == 1 and sk.local_versions.sum() == 1
    with pytest.raises(ValueError):
        sk.translation[child] = 0.0          # read-only: writes go through the setters
    with pytest.raises(ValueError):
        sk.world_matrices()[child] = 0.0
    with pytest.raises(UsageError, match="path must be one of"):
        sk.set_trs(child, "position", np.zeros(3))
    for bad, msg in ((np.zeros(4), "shape"), ([np.nan, 0, 0], "non-finite"), ("up", "numbers")):
        with pytest.raises(UsageError, match=msg):
            sk.set_trs(child, "translation", bad)
    with pytest.raises(UsageError, match="out of range"):
        sk.set_trs(len(scene.nodes), "scale", np.ones(3))
    with pytest.raises(UsageError, match="shape"):
        sk.set_local(scale=np.ones((2, 3)))
    assert sk.version == 1                   # refused input changes nothing
    assert sk.reset() == 1 and sk.version == 2 and np.array_equal(sk.world_matrices(), loop_world(sk))
    assert sk.reset() == 0 and sk.version == 2


def test_scene_state_reset_restores_defaults_and_rest_pose():
    scene = load_scene(asset("RobotExpressive", "RobotExpressive.glb"))
    state = SceneState(scene)
    rest = state.skeleton.world_matrices().copy()
    w0 = state.pose.flat.copy()
    AnimationPlayer(scene, state).play("Dance", time=0.5)
    assert state.version != (0, 0)
    state.reset()
    np.testing.assert_array_equal(state.skeleton.world_matrices(), rest)
    np.testing.assert_array_equal(state.pose.flat, w0)
    v = state.version
    state.reset()
    assert state.version == v                # nothing to restore: no version moves


def test_player_takes_a_state_or_a_pose_and_refuses_anything_else():
    scene = load_scene(asset("RobotExpressive", "RobotExpressive.glb"))
    state = SceneState(scene)
    p = AnimationPlayer(scene, state)
    assert p.pose is state.pose and p.skeleton is state.skeleton
    with pytest.raises(UsageError, match="SceneMorphPose or a SceneState"):
        AnimationPlayer(scene, object())
