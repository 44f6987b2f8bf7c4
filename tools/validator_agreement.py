"""Agreement of vkmorph's glTF reading with the Khronos glTF-Validator (npm ``gltf-validator``).

    python tools/validator_agreement.py NODE_MODULES_DIR [--mutants N] [--seed S]

Runs the validator (tools/gltf_validator.cjs) over the test models, their encoder variants
(tests/assets/variants) and N fuzz mutants (tests/asset/fuzz_gltf.py), loads each file with vkmorph, and prints
the four counts: validator accepts / vkmorph loads, accepts / refuses (each with its line), rejects / refuses,
rejects / loads (with or without a warning). A file the validator rejects should be refused or loaded with a
warning naming the problem; one it accepts should load or be refused for a named, documented limitation.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("node_modules")
    ap.add_argument("--mutants", type=int, default=200)
    ap.add_argument("--seed", type=int, default=24)
    a = ap.parse_args(argv)
    from tests.asset.fuzz_gltf import make_mutant, sources
    from vkmorph import AssetError, load_scene

    assets = ROOT / "tests" / "assets"
    files = sorted(p for p in assets.glob("*/*") if p.suffix in (".gltf", ".glb"))
    work = Path(tempfile.mkdtemp(prefix="vkmorph-agree-"))
    srcs = sources(assets, work)
    rng = random.Random(a.seed)
    for k in range(a.mutants):
        d = work / f"m{k}"
        d.mkdir()
        files.append(make_mutant(rng.choice(srcs), d, rng)[0])
    env = {**os.environ, "NODE_PATH": str(Path(a.node_modules).resolve())}
    r = subprocess.run(["node", str(ROOT / "tools" / "gltf_validator.cjs"), *map(str, files)], capture_output=True,
                       text=True, env=env, check=True)
    verdicts = json.loads(r.stdout)
    rows = {"accepted/loaded": [], "accepted/refused": [], "rejected/refused": [], "rejected/loaded": []}
    for f in files:
        v = verdicts[str(f)]
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                load_scene(f, isolate=True)
                outcome, line = "loaded", "; ".join(str(w.message) for w in caught)[:200]
            except AssetError as exc:
                outcome, line = "refused", str(exc)[:200]
        key = f"{'accepted' if v['errors'] == 0 else 'rejected'}/{outcome}"
        rows[key].append((f, v["first"], line))
    for key, items in rows.items():
        print(f"{key}: {len(items)}")
    for key in ("accepted/refused", "rejected/loaded"):
        for f, first, line in rows[key]:
            print(f"  {key}: {f.relative_to(ROOT) if f.is_relative_to(ROOT) else f.name}\n"
                  f"    validator: {first}\n    vkmorph: {line or '(no warning)'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
