"""vkmorph.asset.gltf against the independent test reader and hand-built files: decoding and hostile headers."""

from __future__ import annotations

import json
import resource
import struct

import numpy as np
import pytest

from tests.asset.gltf_build import Builder, skinned_morph_model, write_gltf
from tests.gltf_ref import Gltf
from tests.helpers import GLTF_ASSETS, asset
from vkmorph import AssetError
from vkmorph.asset.gltf import GltfDocument


@pytest.mark.parametrize("folder,name", GLTF_ASSETS, ids=[n for _, n in GLTF_ASSETS])
def test_every_accessor_matches_the_reference_reader(folder, name):
    path = asset(folder, name)
    doc, ref = GltfDocument(path), Gltf(path)
    for i in range(len(doc.json.get("accessors", []))):
        got = doc.accessor(i)
        if got.ndim == 3:  # matrices come back as M (M @ v); the file stores columns
            got = got.transpose(0, 2, 1)
        np.testing.assert_allclose(got.reshape(len(got), -1).astype(np.float64), ref.accessor(i), atol=1e-6)


def test_strides_normalized_sparse_and_matrices(tmp_path):
    b = Builder()
    vec = np.arange(12, dtype=np.float32).reshape(4, 3)
    strided = b.add(vec, stride=16)
    u8 = b.add(np.array([[0, 255], [51, 102]]), "u1", normalized=True)
    i16 = b.add(np.array([-32768, -32767, 0, 32767]), "<i2", "SCALAR", normalized=True)
    mats = np.stack([np.arange(16.0).reshape(4, 4), np.eye(4)])
    m4 = b.add(mats, type_="MAT4")
    sp_idx = b.view(np.array([1, 3], "<u2").tobytes())
    sp_val = b.view(np.array([[9, 9, 9], [7, 7, 7]], np.float32).tobytes())
    doc, binary = b.finish()
    doc["accessors"].append({"bufferView": 0, "componentType": 5126, "count": 4, "type": "VEC3",
                             "sparse": {"count": 2, "indices": {"bufferView": sp_idx, "componentType": 5123},
                                        "values": {"bufferView": sp_val}}})
    doc["accessors"].append({"componentType": 5126, "count": 4, "type": "VEC3",
                             "sparse": {"count": 2, "indices": {"bufferView": sp_idx, "componentType": 5123},
                                        "values": {"bufferView": sp_val}}})
    for kw in ({}, {"embed": True}, {"glb": True}):
        g = GltfDocument(write_gltf(tmp_path / ("m.glb" if kw.get("glb") else "m.gltf"), doc, binary, **kw))
        np.testing.assert_array_equal(g.accessor(strided), vec)
        np.testing.assert_allclose(g.accessor(u8), [[0, 1], [0.2, 0.4]], atol=1e-7)
        np.testing.assert_allclose(g.accessor(i16), [-1, -1, 0, 1])
        np.testing.assert_array_equal(g.accessor(m4), mats)
        sparse = g.accessor(4)
        np.testing.assert_array_equal(sparse[[0, 2]], vec[[0, 2]])
        np.testing.assert_array_equal(sparse[[1, 3]], [[9, 9, 9], [7, 7, 7]])
        np.testing.assert_array_equal(g.accessor(5), [[0, 0, 0], [9, 9, 9], [0, 0, 0], [7, 7, 7]])


def test_animation_helpers(tmp_path):
    doc, binary = skinned_morph_model()
    g = GltfDocument(write_gltf(tmp_path / "b.gltf", doc, binary))
    chans = g.channels(0)
    assert [(c.sampler, c.node, c.path) for c in chans] == [(0, 0, "weights"), (1, 2, "rotation"), (2, 0, "scale")]
    s = g.sampler(0, 0, width=g.node_target_count(0))
    np.testing.assert_array_equal(s.input, [0, 0.5, 1])
    assert s.output.shape == (3, 1) and s.interpolation == "LINEAR"
    assert g.sampler(0, 2).interpolation == "STEP" and g.sampler(0, 1).output.shape == (3, 4)


def _glb(tmp_path, json_len=None, total=None, bin_len=None):
    doc, binary = skinned_morph_model()
    p = write_gltf(tmp_path / "m.glb", doc, binary, glb=True)
    raw = bytearray(p.read_bytes())
    if total is not None:
        raw[8:12] = struct.pack("<I", total)
    if json_len is not None:
        raw[12:16] = struct.pack("<I", json_len)
    if bin_len is not None:
        jl = struct.unpack_from("<I", raw, 12)[0]
        raw[20 + jl:24 + jl] = struct.pack("<I", bin_len)
    p.write_bytes(bytes(raw))
    return p


def test_lying_glb_header_costs_nothing(tmp_path):
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    p = _glb(tmp_path)
    size = p.stat().st_size
    p = _glb(tmp_path, json_len=0xFFFFFFF0, total=size)
    with pytest.raises(AssetError, match=r"GLB chunk 0: length 4294967280 at byte 12 runs past the end"):
        GltfDocument(p)
    p = _glb(tmp_path, total=0xFFFFFFFF)
    with pytest.raises(AssetError, match=rf"GLB header: length 4294967295 != file size {size}"):
        GltfDocument(p)
    p = _glb(tmp_path, bin_len=1 << 31)
    with pytest.raises(AssetError, match="GLB chunk 1: length 2147483648"):
        GltfDocument(p)
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KiB


def test_bad_json_is_one_line(tmp_path):
    p = tmp_path / "j.gltf"
    for text, msg in (("{", "JSON: Expecting"), ("[1]", "top level must be an object"),
                      ("[" * 100000 + "]" * 100000, "JSON: nested too deeply"),
                      (json.dumps({"asset": {"version": "1.0"}}), "asset.version: '1.0'")):
        p.write_text(text)
        with pytest.raises(AssetError, match=msg) as e:
            GltfDocument(p)
        assert "\n" not in str(e.value) and str(p) in str(e.value)
    p.write_bytes(b'{"asset": {"version": "2.0"}, "x": "\xff"}')
    with pytest.raises(AssetError, match="not UTF-8"):
        GltfDocument(p)
