"""Rendering on lavapipe under validation: reference images and a shadow that moves with the light.

Reference images live in tests/render/reference/ (tests/render/scenes.py compares them). Tolerance: a pixel
matches when every channel is within 6/255; at least 99.5% of pixels must match and the mean absolute difference
must stay below 1.0/255. Regenerate with VKMORPH_UPDATE_REFERENCES=1 (and look at them); on failure the render
and a diff image are written to test-artifacts/.
"""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import asset
from tests.render.scenes import compare_reference
from vkmorph import load_scene
from vkmorph.anim.player import AnimationPlayer

pytestmark = pytest.mark.gpu
W, H = 200, 150

CASES = [("default_scene", None, "Wave", 1.0),
         ("robot_dance", ("RobotExpressive", "RobotExpressive.glb"), "Dance", 1.0),
         ("morph_stress", ("MorphStressTest", "MorphStressTest.gltf"), "TheWave", 0.8),
         ("simple_skin", ("SimpleSkin", "SimpleSkin.gltf"), 0, 2.0)]


def render(ctx, scene, clip, t, configure=None):
    from vkmorph.render.offscreen import OffscreenRenderer

    off = OffscreenRenderer(ctx, scene, W, H)
    try:
        if clip is not None:
            player = AnimationPlayer(scene, off.renderer.runtime.pose, off.renderer.skeleton)
            player.clip = scene.clip(clip)
            player.apply(t)
            off.renderer.frame_camera()
        if configure:
            configure(off.renderer)
        return off.render(), off.renderer.camera.view_proj(W / H)
    finally:
        off.destroy()


@pytest.mark.parametrize("name,src,clip,t", CASES, ids=[c[0] for c in CASES])
def test_reference_image(ctx, name, src, clip, t):
    scene = load_scene(asset(*src) if src else None)
    img, _ = render(ctx, scene, clip, t)
    problem = compare_reference(name, img, ctx.info.name)
    assert problem is None, problem
    assert img[..., :3].std() > 10, "blank image"


def _luma(img, vp, world_point):
    clip = vp @ np.append(world_point, 1.0)
    ndc = clip[:3] / clip[3]
    x, y = int((ndc[0] * 0.5 + 0.5) * W), int((ndc[1] * 0.5 + 0.5) * H)
    assert 2 <= x < W - 2 and 2 <= y < H - 2, (x, y)
    patch = img[y - 1:y + 2, x - 1:x + 2, :3].astype(np.float64)
    assert np.ptp(patch.mean(axis=(0, 1))) < 12, f"not the grey ground at {world_point}: {patch.mean(axis=(0, 1))}"
    return float((patch * [0.2126, 0.7152, 0.0722]).sum(axis=2).mean())


def test_shadow_falls_on_the_ground_and_moves_with_the_light(ctx):
    scene = load_scene()  # red tube at x = -1.5, from y = 0 to 2, ground at y = 0
    d = np.array([-0.45, -1.0, 0.6])   # light travels towards the camera side, so the shadow is in view
    under = np.array([-1.5, 1.0, 0.0]) + d * (1.0 / -d[1])   # where the light ray through the tube's middle lands
    open_ground = np.array([-0.2, 0.0, 1.8])

    def light(direction):
        def configure(r):
            r.light_dir = np.asarray(direction, float)
        return configure

    img, vp = render(ctx, scene, None, 0.0, light(d))
    shadowed, lit = _luma(img, vp, under), _luma(img, vp, open_ground)
    assert shadowed < lit * 0.75, (shadowed, lit)
    img2, vp2 = render(ctx, scene, None, 0.0, light([0.45, -1.0, -0.6]))  # shadow now falls behind the tube
    relit = _luma(img2, vp2, under)
    assert relit > shadowed * 1.25, (relit, shadowed)
    assert relit == pytest.approx(_luma(img2, vp2, open_ground), rel=0.1)  # same lit ground as in the open
