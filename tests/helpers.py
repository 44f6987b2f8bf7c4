"""Helpers shared by test modules. Test modules never import each other: what two of them need lives here
(plain functions and constants) or in conftest.py (fixtures, and the one ``gpu`` marker's skip)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
ASSETS = Path(os.environ.get("VKMORPH_ASSETS", ROOT / "tests" / "assets"))

# every shared glTF model: (folder, file)
GLTF_ASSETS = [
    ("SimpleMorph", "SimpleMorph.gltf"),
    ("AnimatedMorphCube", "AnimatedMorphCube.gltf"),
    ("MorphPrimitivesTest", "MorphPrimitivesTest.gltf"),
    ("MorphStressTest", "MorphStressTest.gltf"),
    ("SimpleSkin", "SimpleSkin.gltf"),
    ("assimp_simple_skin", "simple_skin.gltf"),
    ("assimp_simple_skin", "quad_skin.glb"),
    ("RobotExpressive", "RobotExpressive.glb"),
]

_gpu_reason: list[str | None] = []


def vulkan_unavailable_reason() -> str | None:
    """None when a Vulkan ICD exists; else why GPU tests are skipped (the only reason they may skip).
    Used by conftest.py's ``gpu`` marker; tests mark themselves instead of calling it."""
    if not _gpu_reason:
        reason = None
        try:
            from vkmorph.gpu.context import Context

            Context.create(validation=False).destroy()
        except Exception as exc:  # noqa: BLE001 - reported as the skip reason
            msg = str(exc)
            reason = msg if ("driver" in msg or "loader" in msg or "physical device" in msg) else None
            if reason is None:
                raise
        _gpu_reason.append(reason)
    return _gpu_reason[0]


def asset(*parts: str) -> Path:
    """A third-party test model; the test skips (an asset skip) when it is absent."""
    p = ASSETS.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared asset {p} not present")
    return p


def random_prim(rng, V, T, density, with_normals=True):
    """A static primitive of V random vertices and T random targets, each touching a ``density`` fraction."""
    from vkmorph.asset.model import STATIC_VERTEX, MeshPrimitiveAsset, MorphTargetAsset

    v = np.zeros(V, STATIC_VERTEX)
    v["position"] = rng.normal(size=(V, 3))
    n = rng.normal(size=(V, 3))
    v["normal"] = n / np.linalg.norm(n, axis=1, keepdims=True)
    t = rng.normal(size=(V, 3))
    v["tangent"][:, :3] = t / np.linalg.norm(t, axis=1, keepdims=True)
    v["tangent"][:, 3] = rng.choice([-1.0, 1.0], V)
    v["texcoord"] = rng.random((V, 2))
    targets = []
    for k in range(T):
        mask = rng.random(V) < density
        d = np.where(mask[:, None], rng.normal(size=(V, 3)) * 0.1, 0).astype(np.float32)
        nd = np.where(mask[:, None], rng.normal(size=(V, 3)) * 0.1, 0).astype(np.float32) if with_normals else None
        td = np.where(mask[:, None], rng.normal(size=(V, 3)) * 0.1, 0).astype(np.float32) if with_normals else None
        targets.append(MorphTargetAsset(f"t{k}", d, nd, td))
    idx = np.arange(V - V % 3, dtype=np.uint32)
    return MeshPrimitiveAsset(vertices=v, indices=idx, morph_targets=targets)


def vkmorph(*args, validation="1"):
    """Run the ``vkmorph`` CLI in a child process (in the repo, validation on by default)."""
    env = {**os.environ, "VKMORPH_VALIDATION": validation}
    return subprocess.run([sys.executable, "-m", "vkmorph.app.cli", *map(str, args)], capture_output=True,
                          text=True, cwd=ROOT, env=env, timeout=900)   # a safety net, not a speed claim


def assert_one_line_error(r, needle: str, out=None) -> None:
    """Exit 2, one stderr line containing ``needle``, and no output file."""
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], r.stderr
    assert out is None or not out.exists()
