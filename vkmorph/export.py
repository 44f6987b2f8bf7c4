"""Writing a pose or a bake to a file: glTF 2.0 (.glb / .gltf, pygltflib), .obj / .ply (trimesh); atomic.

What a glTF export carries, when it knows its source (``Pose.export`` / ``Bake.export`` of ``Model.pose`` /
``Model.bake``; the ``ExportSource``):

- The source's **node hierarchy and names** (every node, its children, its local translation / rotation / scale
  at the pose, or at the first frame of a bake). In mesh space each primitive hangs on its own node, so the
  exported file places it where the source does; in world space (vertices already in world space) the meshes
  hang on root-level nodes named like their source node, and the hierarchy stays as transforms only.
- Per primitive: POSITION, NORMAL, TANGENT (when every tangent is a unit vector), TEXCOORD_0 / TEXCOORD_1,
  COLOR_0 (linear float RGBA) and its **material** (factors, alpha mode, double-sided, unlit, every texture with
  its sampler, texture coordinate set and KHR_texture_transform); images are embedded (PNG / JPEG bytes as the
  source had them, anything else re-encoded as PNG). Skins are not written: the vertices are already skinned.
- A **bake** (more than one frame) is written as morph-target frames: frame 0 is the mesh, frame k (k >= 1) its
  morph target k-1 (POSITION and NORMAL deltas), and one animation "baked" whose weights channel steps through
  them at the bake's times (LINEAR between consecutive frames, starting at 0 s), with translation / rotation /
  scale channels for every node that moves during the bake. Every glTF viewer plays it; sampled at a bake
  time it shows exactly that frame. The times must increase.

.obj / .ply write one merged mesh of positions and normals. A bake of F > 1 frames writes one file per frame,
``NAME_0000.obj`` ... ``NAME_{F-1:04d}.obj`` next to the given name (as ``vkmorph render --frames`` names
PNGs); all of them or none (an error removes the frames already written).

Without a source (the plain `export` call with arrays) the glTF has one root node + mesh per primitive and no
materials, as before.
"""

from __future__ import annotations

import io
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .errors import UsageError

__all__ = ["EXPORT_SUFFIXES", "ExportSource", "export", "frame_paths"]

EXPORT_SUFFIXES = (".glb", ".gltf", ".obj", ".ply")
_WRAP = {"repeat": 10497, "clamp": 33071, "mirror": 33648}


@dataclass
class ExportSource:
    """What a glTF export needs beyond the vertices. ``instances``: per exported primitive (same order)
    its (node, primitive asset); ``trs``: each frame's local node transforms (T (F, N, 3), R (F, N, 4) x y z w,
    S (F, N, 3)), or a function giving them, called on first use (a bake that is never exported does not sample
    its clip on the host for them); ``space``: the space of the vertices ("mesh" or "world")."""

    scene: object
    instances: list
    trs_of: object
    space: str

    @property
    def trs(self) -> tuple:
        if callable(self.trs_of):
            self.trs_of = self.trs_of()
        return self.trs_of


def frame_paths(path: Path, frames: int) -> list[Path]:
    """The path itself for one frame; ``NAME_0000.ext`` ... for more."""
    if frames <= 1:
        return [path]
    return [path.with_name(f"{path.stem}_{i:04d}{path.suffix}") for i in range(frames)]


