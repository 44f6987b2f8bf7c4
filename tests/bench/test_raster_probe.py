"""bench/raster_probe.py (issue 25) runs its --quick set on lavapipe, its validation child included, and its JSON
holds every variant at every N with the triangles the mesh's own LOD index lists give (x N), the draws each
structure implies, and a passing depth check; its closing paragraph is computed from the rows. No speed is
asserted."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import ROOT, asset

sys.path.insert(0, str(ROOT / "bench"))
import raster_probe as P  # noqa: E402


def _robot_counts():
    """(coarsest-level triangles, full triangles, materials) of RobotExpressive, from the asset and lod modules."""
    from vkmorph import load_scene
    from vkmorph.asset.lod import primitive_lods

    scene = load_scene(str(asset("RobotExpressive", "RobotExpressive.glb")))
    prims = [p for n in scene.nodes if n.mesh is not None for p in scene.meshes[n.mesh].primitives]
    lod = sum(len(primitive_lods(p)[-1]) for p in prims) // 3
    full = sum(len(p.indices) for p in prims) // 3
    return lod, full, len(prims), len({p.material.name for p in prims})


@pytest.mark.gpu
def test_quick_run_json(tmp_path, monkeypatch):
    monkeypatch.setenv("VKMORPH_ASSETS", str(asset("RobotExpressive", "RobotExpressive.glb").parents[1]))
    out = tmp_path / "probe.json"
    proc = subprocess.run([sys.executable, str(ROOT / "bench" / "raster_probe.py"), "--quick", "--json", str(out)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    res = json.loads(out.read_text())
    lod, full, n_prims, n_mats = _robot_counts()
    assert (lod, full, n_prims) == (322, 3237, 19)
    rows = res["rows"]
    assert sorted({r["instances"] for r in rows}) == list(P.COUNTS_QUICK)
    names = {v.name for v in P.VARIANTS}
    for N in P.COUNTS_QUICK:
        got = {r["variant"]: r for r in rows if r["instances"] == N}
        assert set(got) == names, names ^ set(got)
        for name, r in got.items():
            assert "skipped" not in r, r
            per = lod if r["level"] == "lod" else full
            assert r["triangles"] == per * N and r["indices_per_instance"] == 3 * per, (name, r["triangles"])
            groups = {"split": n_prims, "material": n_mats, "merged": 1}[r["structure"]]
            chunks = -(-N // res["chunk"]) if r["chunked"] else 1
            assert r["draws"] == (1 if r["vin"] == "flat" else groups * chunks), name
            assert r["instance_draws"] == (N if r["vin"] == "flat" else groups * N), name
            assert r["check_ok"], r
            assert (r["forward_coverage"] == 0) == (r["coverage"] == "offscreen"), name
            for p in ("shadow", "forward"):
                assert np.isfinite(r[f"{p}_ms"]) and r[f"{p}_ms"] > 0
                assert r[f"{p}_ns_per_triangle"] == pytest.approx(r[f"{p}_ms"] * 1e6 / r["triangles"])
            if r["index"] == "compact":        # re-indexed 0..k-1: every vertex of the range is used
                assert r["distinct_vertices"] == r["vertices_per_instance"] == r["index_span"], name
    assert res["chunk"] == min(P.COUNTS_QUICK) and any(r["chunked"] and r["draws"] > n_prims for r in rows)
    v = res["validation"]
    assert v["messages"] == [] and not v["leaks"] and v["check_failures"] == []
    assert v["variants_run"] == len(P.VARIANTS) and v["count"] == P.VALIDATE_COUNT
    assert res["summary"].startswith("What this shows") and P.BASE.name in res["summary"]


def _row(variant, N, ms, triangles=322):
    draws = {"split": 19, "material": 3, "merged": 1}[variant.structure]
    return {"variant": variant.name, **variant.__dict__, "instances": N, "triangles": triangles * N,
            "shadow_ms": ms / 2, "forward_ms": ms / 2, "draws": draws, "instance_draws": draws * N,
            "shadow_ns_per_instance_draw": ms / 2 * 1e6 / (draws * N)}


def test_findings_follow_the_numbers():
    base, merged, off = P.BASE, P.VARIANTS[2], P.VARIANTS[7]
    assert merged.structure == "merged" and off.coverage == "offscreen"
    rows = [_row(base, 1000, 1.0), _row(base, 10000, 50.0),        # 5x the time per instance: superlinear
            _row(merged, 1000, 0.5), _row(merged, 10000, 2.5),     # 0.5x: sublinear
            _row(off, 1000, 0.9), _row(off, 10000, 45.0)]
    g = P.growth(rows, base.name)
    assert g[0] == pytest.approx(5.0) and g[3:] == (1000, 10000)
    text = P.findings(rows)
    assert "grows 5.00x (superlinear; shadow 5.00x, forward 5.00x)" in text
    assert f"remove the superlinearity: {merged.name} (0.50x" in text
    assert f"keep it: {off.name} (5.00x)" in text
    assert "before rasterization" in text             # off screen costs 0.9x the base at N max
    assert "cost 20.00x the single merged draw for 19x the instance-draws" in text
    assert "follows the instance-draws" in text
    rows[1]["shadow_ms"] = rows[1]["forward_ms"] = 5.0    # now the base is linear too
    text = P.findings(rows)
    assert "not superlinear" in text and "remove the superlinearity" not in text
