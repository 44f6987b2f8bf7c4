"""Crafted core-glTF twins: one small model written with float attributes and again with the integer encodings
glTF allows (normalized UNSIGNED_BYTE / UNSIGNED_SHORT weights, UVs and colours; KHR_mesh_quantization
positions, normals and morph deltas). Values are chosen on the integer grid (k / 255, k / 65535) so both files
hold the same numbers; anything vkmorph imports differently is a decode error, not rounding."""

from __future__ import annotations

import numpy as np

from tests.asset.gltf_build import Builder

N = 4                      # a N x N grid of vertices, two joints along y
UNORM = {"u1": 255, "<u2": 65535}
SNORM = {"i1": 127, "<i2": 32767}


def grid():
    ij = np.stack(np.meshgrid(np.arange(N), np.arange(N), indexing="xy"), -1).reshape(-1, 2)
    pos = np.concatenate([ij / (N - 1), np.zeros((N * N, 1))], axis=1).astype(np.float32) * [2.0, 3.0, 1.0]
    quads = [(r * N + c, r * N + c + 1, (r + 1) * N + c + 1, (r + 1) * N + c) for r in range(N - 1)
             for c in range(N - 1)]
    idx = np.array([[a, b, c, a, c, d] for a, b, c, d in quads]).reshape(-1)
    return pos, idx


def _on_grid(x: np.ndarray, dtype: str) -> np.ndarray:
    """Values representable as normalized integers of ``dtype``: float32 of k / max."""
    m = UNORM[dtype]
    return (np.round(np.asarray(x, np.float64) * m) / m).astype(np.float32)


def twin(*, weights="<f4", uv="<f4", color="<f4", quantized=False, skinned=True) -> dict:
    """The model as a glTF dict with its BIN (``write_gltf(path, doc, binary)``); the keyword arguments pick the
    encoding of each attribute; the decoded values are the same for every choice (see the module's docstring)."""
    pos, idx = grid()
    V = len(pos)
    rng = np.random.default_rng(7)
    w1 = _on_grid(rng.uniform(0, 1, V), "u1")                       # on the 8-bit grid: exact in both
    wts = np.stack([_on_grid(1 - w1, "u1"), w1, np.zeros(V), np.zeros(V)], 1).astype(np.float32)
    uvs = _on_grid(np.stack([pos[:, 0] / 2 * 0.8 + 0.1, 1 - pos[:, 1] / 3], 1), "u1")
    cols = _on_grid(rng.uniform(0, 1, (V, 4)), "u1")
    delta = np.zeros((V, 3), np.float32)
    delta[:, 2] = _on_grid(rng.uniform(0, 1, V), "u1") * 0.5
    b = Builder()
    nodes = [{"name": "body", "mesh": 0}]
    if quantized:   # KHR_mesh_quantization: SHORT positions/deltas, BYTE normals; the node dequantizes
        scale = 4.0
        q = np.round(pos / scale * 32767).astype("<i2")
        pa = b.add(q, "<i2", normalized=True, minmax=True)
        # BYTE VEC3 elements are 3 bytes: vertex strides must be multiples of 4, hence the stride
        na = b.add(np.tile([0, 0, 127], (V, 1)), "i1", "VEC3", normalized=True, stride=4)
        da = b.add(np.round(delta / scale * 32767).astype("<i2"), "<i2", normalized=True, minmax=True)
        nodes[0]["scale"] = [scale, scale, scale]
    else:
        pa = b.add(pos, minmax=True)
        na = b.add(np.tile([0, 0, 1], (V, 1)))
        da = b.add(delta, minmax=True)

    def enc(values, dtype):
        if dtype == "<f4":
            return b.add(values)
        return b.add(np.round(values * UNORM[dtype]).astype(dtype), dtype, normalized=True,
                     stride=4 if values.shape[1] * np.dtype(dtype).itemsize % 4 else None)

    attrs = {"POSITION": pa, "NORMAL": na, "TEXCOORD_0": enc(uvs, uv), "COLOR_0": enc(cols, color)}
    if skinned:
        attrs["JOINTS_0"] = b.add(np.tile([0, 1, 0, 0], (V, 1)), "u1", "VEC4")
        attrs["WEIGHTS_0"] = enc(wts, weights)
    ia = b.add(idx, "<u2", "SCALAR")
    doc, binary = b.finish()
    doc.update({"scene": 0, "scenes": [{"nodes": [0]}], "nodes": nodes,
                "meshes": [{"name": "grid", "primitives": [{"attributes": attrs, "indices": ia,
                                                            "targets": [{"POSITION": da}]}]}]})
    if skinned:
        tip_bind = np.eye(4)
        tip_bind[1, 3] = -1.5
        b2 = len(doc["accessors"])
        ibm = np.stack([np.eye(4), tip_bind]).transpose(0, 2, 1).astype(np.float32).tobytes()
        binary = binary + ibm
        doc["bufferViews"].append({"buffer": 0, "byteOffset": len(binary) - len(ibm), "byteLength": len(ibm)})
        doc["accessors"].append({"bufferView": len(doc["bufferViews"]) - 1, "componentType": 5126, "count": 2,
                                 "type": "MAT4"})
        doc["buffers"][0]["byteLength"] = len(binary)
        doc["scenes"][0]["nodes"] = [0, 1]
        doc["nodes"][0]["skin"] = 0
        doc["nodes"] += [{"name": "root", "children": [2]},
                         {"name": "tip", "translation": [0, 1.5, 0], "rotation": [0, 0, 0.3826834, 0.9238795]}]
        doc["skins"] = [{"joints": [1, 2], "inverseBindMatrices": b2}]
    if quantized:
        doc["extensionsUsed"] = doc["extensionsRequired"] = ["KHR_mesh_quantization"]
    return doc, binary
