"""A tiny glTF 2.0 writer for tests that generate their own small files (json + numpy only, one embedded buffer).

Tests build exactly the case they need (no normals, negative default weights, STEP/CUBICSPLINE samplers,
vertices without joint weights) and import it through the real importer.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np

FLOAT, UINT16, UINT32 = 5126, 5123, 5125
_TYPES = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4", 16: "MAT4"}


class GltfWriter:
    def __init__(self):
        self.blob = bytearray()
        self.doc: dict = {"asset": {"version": "2.0"}, "scene": 0, "scenes": [{"nodes": []}], "nodes": [],
                          "meshes": [], "accessors": [], "bufferViews": [], "buffers": []}

    def accessor(self, arr, ctype: int = FLOAT) -> int:
        a = np.asarray(arr)
        a = a.astype({FLOAT: np.float32, UINT16: np.uint16, UINT32: np.uint32}[ctype])
        width = 1 if a.ndim == 1 else a.shape[1]
        while len(self.blob) % 4:
            self.blob.append(0)
        self.doc["bufferViews"].append({"buffer": 0, "byteOffset": len(self.blob), "byteLength": a.nbytes})
        self.blob += a.tobytes()
        acc = {"bufferView": len(self.doc["bufferViews"]) - 1, "componentType": ctype, "count": len(a),
               "type": _TYPES[width]}
        if ctype == FLOAT and a.ndim == 2 and width == 3:
            acc["min"], acc["max"] = a.min(axis=0).tolist(), a.max(axis=0).tolist()
        if ctype == FLOAT and a.ndim == 1:
            acc["min"], acc["max"] = [float(a.min())], [float(a.max())]
        self.doc["accessors"].append(acc)
        return len(self.doc["accessors"]) - 1

    def mesh(self, positions, indices, *, normals=None, targets=(), target_normals=None, target_names=None,
             weights=None, joints=None, joint_weights=None, name="mesh") -> int:
        """One primitive. ``targets``: position delta arrays; ``target_normals``: normal delta arrays or None."""
        attrs = {"POSITION": self.accessor(positions)}
        if normals is not None:
            attrs["NORMAL"] = self.accessor(normals)
        if joints is not None:
            attrs["JOINTS_0"] = self.accessor(joints, UINT16)
            attrs["WEIGHTS_0"] = self.accessor(joint_weights)
        prim = {"attributes": attrs, "indices": self.accessor(np.asarray(indices).reshape(-1), UINT32)}
        if len(targets):
            prim["targets"] = []
            for k, d in enumerate(targets):
                t = {"POSITION": self.accessor(d)}
                if target_normals is not None and target_normals[k] is not None:
                    t["NORMAL"] = self.accessor(target_normals[k])
                prim["targets"].append(t)
        mesh = {"name": name, "primitives": [prim]}
        if weights is not None:
            mesh["weights"] = [float(w) for w in weights]
        if target_names is not None:
            mesh["extras"] = {"targetNames": list(target_names)}
        self.doc["meshes"].append(mesh)
        return len(self.doc["meshes"]) - 1

    def node(self, name: str, *, root: bool = True, **fields) -> int:
        self.doc["nodes"].append({"name": name, **fields})
        i = len(self.doc["nodes"]) - 1
        if root:
            self.doc["scenes"][0]["nodes"].append(i)
        return i

    def skin(self, joints: list[int], inverse_binds=None) -> int:
        ibm = np.tile(np.eye(4), (len(joints), 1, 1)) if inverse_binds is None else np.asarray(inverse_binds)
        cols = np.transpose(ibm, (0, 2, 1)).reshape(len(joints), 16)   # glTF stores column-major
        self.doc.setdefault("skins", []).append({"joints": joints, "inverseBindMatrices": self.accessor(cols)})
        return len(self.doc["skins"]) - 1

    def animation(self, name: str, channels: list[tuple[int, str, np.ndarray, np.ndarray, str]]) -> int:
        """``channels``: (node, path, times, values, interpolation); values flat as glTF stores them
        (for CUBICSPLINE: in-tangent, value, out-tangent per key; for weights: T values per element)."""
        samplers, chans = [], []
        for node, path, times, values, interp in channels:
            vals = np.asarray(values, np.float32)
            samplers.append({"input": self.accessor(np.asarray(times, np.float32)),
                             "output": self.accessor(vals.reshape(-1) if path == "weights" else vals),
                             "interpolation": interp})
            chans.append({"sampler": len(samplers) - 1, "target": {"node": node, "path": path}})
        self.doc.setdefault("animations", []).append({"name": name, "samplers": samplers, "channels": chans})
        return len(self.doc["animations"]) - 1

    def save(self, path: Path) -> Path:
        self.doc["buffers"] = [{"byteLength": len(self.blob),
                                "uri": "data:application/octet-stream;base64,"
                                       + base64.b64encode(bytes(self.blob)).decode()}]
        Path(path).write_text(json.dumps(self.doc))
        return Path(path)


def grid(n: int = 6, size: float = 1.0, split_row: int | None = None):
    """An n x n vertex grid in the XY plane as triangles (positions (V,3), indices (F*3,)). With
    ``split_row`` the vertices of that row are duplicated, so the rows above use their own copies: a hard
    edge as a file would store it."""
    xs = np.linspace(-size, size, n)
    pos = [(x, y, 0.0) for y in xs for x in xs]
    ids = np.arange(n * n).reshape(n, n)
    if split_row is not None:
        copies = ids[split_row].copy()
        pos += [pos[i] for i in copies]
        upper = np.arange(n * n, n * n + n)
    idx = []
    for r in range(n - 1):
        for c in range(n - 1):
            row0 = upper if split_row is not None and r == split_row else ids[r]
            a, b, d, e = row0[c], row0[c + 1], ids[r + 1][c], ids[r + 1][c + 1]
            idx += [a, b, d, b, e, d]
    return np.array(pos, np.float64), np.array(idx, np.int64)