def export(path, prims: Sequence[tuple], times, source: ExportSource | None = None):
    """Write ``(name, positions (F,V,3), normals (F,V,3), indices[, tangents (F,V,3)])`` primitives to ``path``
    atomically. Returns the path written, or for .obj / .ply of several frames the list of per-frame paths."""
    from .outputs import atomic_write, check_output

    p = check_output(path, flag="export path", suffixes=EXPORT_SUFFIXES)
    suffix = p.suffix.lower()
    times = np.asarray(times, np.float64).reshape(-1)
    if suffix in (".glb", ".gltf"):
        if len(times) > 1 and not (np.diff(times) > 0).all():
            raise UsageError("a glTF bake needs increasing times (its animation steps through the frames in "
                             f"order); got {times[:8].tolist()}{' ...' if len(times) > 8 else ''}")
        gltf = _gltf_document(prims, times, source)
        if suffix == ".glb":
            data = b"".join(gltf.save_to_bytes())
        else:
            from pygltflib import BufferFormat

            gltf.convert_buffers(BufferFormat.DATAURI)
            data = gltf.gltf_to_json().encode("utf-8")
        return atomic_write(path, lambda f: f.write(data))
    paths = frame_paths(Path(path), len(times))
    for q in paths[1:]:
        check_output(q, flag="export path", suffixes=EXPORT_SUFFIXES)
    written: list[Path] = []
    try:
        for f, q in enumerate(paths):
            data = _mesh_bytes(prims, f, suffix)
            written.append(atomic_write(q, lambda fh, data=data: fh.write(data)))
    except BaseException:
        for q in written:
            q.unlink(missing_ok=True)
        raise
    return written[0] if len(paths) == 1 else written


def _mesh_bytes(prims, frame: int, suffix: str) -> bytes:
    import trimesh

    verts, faces, norms, base = [], [], [], 0
    for pr in prims:
        pos, nrm, idx = pr[1], pr[2], pr[3]
        verts.append(pos[frame])
        norms.append(nrm[frame])
        faces.append(np.asarray(idx).reshape(-1, 3).astype(np.int64) + base)
        base += pos.shape[1]
    mesh = trimesh.Trimesh(np.concatenate(verts), np.concatenate(faces), vertex_normals=np.concatenate(norms),
                           process=False)
    data = mesh.export(file_type=suffix[1:])
    return data.encode("utf-8") if isinstance(data, str) else data


# ---------------------------------------------------------------------- glTF
class _Writer:
    """One glTF document under construction: a binary blob, its views and accessors."""

    def __init__(self):
        import pygltflib as g

        self.g = g
        self.blob = bytearray()
        self.views: list = []
        self.accessors: list = []

    def view(self, data: bytes, target: int | None = None) -> int:
        while len(self.blob) % 4:
            self.blob.append(0)
        self.views.append(self.g.BufferView(buffer=0, byteOffset=len(self.blob), byteLength=len(data), target=target))
        self.blob.extend(data)
        return len(self.views) - 1

    def add(self, array: np.ndarray, target: int | None, kind: str, ctype: int, minmax: bool = False) -> int:
        a = np.ascontiguousarray(array)
        acc = self.g.Accessor(bufferView=self.view(a.tobytes(), target), componentType=ctype,
                              count=int(a.shape[0]), type=kind)
        if minmax:
            flat = a.reshape(a.shape[0], -1)
            acc.min = flat.min(axis=0).astype(float).tolist() if a.size else [0.0] * flat.shape[1]
            acc.max = flat.max(axis=0).astype(float).tolist() if a.size else [0.0] * flat.shape[1]
        self.accessors.append(acc)
        return len(self.accessors) - 1


def _unit_normals(n) -> np.ndarray:
    """Normals as glTF requires them (unit length): renormalized in float64; a zero or non-finite one (a part
    collapsed by a zero scale, which `Model.pose` reports as zero normals) becomes +Z, on triangles of no area."""
    n = np.asarray(n, np.float64)
    length = np.linalg.norm(n, axis=-1, keepdims=True)
    ok = np.isfinite(length) & (length > 1e-12)
    out = np.where(ok, n / np.where(ok, length, 1.0), np.array([0.0, 0.0, 1.0]))
    return out.astype(np.float32)


def _unit_tangents(t: np.ndarray | None) -> bool:
    if t is None or not len(t) or not np.isfinite(t).all():
        return False
    return bool((np.abs(np.linalg.norm(t[:, :3], axis=1) - 1.0) < 5e-4).all() and (np.abs(t[:, 3]) == 1.0).all())


