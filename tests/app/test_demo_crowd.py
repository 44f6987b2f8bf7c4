"""``vkmorph demo --crowd N`` headless: the PNG shows several instances of the built-in scene (its saturated
tubes counted as separate blobs: many more than one instance's three), the panel's crowd lines are printed
(instances, visible, animated on the GPU by default, the skinning path per object, GPU ms per pass), 0
validation messages (exit 0 with VKMORPH_VALIDATION=1); ``--crowd-anim cpu`` poses them on the CPU and shows the
same frames when framed alike (tests/render/test_crowd_render_gpu_anim.py compares the renders); a bad --crowd is
one line."""

from __future__ import annotations

from collections import deque

import numpy as np
import pytest
from PIL import Image

from tests.helpers import assert_one_line_error, vkmorph


def blobs(mask: np.ndarray) -> int:
    """Connected components (4-neighbour) of ``mask`` of at least 6 pixels."""
    seen = np.zeros_like(mask)
    h, w = mask.shape
    count = 0
    for y, x in zip(*np.nonzero(mask)):
        if seen[y, x]:
            continue
        seen[y, x] = True
        size, todo = 0, deque([(y, x)])
        while todo:
            cy, cx = todo.popleft()
            size += 1
            for ny, nx in ((cy + 1, cx), (cy - 1, cx), (cy, cx + 1), (cy, cx - 1)):
                if 0 <= ny < h and 0 <= nx < w and mask[ny, nx] and not seen[ny, nx]:
                    seen[ny, nx] = True
                    todo.append((ny, nx))
        count += size >= 6
    return count


def saturated(png) -> np.ndarray:
    a = np.asarray(Image.open(png).convert("RGB")).astype(int)
    return (a.max(axis=-1) - a.min(axis=-1)) > 60      # the tubes; the sky and the grey ground are not


@pytest.mark.gpu
def test_headless_crowd_shows_many_instances(tmp_path):
    out = {}
    for n in (1, 9):
        r = vkmorph("demo", "--headless", "--frames", "2", "--crowd", n, "--size", "320x240",
                    "--out-dir", tmp_path / f"c{n}")
        assert r.returncode == 0, r.stderr
        assert f"crowd: {n} instances, {n} visible, animated on the GPU" in r.stdout
        assert "BlueMesh: " in r.stdout and "PurpleMesh: " in r.stdout and "Red: rigid" in r.stdout
        assert "GPU ms: morph " in r.stdout and ", skin " in r.stdout and "shadow " in r.stdout
        assert " forward " in r.stdout
        out[n] = saturated(tmp_path / f"c{n}" / "frame_001.png")
    assert 1 <= blobs(out[1]) <= 4
    assert blobs(out[9]) >= 15       # 27 tubes, a few overlapping from this view


@pytest.mark.gpu
def test_headless_crowd_on_the_cpu_path(tmp_path):
    r = vkmorph("demo", "--headless", "--frames", "2", "--crowd", 4, "--crowd-anim", "cpu", "--size", "160x120",
                "--out-dir", tmp_path / "cpu")
    assert r.returncode == 0, r.stderr
    assert "crowd: 4 instances, 4 visible, animated on the CPU" in r.stdout
    assert blobs(saturated(tmp_path / "cpu" / "frame_001.png")) >= 6


@pytest.mark.gpu
def test_headless_crowd_with_levels_of_detail(tmp_path):
    """``--crowd-lod on``: the panel's line of instances per level (camera, then the shadow pass) adds up to the
    visible / shadow-casting counts; a forced level puts every instance there."""
    for lod, want in (("on", None), ("2", [0, 0, 9, 0])):
        r = vkmorph("demo", "--headless", "--frames", "2", "--crowd", 9, "--crowd-lod", lod, "--size", "160x120",
                    "--out-dir", tmp_path / f"lod{lod}")
        assert r.returncode == 0, r.stderr
        line = [x for x in r.stdout.splitlines() if x.strip().startswith("LOD ")][-1]
        fwd, shadow = line.split("(shadow ")
        fwd = [int(x) for x in fwd.split()[1].split("/")]
        shadow = [int(x) for x in shadow.rstrip(")").split("/")]
        assert len(fwd) == len(shadow) == 4 and sum(fwd) == 9 and sum(shadow) == 9, line
        assert "crowd: 9 instances, 9 visible, animated on the GPU, 9 cast shadows" in r.stdout
        if want is not None:
            assert fwd == want and shadow == want
        assert blobs(saturated(tmp_path / f"lod{lod}" / "frame_001.png")) >= 12


def test_sine_clip_is_the_sine_drivers():
    """The built-in scene's sine drivers baked into the GPU animation's clip sample (CPU, PoseBatch / play) as
    the CPU path computes them, within the linear keys' error."""
    from vkmorph.anim.crowd import CrowdState
    from vkmorph.app.crowd_driver import CrowdDriver, sine_clip
    from vkmorph.asset.importer import load_scene
    from vkmorph.morph.state import SceneMorphPose

    scene = load_scene(None)
    pose = SceneMorphPose(scene)
    counts = [pose.slice_of(n).stop - pose.slice_of(n).start for n in pose.morph_nodes]
    clip = sine_clip(scene, pose.morph_nodes, counts)
    cpu, baked = CrowdState(scene, 5, pose), CrowdState(scene, 5, pose)
    d = CrowdDriver(scene, cpu, 1.0, sine=True)
    baked.set_transforms(np.array(cpu.transforms))       # the driver's grid
    for t in (0.0, 0.37, 4.2, 17.9):
        d.time = t
        d.apply()
        tt = d.speed * t + d.phase * d.loop_length
        baked.play(clip, tt % clip.duration)
        assert np.abs(np.array(baked.weights) - cpu.weights).max() < 2e-3, t
        for s in range(len(scene.skins)):
            assert np.abs(baked.skin_matrices(s) - cpu.skin_matrices(s)).max() < 2e-3, t


def test_bad_crowd_is_one_line(tmp_path):
    r = vkmorph("demo", "--headless", "--frames", "1", "--crowd", "0", "--out-dir", tmp_path / "f")
    assert_one_line_error(r, "--crowd must be within 1..")
    r = vkmorph("demo", "--headless", "--frames", "1", "--crowd", "2", "--crowd-anim", "gpus", "--out-dir",
                tmp_path / "f")
    assert r.returncode != 0 and "--crowd-anim" in r.stderr
