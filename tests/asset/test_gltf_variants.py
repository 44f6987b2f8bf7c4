"""glTF-Transform's encodings of the test models (tests/assets/variants, made by tools/make_gltf_variants.sh)
deform like their float originals: morphed and skinned world positions within the encoding's quantization step.

Bounds (glTF-Transform 4.5 defaults): positions and morph deltas are quantized to 14 bits over the mesh's extent
E (and the targets' own extent), one step s = E / (2^14 - 1); Draco also 14 bits. A morphed vertex is off by at
most (1 + sum of |w|) * s per axis; skin weights are 8-bit (step 1/255) and move a skinned vertex by at most
4 * (1/255) * (the largest distance any joint moves a vertex); the bound is that plus the position term, times
sqrt(3) for the 3-D distance. On main every variant but Draco fails to load or loads wrong.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from tests.asset.deform import cloud_distance, world_positions
from tests.helpers import ASSETS, asset
from vkmorph import load_scene as _load_scene

VARIANTS = ("quantize", "meshopt", "draco", "sparse", "optimize")
STEP_BITS = 14
WEIGHT_STEP = 1.0 / 255


@functools.cache
def load_scene(path):
    return _load_scene(path, isolate=False)


def _variant(model: str, op: str):
    path = ASSETS / "variants" / f"{model}.{op}.glb"
    if not path.exists():
        pytest.fail(f"{path} missing (tools/make_gltf_variants.sh makes it)")
    return path


def _extent(points: np.ndarray) -> float:
    return float(np.ptp(points, axis=0).max())


@pytest.mark.parametrize("op", VARIANTS)
@pytest.mark.parametrize("weights", [(0.0, 0.0), (1.0, 0.0), (0.3, 0.9), (1.0, 1.0)])
def test_morph_variants_deform_like_the_original(op, weights):
    original = load_scene(asset("AnimatedMorphCube", "AnimatedMorphCube.gltf"))
    variant = load_scene(_variant("AnimatedMorphCube", op))
    a = world_positions(original, weights=weights)
    b = world_positions(variant, weights=weights)
    step = _extent(world_positions(original)) / (2 ** STEP_BITS - 1)
    bound = np.sqrt(3) * (1 + sum(weights)) * step
    assert cloud_distance(a, b) <= bound, (op, cloud_distance(a, b), bound)


@pytest.mark.parametrize("op", VARIANTS)
def test_skin_variants_deform_like_the_original(op):
    original = load_scene(asset("SimpleSkin", "SimpleSkin.gltf"))
    variant = load_scene(_variant("SimpleSkin", op))
    rest = world_positions(original)
    step = _extent(rest) / (2 ** STEP_BITS - 1)
    clip = original.animations[0]
    for t in np.linspace(0.0, clip.duration, 7):
        a = world_positions(original, clip=0, time=t)
        b = world_positions(variant, clip=0, time=t)
        motion = float(np.linalg.norm(a - rest, axis=1).max()) + _extent(rest)
        bound = np.sqrt(3) * (step + 4 * WEIGHT_STEP * motion)
        assert cloud_distance(a, b) <= bound, (op, t, cloud_distance(a, b), bound)


@pytest.mark.parametrize("op", VARIANTS)
def test_variant_counts_match_the_file(op):
    """What vkmorph imports equals the variant's own accessors (gltf_check compares every attribute)."""
    from tests.gltf_ref import Gltf

    for model in ("SimpleSkin", "AnimatedMorphCube"):
        path = _variant(model, op)
        scene, ref = load_scene(path), Gltf(path)
        prims = [p for m in ref.json["meshes"] for p in m["primitives"]]
        assert [p.vertex_count for p in scene.primitives] == \
            [ref.json["accessors"][p["attributes"]["POSITION"]]["count"] for p in prims]
        assert [len(p.morph_targets) for p in scene.primitives] == [len(p.get("targets", [])) for p in prims]


def test_info_lists_each_extension_and_what_vkmorph_does():
    import json

    from tests.gltf_ref import Gltf
    from tests.helpers import vkmorph

    path = _variant("SimpleSkin", "meshopt")
    r = vkmorph("info", path, "--json")
    assert r.returncode == 0, r.stderr
    ext = json.loads(r.stdout)["extensions"]
    assert sorted(e["name"] for e in ext) == sorted(Gltf(path).json["extensionsUsed"])
    assert all(e["status"] == "supported" and e["required"] for e in ext)
    text = vkmorph("info", path).stdout
    assert "extension EXT_meshopt_compression (required): supported, buffer views decoded with meshoptimizer" in text


@pytest.mark.parametrize("change,message", [
    (lambda v: v.update(count=v["count"] + 1), "count 13 x byteStride 4 = 52, but the view's byteLength is 48"),
    (lambda v: v.update(mode="STRIPS"), "mode: 'STRIPS' is not one of ATTRIBUTES, TRIANGLES, INDICES"),
    (lambda v: v.update(byteOffset=1), "meshoptimizer cannot decode it"),
    (lambda v: v.update(byteLength=10 ** 6), "lie outside buffers[0]"),
])
def test_broken_meshopt_views_are_one_error_naming_the_view(tmp_path, change, message):
    import json
    import struct

    raw = _variant("SimpleSkin", "meshopt").read_bytes()
    n = struct.unpack_from("<I", raw, 12)[0]
    doc = json.loads(raw[20:20 + n])
    change(doc["bufferViews"][0]["extensions"]["EXT_meshopt_compression"])
    text = json.dumps(doc).encode()
    text += b" " * (-len(text) % 4)
    body = struct.pack("<II", len(text), 0x4E4F534A) + text + raw[20 + n:]
    path = tmp_path / "m.glb"
    path.write_bytes(b"glTF" + struct.pack("<II", 2, 12 + len(body)) + body)
    from vkmorph import AssetError

    with pytest.raises(AssetError) as e:
        _load_scene(path, isolate=False)
    assert str(e.value).startswith(f"file {path}: bufferViews[0].extensions.EXT_meshopt_compression") and \
        message in str(e.value), str(e.value)


@pytest.mark.parametrize("op", ["draco", "quantize"])
def test_the_decode_check_names_the_accessor_of_a_changed_attribute(op):
    """gltf_check on an import whose position 3 moved by 1e-3: one error naming the accessor (Draco: against
    DracoPy's decode; quantize: against vkmorph's dequantization)."""
    from vkmorph import AssetError
    from vkmorph.asset.gltf import GltfDocument
    from vkmorph.asset.gltf_canonical import canonical_glb
    from vkmorph.asset.gltf_check import check_import

    path = _variant("AnimatedMorphCube", op)
    scene = _load_scene(path, isolate=False)
    doc = GltfDocument(path)
    a_i = doc.json["meshes"][0]["primitives"][0]["attributes"]["POSITION"]
    check_import(doc, canonical_glb(doc), scene)
    scene.primitives[0].vertices["position"][3, 1] += 1e-3
    with pytest.raises(AssetError, match=rf"meshes\[0\]\.primitives\[0\]\.POSITION: vkmorph's decode of "
                                         rf"accessors\[{a_i}\] and the imported data differ at element 3"):
        check_import(doc, canonical_glb(doc), scene)