def _gltf_document(prims, times: np.ndarray, source: ExportSource | None):
    """The document: nodes (the source's hierarchy, or one per primitive), meshes, materials, the bake's
    animation."""
    g = _Writer()
    gl = g.g
    F32, U32 = gl.FLOAT, gl.UNSIGNED_INT
    F = len(times)
    nodes: list = []
    meshes: list = []
    materials = _Materials(g) if source is not None else None

    def primitive(k: int, pr) -> object:
        pos, nrm, idx = np.asarray(pr[1], np.float32), _unit_normals(pr[2]), pr[3]
        attrs = gl.Attributes(POSITION=g.add(pos[0], gl.ARRAY_BUFFER, gl.VEC3, F32, True),
                              NORMAL=g.add(nrm[0], gl.ARRAY_BUFFER, gl.VEC3, F32))
        material = None
        if source is not None:
            asset = source.instances[k][1]
            tan = None
            if len(pr) > 4 and pr[4] is not None:
                tan = np.concatenate([np.asarray(pr[4][0], np.float32),
                                      asset.vertices["tangent"][:, 3:4].astype(np.float32)], axis=1)
            if _unit_tangents(tan):
                attrs.TANGENT = g.add(tan, gl.ARRAY_BUFFER, gl.VEC4, F32)
            attrs.TEXCOORD_0 = g.add(asset.vertices["texcoord"].astype(np.float32), gl.ARRAY_BUFFER, gl.VEC2, F32)
            if asset.texcoord1 is not None:
                attrs.TEXCOORD_1 = g.add(np.asarray(asset.texcoord1, np.float32), gl.ARRAY_BUFFER, gl.VEC2, F32)
            if asset.colors is not None:
                attrs.COLOR_0 = g.add(np.clip(np.asarray(asset.colors, np.float32), 0.0, 1.0), gl.ARRAY_BUFFER,
                                      gl.VEC4, F32)
            material = materials.index(asset)
        targets = [{"POSITION": g.add(pos[f] - pos[0], gl.ARRAY_BUFFER, gl.VEC3, F32, True),
                    "NORMAL": g.add(nrm[f] - nrm[0], gl.ARRAY_BUFFER, gl.VEC3, F32)} for f in range(1, F)]
        return gl.Primitive(attributes=attrs, indices=g.add(np.asarray(idx, np.uint32), gl.ELEMENT_ARRAY_BUFFER,
                                                            gl.SCALAR, U32),
                            mode=gl.TRIANGLES, material=material, targets=targets or None)

    def mesh(name: str, prim_list: list) -> int:
        m = gl.Mesh(name=name, primitives=prim_list)
        if F > 1:
            m.weights = [0.0] * (F - 1)
            m.extras = {"targetNames": [f"frame{f}" for f in range(1, F)]}
        meshes.append(m)
        return len(meshes) - 1

    roots: list[int] = []
    if source is None:
        for k, pr in enumerate(prims):
            nodes.append(gl.Node(name=pr[0], mesh=mesh(pr[0], [primitive(k, pr)])))
            roots.append(len(nodes) - 1)
    else:
        scene = source.scene
        T, R, S = source.trs
        for i, n in enumerate(scene.nodes):
            nodes.append(gl.Node(name=n.name, children=list(n.children) or None,
                                 translation=_floats(T[0, i]), rotation=_floats(R[0, i]), scale=_floats(S[0, i])))
        roots = list(scene.roots)
        by_node: dict[int, list[int]] = {}
        for k, (node, _asset) in enumerate(source.instances):
            by_node.setdefault(node, []).append(k)
        for node, ks in by_node.items():
            nm = scene.nodes[node]
            mesh_name = scene.meshes[nm.mesh].name if nm.mesh is not None else nm.name
            mi = mesh(mesh_name or nm.name, [primitive(k, prims[k]) for k in ks])
            if source.space == "mesh":
                nodes[node].mesh = mi
            else:   # world-space vertices: a root-level node without a transform carries them
                nodes.append(gl.Node(name=nm.name, mesh=mi))
                roots.append(len(nodes) - 1)
    doc = gl.GLTF2(asset=gl.Asset(generator="vkmorph", version="2.0"), scene=0, scenes=[gl.Scene(nodes=roots)],
                   nodes=nodes, meshes=meshes)
    if F > 1:
        _animation(g, doc, times, source)
    if materials is not None:
        materials.finish(doc)
    doc.accessors, doc.bufferViews = g.accessors, g.views
    doc.buffers = [gl.Buffer(byteLength=len(g.blob))]
    doc.set_binary_blob(bytes(g.blob))
    return doc


