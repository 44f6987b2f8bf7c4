"""The GPU morph pass and the embedding runtime.

``MorphRuntime`` builds, for every node that instances a mesh, one vertex buffer per primitive: primitives with
morph targets get compute resources (base / offsets / deltas / weights buffers, a descriptor set) and an output
buffer with STORAGE | VERTEX usage that starts as the full vertex data; the others get a plain vertex buffer.

``record(cb)`` is the only per-frame call. It follows the two-level version cache: nothing at all when the
scene pose did not change, else weight updates and dispatches only for primitives whose MorphState version
moved, bracketed by three named barriers (write-after-read/write guard, transfer -> compute, and the single
compute -> vertex-input barrier that replaces glMemoryBarrier). It records into the caller's command buffer and
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
from ..gpu.pipeline import ComputePipeline
from ..gpu.vk import vk
from ..morph.gpu_data import MORPH_DELTA, build_gpu_morph_data
from ..morph.state import MorphState, PoseBinding, SceneMorphPose

LOCAL_SIZE = 64
PUSH = np.dtype([("vertex_count", "<u4"), ("stride_words", "<u4"), ("position", "<u4"), ("normal", "<u4"),
                 ("tangent", "<u4")])


@dataclass
class FrameCounters:
    dispatched: int = 0
    skipped: int = 0
    bytes_uploaded: int = 0
    barriers: int = 0
    pose_skipped: bool = False


@dataclass
class VertexInput:
    """How to bind a primitive's vertex buffer in your own pipeline (VkVertexInput* values)."""

    stride: int
    attributes: list[tuple[int, str, int, int]]  # (location, name, VkFormat, byte offset)


_FORMATS = {("<f4", 2): vk.VK_FORMAT_R32G32_SFLOAT, ("<f4", 3): vk.VK_FORMAT_R32G32B32_SFLOAT,
            ("<f4", 4): vk.VK_FORMAT_R32G32B32A32_SFLOAT, ("<u4", 4): vk.VK_FORMAT_R32G32B32A32_UINT}


def vertex_input_of(dtype: np.dtype) -> VertexInput:
    attrs = []
    for loc, name in enumerate(dtype.names):
        sub, off = dtype.fields[name][:2]
        attrs.append((loc, name, _FORMATS[(sub.base.str, sub.shape[0])], off))
    return VertexInput(stride=dtype.itemsize, attributes=attrs)


class PrimitiveInstance:
    """GPU resources of one primitive as instanced by one node."""

    def __init__(self, ctx: Context, pipeline: ComputePipeline | None, node: int, prim_index: int,
                 prim: MeshPrimitiveAsset, state: MorphState | None, index_buffer: M.Buffer):
        self.node, self.prim_index, self.prim, self.state = node, prim_index, prim, state
        self.index_buffer = index_buffer
        self.index_count = len(prim.indices)
        self.applied_version = -1
        self._owned: list[M.Buffer] = []
        usage = M.VERTEX | M.STORAGE  # storage too: the skinning capture kernel reads any vertex buffer
        self.vertex_buffer = self._own(
            M.device_buffer(ctx, prim.vertices, usage, name=f"vertices n{node}p{prim_index}"))
        self.delta_count = 0
        self.conservative_bounds = None
        if state is None:
            return
        data = build_gpu_morph_data(prim, state.weight_range)
        # keep only the summary: the CSR arrays live on the GPU, a host copy would double the memory
        self.delta_count, self.conservative_bounds = data.delta_count, data.conservative_bounds
        deltas = data.deltas if data.delta_count else np.zeros(1, MORPH_DELTA)
        self.base = self._own(M.device_buffer(ctx, data.base_vertices, M.STORAGE, name="morph base"))
        self.offsets = self._own(M.device_buffer(ctx, data.vertex_offsets, M.STORAGE, name="morph offsets"))
        self.deltas = self._own(M.device_buffer(ctx, deltas, M.STORAGE, name="morph deltas"))
        self.weights = self._own(M.device_buffer(ctx, None, M.STORAGE, size=max(4, 4 * state.target_count),
                                                 name="morph weights"))
        self.descriptor_set = pipeline.make_set([self.base, self.offsets, self.deltas, self.weights,
                                                 self.vertex_buffer])
        offs = attribute_offsets_words(prim.vertices.dtype)
        self.push = np.array([(prim.vertex_count, prim.vertices.dtype.itemsize // 4, offs["position"],
                               offs["normal"], offs["tangent"])], PUSH)
        self._push_ptr = M.cffi_pointer(self.push)
        self._weights_ptr = M.cffi_pointer(state._weights)
        self.weights_nbytes = 4 * state.target_count
        self.groups = (prim.vertex_count + LOCAL_SIZE - 1) // LOCAL_SIZE
        del data, deltas

    def _own(self, buf: M.Buffer) -> M.Buffer:
        self._owned.append(buf)
        return buf

    def destroy(self) -> None:
        for b in self._owned:
            b.destroy()
        self._owned.clear()


