"""The demo's SceneDriver: manual weight overrides are clamped to the pose's weight range, not to [0, 1]."""

from __future__ import annotations

from tests.helpers import asset
from vkmorph import load_scene
from vkmorph.anim.skeleton import Skeleton
from vkmorph.app.driver import SceneDriver
from vkmorph.morph.state import SceneMorphPose


def test_override_clamped_to_the_pose_weight_range():
    scene = load_scene(asset("AnimatedMorphCube", "AnimatedMorphCube.gltf"))
    for lo, hi in ((-1.0, 2.0), (0.0, 1.0), (-0.5, 0.25)):
        pose = SceneMorphPose(scene, weight_range=(lo, hi))
        driver = SceneDriver(scene, pose, Skeleton(scene), sine=False)
        node = pose.morph_nodes[0]
        for value in (hi - 0.125, lo + 0.125, hi + 3.0, lo - 3.0):
            held = driver.set_override(node, 1, value)
            assert held == min(max(value, lo), hi), (lo, hi, value, held)
            assert pose.weights(node)[1] == held
