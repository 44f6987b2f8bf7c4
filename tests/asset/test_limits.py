"""The limits of asset/limits.py (messages, environment variables, ``override``) and the image helper
asset/images.py (pixel budget, JPEG decoded reduced, PNG left out, reduce to a maximum dimension), in-process."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from tests.asset.hostile_files import deep, real_png
from vkmorph.asset import limits
from vkmorph.asset.images import decode_image, reduction
from vkmorph.asset.importer import load_scene
from vkmorph.asset.materials import MaterialDataError
from vkmorph.errors import AssetError, UsageError


def test_limit_messages_name_the_variable_and_raising_it_loads(tmp_path, monkeypatch):
    path = deep(1200)(tmp_path)
    with pytest.raises(AssetError) as e:
        load_scene(path)
    msg = str(e.value)
    assert "nodes[1001]: 1001 levels of the node hierarchy, limit 1000" in msg and "VKMORPH_MAX_NODE_DEPTH=N" in msg
    with limits.override(node_depth=1300):
        scene = load_scene(path)
    assert len(scene.nodes) >= 1201
    monkeypatch.setenv("VKMORPH_MAX_NODE_DEPTH", "1300")   # the environment variable does the same
    assert len(load_scene(path).nodes) == len(scene.nodes)


def test_node_count_limit_and_bad_values(tmp_path, monkeypatch):
    doc = json.loads(deep(10)(tmp_path).read_text())
    monkeypatch.setenv("VKMORPH_MAX_NODES", "5")
    p = tmp_path / "eleven.gltf"
    p.write_text(json.dumps(doc))
    with pytest.raises(AssetError, match=r"nodes: 11 nodes in a glTF file, limit 5 \(raise it with VKMORPH_MAX_NODES"):
        load_scene(p)
    monkeypatch.setenv("VKMORPH_MAX_NODES", "lots")
    with pytest.raises(UsageError, match="VKMORPH_MAX_NODES='lots' is not a positive integer"):
        load_scene(p)
    with pytest.raises(UsageError, match="unknown limit 'knots'"), limits.override(knots=3):
        pass
    monkeypatch.delenv("VKMORPH_MAX_NODES")
    with limits.override(nodes=7):
        assert limits.value("nodes") == 7
    assert limits.value("nodes") == limits.LIMITS["nodes"].default


def test_json_values_bound_counts_structure_not_whitespace():
    assert limits.json_values(b'{"a": [1, 2, {"b": 3}]}') >= 6
    assert limits.json_values(b"{" + b" " * 10_000 + b"}") == 2
    assert limits.json_values(json.dumps([{}] * 1000).encode()) >= 1000


def test_reduction_factor():
    assert reduction(100, 100, 10_000, None) == 1
    assert reduction(200, 100, 10_000, None) == 2          # 100 x 50
    assert reduction(1000, 10, 10_000, 256) == 4           # max dimension: 250
    f = reduction(12_000, 12_000, 8192 * 8192, None)
    assert f == 2 and (12_000 // f) ** 2 <= 8192 * 8192


def _jpeg(w: int, h: int) -> bytes:
    from PIL import Image

    rgb = np.zeros((h, w, 3), np.uint8)
    rgb[..., 0] = np.arange(w, dtype=np.uint8)[None, :]
    buf = io.BytesIO()
    Image.fromarray(rgb).save(buf, format="JPEG")
    return buf.getvalue()


def test_jpeg_over_the_budget_is_decoded_reduced(monkeypatch):
    monkeypatch.setenv("VKMORPH_MAX_IMAGE_PIXELS", str(64 * 48))
    rgba = decode_image(_jpeg(256, 192), None)
    assert rgba.shape == (48, 64, 4) and rgba.dtype == np.uint8      # 1/4 scale by the JPEG decoder
    assert rgba.shape[0] * rgba.shape[1] <= 64 * 48


def test_png_over_the_budget_is_left_out_and_max_dimension_reduces(monkeypatch):
    png = real_png(300, 200)
    monkeypatch.setenv("VKMORPH_MAX_IMAGE_PIXELS", "50000")
    with pytest.raises(MaterialDataError, match=r"300x200 image: 60000 pixels, limit 50000 .*VKMORPH_MAX_IMAGE"):
        decode_image(png, None)
    monkeypatch.delenv("VKMORPH_MAX_IMAGE_PIXELS")
    assert decode_image(png, None).shape == (200, 300, 4)
    assert decode_image(png, None, max_dimension=100).shape == (67, 100, 4)    # reduce(3)


def test_regular_file_checks_do_not_block(tmp_path):
    import os

    os.mkfifo(tmp_path / "p.gltf")
    with pytest.raises(AssetError, match="not a regular file"):
        load_scene(tmp_path / "p.gltf")
    from vkmorph.asset.gltf import GltfDocument

    with pytest.raises(AssetError, match="unreadable: a FIFO, not a regular file"):
        GltfDocument(tmp_path / "p.gltf")


def test_memory_error_while_checking_is_one_asset_error(tmp_path, monkeypatch):
    from vkmorph.asset.gltf import GltfDocument

    path = deep(3)(tmp_path)

    def no_memory(self, i, where=""):
        raise MemoryError

    monkeypatch.setattr(GltfDocument, "accessor", no_memory)
    with pytest.raises(AssetError, match="not enough memory to check it"):
        load_scene(path)


def test_image_file_larger_than_the_budget_needs_is_not_read(tmp_path, monkeypatch):
    big = tmp_path / "big.png"
    big.write_bytes(real_png(300, 200) + bytes(2 << 20))
    monkeypatch.setenv("VKMORPH_MAX_IMAGE_PIXELS", "1000")
    with pytest.raises(MaterialDataError, match=r"has \d+ bytes, more than an image within the pixel limit needs"):
        decode_image(None, big)


def test_readme_lists_every_limit_with_its_default_and_variable():
    from tests.helpers import ROOT

    text = (ROOT / "README.md").read_text()
    start = text.index("## Untrusted files")
    section = text[start:text.index("\n## ", start + 1)]   # up to the next top-level section
    rows = {r.split("|")[1].strip(): r.split("|")[2:4] for r in section.splitlines() if r.startswith("| ")}
    for lim in limits.LIMITS.values():
        assert lim.name in rows, lim.name
        default, env = rows[lim.name]
        assert env.strip() == f"`{lim.env}`"
        shown = default.strip().replace(",", "")
        if shown.endswith(" MiB"):
            value = int(shown[:-4]) << 20
        elif shown.endswith("²"):
            value = int(shown[:-1]) ** 2
        else:
            value = int(shown)
        assert value == lim.default, (lim.name, default)
