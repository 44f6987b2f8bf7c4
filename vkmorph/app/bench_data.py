"""The bench's inputs: synthetic primitives and scenes, the third-party models it finds, and the cases
(``Case``, ``standard_cases``) the roofline rows and the output-slots section run."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..asset.model import STATIC_VERTEX, MeshAsset, MeshPrimitiveAsset, MorphTargetAsset, NodeAsset, SceneAsset


@dataclass
class Case:
    vertices: int
    targets: int
    coverage: float
    active: int
    pattern: str                 # random | clustered | model name
    instances: int = 1


def synthetic_primitive(V: int, T: int, coverage: float, pattern: str = "random", seed: int = 0
                        ) -> MeshPrimitiveAsset:
    """V vertices, T targets each moving ``coverage`` of the vertices: ``random`` vertices, or ``clustered``
    (three contiguous runs of the vertex order per target, like a face rig's regions)."""
    rng = np.random.default_rng(seed)
    v = np.zeros(V, STATIC_VERTEX)
    v["position"] = rng.random((V, 3), np.float32)
    v["normal"] = (0.0, 0.0, 1.0)
    v["tangent"] = (1.0, 0.0, 0.0, 1.0)
    v["texcoord"] = v["position"][:, :2]
    n = max(1, int(V * coverage))
    targets = []
    for k in range(T):
        if pattern == "clustered":
            runs = np.diff(np.r_[0, np.sort(rng.integers(0, n + 1, 2)), n])
            idx = np.concatenate([np.arange(s, s + r) for s, r in zip(rng.integers(0, V - runs + 1), runs)])
            idx = np.unique(idx)
        else:
            idx = np.flatnonzero(rng.random(V) < coverage) if V > 4096 else rng.choice(V, n, replace=False)
        d = np.zeros((V, 3), np.float32)
        d[idx] = rng.normal(0, 0.01, (len(idx), 3))
        nd = np.zeros((V, 3), np.float32)
        nd[idx] = rng.normal(0, 0.05, (len(idx), 3))
        targets.append(MorphTargetAsset(f"t{k}", d, nd, None))
    return MeshPrimitiveAsset(vertices=v, indices=np.zeros(0, np.uint32), morph_targets=targets)


def synthetic_scene(prims: list[MeshPrimitiveAsset]) -> SceneAsset:
    """One node per primitive; the same primitive object may repeat (instances of one mesh)."""
    meshes, index = [], {}
    for p in prims:
        if id(p) not in index:
            index[id(p)] = len(meshes)
            meshes.append(MeshAsset(f"m{len(meshes)}", [p]))
    return SceneAsset(nodes=[NodeAsset(f"n{i}", mesh=index[id(p)]) for i, p in enumerate(prims)],
                      meshes=meshes, skins=[], animations=[], roots=list(range(len(prims))))


MODELS = {"MorphStressTest": "MorphStressTest/MorphStressTest.gltf",
          "RobotExpressive": "RobotExpressive/RobotExpressive.glb", "SimpleMorph": "SimpleMorph/SimpleMorph.gltf"}


def find_model(name: str) -> Path | None:
    """A third-party model: $VKMORPH_ASSETS, the repository's tests/assets, or ../shared/assets."""
    root = Path(__file__).resolve().parents[2]
    folders = [os.environ.get("VKMORPH_ASSETS"), root / "tests" / "assets", root.parent / "shared" / "assets"]
    for folder in folders:
        if folder and (Path(folder) / MODELS[name]).is_file():
            return Path(folder) / MODELS[name]
    return None


def model_primitives(name: str) -> list[MeshPrimitiveAsset]:
    """The morphing primitives of a third-party model (MorphStressTest, RobotExpressive); [] when absent."""
    from ..asset.importer import load_scene

    path = find_model(name)
    if path is None:
        return []
    scene = load_scene(str(path))
    return [p for m in scene.meshes for p in m.primitives if p.morph_targets]


def standard_cases(quick: bool, discrete: bool) -> list[Case]:
    if quick:
        return [Case(5_000, 8, 0.25, 5, "random"), Case(50_000, 52, 0.25, 5, "random"),
                Case(50_000, 52, 0.05, 52, "clustered"), Case(0, 0, 0.0, 0, "MorphStressTest", 16)]
    cases = [Case(50_000, 52, 0.25, 5, "random")]
    for V in (500_000, 2_000_000):
        for pattern in ("random", "clustered"):
            cases += [Case(V, 52, 0.25, 5, pattern), Case(V, 52, 0.05, 52, pattern)]
    cases += [Case(500_000, 200, 0.05, 1, "clustered"), Case(500_000, 8, 1.0, 8, "random"),
              Case(0, 0, 0.0, 0, "MorphStressTest", 256)]
    if discrete:
        cases += [Case(5_000_000, 52, 0.05, 5, "clustered")]
    return cases
