"""A corpus of broken inputs, generated here: each gives AssetError naming the place, never a crash."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import ROOT, asset
from vkmorph import AssetError, load_scene
from vkmorph.asset.model import SKINNED_VERTEX, STATIC_VERTEX, MeshPrimitiveAsset, MorphTargetAsset
from vkmorph.asset.validate import validate_primitive


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
    txt = tmp_path / "notes.gltf"
    txt.write_text("this is not a model\n")
    with pytest.raises(AssetError, match="Assimp cannot import") as e:
        load_scene(txt)
    assert str(txt) in str(e.value)
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
