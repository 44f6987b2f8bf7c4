"""A corpus of broken inputs, generated here: each gives AssetError naming the place, never a crash."""

from __future__ import annotations

import copy
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.asset.gltf_build import QUAD, skinned_morph_model, write_gltf
from tests.helpers import ROOT, assert_one_line_error, asset, vkmorph
from vkmorph import AssetError, UsageError, load_scene
from vkmorph.asset.model import SKINNED_VERTEX, STATIC_VERTEX, MeshPrimitiveAsset, MorphTargetAsset
from vkmorph.asset.validate import validate_primitive
from vkmorph.errors import AssetWarning


def _prim(V=4, T=1, skinned=False):
    v = np.zeros(V, SKINNED_VERTEX if skinned else STATIC_VERTEX)
    v["position"] = np.random.default_rng(0).normal(size=(V, 3))
    v["normal"] = (0, 0, 1)
    v["tangent"] = (1, 0, 0, 1)
    if skinned:
        v["weights"][:, 0] = 1
    idx = np.arange(V - V % 3, dtype=np.uint32)
    tg = [MorphTargetAsset(f"t{k}", np.zeros((V, 3), np.float32)) for k in range(T)]
    return MeshPrimitiveAsset(vertices=v, indices=idx, morph_targets=tg)


def _err(prim, **kw) -> AssetError:
    with pytest.raises(AssetError) as e:
        validate_primitive(prim, file="f.gltf", mesh="m", primitive=0, **kw)
    return e.value


def test_nan_delta_names_target_and_index():
    p = _prim(6)
    p.morph_targets[0].position_deltas[4, 1] = np.nan
    e = _err(p)
    assert (e.target, e.index, e.primitive, e.mesh, e.file) == ("t0", 4, 0, "m", "f.gltf")
    assert "non-finite" in str(e) and "f.gltf" in str(e)


def test_delta_count_mismatch():
    p = _prim(6)
    p.morph_targets[0].position_deltas = np.zeros((5, 3), np.float32)
    assert "delta count 5 != vertex count 6" in str(_err(p))


def test_index_out_of_range_and_not_multiple_of_three():
    p = _prim(6)
    p.indices = np.array([0, 1, 9, 2, 3, 4], np.uint32)
    e = _err(p)
    assert e.index == 2 and "out of range" in str(e)
    p.indices = np.array([0, 1, 2, 3], np.uint32)
    assert "not a multiple of 3" in str(_err(p))


def test_empty_target_name_and_no_vertices():
    p = _prim(6)
    p.morph_targets[0].name = ""
    assert "empty target name" in str(_err(p))
    assert "no vertices" in str(_err(_prim(0, T=0)))


def test_joint_index_beyond_skin():
    p = _prim(6, skinned=True)
    p.vertices["joints"][3, 0] = 7
    e = _err(p, joint_count=2)
    assert e.index == 3 and "beyond the skin" in str(e)


