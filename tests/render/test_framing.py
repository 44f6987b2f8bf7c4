"""Framing and ground placement by the POSED bounds (current weights and pose), on lavapipe under validation.

Generated glTF files (tests/render/scenes.py): a cube whose targets are whole-body poses, a flat square, a rigid
cube animated up from below y = 0. The camera pitch stays above the ground; the ground fades out with no edge.
"""

from __future__ import annotations

from argparse import Namespace

import numpy as np
import pytest
from PIL import Image

from tests.render import scenes
from vkmorph import load_scene
from vkmorph.anim.player import AnimationPlayer

pytestmark = pytest.mark.gpu
W, H = 160, 120


def render(ctx, scene, clip=None, t=0.0, configure=None, **kw):
    """(image, renderer) posed at ``clip``/``t`` and framed there, like ``vkmorph render``."""
    from vkmorph.render.offscreen import OffscreenRenderer

    off = OffscreenRenderer(ctx, scene, W, H, **kw)
    try:
        r = off.renderer
        if clip is not None:
            player = AnimationPlayer(scene, r.runtime.pose, r.skeleton)
            player.clip = scene.clip(clip)
            player.apply(t)
            r.frame_camera()
        if configure:
            configure(r)
        return off.render(), r
    finally:
        off.destroy()


def red(img: np.ndarray) -> np.ndarray:
    """(H, W) bool: the red test material (lit or in shade), not the grey ground nor the blue sky."""
    c = img[..., :3].astype(int)
    return (c[..., 0] > 60) & (c[..., 0] > 2 * c[..., 1] + 20) & (c[..., 0] > 2 * c[..., 2] + 20)


def sky_mask(img: np.ndarray) -> np.ndarray:
    from vkmorph.render.renderer import SKY_COLOR

    lin = np.array(SKY_COLOR[:3])
    sky = np.round(255 * np.where(lin <= 0.0031308, 12.92 * lin, 1.055 * lin ** (1 / 2.4) - 0.055))
    return np.abs(img[..., :3].astype(int) - sky).max(axis=2) <= 8


def test_whole_body_pose_targets_are_framed_by_the_pose(ctx, tmp_path):
    scene = load_scene(scenes.pose_targets_box(tmp_path))
    img, r = render(ctx, scene, ground=False)
    lo, hi = r.bounds   # the cube as drawn (weights 1, 0, 0): conservative and tight, not the 9-unit reach
    np.testing.assert_allclose(lo, [7.5, -0.5, -0.5], atol=1e-4)
    np.testing.assert_allclose(hi, [8.5, 0.5, 0.5], atol=1e-4)
    ys, xs = np.nonzero(~sky_mask(img))
    assert len(ys), "nothing drawn"
    height, width = (ys.max() - ys.min() + 1) / H, (xs.max() - xs.min() + 1) / W
    # framed by the pose, a unit cube fills about half of the image height; by every target at full weight
    # (a 9-unit box) it was about a tenth
    assert height > 0.35 and width > 0.25, (height, width)
    cy, cx = (ys.min() + ys.max()) / 2 / H, (xs.min() + xs.max()) / 2 / W
    assert abs(cy - 0.5) < 0.15 and abs(cx - 0.5) < 0.15, (cx, cy)


def test_bounds_follow_the_weights_on_frame_camera(ctx, tmp_path):
    from vkmorph.gpu.vk import vk
    from vkmorph.render.offscreen import COLOR_FORMAT
    from vkmorph.render.renderer import SceneRenderer

    scene = load_scene(scenes.pose_targets_box(tmp_path))
    r = SceneRenderer(ctx, scene, COLOR_FORMAT, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL)
    try:
        node = r.runtime.pose.morph_nodes[0]
        r.runtime.pose.set_weights(node, np.array([0.0, 1.0, 0.0], np.float32))
        r.frame_camera()
        np.testing.assert_allclose(r.bounds, [[-0.5, 7.5, -0.5], [0.5, 8.5, 0.5]], atol=1e-4)
        np.testing.assert_allclose(r.camera.target, [0.0, 8.0, 0.0], atol=1e-4)
        assert r.ground_y == pytest.approx(7.5, abs=0.01) and r.ground_y < 7.5
    finally:
        r.destroy()


def test_flat_model_lies_on_the_ground_without_z_fighting(ctx, tmp_path):
    scene = load_scene(scenes.flat_square(tmp_path))
    bare, _ = render(ctx, scene, ground=False)
    img, r = render(ctx, scene)
    square = red(bare)
    assert square.sum() > 0.05 * W * H, square.sum()
    inside = square & np.roll(square, 1, 0) & np.roll(square, -1, 0) & np.roll(square, 1, 1) & np.roll(square, -1, 1)
    assert red(img)[inside].mean() > 0.995, f"ground shows through the square: {1 - red(img)[inside].mean():.3f}"
    size = float(np.max(r.bounds[1] - r.bounds[0]))
    assert -0.01 * size < r.ground_y < 0.0, r.ground_y


