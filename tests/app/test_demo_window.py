"""The GLFW demo in a real window under Xvfb on lavapipe, validation on, driven by xdotool key events."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.gpu


# A safety net, not a speed claim: every wait below is for an event (a line the demo prints, the process
# exiting) and returns as soon as it happens; the limit only stops a hung demo from hanging the suite, and a demo
# that exits early fails the wait at once. A loaded 2-core machine took ~60 s to a window's third frame.
PATIENCE = float(os.environ.get("VKMORPH_TEST_PATIENCE", "900"))


@pytest.fixture
def xvfb():
    """An X server on a display number it picked itself (``-displayfd``: no race between parallel workers),
    ready when it has written the number."""
    if not (shutil.which("Xvfb") and shutil.which("xdotool")):
        pytest.skip("Xvfb and xdotool are installed by tools/setup.sh; not found here")
    rfd, wfd = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(wfd), "-screen", "0", "1280x1024x24", "-nolisten", "tcp"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, pass_fds=(wfd,))
    os.close(wfd)
    try:
        with os.fdopen(rfd) as f:
            number = f.readline().strip()      # blocks until the server listens (or exits: empty)
        if not number:
            pytest.fail(f"Xvfb exited ({proc.wait(PATIENCE)}) before it took a display")
        yield f":{number}"
    finally:
        proc.terminate()
        proc.wait(PATIENCE)


def _xdo(display, *args, timeout=PATIENCE):
    return subprocess.run(["xdotool", *args], env={**os.environ, "DISPLAY": display}, capture_output=True,
                          text=True, timeout=timeout)


def _wait_for(lines, predicate, proc=None, start=0):
    """The index of the first line from ``start`` on that satisfies ``predicate``, as soon as it is printed; fails
    when ``proc`` (the demo) exited without printing it, or after PATIENCE seconds of nothing."""
    proc = getattr(lines, "proc", None) if proc is None else proc
    end = time.monotonic() + PATIENCE
    seen = start
    while time.monotonic() < end:
        for i in range(seen, len(lines)):
            if predicate(lines[i]):
                return i
        seen = max(seen, len(lines))
        if proc is not None and proc.poll() is not None and seen >= len(lines):
            time.sleep(0.2)                 # the reader thread's last lines
            if len(lines) == seen:
                raise AssertionError(f"the demo exited ({proc.returncode}); last output: {lines[-10:]}")
        time.sleep(0.05)
    raise AssertionError(f"timed out after {PATIENCE:.0f} s; last output: {lines[-10:]}")


class _Lines(list):
    """The demo's stdout lines as they come, and the demo process (so a wait fails at once when it exits)."""

    proc = None


