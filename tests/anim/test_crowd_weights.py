"""``CrowdState.play_weights``: every instance its own clip and time, vectorized per (clip, channel), equal to
``CrowdState.play`` of each clip over its rows (the per-clip reference), for moving and constant channels;
rows whose clip is outside the list keep their weights; a wrong length is one UsageError."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import asset
from vkmorph.anim.crowd import CrowdState
from vkmorph.asset.model import AnimationClip, MorphWeightChannel
from vkmorph.errors import UsageError
from vkmorph.morph.state import SceneMorphPose


def test_play_weights_equals_play_per_clip():
    from vkmorph import load_scene

    scene = load_scene(str(asset("RobotExpressive", "RobotExpressive.glb")))
    rng = np.random.default_rng(4)
    clips = list(scene.animations)     # the file's weight channels are constant: two clips get moving ones
    for k, interp in ((0, "LINEAR"), (1, "STEP")):
        c = clips[k]
        clips[k] = AnimationClip(c.name, c.duration, node_channels=c.node_channels, morph_channels=[
            MorphWeightChannel(ch.node, ch.times, rng.random(ch.values.shape), interp) for ch in c.morph_channels])
    assert all(c.morph_channels for c in clips)
    pose = SceneMorphPose(scene)
    N = 40
    clip_of = rng.integers(0, len(clips) + 1, N)          # len(clips): no clip, weights kept
    t = rng.random(N) * 3.0
    got, want = CrowdState(scene, N, pose), CrowdState(scene, N, pose)
    start = rng.random(got.weights.shape) * pose.weight_range[1]
    got.set_all_weights(start)
    want.set_all_weights(start)
    assert got.play_weights(clips, clip_of, t) > 0
    for ci, clip in enumerate(clips):
        rows = np.flatnonzero(clip_of == ci)
        if len(rows):
            want.play(clip, t[rows], rows=rows)
    np.testing.assert_array_equal(got.weights, want.weights)
    kept = np.flatnonzero(clip_of == len(clips))
    assert len(kept) and np.array_equal(got.weights[kept], start[kept].astype(np.float32))
    with pytest.raises(UsageError, match="one clip and one time per row"):
        got.play_weights(clips, clip_of[:3], t)
