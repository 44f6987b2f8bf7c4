"""Every shared asset: the importer agrees with the glTF file's own JSON and accessors."""

from __future__ import annotations

import numpy as np
import pytest

from tests.gltf_ref import Gltf
from tests.helpers import GLTF_ASSETS, asset
from vkmorph import load_scene


def top4_by_hand(joints_sets, weights_sets):
    """Per vertex, in plain Python: drop zeros, four largest (ties: lower joint), renormalize."""
    out_j = []
    for js, ws in zip(joints_sets, weights_sets):
        pairs = [(float(w), int(j)) for j, w in zip(js, ws) if w > 0]
        pairs.sort(key=lambda p: (-p[0], p[1]))
        # the same joint listed twice in a file sums (assimp merges per bone)
        merged: dict[int, float] = {}
        for w, j in pairs:
            merged[j] = merged.get(j, 0.0) + w
        pairs = sorted(((w, j) for j, w in merged.items()), key=lambda p: (-p[0], p[1]))[:4]
        s = sum(w for w, _ in pairs)
        out_j.append({j: w / s for w, j in pairs})
    return out_j


@pytest.mark.parametrize("folder,name", GLTF_ASSETS, ids=[n for _, n in GLTF_ASSETS])
def test_counts_names_deltas_and_skins_match_the_file(folder, name):
    path = asset(folder, name)
    ref = Gltf(path)
    scene = load_scene(path)
    prims = scene.primitives
    gl_prims = list(ref.primitives())
    assert len(prims) == len(gl_prims)
    for p, (mesh, gp) in zip(prims, gl_prims):
        pos = ref.accessor(gp["attributes"]["POSITION"])
        assert p.vertex_count == len(pos)
        np.testing.assert_allclose(p.vertices["position"], pos, atol=1e-6)
        if "indices" in gp:
            idx = ref.accessor(gp["indices"]).reshape(-1)
            np.testing.assert_array_equal(p.indices, idx)
        targets = gp.get("targets", [])
        assert len(p.morph_targets) == len(targets)
        names = (mesh.get("extras") or {}).get("targetNames")
        if names:
            assert p.target_names == names
        for t, gt in zip(p.morph_targets, targets):
            np.testing.assert_allclose(t.position_deltas, ref.accessor(gt["POSITION"]), atol=1e-6)
            if "NORMAL" in gt and t.normal_deltas is not None:
                np.testing.assert_allclose(t.normal_deltas, ref.accessor(gt["NORMAL"]), atol=1e-6)
        if "JOINTS_0" in gp["attributes"]:
            assert p.is_skinned
            sets = sorted(k for k in gp["attributes"] if k.startswith("JOINTS_"))
            js = np.concatenate([ref.accessor(gp["attributes"][k]) for k in sets], axis=1)
            ws = np.concatenate([ref.accessor(gp["attributes"][k.replace("JOINTS", "WEIGHTS")]) for k in sets],
                                axis=1)
            expected = top4_by_hand(js, ws)
            truncated = sum(1 for row in ws if np.count_nonzero(row) > 4)
            assert p.truncated_influences == truncated
            for v, exp in enumerate(expected):
                got = {int(j): float(w) for j, w in zip(p.vertices["joints"][v], p.vertices["weights"][v])
                       if w > 0}
                assert got.keys() == exp.keys(), f"vertex {v}"
                for j in exp:
                    assert got[j] == pytest.approx(exp[j], abs=1e-5)
    skins = ref.json.get("skins", [])
    assert sorted(len(s.joints) for s in scene.skins) == sorted(len(s["joints"]) for s in skins)
    assert len(scene.animations) == len(ref.json.get("animations", []))
    for clip, ga in zip(scene.animations, ref.json.get("animations", [])):
        if "name" in ga:
            assert clip.name == ga["name"]
        last = max(float(ref.accessor(s["input"]).max()) for s in ga["samplers"])
        assert clip.duration == pytest.approx(last, abs=1e-3)


def test_fbx_imports_with_normalized_weights():
    scene = load_scene(asset("FBX_huesitos", "huesitos.fbx"))
    (p,) = scene.primitives
    assert p.is_skinned and len(scene.skins[p.skin].joints) == 9
    np.testing.assert_allclose(p.vertices["weights"].sum(axis=1), 1.0, atol=1e-5)
    clip = scene.animations[0]
    assert clip.duration == pytest.approx(39 / 25, abs=0.05) and clip.node_channels


def test_default_scene_has_red_blue_purple():
    scene = load_scene()
    kinds = [(bool(p.morph_targets), p.is_skinned) for p in scene.primitives]
    assert kinds == [(True, False), (False, True), (True, True)]
    assert scene.primitives[0].target_names == ["Bulge", "Pinch"]
    assert scene.animations[0].morph_channels and scene.animations[0].node_channels
