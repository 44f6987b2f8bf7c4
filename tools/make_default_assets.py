#!/usr/bin/env python3
"""Write the built-in default scene (seed 003): three tubes side by side on a ground plane.

  red    blend shapes only (targets "Bulge" and "Pinch", weights animated)
  blue   skinning only (two bones, the upper one swings)
  purple both on one mesh

The scene is a single self-contained glTF (buffer as a data URI) under vkmorph/data/, loaded by
``vkmorph.load_scene()`` through the same Assimp importer as any user file. Deterministic output, so the
committed file only changes when this script does.
"""

from __future__ import annotations

import base64
import json
import math
import sys
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parents[1] / "vkmorph" / "data" / "default_scene.gltf"
RINGS, SEGMENTS, RADIUS, HEIGHT = 9, 16, 0.3, 2.0


def tube():
    ys = np.linspace(0.0, HEIGHT, RINGS)
    angles = np.linspace(0.0, 2 * math.pi, SEGMENTS + 1)  # duplicate seam column for UVs
    pos, nrm, uv = [], [], []
    for r, y in enumerate(ys):
        for s, a in enumerate(angles):
            pos.append((RADIUS * math.cos(a), y, RADIUS * math.sin(a)))
            nrm.append((math.cos(a), 0.0, math.sin(a)))
            uv.append((s / SEGMENTS, r / (RINGS - 1)))
    idx = []
    cols = SEGMENTS + 1
    for r in range(RINGS - 1):
        for s in range(SEGMENTS):
            a, b, c, d = r * cols + s, r * cols + s + 1, (r + 1) * cols + s, (r + 1) * cols + s + 1
            idx += [a, c, b, b, c, d]
    return (np.array(pos, np.float32), np.array(nrm, np.float32), np.array(uv, np.float32),
            np.array(idx, np.uint16))


def targets(pos):
    y = pos[:, 1] / HEIGHT
    radial = pos.copy()
    radial[:, 1] = 0
    radial /= np.linalg.norm(radial, axis=1, keepdims=True)
    bulge = (radial * (0.25 * np.sin(math.pi * y))[:, None]).astype(np.float32)
    pinch = (-radial * (0.15 * np.clip(1 - abs(y - 0.75) * 4, 0, 1))[:, None]).astype(np.float32)
    return [bulge, pinch]


def skin_attrs(pos):
    t = np.clip((pos[:, 1] - 0.6) / 0.8, 0.0, 1.0).astype(np.float32)  # blend zone around the joint at y=1
    joints = np.zeros((len(pos), 4), np.uint16)
    joints[:, 1] = 1
    weights = np.zeros((len(pos), 4), np.float32)
    weights[:, 0] = 1 - t
    weights[:, 1] = t
    return joints, weights


class Builder:
    def __init__(self):
        self.blob = bytearray()
        self.views, self.accessors = [], []

    def add(self, arr: np.ndarray, ctype: int, typ: str, target: int | None = None, minmax=False) -> int:
        while len(self.blob) % 4:
            self.blob.append(0)
        view = {"buffer": 0, "byteOffset": len(self.blob), "byteLength": arr.nbytes}
        if target:
            view["target"] = target
        self.views.append(view)
        self.blob += arr.tobytes()
        acc = {"bufferView": len(self.views) - 1, "componentType": ctype, "count": len(arr), "type": typ}
        if minmax:
            acc["min"] = arr.min(axis=0).tolist() if arr.ndim > 1 else [float(arr.min())]
            acc["max"] = arr.max(axis=0).tolist() if arr.ndim > 1 else [float(arr.max())]
        self.accessors.append(acc)
        return len(self.accessors) - 1