def _start_demo(display, *args):
    """The demo as a child process on ``display`` (validation on, unbuffered): (process, stdout lines as they
    come, the reader thread)."""
    env = {**os.environ, "DISPLAY": display, "VKMORPH_VALIDATION": "1", "PYTHONUNBUFFERED": "1"}
    env.pop("WAYLAND_DISPLAY", None)
    proc = subprocess.Popen([sys.executable, "-m", "vkmorph", "demo", "--log-frames", *map(str, args)], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = _Lines()
    lines.proc = proc
    reader = threading.Thread(target=lambda: lines.extend(iter(proc.stdout.readline, "")), daemon=True)
    reader.start()
    return proc, lines, reader


def _kill_if_running(proc) -> None:
    """A test that failed half way leaves no demo behind, and no pipe to it open (the fd leak check would
    report those as a second failure that is not one)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
        for pipe in (proc.stdout, proc.stderr):
            pipe.close()


def _exited_cleanly(proc, reader) -> str:
    """After the demo has exited: its stdout reader joined, both pipes closed; its stderr, asserting exit
    status 0."""
    reader.join(PATIENCE)
    err = proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    assert proc.returncode == 0, err
    return err


def test_demo_window_keys_resize_and_screenshot(xvfb, tmp_path):
    shot = tmp_path / "demo.png"
    proc, lines, reader = _start_demo(xvfb, "--screenshot", shot)
    try:
        _wait_for(lines, lambda s: s.startswith("frame 3:"))
        wid = _xdo(xvfb, "search", "--sync", "--name", "vkmorph").stdout.split()[0]
        _xdo(xvfb, "windowsize", "--sync", wid, "720", "450")      # neither default size (GPU or CPU device)
        _xdo(xvfb, "windowfocus", "--sync", wid)
        n = len(lines)
        _wait_for(lines, lambda s: s.startswith("frame"), start=n)
        _xdo(xvfb, "key", "space")                                     # pause the sine drivers
        i = _wait_for(lines, lambda s: s == "paused\n")
        j = _wait_for(lines, lambda s: s.startswith("frame"), start=i + 2)  # a whole frame after the pause
        _wait_for(lines, lambda s: s.startswith("frame"), start=j + 1)
        paused_frames = [s for s in lines[j:] if s.startswith("frame")]
        assert paused_frames and all("dispatched 0 " in s for s in paused_frames), paused_frames
        _xdo(xvfb, "key", "Up")                                        # raise the selected target's weight
        k = _wait_for(lines, lambda s: s.startswith("weight "))
        # "Bulge" is on both morphing tubes: one key moves it on both nodes
        m = _wait_for(lines, lambda s: s.startswith("frame") and "dispatched 2 " in s, start=k)
        assert m > k
        _xdo(xvfb, "key", "Escape")
        proc.wait(PATIENCE)
    finally:
        _kill_if_running(proc)
    _exited_cleanly(proc, reader)
    from PIL import Image

    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert img.shape[:2] == (450, 720), img.shape  # the resize reached the swapchain
    assert img.std() > 10
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    assert ((r > 150) & (g < 110) & (b < 110)).sum() > 200, "no red mesh"
    assert ((b > 150) & (r < 110)).sum() > 200, "no blue mesh"
    assert ((r > 110) & (b > 140) & (g < 110)).sum() > 200, "no purple mesh"


@pytest.mark.parametrize("how", ["windowclose", "windowkill"])
def test_demo_exits_cleanly_when_the_display_goes_away(xvfb, how):
    """The window destroyed or the client killed by the X server: one line, exit 0, no validation message
    (so every Vulkan object was released in order), no Xlib noise."""
    proc, lines, reader = _start_demo(xvfb)
    try:
        _wait_for(lines, lambda s: s.startswith("frame 3:"))
        wid = _xdo(xvfb, "search", "--sync", "--name", "vkmorph").stdout.split()[0]
        _xdo(xvfb, how, wid)
        proc.wait(PATIENCE)
    finally:
        _kill_if_running(proc)
    err = _exited_cleanly(proc, reader).strip().splitlines()
    assert len(err) == 1 and "GPU resources released" in err[0], err


def test_panel_slider_drives_every_node_with_that_target(xvfb, tmp_path):
    """The on-screen panel is drawn by our Vulkan ImGui renderer (validation on) and its "Bulge" slider sets the
    weight on both tubes that have a "Bulge" target; printed weights (key P) prove it."""
    pytest.importorskip("imgui_bundle", reason="imgui-bundle has no wheels for this Python (3.10)")
    shot = tmp_path / "panel.png"
    proc, lines, reader = _start_demo(xvfb, "--screenshot", shot)
    try:
        _wait_for(lines, lambda s: s.startswith("frame 3:"))
        wid = _xdo(xvfb, "search", "--sync", "--name", "vkmorph").stdout.split()[0]
        _xdo(xvfb, "windowfocus", "--sync", wid)
        _xdo(xvfb, "key", "space")                                   # pause the sine drivers
        _wait_for(lines, lambda s: s == "paused\n")
        _xdo(xvfb, "mousemove", "--window", wid, "30", "284")        # left end of the "Bulge" slider
        _xdo(xvfb, "click", "1")
        n = len(lines)
        _wait_for(lines, lambda s: s.startswith("frame"), start=n)
        _wait_for(lines, lambda s: s.startswith("frame"), start=len(lines))
        _xdo(xvfb, "key", "p")
        i = _wait_for(lines, lambda s: re.match(r"^\S+: \[.*\]$", s) is not None)
        _wait_for(lines, lambda s: re.match(r"^\S+: \[.*\]$", s) is not None, start=i + 1)
        _xdo(xvfb, "key", "Escape")
        proc.wait(PATIENCE)
    finally:
        _kill_if_running(proc)
    _exited_cleanly(proc, reader)
    weights = {m[1]: [float(x) for x in m[2].split(",")]
               for m in (re.match(r"^(\S+): \[(.*)\]$", s) for s in lines) if m}
    assert len(weights) == 2, lines[-10:]
    first = [w[0] for w in weights.values()]
    assert first[0] == first[1] and first[0] < 0.2, weights           # one slider, both nodes
    from PIL import Image

    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    title = img[5:25, 20:280]                                          # the panel's title bar, ImGui blue
    assert ((np.abs(title - [41, 74, 122]) < 25).all(axis=-1)).mean() > 0.5


def _run_demo(display, tmp_path, keys_then, *extra):
    """Start the demo (validation on), wait for frame 3, focus it, run ``keys_then(wid, lines)``, quit with
    Escape; returns (stdout lines, stderr, screenshot path)."""
    shot = tmp_path / "shot.png"
    proc, lines, reader = _start_demo(display, "--no-panel", "--screenshot", shot, *extra)
    try:
        _wait_for(lines, lambda s: s.startswith("frame 3:"))
        wid = _xdo(display, "search", "--sync", "--name", "vkmorph").stdout.split()[0]
        _xdo(display, "windowfocus", "--sync", wid)
        keys_then(wid, lines)
        _wait_for(lines, lambda s: s.startswith("frame"), start=len(lines))
        _xdo(display, "key", "Escape")
        proc.wait(PATIENCE)
    finally:
        _kill_if_running(proc)
    err = _exited_cleanly(proc, reader)
    return lines, err, shot


def _outline_pixels(path) -> int:
    """Pixels of the renderer's outline colour (OUTLINE_COLOR, orange) in a screenshot."""
    from PIL import Image

    img = np.asarray(Image.open(path).convert("RGB")).astype(int)
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    return int(((r > 220) & (g > 100) & (g < 215) & (b < 90)).sum())


def test_tab_outlines_the_selected_mesh_and_f_frames(xvfb, tmp_path):
    def keys(wid, lines):
        _xdo(xvfb, "key", "space")                                     # pause the sine drivers
        _wait_for(lines, lambda s: s == "paused\n")
        _xdo(xvfb, "key", "Tab")
        _wait_for(lines, lambda s: s.startswith("selected target "))
        _xdo(xvfb, "key", "f")
        _wait_for(lines, lambda s: s.startswith("camera framed (F): bounds"))

    lines, _, shot = _run_demo(xvfb, tmp_path, keys)
    sel = next(s for s in lines if s.startswith("selected target "))
    assert "outlined: " in sel, sel
    assert _outline_pixels(shot) > 300, _outline_pixels(shot)


def test_renderer_warnings_printed_and_a_new_clip_is_framed(xvfb, tmp_path):
    """A cube whose texture is missing (one renderer warning line at start) and two clips: C switches to the
    clip that holds the cube at y = 5 and the camera is framed on it (bounds printed)."""
    from tests.render.gltf_gen import GltfBuilder, cube

    b = GltfBuilder()
    mat = b.material(name="Lost", pbrMetallicRoughness={"baseColorTexture": {"index": b.texture(b.image(
        uri="nothere.png"))}, "baseColorFactor": [0.2, 0.6, 0.3, 1.0]})
    node = b.mesh(*cube(), material=mat, name="box")
    b.animate_translation(node, [0.0, 1.0], [(0, 0, 0), (0, 0, 0)], name="stay")
    b.animate_translation(node, [0.0, 1.0], [(0, 5, 0), (0, 5, 0)], name="up")
    path = b.save(tmp_path / "two_clips.gltf")

    def keys(wid, lines):
        _xdo(xvfb, "key", "c")
        _wait_for(lines, lambda s: s.startswith("camera framed (clip up): bounds"))

    lines, err, _ = _run_demo(xvfb, tmp_path, keys, path)
    warn = [s for s in err.splitlines() if s.startswith("vkmorph: warning: ")]
    assert len(warn) == 1 and "'Lost'" in warn[0] and "nothere.png" in warn[0], err
    framed = next(s for s in lines if s.startswith("camera framed (clip up)"))
    lo, hi = (json.loads(x) for x in re.match(r".*bounds (\[.*\]) \.\. (\[.*\])$", framed.strip()).groups())
    assert abs(lo[1] - 4.5) < 1e-3 and abs(hi[1] - 5.5) < 1e-3, framed


def test_render_scale_renders_the_view_smaller_and_the_panel_at_full_size(xvfb, tmp_path):
    """--scale 0.5: the 3D view is rendered at 400x250 and blitted into the 800x500 window (validation on, sync
    validation across submits); the screenshot is the window's size, the meshes are there, the panel is drawn
    at full resolution over it (its title bar's pixels as without scaling)."""
    shot = tmp_path / "scaled.png"
    proc, lines, reader = _start_demo(xvfb, "--frames", 6, "--size", "800x500", "--scale", 0.5, "--screenshot", shot)
    try:
        proc.wait(PATIENCE)
    finally:
        _kill_if_running(proc)
    _exited_cleanly(proc, reader)
    assert any("3D view at 50% of the window" in s for s in lines), lines[:5]
    from PIL import Image

    img = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    assert img.shape[:2] == (500, 800), img.shape
    r, g, b = img[..., 0], img[..., 1], img[..., 2]
    assert ((r > 150) & (g < 110) & (b < 110)).sum() > 200, "no red mesh"
    assert ((b > 150) & (r < 110)).sum() > 200, "no blue mesh"
    title = img[5:25, 20:280]                                          # the panel's title bar, ImGui blue
    assert ((np.abs(title - [41, 74, 122]) < 25).all(axis=-1)).mean() > 0.5
