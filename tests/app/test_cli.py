"""The command-line contract: info --json keys, morph output vs the numpy reference, bad input -> exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from tests.gltf_ref import Gltf
from tests.helpers import ROOT, assert_one_line_error, asset, vkmorph
from vkmorph import load_scene
from vkmorph.morph.reference import morph_reference


def test_info_json_matches_the_file():
    path = asset("MorphStressTest", "MorphStressTest.gltf")
    r = vkmorph("info", path, "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    ref = Gltf(path)
    prims = list(ref.primitives())
    assert [p["vertex_count"] for p in d["primitives"]] == [ref.json["accessors"][gp["attributes"]["POSITION"]]
                                                            ["count"] for _, gp in prims]
    assert [p["index_count"] for p in d["primitives"]] == [ref.json["accessors"][gp["indices"]]["count"]
                                                           for _, gp in prims]
    assert d["primitives"][1]["target_names"] == ref.json["meshes"][0]["extras"]["targetNames"]
    assert [a["name"] for a in d["animations"]] == [a["name"] for a in ref.json["animations"]]
    assert all(a["morph_channels"] == ["Main"] and a["node_channels"] == [] for a in d["animations"])
    assert d["skins"] == []
    assert all(isinstance(p["delta_count"], int) for p in d["primitives"])


def test_info_lod_lists_triangles_per_level():
    """``info --lod``: per primitive the triangles of each level of detail (asset/lod.py), level 0 the file's, each
    level no more than the one before; without --lod the key is absent (info stays cheap)."""
    path = asset("RobotExpressive", "RobotExpressive.glb")
    d = json.loads(vkmorph("info", path, "--json", "--lod").stdout)
    for p in d["primitives"]:
        t = p["lod_triangles"]
        assert len(t) == 4 and t[0] == p["index_count"] // 3 and all(b <= a for a, b in zip(t, t[1:])) and t[-1] > 0
    assert sum(p["lod_triangles"][-1] for p in d["primitives"]) < 0.15 * sum(p["index_count"] // 3
                                                                             for p in d["primitives"])
    assert "lod_triangles" not in json.loads(vkmorph("info", path, "--json").stdout)["primitives"][0]
    r = vkmorph("info", path, "--lod")
    assert r.returncode == 0 and "LOD triangles: " in r.stdout


@pytest.mark.parametrize("model", [("RobotExpressive", "RobotExpressive.glb"), ("SimpleSkin", "SimpleSkin.gltf")])
def test_info_json_nodes_materials_rest_bounds_from_the_file(model):
    """Per primitive: the nodes instancing its mesh, its material's name and the POSITION accessor's min/max."""
    path = asset(*model)
    r = vkmorph("info", path, "--json")
    assert r.returncode == 0, r.stderr
    d, ref = json.loads(r.stdout), Gltf(path)
    got = iter(d["primitives"])
    mats = ref.json.get("materials", [])
    for m_i, mesh in enumerate(ref.json["meshes"]):
        nodes = [n.get("name") or f"nodes[{i}]" for i, n in enumerate(ref.json["nodes"]) if n.get("mesh") == m_i]
        for gp in mesh["primitives"]:
            p = next(got)
            acc = ref.json["accessors"][gp["attributes"]["POSITION"]]
            np.testing.assert_allclose(p["rest_bounds"], [acc["min"], acc["max"]], rtol=1e-6, atol=1e-6)
            assert p["nodes"] == nodes, (p["nodes"], nodes)
            if "material" in gp and mats[gp["material"]].get("name"):
                assert p["material"] == mats[gp["material"]]["name"], (p["material"], gp["material"])
            assert (p["skin"] is not None) == p["skinned"]


def test_info_on_bad_input_is_one_line_exit_2(tmp_path):
    for bad in (tmp_path / "missing.glb", tmp_path):
        r = vkmorph("info", bad)
        assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr


@pytest.mark.gpu
def test_morph_cli_weights_and_clip(tmp_path):
    path = asset("AnimatedMorphCube", "AnimatedMorphCube.gltf")
    out = tmp_path / "o.npz"
    r = vkmorph("morph", path, "--weights", "0.25,0.75", "--out", out)
    assert r.returncode == 0, r.stderr
    prim = load_scene(path).primitives[0]
    p, n, t = morph_reference(prim, [0.25, 0.75])
    with np.load(out) as z:
        np.testing.assert_allclose(z["p0/position"], p, atol=1e-5)
        np.testing.assert_allclose(z["p0/normal"], n, atol=1e-5)
        np.testing.assert_allclose(z["p0/tangent"], t[:, :3], atol=1e-5)
    r = vkmorph("morph", path, "--clip", "Square", "--time", "1.3", "--out", out)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("args,needle", [
    (["--clip", "NoSuchClip"], "unknown clip"),
    (["--weights", "0.5"], "2 targets"),
    (["--weights", "0.5,nan"], "non-finite"),
    (["--weights", "a,b"], "numbers"),
])
def test_morph_cli_bad_input(tmp_path, args, needle):
    out = tmp_path / "o.npz"
    r = vkmorph("morph", asset("AnimatedMorphCube", "AnimatedMorphCube.gltf"), *args, "--out", out)
    assert_one_line_error(r, needle, out)


def test_help_lists_every_command():
    r = vkmorph("--help")
    assert r.returncode == 0
    for cmd in ("demo", "info", "morph", "bench"):
        assert cmd in r.stdout


@pytest.mark.gpu
def test_demo_without_display_renders_pngs(tmp_path):
    env_display = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY")}
    r = subprocess.run([sys.executable, "-m", "vkmorph.app.cli", "demo", "--frames", "2", "--out-dir", tmp_path / "f",
                        "--screenshot", tmp_path / "shot.png"], capture_output=True, text=True, cwd=ROOT,
                       env={**env_display, "VKMORPH_VALIDATION": "1"}, timeout=900)
    assert r.returncode == 0, r.stderr
    assert "no display" in r.stderr
    assert (tmp_path / "f" / "frame_000.png").exists() and (tmp_path / "f" / "frame_001.png").exists()
    assert (tmp_path / "shot.png").exists() and "dispatched 2" in r.stdout


@pytest.mark.gpu
def test_bench_quick_runs_clean(tmp_path):
    """The benchmark tool runs under validation and reports its byte model; no timing is asserted here."""
    out = tmp_path / "b.json"
    r = vkmorph("bench", "--quick", "--json", out, "--markdown", tmp_path / "b.md")
    assert r.returncode == 0, r.stderr
    report = json.loads(out.read_text())
    rows = report["rows"]          # both delta formats of each quick case
    assert len(rows) >= 6 and {r["delta_format"] for r in rows} == {"full", "compact"}
    assert all(r["max_error"] < 1e-4 and r["copy_gbps"] > 0 and r["format_floor_us"] > 0 and r["morph_us"] > 0
               and r["work_floor_us"] > 0 and r["fraction_min"] <= r["roofline_fraction"] <= r["fraction_max"]
               for r in rows)
    assert "48 B base read + 36 B written" in report["byte_model"]
    assert [c["primitives"] for c in report["cpu_per_frame"]] == [1, 10, 100]
    assert {c["format"] for c in report["characters"]} == {"full", "compact"}
    assert all(c["roofline_fraction"] > 0 and c["floor_us"] > 0 and c["copy_gbps"] > 0 for c in report["characters"])
    assert all(0 < r["block_fill"] <= 1 and r["kernel"] in ("workgroup", "per-vertex") for r in rows)


@pytest.mark.gpu
def test_morph_cli_skinned_matches_reference(tmp_path):
    from vkmorph.anim.player import AnimationPlayer
    from vkmorph.anim.skeleton import Skeleton
    from vkmorph.morph.reference import skin_reference
    from vkmorph.morph.state import SceneMorphPose

    path = asset("SimpleSkin", "SimpleSkin.gltf")
    out = tmp_path / "s.npz"
    r = vkmorph("morph", path, "--clip", "0", "--time", "2.25", "--skinned", "--out", out)
    assert r.returncode == 0, r.stderr
    scene = load_scene(path)
    skel = Skeleton(scene)
    player = AnimationPlayer(scene, SceneMorphPose(scene), skel)
    player.apply(2.25)
    (prim,) = scene.primitives
    node = next(i for i, n in enumerate(scene.nodes) if n.mesh == 0)
    v = prim.vertices
    p, _, _ = skin_reference(v["position"], v["normal"], v["tangent"], v["joints"], v["weights"],
                             skel.skin_matrices(prim.skin, node))
    with np.load(out) as z:
        np.testing.assert_allclose(z["p0/position"], p, atol=1e-5)
    r = vkmorph("morph", asset("AnimatedMorphCube", "AnimatedMorphCube.gltf"), "--skinned", "--out", out)
    assert r.returncode == 2 and "no skinned primitive" in r.stderr


@pytest.mark.gpu
def test_render_cli_writes_png(tmp_path):
    out = tmp_path / "r.png"
    r = vkmorph("render", asset("SimpleSkin", "SimpleSkin.gltf"), "--time", "1.5", "--size", "64x48", "--out", out)
    assert r.returncode == 0, r.stderr
    from PIL import Image

    img = np.asarray(Image.open(out))
    assert img.shape == (48, 64, 4) and img[..., :3].std() > 5


@pytest.mark.parametrize("args,needle", [
    (["--size", "big"], "--size"),
    (["--size", "0x10"], "out of range"),
    (["--clip", "nope"], "unknown clip"),
    (["--time", "nan"], "finite"),
])
def test_render_cli_bad_input(tmp_path, args, needle):
    out = tmp_path / "r.png"
    r = vkmorph("render", asset("SimpleSkin", "SimpleSkin.gltf"), *args, "--out", out)
    assert_one_line_error(r, needle, out)
    r = vkmorph("render", tmp_path / "missing.glb", "--out", out)
    assert r.returncode == 2 and not out.exists()


@pytest.mark.parametrize("args,needle", [
    (["info"], "required: file"),
    (["frobnicate"], "invalid choice"),
    (["render", "x.glb", "--out", "o.png", "--size"], "expected one argument"),
])
def test_argument_errors_are_one_line(args, needle):
    """argparse's usage + error pair is folded into the CLI's contract: one stderr line, exit 2."""
    assert_one_line_error(vkmorph(*args), needle)
