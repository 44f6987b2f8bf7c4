"""Crafted core-glTF twins (tests/asset/twins.py) import exactly like their float originals; the glTF rules
vkmorph used to ignore (required extensions, minVersion, non-unit rotations, channels without a node, instancing,
point/line primitives) are decided with one line. Every test here fails on the code before the canonical decode,
except the colour twins (Assimp normalizes integer colours right; they guard the decode check)."""

from __future__ import annotations

import copy
import warnings

import numpy as np
import pytest

from tests.asset.deform import world_positions
from tests.asset.gltf_build import write_gltf
from tests.asset.twins import twin
from tests.gltf_ref import Gltf
from tests.helpers import assert_one_line_error, asset, vkmorph
from vkmorph import AssetError, load_scene
from vkmorph.app.info import scene_summary
from vkmorph.errors import AssetWarning


def _load(tmp_path, doc, binary, name="m.gltf", **kw):
    return load_scene(write_gltf(tmp_path / name, doc, binary), isolate=False, **kw)


@pytest.mark.parametrize("field,dtype", [("weights", "u1"), ("weights", "<u2"), ("uv", "u1"), ("uv", "<u2"),
                                         ("color", "u1"), ("color", "<u2")])
def test_normalized_integer_twins_import_like_the_float_original(tmp_path, field, dtype):
    ref = _load(tmp_path, *twin(), name="f.gltf").primitives[0]
    got = _load(tmp_path, *twin(**{field: dtype}), name="i.gltf").primitives[0]
    rv, gv = ref.vertices, got.vertices
    # the same numbers in both files: decode differences would be far above float32 rounding
    np.testing.assert_allclose(gv["weights"], rv["weights"], atol=2e-7)
    np.testing.assert_allclose(gv["texcoord"], rv["texcoord"], atol=2e-7)
    np.testing.assert_allclose(gv["tangent"], rv["tangent"], atol=2e-6)
    np.testing.assert_allclose(got.colors, ref.colors, atol=2e-7)
    np.testing.assert_array_equal(gv["joints"], rv["joints"])
    assert not (gv["weights"].sum(axis=1) == 0).any()


def test_quantized_positions_normals_and_deltas(tmp_path):
    """KHR_mesh_quantization: SHORT positions and deltas under a node scale of 4, BYTE normals. Bound: half a
    step (4 / 32767 / 2) per axis for the base and for the delta."""
    ref = _load(tmp_path, *twin(skinned=False), name="f.gltf")
    got = _load(tmp_path, *twin(skinned=False, quantized=True), name="q.gltf")
    for w in ((0.0,), (0.5,), (1.0,)):
        d = np.abs(world_positions(got, weights=w) - world_positions(ref, weights=w)).max()
        assert d <= (1 + w[0]) * 4 / 32767 / 2 + 1e-6, (w, d)
    np.testing.assert_allclose(got.primitives[0].vertices["normal"], ref.primitives[0].vertices["normal"])


def test_non_unit_rotation_is_normalized_with_a_warning(tmp_path):
    doc, binary = twin()
    ref = _load(tmp_path, doc, binary, name="f.gltf")
    bad = copy.deepcopy(doc)
    bad["nodes"][2]["rotation"] = [2 * x for x in doc["nodes"][2]["rotation"]]
    with pytest.warns(AssetWarning, match=r"nodes\[2\]\.rotation: \|q\| = 2, not a unit quaternion; normalized"):
        got = _load(tmp_path, bad, binary, name="r.gltf")
    np.testing.assert_allclose(world_positions(got), world_positions(ref), atol=1e-6)


