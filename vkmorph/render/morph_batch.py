"""The morph kernel's data and commands for every morphing primitive of a scene (one batch).

The seam to the facade (render/morph_pass.py, ``MorphRuntime``) is deliberately narrow:

- ``MorphBatch(ctx, instances, pose, delta_format, slots)`` builds the GPU data of ``instances`` (the morphing
  ``PrimitiveInstance`` objects, in order) and fills in on each instance the fields the facade publishes:
  ``vertex_buffer`` (a ``memory.Buffer``: the morph output), ``vertex_offset`` (bytes, in slot 0),
  ``delta_count`` and ``conservative_bounds``. It reads ``inst.prim``, ``inst.node`` and ``inst.target_count``
  and nothing else. ``slots`` output copies (one per frame in flight) live in the same buffer, slot k at byte
  ``k * slot_stride``; each starts as the primitives' full vertex data.
- ``record_uploads(cb, dirty)`` records the weight upload (transfer writes to buffers it owns) and returns the
  bytes uploaded; ``record_dispatches(cb, dirty)`` binds and dispatches (compute reads/writes) and returns the
  number of vkCmdDispatch calls; it writes only output slot ``slot``. ``dirty`` is a sequence of indices into
  ``instances``. The weights are shared by all slots (uploads bring them up to date). The facade records the
  barriers around both (frames-in-flight guard before the uploads, transfer -> compute between, compute ->
  consumer after), so these two calls record no barriers and never submit or wait.
- ``gpu_bytes`` (name -> bytes), ``total_vertices``, ``total_deltas``; ``destroy()`` frees what it created.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..asset.model import attribute_offsets_words
from ..errors import UsageError
from ..gpu import memory as M
from ..gpu.context import Context, Owner
from ..gpu.interface import MORPH, MORPH_COMPACT
from ..gpu.interface import MORPH_PUSH as PUSH
from ..gpu.pipeline import ComputePipeline
from ..gpu.vk import vk
from ..morph.gpu_data import DELTA_FORMATS, MORPH_DELTA, build_gpu_morph_data, compact_deltas
from ..morph.state import SceneMorphPose

if TYPE_CHECKING:
    from .morph_pass import PrimitiveInstance

OUTPUT_ALIGNMENT = 256       # >= every device's minStorageBufferOffsetAlignment, so ranges can be bound
UPDATE_CHUNK = 65536         # vkCmdUpdateBuffer's limit per call
FEW_DIRTY = 4                # up to this many changed primitives: per-primitive uploads and dispatches


def _align(n: int, a: int = OUTPUT_ALIGNMENT) -> int:
    return (n + a - 1) // a * a


class _Slot:
    """Kernel-side bookkeeping of one primitive in the batch."""

    __slots__ = ("first_vertex", "weight_offset", "target_count", "groups", "push", "push_ptr")

    def __init__(self, first_vertex: int, weight_offset: int, target_count: int, vertex_count: int):
        self.first_vertex, self.weight_offset, self.target_count = first_vertex, weight_offset, target_count
        self.groups = MORPH.groups(vertex_count)
        self.push = np.array([(first_vertex, vertex_count)], PUSH)
        self.push_ptr = M.cffi_pointer(self.push)


class MorphBatch:
    """Base vertices, CSR offsets, deltas and weights of all morphing primitives behind one descriptor set; the
    output vertex data of each primitive at its own aligned offset of one STORAGE | VERTEX buffer."""

    def __init__(self, ctx: Context, instances: Sequence[PrimitiveInstance], pose: SceneMorphPose,
                 delta_format: str = "full", slots: int = 1):
        if delta_format not in DELTA_FORMATS:
            raise UsageError(f"delta_format must be one of {DELTA_FORMATS}, got {delta_format!r}")
        self.ctx, self.pose, self.delta_format, self.slots = ctx, pose, delta_format, int(slots)
        self.instances = list(instances)
        self.pipeline: ComputePipeline | None = None
        self._owner = Owner(ctx, "morph batch")
        self._slots: list[_Slot] = []
        self.gpu_bytes: dict[str, int] = {}
        self.total_vertices = self.total_deltas = 0
        try:
            self._build()
        except BaseException:
            self.destroy()
            raise

    def _own(self, obj):
        return self._owner.own(obj)

    def _build(self) -> None:
        ctx = self.ctx
        bases, offsets, deltas, out_words, scales, gather = [], [], [], [], [], []
        out_bytes = 0
        vtx = dlt = slot = 0
        for inst in self.instances:
            prim = inst.prim
            if attribute_offsets_words(prim.vertices.dtype)["tangent"] != 6:
                raise UsageError("vertex layout must start with position, normal, tangent")
            data = build_gpu_morph_data(prim, self.pose.weight_range)
            V = prim.vertex_count
            self._slots.append(_Slot(vtx, slot, inst.target_count, V))
            inst.delta_count, inst.conservative_bounds = data.delta_count, data.conservative_bounds
            inst.vertex_offset = out_bytes
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
        for inst in self.instances:
            raw = inst.prim.vertices.view(np.uint8)
            staging[inst.vertex_offset:inst.vertex_offset + raw.nbytes] = raw
        self.base = self._own(M.device_buffer(ctx, np.concatenate(bases), M.STORAGE, name="morph base"))
        self.offsets = self._own(M.device_buffer(ctx, offs, M.STORAGE, name="morph offsets"))
        self.deltas = self._own(M.device_buffer(ctx, all_deltas, M.STORAGE, name="morph deltas"))
        self.weights = self._own(M.device_buffer(ctx, None, M.STORAGE, size=4 * max(1, slot), name="morph weights"))
        self.slot_stride = out_bytes
        self.output = self._own(M.device_buffer(ctx, np.tile(staging, self.slots), M.STORAGE | M.VERTEX,
                                                name="morph output vertices"))
        self.out_words = self._own(M.device_buffer(ctx, np.concatenate(out_words).astype(np.uint32), M.STORAGE,
                                                   name="morph output words"))
        buffers = {"base_vertices": self.base, "vertex_offsets": self.offsets, "deltas": self.deltas,
                   "weights": self.weights, "out_word": self.out_words}
        iface = MORPH
        if self.delta_format == "compact":
            sc = np.zeros((max(1, slot), 4), np.float32)
            sc[:slot, :3] = np.concatenate(scales)
            self.scales = self._own(M.device_buffer(ctx, sc, M.STORAGE, name="morph target scales"))
            buffers["scales"] = self.scales
            iface = MORPH_COMPACT
        for inst in self.instances:
            inst.vertex_buffer = self.output
        self.pipeline = self._own(ComputePipeline(ctx, iface, max_sets=self.slots))
        self.descriptor_sets = []
        for k in range(self.slots):
            buffers["out_words"] = (self.output, k * out_bytes, max(out_bytes, 4))
            self.descriptor_sets.append(self.pipeline.make_set(buffers))
        self._all = _Slot(0, 0, slot, vtx)
        self.gpu_bytes = {"base": self.base.size, "offsets": self.offsets.size, "deltas": self.deltas.size,
                          "weights": self.weights.size, "output": self.output.size,
                          "output_words": self.out_words.size}

    # ------------------------------------------------------------------ per frame
    def record_uploads(self, cb, dirty: Sequence[int]) -> int:
        """Gather the pose's weights and record their upload for the ``dirty`` primitives; returns bytes."""
        np.take(self.pose.flat, self._gather, out=self.gpu_weights)
        if len(dirty) <= FEW_DIRTY:
            return sum(self._upload(cb, self._slots[i].weight_offset, self._slots[i].target_count) for i in dirty)
        return self._upload(cb, 0, len(self.gpu_weights))

    def record_dispatches(self, cb, dirty: Sequence[int], slot: int = 0) -> int:
        """Record the morph of the ``dirty`` primitives into output ``slot`` (one dispatch each when few, else
        one over all)."""
        self.pipeline.bind(cb, self.descriptor_sets[slot])
        slots = [self._slots[i] for i in dirty] if len(dirty) <= FEW_DIRTY else [self._all]
        for s in slots:
            self.pipeline.push(cb, s.push_ptr, PUSH.itemsize)
            vk.vkCmdDispatch(cb, s.groups, 1, 1)
        return len(slots)

    def _upload(self, cb, first: int, count: int) -> int:
        """vkCmdUpdateBuffer of gpu_weights[first:first+count] (chunked at 64 KiB); returns bytes."""
        raw = self.gpu_weights[first:first + count].view(np.uint8)
        for start in range(0, raw.nbytes, UPDATE_CHUNK):
            chunk = raw[start:start + UPDATE_CHUNK]
            vk.vkCmdUpdateBuffer(cb, self.weights.handle, 4 * first + start, chunk.nbytes, M.cffi_pointer(chunk))
        return raw.nbytes

    def destroy(self) -> None:
        self._owner.destroy()   # everything it created, in reverse creation order
