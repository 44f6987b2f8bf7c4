"""The demo panel without a window: what ImGui is told about the window, the heat map's first joint and legend,
the timeline's wrapping, the camera that keeps the model beside the panel."""

from __future__ import annotations

import pytest

from vkmorph.app.panel import display_metrics


def test_hidpi_window_scales_by_framebuffer_over_window():
    assert display_metrics((480, 320), (960, 640)) == ((480.0, 320.0), (2.0, 2.0))


def test_window_gone_mid_frame_gives_scale_one_not_the_framebuffer_size():
    """The X server killed the window: GLFW answers (0, 0) for it; the old scale was 960 (fonts ~1000x)."""
    assert display_metrics((0, 0), (960, 640)) == ((960.0, 640.0), (1.0, 1.0))
    assert display_metrics((0, 0), (0, 0)) == ((1.0, 1.0), (1.0, 1.0))


def test_scale_is_clamped():
    assert display_metrics((1, 1), (4000, 4000))[1] == (8.0, 8.0)


def test_most_influential_joint_has_the_largest_summed_weight():
    """Before: the heat map started on joint 0 (RobotExpressive's root, which moves almost nothing)."""
    from tests.helpers import asset
    from vkmorph import load_scene
    from vkmorph.app.panel import most_influential_joint

    scene = load_scene(asset("RobotExpressive", "RobotExpressive.glb"))
    totals = [0.0] * len(scene.skins[0].joints)
    for p in scene.primitives:
        if p.is_skinned and p.skin == 0:
            for joints, weights in zip(p.vertices["joints"].tolist(), p.vertices["weights"].tolist()):
                for j, w in zip(joints, weights):
                    totals[j] += w
    best = most_influential_joint(scene)
    assert totals[best] == max(totals) and best != 0, (best, totals[:3])


def test_the_demo_time_wraps_with_the_animation():
    """Before: the default scene's scrubber showed 16.56 s and 58.57 s on a 0-10 s slider. The sine animation
    repeats every 30 s (its drivers' periods 2, 3, 2.5 s); a clip every duration."""
    import numpy as np

    from vkmorph import load_scene
    from vkmorph.anim.skeleton import Skeleton
    from vkmorph.app.driver import SINE_PERIOD, SceneDriver
    from vkmorph.morph.state import SceneMorphPose

    scene = load_scene(None)
    pose, skel = SceneMorphPose(scene), Skeleton(scene)
    d = SceneDriver(scene, pose, skel, sine=True)
    d.advance(7.25)
    at = {n: pose.weights(n).copy() for n in pose.morph_nodes}
    d.advance(SINE_PERIOD * 2)
    assert abs(d.time - 7.25) < 1e-9 and d.loop_length == SINE_PERIOD
    for n in pose.morph_nodes:
        np.testing.assert_allclose(pose.weights(n), at[n], atol=1e-6)
    d.cycle()                                            # the file's clip
    clip = scene.clip(d.mode_name)
    d.advance(clip.duration * 3 + 0.5)
    assert abs(d.time - 0.5 % clip.duration) < 1e-9 and d.loop_length == clip.duration


def test_the_camera_beside_the_panel_centres_the_model_in_the_free_part():
    import numpy as np

    from vkmorph.app.view import BesidePanelCamera
    from vkmorph.render.camera import OrbitCamera

    cam = OrbitCamera.frame(np.array([-1.0, 0, -1]), np.array([1.0, 2, 1]))
    side = BesidePanelCamera.of(cam)
    np.testing.assert_allclose(side.view_proj(1.5), cam.view_proj(1.5))     # no panel: the orbit camera
    side.covered = 0.3
    clip = side.view_proj(1.5) @ np.append(cam.target, 1.0)
    assert abs(clip[0] / clip[3] - 0.3) < 1e-9     # NDC x of the free part's centre: 0.3 + 0.7 / 2 of the width
    tall = BesidePanelCamera.of(cam)
    tall.covered = 0.5                             # free part 0.5 x 1.2 wide per unit height: shrunk to fit it
    edge = tall.view_proj(1.2) @ np.append(cam.target + np.array([0.0, 1.0, 0.0]), 1.0)
    ref = cam.view_proj(1.2) @ np.append(cam.target + np.array([0.0, 1.0, 0.0]), 1.0)
    assert abs(edge[1] / edge[3] - 0.6 * ref[1] / ref[3]) < 1e-9


@pytest.mark.gpu
def test_the_heat_legend_shows_the_colours_the_mesh_shows():
    """Before: the legend drew forward.frag's linear colours as sRGB, a pure blue -> red that matched nothing on
    the heat-mapped mesh (light blue -> orange)."""
    import numpy as np

    from vkmorph import load_scene
    from vkmorph.app.panel import HEAT_HIGH, HEAT_LOW, most_influential_joint
    from vkmorph.gpu.context import Context
    from vkmorph.render.offscreen import OffscreenRenderer

    scene = load_scene(None)
    ctx = Context.create(validation=True)
    try:
        off = OffscreenRenderer(ctx, scene, 480, 360)
        off.renderer.heat_joint = most_influential_joint(scene)
        off.renderer.frame_camera()
        img = off.render()[..., :3].astype(int)
        off.destroy()
    finally:
        ctx.destroy()
    assert not ctx.errors_and_warnings()
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    low = np.median(img[(b > 150) & (r < 80)], axis=0)
    high = np.median(img[(r > 180) & (g < 120) & (b < 80)], axis=0)
    assert np.abs(low - np.array(HEAT_LOW) * 255).max() <= 16, low
    assert np.abs(high - np.array(HEAT_HIGH) * 255).max() <= 16, high
