"""The one decode of a glTF file's data: a plain core-glTF GLB, in memory, that Assimp imports instead of the file.

Assimp 5.2.5 misreads much of what glTF allows (normalized integer weights and UVs, KHR_mesh_quantization,
sparse accessors and accessors without a bufferView, EXT_meshopt_compression). So vkmorph decodes every accessor
itself (``GltfDocument.accessor``, bounds-checked) and writes a GLB in which

* every accessor is float32, tightly packed, without sparse or normalized storage, except indices and
  ``JOINTS_n``, which keep their unsigned integer type (materialized when sparse or without a bufferView);
* every buffer view lives in one BIN chunk, meshopt-compressed views decoded (``EXT_meshopt_compression`` and
  ``KHR_mesh_quantization`` are gone from the extension lists); Draco-compressed primitives are passed through
  for Assimp's Draco decoder, their views copied as they are;
* nodes and meshes are named ``vkm#<index>``, so Assimp binds joints by node index, never by a name two nodes
  share, and every imported primitive names its (mesh, primitive) of the file; the importer restores the names;
* node rotations are unit quaternions (normalized with a warning, as three.js does);
* ``EXT_mesh_gpu_instancing`` instances are child nodes of their node, one per instance;
* a mesh that nodes instance with different skins is one mesh per skin (Assimp keeps one skin per mesh);
* point and line primitives are left out with a warning (vkmorph draws triangles);
* images, textures, samplers and animations are absent: vkmorph reads materials and clips from the file itself
  (``materials.gltf_materials``, ``gltf_animation``), so Assimp never opens another file.

``gltf_check.check_import`` then compares what Assimp produced with this decode, attribute by attribute.
"""

from __future__ import annotations

import json
import struct
import warnings
from dataclasses import dataclass, field

import numpy as np

from ..errors import AssetWarning
from .gltf import GltfDocument, is_int
from .gltf_extensions import ASSIMP_READS

DRACO = "KHR_draco_mesh_compression"
INSTANCING = "EXT_mesh_gpu_instancing"
NAME_PREFIX = "vkm#"
TRIANGLE_MODES = (4, 5, 6)
MODE_NAMES = {0: "POINTS", 1: "LINES", 2: "LINE_LOOP", 3: "LINE_STRIP"}
ROTATION_TOLERANCE = 1e-5   # |q| further than this from 1 is normalized with a warning (float32 data: ~1e-7)


@dataclass
class Canonical:
    """The GLB bytes and what the importer needs to map Assimp's scene back onto the file."""

    glb: bytes
    # per canonical mesh: (file mesh index, [file primitive index of each kept primitive])
    meshes: list[tuple[int, list[int]]] = field(default_factory=list)
    # per canonical node: (file node index, instance number or None)
    nodes: list[tuple[int, int | None]] = field(default_factory=list)
    draco: set[tuple[int, int]] = field(default_factory=set)   # (file mesh, file primitive) decoded by Assimp


def _warn(doc: GltfDocument, where: str, msg: str) -> None:
    warnings.warn(AssetWarning(f"file {doc.file}: {where}: {msg}"), stacklevel=3)


def _has_ext(obj, name: str):
    ext = obj.get("extensions") if isinstance(obj, dict) else None
    return ext.get(name) if isinstance(ext, dict) else None