class MorphRuntime:
    """Everything vkmorph needs on the GPU for one scene; the embedding facade.

    >>> rt = MorphRuntime(Context.from_external(...), load_scene("face.glb"))
    >>> rt.pose.set_weights("Head", [0.0, 1.0, 0.3])
    >>> counters = rt.record(command_buffer)          # inside your frame, before your draws
    >>> buf = rt.vertex_buffer(node, 0); layout = rt.vertex_input(node, 0)
    """

    def __init__(self, ctx: Context, scene: SceneAsset, weight_range: tuple[float, float] = (0.0, 1.0)):
        self.ctx, self.scene = ctx, scene
        self.pose = SceneMorphPose(scene)
        self.pipeline: ComputePipeline | None = None
        self.instances: list[PrimitiveInstance] = []
        self.morphing: list[PrimitiveInstance] = []
        self._index_buffers: dict[int, M.Buffer] = {}
        self._by_key: dict[tuple[int, int], PrimitiveInstance] = {}
        try:
            self._build(weight_range)
        except BaseException:
            self.destroy()
            raise
        states: dict[int, list[MorphState]] = {}
        for inst in self.morphing:
            states.setdefault(inst.node, []).append(inst.state)
        self.binding = PoseBinding(self.pose, states)
        self.last_counters = FrameCounters()

    def _build(self, weight_range) -> None:
        scene = self.scene
        n_morph = sum(1 for n in scene.nodes if n.mesh is not None
                      for p in scene.meshes[n.mesh].primitives if p.morph_targets)
        if n_morph:
            self.pipeline = ComputePipeline(self.ctx, "morph.comp", 5, PUSH.itemsize, max_sets=n_morph)
        for node_i, node in enumerate(scene.nodes):
            if node.mesh is None:
                continue
            for p_i, prim in enumerate(scene.meshes[node.mesh].primitives):
                key = id(prim)
                if key not in self._index_buffers:
                    self._index_buffers[key] = M.device_buffer(self.ctx, prim.indices.astype(np.uint32), M.INDEX,
                                                               name="indices")
                state = None
                if prim.morph_targets:
                    init = self.pose._weights[node_i][: len(prim.morph_targets)]
                    state = MorphState(len(prim.morph_targets), weight_range, init)
                inst = PrimitiveInstance(self.ctx, self.pipeline, node_i, p_i, prim, state,
                                         self._index_buffers[key])
                self.instances.append(inst)
                self._by_key[(node_i, p_i)] = inst
                if state is not None:
                    self.morphing.append(inst)

    # ------------------------------------------------------------------ per frame
    def set_weights(self, node: int | str, weights) -> bool:
        """Set a node's morph weights (all its primitives); True when anything changed."""
        return self.pose.set_weights(node, weights)

    def record(self, cb) -> FrameCounters:
        """Record this frame's version-gated morph work into ``cb``; returns what was recorded."""
        c = FrameCounters()
        if not self.binding.sync():  # level 1: the pose did not move, so no state did
            c.pose_skipped = True
            c.skipped = len(self.morphing)
            self.last_counters = c
            return c
        dirty = [i for i in self.morphing if i.state.version != i.applied_version]
        c.skipped = len(self.morphing) - len(dirty)
        if dirty:
            barriers.previous_frame_to_morph_writes(cb)
            for inst in dirty:
                vk.vkCmdUpdateBuffer(cb, inst.weights.handle, 0, inst.weights_nbytes, inst._weights_ptr)
                c.bytes_uploaded += inst.weights_nbytes
            barriers.transfer_write_to_compute_read(cb)
            vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.pipeline.pipeline)
            for inst in dirty:
                vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.pipeline.layout, 0, 1,
                                           [inst.descriptor_set], 0, None)
                vk.vkCmdPushConstants(cb, self.pipeline.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0,
                                      PUSH.itemsize, inst._push_ptr)
                vk.vkCmdDispatch(cb, inst.groups, 1, 1)
                inst.applied_version = inst.state.version
            barriers.compute_write_to_vertex_read(cb)
            c.barriers = 3
            c.dispatched = len(dirty)
        self.last_counters = c
        return c

    # ------------------------------------------------------------------ queries
    def instance(self, node: int | str, primitive: int = 0) -> PrimitiveInstance:
        if isinstance(node, str):
            node = self.scene.node_index(node)
        try:
            return self._by_key[(node, primitive)]
        except KeyError:
            raise UsageError(f"node {node} primitive {primitive} is not drawn by this runtime") from None

    def vertex_buffer(self, node: int | str, primitive: int = 0):
        """VkBuffer to bind as vertex input (morph output for primitives with targets)."""
        return self.instance(node, primitive).vertex_buffer.handle

    def index_buffer(self, node: int | str, primitive: int = 0):
        """VkBuffer of uint32 triangle-list indices."""
        return self.instance(node, primitive).index_buffer.handle

    def vertex_input(self, node: int | str, primitive: int = 0) -> VertexInput:
        return vertex_input_of(self.instance(node, primitive).prim.vertices.dtype)

    def read_vertices(self, inst: PrimitiveInstance) -> np.ndarray:
        """Read a primitive's vertex buffer back (submits and waits: for tests and tools, not per frame)."""
        raw = M.readback(self.ctx, inst.vertex_buffer, np.uint8)
        return raw.view(inst.prim.vertices.dtype)

    def destroy(self) -> None:
        for inst in self.instances:
            inst.destroy()
        self.instances.clear()
        self.morphing.clear()
        for b in self._index_buffers.values():
            b.destroy()
        self._index_buffers.clear()
        if self.pipeline is not None:
            self.pipeline.destroy()
            self.pipeline = None

    def __enter__(self) -> MorphRuntime:
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()
