"""An independent glTF 2.0 reader for tests (json + numpy only): the file's own data, to compare imports with."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import numpy as np

_CT = {5120: np.int8, 5121: np.uint8, 5122: np.int16, 5123: np.uint16, 5125: np.uint32, 5126: np.float32}
_N = {"SCALAR": 1, "VEC2": 2, "VEC3": 3, "VEC4": 4, "MAT4": 16}


class Gltf:
    def __init__(self, path: Path):
        path = Path(path)
        raw = path.read_bytes()
        self.bin_chunk = None
        if raw[:4] == b"glTF":
            n = struct.unpack("<I", raw[12:16])[0]
            self.json = json.loads(raw[20:20 + n])
            rest = raw[20 + n:]
            if len(rest) >= 8:
                ln = struct.unpack("<I", rest[:4])[0]
                self.bin_chunk = rest[8:8 + ln]
        else:
            self.json = json.loads(raw)
        self.buffers = []
        for b in self.json.get("buffers", []):
            uri = b.get("uri")
            if uri is None:
                self.buffers.append(self.bin_chunk)
            elif uri.startswith("data:"):
                self.buffers.append(base64.b64decode(uri.split(",", 1)[1]))
            else:
                self.buffers.append((path.parent / uri).read_bytes())

    def accessor(self, i: int) -> np.ndarray:
        a = self.json["accessors"][i]
        n, dt = _N[a["type"]], np.dtype(_CT[a["componentType"]])
        out = np.zeros((a["count"], n), dt)
        if "bufferView" in a:
            v = self.json["bufferViews"][a["bufferView"]]
            buf = self.buffers[v["buffer"]]
            start = v.get("byteOffset", 0) + a.get("byteOffset", 0)
            stride = v.get("byteStride", n * dt.itemsize)
            for k in range(a["count"]):
                out[k] = np.frombuffer(buf, dt, n, start + k * stride)
        if "sparse" in a:
            s = a["sparse"]
            iv = self.json["bufferViews"][s["indices"]["bufferView"]]
            idt = np.dtype(_CT[s["indices"]["componentType"]])
            idx = np.frombuffer(self.buffers[iv["buffer"]], idt, s["count"],
                                iv.get("byteOffset", 0) + s["indices"].get("byteOffset", 0))
            vv = self.json["bufferViews"][s["values"]["bufferView"]]
            vals = np.frombuffer(self.buffers[vv["buffer"]], dt, s["count"] * n,
                                 vv.get("byteOffset", 0) + s["values"].get("byteOffset", 0)).reshape(-1, n)
            out[idx] = vals
        if a.get("normalized") and dt.kind in "ui":
            out = out.astype(np.float64) / np.iinfo(dt).max
        return out

    def primitives(self):
        for mesh in self.json["meshes"]:
            for prim in mesh["primitives"]:
                yield mesh, prim