def _floats(a) -> list[float]:
    return [float(x) for x in a]


def _animation(g: _Writer, doc, times: np.ndarray, source: ExportSource | None) -> None:
    """One animation: a weights channel per mesh node (frame k at times[k]), TRS channels for moving nodes."""
    gl = g.g
    F = len(times)
    t_acc = g.add(np.asarray(times - times[0], np.float32), None, gl.SCALAR, gl.FLOAT, True)
    w = np.zeros((F, F - 1), np.float32)
    w[np.arange(1, F), np.arange(F - 1)] = 1.0
    w_acc = g.add(w.reshape(-1), None, gl.SCALAR, gl.FLOAT)
    channels, samplers = [], []

    def channel(node: int, path: str, output: int) -> None:
        samplers.append(gl.AnimationSampler(input=t_acc, output=output, interpolation="LINEAR"))
        channels.append(gl.AnimationChannel(sampler=len(samplers) - 1,
                                            target=gl.AnimationChannelTarget(node=node, path=path)))

    for i, n in enumerate(doc.nodes):
        if n.mesh is not None:
            channel(i, "weights", w_acc)
    if source is not None:
        for path, arr in zip(("translation", "rotation", "scale"), source.trs):
            kind = gl.VEC4 if path == "rotation" else gl.VEC3
            for node in range(arr.shape[1]):
                v = np.asarray(arr[:, node], np.float64)
                if (v != v[0]).any():
                    if path == "rotation":   # one hemisphere, so LINEAR (slerp) takes the short way
                        v = v / np.linalg.norm(v, axis=1, keepdims=True)
                        for f in range(1, F):
                            if np.dot(v[f], v[f - 1]) < 0:
                                v[f] = -v[f]
                    channel(node, path, g.add(v.astype(np.float32), None, kind, gl.FLOAT))
    doc.animations = [gl.Animation(name="baked", channels=channels, samplers=samplers)]


