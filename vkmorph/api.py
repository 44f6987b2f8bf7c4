"""The Python API for baking poses: open a model, pose it, bake a clip on the GPU, export the result.

>>> import numpy as np, vkmorph
>>> with vkmorph.open("RobotExpressive.glb") as m:
...     pose = m.pose(weights={"Surprised": 1.0}, clip="Dance", time=1.2, space="world")
...     head = pose["Head_4/0"]                       # positions, normals (V, 3), indices (I,)
...     bake = m.bake(clip="Dance", times=np.linspace(0, 1, 30))   # bake.positions: (30, V, 3)
...     bake.export("dance.glb")                      # glTF: morph targets + a weights animation

Every number comes from the same GPU work the renderer does: the morph compute pass of
`vkmorph.render.morph_pass.MorphRuntime`, then the skinning code of ``skin.vert`` (``glsl/bake.comp``, which
also applies rigid parts' world matrices). How a bake is batched and read back: `vkmorph.bake`;
``bake_numpy`` computes the same result with numpy (the reference the tests compare against).

Spaces (``space=``):

- ``"mesh"``: the primitive's own space. Skinned primitives: after skinning, expressed in the space of the node
  that instances the mesh (``inverse(mesh node world) x joint world x inverse bind``), as ``vkmorph morph
  --skinned`` writes. Unskinned primitives: the morphed vertices as stored in the file.
- ``"world"``: scene world space (skinned: ``joint world x inverse bind``; unskinned: the node's world matrix;
  normals by the cofactor matrix, so a node scaled to zero gives zero normals instead of an error).

Each drawn instance (a node and one primitive of its mesh) is one `Primitive`, named ``"<node>/<k>"``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .bake import Bake, bake_numpy, measure_bake_throughput
from .errors import UsageError

__all__ = ["Bake", "Model", "Pose", "Primitive", "bake_numpy", "measure_bake_throughput", "open"]

SPACES = ("mesh", "world")
EXPORT_SUFFIXES = (".glb", ".gltf", ".obj", ".ply")


@dataclass
class Primitive:
    """One posed primitive instance: arrays in ``space``; ``indices`` is a uint32 triangle list."""

    name: str                    # "<node name>/<primitive index in the mesh>"
    node: int
    primitive: int
    mesh: str
    skinned: bool
    positions: np.ndarray        # (V, 3) float32
    normals: np.ndarray          # (V, 3) float32
    indices: np.ndarray          # (I,) uint32
    space: str = "mesh"
    tangents: np.ndarray | None = None  # (V, 3) float32 (tangent.xyz; w stays the file's handedness)
    bounds: np.ndarray | None = None    # (2, 3) float32 [min, max] containing ``positions`` (Model.bounds)


@dataclass
class Pose:
    """The primitives of one pose, in scene order. Index by position or by name (``pose["Head/0"]``)."""

    primitives: list[Primitive]
    space: str

    def __getitem__(self, key: int | str) -> Primitive:
        if isinstance(key, int):
            return self.primitives[key]
        for p in self.primitives:
            if p.name == key:
                return p
        raise UsageError(f"no primitive named {key!r}; the pose has {[p.name for p in self.primitives]}")

    def __len__(self) -> int:
        return len(self.primitives)

    def __iter__(self):
        return iter(self.primitives)

    def export(self, path) -> Path:
        """Write the pose as .glb/.gltf (pygltflib), .obj or .ply (trimesh; one merged mesh); atomic."""
        return export(path, [(p.name, p.positions[None], p.normals[None], p.indices) for p in self.primitives],
                      np.zeros(1))


def open(path=None, **kw) -> Model:  # noqa: A001 - the API's entry point is vkmorph.open
    """Open a model file (glTF/GLB/FBX/... through the validated importer); ``None`` opens the default scene.
    Keyword arguments go to `Model`."""
    return Model(path, **kw)


class Model:
    """A scene on the GPU, ready to be posed and baked. Close it (or use ``with``) to free the GPU objects.

    ``validation``: run under the Khronos validation layer (default: ``VKMORPH_VALIDATION``);
    ``device``: a substring of the Vulkan device name (default: ``VKMORPH_DEVICE``, else the first GPU);
    ``delta_format``: ``"full"`` or ``"compact"`` (see `vkmorph.render.morph_pass.MorphRuntime`);
    ``weight_range``: the allowed weights (default: the file's, at least [0, 1]); ``extra_weights``: values the
    file's range is widened to include (the CLI passes the weights it was given, so any finite weight works);
    ``allow_external_uris``: let the file's URIs leave its folder (default: ``VKMORPH_ALLOW_EXTERNAL_URIS``);
    ``clamp``: clamp weights outside the range to it, with a ``WeightClampedWarning``, instead of raising."""

    def __init__(self, path=None, *, validation: bool | None = None, device: str | None = None,
                 delta_format: str = "full", progress: bool | None = None, echo_messages: bool = False,
                 weight_range: tuple[float, float] | None = None, extra_weights=(),
                 allow_external_uris: bool | None = None, clamp: bool = False):
        from .app.progress import stages
        from .asset.importer import load_scene
        from .gpu.context import Context, validation_requested

        self.progress = progress
        self.messages: list = []  # validation messages seen (kept after close())
        self.ctx = self.runtime = self._bake_cache = None
        with stages(["importing", "Vulkan device", "GPU morph data"], progress, "vkmorph.open") as step:
            self.scene = load_scene(path, allow_external_uris=allow_external_uris)
            step()
            self.ctx = Context.create(validation=validation_requested(False) if validation is None else validation,
                                      device_name=device, echo_messages=echo_messages)
            step()
            try:
                from .render.morph_pass import MorphRuntime

                if weight_range is None and len(extra_weights):
                    from .morph.state import file_weight_range

                    weight_range = file_weight_range(self.scene, extra_weights)
                self.runtime = MorphRuntime(self.ctx, self.scene, weight_range=weight_range,
                                            delta_format=delta_format, clamp=clamp)
            except BaseException:
                self.close()
                raise
        self.instances = list(self.runtime.instances)
        self.names = [self._name(i) for i in self.instances]
        self._bake_cache = None

    @property
    def skeleton(self):
        """The runtime's skeleton (one per scene: ``runtime.state``); None once the model is closed."""
        rt = getattr(self, "runtime", None)
        return rt.skeleton if rt is not None else None

    # ------------------------------------------------------------------ what is in the file
    def _name(self, inst) -> str:
        return f"{self.scene.nodes[inst.node].name}/{inst.prim_index}"

    @property
    def clips(self) -> list[str]:
        """Animation clip names, in file order."""
        return [a.name for a in self.scene.animations]

    @property
    def target_names(self) -> list[str]:
        """Morph target names (each may drive several nodes, e.g. every part of a head)."""
        out: list[str] = []
        for node in self.runtime.pose.morph_nodes:
            for n in self._node_targets(node):
                if n not in out:
                    out.append(n)
        return out

    @property
    def primitive_names(self) -> list[str]:
        return list(self.names)

    def _node_targets(self, node: int) -> list[str]:
        mesh = self.scene.meshes[self.scene.nodes[node].mesh]
        return next((p.target_names for p in mesh.primitives if p.morph_targets), [])

    # ------------------------------------------------------------------ posing (CPU side)
    def _alive(self) -> None:
        if getattr(self, "runtime", None) is None:
            raise UsageError("this model is closed; open it again with vkmorph.open(path)")

    def _check(self, clip, time, space):
        if space not in SPACES:
            raise UsageError(f"space must be one of {SPACES}, got {space!r}")
        if time is not None and clip is None:
            raise UsageError("a time needs a clip (clip=NAME|INDEX)")
        return self.scene.clip(clip) if clip is not None else None

    def _check_weights(self, weights):
        self._alive()
        if weights is None:
            return None
        pose = self.runtime.pose
        if isinstance(weights, Mapping):
            known = self.target_names
            for name, w in weights.items():
                if name not in known:
                    raise UsageError(f"unknown morph target {name!r}; the file has {known or 'none'}")
                if not isinstance(w, (int, float, np.floating, np.integer)) or not math.isfinite(w):
                    raise UsageError(f"weight of {name!r} must be a finite number, got {w!r}")
            return dict(weights)
        try:
            arr = np.asarray(weights, np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise UsageError("weights must be a {target name: weight} mapping or a list of numbers") from None
        if not np.isfinite(arr).all():
            raise UsageError(f"weights has a non-finite value: {arr.tolist()}")
        for node in pose.morph_nodes:
            if len(pose.weights(node)) != len(arr):
                raise UsageError(f"{len(arr)} weights given but node {self.scene.nodes[node].name!r} has "
                                 f"{len(pose.weights(node))} targets")
        return arr

    def _reset(self) -> None:
        """The file's default weights and the rest pose (so every frame depends only on its own arguments)."""
        self.runtime.state.reset()

    def _apply(self, clip, t, weights) -> None:
        """Rest pose + default weights, then the clip at ``t`` (clamped), then the weight overrides."""
        from .anim.player import AnimationPlayer

        pose = self.runtime.pose
        if clip is not None:
            player = AnimationPlayer(self.scene, pose, self.skeleton)
            player.clip = clip
            player.apply(min(max(float(t or 0.0), 0.0), clip.duration))
        if isinstance(weights, dict):
            for node in pose.morph_nodes:
                names = self._node_targets(node)
                if any(n in weights for n in names):
                    w = np.array(pose.weights(node), np.float64)
                    for k, n in enumerate(names):
                        if n in weights:
                            w[k] = weights[n]
                    pose.set_weights(node, w)
        elif weights is not None:
            for node in pose.morph_nodes:
                pose.set_weights(node, weights)

    def _matrices(self, inst, space: str) -> np.ndarray:
        """The skinning palette (J, 4, 4) for a skinned instance in ``space``."""
        if space == "mesh":
            try:
                return self.skeleton.skin_matrices(inst.prim.skin, inst.node)
            except np.linalg.LinAlgError:
                raise UsageError(f"node {self.scene.nodes[inst.node].name!r} has a singular world matrix at this "
                                 "pose, so mesh space is undefined; use space='world'") from None
        s = self.scene.skins[inst.prim.skin]
        world = self.skeleton.world_matrices()
        return (world[s.joints] @ s.inverse_bind_matrices).astype(np.float32)

    # ------------------------------------------------------------------ public calls
    def pose(self, weights=None, *, clip=None, time: float | None = None, space: str = "mesh",
             skinning: bool = True) -> Pose:
        """Positions, normals and indices of every primitive instance for one pose: the file's default weights,
        then ``clip`` sampled at ``time`` seconds (clamped, not looped), then ``weights`` ({target name: w} for
        every node with that target, or one list for every morph node) on top. ``skinning=False``: skinned
        primitives as the morph pass leaves them, before skinning."""
        b = self.bake(clip=clip, times=None if time is None else [time], weights=weights, space=space,
                      progress=False, skinning=skinning)
        # the bake leaves the runtime's weights and self.skeleton at this pose: bounds are for the same pose
        return Pose([Primitive(n, i.node, i.prim_index, self.scene.meshes[self.scene.nodes[i.node].mesh].name,
                               i.prim.is_skinned, b.positions[0, b.slices[n]], b.normals[0, b.slices[n]],
                               b.indices[n], space, b.tangents[0, b.slices[n]], self._bounds(i, space, skinning))
                     for n, i in zip(self.names, self.instances)], space)

    def _bounds(self, inst, space: str, skinning: bool) -> np.ndarray:
        """(2, 3) float32 [min, max] of an instance at the CURRENT pose (runtime weights, ``self.skeleton``), in
        the space ``pose(space=, skinning=)`` writes: `MorphRuntime.bounds` (CPU only, conservative and tight)
        for mesh space and skinned world space; the same cluster bounds (`vkmorph.morph.bounds`) with the
        node-space palette for mesh space after skinning (the runtime has no name for it), and with each cluster
        through the node's world matrix for rigid world space (the runtime transforms the whole box, up to
        1.3x wider on a rotated part). Widened by a few float32 ulps so the GPU's rounding stays inside."""
        from .morph.bounds import ClusterBounds

        rt, skinned = self.runtime, inst.prim.is_skinned and skinning
        if space == "mesh" and not skinned:
            b = rt.bounds(inst.node, inst.prim_index, space="mesh")
        elif space == "world" and skinned:
            b = rt.bounds(inst.node, inst.prim_index, space="world", skeleton=self.skeleton)
        else:
            cache = self.__dict__.setdefault("_cluster_bounds", {})
            cb = cache.get(id(inst.prim)) or cache.setdefault(id(inst.prim), ClusterBounds(inst.prim))
            w = rt.pose.weights(inst.node)[:inst.target_count] if inst.is_morphing else np.zeros(0)
            if skinned:   # mesh space after skinning: the node-space palette
                b = cb.at(w, self._matrices(inst, "mesh"))
            else:         # world, moved by the node: each cluster through it (tight under rotation)
                b = cb.at(w, matrix=self.skeleton.world_matrices()[inst.node])
        b = np.asarray(b, np.float64)
        pad = 8 * np.finfo(np.float32).eps * max(float(np.abs(b).max()), 1e-30)
        return np.stack([b[0] - pad, b[1] + pad]).astype(np.float32)

    def bake(self, clip=None, times=None, *, weights=None, space: str = "mesh", batch_frames: int | None = None,
             progress: bool | None = None, skinning: bool = True) -> Bake:
        """Sample ``clip`` at each of ``times`` (seconds) and return every frame's vertices, computed on the GPU
        in batches of ``batch_frames`` frames per command buffer (default: as many as fit in 64 MiB)."""
        self._alive()
        c = self._check(clip, 0.0 if times is not None else None, space)
        w = self._check_weights(weights)
        try:
            times = np.zeros(1) if times is None else np.asarray(times, np.float64).reshape(-1)
        except (TypeError, ValueError):
            raise UsageError("times must be a list of seconds") from None
        if times.size == 0 or not np.isfinite(times).all():
            raise UsageError("times must be a non-empty list of finite seconds")
        from .bake import GpuBaker

        return GpuBaker(self, space, skinning).run(c, times, w, batch_frames,
                                                  self.progress if progress is None else progress)

    def _free_bake_cache(self) -> None:
        """The bake's GPU resources (vkmorph.bake.BakeResources), kept between bakes of one configuration."""
        if getattr(self, "_bake_cache", None) is not None:
            self._bake_cache.destroy()
            self._bake_cache = None

    def close(self) -> None:
        """Free every GPU object (idempotent)."""
        self._free_bake_cache()
        if getattr(self, "runtime", None) is not None:
            self.runtime.destroy()
            self.runtime = None
        if getattr(self, "ctx", None) is not None:
            self.ctx.destroy()
            self.messages = list(self.ctx.errors_and_warnings())
            self.ctx = None

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# ---------------------------------------------------------------------- export
def export(path, prims: Sequence[tuple[str, np.ndarray, np.ndarray, np.ndarray]], times: np.ndarray) -> Path:
    """Write ``(name, positions (F,V,3), normals (F,V,3), indices)`` primitives to ``path`` atomically."""
    from .outputs import atomic_write, check_output

    p = check_output(path, flag="export path", suffixes=EXPORT_SUFFIXES)
    suffix = p.suffix.lower()
    if suffix in (".glb", ".gltf"):
        gltf = _gltf_document(prims, np.asarray(times, np.float64))
        if suffix == ".glb":
            data = b"".join(gltf.save_to_bytes())
        else:
            gltf.convert_buffers(_data_uri_format())
            data = gltf.gltf_to_json().encode("utf-8")
        return atomic_write(path, lambda f: f.write(data))
    import trimesh

    verts, faces, norms, base = [], [], [], 0
    for _, pos, nrm, idx in prims:
        verts.append(pos[0])
        norms.append(nrm[0])
        faces.append(idx.reshape(-1, 3).astype(np.int64) + base)
        base += pos.shape[1]
    mesh = trimesh.Trimesh(np.concatenate(verts), np.concatenate(faces), vertex_normals=np.concatenate(norms),
                           process=False)
    data = mesh.export(file_type=suffix[1:])
    data = data.encode("utf-8") if isinstance(data, str) else data
    return atomic_write(path, lambda f: f.write(data))


def _data_uri_format():
    from pygltflib import BufferFormat

    return BufferFormat.DATAURI


def _gltf_document(prims, times: np.ndarray):
    """A glTF 2.0 document: one node + mesh per primitive; frames after the first become morph targets
    (POSITION and NORMAL deltas) driven by one weights animation (LINEAR between consecutive frames)."""
    import pygltflib as g

    blob = bytearray()
    views, accessors = [], []

    def add(array: np.ndarray, target: int | None, kind: str, ctype: int, minmax: bool = False) -> int:
        a = np.ascontiguousarray(array)
        while len(blob) % 4:
            blob.append(0)
        views.append(g.BufferView(buffer=0, byteOffset=len(blob), byteLength=a.nbytes, target=target))
        blob.extend(a.tobytes())
        acc = g.Accessor(bufferView=len(views) - 1, componentType=ctype, count=int(a.shape[0]), type=kind)
        if minmax:
            flat = a.reshape(a.shape[0], -1)
            acc.min = flat.min(axis=0).astype(float).tolist() if a.size else [0.0] * flat.shape[1]
            acc.max = flat.max(axis=0).astype(float).tolist() if a.size else [0.0] * flat.shape[1]
        accessors.append(acc)
        return len(accessors) - 1

    F32, U32 = g.FLOAT, g.UNSIGNED_INT
    meshes, nodes, channels, samplers = [], [], [], []
    F = len(times)
    t_acc = None
    for name, pos, nrm, idx in prims:
        pos = np.asarray(pos, np.float32)
        nrm = np.asarray(nrm, np.float32)
        attrs = g.Attributes(POSITION=add(pos[0], g.ARRAY_BUFFER, g.VEC3, F32, True),
                             NORMAL=add(nrm[0], g.ARRAY_BUFFER, g.VEC3, F32))
        targets = [{"POSITION": add(pos[f] - pos[0], g.ARRAY_BUFFER, g.VEC3, F32, True),
                    "NORMAL": add(nrm[f] - nrm[0], g.ARRAY_BUFFER, g.VEC3, F32)} for f in range(1, F)]
        prim = g.Primitive(attributes=attrs, indices=add(np.asarray(idx, np.uint32), g.ELEMENT_ARRAY_BUFFER,
                                                        g.SCALAR, U32), mode=g.TRIANGLES, targets=targets or None)
        mesh = g.Mesh(name=name, primitives=[prim])
        if targets:
            mesh.weights = [0.0] * len(targets)
            mesh.extras = {"targetNames": [f"frame{f}" for f in range(1, F)]}
        meshes.append(mesh)
        nodes.append(g.Node(name=name, mesh=len(meshes) - 1))
        if targets:
            if t_acc is None:
                t = np.asarray(times, np.float32)
                t = t - t[0]
                t_acc = add(t, None, g.SCALAR, F32, True)
            w = np.zeros((F, F - 1), np.float32)
            w[np.arange(1, F), np.arange(F - 1)] = 1.0
            samplers.append(g.AnimationSampler(input=t_acc, output=add(w.reshape(-1), None, g.SCALAR, F32),
                                               interpolation="LINEAR"))
            channels.append(g.AnimationChannel(sampler=len(samplers) - 1,
                                               target=g.AnimationChannelTarget(node=len(nodes) - 1,
                                                                               path="weights")))
    doc = g.GLTF2(asset=g.Asset(generator="vkmorph", version="2.0"), scene=0,
                  scenes=[g.Scene(nodes=list(range(len(nodes))))], nodes=nodes, meshes=meshes,
                  accessors=accessors, bufferViews=views, buffers=[g.Buffer(byteLength=len(blob))])
    if channels:
        doc.animations = [g.Animation(name="baked", channels=channels, samplers=samplers)]
    doc.set_binary_blob(bytes(blob))
    return doc
