"""The GPU morph pass and the embedding runtime.

``MorphRuntime`` builds, for every node that instances a mesh, one vertex buffer range per primitive.
Primitives with morph targets are batched: their base vertices, CSR offsets, deltas and weights live in one
set of buffers behind one descriptor set, and their output vertex data in one STORAGE | VERTEX buffer (each
primitive at its own aligned offset, starting as the full vertex data). Primitives without targets get a
plain vertex buffer and no compute resources.

``record(cb)`` is the only per-frame call and follows the two-level version cache: nothing at all when the
scene pose version did not move; otherwise only the primitives of nodes whose weights changed are re-uploaded
and dispatched (one dispatch per changed primitive when few changed, one dispatch over everything when many
did), bracketed by three named barriers: the frames-in-flight guard, transfer -> compute, and the single
compute -> vertex-input barrier that replaces glMemoryBarrier. It records into the caller's command buffer and
never submits, waits or destroys what it did not create, so it embeds in any renderer.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..asset.model import MeshPrimitiveAsset, SceneAsset, attribute_offsets_words
from ..errors import UsageError
from ..gpu import barriers
from ..gpu import memory as M
from ..gpu.context import Context
from ..gpu.interface import MORPH, MORPH_COMPACT
from ..gpu.interface import MORPH_PUSH as PUSH
from ..gpu.pipeline import ComputePipeline, vertex_input_attributes
from ..gpu.vk import vk
from ..morph.bounds import ClusterBounds
from ..morph.gpu_data import DELTA_FORMATS, MORPH_DELTA, build_gpu_morph_data, compact_deltas
from ..morph.state import SceneMorphPose

OUTPUT_ALIGNMENT = 256       # >= every device's minStorageBufferOffsetAlignment, so ranges can be bound
UPDATE_CHUNK = 65536         # vkCmdUpdateBuffer's limit per call
FEW_DIRTY = 4                # up to this many changed primitives: per-primitive uploads and dispatches


@dataclass
class FrameCounters:
    dispatched: int = 0      # primitives whose morph was recomputed
    skipped: int = 0         # morphing primitives left as they were
    dispatch_calls: int = 0  # vkCmdDispatch calls recorded
    bytes_uploaded: int = 0
    barriers: int = 0
    pose_skipped: bool = False


@dataclass
class VertexInput:
    """How to bind a primitive's vertex buffer in your own pipeline (VkVertexInput* values)."""

    stride: int
    attributes: list[tuple[int, str, int, int]]  # (location, name, VkFormat, byte offset)


def vertex_input_of(dtype: np.dtype) -> VertexInput:
    return VertexInput(stride=dtype.itemsize, attributes=vertex_input_attributes(dtype))


def _align(n: int, a: int = OUTPUT_ALIGNMENT) -> int:
    return (n + a - 1) // a * a


class PrimitiveInstance:
    """One primitive as instanced by one node: where its vertices are, and its slot in the morph batch."""

    def __init__(self, node: int, prim_index: int, prim: MeshPrimitiveAsset, index_buffer: M.Buffer):
        self.node, self.prim_index, self.prim = node, prim_index, prim
        self.index_buffer = index_buffer
        self.index_count = len(prim.indices)
        self.vertex_buffer: M.Buffer | None = None
        self.vertex_offset = 0                # bytes into vertex_buffer
        self.target_count = len(prim.morph_targets)
        self.first_vertex = 0                 # global vertex index in the batch
        self.weight_offset = 0                # slot of target 0 in the batch's weight array
        self.delta_count = 0
        self.conservative_bounds = None
        self.groups = 0
        self.push = None
        self._push_ptr = None

    @property
    def is_morphing(self) -> bool:
        return self.target_count > 0

    @property
    def vertex_bytes(self) -> int:
        return self.prim.vertices.nbytes


