"""``Model`` (``vkmorph.open``): a scene on the GPU, posed and baked; ``Pose`` / ``Primitive``, what a pose returns.

How a bake runs: `vkmorph.bake`; how a pose or bake is written to a file: `vkmorph.export`. Spaces (``space=``):

- ``"mesh"``: the primitive's own space. Skinned primitives: after skinning, expressed in the space of the node
  that instances the mesh (``inverse(mesh node world) x joint world x inverse bind``), as ``vkmorph morph
  --skinned`` writes. Unskinned primitives: the morphed vertices as stored in the file.
- ``"world"``: scene world space (skinned: ``joint world x inverse bind``; unskinned: the node's world matrix;
  normals by the cofactor matrix, so a node scaled to zero gives zero normals instead of an error).

Each drawn instance (a node and one primitive of its mesh) is one `Primitive`, named ``"<node>/<k>"``.
A Model creates its own Vulkan context, or shares one (``ctx=``, a ``Context.create`` context that the caller
keeps and destroys after the models that use it).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .bake import Bake
from .errors import UsageError
from .morph.state import apply_named_weights

__all__ = ["Model", "Pose", "Primitive", "open"]

SPACES = ("mesh", "world")


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
    source: object = None        # vkmorph.export.ExportSource: the scene's nodes, materials, UVs, colours

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
        """Write the pose as .glb/.gltf (the source's node hierarchy, names, materials, textures, UVs and
        colours; `vkmorph.export`), .obj or .ply (one merged mesh of positions and normals); atomic."""
        from .export import export

        return export(path, [(p.name, p.positions[None], p.normals[None], p.indices,
                              None if p.tangents is None else p.tangents[None]) for p in self.primitives],
                      np.zeros(1), self.source)


def open(path=None, **kw) -> Model:  # noqa: A001 - the API's entry point is vkmorph.open
    """Open a model file (glTF/GLB/FBX/... through the validated importer); ``None`` opens the default scene.
    Keyword arguments go to `Model`."""
    return Model(path, **kw)


class Model:
    """A scene on the GPU, ready to be posed and baked. Close it (or use ``with``) to free the GPU objects.

    ``ctx``: share this `vkmorph.gpu.context.Context` (one made by ``Context.create``, which can submit and
    wait) instead of creating an instance and device for this model; ``close()`` leaves it alive (destroy it
    yourself, after the models that use it); ``validation`` and ``device`` are then the context's own.
    ``validation``: run under the Khronos validation layer (default: ``VKMORPH_VALIDATION``);
    ``device``: a substring of the Vulkan device name (default: ``VKMORPH_DEVICE``, else the first GPU);
    ``delta_format``: ``"full"`` or ``"compact"`` (see `vkmorph.render.morph_pass.MorphRuntime`);
    ``weight_range``: the allowed weights (default: the file's, at least [0, 1]); ``extra_weights``: values the
    file's range is widened to include (the CLI passes the weights it was given, so any finite weight works);
    ``allow_external_uris``: let the file's URIs leave its folder (default: ``VKMORPH_ALLOW_EXTERNAL_URIS``);
    ``clamp``: clamp weights outside the range to it, with a ``WeightClampedWarning``, instead of raising."""

    def __init__(self, path=None, *, ctx=None, validation: bool | None = None, device: str | None = None,
                 delta_format: str = "full", progress: bool | None = None, echo_messages: bool = False,
                 weight_range: tuple[float, float] | None = None, extra_weights=(),
                 allow_external_uris: bool | None = None, clamp: bool = False):
        from .asset.importer import load_scene
        from .gpu.context import Context
        from .gpu.validation import validation_requested
        from .progress import stages

        self.progress = progress
        self.messages: list = []  # validation messages seen (kept after close())
        self.ctx = self.runtime = self._bake_cache = None
        self._owns_ctx = ctx is None
        if ctx is not None:
            _check_shared_context(ctx, validation, device)
        with stages(["importing", "Vulkan device", "GPU morph data"], progress, "vkmorph.open") as step:
            self.scene = load_scene(path, allow_external_uris=allow_external_uris)
            step()
            self.ctx = ctx if ctx is not None else Context.create(
                validation=validation_requested(False) if validation is None else validation,
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
            apply_named_weights(pose, weights, self._node_targets)
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
                     for n, i in zip(self.names, self.instances)], space, b.source)

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
        in batches of ``batch_frames`` frames per command buffer (default: about 16 MiB of output,
        ``GpuBaker.batch_size``)."""
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

        out = GpuBaker(self, space, skinning).run(c, times, w, batch_frames,
                                                 self.progress if progress is None else progress)
        out.source = self._export_source(c, times, space)
        return out

    def _export_source(self, clip, times: np.ndarray, space: str):
        """What an export of this pose / bake needs from the scene: its nodes' local transforms per frame (the
        clip sampled at the bake's clamped times, as the baker poses them; sampled when an export first asks),
        materials, UVs and colours."""
        from .anim.pose_batch import PoseBatch
        from .bake import clip_times
        from .export import ExportSource

        scene, times = self.scene, np.array(times, np.float64)
        return ExportSource(scene=scene, instances=[(i.node, i.prim) for i in self.instances],
                            trs_of=lambda: PoseBatch(scene).sample(clip, clip_times(clip, times)), space=space)

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
            if self._owns_ctx:
                self.ctx.destroy()
            self.messages = list(self.ctx.errors_and_warnings())
            self.ctx = None

    def __enter__(self) -> Model:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def _check_shared_context(ctx, validation, device) -> None:
    """A context given to ``Model(ctx=)`` must be alive and able to submit (``Context.create``); the options that
    only choose how a context is created cannot come with it."""
    from .gpu.context import Context

    if not isinstance(ctx, Context):
        raise UsageError(f"ctx must be a vkmorph.gpu.context.Context, got {type(ctx).__name__}")
    if ctx.destroyed:
        raise UsageError("ctx was destroyed; pass a live Context")
    if not ctx.owned:
        raise UsageError("Model(ctx=) needs a context that can submit and wait (Context.create); a borrowed "
                         "context (Context.from_external) is for MorphRuntime in your own frame loop")
    if validation is not None or device is not None:
        raise UsageError("validation= and device= choose how a new context is created; with ctx= the context "
                         "has its own")
