"""The GPU morph pass and the embedding runtime (the facade; the kernel's data and commands are in
render/morph_batch.py, ``MorphBatch``, whose docstring states the seam).

``MorphRuntime`` builds, for every node that instances a mesh, one vertex buffer range per primitive.
Primitives with morph targets go to one ``MorphBatch`` (one descriptor set per output slot; output vertex data of
each primitive at its own aligned offset of one STORAGE | VERTEX buffer). Primitives without targets get a plain
vertex buffer and no compute resources.

The runtime owns the scene's one per-frame state, ``self.state`` (``anim/scene_state.SceneState``: the morph pose
``self.pose`` and the skeleton ``self.skeleton``, each with per-node versions). Every writer (setters here, an
``AnimationPlayer(scene, rt.state)``, the renderer, ``vkmorph.api.Model``, a host) changes that state, and every
reader compares the versions it applied, so no reader can consume a change meant for another.

``record(cb, slot=, consumer=)`` is the only per-frame GPU call and compares versions at two levels: nothing but
pending first-use uploads when the pose did not move since this output slot was last recorded (level 1);
otherwise the primitives whose node's weight version differs from the one this slot applied (level 2) are
re-uploaded and dispatched, adjacent ones merged into one chunk range, every range dispatched, bracketed by named
barriers: the frames-in-flight guard, transfer -> compute (only when the weights went through vkCmdUpdateBuffer;
host-written per-slot weights need none: ``weight_writes``), and the final compute -> consumer barrier (vertex
input by default; compute; transfer; or handed back un-recorded). It records into the caller's command
buffer and, on a borrowed context, never submits, waits or destroys what it did not create; see
docs/embedding.md for the contract. ``draws(slot)`` returns that slot's ``DrawList`` (render/draw_list.py), built
once and refreshed only where the skeleton's versions moved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..anim.crowd import CrowdState
from ..anim.scene_state import SceneState
from ..anim.skeleton import Skeleton
from ..asset.model import MeshPrimitiveAsset, SceneAsset
from ..errors import UsageError, abridged
from ..gpu import barriers
from ..gpu import memory as M
from ..gpu.context import Context
from ..gpu.ownership import Owner
from ..gpu.vk import vk
from ..morph.bounds import ClusterBounds
from ..morph.gpu_data import DELTA_FORMATS
from ..morph.state import AppliedVersions
from .crowd_draws import CrowdDrawList, build_crowd_draw_lists
from .draw_list import Draw, DrawList, VertexInput, build_draw_lists, vertex_input_of
from .morph_batch import KERNELS, WEIGHT_WRITES, MorphBatch

__all__ = ["Draw", "DrawList", "FrameCounters", "MorphRuntime", "PrimitiveInstance", "Readback", "VertexInput",
           "vertex_input_of"]


@dataclass
class FrameCounters:
    dispatched: int = 0      # primitives whose morph was recomputed (exactly those whose weights moved)
    skipped: int = 0         # morphing primitives left as they were
    dispatch_calls: int = 0  # vkCmdDispatch calls recorded
    dispatch_ranges: int = 0  # merged chunk ranges dispatched (adjacent changed primitives share one; crowds:
    #                           runs of consecutive changed instances, however few dispatches cover them)
    groups: int = 0          # workgroups dispatched (one per chunk of 256 vertices): the GPU work recorded
    bytes_uploaded: int = 0  # weight bytes written for this frame (recorded, or written by the host)
    update_calls: int = 0    # vkCmdUpdateBuffer calls recorded (0 with weight_writes="host")
    barriers: int = 0        # pipeline barriers recorded
    pose_skipped: bool = False
    instances_dispatched: int = 0   # crowds: instances whose weights moved (each morphs all its primitives)
    instances_culled: int = 0       # crowds: instances whose weights moved but were not visible (left pending)
    uploads: int = 0         # first-use uploads recorded (borrowed contexts)
    serial: int = 0          # the serial of this recording (0: nothing recorded); report it via ctx.completed()
    slot: int = 0
    final_barrier: barriers.Barrier | None = None  # the compute -> consumer barrier, recorded or handed back
    final_barrier_recorded: bool = False


class PrimitiveInstance:
    """One primitive as instanced by one node: where its vertices are, and its slot in the morph batch."""

    def __init__(self, node: int, prim_index: int, prim: MeshPrimitiveAsset, index_buffer: M.Buffer):
        self.node, self.prim_index, self.prim = node, prim_index, prim
        self.index_buffer = index_buffer
        self.index_count = len(prim.indices)
        self.vertex_buffer: M.Buffer | None = None
        self.vertex_offset = 0                # bytes into vertex_buffer
        self.target_count = len(prim.morph_targets)
        self.delta_count = 0                  # deltas stored (from the batch's range table)

    @property
    def is_morphing(self) -> bool:
        return self.target_count > 0

    @property
    def vertex_bytes(self) -> int:
        return self.prim.vertices.nbytes


class MorphRuntime:
    """Everything vkmorph needs on the GPU for one scene; the embedding facade.

    >>> ctx = Context.from_external(instance, physical_device, device, queue, family)
    >>> rt = MorphRuntime(ctx, load_scene("face.glb"), slots=frames_in_flight)
    >>> rt.set_weights("Head", [0.0, 1.0, 0.3])
    >>> c = rt.record(cb, slot=frame % frames_in_flight)   # in your frame, outside a render pass
    >>> for d in rt.draws(slot=frame % frames_in_flight): ...  # bind d.vertex_buffer at d.vertex_offset, draw
    >>> ctx.completed(c.serial)                            # once that frame's fence signalled

    Options (keyword-only):
    ``delta_format``: "full" (float deltas, exact) or "compact" (snorm16 deltas scaled per target; position
    error per component <= sum(w * scale) / 65534; morph/gpu_data.py states both layouts' sizes).
    ``slots``: output copies, one per frame in flight, so morphing frame N+1 overlaps drawing frame N.
    ``weight_range``: allowed weights (None: the file's, at least [0, 1]; the conservative bounds follow it);
    ``clamp``: clamp weights outside it with a warning instead of raising ``UsageError``.
    ``kernel``: "auto" (the device and the batch's block fill pick), "workgroup" or "per-vertex".
    ``weight_writes``: "host" (each output slot's weights in its own host-visible buffer written by the CPU: the
    frame records no transfer and no transfer -> compute barrier; needs the fence rule of "Output slots" in
    docs/embedding.md, with one slot no frames in flight), "transfer" (vkCmdUpdateBuffer in the frame) or
    "auto" ("host" with slots >= 2 on a device with device-local host-visible memory, else "transfer").
    ``instances``: N (>= 1) makes a crowd: N instances of the scene sharing its base vertices, deltas, index
    buffers, pipeline and descriptor sets, each with its own weights, skeleton pose, transform and morph output
    range (``rt.crowd``, an ``anim/crowd.CrowdState``; ``rt.crowd[i].set_weights(node, w)``); ``record`` then
    uploads and dispatches only the instances whose weights moved (one dispatch per binding group: over a
    run of consecutive ones, or over the frame's list of changed instances when they form several runs) and
    ``crowd_draws(slot)`` replaces ``draws``. Memory grows by each instance's morph output (and palette).
    """

    def __init__(self, ctx: Context, scene: SceneAsset, *, weight_range: tuple[float, float] | None = None,
                 delta_format: str = "full", slots: int = 1, clamp: bool = False, kernel: str = "auto",
                 instances: int | None = None, weight_writes: str = "auto"):
        if not isinstance(ctx, Context):
            raise UsageError(f"MorphRuntime needs a vkmorph Context (Context.create or Context.from_external), "
                             f"got {type(ctx).__name__}")
        ctx.check_alive("MorphRuntime()")
        if not isinstance(scene, SceneAsset):
            raise UsageError(f"MorphRuntime needs a scene from vkmorph.load_scene(path), got {type(scene).__name__}")
        if delta_format not in DELTA_FORMATS:
            raise UsageError(f"delta_format must be one of {DELTA_FORMATS}, got {delta_format!r}")
        if isinstance(slots, bool) or not isinstance(slots, (int, np.integer)) or slots < 1:
            raise UsageError(f"slots must be an int >= 1 (one per frame in flight), got {slots!r}")
        if kernel not in KERNELS:
            raise UsageError(f"kernel must be one of {KERNELS}, got {kernel!r}")
        if weight_writes not in WEIGHT_WRITES:
            raise UsageError(f"weight_writes must be one of {WEIGHT_WRITES}, got {weight_writes!r}")
        # "auto": per-slot host-written weights (no transfer in the frame) where the fence rule of several
        # output slots already holds and the device has device-local host-visible memory; otherwise the
        # vkCmdUpdateBuffer path, which also serves one slot with frames in flight (morph_batch.WEIGHT_WRITES)
        if weight_writes == "auto":
            weight_writes = "host" if slots >= 2 and M.device_local_host_visible(ctx) else "transfer"
        self.weight_writes = weight_writes
        self.ctx, self.scene, self.delta_format, self.slots = ctx, scene, delta_format, int(slots)
        self.kernel = kernel
        self.state = SceneState(scene, weight_range=weight_range, clamp=clamp)   # None: the file's range
        # a crowd: the instances' state; rt.state stays the template (names, range, rules, instance defaults)
        self.crowd = CrowdState(scene, instances, self.pose) if instances is not None else None
        self.instance_count = 1 if self.crowd is None else self.crowd.count
        self._crowd_draws: list[CrowdDrawList] = []
        self.batch: MorphBatch | None = None
        self.instances: list[PrimitiveInstance] = []
        self.morphing: list[PrimitiveInstance] = []
        self._by_key: dict[tuple[int, int], PrimitiveInstance] = {}
        self._by_node: dict[int, list[int]] = {}  # node -> indices into morphing (= the batch's order)
        self._owner = Owner(ctx, "morph runtime")
        self._applied: AppliedVersions | None = None     # per output slot: weight versions of the morphing prims
        self._draw_lists: list[DrawList] = []
        self._bounds_cache: dict[tuple[int, int], tuple[tuple, np.ndarray]] = {}
        self._last_serial = 0
        self._destroyed = False
        self.last_counters = FrameCounters()
        self.gpu_bytes: dict[str, int] = {}
        self._cluster_bounds: dict[int, ClusterBounds] = {}   # per primitive, built on first bounds() call
        names: dict[str, list[int]] = {}
        for i, n in enumerate(scene.nodes):
            names.setdefault(n.name, []).append(i)
        self._names = names
        try:
            with ctx.batched_uploads():     # owned contexts: one submission for every buffer of the build
                self._build()
        except BaseException:
            self._release()
            raise
        if self.crowd is not None:   # per instance: the version of its weights each slot applied
            self._applied = AppliedVersions(np.arange(self.crowd.count), self.slots)
            self._crowd_draws = build_crowd_draw_lists(
                self.instances, scene, self.crowd,
                [[self._offset(i, k) for i in self.instances] for k in range(self.slots)],
                [self.batch.instance_stride if i.is_morphing else 0 for i in self.instances])
            return
        self._applied = AppliedVersions([inst.node for inst in self.morphing], self.slots)
        self._draw_lists = build_draw_lists(self.instances, scene, self.skeleton,
                                            [[self._offset(i, k) for i in self.instances] for k in range(self.slots)])

    def _own(self, buf: M.Buffer) -> M.Buffer:
        return self._owner.own(buf)

    def _build(self) -> None:
        ctx, scene = self.ctx, self.scene
        index_buffers: dict[int, M.Buffer] = {}
        for node_i, node in enumerate(scene.nodes):
            if node.mesh is None:
                continue
            for p_i, prim in enumerate(scene.meshes[node.mesh].primitives):
                if id(prim) not in index_buffers:
                    index_buffers[id(prim)] = self._own(M.device_buffer(ctx, prim.indices.astype(np.uint32), M.INDEX,
                                                                        name=f"indices n{node_i}p{p_i}"))
                inst = PrimitiveInstance(node_i, p_i, prim, index_buffers[id(prim)])
                self.instances.append(inst)
                self._by_key[(node_i, p_i)] = inst
                if inst.is_morphing:
                    self._by_node.setdefault(node_i, []).append(len(self.morphing))
                    self.morphing.append(inst)
                else:  # storage too: the skinning capture kernel reads any vertex buffer
                    inst.vertex_buffer = self._own(M.device_buffer(ctx, prim.vertices, M.VERTEX | M.STORAGE,
                                                                   name=f"vertices n{node_i}p{p_i}"))
        if self.morphing:
            self.batch = self._owner.own(MorphBatch(ctx, self.morphing, self.pose, delta_format=self.delta_format,
                                                    slots=self.slots, kernel=self.kernel,
                                                    copies=None if self.crowd is None else self.crowd.count,
                                                    weight_writes=self.weight_writes))
            self.gpu_bytes = self.batch.gpu_bytes
            for inst, r in zip(self.morphing, self.batch.ranges):
                inst.vertex_buffer = self.batch.output
                inst.vertex_offset, inst.delta_count = int(r["vertex_offset"]), int(r["delta_count"])

    @property
    def pose(self):
        """The morph half of ``state`` (``SceneMorphPose``)."""
        return self.state.pose

    @property
    def skeleton(self) -> Skeleton:
        """The skeleton half of ``state``: the one skeleton draws, bounds and the renderer follow."""
        return self.state.skeleton

    @property
    def total_vertices(self) -> int:
        return self.batch.total_vertices if self.batch else 0

    @property
    def total_deltas(self) -> int:
        return self.batch.total_deltas if self.batch else 0

    def memory_stats(self) -> dict:
        """The Context's allocator counts: VkDeviceMemory allocations, buffers in them, bytes."""
        self._check("memory_stats")
        return M.Allocator.of(self.ctx).stats()

    # ------------------------------------------------------------------ checks
    def _check(self, what: str) -> None:
        if self._destroyed:
            raise UsageError(f"MorphRuntime.{what}: the runtime was destroyed; build a new MorphRuntime")
        self.ctx.check_alive(f"MorphRuntime.{what}")

    def _slot(self, slot) -> int:
        if isinstance(slot, bool) or not isinstance(slot, (int, np.integer)) or not 0 <= slot < self.slots:
            raise UsageError(f"slot must be an int in [0, {self.slots}) (the runtime has {self.slots} output "
                             f"slots), got {slot!r}")
        return int(slot)

    def node_index(self, node: int | str) -> int:
        """A node by its index in the scene (the importer's node order, as ``info`` lists it; ``file_node(i)``
        converts a glTF file's node index) or by its name.
        A name shared by several nodes or unknown is a UsageError listing what to pass instead."""
        if isinstance(node, str):
            hits = self._names.get(node)
            if not hits:
                raise UsageError(f"no node named {abridged(node)}; "
                                 f"{self.scene.morph_nodes_hint()}")
            if len(hits) > 1:
                raise UsageError(f"node name {node!r} is shared by nodes {hits}: pass the node index")
            return hits[0]
        if isinstance(node, bool) or not isinstance(node, (int, np.integer)):
            raise UsageError(f"a node is an index or a name, got {type(node).__name__}")
        if not 0 <= node < len(self.scene.nodes):
            raise UsageError(f"node {node} out of range: the scene has {len(self.scene.nodes)} nodes")
        return int(node)

    def file_node(self, index: int) -> int:
        """The scene node (as ``node_index`` takes it) of the FILE's node ``index`` (glTF ``nodes[index]``): the
        importer's order differs from the file's. A UsageError for other formats or a node Assimp dropped."""
        fn = self.scene.file_nodes
        if fn is None:
            raise UsageError("file node indices are known for glTF/GLB files only: address nodes by name or by "
                             "the importer's index (vkmorph info lists them)")
        if isinstance(index, bool) or not isinstance(index, (int, np.integer)) or not 0 <= index < len(fn):
            raise UsageError(f"file node {index!r} out of range: the file has {len(fn)} nodes")
        if fn[index] is None:
            raise UsageError(f"the file's node {index} has no node in the imported scene")
        return int(fn[index])

    # ------------------------------------------------------------------ per frame
    def set_weights(self, node: int | str, weights) -> bool:
        """Set a node's morph weights (all its primitives); True when anything changed."""
        self._check("set_weights")
        if self.crowd is not None:
            raise UsageError("a crowd runtime (instances=N): set an instance's weights with "
                             "rt.crowd[i].set_weights(node, weights)")
        n = self.node_index(node)
        if isinstance(weights, Mapping):   # {target name or index: weight}
            return self.pose.set_weights(n, weights)
        try:
            arr = np.asarray(weights, dtype=np.float64)
        except (TypeError, ValueError):
            raise UsageError(f"node {n}: weights must be a sequence of numbers, got {weights!r:.80}") from None
        return self.pose.set_weights(n, arr)

    def set_weight(self, node: int | str, target: int | str, value: float) -> bool:
        """Set one target by name or index (``rt.set_weight("Head", "MouthOpen", 0.7)``)."""
        return self.set_weights(node, {target: value})

    def record(self, cb, *, slot: int = 0, consumer: str = "vertex", emit_barrier: bool = True,
               visible: np.ndarray | None = None) -> FrameCounters:
        """Record this frame's version-gated morph work into ``cb`` (the host's command buffer: recording,
        outside a render pass, from a compute-capable pool of the context's queue family); returns what was
        recorded. ``slot``: which output copy this frame writes and draws (0..slots-1). ``consumer``: where the
        output goes next ("vertex", "compute", "transfer"), which picks the final barrier; ``emit_barrier=False``
        leaves that barrier to the host (``counters.final_barrier`` says what it must cover). ``visible``
        (crowds): a bool per instance; changed instances that are not visible are neither uploaded nor
        dispatched and stay pending (their versions are not consumed), so they are morphed when next visible."""
        self._check("record")
        self.ctx.check_command_buffer(cb, "MorphRuntime.record")
        slot = self._slot(slot)
        if consumer not in barriers.CONSUMERS:
            raise UsageError(f"consumer must be one of {sorted(barriers.CONSUMERS)}, got {consumer!r}")
        c = FrameCounters(slot=slot)
        if self.ctx.has_pending:
            c.uploads = self.ctx.record_pending(cb)
            c.barriers += 1
            c.serial = self._last_serial = self.ctx.last_serial
        if self.crowd is not None:
            return self._record_crowd(cb, c, consumer, emit_barrier, visible)
        pose, applied = self.pose, self._applied
        if not self.morphing or applied.up_to_date(slot, pose.version):           # level 1: one compare
            c.pose_skipped, c.skipped = True, len(self.morphing)
            self.last_counters = c
            return c
        dirty, cur = applied.changed(slot, pose.node_versions)                   # level 2: per primitive
        n = len(self.morphing)
        c.skipped = n - len(dirty)
        if not len(dirty):
            applied.applied(slot, pose.version)
            self.last_counters = c
            return c
        if not c.serial:
            c.serial = self._last_serial = self.ctx.next_serial()
        every = None if len(dirty) == n else dirty
        self._record_frame(cb, c, consumer, emit_barrier,
                           lambda: self.batch.record_uploads(cb, every, slot),
                           lambda: self.batch.record_dispatches(cb, every, slot))
        c.dispatched = len(dirty)
        applied.applied(slot, pose.version, dirty, cur)    # only now: what was really recorded
        self.last_counters = c
        return c

    def _record_frame(self, cb, c: FrameCounters, consumer: str, emit_barrier: bool, upload, dispatch) -> None:
        """The recorded frame of a scene or a crowd, in one place (docs/embedding.md's contract): the guard
        barrier, ``upload()`` (the changed weights: vkCmdUpdateBuffer, or host writes), transfer -> compute
        (only on the update path: vkQueueSubmit orders host writes, WEIGHT_WRITES), ``dispatch()``, then the
        consumer barrier if asked for; counters filled as it goes."""
        guard = barriers.PREVIOUS_FRAME_TO_MORPH if self.slots == 1 else barriers.PREVIOUS_MORPH_TO_MORPH
        c.barriers += barriers.record(cb, guard)
        calls = self.batch.update_calls
        c.bytes_uploaded = upload()
        c.update_calls = self.batch.update_calls - calls
        if not self.batch.host_weights:
            c.barriers += barriers.record(cb, barriers.TRANSFER_TO_COMPUTE)
        d = dispatch()
        c.dispatch_calls, c.dispatch_ranges, c.groups = d.calls, d.ranges, d.groups
        c.final_barrier = barriers.CONSUMERS[consumer]
        if emit_barrier:
            c.barriers += barriers.record(cb, c.final_barrier)
            c.final_barrier_recorded = True

    def _record_crowd(self, cb, c: FrameCounters, consumer: str, emit_barrier: bool,
                      visible: np.ndarray | None = None) -> FrameCounters:
        """``record`` for a crowd: level 1 the crowd's version, level 2 one compare over the instances' weight
        versions; only the changed instances are uploaded and dispatched (all their primitives)."""
        crowd, applied, slot = self.crowd, self._applied, c.slot
        P = len(self.morphing)
        if not P or applied.up_to_date(slot, crowd.version):
            c.pose_skipped, c.skipped = True, P * crowd.count
            self.last_counters = c
            return c
        rows, cur = applied.changed(slot, crowd.weight_versions)
        total = crowd.version
        if visible is not None:     # culled: left pending, and the slot not up to date (level 1 must look again)
            seen = np.asarray(visible, bool)[rows]
            c.instances_culled = int(len(rows) - seen.sum())
            if c.instances_culled:
                rows, total = rows[seen], -1
        c.skipped = P * (crowd.count - len(rows))
        if not len(rows):
            applied.applied(slot, total)
            self.last_counters = c
            return c
        if not c.serial:
            c.serial = self._last_serial = self.ctx.next_serial()
        self._record_frame(cb, c, consumer, emit_barrier,
                           lambda: self.batch.record_crowd_uploads(cb, rows, crowd._weights, slot),
                           lambda: self.batch.record_crowd_dispatches(cb, rows, slot))
        c.dispatched, c.instances_dispatched = P * len(rows), len(rows)
        applied.applied(slot, total, rows, cur)    # only now: what was really recorded
        self.last_counters = c
        return c

    def crowd_draws(self, slot: int = 0) -> CrowdDrawList:
        """A crowd's draws of output ``slot`` (``render/crowd_draws.py``): one ``CrowdDraw`` per primitive with
        every instance's vertex offset, model matrix and palette as arrays; refreshed only for instances whose
        pose or transform moved."""
        self._check("crowd_draws")
        if self.crowd is None:
            raise UsageError("crowd_draws() is for crowds (MorphRuntime(..., instances=N)); use draws()")
        dl = self._crowd_draws[self._slot(slot)]
        dl.refresh()
        return dl

    # ------------------------------------------------------------------ queries
    def instance(self, node: int | str, primitive: int = 0) -> PrimitiveInstance:
        self._check("instance")
        n = self.node_index(node)
        try:
            return self._by_key[(n, primitive)]
        except (KeyError, TypeError):
            raise UsageError(f"node {n} primitive {primitive!r} is not drawn by this runtime") from None

    def _inst(self, node) -> PrimitiveInstance:
        return node if isinstance(node, PrimitiveInstance) else self.instance(node)

    def vertex_buffer(self, node: int | str, primitive: int = 0):
        """VkBuffer to bind as vertex input (the batch's morph output for primitives with targets)."""
        return self.instance(node, primitive).vertex_buffer.handle

    def vertex_buffer_offset(self, node: int | str, primitive: int = 0, slot: int = 0) -> int:
        """Byte offset to pass with vertex_buffer() to vkCmdBindVertexBuffers, for output ``slot``."""
        inst = self.instance(node, primitive)
        return self._offset(inst, self._slot(slot))

    def _offset(self, inst: PrimitiveInstance, slot: int, instance: int = 0) -> int:
        if not inst.is_morphing:
            return inst.vertex_offset      # shared by every slot and instance
        return inst.vertex_offset + slot * self.batch.slot_stride + instance * self.batch.instance_stride

    def index_buffer(self, node: int | str, primitive: int = 0):
        """VkBuffer of uint32 triangle-list indices."""
        return self.instance(node, primitive).index_buffer.handle

    def bounds(self, node: int | str, primitive: int = 0, space: str = "mesh", *,
               skeleton: Skeleton | None = None) -> np.ndarray:
        """(2, 3) [min, max] of the primitive's vertices at the CURRENT weights: ``space="mesh"``: morphed, in
        mesh space (before skinning and the node transform); ``"world"``: as drawn, skinned by the runtime's
        skeleton (``self.skeleton``, the one an ``AnimationPlayer(scene, rt.state)`` animates; ``skeleton=``
        another one) or moved by the node's world matrix. Conservative (contains every deformed vertex) and
        tight; CPU only, no readback (morph/bounds.py). Cached per primitive until its node's weights or the
        skeleton's matrices it depends on move. For framing, culling and putting the ground under the posed
        model."""
        if space not in ("mesh", "world"):
            raise UsageError(f"space must be 'mesh' or 'world', got {space!r}")
        inst = self.instance(node, primitive)
        skel = skeleton if skeleton is not None else self.skeleton
        own = skel is self.skeleton
        key = (inst.node, inst.prim_index, space)
        if own:    # the versions this box depends on
            moved = (-1 if space == "mesh" else skel.skin_version(inst.prim.skin) if inst.prim.is_skinned
                     else int(skel.world_versions()[inst.node]))
            versions = (int(self.pose.node_versions[inst.node]), moved)
            hit = self._bounds_cache.get(key)
            if hit is not None and hit[0] == versions:
                return hit[1].copy()
        cb = self._cluster_bounds.get(id(inst.prim))
        if cb is None:
            cb = self._cluster_bounds[id(inst.prim)] = ClusterBounds(inst.prim)
        w = self.pose.weights(inst.node)[:inst.target_count] if inst.is_morphing else np.zeros(0)
        if space == "mesh":
            out = cb.at(w)
        elif inst.prim.is_skinned:
            out = cb.at(w, skel.skin_matrices(inst.prim.skin))
        else:
            out = cb.at(w, matrix=skel.world_matrices()[inst.node])   # per cluster: tight under rotation
        if own:
            self._bounds_cache[key] = (versions, np.array(out))
        return out

    def vertex_input(self, node: int | str, primitive: int = 0) -> VertexInput:
        return vertex_input_of(self.instance(node, primitive).prim.vertices.dtype)

    def draws(self, slot: int = 0, *, skeleton: Skeleton | None = None) -> DrawList:
        """The ``DrawList`` of output ``slot``: one Draw per primitive instance, with world transforms and joint
        palettes of the runtime's skeleton at its current pose. Built once; refreshed in place where the skeleton
        moved (an unchanged frame costs one compare). ``skeleton=``: another skeleton, built afresh (slow)."""
        self._check("draws")
        if self.crowd is not None:
            raise UsageError("a crowd runtime (instances=N) draws with crowd_draws(slot)")
        slot = self._slot(slot)
        if skeleton is None or skeleton is self.skeleton:
            dl = self._draw_lists[slot]
            dl.refresh()
            return dl
        return build_draw_lists(self.instances, self.scene, skeleton,
                                [[self._offset(i, slot) for i in self.instances]])[0]

    def read_vertices(self, node, primitive: int = 0, slot: int = 0, *, instance: int = 0) -> np.ndarray:
        """Read a primitive's vertices back (of crowd ``instance``). Blocking convenience of owned contexts
        (submits and waits); on a borrowed context use record_readback()."""
        self._check("read_vertices")
        inst = node if isinstance(node, PrimitiveInstance) else self.instance(node, primitive)
        if not self.ctx.owned:
            raise UsageError("read_vertices submits and waits, which vkmorph never does on a borrowed context: "
                             "use rt.record_readback(cb, node) and .vertices() after your fence")
        raw = M.readback(self.ctx, inst.vertex_buffer, np.uint8, count=inst.vertex_bytes,
                         offset=self._offset(inst, self._slot(slot), self._instance(instance)))
        return raw.view(inst.prim.vertices.dtype)

    def record_readback(self, cb, node, primitive: int = 0, slot: int = 0, *, instance: int = 0) -> Readback:
        """Record a copy of a primitive's vertices (output ``slot``, crowd ``instance``) into a host-visible
        buffer, in ``cb``; read it with ``.vertices()`` once the host reported the returned serial complete
        (ctx.completed)."""
        self._check("record_readback")
        self.ctx.check_command_buffer(cb, "MorphRuntime.record_readback")
        inst = node if isinstance(node, PrimitiveInstance) else self.instance(node, primitive)
        return Readback(self.ctx, cb, inst, self._offset(inst, self._slot(slot), self._instance(instance)))

    def _instance(self, instance) -> int:
        if isinstance(instance, bool) or not isinstance(instance, (int, np.integer)) or \
                not 0 <= instance < self.instance_count:
            raise UsageError(f"instance must be an int in [0, {self.instance_count}), got {instance!r}")
        return int(instance)

    # ------------------------------------------------------------------ teardown
    def _release(self) -> None:
        self._owner.destroy()   # reverse creation order: the batch, then vertex and index buffers

    def destroy(self) -> None:
        """Release the runtime's GPU objects (idempotent). Work it recorded that the host has not yet reported
        complete keeps them alive until ``ctx.completed(serial)`` (or ctx.destroy()): safe with frames in
        flight. Any later call raises UsageError."""
        if self._destroyed:
            return
        self._destroyed = True
        self.instances.clear()
        self.morphing.clear()
        self._by_key.clear()
        self.ctx.retire("morph runtime", self._owner.destroy, self._last_serial)

    def __enter__(self) -> MorphRuntime:
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()


class Readback:
    """A primitive's vertices copied into a host buffer by the host's command buffer (see record_readback)."""

    def __init__(self, ctx: Context, cb, inst: PrimitiveInstance, offset: int):
        self.ctx, self.inst = ctx, inst
        n = inst.vertex_bytes
        self.buffer = M.host_buffer(ctx, n, M.TRANSFER_DST, name=f"readback n{inst.node}p{inst.prim_index}")
        barriers.record(cb, barriers.ALL_TO_TRANSFER_READ)
        vk.vkCmdCopyBuffer(cb, inst.vertex_buffer.handle, self.buffer.handle, 1,
                           [vk.VkBufferCopy(srcOffset=offset, dstOffset=0, size=n)])
        barriers.record(cb, barriers.TRANSFER_TO_HOST)
        self.serial = ctx.next_serial()

    def vertices(self) -> np.ndarray:
        """The vertices (a copy); frees the host buffer. UsageError until the host reported completion."""
        if self.buffer is None:
            raise UsageError("Readback.vertices() was already called")
        if self.ctx.completed_serial < self.serial:
            raise UsageError(f"the readback (serial {self.serial}) is not reported complete: wait for the fence of "
                             f"the command buffer it was recorded into, then call ctx.completed({self.serial})")
        out = self.buffer.mapped.copy().view(self.inst.prim.vertices.dtype)
        self.destroy()
        return out

    def destroy(self) -> None:
        if self.buffer is not None:
            self.ctx.retire("readback buffer", self.buffer.destroy, self.serial)
            self.buffer = None
