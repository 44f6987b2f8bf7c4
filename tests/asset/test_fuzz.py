"""Seeded fuzz: mutants of the shared models and a generated skinned+morph model (JSON values, buffer bytes,
GLB lengths) either load or raise AssetError: no other exception, no numpy RuntimeWarning, no native crash.

The mutants run in one child process without isolation, so a crash in Assimp that the validator let through
kills that process and fails this test with the mutant that did it (tests/asset/fuzz_gltf.py)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.helpers import ASSETS, ROOT

SEED, COUNT, BUDGET_S = 20261130, 2000, 20.0


def test_mutants_load_or_raise_asset_error(tmp_path):
    r = subprocess.run([sys.executable, "-m", "tests.asset.fuzz_gltf", "--seed", str(SEED), "--count", str(COUNT),
                        "--budget", str(BUDGET_S), "--out", str(tmp_path), "--assets", str(ASSETS)],
                       cwd=ROOT, capture_output=True, text=True, timeout=300)
    current = tmp_path / "current.json"
    last = current.read_text() if current.exists() else "none"
    assert r.returncode == 0, f"fuzz process died (status {r.returncode}) on mutant {last}\n{r.stderr[-2000:]}"
    result = json.loads(r.stdout)
    print(json.dumps({k: result[k] for k in ("seed", "mutants", "seconds", "outcomes", "refused_by")}))
    assert not result["failures"], "\n".join(result["failures"][:20])
    assert result["mutants"] >= 200, result  # the budget must still leave a meaningful run
    out = result["outcomes"]
    assert out.get("AssetError", 0) + out.get("loaded", 0) + out.get("loaded with a warning", 0) == result["mutants"]
    assert out.get("loaded", 0) > 0 and out.get("AssetError", 0) > 0  # the mutator neither too weak nor too wild