def test_missing_file_directory_text_and_truncated(tmp_path):
    with pytest.raises(AssetError, match="file not found"):
        load_scene(tmp_path / "nope.gltf")
    with pytest.raises(AssetError, match="not a regular file"):
        load_scene(tmp_path)
    txt = tmp_path / "notes.txt"
    txt.write_text("this is not a model\n")
    with pytest.raises(AssetError, match="Assimp cannot import") as e:
        load_scene(txt)
    assert str(txt) in str(e.value)
    txt = txt.rename(tmp_path / "notes.gltf")
    with pytest.raises(AssetError, match="notes.gltf: JSON: Expecting value at line 1 column 1"):
        load_scene(txt)
    glb = asset("RobotExpressive", "RobotExpressive.glb").read_bytes()
    cut = tmp_path / "cut.glb"
    cut.write_bytes(glb[: len(glb) // 3])
    with pytest.raises(AssetError, match="cut.glb"):
        load_scene(cut)


def test_missing_bin(tmp_path):
    src = asset("MorphStressTest", "MorphStressTest.gltf")
    shutil.copy(src, tmp_path / "m.gltf")  # .bin left behind
    with pytest.raises(AssetError, match="m.gltf"):
        load_scene(tmp_path / "m.gltf")


def _write_variant(tmp_path, mutate):
    src = asset("MorphStressTest", "MorphStressTest.gltf")
    d = json.loads(src.read_text())
    d2 = copy.deepcopy(d)
    mutate(d2)
    shutil.copy(src.with_suffix(".bin"), tmp_path / "MorphStressTest.bin")
    out = tmp_path / "v.gltf"
    out.write_text(json.dumps(d2))
    return out


def test_nan_in_file_target(tmp_path):
    """A target accessor pointing at NaN bytes in a patched .bin is caught with mesh/target/index."""
    src = asset("MorphStressTest", "MorphStressTest.gltf")
    d = json.loads(src.read_text())
    acc = d["accessors"][d["meshes"][0]["primitives"][1]["targets"][2]["POSITION"]]
    view = d["bufferViews"][acc["bufferView"]]
    raw = bytearray(src.with_suffix(".bin").read_bytes())
    off = view.get("byteOffset", 0) + acc.get("byteOffset", 0) + 12 * 5
    raw[off:off + 4] = np.float32(np.nan).tobytes()
    (tmp_path / "MorphStressTest.bin").write_bytes(bytes(raw))
    (tmp_path / "n.gltf").write_text(json.dumps(d))
    with pytest.raises(AssetError) as e:
        load_scene(tmp_path / "n.gltf")
    assert e.value.target == "Key 3" and e.value.index == 5 and e.value.primitive == 1


def test_out_of_range_index_in_file(tmp_path):
    def mutate(d):
        prim = d["meshes"][0]["primitives"][0]
        d["accessors"][prim["attributes"]["POSITION"]]["count"] = 3  # fewer vertices than indices use
    with pytest.raises(AssetError):
        load_scene(_write_variant(tmp_path, mutate))


@settings(max_examples=60, deadline=None)
@given(V=st.integers(1, 12), T=st.integers(0, 3), row=st.integers(0, 11), col=st.integers(0, 2),
       bad=st.sampled_from([np.nan, np.inf, -np.inf, None]), field=st.sampled_from(["pos", "nrm", "idx"]))
def test_validator_fuzz(V, T, row, col, bad, field):
    """Valid primitives pass; one corrupted value anywhere gives AssetError with the right index."""
    p = _prim(V, T)
    if V >= 3:
        validate_primitive(p)
    if bad is None or T == 0 and field != "idx":
        return
    r = row % V
    if field == "idx":
        if len(p.indices) == 0:
            return
        p.indices[r % len(p.indices)] = V + 5
        with pytest.raises(AssetError) as e:
            validate_primitive(p)
        assert e.value.index == int(np.flatnonzero(p.indices >= V)[0])
        return
    t = p.morph_targets[0]
    if field == "nrm":
        t.normal_deltas = np.zeros((V, 3), np.float32)
        t.normal_deltas[r, col] = bad
    else:
        t.position_deltas[r, col] = bad
    with pytest.raises(AssetError) as e:
        validate_primitive(p)
    assert e.value.index == r and e.value.target == "t0"


def test_cpu_layers_do_not_load_vulkan():
    code = ("import sys, vkmorph\nfrom vkmorph import load_scene\n"
            "import vkmorph.asset.importer, vkmorph.morph.gpu_data, vkmorph.morph.state, vkmorph.morph.reference\n"
            "import vkmorph.anim.player, vkmorph.anim.skeleton, vkmorph.anim.sampler\n"
            "load_scene()\n"
            "bad = [m for m in sys.modules"
            " if m == 'vulkan' or m.startswith(('vulkan.', 'vkmorph.gpu'))]\n"
            "assert not bad, bad\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


# ------------------------------------------------------------------------------------------------------------
# Generated glTF corpus: one file per structural rule and per case Assimp would alter silently. Each asserts the
# exact one-line message (file + JSON path). Base: tests/asset/gltf_build.skinned_morph_model (valid).
A_POS, A_NRM, A_IDX, A_JNT, A_WGT, A_DELTA, A_IBM, A_TIMES, A_WVALS = range(9)


def _patch(doc, binary: bytearray, acc: int, row: int, values, dtype):
    a = doc["accessors"][acc]
    v = doc["bufferViews"][a["bufferView"]]
    raw = np.asarray(values, dtype).tobytes()
    off = v.get("byteOffset", 0) + a.get("byteOffset", 0) + row * len(raw)
    binary[off:off + len(raw)] = raw


def _set(path, value):
    """A mutation setting doc[path...] = value (path: keys and indices)."""
    def mutate(doc, binary):
        obj = doc
        for k in path[:-1]:
            obj = obj[k]
        obj[path[-1]] = value
    return mutate


def _bytes(acc, row, values, dtype):
    return lambda doc, binary: _patch(doc, binary, acc, row, values, dtype)


P0 = "meshes[0].primitives[0]"
S0 = "animations[0].samplers[0]"
ERRORS = {
    # structure
    "view outside buffer": (_set(["bufferViews", 0, "byteLength"], 4000),
                            "bufferViews[0]: bytes 0..4000 lie outside buffers[0] (472 bytes)"),
    "accessor outside view": (_set(["accessors", A_POS, "count"], 5),
                              f"{P0}.attributes.POSITION (accessors[0]): 5 elements end at byte 60 of "
                              "bufferViews[0] (48 bytes)"),
    "byteStride 1": (_set(["bufferViews", 0, "byteStride"], 1),
                     "bufferViews[0].byteStride: 1 is not an integer >= 4, at most 252"),
    "stride < element size": (_set(["bufferViews", 0, "byteStride"], 4),
                              f"{P0}.attributes.POSITION (accessors[0]): byteStride 4 is smaller than the element "
                              "size 12"),
    "attribute counts differ": (_set(["accessors", A_NRM, "count"], 3),
                                f"{P0}.attributes.NORMAL: 3 elements, POSITION has 4"),
    "accessor index": (_set(["meshes", 0, "primitives", 0, "attributes", "NORMAL"], 42),
                       f"{P0}.attributes.NORMAL: accessors index 42 out of range (11 accessors)"),
    "unknown component type": (_set(["accessors", A_NRM, "componentType"], 5130),
                               f"{P0}.attributes.NORMAL (accessors[1]).componentType: unknown component type 5130"),
    "buffer byteLength": (_set(["buffers", 0, "byteLength"], 5000),
                          "buffers[0]: byteLength 5000 but 'model.bin' has 472 bytes"),
    # hierarchy and references
    "scene node index": (_set(["scenes", 0, "nodes"], [0, 7]), "scenes[0].nodes[1]: nodes index 7 out of range "
                                                               "(3 nodes)"),
    "child index": (_set(["nodes", 1, "children"], [-1]), "nodes[1].children[0]: nodes index -1 out of range "
                                                          "(3 nodes)"),
    "two parents": (_set(["nodes", 0, "children"], [2]), "nodes[1].children[0]: node 2 is already a child of "
                                                         "nodes[0] too"),
    "cycle": (_set(["nodes", 2, "children"], [1]), "nodes[1]: the node hierarchy has a cycle"),
    "mesh index": (_set(["nodes", 0, "mesh"], 3), "nodes[0].mesh: meshes index 3 out of range (1 meshes)"),
    "skin index": (_set(["nodes", 0, "skin"], 1), "nodes[0].skin: skins index 1 out of range (1 skins)"),
    "skin joint index": (_set(["skins", 0, "joints"], [1, 5]), "skins[0].joints[1]: nodes index 5 out of range "
                                                               "(3 nodes)"),
    "bad translation": (_set(["nodes", 2, "translation"], [0, 1]), "nodes[2].translation: must be 3 finite "
                                                                   "numbers"),
    "too few inverse binds": (_set(["skins", 0, "joints"], [1, 2, 0]),
                              "skins[0].inverseBindMatrices: 2 matrices for 3 joints"),
    # vertex data Assimp would alter silently
    "index >= vertex count": (_bytes(A_IDX, 2, [9], "<u2"),
                              f"{P0}.indices: index 9 at position 2 >= vertex count 4"),
    "joint beyond skin": (_bytes(A_JNT, 1, [0, 5, 0, 0], "u1"),
                          f"{P0}.attributes.JOINTS: joint 5 at vertex 1 is beyond skins[0]'s 2 joints"),
    "negative weight": (_bytes(A_WGT, 3, [1.25, -0.25, 0, 0], "<f4"),
                        f"{P0}.attributes.WEIGHTS_0: negative or non-finite weight at vertex 3: [1.25, -0.25, 0.0, "
                        "0.0]"),
    "NaN weight": (_bytes(A_WGT, 0, [np.nan, 0, 0, 0], "<f4"),
                   f"{P0}.attributes.WEIGHTS_0: negative or non-finite weight at vertex 0: [nan, 0.0, 0.0, 0.0]"),
    "JOINTS without WEIGHTS": (lambda d, b: d["meshes"][0]["primitives"][0]["attributes"].pop("WEIGHTS_0"),
                               f"{P0}.attributes: JOINTS sets ['JOINTS_0'] and WEIGHTS sets [] do not pair up"),
    "target with 3 of 4 vertices": (_set(["accessors", A_DELTA, "count"], 3),
                                    f"{P0}.targets[0].POSITION: 3 vertices, the primitive has 4"),
    "mesh.weights length": (_set(["meshes", 0, "weights"], [0.5, 0.5]),
                            "meshes[0].weights: 2 weights for 1 morph targets"),
    "node.weights length": (_set(["nodes", 0, "weights"], []), "nodes[0].weights: 0 weights for 1 morph targets"),
    # animations
    "0 keyframes (Assimp: SIGFPE)": (_set(["accessors", A_TIMES, "count"], 0), f"{S0}.input: 0 keyframes"),
    "times not increasing": (_bytes(A_TIMES, 2, [0.5], "<f4"),
                             f"{S0}.input: times must increase strictly (key 2: 0.5 after 0.5)"),
    "unknown interpolation": (_set(["animations", 0, "samplers", 0, "interpolation"], "SMOOTH"),
                              f"{S0}.interpolation: unknown interpolation 'SMOOTH' (glTF has LINEAR, STEP, "
                              "CUBICSPLINE)"),
    "sampler index": (_set(["animations", 0, "channels", 1, "sampler"], 3),
                      "animations[0].channels[1].sampler: sampler index 3 out of range (3 samplers)"),
    "channel node": (_set(["animations", 0, "channels", 1, "target", "node"], 3),
                     "animations[0].channels[1].target.node: nodes index 3 out of range (3 nodes)"),
    "unknown path": (_set(["animations", 0, "channels", 1, "target", "path"], "skew"),
                     "animations[0].channels[1].target.path: unknown path 'skew'"),
    "output count": (_set(["accessors", A_WVALS, "count"], 2), f"{S0}.output: 2 values for 3 keyframes"),
    "CUBICSPLINE without tangents": (_set(["animations", 0, "samplers", 0, "interpolation"], "CUBICSPLINE"),
                                     f"{S0}.output: 3 values for 3 keyframes x 3 (CUBICSPLINE)"),
    "weights of a node without targets": (_set(["animations", 0, "channels", 0, "target", "node"], 2),
                                          "animations[0].channels[0].target.node: animates weights of nodes[2], "
                                          "which has no morph targets"),
    # names (Assimp's aiString: 1023 bytes + NUL; longer names come back empty)
    "long node name": (_set(["nodes", 2, "name"], "x" * 1024),
                       "nodes[2].name: 1024 bytes; Assimp keeps names of at most 1023 bytes"),
    "long target name": (_set(["meshes", 0, "extras", "targetNames"], ["é" * 600]),
                         "meshes[0].extras.targetNames[0]: 1200 bytes; Assimp keeps names of at most 1023 bytes"),
    "name not a string": (_set(["meshes", 0, "name"], 7), "meshes[0].name: must be a string, not int"),
}


def _variant(tmp_path, mutate, name="v.gltf", **write):
    doc, binary = skinned_morph_model()
    binary = bytearray(binary)
    mutate(doc, binary)
    return write_gltf(tmp_path / name, doc, bytes(binary), **write)


@pytest.mark.parametrize("case", list(ERRORS))
def test_corpus_error_names_the_place(tmp_path, case):
    mutate, message = ERRORS[case]
    path = _variant(tmp_path, mutate)
    with pytest.raises(AssetError) as e:
        load_scene(path, isolate=False)
    assert str(e.value) == f"file {path}: {message}"


def test_corpus_base_is_valid_and_quiet(tmp_path, recwarn):
    scene = load_scene(_variant(tmp_path, lambda d, b: None))
    assert [a.name for a in scene.animations] == ["move"] and len(scene.primitives) == 1
    assert not recwarn.list


@pytest.mark.parametrize("row,values,total", [(1, [1.0, 1.0, 0, 0], 2.0), (2, [0.25, 0.25, 0, 0], 0.5)])
def test_weight_sums_warn_and_renormalize(tmp_path, row, values, total):
    path = _variant(tmp_path, _bytes(A_WGT, row, values, "<f4"))
    with pytest.warns(AssetWarning) as rec:
        scene = load_scene(path)
    assert [str(w.message) for w in rec] == [
        f"file {path}: {P0}.attributes.WEIGHTS: weights of 1 vertices do not sum to 1 (vertex {row}: {total:g}); "
        "renormalized"]
    w = scene.primitives[0].vertices["weights"][row]
    np.testing.assert_allclose(w, np.array(values, np.float32) / total, atol=1e-6)


def test_assimp_alterations_are_caught_even_without_the_validator(tmp_path):
    """Assimp drops a triangle with a bad index; with validate=False the decode check still names it."""
    path = _variant(tmp_path, _bytes(A_IDX, 2, [9], "<u2"))
    with pytest.raises(AssetError, match=r"primitives\[0\]\.indices: vkmorph's decode of accessors\[2\]"):
        load_scene(path, validate=False, isolate=False)
    scene = load_scene(_variant(tmp_path, _bytes(A_WGT, 1, [1.0, 1.0, 0, 0], "<f4")), validate=False)
    np.testing.assert_allclose(scene.primitives[0].vertices["weights"][1][:2], [0.5, 0.5])


@pytest.fixture(params=["fork", "subprocess"])
def isolation_method(request, monkeypatch):
    """Both ways of isolating: a forked child (no Vulkan loaded yet) and a fresh interpreter (Vulkan loaded)."""
    from vkmorph.asset import isolate

    monkeypatch.setattr(isolate, "default_method", lambda: request.param)
    return request.param


def test_no_fork_once_vulkan_is_loaded(monkeypatch):
    """A forked child would inherit the driver's state (on NVIDIA the parent then fails vkCreateInstance)."""
    import sys

    from vkmorph.asset import isolate

    monkeypatch.delitem(sys.modules, "vulkan", raising=False)
    assert isolate.default_method() == "fork"
    monkeypatch.setitem(sys.modules, "vulkan", object())
    assert isolate.default_method() == "subprocess"


def test_isolation_turns_the_sigfpe_crash_into_an_error(tmp_path, isolation_method):
    """Assimp itself on the raw file (load_scene hands it vkmorph's decode, without the animations, which no
    longer crashes it): a native crash in the child is one AssetError."""
    from vkmorph.asset.importer import import_with_assimp
    from vkmorph.asset.isolate import run_isolated

    path = _variant(tmp_path, ERRORS["0 keyframes (Assimp: SIGFPE)"][0])
    with pytest.raises(AssetError) as e:
        run_isolated(import_with_assimp, str(path), file=str(path))
    assert str(e.value) == f"the importer crashed on {path} (signal SIGFPE)" and e.value.file == str(path)


def test_isolated_load_equals_in_process_and_relays_errors_and_warnings(tmp_path, isolation_method):
    path = asset("MorphStressTest", "MorphStressTest.gltf")
    a, b = load_scene(path, isolate=True, cache=False), load_scene(path, isolate=False, cache=False)
    for pa, pb in zip(a.primitives, b.primitives):
        np.testing.assert_array_equal(pa.vertices, pb.vertices)
        for ta, tb in zip(pa.morph_targets, pb.morph_targets):
            np.testing.assert_array_equal(ta.position_deltas, tb.position_deltas)
    bad = _variant(tmp_path, lambda d, b: None, name="nan.gltf")
    raw = bytearray((tmp_path / "model.bin").read_bytes())
    raw[12 * 2 + 4:12 * 2 + 8] = np.float32(np.nan).tobytes()  # POSITION of vertex 2, y
    (tmp_path / "model.bin").write_bytes(bytes(raw))
    with pytest.raises(AssetError) as e:
        load_scene(bad, isolate=True)
    assert (e.value.file, e.value.index, e.value.primitive) == (str(bad), 2, 0)
    assert "non-finite vertex position" in str(e.value)
    warn = _variant(tmp_path, _bytes(A_WGT, 1, [1.0, 1.0, 0, 0], "<f4"), name="w.gltf")
    with pytest.warns(AssetWarning, match="renormalized"):
        load_scene(warn, isolate=True)


def test_glb_with_wrong_length(tmp_path):
    path = _variant(tmp_path, lambda d, b: None, name="v.glb", glb=True)
    raw = bytearray(path.read_bytes())
    raw[8:12] = (len(raw) + 4).to_bytes(4, "little")
    path.write_bytes(bytes(raw))
    with pytest.raises(AssetError) as e:
        load_scene(path)
    assert str(e.value) == f"file {path}: GLB header: length {len(raw) + 4} != file size {len(raw)}"


@pytest.mark.parametrize("uri", ["/etc/hostname", "../outside.bin", "sub/../../outside.bin", "link.bin",
                                 "file:///etc/hostname"])
def test_uris_outside_the_folder_are_refused(tmp_path, uri):
    model = tmp_path / "m"
    (model / "sub").mkdir(parents=True)
    doc, binary = skinned_morph_model()
    (tmp_path / "outside.bin").write_bytes(binary)
    (model / "link.bin").symlink_to(tmp_path / "outside.bin")
    doc["buffers"] = [{"byteLength": len(binary), "uri": uri}]
    path = write_gltf(model / "x.gltf", doc, binary)
    with pytest.raises(AssetError) as e:
        load_scene(path)
    if uri.startswith("file:"):
        assert str(e.value) == f"file {path}: buffers[0].uri: URI scheme 'file' is not supported (only relative " \
                               "paths and data:)"
        return
    assert str(e.value) == (f"file {path}: buffers[0].uri: {uri!r} points outside the model's folder; refused "
                            "(allow it with allow_external_uris=True or VKMORPH_ALLOW_EXTERNAL_URIS=1)")
    if uri != "/etc/hostname":
        assert load_scene(path, allow_external_uris=True).primitives[0].vertex_count == 4


def test_image_uri_outside_refused_and_env_switch(tmp_path, monkeypatch):
    path = _variant(tmp_path, _set(["images"], [{"uri": "../../secret.png"}]))
    with pytest.raises(AssetError, match=r"images\[0\].uri: '../../secret.png' points outside"):
        load_scene(path)
    monkeypatch.setenv("VKMORPH_ALLOW_EXTERNAL_URIS", "1")
    load_scene(path)


def test_data_uri_and_glb_buffers_work(tmp_path):
    for name, kw in (("e.gltf", {"embed": True}), ("g.glb", {"glb": True})):
        scene = load_scene(_variant(tmp_path, lambda d, b: None, name=name, **kw))
        np.testing.assert_array_equal(scene.primitives[0].vertices["position"], QUAD)


def test_no_numpy_or_pyassimp_warnings_reach_stderr(tmp_path):
    """A fresh interpreter compiling pyassimp anew (no cached .pyc) with every warning as an error, loading a file
    whose zero-area triangles and NaN normals make numpy divide by zero: stderr stays empty until the one error."""
    doc, binary = skinned_morph_model()
    binary = bytearray(binary)
    _patch(doc, binary, A_POS, 1, [[0, 0, 0]] * 3, "<f4")  # degenerate triangles
    doc["meshes"][0]["primitives"][0]["attributes"].pop("NORMAL")
    path = write_gltf(tmp_path / "flat.gltf", doc, bytes(binary))
    code = ("import warnings, sys\nwarnings.simplefilter('error')\nfrom vkmorph import load_scene, AssetError\n"
            f"try:\n    load_scene({str(path)!r}, isolate=False)\nexcept AssetError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-X", f"pycache_prefix={tmp_path / 'pyc'}", "-W", "error", "-c", code],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stderr == "", r.stderr


def test_non_utf8_file_name_and_wrong_path_type(tmp_path):
    doc, binary = skinned_morph_model()
    name = os.fsdecode(b"caf\xe9.gltf")  # not UTF-8: a surrogate escape in Python
    path = write_gltf(tmp_path / name, doc, binary)
    for isolate in (False, True):
        assert load_scene(path, isolate=isolate).primitives[0].vertex_count == 4
    with pytest.raises(UsageError, match="load_scene needs a file path .* not int"):
        load_scene(5)


def test_crash_report_is_one_line_even_with_faulthandler(tmp_path):
    path = _variant(tmp_path, ERRORS["0 keyframes (Assimp: SIGFPE)"][0])
    code = ("from vkmorph import AssetError\nfrom vkmorph.asset.importer import import_with_assimp\n"
            "from vkmorph.asset.isolate import run_isolated\ntry:\n"
            f"    run_isolated(import_with_assimp, {str(path)!r}, file={str(path)!r})\n"
            "except AssetError as e:\n    print(e)\n")
    r = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    assert (r.returncode, r.stdout, r.stderr) == (0, f"the importer crashed on {path} (signal SIGFPE)\n", "")


@pytest.mark.parametrize("token,place", [
    ("NaN", lambda d: d["accessors"][0].update(max=[1.0, "BAD", 1.0])),
    ("Infinity", lambda d: d["nodes"][0].update(extras={"note": "NaN in a string is text", "x": "BAD"})),
    ("-Infinity", lambda d: d.update(materials=[{"pbrMetallicRoughness": {"metallicFactor": "BAD"}}])),
    ("1e999", lambda d: d["nodes"][0].update(translation=[0.0, "BAD", 0.0])),
])
def test_non_finite_json_numbers_are_reported_where_they_are(tmp_path, token, place):
    """NaN / Infinity are not JSON (Python's reader takes them; the canonical file then did not parse: "Assimp
    cannot import it: No suitable reader found"), 1e999 overflows: one line with line, column and JSON path."""
    doc, binary = skinned_morph_model()
    place(doc)
    path = write_gltf(tmp_path / "m.gltf", doc, binary, bin_name="m.bin")
    text = json.dumps(json.loads(path.read_text()), indent=1)
    pos = text.index('"BAD"')
    line, column = text.count("\n", 0, pos) + 1, pos - text.rfind("\n", 0, pos)
    path.write_text(text.replace('"BAD"', token))
    json_path = {"NaN": "accessors[0].max[1]", "Infinity": "nodes[0].extras.x",
                 "-Infinity": "materials[0].pbrMetallicRoughness.metallicFactor",
                 "1e999": "nodes[0].translation[1]"}[token]
    message = f"JSON: {token} at line {line} column {column} ({json_path}): glTF allows only finite numbers"
    with pytest.raises(AssetError) as e:
        load_scene(path, isolate=False)
    assert message in str(e.value)
    if token == "NaN":
        assert_one_line_error(vkmorph("info", path), message)