def build() -> dict:
    F, U16 = 5126, 5123
    b = Builder()
    pos, nrm, uv, idx = tube()
    a_pos = b.add(pos, F, "VEC3", 34962, minmax=True)
    a_nrm = b.add(nrm, F, "VEC3", 34962)
    a_uv = b.add(uv, F, "VEC2", 34962)
    a_idx = b.add(idx, U16, "SCALAR", 34963)
    a_tg = [b.add(d, F, "VEC3", minmax=True) for d in targets(pos)]
    j, w = skin_attrs(pos)
    a_j, a_w = b.add(j, U16, "VEC4", 34962), b.add(w, F, "VEC4", 34962)
    ibm = np.stack([np.eye(4, dtype=np.float32), np.eye(4, dtype=np.float32)])
    ibm[1][3, 1] = -1.0  # column-major storage: translation (0, -1, 0) of the upper joint's inverse bind
    a_ibm = b.add(ibm.reshape(2, 16), F, "MAT4")

    base_attrs = {"POSITION": a_pos, "NORMAL": a_nrm, "TEXCOORD_0": a_uv}
    morph_targets = [{"POSITION": a} for a in a_tg]
    names = ["Bulge", "Pinch"]
    meshes = [
        {"name": "MorphTube", "primitives": [{"attributes": base_attrs, "indices": a_idx, "material": 0,
                                              "targets": morph_targets}],
         "weights": [0.0, 0.0], "extras": {"targetNames": names}},
        {"name": "SkinTube", "primitives": [{"attributes": {**base_attrs, "JOINTS_0": a_j, "WEIGHTS_0": a_w},
                                             "indices": a_idx, "material": 1}]},
        {"name": "ComboTube", "primitives": [{"attributes": {**base_attrs, "JOINTS_0": a_j, "WEIGHTS_0": a_w},
                                              "indices": a_idx, "material": 2, "targets": morph_targets}],
         "weights": [0.0, 0.0], "extras": {"targetNames": names}},
    ]
    nodes = [
        {"name": "Red", "mesh": 0, "translation": [-1.5, 0, 0]},                                  # 0
        {"name": "Blue", "children": [2, 3], "translation": [0, 0, 0]},                          # 1
        {"name": "BlueMesh", "mesh": 1, "skin": 0},                                              # 2
        {"name": "BlueBone0", "children": [4]},                                                  # 3
        {"name": "BlueBone1", "translation": [0, 1, 0]},                                         # 4
        {"name": "Purple", "children": [6, 7], "translation": [1.5, 0, 0]},                      # 5
        {"name": "PurpleMesh", "mesh": 2, "skin": 1},                                            # 6
        {"name": "PurpleBone0", "children": [8]},                                                # 7
        {"name": "PurpleBone1", "translation": [0, 1, 0]},                                       # 8
    ]
    skins = [{"joints": [3, 4], "inverseBindMatrices": a_ibm}, {"joints": [7, 8], "inverseBindMatrices": a_ibm}]
    # animation: 4 s loop; weights rise and fall (LINEAR), the upper bone swings +-40 degrees about Z
    times = np.linspace(0.0, 4.0, 9).astype(np.float32)
    phase = np.sin(2 * math.pi * times / 4.0)
    wk = np.stack([np.clip(phase, 0, 1), np.clip(-phase, 0, 1)], axis=1).astype(np.float32).reshape(-1)
    ang = np.radians(40.0) * phase
    quats = np.stack([np.zeros_like(ang), np.zeros_like(ang), np.sin(ang / 2), np.cos(ang / 2)],
                     axis=1).astype(np.float32)
    a_t = b.add(times, F, "SCALAR", minmax=True)
    a_wk = b.add(wk, F, "SCALAR")
    a_q = b.add(quats, F, "VEC4")
    anim = {"name": "Wave", "samplers": [{"input": a_t, "output": a_wk, "interpolation": "LINEAR"},
                                         {"input": a_t, "output": a_q, "interpolation": "LINEAR"}],
            "channels": [{"sampler": 0, "target": {"node": 0, "path": "weights"}},
                         {"sampler": 0, "target": {"node": 6, "path": "weights"}},
                         {"sampler": 1, "target": {"node": 4, "path": "rotation"}},
                         {"sampler": 1, "target": {"node": 8, "path": "rotation"}}]}
    materials = [{"name": n, "pbrMetallicRoughness": {"baseColorFactor": c, "metallicFactor": 0.0,
                                                      "roughnessFactor": 0.6}}
                 for n, c in (("Red", [0.85, 0.15, 0.12, 1]), ("Blue", [0.12, 0.3, 0.9, 1]),
                              ("Purple", [0.6, 0.2, 0.75, 1]))]
    uri = "data:application/octet-stream;base64," + base64.b64encode(bytes(b.blob)).decode()
    return {"asset": {"version": "2.0", "generator": "vkmorph tools/make_default_assets.py"},
            "scene": 0, "scenes": [{"nodes": [0, 1, 5]}], "nodes": nodes, "meshes": meshes, "skins": skins,
            "animations": [anim], "materials": materials,
            "buffers": [{"byteLength": len(b.blob), "uri": uri}], "bufferViews": b.views,
            "accessors": b.accessors}


def main() -> int:
    OUT.parent.mkdir(parents=True, exist_ok=True)
    OUT.write_text(json.dumps(build(), indent=1) + "\n")
    print(f"wrote {OUT.relative_to(Path.cwd()) if OUT.is_relative_to(Path.cwd()) else OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