class _Materials:
    """The source's materials, textures, samplers and images as glTF objects, each written once."""

    def __init__(self, g: _Writer):
        self.g = g
        self.materials: list = []
        self.by_id: dict[int, int] = {}
        self.images: dict[str, int] = {}
        self.image_list: list = []
        self.samplers: dict = {}
        self.sampler_list: list = []
        self.textures: dict = {}
        self.texture_list: list = []
        self.extensions: set[str] = set()

    def index(self, asset) -> int:
        from .asset.materials import Material

        m = asset.material
        if m is None:   # as the renderer draws a primitive without a material
            m = Material.plain(asset.base_color, name=asset.name or "default")
            key = ("plain", tuple(asset.base_color))
        else:
            key = id(m)
        if key not in self.by_id:
            self.by_id[key] = len(self.materials)
            self.materials.append(self._material(m))
        return self.by_id[key]

    def _material(self, m):
        gl = self.g.g
        pbr = gl.PbrMetallicRoughness(baseColorFactor=_floats(m.base_color_factor),
                                      metallicFactor=float(m.metallic_factor),
                                      roughnessFactor=float(m.roughness_factor))
        if m.base_color_texture is not None:
            pbr.baseColorTexture = self._info(m.base_color_texture, gl.TextureInfo)
        if m.metallic_roughness_texture is not None:
            pbr.metallicRoughnessTexture = self._info(m.metallic_roughness_texture, gl.TextureInfo)
        out = gl.Material(name=m.name, pbrMetallicRoughness=pbr, emissiveFactor=_floats(m.emissive_factor),
                          alphaMode=m.alpha_mode, doubleSided=bool(m.double_sided))
        if m.alpha_mode == "MASK":
            out.alphaCutoff = float(m.alpha_cutoff)
        if m.normal_texture is not None:
            out.normalTexture = self._info(m.normal_texture, gl.NormalMaterialTexture, scale=True)
        if m.occlusion_texture is not None:
            out.occlusionTexture = self._info(m.occlusion_texture, gl.OcclusionTextureInfo, strength=True)
        if m.emissive_texture is not None:
            out.emissiveTexture = self._info(m.emissive_texture, gl.TextureInfo)
        if m.unlit:
            out.extensions = {"KHR_materials_unlit": {}}
            self.extensions.add("KHR_materials_unlit")
        return out

    def _info(self, ref, cls, scale: bool = False, strength: bool = False):
        info = cls(index=self._texture(ref), texCoord=int(ref.texcoord))
        if scale:
            info.scale = float(ref.scale)
        if strength:
            info.strength = float(ref.scale)
        tt = _texture_transform(ref.transform)
        if tt is not None:
            if ref.texcoord:
                tt["texCoord"] = int(ref.texcoord)
            info.extensions = {"KHR_texture_transform": tt}
            self.extensions.add("KHR_texture_transform")
        return info

    def _texture(self, ref) -> int:
        gl = self.g.g
        key = (self._image(ref.image), self._sampler(ref.sampler))
        if key not in self.textures:
            self.textures[key] = len(self.texture_list)
            self.texture_list.append(gl.Texture(source=key[0], sampler=key[1]))
        return self.textures[key]

    def _sampler(self, s) -> int:
        gl = self.g.g
        if s not in self.samplers:
            mag = 9729 if s.mag_linear else 9728
            if not s.mipmaps:
                mn = 9729 if s.min_linear else 9728
            else:   # 9984 NEAREST_MIPMAP_NEAREST, 9985 LINEAR_MIPMAP_NEAREST, 9986 NEAREST_..LINEAR, 9987 LINEAR_..
                mn = 9984 + (1 if s.min_linear else 0) + (2 if s.mip_linear else 0)
            self.samplers[s] = len(self.sampler_list)
            self.sampler_list.append(gl.Sampler(magFilter=mag, minFilter=mn, wrapS=_WRAP[s.wrap_s],
                                                wrapT=_WRAP[s.wrap_t]))
        return self.samplers[s]

    def _image(self, src) -> int:
        gl = self.g.g
        if src.key not in self.images:
            data, mime = _image_bytes(src)
            self.images[src.key] = len(self.image_list)
            self.image_list.append(gl.Image(name=src.name, mimeType=mime, bufferView=self.g.view(data)))
        return self.images[src.key]

    def finish(self, doc) -> None:
        doc.materials = self.materials
        if self.texture_list:
            doc.textures, doc.samplers, doc.images = self.texture_list, self.sampler_list, self.image_list
        if self.extensions:
            doc.extensionsUsed = sorted(self.extensions)


def _texture_transform(a: tuple) -> dict | None:
    """KHR_texture_transform's offset / rotation / scale from the affine rows ``asset.materials`` keeps
    (``texture_transform``'s inverse); None for the identity."""
    if tuple(float(x) for x in a) == (1.0, 0.0, 0.0, 0.0, 1.0, 0.0):
        return None
    ca, cb, cc, cd, ce, cf = (float(x) for x in a)
    sx, sy = math.hypot(ca, cd), math.hypot(cb, ce)
    rot = math.atan2(-cd, ca)
    return {"offset": [cc, cf], "rotation": rot, "scale": [sx, sy]}


def _image_bytes(src) -> tuple[bytes, str]:
    """PNG / JPEG bytes as the source has them, anything else (WebP, ...) decoded and re-encoded as PNG."""
    data = src.data
    if data is None and src.path is not None:
        try:
            data = Path(src.path).read_bytes()
        except OSError:
            data = None
    if data:
        if data[:8] == b"\x89PNG\r\n\x1a\n":
            return bytes(data), "image/png"
        if data[:3] == b"\xff\xd8\xff":
            return bytes(data), "image/jpeg"
    from PIL import Image

    from .asset.materials import MaterialDataError

    try:
        rgba = src.decode()
    except MaterialDataError:   # the renderer drew without it too: a 1x1 white image keeps the material valid
        rgba = np.full((1, 1, 4), 255, np.uint8)
    buf = io.BytesIO()
    Image.fromarray(rgba, "RGBA").save(buf, format="PNG")
    return buf.getvalue(), "image/png"
