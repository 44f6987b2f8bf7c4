"""The rough edges a new user met (issue 28 item 9): each one line that says what to do, or the help."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.helpers import ROOT, assert_one_line_error, asset, vkmorph


def test_bare_vkmorph_prints_the_help_and_exits_0():
    r = vkmorph()
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage: vkmorph") and "render" in r.stdout and "demo" in r.stdout
    assert r.stderr == ""


def test_a_text_file_named_glb_is_called_not_a_glb(tmp_path):
    bad = tmp_path / "notes.glb"
    bad.write_text("hello, this is not a model\n")
    r = vkmorph("info", bad)
    assert_one_line_error(r, "not a GLB file: no 'glTF' magic")
    assert "JSON" not in r.stderr


def test_a_stale_display_is_one_line_that_suggests_headless(tmp_path):
    """DISPLAY names a server that is not there: before, GLFW's raw b'X11: ...' warning and a second line."""
    free = next(n for n in range(150, 400) if not os.path.exists(f"/tmp/.X11-unix/X{n}"))
    env = {**os.environ, "DISPLAY": f":{free}", "VKMORPH_VALIDATION": "0"}
    env.pop("WAYLAND_DISPLAY", None)
    r = subprocess.run([sys.executable, "-m", "vkmorph", "demo", "--frames", "1"], capture_output=True, text=True,
                       cwd=ROOT, env=env, timeout=900)
    assert_one_line_error(r, "--headless")
    assert f":{free}" in r.stderr and "b'" not in r.stderr, r.stderr


@pytest.mark.gpu
def test_morph_weights_on_a_file_without_targets_is_refused(tmp_path):
    """Before: `vkmorph morph --weights 1` on a file without morph targets succeeded silently."""
    out = tmp_path / "m.npz"
    assert_one_line_error(vkmorph("morph", asset("SimpleSkin", "SimpleSkin.gltf"), "--weights", "1", "--out", out),
                          "has no morph targets", out)


@pytest.mark.parametrize("args,needle", [
    (["--clip", "nope"], "unknown clip"),
    (["--msaa", "3"], "--msaa"),
    (["--size", "10x10"], "at least 64x64"),
    (["--shadow-size", "5"], "--shadow-size"),
    (["--scale", "0.1"], "--scale must be within 0.25..1"),
    (["--scale", "2"], "--scale must be within 0.25..1"),
])
def test_demo_flags_checked_before_any_window(tmp_path, args, needle):
    r = vkmorph("demo", "--headless", "--out-dir", tmp_path / "frames", *args)
    assert_one_line_error(r, needle)
    assert not (tmp_path / "frames").exists() or not any((tmp_path / "frames").iterdir())


@pytest.mark.gpu
def test_demo_clip_flag_starts_on_that_clip(tmp_path):
    """--clip picks the clip the headless frames show: the AnimatedMorphCube's only clip by index equals it by
    name, and differs from the file's rest pose after the first frame."""
    model = asset("AnimatedMorphCube", "AnimatedMorphCube.gltf")
    r = vkmorph("demo", model, "--headless", "--frames", "2", "--clip", "0", "--size", "96x72",
                "--out-dir", tmp_path / "a")
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == ["frame_000.png", "frame_001.png"]
    from PIL import Image

    assert Image.open(tmp_path / "a" / "frame_000.png").size == (96, 72)


def test_readme_mentions_the_ui_extra():
    text = (ROOT / "README.md").read_text()
    assert "vkmorph[ui]" in text


def test_demo_quality_render_scale_per_device_and_flag():
    """A CPU device gets a smaller 3D view by default (bench/2026-12-01-lavapipe-startup.md), a GPU the full
    window; --scale wins on both."""
    import argparse

    from vkmorph.app.demo import quality, render_size

    assert quality(argparse.Namespace(), "cpu")["scale"] == 0.75
    assert quality(argparse.Namespace(), "discrete")["scale"] == 1.0
    assert quality(argparse.Namespace(scale=0.5), "cpu")["scale"] == 0.5
    assert render_size((800, 500), 0.75) == (600, 375)


@pytest.mark.gpu
def test_demo_headless_scale_renders_the_view_at_that_size(tmp_path):
    """Headless there is no window to upscale into: --scale makes the frames themselves smaller."""
    r = vkmorph("demo", "--headless", "--frames", "2", "--size", "200x120", "--scale", "0.5",
                "--out-dir", tmp_path / "f")
    assert r.returncode == 0, r.stderr
    from PIL import Image

    assert Image.open(tmp_path / "f" / "frame_001.png").size == (100, 60)


def test_headless_frames_step_without_and_with_readback(ctx):
    """The demo's headless loop (which the benchmark's start-up section times): frames without a readback are
    clean under synchronization validation, the sine animation moves both morphing tubes every frame, and a
    readback returns the 3D view's pixels at the scaled size."""
    from vkmorph.app.demo import HeadlessFrames
    from vkmorph.asset.importer import load_scene

    loop = HeadlessFrames(ctx, load_scene(None), size=(128, 80), samples=1, shadow_size=256, sine=True, scale=0.5)
    try:
        assert loop.render_size == (64, 40)
        for _ in range(3):
            assert loop.step(1 / 60) is None
            assert loop.counters.dispatched == 2
        px = loop.step(1 / 60, readback=True)
        assert px.shape == (40, 64, 4) and px[..., :3].std() > 5
    finally:
        loop.destroy()
