"""tools/embed_example.py draws (issue 28 item 6): its own render pass, pipelines and shaders in plain
python-vulkan, from ``rt.draws()`` (binding 0), the primitive's colours (binding 1), the material's base colour
and the joint palettes, compared with ``vkmorph render`` of the same pose and camera.

The two shade differently on purpose (the example: a lambert term; vkmorph: PBR, shadows, a ground), so the
comparison is of what the embedding API hands over: where the deformed meshes are (the coverage of the default
scene's saturated meshes, intersection over union >= 0.95; a pixel of edge or of a wrong pose moves it) and
which mesh each pixel shows (the dominant colour channel, red / blue / purple, >= 0.98 of the shared pixels)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import ROOT, vkmorph

pytestmark = pytest.mark.gpu
DEFAULT = ROOT / "vkmorph" / "data" / "default_scene.gltf"


def _rgb(path) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(path).convert("RGB")).astype(int)


def _meshes(img) -> np.ndarray:
    return (img.max(axis=-1) - img.min(axis=-1)) > 60


@pytest.mark.parametrize("pose", [["--time", "0"], ["--time", "1.3", "--weights", "1,0.5"]],
                         ids=["rest", "morphed-and-skinned"])
def test_embed_example_draws_what_vkmorph_render_draws(tmp_path, pose):
    ours = tmp_path / "embed.png"
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "embed_example.py"), "--png", ours, "--size", "320x240",
                        *pose], capture_output=True, text=True, cwd=ROOT, timeout=900,
                       env={**os.environ, "VKMORPH_VALIDATION": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    ref = tmp_path / "render.png"
    r = vkmorph("render", DEFAULT, "--size", "320x240", "--msaa", "1", *pose, "--out", ref)
    assert r.returncode == 0, r.stderr
    a, b = _rgb(ours), _rgb(ref)
    ma, mb = _meshes(a), _meshes(b)
    assert mb.sum() > 3000, mb.sum()
    iou = (ma & mb).sum() / (ma | mb).sum()
    assert iou >= 0.95, iou
    both = ma & mb
    assert (a.argmax(-1)[both] == b.argmax(-1)[both]).mean() >= 0.98
    for channel in (0, 2):                                   # red and blue (purple: both) meshes are there
        assert ((a.argmax(-1) == channel) & ma).sum() > 500


SHARED = ["SimpleMorph/SimpleMorph.gltf", "AnimatedMorphCube/AnimatedMorphCube.gltf",
          "MorphPrimitivesTest/MorphPrimitivesTest.gltf", "SimpleSkin/SimpleSkin.gltf",
          "RobotExpressive/RobotExpressive.glb", "FBX_huesitos/huesitos.fbx"]


@pytest.mark.parametrize("model", SHARED)
def test_embed_example_draws_every_kind_of_model(tmp_path, model):
    """Static, morphing, multi-primitive, skinned, FBX: each drawn under the validation layer, covering a part of
    the image where vkmorph render's model is (its camera), not an empty frame."""
    from tests.helpers import asset

    path = asset(*model.split("/"))
    ours = tmp_path / "embed.png"
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "embed_example.py"), str(path), "--png", ours,
                        "--size", "160x120"], capture_output=True, text=True, cwd=ROOT, timeout=900,
                       env={**os.environ, "VKMORPH_VALIDATION": "1"})
    assert r.returncode == 0, r.stdout + r.stderr
    covered = (_rgb(ours).max(axis=-1) > 8).mean()
    assert 0.005 < covered < 0.9, covered
