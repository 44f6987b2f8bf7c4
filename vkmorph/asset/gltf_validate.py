"""Structural validation of a glTF document before Assimp sees it.

Assimp 5.2.5 crashes on some malformed files (a sampler input with 0 keys: SIGFPE) and silently alters others
(drops out-of-range indices and joints, renormalizes weights, imports a wrong-size morph target as zeros).
``validate_gltf`` raises ``AssetError`` naming file and JSON path for each of those, and warns with
``AssetWarning`` where vkmorph repairs the data on purpose (weights that do not sum to 1 are renormalized).
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..errors import AssetError, AssetWarning
from . import limits
from .gltf import GltfDocument, is_int
from .gltf_claims import check_claims

NAME_LIMIT = 1023            # Assimp's aiString holds MAXLEN 1024 bytes including the terminating NUL
WEIGHT_SUM_TOLERANCE = 1e-2  # beyond 8-bit quantization of four weights; anything further is renormalized
NAMED = ("scenes", "nodes", "meshes", "skins", "animations", "accessors", "bufferViews", "buffers", "materials",
         "textures", "images", "samplers", "cameras")
PATH_TYPES = {"translation": ("VEC3",), "rotation": ("VEC4",), "scale": ("VEC3",), "weights": ("SCALAR",)}


def validate_gltf(doc: GltfDocument) -> None:
    _Validator(doc).run()


def _first(mask: np.ndarray) -> int:
    return int(np.flatnonzero(mask.reshape(len(mask), -1).any(axis=1) if mask.ndim > 1 else mask)[0])


class _Validator:
    def __init__(self, doc: GltfDocument):
        self.doc = doc
        self.cache: dict[int, np.ndarray] = {}

    def err(self, where: str, message: str) -> AssetError:
        return self.doc.error(where, message)

    def acc(self, i, where: str) -> np.ndarray:
        if is_int(i) and i in self.cache:
            return self.cache[i]
        a = self.doc.accessor(i, where)
        self.cache[i] = a
        return a

    def acc_type(self, i) -> str:
        return self.doc.json["accessors"][i]["type"]

    def list_of(self, obj: dict, key: str, where: str, *, required=False) -> list:
        v = obj.get(key)
        if v is None and not required:
            return []
        if not isinstance(v, list) or (required and not v):
            raise self.err(f"{where}.{key}", "must be a non-empty array")
        return v

    def index(self, v, key: str, where: str) -> int:
        """A reference into top-level array ``key`` (range-checked)."""
        self.doc.item(key, v, where)
        return v

    def run(self) -> None:
        try:
            self._run()
        except MemoryError:
            raise self.err("", "not enough memory to check it (see the limits in the README's Untrusted files)") \
                from None

    def _run(self) -> None:
        d = self.doc
        self.limit("nodes", len(d.array("nodes")), "nodes")
        self.names()
        for i in range(len(d.array("bufferViews"))):
            d.view_range(i, f"bufferViews[{i}]")
        self.scenes_and_nodes()
        check_claims(d)
        self.skins()
        self.meshes()
        self.animations()
        self.materials()
        for i in range(len(d.array("accessors"))):   # unused ones are checked too, one at a time, not kept
            a = self.cache[i] if i in self.cache else d.accessor(i, f"accessors[{i}]")
            if len(a) == 0:
                raise self.err(f"accessors[{i}].count", "0 (glTF needs at least 1)")

    def limit(self, name: str, count: int, where: str, what: str | None = None) -> None:
        problem = limits.exceeded(name, count, what)
        if problem:
            raise self.err(where, problem)

    # ------------------------------------------------------------------ names
    def names(self) -> None:
        d = self.doc
        for key in NAMED:
            for i, obj in enumerate(d.array(key)):
                if isinstance(obj, dict) and "name" in obj:
                    self.name(obj["name"], f"{key}[{i}].name")
        for m_i, m in enumerate(d.array("meshes")):
            extras = m.get("extras") if isinstance(m, dict) else None
            names = extras.get("targetNames") if isinstance(extras, dict) else None
            if names is not None:
                if not isinstance(names, list):
                    raise self.err(f"meshes[{m_i}].extras.targetNames", "must be an array of strings")
                for k, n in enumerate(names):
                    self.name(n, f"meshes[{m_i}].extras.targetNames[{k}]")

    def name(self, n, where: str) -> None:
        if not isinstance(n, str):
            raise self.err(where, f"must be a string, not {type(n).__name__}")
        size = len(n.encode("utf-8", "surrogatepass"))
        if size > NAME_LIMIT:
            raise self.err(where, f"{size} bytes; Assimp keeps names of at most {NAME_LIMIT} bytes")

    # ------------------------------------------------------------------ scenes and node hierarchy
    def scenes_and_nodes(self) -> None:
        d = self.doc
        nodes = d.array("nodes")
        for s_i, s in enumerate(d.array("scenes")):
            if not isinstance(s, dict):
                raise self.err(f"scenes[{s_i}]", "must be an object")
            for k, n in enumerate(self.list_of(s, "nodes", f"scenes[{s_i}]")):
                self.index(n, "nodes", f"scenes[{s_i}].nodes[{k}]")
        if "scene" in d.json:
            self.index(d.json["scene"], "scenes", "scene")
        parent: dict[int, int] = {}
        for n_i in range(len(nodes)):
            node = d.item("nodes", n_i)
            w = f"nodes[{n_i}]"
            for k, c in enumerate(self.list_of(node, "children", w)):
                self.index(c, "nodes", f"{w}.children[{k}]")
                if c == n_i or c in parent:
                    other = "itself" if c == n_i else f"nodes[{parent[c]}] too"
                    raise self.err(f"{w}.children[{k}]", f"node {c} is already a child of {other}")
                parent[c] = n_i
            for key, size in (("translation", 3), ("rotation", 4), ("scale", 3), ("matrix", 16)):
                if key in node:
                    self.numbers(node[key], size, f"{w}.{key}")
            if "mesh" in node:
                self.index(node["mesh"], "meshes", f"{w}.mesh")
            if "skin" in node:
                self.index(node["skin"], "skins", f"{w}.skin")
                if "mesh" not in node:
                    raise self.err(f"{w}.skin", "a skin needs a mesh on the same node")
            if "camera" in node:
                self.index(node["camera"], "cameras", f"{w}.camera")
            if "weights" in node:
                t = d.node_target_count(n_i) if "mesh" in node else 0
                self.numbers(node["weights"], len(node["weights"]) if isinstance(node["weights"], list) else -1,
                             f"{w}.weights")
                if len(node["weights"]) != t:
                    raise self.err(f"{w}.weights", f"{len(node['weights'])} weights for {t} morph targets")
        self.hierarchy_depth(len(nodes), parent)

    def hierarchy_depth(self, n: int, parent: dict[int, int]) -> None:
        """Refuse a cycle (Assimp's recursive node walk would go round forever) and a hierarchy deeper than the
        node_depth limit (Assimp's recursion grows with it), in one linear pass: each node's walk towards its
        root stops at the first node whose depth is known."""
        depth = [0] * n                  # 0: not known yet
        on_path = bytearray(n)
        limit = limits.value("node_depth")
        for start in range(n):
            if depth[start]:
                continue
            path, cur = [], start
            while cur is not None and not depth[cur]:
                if on_path[cur]:
                    raise self.err(f"nodes[{cur}]", "the node hierarchy has a cycle")
                on_path[cur] = 1
                path.append(cur)
                cur = parent.get(cur)
            d = depth[cur] if cur is not None else 0
            for node in reversed(path):
                d += 1
                depth[node] = d
            if d > limit:
                self.limit("node_depth", d, f"nodes[{start}]")

    def numbers(self, v, size: int, where: str) -> None:
        ok = isinstance(v, list) and len(v) == size and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x) for x in v)
        if not ok:
            raise self.err(where, f"must be {size} finite numbers")

    # ------------------------------------------------------------------ skins
    def skins(self) -> None:
        d = self.doc
        for s_i in range(len(d.array("skins"))):
            skin = d.item("skins", s_i)
            w = f"skins[{s_i}]"
            joints = self.list_of(skin, "joints", w, required=True)
            for k, j in enumerate(joints):
                self.index(j, "nodes", f"{w}.joints[{k}]")
            if len(set(joints)) != len(joints):
                raise self.err(f"{w}.joints", "lists a node twice")
            if "skeleton" in skin:
                self.index(skin["skeleton"], "nodes", f"{w}.skeleton")
            iw = f"{w}.inverseBindMatrices"
            if "inverseBindMatrices" not in skin:  # valid glTF (identity), but Assimp 5.2.5 dies on it
                raise self.err(iw, "missing; the importer (Assimp 5.2.5) crashes on skins without them "
                                   "(store identity matrices)")
            m = self.acc(skin["inverseBindMatrices"], iw)
            if m.shape[1:] != (4, 4) or m.dtype.kind != "f":
                raise self.err(iw, "must be a MAT4 float accessor")
            if len(m) < len(joints):
                raise self.err(iw, f"{len(m)} matrices for {len(joints)} joints")
            if not np.isfinite(m).all():
                raise self.err(iw, f"non-finite value in matrix {_first(~np.isfinite(m))}")

    # ------------------------------------------------------------------ meshes
    def meshes(self) -> None:
        d = self.doc
        skins_of_mesh: dict[int, set[int]] = {}
        for n_i in range(len(d.array("nodes"))):
            node = d.item("nodes", n_i)
            if "mesh" in node and "skin" in node:
                skins_of_mesh.setdefault(node["mesh"], set()).add(node["skin"])
        for m_i in range(len(d.array("meshes"))):
            mesh = d.item("meshes", m_i)
            w = f"meshes[{m_i}]"
            prims = self.list_of(mesh, "primitives", w, required=True)
            counts = []
            for p_i, prim in enumerate(prims):
                if not isinstance(prim, dict):
                    raise self.err(f"{w}.primitives[{p_i}]", "must be an object")
                counts.append(self.primitive(prim, f"{w}.primitives[{p_i}]", skins_of_mesh.get(m_i, set())))
            if len(set(counts)) > 1:
                raise self.err(f"{w}.primitives", f"morph target counts differ between primitives: {counts}")
            if "weights" in mesh:
                mw = mesh["weights"]
                self.numbers(mw, len(mw) if isinstance(mw, list) else -1, f"{w}.weights")
                if len(mw) != counts[0]:
                    raise self.err(f"{w}.weights", f"{len(mw)} weights for {counts[0]} morph targets")

    def primitive(self, prim: dict, w: str, skins: set[int]) -> int:
        attrs = prim.get("attributes")
        if not isinstance(attrs, dict) or "POSITION" not in attrs:
            raise self.err(f"{w}.attributes", "must be an object with POSITION")
        mode = prim.get("mode", 4)
        if not is_int(mode) or not 0 <= mode <= 6:
            raise self.err(f"{w}.mode", f"{mode!r} is not a glTF primitive mode (0-6)")
        if "material" in prim:
            self.index(prim["material"], "materials", f"{w}.material")
        V = None
        for name, a_i in attrs.items():
            arr = self.acc(a_i, f"{w}.attributes.{name}")
            if V is None:
                V = len(self.acc(attrs["POSITION"], f"{w}.attributes.POSITION"))
            if len(arr) != V:
                raise self.err(f"{w}.attributes.{name}", f"{len(arr)} elements, POSITION has {V}")
        if V == 0:
            raise self.err(f"{w}.attributes.POSITION", "0 vertices")
        if "indices" in prim:
            iw = f"{w}.indices"
            idx = self.acc(prim["indices"], iw)
            if idx.ndim != 1 or idx.dtype.kind != "u" or d_normalized(self.doc, prim["indices"]):
                raise self.err(iw, "must be a SCALAR unsigned-integer accessor")
            if len(idx) and idx.max() >= V:
                k = _first(idx >= V)
                raise self.err(iw, f"index {int(idx[k])} at position {k} >= vertex count {V}")
        self.skin_attributes(attrs, w, V, skins)
        targets = prim.get("targets", [])
        if not isinstance(targets, list):
            raise self.err(f"{w}.targets", "must be an array")
        for t_i, t in enumerate(targets):
            tw = f"{w}.targets[{t_i}]"
            if not isinstance(t, dict) or not t:
                raise self.err(tw, "must be an object of attribute accessors")
            for name, a_i in t.items():
                arr = self.acc(a_i, f"{tw}.{name}")
                if len(arr) != V:
                    raise self.err(f"{tw}.{name}", f"{len(arr)} vertices, the primitive has {V}")
        return len(targets)

    def skin_attributes(self, attrs: dict, w: str, V: int, skins: set[int]) -> None:
        sets = sorted(k for k in attrs if k.startswith("JOINTS_"))
        wsets = sorted(k for k in attrs if k.startswith("WEIGHTS_"))
        if [k[7:] for k in sets] != [k[8:] for k in wsets]:
            raise self.err(f"{w}.attributes", f"JOINTS sets {sets} and WEIGHTS sets {wsets} do not pair up")
        if not sets:
            return
        joints, weights = [], []
        for jk, wk in zip(sets, wsets):
            j, wt = self.acc(attrs[jk], f"{w}.attributes.{jk}"), self.acc(attrs[wk], f"{w}.attributes.{wk}")
            if j.shape != (V, 4) or j.dtype.kind != "u" or d_normalized(self.doc, attrs[jk]):
                raise self.err(f"{w}.attributes.{jk}", "must be a VEC4 unsigned byte/short accessor")
            if wt.shape != (V, 4) or wt.dtype.kind != "f":
                raise self.err(f"{w}.attributes.{wk}", "must be a VEC4 float or normalized accessor")
            bad = ~np.isfinite(wt) | (wt < 0)
            if bad.any():
                v = _first(bad)
                raise self.err(f"{w}.attributes.{wk}", f"negative or non-finite weight at vertex {v}: "
                                                       f"{wt[v].tolist()}")
            joints.append(j)
            weights.append(wt)
        j = np.concatenate(joints, axis=1)
        wt = np.concatenate(weights, axis=1).astype(np.float64)
        for s in sorted(skins):
            n = len(self.doc.item("skins", s)["joints"])
            bad = (j >= n) & (wt > 0)
            if bad.any():
                v = _first(bad)
                raise self.err(f"{w}.attributes.JOINTS", f"joint {int(j[v][bad[v]][0])} at vertex {v} is beyond "
                                                         f"skins[{s}]'s {n} joints")
        sums = wt.sum(axis=1)
        off = (sums > 0) & (np.abs(sums - 1.0) > WEIGHT_SUM_TOLERANCE)
        if off.any():
            v = _first(off)
            warnings.warn(AssetWarning(f"file {self.doc.file}: {w}.attributes.WEIGHTS: weights of "
                                       f"{int(off.sum())} vertices do not sum to 1 (vertex {v}: {sums[v]:.4g}); "
                                       "renormalized"), stacklevel=2)

    # ------------------------------------------------------------------ animations
    def animations(self) -> None:
        d = self.doc
        for a_i in range(len(d.array("animations"))):
            anim = d.item("animations", a_i)
            w = f"animations[{a_i}]"
            samplers = self.list_of(anim, "samplers", w, required=True)
            channels = self.list_of(anim, "channels", w, required=True)
            for s_i, s in enumerate(samplers):
                sw = f"{w}.samplers[{s_i}]"
                if not isinstance(s, dict):
                    raise self.err(sw, "must be an object")
                self.doc.interpolation(s, sw)
                t = self.acc(s.get("input"), f"{sw}.input")
                if len(t) == 0:
                    raise self.err(f"{sw}.input", "0 keyframes")
                if t.ndim != 1 or t.dtype.kind != "f" or d_normalized(self.doc, s["input"]):
                    raise self.err(f"{sw}.input", "must be a SCALAR float accessor")
                if not np.isfinite(t).all():
                    raise self.err(f"{sw}.input", f"non-finite time at key {_first(~np.isfinite(t))}")
                if (np.diff(t) <= 0).any():
                    k = _first(np.diff(t) <= 0) + 1
                    raise self.err(f"{sw}.input", f"times must increase strictly (key {k}: {t[k]:g} after "
                                                  f"{t[k - 1]:g})")
                self.acc(s.get("output"), f"{sw}.output")
            for c_i, ch in enumerate(channels):
                cw = f"{w}.channels[{c_i}]"
                if not isinstance(ch, dict):
                    raise self.err(cw, "must be an object")
                s_i = ch.get("sampler")
                if not is_int(s_i) or not 0 <= s_i < len(samplers):
                    raise self.err(f"{cw}.sampler", f"sampler index {s_i!r} out of range ({len(samplers)} "
                                                    "samplers)")
            for c_i, c in enumerate(d.channels(a_i)):
                cw = f"{w}.channels[{c_i}]"
                if c.node is None:   # skipped with a warning (gltf_animation): glTF says to ignore it
                    continue
                self.index(c.node, "nodes", f"{cw}.target.node")
                s = samplers[c.sampler]
                sw = f"{w}.samplers[{c.sampler}]"
                K = len(self.cache[s["input"]])
                out = self.cache[s["output"]]
                if self.acc_type(s["output"]) not in PATH_TYPES[c.path]:
                    raise self.err(f"{sw}.output", f"{self.acc_type(s['output'])} values cannot drive {c.path}")
                if out.dtype.kind != "f" and not d_normalized(self.doc, s["output"]):
                    raise self.err(f"{sw}.output", "must be float or normalized integers")
                per_key = 1
                if c.path == "weights":
                    per_key = d.node_target_count(c.node)
                    if per_key == 0:
                        raise self.err(f"{cw}.target.node", f"animates weights of nodes[{c.node}], which has no "
                                                            "morph targets")
                want = K * per_key * (3 if s.get("interpolation") == "CUBICSPLINE" else 1)
                if len(out) != want:
                    raise self.err(f"{sw}.output", f"{len(out)} values for {K} keyframes"
                                                   + (f" x {per_key} targets" if per_key > 1 else "")
                                                   + (" x 3 (CUBICSPLINE)" if want > K * per_key else ""))
                if not np.isfinite(out).all():
                    raise self.err(f"{sw}.output", f"non-finite value at {_first(~np.isfinite(out))}")

    # ------------------------------------------------------------------ materials, textures, images
    def materials(self) -> None:
        d = self.doc
        # Texture, image and sampler references that point nowhere are bad material data, not bad geometry: the
        # model still renders, and asset/materials.py reports each as a one-line warning naming the material.
        for m_i, m in enumerate(d.array("materials")):
            for where, ref in _texture_refs(m, f"materials[{m_i}]"):
                if not isinstance(ref, dict):
                    raise self.err(where, "must be an object")
        for t_i in range(len(d.array("textures"))):
            d.item("textures", t_i)
        for i_i in range(len(d.array("images"))):
            img = d.item("images", i_i)
            if "bufferView" in img:
                d.view_range(img["bufferView"], f"images[{i_i}].bufferView")


def d_normalized(doc: GltfDocument, a_i: int) -> bool:
    return doc.json["accessors"][a_i].get("normalized") is True


def _texture_refs(obj, where: str):
    """(path, textureInfo) for every ``...Texture`` key in a material, nested objects included."""
    if isinstance(obj, dict):
        for k, v in obj.items():
            if k.endswith("Texture"):
                yield f"{where}.{k}", v
            elif isinstance(v, dict) and k != "extras":
                yield from _texture_refs(v, f"{where}.{k}")
