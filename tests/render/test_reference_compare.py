"""The image comparison itself (tests/render/scenes.py): what it accepts from another GPU and what it still rejects."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from tests.render import scenes


@pytest.fixture
def reference(tmp_path, monkeypatch):
    """A stored reference with hard edges (a checker of 4-pixel squares) in a temporary reference folder."""
    monkeypatch.setattr(scenes, "REF", tmp_path)
    monkeypatch.setattr(scenes, "ARTIFACTS", tmp_path / "artifacts")
    y, x = np.mgrid[:64, :64]
    img = np.zeros((64, 64, 4), np.uint8)
    img[..., 3] = 255
    img[..., :3] = np.where(((x // 4 + y // 4) % 2 == 0)[..., None], 200, 40)
    Image.fromarray(img, "RGBA").save(tmp_path / "checker.png")
    return img


def _shift_edges(img, every: int = 32):
    """Every ``every``-th row moved one pixel right: edge pixels off by one, as another rasterizer places them."""
    out = img.copy()
    out[::every, 1:] = img[::every, :-1]
    return out


def test_identical_image_matches_on_every_device(reference):
    assert scenes.compare_reference("checker", reference) is None
    assert scenes.compare_reference("checker", reference, "NVIDIA H200") is None


def test_edge_shift_passes_only_on_another_device(reference):
    shifted = _shift_edges(reference)
    assert "in place" in scenes.compare_reference("checker", shifted)         # lavapipe made the reference
    assert scenes.compare_reference("checker", shifted, "NVIDIA H200") is None


def test_wrong_shade_over_a_region_fails_on_every_device(reference):
    wrong = reference.copy()
    wrong[:4, :, :3] = np.clip(wrong[:4, :, :3].astype(int) + 30, 0, 255)     # 1/16 of the image, brighter
    for device in ("llvmpipe (LLVM 15.0.6, 256 bits)", "NVIDIA H200"):
        assert scenes.compare_reference("checker", wrong, device) is not None


def test_many_misses_are_not_excused_by_the_neighbourhood(reference, tmp_path):
    """Below SAME_PIXEL_FLOOR in place the neighbourhood rule does not apply, even with a small mean difference:
    a low-contrast checker (8/255 steps, 8-pixel squares) with every row shifted: 0.875 in place, mean 0.75."""
    y, x = np.mgrid[:64, :64]
    low = np.full((64, 64, 4), 255, np.uint8)
    low[..., :3] = np.where(((x // 8 + y // 8) % 2 == 0)[..., None], 108, 100)
    Image.fromarray(low, "RGBA").save(tmp_path / "low.png")
    problem = scenes.compare_reference("low", _shift_edges(low, every=1), "NVIDIA H200")
    assert problem is not None and "in place" in problem


def test_wrong_shade_in_a_smooth_region_fails_on_every_device(tmp_path, monkeypatch):
    """No edges, no neighbourhood excuse: +14/255 over 4.5 % of a smooth gradient fails on another GPU too."""
    monkeypatch.setattr(scenes, "REF", tmp_path)
    monkeypatch.setattr(scenes, "ARTIFACTS", tmp_path / "artifacts")
    grad = np.full((64, 64, 4), 255, np.uint8)
    grad[..., :3] = (np.arange(64, dtype=np.uint8) * 2 + 40)[None, :, None]
    Image.fromarray(grad, "RGBA").save(tmp_path / "grad.png")
    wrong = grad.copy()
    wrong[:3, :, :3] += 14                                                      # 3 of 64 rows
    for device in ("llvmpipe (LLVM 15.0.6, 256 bits)", "NVIDIA H200"):
        assert scenes.compare_reference("grad", wrong, device) is not None


def test_references_are_regenerated_on_the_reference_device_only(reference, monkeypatch):
    monkeypatch.setenv("VKMORPH_UPDATE_REFERENCES", "1")
    assert "regenerated on llvmpipe only" in scenes.compare_reference("checker", reference, "NVIDIA H200")
