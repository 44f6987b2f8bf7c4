"""Small glTF 2.0 files written from numpy for the material tests (textures, vertex colours, normal maps, alpha,
bad material data). Images are PNGs made with Pillow; buffers go into a data URI (.gltf) or the BIN chunk (.glb)."""

from __future__ import annotations

import base64
import io
import json
import struct
from pathlib import Path

import numpy as np
from PIL import Image

_CT = {np.dtype(np.float32): 5126, np.dtype(np.uint32): 5125, np.dtype(np.uint16): 5123, np.dtype(np.uint8): 5121}
_TYPE = {1: "SCALAR", 2: "VEC2", 3: "VEC3", 4: "VEC4"}


def png_bytes(rgba: np.ndarray) -> bytes:
    out = io.BytesIO()
    Image.fromarray(np.asarray(rgba, np.uint8)).save(out, format="PNG")
    return out.getvalue()


def checker(n: int, cells: int, a=(255, 255, 255, 255), b=(0, 0, 0, 255)) -> np.ndarray:
    y, x = np.mgrid[0:n, 0:n] * cells // n
    return np.where(((x + y) % 2 == 0)[..., None], np.array(a, np.uint8), np.array(b, np.uint8)).astype(np.uint8)


def cube(half: float = 0.5):
    """24 vertices (4 per face, own normals and UVs), 36 indices, counter-clockwise from outside."""
    pos, nor, uv, idx = [], [], [], []
    for axis in range(3):
        for sign in (1.0, -1.0):
            n = np.zeros(3)
            n[axis] = sign
            u = np.zeros(3)
            u[(axis + 1) % 3] = 1.0
            v = np.cross(n, u)
            base = len(pos)
            for du, dv in ((-1, -1), (1, -1), (1, 1), (-1, 1)):
                pos.append((n + du * u + dv * v) * half)
                nor.append(n)
                uv.append(((du + 1) / 2, 1 - (dv + 1) / 2))
            idx += [base, base + 1, base + 2, base, base + 2, base + 3]
    return (np.array(pos, np.float32), np.array(nor, np.float32), np.array(uv, np.float32),
            np.array(idx, np.uint32))


def quad(size: float = 1.0, uv_scale: float = 1.0, y: float = 0.0):
    """A horizontal square facing +Y at height ``y``."""
    h = size / 2
    pos = np.array([(-h, y, h), (h, y, h), (h, y, -h), (-h, y, -h)], np.float32)
    nor = np.tile(np.array([0, 1, 0], np.float32), (4, 1))
    uv = np.array([(0, 1), (1, 1), (1, 0), (0, 0)], np.float32) * uv_scale
    return pos, nor, uv, np.array([0, 1, 2, 0, 2, 3], np.uint32)


def wall(size: float = 1.0, z: float = 0.0):
    """A vertical square facing +Z at depth ``z``."""
    h = size / 2
    pos = np.array([(-h, -h, z), (h, -h, z), (h, h, z), (-h, h, z)], np.float32)
    nor = np.tile(np.array([0, 0, 1], np.float32), (4, 1))
    uv = np.array([(0, 1), (1, 1), (1, 0), (0, 0)], np.float32)
    return pos, nor, uv, np.array([0, 1, 2, 0, 2, 3], np.uint32)