def _with_clip(doc, binary, channels):
    """A clip rotating the tip, plus the given extra channels (each animating with the same sampler)."""
    times = np.array([0.0, 1.0], np.float32).tobytes()
    rots = np.array([[0, 0, 0, 1], [0, 0, 0.3826834, 0.9238795]], np.float32).tobytes()
    off = len(binary)
    binary = binary + times + rots
    doc["bufferViews"] += [{"buffer": 0, "byteOffset": off, "byteLength": 8},
                           {"buffer": 0, "byteOffset": off + 8, "byteLength": 32}]
    nv = len(doc["bufferViews"])
    doc["accessors"] += [{"bufferView": nv - 2, "componentType": 5126, "count": 2, "type": "SCALAR",
                          "min": [0], "max": [1]},
                         {"bufferView": nv - 1, "componentType": 5126, "count": 2, "type": "VEC4"}]
    na = len(doc["accessors"])
    doc["buffers"][0]["byteLength"] = len(binary)
    doc["animations"] = [{"name": "turn", "samplers": [{"input": na - 2, "output": na - 1}],
                          "channels": [{"sampler": 0, "target": {"node": 2, "path": "rotation"}}] + channels}]
    return doc, binary


def test_channels_without_a_node_or_with_a_pointer_are_skipped_with_a_warning(tmp_path):
    doc, binary = _with_clip(*twin(), [
        {"sampler": 0, "target": {"path": "rotation"}},
        {"sampler": 0, "target": {"path": "pointer", "extensions": {
            "KHR_animation_pointer": {"pointer": "/nodes/2/rotation"}}}}])
    doc["extensionsUsed"] = ["KHR_animation_pointer"]
    with pytest.warns(AssetWarning) as rec:
        scene = _load(tmp_path, doc, binary)
    msgs = [str(w.message) for w in rec]
    assert any("animations[0] ('turn'): 2 channels skipped (1 without a target node, 1 KHR_animation_pointer; "
               "channels [1, 2])" in m for m in msgs), msgs
    assert any("extension KHR_animation_pointer: channels that animate a JSON pointer are skipped" in m
               for m in msgs), msgs
    (clip,) = scene.animations
    assert [(c.node, c.path) for c in clip.node_channels] == [(scene.file_nodes[2], "rotation")]