def canonical_glb(doc: GltfDocument) -> Canonical:
    """The file as plain core glTF (see the module's docstring); ``doc`` has passed ``validate_gltf``."""
    j = _copy({k: v for k, v in doc.json.items()
               if k not in ("images", "textures", "samplers", "animations", "buffers", "bufferViews", "accessors")})
    out = Canonical(glb=b"")
    blob = bytearray()
    views: list[dict] = []
    view_map: dict[int, int] = {}

    def add_view(data: bytes, stride: int | None = None) -> int:
        blob.extend(b"\0" * (-len(blob) % 4))
        v = {"buffer": 0, "byteOffset": len(blob), "byteLength": len(data)}
        if stride:
            v["byteStride"] = stride
        blob.extend(data)
        views.append(v)
        return len(views) - 1

    def copy_view(v_i: int) -> int:
        if v_i not in view_map:
            data, stride = doc.view_range(v_i, f"bufferViews[{v_i}]")
            view_map[v_i] = add_view(bytes(data), stride)
        return view_map[v_i]

    # -------------------------------------------------------------- which accessors are what
    src_acc = doc.array("accessors")
    integer_kept: set[int] = set()
    draco_owned: set[int] = set()
    meshes = doc.array("meshes")
    for m_i, mesh in enumerate(meshes):
        for p_i, prim in enumerate(mesh.get("primitives", [])):
            attrs = prim.get("attributes", {})
            if _has_ext(prim, DRACO) is not None:
                out.draco.add((m_i, p_i))
                draco_owned.update(a for a in attrs.values())
                if "indices" in prim:
                    draco_owned.add(prim["indices"])
            if "indices" in prim:
                integer_kept.add(prim["indices"])
            integer_kept.update(a for k, a in attrs.items() if k.startswith("JOINTS_"))

    accessors = []
    for a_i, acc in enumerate(src_acc):
        acc = dict(acc)   # only top-level keys are replaced below
        if a_i in draco_owned and "bufferView" not in acc:
            accessors.append(acc)
            continue
        float_ok = acc.get("componentType") == 5126
        plain = "bufferView" in acc and "sparse" not in acc and not acc.get("normalized")
        count = acc.get("count", 0)
        if plain and (float_ok or a_i in integer_kept) or not count:
            if "bufferView" in acc:
                acc["bufferView"] = copy_view(acc["bufferView"])
            accessors.append(acc)
            continue
        arr = doc.accessor(a_i)
        if a_i not in integer_kept:
            arr = arr.astype(np.float32)
            acc["componentType"] = 5126
        if arr.ndim == 3:   # matrices back to column-major storage
            arr = arr.transpose(0, 2, 1)
        acc["bufferView"] = add_view(np.ascontiguousarray(arr).tobytes())
        for k in ("byteOffset", "sparse", "normalized"):
            acc.pop(k, None)
        if arr.ndim <= 2 and ("min" in acc or "max" in acc):
            flat = arr.reshape(len(arr), -1)
            acc["min"] = flat.min(axis=0).tolist()
            acc["max"] = flat.max(axis=0).tolist()
        accessors.append(acc)

    # -------------------------------------------------------------- meshes: triangles only
    new_meshes, mesh_map = [], {}
    for m_i, mesh in enumerate(j.get("meshes", [])):
        kept, prims = [], []
        for p_i, prim in enumerate(mesh.get("primitives", [])):
            mode = prim.get("mode", 4)
            if mode not in TRIANGLE_MODES:
                _warn(doc, f"meshes[{m_i}].primitives[{p_i}]", f"mode {MODE_NAMES.get(mode, mode)} is not drawn "
                                                               "(vkmorph draws triangles); left out")
                continue
            draco = _has_ext(prim, DRACO)
            if draco is not None and is_int(draco.get("bufferView")):
                draco["bufferView"] = copy_view(draco["bufferView"])
            kept.append(p_i)
            prims.append(prim)
        if not prims:
            continue
        mesh["primitives"] = prims
        mesh["name"] = f"{NAME_PREFIX}{len(new_meshes)}"
        mesh_map[m_i] = len(new_meshes)
        out.meshes.append((m_i, kept))
        new_meshes.append(mesh)
    j["meshes"] = new_meshes

    # -------------------------------------------------------------- nodes: names, rotations, instances
    nodes = j.get("nodes", [])
    extra: list[dict] = []
    skin_copy: dict[tuple[int, int], int] = {}   # (canonical mesh, skin) -> the mesh copy that skin deforms
    for n_i, node in enumerate(nodes):
        node["name"] = f"{NAME_PREFIX}{n_i}"
        out.nodes.append((n_i, None))
        if "rotation" in node:
            q = np.asarray(node["rotation"], np.float64)
            n = float(np.linalg.norm(q))
            if abs(n - 1.0) > ROTATION_TOLERANCE:
                _warn(doc, f"nodes[{n_i}].rotation", f"|q| = {n:.6g}, not a unit quaternion; normalized"
                      if n > 0 else "the zero quaternion; read as no rotation")
                node["rotation"] = (q / n).tolist() if n > 0 else [0.0, 0.0, 0.0, 1.0]
        if "mesh" in node:
            if node["mesh"] not in mesh_map:
                for k in ("mesh", "skin", "weights"):
                    node.pop(k, None)
            else:
                node["mesh"] = mesh_map[node["mesh"]]
                if is_int(node.get("skin")):
                    node["mesh"] = _per_skin(out, new_meshes, skin_copy, node["mesh"], node["skin"])
        inst = _has_ext(node, INSTANCING)
        if inst is not None and "mesh" in node:
            if doc.node_target_count(n_i):
                _warn(doc, f"nodes[{n_i}].extensions.{INSTANCING}", "the instances are nodes of their own: they "
                      "keep the default morph weights, and weights set or animated on this node do not reach them")
            node.setdefault("children", [])
            for k, trs in enumerate(_instances(doc, n_i, inst)):
                child = {"name": f"{NAME_PREFIX}{len(nodes) + len(extra)}", "mesh": node["mesh"], **trs}
                for key in ("skin", "weights"):
                    if key in node:
                        child[key] = node[key]
                node["children"].append(len(nodes) + len(extra))
                out.nodes.append((n_i, k))
                extra.append(child)
            for k in ("mesh", "skin", "weights"):
                node.pop(k, None)
        node.pop("extensions", None)
    j["nodes"] = nodes + extra

    # -------------------------------------------------------------- materials without textures
    for m in j.get("materials", []):
        if isinstance(m, dict):
            _strip_textures(m)
            m.pop("extensions", None)
    for key in ("extensionsUsed", "extensionsRequired"):
        kept = [e for e in j.get(key, []) if e in ASSIMP_READS and e in _used_by_meshes(j)]
        if kept:
            j[key] = kept
        else:
            j.pop(key, None)
    j["accessors"] = accessors
    j["bufferViews"] = views
    blob.extend(b"\0" * (-len(blob) % 4))
    if blob:
        j["buffers"] = [{"byteLength": len(blob)}]
    else:
        j.pop("bufferViews")
    out.glb = _glb(j, bytes(blob))
    return out


