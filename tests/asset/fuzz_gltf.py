"""Seeded mutator of glTF/GLB files: JSON values (indices, counts, types, names, URIs) and buffer bytes.

``python -m tests.asset.fuzz_gltf --seed S --count N --out DIR`` loads N mutants in this process (no isolation:
a native crash kills it, and the test notices) with every RuntimeWarning turned into an error, and prints one
JSON object: outcome counts and examples. Before each load the mutant is described in DIR/current.json, so a
crash names its input.
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import shutil
import struct
import sys
import time
import warnings
from collections import Counter
from pathlib import Path

import numpy as np

from tests.asset.gltf_build import skinned_morph_model, write_gltf

ROOT = Path(__file__).resolve().parents[2]
SHARED = ["SimpleMorph/SimpleMorph.gltf", "AnimatedMorphCube/AnimatedMorphCube.gltf",
          "MorphPrimitivesTest/MorphPrimitivesTest.gltf", "MorphStressTest/MorphStressTest.gltf",
          "SimpleSkin/SimpleSkin.gltf", "assimp_simple_skin/simple_skin.gltf", "assimp_simple_skin/quad_skin.glb",
          "RobotExpressive/RobotExpressive.glb"]
INTS = [-1, 0, 1, 2, 3, 4, 5, 7, 8, 255, 256, 65535, 2**31 - 1, 2**31, 2**32 + 1, 10**12]
STRINGS = ["", "SMOOTH", "STEP", "CUBICSPLINE", "weights", "rotation", "x" * 1100, "../outside.bin", "/etc/hostname",
           "data:application/octet-stream;base64,AAAA", "VEC3", "MAT4", "SCALAR"]
SPECIAL_F32 = [np.nan, np.inf, -np.inf, 0.0, -1.0, 1e38, 2.0, 0.5, -0.25]


def load_source(path: Path) -> tuple[dict, bytes]:
    """(json, buffer 0 bytes) of a .gltf/.glb (buffers beyond 0 are not used by these models)."""
    raw = path.read_bytes()
    if raw[:4] == b"glTF":
        n = struct.unpack_from("<I", raw, 12)[0]
        doc = json.loads(raw[20:20 + n])
        m = struct.unpack_from("<I", raw, 20 + n)[0]
        return doc, raw[28 + n:28 + n + m]
    doc = json.loads(raw)
    uri = doc["buffers"][0]["uri"]
    if uri.startswith("data:"):
        import base64

        return doc, base64.b64decode(uri.split(",", 1)[1])
    return doc, (path.parent / uri).read_bytes()


def _leaves(obj, path=()):
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield path + (k,), v
            yield from _leaves(v, path + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield path + (i,), v
            yield from _leaves(v, path + (i,))


def mutate_json(doc: dict, rng: random.Random) -> str:
    leaves = list(_leaves(doc))
    ints = [p for p, v in leaves if isinstance(v, int) and not isinstance(v, bool)]
    path, _ = rng.choice(leaves) if not ints or rng.random() < 0.4 else (rng.choice(ints), None)
    parent = doc
    for k in path[:-1]:
        parent = parent[k]
    key = path[-1]
    old = parent[key]
    op = rng.random()
    if op < 0.45 and isinstance(old, int) and not isinstance(old, bool):
        new = rng.choice([old + 1, old - 1, old * 2, old + rng.randint(2, 40)] + INTS)
    elif op < 0.55 and isinstance(parent, dict):
        del parent[key]
        return f"del {list(path)}"
    elif op < 0.62 and isinstance(old, list) and old:
        new = old[:-1] if rng.random() < 0.5 else old + [copy.deepcopy(old[-1])]
    elif op < 0.8:
        new = rng.choice(INTS + STRINGS)
    else:
        new = rng.choice([None, [], {}, True, 1.5, float("nan"), [1, 2], {"a": 1}, "x"])
    parent[key] = new
    return f"{list(path)} = {str(new)[:40]}"


def mutate_bytes(doc: dict, binary: bytearray, rng: random.Random) -> str:
    accs = [a for a in doc.get("accessors", []) if isinstance(a, dict) and "bufferView" in a]
    if accs and rng.random() < 0.8:
        a = rng.choice(accs)
        v = doc["bufferViews"][a["bufferView"]]
        base = v.get("byteOffset", 0) + a.get("byteOffset", 0)
        row = rng.randrange(max(a["count"], 1))
        stride = v.get("byteStride") or {5120: 1, 5121: 1, 5122: 2, 5123: 2, 5125: 4, 5126: 4}[a["componentType"]]
        off = base + row * stride
        if a["componentType"] == 5126:
            val = np.float32(rng.choice(SPECIAL_F32)).tobytes()
        else:
            size = {5120: 1, 5121: 1, 5122: 2, 5123: 2, 5125: 4}[a["componentType"]]
            val = rng.choice([0, 1, 2, 5, 255, 65535, 2**32 - 1, rng.randrange(256)]).to_bytes(8, "little")[:size]
        binary[off:off + len(val)] = val[: max(0, len(binary) - off)]
        return f"accessor bytes at {off} = {val.hex()}"
    off = rng.randrange(len(binary))
    binary[off] = rng.randrange(256)
    return f"byte {off} = {binary[off]}"


def make_mutant(src: Path, out: Path, rng: random.Random) -> tuple[Path, list[str]]:
    doc, binary = load_source(src)
    binary = bytearray(binary)
    kinds = sorted(rng.random() < 0.65 for _ in range(rng.randint(1, 3)))  # bytes first, on the pristine JSON
    what = [mutate_json(doc, rng) if is_json else mutate_bytes(doc, binary, rng) for is_json in kinds]
    glb = src.suffix == ".glb" or rng.random() < 0.15
    for f in out.iterdir():
        f.unlink() if f.is_file() else shutil.rmtree(f)
    if not isinstance(doc.get("buffers"), list) or not doc["buffers"] or not isinstance(doc["buffers"][0], dict):
        path = out / "m.gltf"
        path.write_text(json.dumps(doc))
        return path, what
    doc["buffers"][0].pop("uri", None) if glb else doc["buffers"][0].setdefault("uri", "m.bin")
    path = write_gltf(out / ("m.glb" if glb else "m.gltf"), doc, bytes(binary), glb=glb,
                      bin_name=doc["buffers"][0].get("uri") if isinstance(doc["buffers"][0].get("uri"), str)
                      and "/" not in doc["buffers"][0]["uri"] and not doc["buffers"][0]["uri"].startswith("data:")
                      else "m.bin")
    if glb and rng.random() < 0.2:  # header / chunk lengths
        raw = bytearray(path.read_bytes())
        k = rng.choice([8, 12, 20 + struct.unpack_from("<I", raw, 12)[0]])
        raw[k:k + 4] = struct.pack("<I", rng.choice([0, 1, len(raw) - 1, len(raw) + 1, 2**32 - 1]))
        path.write_bytes(bytes(raw[: rng.choice([len(raw), len(raw), len(raw) // 2])]))
        what.append(f"GLB bytes {k}..{k + 4} patched")
    return path, what


def sources(assets: Path, work: Path) -> list[Path]:
    base = work / "base"
    base.mkdir(parents=True, exist_ok=True)
    doc, binary = skinned_morph_model()
    out = [write_gltf(base / "base.gltf", doc, binary), write_gltf(base / "base.glb", doc, binary, glb=True),
           ROOT / "vkmorph" / "data" / "default_scene.gltf"]
    out += [assets / s for s in SHARED if (assets / s).exists()]
    return out


def run(seed: int, count: int, work: Path, assets: Path, budget_s: float) -> dict:
    from vkmorph import AssetError, load_scene

    warnings.simplefilter("error", RuntimeWarning)   # numpy warnings must not leak: make them fail loudly
    srcs = sources(assets, work)
    out = work / "mutant"
    out.mkdir(exist_ok=True)
    rng = random.Random(seed)
    outcomes: Counter = Counter()
    refused_by: Counter = Counter()   # AssetErrors by the stage that refused the file
    examples: dict[str, str] = {}
    failures: list[str] = []
    start = time.monotonic()
    done = 0
    for n in range(count):
        if time.monotonic() - start > budget_s:
            n -= 1  # this one did not run: "mutants" below counts the ones that did
            break
        done += 1
        src = rng.choice(srcs)
        path, what = make_mutant(src, out, rng)
        (work / "current.json").write_text(json.dumps({"n": n, "source": src.name, "mutations": what}))
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always", UserWarning)
                warnings.simplefilter("error", RuntimeWarning)
                load_scene(path, isolate=False)
            kind = "loaded with a warning" if caught else "loaded"
        except AssetError as exc:
            text = str(exc)
            kind = "AssetError"
            examples.setdefault(_category(text), f"{src.name}: {what} -> {text.replace(str(path), 'M')[:160]}")
            refused_by[_category(text)] += 1
        except BaseException as exc:  # noqa: BLE001 - this is what the test looks for
            kind = "other exception"
            failures.append(f"{src.name} {what}: {type(exc).__name__}: {exc}"[:400])
        outcomes[kind] += 1
    return {"seed": seed, "mutants": done, "seconds": round(time.monotonic() - start, 1),
            "outcomes": dict(outcomes), "refused_by": dict(refused_by), "failures": failures, "examples": examples}


def _category(text: str) -> str:
    """Coarse bucket of an AssetError message: which stage refused the file."""
    if "Assimp cannot import" in text:
        return "Assimp"
    if "crashed" in text:
        return "importer crashed"
    if any(k in text for k in ("mesh '", "primitive ", "animation '")):
        return "scene validation"
    return "glTF reader/validator"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=400)
    ap.add_argument("--budget", type=float, default=30.0, help="stop early after this many seconds")
    ap.add_argument("--out", required=True)
    ap.add_argument("--assets", default=str(ROOT.parent / "shared" / "assets"))
    args = ap.parse_args(argv)
    work = Path(args.out)
    work.mkdir(parents=True, exist_ok=True)
    result = run(args.seed, args.count, work, Path(args.assets), args.budget)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