def test_rising_cube_is_not_cut_by_the_ground_at_t0(ctx, tmp_path):
    """``vkmorph render`` at t = 0 (cube at y = -3.5..-2.5, below its rest place) vs the same pose without
    ground: every cube pixel is still the cube's."""
    from vkmorph.app.render_cmd import run_render

    path = scenes.rising_cube(tmp_path)
    out = tmp_path / "rise.png"
    assert run_render(Namespace(file=str(path), clip="rise", time=0.0, size=f"{W}x{H}", out=str(out))) == 0
    img = np.asarray(Image.open(out).convert("RGBA"))
    scene = load_scene(path)
    bare, r0 = render(ctx, scene, "rise", 0.0, ground=False)
    assert r0.bounds[1][1] == pytest.approx(-2.5, abs=1e-4)
    cube = red(bare)
    assert cube.sum() > 0.05 * W * H, cube.sum()
    assert red(img).sum() >= 0.98 * cube.sum(), (red(img).sum(), cube.sum())
    assert red(img)[cube].mean() > 0.98
    _, r = render(ctx, scene, "rise", 0.0)
    assert r.bounds[0][1] - 0.01 < r.ground_y < r.bounds[0][1], (r.ground_y, r.bounds)


def _pixel(vp: np.ndarray, p) -> tuple[int, int]:
    c = vp @ np.append(np.asarray(p, float), 1.0)
    return int((c[0] / c[3] * 0.5 + 0.5) * W), int((c[1] / c[3] * 0.5 + 0.5) * H)


def test_ground_is_a_grid_that_fades_out_without_an_edge(ctx):
    """Seen from high above and far away (the whole ground square in view), the square's edges and corners are
    the sky's colour (faded out); seen closer, grid lines are darker than the cells between them."""
    from vkmorph.render.renderer import GROUND_CELLS, ground_placement

    def view(pitch, zoom):
        def configure(r):
            r.camera.pitch, r.camera.distance = pitch, r.camera.distance * zoom
        return configure

    scene = load_scene()   # default scene: three tubes over x = -2..2, 1-unit cells
    img, r = render(ctx, scene, configure=view(1.35, 9.0))
    vp, y, cell = r.camera.view_proj(W / H), r.ground_y, r.grid_cell
    cx, cz = ground_placement(*r.bounds)[2][[0, 2], 3]
    sky = sky_mask(img)
    assert sky.mean() > 0.2, "the ground square fills the view: its edge is not in the test"
    reach = GROUND_CELLS * cell
    inside = 0
    for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1), (0, -1), (0, 1), (-1, 0), (1, 0)):
        x, yy = _pixel(vp, (cx + a * reach, y, cz + b * reach))
        if 1 <= x < W - 1 and 1 <= yy < H - 1:
            inside += 1
            assert sky[yy - 1:yy + 2, x - 1:x + 2].all(), f"ground edge visible at {(a, b)}: {img[yy, x]}"
    assert inside >= 4, inside
    assert not sky[H // 2 - 5:H // 2 + 5, W // 2 - 5:W // 2 + 5].any(), "no ground under the model"

    img, r = render(ctx, scene, configure=view(1.0, 1.5))
    vp = r.camera.view_proj(W / H)
    luma = img[..., :3].astype(float) @ [0.2126, 0.7152, 0.0722]
    x0 = np.floor((r.bounds[0][0] - 1.0) / (5 * cell)) * 5 * cell    # a major line left of the model
    z0 = np.round(cz / (5 * cell)) * 5 * cell + 2.5 * cell             # half-way between two major lines
    on_line = luma[_pixel(vp, (x0, y, z0))[::-1]]
    between = luma[_pixel(vp, (x0 + 0.5 * cell, y, z0))[::-1]]
    assert on_line < between * 0.85, (on_line, between)


def test_demo_frames_the_pose_it_shows_first(ctx, tmp_path):
    """The headless demo's first frame (t = 0 of the clip) shows the whole cube risen from below: camera and
    ground fitted to that pose, not to the rest pose."""
    from vkmorph.app.demo import run_headless

    path = scenes.rising_cube(tmp_path)
    scene = load_scene(path)
    args = Namespace(file=str(path), frames=1, out_dir=str(tmp_path / "frames"), screenshot=None)
    assert run_headless(scene, args) == 0
    img = np.asarray(Image.open(tmp_path / "frames" / "frame_000.png").convert("RGBA"))
    cube = red(img)
    assert cube.mean() > 0.05, cube.mean()
    ys, xs = np.nonzero(cube)
    assert 0.25 < ys.mean() / img.shape[0] < 0.75 and 0.25 < xs.mean() / img.shape[1] < 0.75