class GltfBuilder:
    def __init__(self):
        self.doc = {"asset": {"version": "2.0", "generator": "vkmorph tests"}, "scene": 0,
                    "scenes": [{"nodes": []}], "nodes": [], "meshes": [], "accessors": [], "bufferViews": [],
                    "buffers": [], "materials": [], "textures": [], "images": [], "samplers": []}
        self.bin = bytearray()

    def _view(self, data: bytes, target: int | None = None) -> int:
        while len(self.bin) % 4:
            self.bin.append(0)
        view = {"buffer": 0, "byteOffset": len(self.bin), "byteLength": len(data)}
        if target:
            view["target"] = target
        self.bin += data
        self.doc["bufferViews"].append(view)
        return len(self.doc["bufferViews"]) - 1

    def accessor(self, arr: np.ndarray, normalized: bool = False, index: bool = False, vertex: bool = True) -> int:
        """``vertex=False``: not vertex data (animation keyframes), so the buffer view names no GPU target."""
        arr = np.ascontiguousarray(arr)
        n = 1 if arr.ndim == 1 else arr.shape[1]
        target = 34963 if index else (34962 if vertex else None)
        acc = {"bufferView": self._view(arr.tobytes(), target),
               "componentType": _CT[arr.dtype], "count": int(arr.shape[0]), "type": _TYPE[n]}
        if normalized:
            acc["normalized"] = True
        if arr.dtype == np.float32 and not index:
            acc["min"] = [float(x) for x in np.atleast_2d(arr.T).min(axis=1)]
            acc["max"] = [float(x) for x in np.atleast_2d(arr.T).max(axis=1)]
        self.doc["accessors"].append(acc)
        return len(self.doc["accessors"]) - 1

    def _add(self, key: str, obj: dict) -> int:
        self.doc[key].append(obj)
        return len(self.doc[key]) - 1

    def image(self, rgba: np.ndarray | None = None, uri: str | None = None, raw: bytes | None = None) -> int:
        """Embedded PNG (bufferView) by default; ``uri`` names an external file (written by ``save``)."""
        data = raw if raw is not None else (png_bytes(rgba) if rgba is not None else None)
        if uri is not None:
            img = {"uri": uri}
            self._external = getattr(self, "_external", []) + [(uri, data)]
            return self._add("images", img)
        return self._add("images", {"bufferView": self._view(data), "mimeType": "image/png"})

    def texture(self, image: int, sampler: dict | None = None) -> int:
        tex = {"source": image}
        if sampler is not None:
            tex["sampler"] = self._add("samplers", sampler)
        return self._add("textures", tex)

    def material(self, **m) -> int:
        return self._add("materials", m)

    def mesh(self, pos, nor, uv, idx, material: int | None = None, colors=None, colors_normalized=False,
             tangents=None, translation=(0.0, 0.0, 0.0), name="mesh", targets=(), weights=None) -> int:
        """One node instancing a one-primitive mesh. ``targets``: position deltas (V, 3) per morph target;
        ``weights``: the mesh's default weights."""
        attrs = {"POSITION": self.accessor(pos), "NORMAL": self.accessor(nor), "TEXCOORD_0": self.accessor(uv)}
        if colors is not None:
            attrs["COLOR_0"] = self.accessor(colors, normalized=colors_normalized)
        if tangents is not None:
            attrs["TANGENT"] = self.accessor(tangents)
        prim = {"attributes": attrs, "indices": self.accessor(idx, index=True)}
        if material is not None:
            prim["material"] = material
        if len(targets):
            prim["targets"] = [{"POSITION": self.accessor(np.asarray(d, np.float32))} for d in targets]
        mesh = {"name": name, "primitives": [prim]}
        if weights is not None:
            mesh["weights"] = [float(w) for w in weights]
        m = self._add("meshes", mesh)
        node = self._add("nodes", {"name": name, "mesh": m, "translation": [float(x) for x in translation]})
        self.doc["scenes"][0]["nodes"].append(node)
        return node

    def animate_translation(self, node: int, times, translations, name: str = "move") -> int:
        """A LINEAR translation clip of ``node``: keyframe ``times`` (s) and (K, 3) ``translations``."""
        t = self.accessor(np.asarray(times, np.float32), vertex=False)
        v = self.accessor(np.asarray(translations, np.float32), vertex=False)
        anims = self.doc.setdefault("animations", [])
        anims.append({"name": name, "samplers": [{"input": t, "output": v, "interpolation": "LINEAR"}],
                      "channels": [{"sampler": 0, "target": {"node": node, "path": "translation"}}]})
        return len(anims) - 1

    def save(self, path: Path, glb: bool = False) -> Path:
        path = Path(path)
        doc = {k: v for k, v in self.doc.items() if v != []}
        for uri, data in getattr(self, "_external", []):
            if data is not None:
                (path.parent / uri).write_bytes(data)
        while len(self.bin) % 4:
            self.bin.append(0)
        if glb:
            doc["buffers"] = [{"byteLength": len(self.bin)}]
            js = json.dumps(doc).encode()
            js += b" " * (-len(js) % 4)
            body = struct.pack("<II", len(js), 0x4E4F534A) + js + struct.pack("<II", len(self.bin), 0x004E4942)
            body += bytes(self.bin)
            path.write_bytes(struct.pack("<III", 0x46546C67, 2, 12 + len(body)) + body)
        else:
            doc["buffers"] = [{"byteLength": len(self.bin), "uri": "data:application/octet-stream;base64,"
                               + base64.b64encode(bytes(self.bin)).decode()}]
            path.write_text(json.dumps(doc, indent=1))
        return path
