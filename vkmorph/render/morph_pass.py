"""The GPU morph pass and the embedding runtime (the facade; the kernel's data and commands are in
render/morph_batch.py, ``MorphBatch``, whose docstring states the seam).

``MorphRuntime`` builds, for every node that instances a mesh, one vertex buffer range per primitive.
Primitives with morph targets go to one ``MorphBatch`` (one descriptor set; output vertex data of each
primitive at its own aligned offset of one STORAGE | VERTEX buffer). Primitives without targets get a plain
vertex buffer and no compute resources.

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

from ..asset.model import MeshPrimitiveAsset, SceneAsset
from ..errors import UsageError
from ..gpu import barriers
from ..gpu import memory as M
from ..gpu.context import Context
from ..gpu.vk import vk
from ..morph.gpu_data import DELTA_FORMATS
from ..morph.state import SceneMorphPose
from .morph_batch import FEW_DIRTY, MorphBatch  # noqa: F401  (FEW_DIRTY re-exported for tests)


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


_FORMATS = {("<f4", 2): vk.VK_FORMAT_R32G32_SFLOAT, ("<f4", 3): vk.VK_FORMAT_R32G32B32_SFLOAT,
            ("<f4", 4): vk.VK_FORMAT_R32G32B32A32_SFLOAT, ("<u4", 4): vk.VK_FORMAT_R32G32B32A32_UINT}


def vertex_input_of(dtype: np.dtype) -> VertexInput:
    attrs = []
    for loc, name in enumerate(dtype.names):
        sub, off = dtype.fields[name][:2]
        attrs.append((loc, name, _FORMATS[(sub.base.str, sub.shape[0])], off))
    return VertexInput(stride=dtype.itemsize, attributes=attrs)


class PrimitiveInstance:
    """One primitive as instanced by one node: where its vertices are, and its slot in the morph batch."""

    def __init__(self, node: int, prim_index: int, prim: MeshPrimitiveAsset, index_buffer: M.Buffer):
        self.node, self.prim_index, self.prim = node, prim_index, prim
        self.index_buffer = index_buffer
        self.index_count = len(prim.indices)
        self.vertex_buffer: M.Buffer | None = None
        self.vertex_offset = 0                # bytes into vertex_buffer
        self.target_count = len(prim.morph_targets)
        self.delta_count = 0                  # set by MorphBatch for morphing primitives
        self.conservative_bounds = None       # set by MorphBatch for morphing primitives

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
    """

    def __init__(self, ctx: Context, scene: SceneAsset, weight_range: tuple[float, float] = (0.0, 1.0),
                 delta_format: str = "full"):
        if delta_format not in DELTA_FORMATS:
            raise UsageError(f"delta_format must be one of {DELTA_FORMATS}, got {delta_format!r}")
        self.ctx, self.scene, self.delta_format = ctx, scene, delta_format
        self.pose = SceneMorphPose(scene, weight_range)
        self.batch: MorphBatch | None = None
        self.instances: list[PrimitiveInstance] = []
        self.morphing: list[PrimitiveInstance] = []
        self._by_key: dict[tuple[int, int], PrimitiveInstance] = {}
        self._by_node: dict[int, list[int]] = {}  # node -> indices into morphing (= the batch's order)
        self._owned: list[M.Buffer] = []
        self.applied_pose_version = -1
        self.last_counters = FrameCounters()
        self.gpu_bytes: dict[str, int] = {}
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
                    self._by_node.setdefault(node_i, []).append(len(self.morphing))
                    self.morphing.append(inst)
                else:  # storage too: the skinning capture kernel reads any vertex buffer
                    inst.vertex_buffer = self._own(M.device_buffer(ctx, prim.vertices, M.VERTEX | M.STORAGE,
                                                                   name=f"vertices n{node_i}p{p_i}"))
        if self.morphing:
            self.batch = MorphBatch(ctx, self.morphing, self.pose, self.delta_format)
            self.gpu_bytes = self.batch.gpu_bytes

    @property
    def total_vertices(self) -> int:
        return self.batch.total_vertices if self.batch else 0

    @property
    def total_deltas(self) -> int:
        return self.batch.total_deltas if self.batch else 0

    # ------------------------------------------------------------------ per frame
    def set_weights(self, node: int | str, weights) -> bool:
        """Set a node's morph weights (all its primitives); True when anything changed."""
        return self.pose.set_weights(node, weights)

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
        dirty = list(range(len(self.morphing))) if first else [i for n in dirty_nodes for i in self._by_node.get(n, ())]
        c.skipped = len(self.morphing) - len(dirty)
        if not dirty:
            self.last_counters = c
            return c
        barriers.previous_frame_to_morph_writes(cb)
        c.bytes_uploaded = self.batch.record_uploads(cb, dirty)
        barriers.transfer_write_to_compute_read(cb)
        c.dispatch_calls = self.batch.record_dispatches(cb, dirty)
        barriers.compute_write_to_vertex_read(cb)
        c.barriers = 3
        c.dispatched = len(dirty)
        self.last_counters = c
        return c

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
        if self.batch is not None:
            self.batch.destroy()
            self.batch = None

    def __enter__(self) -> MorphRuntime:
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()