@pytest.mark.parametrize("change,message", [
    (lambda d: d.update(extensionsUsed=["EXT_future"], extensionsRequired=["EXT_future"]),
     "extensionsRequired: EXT_future is required and not supported (unknown to vkmorph: its data is not read)"),
    (lambda d: d.update(extensionsUsed=["KHR_materials_clearcoat"], extensionsRequired=["KHR_materials_clearcoat"]),
     "extensionsRequired: KHR_materials_clearcoat is required and not supported"),
    (lambda d: d["asset"].update(minVersion="2.1"),
     "asset.minVersion: '2.1': the file needs a glTF 2.1 loader; vkmorph reads 2.0"),
])
def test_required_extensions_and_min_version_are_refused_by_name(tmp_path, change, message):
    doc, binary = twin()
    change(doc)
    path = write_gltf(tmp_path / "m.gltf", doc, binary)
    with pytest.raises(AssetError, match=message.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        load_scene(path, isolate=False)
    out = tmp_path / "o.npz"
    assert_one_line_error(vkmorph("morph", path, "--out", out), message.split(" (")[0], out)


def test_unknown_used_extension_is_warned_by_name(tmp_path):
    doc, binary = twin()
    doc["extensionsUsed"] = ["EXT_future"]
    with pytest.warns(AssetWarning, match="extension EXT_future: unknown to vkmorph: its data is not read"):
        _load(tmp_path, doc, binary)


def test_gpu_instancing_draws_every_instance(tmp_path):
    doc, binary = twin(skinned=False)
    t = np.array([[0, 0, 0], [5, 0, 0], [0, 5, 0]], np.float32)
    r = np.array([[0, 0, 0, 1], [0, 0, 0.7071068, 0.7071068], [0, 0, 0, 2]], np.float32)   # the last: |q| = 2
    off = len(binary)
    binary = binary + t.tobytes() + r.tobytes()
    doc["bufferViews"] += [{"buffer": 0, "byteOffset": off, "byteLength": 36},
                           {"buffer": 0, "byteOffset": off + 36, "byteLength": 48}]
    nv, na = len(doc["bufferViews"]), len(doc["accessors"])
    doc["accessors"] += [{"bufferView": nv - 2, "componentType": 5126, "count": 3, "type": "VEC3"},
                         {"bufferView": nv - 1, "componentType": 5126, "count": 3, "type": "VEC4"}]
    doc["buffers"][0]["byteLength"] = len(binary)
    doc["extensionsUsed"] = ["EXT_mesh_gpu_instancing"]
    doc["nodes"][0]["translation"] = [0, 0, 1]
    doc["nodes"][0]["extensions"] = {"EXT_mesh_gpu_instancing": {"attributes": {"TRANSLATION": na,
                                                                                "ROTATION": na + 1}}}
    with pytest.warns(AssetWarning, match="instances are nodes of their own: they keep the default morph weights"):
        scene = _load(tmp_path, doc, binary)
    single = world_positions(_load(tmp_path, *twin(skinned=False), name="one.gltf"))
    got = world_positions(scene)
    assert len(got) == 3 * len(single)
    rot90 = np.array([[0, -1, 0], [1, 0, 0], [0, 0, 1]])
    want = np.concatenate([single + [0, 0, 1], single @ rot90.T + [5, 0, 1], single + [0, 5, 1]])
    np.testing.assert_allclose(got, want, atol=1e-5)
    assert [n.name for n in scene.nodes if n.mesh is not None] == [f"body instance {k}" for k in range(3)]


def test_point_and_line_primitives_are_left_out_with_a_warning(tmp_path):
    doc, binary = twin(skinned=False)
    prim = copy.deepcopy(doc["meshes"][0]["primitives"][0])
    prim.update(mode=1)
    doc["meshes"][0]["primitives"] = [prim, doc["meshes"][0]["primitives"][0]]
    with pytest.warns(AssetWarning, match=r"meshes\[0\]\.primitives\[0\]: mode LINES is not drawn"):
        scene = _load(tmp_path, doc, binary)
    assert [len(p.morph_targets) for p in scene.primitives] == [1]
    assert scene.primitives[0].source == (0, 1) and scene.primitives[0].name == "grid-1"


def test_one_mesh_under_two_nodes_with_two_skins(tmp_path):
    """glTF binds a skin per node: each node is deformed by its own skin (Assimp kept one skin per mesh, so
    every node got the last one). Expected: the two single-node files' positions, side by side."""
    doc, binary = twin()
    # a second skeleton (nodes 3, 4) bent the other way, and a second node instancing the same mesh with it
    doc["nodes"] += [{"name": "root2", "translation": [4, 0, 0], "children": [4]},
                     {"name": "tip2", "translation": [0, 1.5, 0], "rotation": [0, 0, -0.3826834, 0.9238795]},
                     {"name": "body2", "mesh": 0, "skin": 1}]
    doc["skins"].append({"joints": [3, 4], "inverseBindMatrices": doc["skins"][0]["inverseBindMatrices"]})
    doc["scenes"][0]["nodes"] = [0, 1, 3, 5]
    both = world_positions(_load(tmp_path, doc, binary, name="both.gltf"))
    only = []
    for keep in (0, 5):
        one = copy.deepcopy(doc)
        one["scenes"][0]["nodes"] = [keep, 1, 3]
        only.append(world_positions(_load(tmp_path, one, binary, name=f"only{keep}.gltf")))
    np.testing.assert_allclose(both, np.concatenate(only), atol=1e-5)
    assert np.abs(only[0] - only[1]).max() > 1.0   # the two skins really differ


def test_values_the_validator_rejects_but_vkmorph_repairs_are_warned(tmp_path):
    """Colours outside 0..1 are clamped, non-unit normals normalized, non-unit rotation keys normalized when
    sampled: each with a warning naming the accessor (the glTF-Validator rejects such files)."""
    doc, binary = twin()
    raw = bytearray(binary)
    attrs = doc["meshes"][0]["primitives"][0]["attributes"]
    for key, value in (("COLOR_0", [2.0, 0.5, 0.5, 1.0]), ("NORMAL", [0.0, 0.0, 0.5])):
        view = doc["bufferViews"][doc["accessors"][attrs[key]]["bufferView"]]
        raw[view["byteOffset"]:view["byteOffset"] + 4 * len(value)] = np.array(value, np.float32).tobytes()
    doc, binary = _with_clip(doc, bytes(raw), [])
    rots = doc["bufferViews"][doc["accessors"][-1]["bufferView"]]
    raw = bytearray(binary)
    raw[rots["byteOffset"]:rots["byteOffset"] + 16] = np.array([0, 0, 0, 0.5], np.float32).tobytes()
    with pytest.warns(AssetWarning) as rec:
        _load(tmp_path, doc, bytes(raw))
    msgs = "\n".join(str(w.message) for w in rec)
    assert "primitives[0].attributes.COLOR_0: 1 of 16 colours lie outside 0..1 or are not numbers (vertex 0); " \
           "clamped" in msgs, msgs
    assert "primitives[0].attributes.NORMAL: 1 of 16 normals are not unit length (vertex 0)" in msgs, msgs
    assert "animations[0].samplers[0].output: 1 of 2 rotation keys are not unit quaternions (key 0)" in msgs, msgs


def test_fb_ngon_encoding_is_known_and_loses_nothing(tmp_path):
    """Assimp's exporter marks its triangles as n-gon fans (FB_ngon_encoding, no data): no warning, and a file
    that requires it still loads (its triangles are all vkmorph draws)."""
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        scene = load_scene(asset("assimp_simple_skin", "quad_skin.glb"), isolate=False)
    msgs = [str(w.message) for w in rec]
    assert not any("FB_ngon_encoding" in m for m in msgs), msgs
    assert any("KHR_materials_volume" in m for m in msgs), msgs    # the file's other extension is still warned
    assert {e["name"]: e["status"] for e in scene.extensions}["FB_ngon_encoding"] == "supported"
    doc, binary = twin()
    doc["extensionsUsed"] = doc["extensionsRequired"] = ["FB_ngon_encoding"]
    doc["meshes"][0]["primitives"][0]["extensions"] = {"FB_ngon_encoding": {}}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _load(tmp_path, doc, binary)


def _info_skins_match_the_file(path):
    """``vkmorph info``'s skins are the file's ``skins`` array, and each primitive names the file's skin."""
    file = Gltf(path).json
    info = scene_summary(load_scene(path, isolate=False))
    assert [s["joint_count"] for s in info["skins"]] == [len(s["joints"]) for s in file["skins"]]
    used = {n["skin"] for n in file["nodes"] if "skin" in n}
    assert {p["skin"] for p in info["primitives"] if p["skinned"]} == used
    return info


def test_info_counts_the_files_skins(tmp_path):
    _info_skins_match_the_file(asset("RobotExpressive", "RobotExpressive.glb"))
    # one skin shared by two meshes (vkmorph makes one skin per (mesh, skin)): the file has one
    doc, binary = twin()
    doc["meshes"].append(copy.deepcopy(doc["meshes"][0]))
    doc["nodes"].append({"name": "body2", "mesh": 1, "skin": 0, "translation": [4, 0, 0]})
    doc["scenes"][0]["nodes"].append(len(doc["nodes"]) - 1)
    info = _info_skins_match_the_file(write_gltf(tmp_path / "shared.gltf", doc, binary))
    assert len(info["skins"]) == 1 and len(info["primitives"]) == 2
    # one mesh under two nodes with two skins: two
    doc, binary = twin()
    doc["nodes"] += [{"name": "root2", "translation": [4, 0, 0], "children": [4]},
                     {"name": "tip2", "translation": [0, 1.5, 0]}, {"name": "body2", "mesh": 0, "skin": 1}]
    doc["skins"].append({"joints": [3, 4], "inverseBindMatrices": doc["skins"][0]["inverseBindMatrices"]})
    doc["scenes"][0]["nodes"] = [0, 1, 3, 5]
    info = _info_skins_match_the_file(write_gltf(tmp_path / "two.gltf", doc, binary))
    assert len(info["skins"]) == 2
