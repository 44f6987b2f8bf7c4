"""``vkmorph render`` poses and frames: --weight / --weights, --camera, --fov, --msaa, --frames (issue 28).

Each image is checked against something computed independently of the flag under test: the same pose set
through the Python API, the projected size of the model at a known distance, the animated clip sampled by
the single-frame command."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import ROOT, assert_one_line_error, asset, vkmorph

DEFAULT = ROOT / "vkmorph" / "data" / "default_scene.gltf"
SIZE = (160, 120)


def _png(path) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB")).astype(int)


def _coloured(img) -> int:
    """Pixels of the default scene's saturated meshes (red, blue, purple), not the grey ground or the sky."""
    return int((img.max(axis=-1) - img.min(axis=-1) > 60).sum())


def _render(tmp_path, name, *args):
    out = tmp_path / name
    r = vkmorph("render", *args, "--size", f"{SIZE[0]}x{SIZE[1]}", "--out", out)
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.gpu
def test_weight_by_name_renders_what_the_api_pose_renders(tmp_path):
    """--weight target_1=1 over the file's clip equals the Python API's renderer with that weight set after the
    clip; and it is not the rest pose."""
    model = asset("SimpleMorph", "SimpleMorph.gltf")
    posed = _png(_render(tmp_path, "w.png", model, "--weight", "target_1=1", "--time", "0"))
    listed = _png(_render(tmp_path, "l.png", model, "--weights", "0,1", "--time", "0"))
    rest = _png(_render(tmp_path, "r.png", model, "--time", "0"))
    np.testing.assert_array_equal(posed, listed)
    assert (np.abs(posed - rest).max(axis=-1) > 30).sum() > 100

    from vkmorph import load_scene
    from vkmorph.anim.player import AnimationPlayer
    from vkmorph.gpu.context import Context
    from vkmorph.render.offscreen import OffscreenRenderer

    scene = load_scene(model)
    ctx = Context.create(validation=True)
    try:
        off = OffscreenRenderer(ctx, scene, *SIZE)
        r = off.renderer
        player = AnimationPlayer(scene, r.runtime.pose, r.skeleton)
        player.clip = scene.animations[0]
        player.apply(0.0)
        for node in r.runtime.pose.morph_nodes:
            r.runtime.pose.set_weights(node, [0.0, 1.0])
        r.frame_camera()
        api = off.render()[..., :3].astype(int)
        off.destroy()
    finally:
        ctx.destroy()
    assert not ctx.errors_and_warnings()
    np.testing.assert_array_equal(posed, api)


@pytest.mark.gpu
def test_camera_distance_and_fov_scale_the_model_as_a_pinhole_does(tmp_path):
    """At twice the distance the model covers a quarter of the pixels; a narrower field of view at the framed
    distance (--fov, which also re-frames) keeps it the same size (within what edges allow)."""
    near = _coloured(_png(_render(tmp_path, "n.png", DEFAULT, "--camera", "20,17,6", "--msaa", "1")))
    far = _coloured(_png(_render(tmp_path, "f.png", DEFAULT, "--camera", "20,17,12", "--msaa", "1")))
    assert near > 500, near
    assert 3.0 < near / far < 5.3, (near, far)
    framed = _coloured(_png(_render(tmp_path, "a.png", DEFAULT)))
    narrow = _coloured(_png(_render(tmp_path, "b.png", DEFAULT, "--fov", "25")))
    assert 0.75 < narrow / framed < 1.33, (framed, narrow)


@pytest.mark.gpu
def test_yaw_turns_the_view(tmp_path):
    """The default scene's red tube is on one side: orbiting half a turn puts it on the other."""
    def red_x(img):
        r, g, b = img[..., 0], img[..., 1], img[..., 2]
        xs = np.nonzero((r > 150) & (g < 110) & (b < 110))[1]
        assert len(xs) > 50
        return xs.mean() / img.shape[1]

    front = red_x(_png(_render(tmp_path, "y0.png", DEFAULT, "--camera", "0,15")))
    back = red_x(_png(_render(tmp_path, "y180.png", DEFAULT, "--camera", "180,15")))
    assert (front - 0.5) * (back - 0.5) < 0, (front, back)


@pytest.mark.gpu
def test_frames_loop_writes_the_clip_as_the_single_frame_command_would(tmp_path):
    """--frames 3 --fps 2 writes OUT_0000..0002.png; frame i is the single render at --time t0 + i/2 apart from
    the camera (framed once, on the first frame), so frame 0 is identical and the frames differ."""
    model = asset("AnimatedMorphCube", "AnimatedMorphCube.gltf")
    out = tmp_path / "clip.png"
    r = vkmorph("render", model, "--frames", "3", "--fps", "2", "--time", "0.25", "--size", "96x72", "--out", out)
    assert r.returncode == 0, r.stderr
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == ["clip_0000.png", "clip_0001.png", "clip_0002.png"], files
    single = tmp_path / "single" / "s.png"
    single.parent.mkdir()
    assert vkmorph("render", model, "--time", "0.25", "--size", "96x72", "--out", single).returncode == 0
    np.testing.assert_array_equal(_png(tmp_path / "clip_0000.png"), _png(single))
    a, b = _png(tmp_path / "clip_0000.png"), _png(tmp_path / "clip_0001.png")
    assert np.abs(a - b).max() > 30


@pytest.mark.parametrize("args,needle", [
    (["--weight", "Nope=1"], "the file has 'target_0', 'target_1'"),
    (["--weights", "1,2,3"], "has 2 targets"),
    (["--weight", "x"], "NAME=W"),
    (["--camera", "1"], "yaw,pitch"),
    (["--camera", "0,95"], "pitch"),
    (["--camera", "0,10,-1"], "distance"),
    (["--fov", "200"], "--fov"),
    (["--msaa", "3"], "--msaa"),
    (["--frames", "-1"], "--frames"),
])
def test_render_pose_flags_bad_input_is_one_line(tmp_path, args, needle):
    out = tmp_path / "r.png"
    assert_one_line_error(vkmorph("render", asset("SimpleMorph", "SimpleMorph.gltf"), *args, "--out", out),
                          needle, out)


def test_weights_on_a_file_without_targets_is_refused(tmp_path):
    """Before: render had no --weights, and morph accepted --weights on a file without targets silently."""
    out = tmp_path / "r.png"
    assert_one_line_error(vkmorph("render", asset("SimpleSkin", "SimpleSkin.gltf"), "--weights", "1", "--out", out),
                          "has no morph targets", out)
