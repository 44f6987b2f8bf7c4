"""Builds small glTF/GLB files for tests (json + struct + numpy only; independent of vkmorph's reader).

``skinned_morph_model()`` is a valid base: a 4-vertex quad with one morph target, a two-joint skin and a clip
animating the morph weight, a joint's rotation and the mesh node's scale
(STEP to 0 at 0.5 s and back at 1 s: a singular mesh node). Tests mutate its JSON or bytes.
"""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import numpy as np

CT = {np.dtype("i1"): 5120, np.dtype("u1"): 5121, np.dtype("<i2"): 5122, np.dtype("<u2"): 5123,
      np.dtype("<u4"): 5125, np.dtype("<f4"): 5126}
TYPES = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4", 16: "MAT4"}


class Builder:
    def __init__(self):
        self.bin = bytearray()
        self.json: dict = {"asset": {"version": "2.0"}, "buffers": [], "bufferViews": [], "accessors": []}

    def view(self, raw: bytes, stride: int | None = None, target: int | None = None) -> int:
        while len(self.bin) % 4:
            self.bin.append(0)
        v = {"buffer": 0, "byteOffset": len(self.bin), "byteLength": len(raw)}
        if stride:
            v["byteStride"] = stride
        if target:
            v["target"] = target
        self.bin += raw
        self.json["bufferViews"].append(v)
        return len(self.json["bufferViews"]) - 1

    def add(self, values, dtype="<f4", type_: str | None = None, normalized=False, stride: int | None = None,
            minmax=False, target: int | None = None) -> int:
        a = np.asarray(values, dtype)
        count = a.shape[0]
        n = int(np.prod(a.shape[1:])) if a.ndim > 1 else 1
        if type_ == "MAT4":  # rows given as matrices M (M @ v); the file stores columns
            a = a.transpose(0, 2, 1)
        flat = np.ascontiguousarray(a).reshape(count, n)
        if stride:
            rows = np.zeros((count, stride), np.uint8)
            rows[:, :flat.itemsize * n] = flat.view(np.uint8).reshape(count, -1)
            raw = rows.tobytes()
        else:
            raw = flat.tobytes()
        acc = {"bufferView": self.view(raw, stride, target), "componentType": CT[np.dtype(dtype)],
               "count": count, "type": type_ or TYPES[n]}
        if normalized:
            acc["normalized"] = True
        if minmax:
            acc["min"] = flat.min(axis=0).tolist()
            acc["max"] = flat.max(axis=0).tolist()
        self.json["accessors"].append(acc)
        return len(self.json["accessors"]) - 1

    def finish(self) -> tuple[dict, bytes]:
        self.json["buffers"] = [{"byteLength": len(self.bin)}]
        return self.json, bytes(self.bin)


def write_gltf(path: Path, doc: dict, binary: bytes, *, embed=False, glb=False, bin_name="model.bin") -> Path:
    """Write ``doc`` with ``binary`` as buffer 0: GLB BIN chunk, data: URI (``embed``) or a .bin next to it."""
    doc = json.loads(json.dumps(doc))
    path = Path(path)
    if glb:
        doc["buffers"][0].pop("uri", None)
        js = json.dumps(doc).encode()
        js += b" " * (-len(js) % 4)
        bn = bytes(binary) + b"\0" * (-len(binary) % 4)
        body = struct.pack("<II", len(js), 0x4E4F534A) + js + struct.pack("<II", len(bn), 0x004E4942) + bn
        path.write_bytes(b"glTF" + struct.pack("<II", 2, 12 + len(body)) + body)
        return path
    if "uri" not in doc["buffers"][0]:
        if embed:
            doc["buffers"][0]["uri"] = "data:application/octet-stream;base64," + base64.b64encode(binary).decode()
        else:
            doc["buffers"][0]["uri"] = bin_name
            (path.parent / bin_name).write_bytes(binary)
    path.write_text(json.dumps(doc))
    return path


QUAD = np.array([[0, 0, 0], [1, 0, 0], [1, 1, 0], [0, 1, 0]], np.float32)


def skinned_morph_model() -> tuple[dict, bytes]:
    """A valid base model: mesh node 0 (mesh 0, skin 0), joints nodes 1 (root) and 2 (child); clip 'move'."""
    b = Builder()
    pos = b.add(QUAD, minmax=True, target=34962)
    nrm = b.add(np.tile([0, 0, 1], (4, 1)), target=34962)
    idx = b.add(np.array([0, 1, 2, 0, 2, 3]), "<u2", "SCALAR", target=34963)
    joints = b.add(np.array([[0, 1, 0, 0]] * 4), "u1", "VEC4")
    weights = b.add(np.array([[1, 0, 0, 0], [0.5, 0.5, 0, 0], [0, 1, 0, 0], [0.25, 0.75, 0, 0]]))
    delta = b.add(np.array([[0, 0, 1], [0, 0, 0.5], [0, 0, 0], [0, 0, 0.25]]), minmax=True)
    tip_bind = np.eye(4)
    tip_bind[1, 3] = -1.0  # inverse of the tip's bind pose (translated +1 in y)
    ibm = b.add(np.stack([np.eye(4), tip_bind]), type_="MAT4")
    times = b.add(np.array([0.0, 0.5, 1.0]), minmax=True)
    wvals = b.add(np.array([0.0, 1.0, 0.0]))
    rot = b.add(np.array([[0, 0, 0, 1], [0, 0, 0.38268343, 0.92387953], [0, 0, 0, 1]]))
    scl = b.add(np.array([[1, 1, 1], [0, 0, 0], [1, 1, 1]]))
    doc, binary = b.finish()
    doc.update({
        "scene": 0, "scenes": [{"nodes": [0, 1]}],
        "nodes": [{"name": "body", "mesh": 0, "skin": 0, "weights": [0.25]},
                  {"name": "root", "children": [2]},
                  {"name": "tip", "translation": [0, 1, 0]}],
        "meshes": [{"name": "quad", "primitives": [{
            "attributes": {"POSITION": pos, "NORMAL": nrm, "JOINTS_0": joints, "WEIGHTS_0": weights},
            "indices": idx, "targets": [{"POSITION": delta}]}], "weights": [0.25],
            "extras": {"targetNames": ["bulge"]}}],
        "skins": [{"joints": [1, 2], "inverseBindMatrices": ibm}],
        "animations": [{"name": "move", "samplers": [
            {"input": times, "output": wvals, "interpolation": "LINEAR"},
            {"input": times, "output": rot, "interpolation": "LINEAR"},
            {"input": times, "output": scl, "interpolation": "STEP"}],
            "channels": [{"sampler": 0, "target": {"node": 0, "path": "weights"}},
                         {"sampler": 1, "target": {"node": 2, "path": "rotation"}},
                         {"sampler": 2, "target": {"node": 0, "path": "scale"}}]}],
    })
    return doc, binary