class MorphRuntime:
    """Everything vkmorph needs on the GPU for one scene; the embedding facade.

    >>> rt = MorphRuntime(Context.from_external(...), load_scene("face.glb"))
    >>> rt.pose.set_weights("Head", [0.0, 1.0, 0.3])
    >>> counters = rt.record(command_buffer)          # inside your frame, before your draws
    >>> buf, offset = rt.vertex_buffer(node), rt.vertex_buffer_offset(node); layout = rt.vertex_input(node)

    ``delta_format``: "full" (64-byte float deltas, exact) or "compact" (24-byte snorm16 deltas scaled per
    target; position error per component <= sum(w * scale) / 65534, see morph_compact.comp).
    ``weight_range``: allowed weights (None: the file's, at least [0, 1]; the conservative bounds follow it);
    ``clamp``: clamp weights outside it with a warning instead of raising ``UsageError``.
    """

    def __init__(self, ctx: Context, scene: SceneAsset, weight_range: tuple[float, float] | None = None,
                 delta_format: str = "full", clamp: bool = False):
        if delta_format not in DELTA_FORMATS:
            raise UsageError(f"delta_format must be one of {DELTA_FORMATS}, got {delta_format!r}")
        self.ctx, self.scene, self.delta_format = ctx, scene, delta_format
        self.pose = SceneMorphPose(scene, weight_range, clamp=clamp)  # None: the file's range
        self.pipeline: ComputePipeline | None = None
        self.instances: list[PrimitiveInstance] = []
        self.morphing: list[PrimitiveInstance] = []
        self._by_key: dict[tuple[int, int], PrimitiveInstance] = {}
        self._by_node: dict[int, list[PrimitiveInstance]] = {}
        self._owned: list[M.Buffer] = []
        self.applied_pose_version = -1
        self.last_counters = FrameCounters()
        self.gpu_bytes: dict[str, int] = {}
        self._cluster_bounds: dict[int, ClusterBounds] = {}   # per primitive, built on first bounds() call
        try:
            self._build()
        except BaseException:
            self.destroy()
            raise

    def _own(self, buf: M.Buffer) -> M.Buffer:
        self._owned.append(buf)
        return buf

    def _build(self) -> None:
        ctx, scene = self.ctx, self.scene
        index_buffers: dict[int, M.Buffer] = {}
        for node_i, node in enumerate(scene.nodes):
            if node.mesh is None:
                continue
            for p_i, prim in enumerate(scene.meshes[node.mesh].primitives):
                if id(prim) not in index_buffers:
                    index_buffers[id(prim)] = self._own(M.device_buffer(ctx, prim.indices.astype(np.uint32), M.INDEX,
                                                                        name="indices"))
                inst = PrimitiveInstance(node_i, p_i, prim, index_buffers[id(prim)])
                self.instances.append(inst)
                self._by_key[(node_i, p_i)] = inst
                if inst.is_morphing:
                    self.morphing.append(inst)
                    self._by_node.setdefault(node_i, []).append(inst)
                else:  # storage too: the skinning capture kernel reads any vertex buffer
                    inst.vertex_buffer = self._own(M.device_buffer(ctx, prim.vertices, M.VERTEX | M.STORAGE,
                                                                   name=f"vertices n{node_i}p{p_i}"))
        if self.morphing:
            self._build_batch()

    def _build_batch(self) -> None:
        ctx = self.ctx
        bases, offsets, deltas, out_words, scales, gather = [], [], [], [], [], []
        out_bytes = 0
        vtx = dlt = slot = 0
        for inst in self.morphing:
            prim = inst.prim
            if attribute_offsets_words(prim.vertices.dtype)["tangent"] != 6:
                raise UsageError("vertex layout must start with position, normal, tangent")
            data = build_gpu_morph_data(prim, self.pose.weight_range)
            inst.first_vertex, inst.weight_offset = vtx, slot
            inst.delta_count, inst.conservative_bounds = data.delta_count, data.conservative_bounds
            inst.vertex_offset = out_bytes
            V = prim.vertex_count
            bases.append(data.base_vertices)
            offsets.append(data.vertex_offsets[:-1].astype(np.int64) + dlt)
            if self.delta_format == "full":
                d = data.deltas.copy()
                d["metadata"][:, 0] += slot
            else:
                d, s = compact_deltas(data, slot)
                scales.append(s)
            deltas.append(d)
            out_words.append(out_bytes // 4 + np.arange(V, dtype=np.int64) * (prim.vertices.dtype.itemsize // 4))
            node_slice = self.pose.slice_of(inst.node)
            gather.append(node_slice.start + np.arange(inst.target_count))
            inst.push = np.array([(vtx, V)], PUSH)
            inst._push_ptr = M.cffi_pointer(inst.push)
            inst.groups = MORPH.groups(V)
            vtx += V
            dlt += data.delta_count
            slot += inst.target_count
            out_bytes = _align(out_bytes + prim.vertices.nbytes)
        self.total_vertices, self.total_deltas = vtx, dlt
        self._gather = np.concatenate(gather).astype(np.int64)
        self.gpu_weights = np.zeros(slot, np.float32)
        offs = np.concatenate(offsets + [np.array([dlt])]).astype(np.uint32)
        delta_dtype = MORPH_DELTA if self.delta_format == "full" else deltas[0].dtype
        all_deltas = np.concatenate(deltas) if dlt else np.zeros(1, delta_dtype)
        staging = np.zeros(out_bytes, np.uint8)
        for inst in self.morphing:
            staging[inst.vertex_offset:inst.vertex_offset + inst.vertex_bytes] = inst.prim.vertices.view(np.uint8)
        self.base = self._own(M.device_buffer(ctx, np.concatenate(bases), M.STORAGE, name="morph base"))
        self.offsets = self._own(M.device_buffer(ctx, offs, M.STORAGE, name="morph offsets"))
        self.deltas = self._own(M.device_buffer(ctx, all_deltas, M.STORAGE, name="morph deltas"))
        self.weights = self._own(M.device_buffer(ctx, None, M.STORAGE, size=4 * max(1, slot), name="morph weights"))
        self.output = self._own(M.device_buffer(ctx, staging, M.STORAGE | M.VERTEX, name="morph output vertices"))
        self.out_words = self._own(M.device_buffer(ctx, np.concatenate(out_words).astype(np.uint32), M.STORAGE,
                                                   name="morph output words"))
        buffers = {"base_vertices": self.base, "vertex_offsets": self.offsets, "deltas": self.deltas,
                   "weights": self.weights, "out_words": self.output, "out_word": self.out_words}
        iface = MORPH
        if self.delta_format == "compact":
            sc = np.zeros((max(1, slot), 4), np.float32)
            sc[:slot, :3] = np.concatenate(scales)
            self.scales = self._own(M.device_buffer(ctx, sc, M.STORAGE, name="morph target scales"))
            buffers["scales"] = self.scales
            iface = MORPH_COMPACT
        for inst in self.morphing:
            inst.vertex_buffer = self.output
        self.pipeline = ComputePipeline(ctx, iface, max_sets=1)
        self.descriptor_set = self.pipeline.make_set(buffers)
        self._all_push = np.array([(0, vtx)], PUSH)
        self._all_push_ptr = M.cffi_pointer(self._all_push)
        self._all_groups = MORPH.groups(vtx)
        self.gpu_bytes = {"base": self.base.size, "offsets": self.offsets.size, "deltas": self.deltas.size,
                          "weights": self.weights.size, "output": self.output.size,
                          "output_words": self.out_words.size}

    # ------------------------------------------------------------------ per frame
    def set_weights(self, node: int | str, weights) -> bool:
        """Set a node's morph weights (all its primitives); True when anything changed."""
        return self.pose.set_weights(node, weights)

    def set_weight(self, node: int | str, target: int | str, value: float) -> bool:
        """Set one target by name or index (``rt.set_weight("Head", "MouthOpen", 0.7)``)."""
        return self.pose.set_weight(node, target, value)

    def record(self, cb) -> FrameCounters:
        """Record this frame's version-gated morph work into ``cb``; returns what was recorded."""
        c = FrameCounters()
        if self.pose.version == self.applied_pose_version or not self.morphing:  # level 1
            c.pose_skipped, c.skipped = True, len(self.morphing)
            self.last_counters = c
            return c
        first = self.applied_pose_version < 0
        self.applied_pose_version = self.pose.version
        dirty_nodes = self.pose.take_dirty()
        dirty = self.morphing if first else [i for n in dirty_nodes for i in self._by_node.get(n, ())]
        c.skipped = len(self.morphing) - len(dirty)
        if not dirty:
            self.last_counters = c
            return c
        np.take(self.pose.flat, self._gather, out=self.gpu_weights)
        few = len(dirty) <= FEW_DIRTY
        barriers.previous_frame_to_morph_writes(cb)
        if few:
            for inst in dirty:
                c.bytes_uploaded += self._upload(cb, inst.weight_offset, inst.target_count)
        else:
            c.bytes_uploaded += self._upload(cb, 0, len(self.gpu_weights))
        barriers.transfer_write_to_compute_read(cb)
        vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.pipeline.pipeline)
        vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.pipeline.layout, 0, 1,
                                   [self.descriptor_set], 0, None)
        if few:
            for inst in dirty:
                vk.vkCmdPushConstants(cb, self.pipeline.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, PUSH.itemsize,
                                      inst._push_ptr)
                vk.vkCmdDispatch(cb, inst.groups, 1, 1)
            c.dispatch_calls = len(dirty)
        else:
            vk.vkCmdPushConstants(cb, self.pipeline.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, PUSH.itemsize,
                                  self._all_push_ptr)
            vk.vkCmdDispatch(cb, self._all_groups, 1, 1)
            c.dispatch_calls = 1
        barriers.compute_write_to_vertex_read(cb)
        c.barriers = 3
        c.dispatched = len(dirty)
        self.last_counters = c
        return c

    def _upload(self, cb, first: int, count: int) -> int:
        """vkCmdUpdateBuffer of gpu_weights[first:first+count] (chunked at 64 KiB); returns bytes."""
        view = self.gpu_weights[first:first + count]
        raw = view.view(np.uint8)
        for start in range(0, raw.nbytes, UPDATE_CHUNK):
            chunk = raw[start:start + UPDATE_CHUNK]
            vk.vkCmdUpdateBuffer(cb, self.weights.handle, 4 * first + start, chunk.nbytes, M.cffi_pointer(chunk))
        return raw.nbytes

    # ------------------------------------------------------------------ queries
    def instance(self, node: int | str, primitive: int = 0) -> PrimitiveInstance:
        if isinstance(node, str):
            try:
                node = self.scene.node_index(node)
            except KeyError:
                raise UsageError(f"no node named {node!r}") from None
        try:
            return self._by_key[(node, primitive)]
        except KeyError:
            raise UsageError(f"node {node} primitive {primitive} is not drawn by this runtime") from None

    def vertex_buffer(self, node: int | str, primitive: int = 0):
        """VkBuffer to bind as vertex input (the batch's morph output for primitives with targets)."""
        return self.instance(node, primitive).vertex_buffer.handle

    def vertex_buffer_offset(self, node: int | str, primitive: int = 0) -> int:
        """Byte offset to pass with vertex_buffer() to vkCmdBindVertexBuffers."""
        return self.instance(node, primitive).vertex_offset

    def index_buffer(self, node: int | str, primitive: int = 0):
        """VkBuffer of uint32 triangle-list indices."""
        return self.instance(node, primitive).index_buffer.handle

    def bounds(self, node: int | str, primitive: int = 0) -> np.ndarray:
        """(2, 3) [min, max] of the primitive's morphed positions at the CURRENT weights, in mesh space (before
        skinning and the node transform; ``vkmorph.morph.bounds.transform_box`` takes it to world space).
        Conservative (contains every deformed vertex) and tight; CPU only, no readback (morph/bounds.py)."""
        inst = self.instance(node, primitive)
        cb = self._cluster_bounds.get(id(inst.prim))
        if cb is None:
            cb = self._cluster_bounds[id(inst.prim)] = ClusterBounds(inst.prim)
        w = self.pose.weights(inst.node)[:inst.target_count] if inst.is_morphing else np.zeros(0)
        return cb.at(w)

    def vertex_input(self, node: int | str, primitive: int = 0) -> VertexInput:
        return vertex_input_of(self.instance(node, primitive).prim.vertices.dtype)

    def read_vertices(self, inst: PrimitiveInstance) -> np.ndarray:
        """Read a primitive's vertices back (submits and waits: for tests and tools, not per frame)."""
        raw = M.readback(self.ctx, inst.vertex_buffer, np.uint8, count=inst.vertex_bytes, offset=inst.vertex_offset)
        return raw.view(inst.prim.vertices.dtype)

    def destroy(self) -> None:
        for b in self._owned:
            b.destroy()
        self._owned.clear()
        self.instances.clear()
        self.morphing.clear()
        if self.pipeline is not None:
            self.pipeline.destroy()
            self.pipeline = None

    def __enter__(self) -> MorphRuntime:
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()
