from __future__ import annotations

import numpy as np
import pytest

from vkmorph import UsageError, load_scene
from vkmorph.morph.reference import morph_reference
from vkmorph.morph.state import MorphState, PoseBinding, SceneMorphPose


def test_version_moves_only_on_real_change():
    s = MorphState(3)
    assert s.version == 0 and s.active_count == 0
    assert not s.set_weight(0, 0.0) and s.version == 0
    assert s.set_weight(1, 0.5) and s.version == 1 and s.active_count == 1
    assert not s.set_weight(1, 0.5) and s.version == 1
    assert s.set_weight(2, 7.0) and s.weights[2] == 1.0 and s.version == 2  # clamped
    assert not s.set_weight(2, 3.0) and s.version == 2                      # clamps to the same value
    assert s.active_count == 2
    assert not s.set_weights([0.0, 0.5, 1.0]) and s.version == 2
    assert s.set_weights(np.array([-1.0, 0.0, 0.2])) and s.active_count == 1 and s.version == 3
    with pytest.raises(UsageError):
        s.set_weights([0.1, 0.2])
    with pytest.raises(UsageError):
        s.set_weight(0, float("nan"))
    with pytest.raises(ValueError):
        s.weights[0] = 1.0  # read-only view: edits must go through set_weight


def test_custom_range_allows_negative_and_overdrive():
    s = MorphState(2, weight_range=(-1.0, 2.0))
    s.set_weights([-3.0, 1.5])
    np.testing.assert_array_equal(s.weights, [-1.0, 1.5])


def test_pose_versions_and_level_one_skip():
    scene = load_scene()
    pose = SceneMorphPose(scene)
    nodes = pose.morph_nodes
    assert len(nodes) == 2
    states = {n: [MorphState(2)] for n in nodes}
    binding = PoseBinding(pose, states)
    assert binding.sync()
    assert not binding.sync()                       # unchanged pose: O(1) skip
    assert not pose.set_weights(nodes[0], [0.0, 0.0]) and pose.version == 0
    assert pose.set_weights("Red", [0.25, 1.0]) and pose.version == 1
    assert binding.sync()
    np.testing.assert_array_equal(states[nodes[0]][0].weights, [0.25, 1.0])
    assert states[nodes[1]][0].version == 0         # the other node's state did not move
    with pytest.raises(UsageError):
        pose.set_weights("Red", [1.0])
    with pytest.raises(UsageError):
        pose.set_weights("Blue", [1.0, 0.0])          # no targets on that node


def test_reference_normalize_fallback_keeps_base_and_handedness():
    scene = load_scene()
    prim = scene.primitives[0]
    w = [1.0, 0.5]
    p, n, t = morph_reference(prim, w)
    np.testing.assert_allclose(np.linalg.norm(n, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(t[:, 3], prim.vertices["tangent"][:, 3])
    expected = prim.vertices["position"] + sum(wk * tg.position_deltas for wk, tg in zip(w, prim.morph_targets))
    np.testing.assert_allclose(p, expected, atol=1e-6)


def test_pose_set_flat_marks_only_changed_nodes():
    scene = load_scene()
    pose = SceneMorphPose(scene)
    pose.take_dirty()
    flat = pose.flat.copy()
    assert pose.set_flat(flat) == 0 and pose.version == 0
    red = scene.node_index("Red")
    flat[pose.slice_of(red)] = [0.5, 2.0]
    assert pose.set_flat(flat) == 1 and pose.version == 1
    assert pose.take_dirty() == {red}
    np.testing.assert_array_equal(pose.weights("Red"), [0.5, 1.0])  # clamped
    with pytest.raises(UsageError):
        pose.set_flat(flat[:-1])
