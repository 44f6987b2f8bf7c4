"""The morph kernel's data and commands for every morphing primitive of a scene (one batch).

The seam to the facade (render/morph_pass.py, ``MorphRuntime``) is deliberately narrow:

- ``MorphBatch(ctx, instances, pose, delta_format)`` builds the GPU data of ``instances`` (the morphing
  ``PrimitiveInstance`` objects, in order) and fills in on each instance the fields the facade publishes:
  ``vertex_buffer`` (a ``memory.Buffer``: the morph output), ``vertex_offset`` (bytes), ``delta_count`` and
  ``conservative_bounds``. It reads ``inst.prim``, ``inst.node`` and ``inst.target_count`` and nothing else.
- ``record_uploads(cb, dirty)`` records the weight upload (transfer writes to buffers it owns) and returns the
  bytes uploaded; ``record_dispatches(cb, dirty)`` binds and dispatches (compute reads/writes) and returns the
  number of vkCmdDispatch calls. ``dirty`` is a sequence of indices into ``instances``. The facade records the
  barriers around both (frames-in-flight guard before the uploads, transfer -> compute between, compute ->
  consumer after), so these two calls record no barriers and never submit or wait.
- ``gpu_bytes`` (name -> bytes), ``total_vertices``, ``total_deltas``, ``block_fill`` and ``kernel_family``
  ("workgroup" or "per-vertex", which the fill picks on a GPU); ``destroy()`` frees what it created.

The data layout (chunked target-major blocks with vertex masks) and why it is what it is: morph/gpu_data.py
``build_chunked_batch`` and glsl/morph_common.glsl.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..asset.model import attribute_offsets_words
from ..errors import UsageError
from ..gpu import memory as M
from ..gpu.context import Context, Owner
from ..gpu.interface import MORPH, MORPH_COMPACT, MORPH_COMPACT_VERTEX, MORPH_VERTEX
from ..gpu.interface import MORPH_PUSH as PUSH
from ..gpu.pipeline import ComputePipeline
from ..gpu.vk import vk
from ..morph.gpu_data import DELTA_FORMATS, batch_block_fill, build_chunked_batch, scan_batch
from ..morph.state import SceneMorphPose

if TYPE_CHECKING:
    from .morph_pass import PrimitiveInstance

OUTPUT_ALIGNMENT = 256       # >= every device's minStorageBufferOffsetAlignment, so ranges can be bound
UPDATE_CHUNK = 65536         # vkCmdUpdateBuffer's limit per call
FEW_DIRTY = 4                # up to this many changed primitives: per-primitive uploads and dispatches
MAX_GROUPS = 65535           # maxComputeWorkGroupCount[0] every device supports: 16.7M vertices per dispatch
# Kernel per delta format. Two families, each with its own data layout (morph/gpu_data.py):
# - workgroup (GPUs with subgroup ballots): per chunk of 256 vertices the active (chunk, target) blocks are
#   compacted in shared memory and each thread finds its deltas in them by popcount; cost per thread grows
#   with the active blocks of its chunk, whether or not they move its vertex.
# - per-vertex (CPU devices, GPUs without ballots, and sparse batches on GPUs): each invocation adds the deltas
#   its own target bitmask and the frame's active-target bits select; no barriers, no per-block work, but a
#   warp's delta loads are scattered (vertex-major deltas).
# On a GPU the batch's mean block fill (deltas / (blocks x 256)) picks the family. Measured on the H200 in the
# same time window (bench/ab.py, bench/ab-2026-11-30-h200-round64.txt; per-vertex time / workgroup time, with
# the workgroup kernel's 64-entry rounds): fill 0.05 (5 % random coverage, all 52 active) 0.71-0.88 (2M full:
# 1.04); fill 0.25 (25 % random, 5 active) 1.32-1.72 at >= 500k vertices (0.83-0.89 at 50k); MorphStressTest
# x 256, fill 0.28, 0.86-0.96; fill 0.65 (Dawn-like heads) 1.69-1.77; fill 0.99 (clustered) 1.50-1.63. The
# threshold sits between 0.05 and 0.25; MorphStressTest's many small primitives lose 4-14 % to it.
SHADERS = {"full": MORPH, "compact": MORPH_COMPACT}
CPU_SHADERS = {"full": MORPH_VERTEX, "compact": MORPH_COMPACT_VERTEX}
VERTEX_KERNEL_BELOW_FILL = 0.1


def subgroup_ballot_in_compute(ctx: Context) -> bool:
    """VkPhysicalDeviceSubgroupProperties: ballot operations supported in compute shaders."""
    try:
        sub = vk.VkPhysicalDeviceSubgroupProperties()
        props = vk.VkPhysicalDeviceProperties2(pNext=sub)
        vk.vkGetPhysicalDeviceProperties2(ctx.physical_device, props)   # Vulkan 1.1 core
    except Exception:   # noqa: BLE001 -- a Vulkan 1.0 host: no subgroup query, use the per-vertex kernel
        return False
    return bool(sub.supportedStages & vk.VK_SHADER_STAGE_COMPUTE_BIT) and bool(
        sub.supportedOperations & vk.VK_SUBGROUP_FEATURE_BALLOT_BIT)


def kernel_for(ctx: Context, delta_format: str, block_fill: float = 1.0):
    """The morph kernel (its interface) for a batch whose mean block fill is ``block_fill`` on this device; the
    layout follows the kernel."""
    workgroup = ctx.info.device_type != "cpu" and block_fill >= VERTEX_KERNEL_BELOW_FILL \
        and subgroup_ballot_in_compute(ctx)
    return (SHADERS if workgroup else CPU_SHADERS)[delta_format]


def _align(n: int, a: int = OUTPUT_ALIGNMENT) -> int:
    return (n + a - 1) // a * a


class _Dispatch:
    """Push constants for a chunk range, split at MAX_GROUPS workgroups per vkCmdDispatch."""

    __slots__ = ("pieces",)

    def __init__(self, first_chunk: int, chunk_count: int):
        self.pieces = []
        for c in range(first_chunk, first_chunk + chunk_count, MAX_GROUPS):
            push = np.array([c], PUSH)
            self.pieces.append((push, M.cffi_pointer(push), min(MAX_GROUPS, first_chunk + chunk_count - c)))


class _Slot:
    """Kernel-side bookkeeping of one primitive in the batch."""

    __slots__ = ("weight_offset", "target_count", "dispatch")

    def __init__(self, weight_offset: int, target_count: int, first_chunk: int, chunk_count: int):
        self.weight_offset, self.target_count = weight_offset, target_count
        self.dispatch = _Dispatch(first_chunk, chunk_count)


class MorphBatch:
    """The chunked morph data of all morphing primitives behind one descriptor set; the output vertex data of
    each primitive at its own aligned offset of one STORAGE | VERTEX buffer (it starts as the full vertices)."""

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
        self.block_fill = 1.0
        self.kernel_family = ""
        try:
            self._build()
        except BaseException:
            self.destroy()
            raise

    def _own(self, obj):
        return self._owner.own(obj)

    def _build(self) -> None:
        ctx = self.ctx
        prims, weight_offsets, out_vec4, gather = [], [], [], []
        out_bytes = slot = 0
        for inst in self.instances:
            prim = inst.prim
            if attribute_offsets_words(prim.vertices.dtype)["tangent"] != 6 or prim.vertices.dtype.itemsize % 16:
                raise UsageError("vertex layout must start with position, normal, tangent, texcoord and be a "
                                 "multiple of 16 bytes")
            prims.append(prim)
            weight_offsets.append(slot)
            out_vec4.append(out_bytes // 16)
            inst.vertex_offset = out_bytes
            node_slice = self.pose.slice_of(inst.node)
            gather.append(node_slice.start + np.arange(inst.target_count))
            slot += inst.target_count
            out_bytes = _align(out_bytes + prim.vertices.nbytes)
        scans = scan_batch(prims)
        self.block_fill = batch_block_fill(prims, scans)
        self.kernel = kernel_for(ctx, self.delta_format, self.block_fill)
        lists = any(b.name == "vertex_records" for b in self.kernel.bindings)
        self.kernel_family = "per-vertex" if lists else "workgroup"
        data = build_chunked_batch(prims, weight_offsets, out_vec4, self.pose.weight_range, self.delta_format,
                                   slot_count=slot, vertex_lists=lists, scans=scans)
        del scans
        for inst, s in zip(self.instances, data.slots):
            inst.delta_count, inst.conservative_bounds = s.delta_count, s.conservative_bounds
            self._slots.append(_Slot(s.weight_offset, inst.target_count, s.first_chunk, s.chunk_count))
        self.total_vertices = sum(p.vertex_count for p in prims)
        self.total_deltas = data.delta_count
        self._gather = np.concatenate(gather).astype(np.int64)
        self.gpu_weights = np.zeros(slot, np.float32)
        staging = np.zeros(out_bytes, np.uint8)
        for inst in self.instances:
            raw = inst.prim.vertices.view(np.uint8)
            staging[inst.vertex_offset:inst.vertex_offset + raw.nbytes] = raw
        buffers = {}
        arrays = {"chunks": data.chunks, "deltas": data.delta_a, "deltas_tz": data.delta_b, "base": data.base}
        if lists:
            arrays["vertex_records"] = data.vertex_records
        else:
            arrays["table"], arrays["masks"] = data.table, data.masks
        # compact per-vertex kernel: per slot weight x (position, normal, tangent scale, 1), multiplied here per
        # frame (S x 4 floats) instead of per delta and lane in the shader, where that gather and multiply cost
        # ~15 % of the pass with every target active on lavapipe (bench/2026-11-30-lavapipe-vs-previous.txt)
        self.scales = data.scales[:max(1, slot)] if lists and self.delta_format == "compact" else None
        self.weight_words = 4 if self.scales is not None else 1
        self.gpu_scaled = np.zeros((max(1, slot), 4), np.float32) if self.scales is not None else None
        if self.delta_format == "compact" and self.scales is None:
            arrays["scales"] = data.scales
        for name, arr in arrays.items():
            buffers[name] = self._own(M.device_buffer(ctx, arr, M.STORAGE, name=f"morph {name}"))
        self.weights = buffers["weights"] = self._own(M.device_buffer(
            ctx, None, M.STORAGE, size=4 * self.weight_words * max(1, slot), name="morph weights"))
        self.slot_stride = out_bytes     # output slot k (frames in flight) starts at k * slot_stride
        self.output = self._own(M.device_buffer(ctx, np.tile(staging, self.slots), M.STORAGE | M.VERTEX,
                                                name="morph output vertices"))
        # per-vertex kernel: bit s of the active-bit words = weight slot s is non-zero (+ a spare word it may read)
        self.active_bits = np.zeros((slot + 31) // 32 + 1 if lists else 0, np.uint32)
        if lists:
            self.active = buffers["active_bits"] = self._own(M.device_buffer(
                ctx, None, M.STORAGE, size=self.active_bits.nbytes, name="morph active target bits"))
        self.gpu_bytes = {name: b.size for name, b in buffers.items()}
        self.gpu_bytes["output"] = self.output.size
        for inst in self.instances:
            inst.vertex_buffer = self.output
        self.pipeline = self._own(ComputePipeline(ctx, self.kernel, max_sets=self.slots))
        self.descriptor_sets = []
        for k in range(self.slots):
            buffers["output"] = (self.output, k * out_bytes, max(out_bytes, 16))
            self.descriptor_sets.append(self.pipeline.make_set(buffers))
            if k == 0:
                self.buffers = dict(buffers)
        self._all = _Slot(0, slot, 0, len(data.chunks))

    # ------------------------------------------------------------------ per frame
    def record_uploads(self, cb, dirty: Sequence[int]) -> int:
        """Gather the pose's weights and record their upload for the ``dirty`` primitives; returns bytes. Python
        work is per changed slot (and the active-bit words covering them), not per slot of the batch."""
        S = len(self.gpu_weights)
        ranges = [(self._slots[i].weight_offset, self._slots[i].target_count) for i in dirty] \
            if len(dirty) <= FEW_DIRTY else [(0, S)]
        for first, count in ranges:
            self._gather_slots(first, first + count)
        if self.gpu_scaled is not None:
            for first, count in ranges:
                np.multiply(self.gpu_weights[first:first + count, None], self.scales[first:first + count],
                            out=self.gpu_scaled[first:first + count])
            n = sum(self._update(cb, self.weights, 4 * first, self.gpu_scaled[first:first + count].reshape(-1))
                    for first, count in ranges)
        else:
            n = sum(self._update(cb, self.weights, first, self.gpu_weights[first:first + count])
                    for first, count in ranges)
        if len(self.active_bits):    # the words covering those slots; neighbours may share one: each word once
            words = sorted((f // 32, (f + c - 1) // 32 + 1) for f, c in ranges if c)
            merged: list[list[int]] = []
            for w0, w1 in words:
                if merged and w0 < merged[-1][1]:
                    merged[-1][1] = max(merged[-1][1], w1)
                else:
                    merged.append([w0, w1])
            for w0, w1 in merged:    # a word's other slots (a neighbour's) are gathered too: its bits are current
                lo, hi = 32 * w0, min(32 * w1, S)
                self._gather_slots(lo, hi)
                bits = np.packbits(self.gpu_weights[lo:hi] != 0, bitorder="little")
                self.active_bits.view(np.uint8)[4 * w0:4 * w0 + len(bits)] = bits
            n += sum(self._update(cb, self.active, w0, self.active_bits[w0:w1]) for w0, w1 in merged)
        return n

    def _gather_slots(self, lo: int, hi: int) -> None:
        """GPU weight slots lo..hi from the pose (its flat weights through this batch's slot map)."""
        np.take(self.pose.flat, self._gather[lo:hi], out=self.gpu_weights[lo:hi])

    def record_dispatches(self, cb, dirty: Sequence[int], slot: int = 0) -> int:
        """Record the morph of the ``dirty`` primitives into output ``slot`` (their chunks when few, else every
        chunk); returns the number of vkCmdDispatch calls."""
        self.pipeline.bind(cb, self.descriptor_sets[slot])
        slots = [self._slots[i] for i in dirty] if len(dirty) <= FEW_DIRTY else [self._all]
        calls = 0
        for s in slots:
            for _push, ptr, groups in s.dispatch.pieces:
                self.pipeline.push(cb, ptr, PUSH.itemsize)
                vk.vkCmdDispatch(cb, groups, 1, 1)
                calls += 1
        return calls

    @staticmethod
    def _update(cb, buffer, first: int, words: np.ndarray) -> int:
        """vkCmdUpdateBuffer of 4-byte ``words`` at word ``first`` of ``buffer`` (chunked at 64 KiB); bytes."""
        raw = words.view(np.uint8)
        for start in range(0, raw.nbytes, UPDATE_CHUNK):
            chunk = raw[start:start + UPDATE_CHUNK]
            vk.vkCmdUpdateBuffer(cb, buffer.handle, 4 * first + start, chunk.nbytes, M.cffi_pointer(chunk))
        return raw.nbytes

    def destroy(self) -> None:
        self._owner.destroy()   # everything it created, in reverse creation order
