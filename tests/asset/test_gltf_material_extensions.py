"""Material extensions read from the file (the same GltfDocument as the geometry): EXT_texture_webp,
KHR_materials_emissive_strength, KHR_texture_transform's texCoord, KHR_texture_basisu's refusal by name."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from tests.asset.gltf_build import write_gltf
from tests.asset.twins import twin
from vkmorph import load_scene
from vkmorph.errors import AssetWarning


def _with_material(material: dict, images=(), textures=(), used=()):
    doc, binary = twin(skinned=False)
    binary = bytearray(binary)
    doc["images"] = []
    for raw, mime in images:
        while len(binary) % 4:
            binary.append(0)
        doc["bufferViews"].append({"buffer": 0, "byteOffset": len(binary), "byteLength": len(raw)})
        binary += raw
        doc["images"].append({"bufferView": len(doc["bufferViews"]) - 1, "mimeType": mime})
    doc["buffers"][0]["byteLength"] = len(binary)
    doc["textures"] = list(textures)
    doc["materials"] = [material]
    doc["meshes"][0]["primitives"][0]["material"] = 0
    if used:
        doc["extensionsUsed"] = list(used)
    return doc, bytes(binary)


def _encoded(rgba: np.ndarray, fmt: str) -> bytes:
    out = io.BytesIO()
    Image.fromarray(rgba).save(out, format=fmt, **({"lossless": True} if fmt == "WEBP" else {}))
    return out.getvalue()


def test_webp_texture_is_decoded(tmp_path):
    rgba = np.random.default_rng(3).integers(0, 256, (8, 8, 4), dtype=np.uint8)
    rgba[..., 3] = np.maximum(rgba[..., 3], 1)   # lossless WebP drops the colour of fully transparent texels
    doc, binary = _with_material(
        {"name": "w", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}},
        images=[(_encoded(rgba, "WEBP"), "image/webp")],
        textures=[{"extensions": {"EXT_texture_webp": {"source": 0}}}], used=["EXT_texture_webp"])
    doc["extensionsRequired"] = ["EXT_texture_webp"]
    mat = load_scene(write_gltf(tmp_path / "m.gltf", doc, binary), isolate=False).primitives[0].material
    assert mat.problems == []
    np.testing.assert_array_equal(mat.base_color_texture.image.decode(), rgba)


def test_emissive_strength_scales_the_factor(tmp_path):
    doc, binary = _with_material({"name": "e", "emissiveFactor": [1.0, 0.5, 0.0], "extensions": {
        "KHR_materials_emissive_strength": {"emissiveStrength": 4.0}}}, used=["KHR_materials_emissive_strength"])
    mat = load_scene(write_gltf(tmp_path / "m.gltf", doc, binary), isolate=False).primitives[0].material
    assert mat.emissive_factor == (4.0, 2.0, 0.0)


def test_texture_transform_tex_coord_and_unlit_are_read(tmp_path):
    png = _encoded(np.zeros((4, 4, 4), np.uint8), "PNG")
    doc, binary = _with_material(
        {"name": "t", "extensions": {"KHR_materials_unlit": {}},
         "pbrMetallicRoughness": {"baseColorTexture": {"index": 0, "texCoord": 1, "extensions": {
             "KHR_texture_transform": {"offset": [0.5, 0], "scale": [2, 3], "texCoord": 0}}}}},
        images=[(png, "image/png")], textures=[{"source": 0}],
        used=["KHR_texture_transform", "KHR_materials_unlit"])
    mat = load_scene(write_gltf(tmp_path / "m.gltf", doc, binary), isolate=False).primitives[0].material
    assert mat.unlit and mat.base_color_texture.texcoord == 0
    np.testing.assert_allclose(mat.base_color_texture.transform, (2, 0, 0.5, 0, 3, 0), atol=1e-12)


def test_basisu_only_texture_is_dropped_by_name(tmp_path):
    doc, binary = _with_material(
        {"name": "k", "pbrMetallicRoughness": {"baseColorTexture": {"index": 0}}},
        images=[(b"\xabKTX 20\xbb\r\n\x1a\n" + bytes(64), "image/ktx2")],
        textures=[{"extensions": {"KHR_texture_basisu": {"source": 0}}}], used=["KHR_texture_basisu"])
    with pytest.warns(AssetWarning, match="extension KHR_texture_basisu: KTX2 images are not decoded"):
        mat = load_scene(write_gltf(tmp_path / "m.gltf", doc, binary), isolate=False).primitives[0].material
    assert mat.base_color_texture is None
    assert mat.problems == ["material 'k': texture 0 has only a KTX2 image (KHR_texture_basisu), which vkmorph "
                            "cannot decode; ignored"]