def _per_skin(out: Canonical, meshes: list, skin_copy: dict, c: int, skin: int) -> int:
    """glTF binds a skin per node, Assimp per mesh: a mesh that nodes instance with different skins gets one
    copy per skin (its data shared in the BIN chunk), so every node is deformed by its own skin."""
    if (c, skin) in skin_copy:
        return skin_copy[(c, skin)]
    if any(k[0] == c for k in skin_copy):
        mesh = _copy(meshes[c])
        mesh["name"] = f"{NAME_PREFIX}{len(meshes)}"
        meshes.append(mesh)
        out.meshes.append(out.meshes[c])
        skin_copy[(c, skin)] = len(meshes) - 1
    else:
        skin_copy[(c, skin)] = c
    return skin_copy[(c, skin)]


def _copy(obj):
    """A deep copy of JSON data (several times faster than copy.deepcopy on large glTF JSON)."""
    return json.loads(json.dumps(obj))


def _used_by_meshes(j: dict) -> set[str]:
    return {e for m in j.get("meshes", []) for p in m.get("primitives", []) for e in p.get("extensions", {})}


def _strip_textures(obj) -> None:
    if isinstance(obj, dict):
        for k in [k for k in obj if k.endswith("Texture")]:
            del obj[k]
        for v in obj.values():
            _strip_textures(v)


def _instances(doc: GltfDocument, n_i: int, ext) -> list[dict]:
    """Each instance's TRS (EXT_mesh_gpu_instancing: float, or normalized integers for rotation and scale)."""
    w = f"nodes[{n_i}].extensions.{INSTANCING}"
    attrs = ext.get("attributes") if isinstance(ext, dict) else None
    if not isinstance(attrs, dict) or not attrs:
        raise doc.error(f"{w}.attributes", "must be an object of TRANSLATION / ROTATION / SCALE accessors")
    cols, count = {}, None
    for key, path, width in (("TRANSLATION", "translation", 3), ("ROTATION", "rotation", 4), ("SCALE", "scale", 3)):
        if key not in attrs:
            continue
        a = doc.accessor(attrs[key], f"{w}.attributes.{key}").astype(np.float64)
        if a.shape[1:] != (width,) or not np.isfinite(a).all():
            raise doc.error(f"{w}.attributes.{key}", f"must be VEC{width} finite values")
        if count is not None and len(a) != count:
            raise doc.error(f"{w}.attributes.{key}", f"{len(a)} instances, another attribute has {count}")
        count = len(a)
        if path == "rotation":
            n = np.linalg.norm(a, axis=1, keepdims=True)
            a = np.where(n > 0, a / np.where(n > 0, n, 1.0), [0.0, 0.0, 0.0, 1.0])
        cols[path] = a
    return [{p: cols[p][k].tolist() for p in cols} for k in range(count or 0)]


def _glb(j: dict, blob: bytes) -> bytes:
    text = json.dumps(j, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 4)
    parts = [struct.pack("<II", len(text), 0x4E4F534A), text]
    if blob:
        parts += [struct.pack("<II", len(blob), 0x004E4942), blob]
    body = b"".join(parts)
    return struct.pack("<4sII", b"glTF", 2, 12 + len(body)) + body
