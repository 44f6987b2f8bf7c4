"""``CrowdState.gpu_posed``: instances posed on the GPU cost no CPU world/palette work, and an instance handed
back to the CPU (``set_gpu_posed(False)`` or a local-pose setter) gets exactly the CPU reference's matrices,
even when its local pose changed before or while it was GPU-posed."""

from __future__ import annotations

import numpy as np

from tests.helpers import asset
from vkmorph.anim.crowd import CrowdState
from vkmorph.morph.state import SceneMorphPose


def test_handed_back_instances_equal_a_fresh_crowd():
    from vkmorph import load_scene

    scene = load_scene(str(asset("RobotExpressive", "RobotExpressive.glb")))
    pose, clip = SceneMorphPose(scene), scene.animations[0]
    N = 4
    got = CrowdState(scene, N, pose)
    got.skin_matrices(0)                         # caches made from the rest pose
    got.play(clip, [0.3, 0.6, 0.9, 1.2])         # CPU-posed, not evaluated yet
    assert got.set_gpu_posed([1, 2, 3], True) == 3
    assert not got.gpu_posed[0] and got.gpu_posed[1:].all()
    before = got.skin_matrices(0)[1:].copy()     # GPU-posed rows: not recomputed (stale by design)
    assert np.array_equal(before, got.skin_matrices(0)[1:])
    got.set_gpu_posed([1], False)                # back: its own CPU pose (clip at 0.6)
    got[2].set_trs(5, "translation", [0.0, 0.1, 0.0])   # back by a setter
    want = CrowdState(scene, N, pose)
    want.play(clip, [0.3, 0.6, 0.9, 1.2])
    want[2].set_trs(5, "translation", [0.0, 0.1, 0.0])
    for s in range(len(scene.skins)):
        np.testing.assert_array_equal(got.skin_matrices(s)[:3], want.skin_matrices(s)[:3])
    assert got.gpu_posed.tolist() == [False, False, False, True]
