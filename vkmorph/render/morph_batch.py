"""The morph kernel's data and commands for every morphing primitive of a scene (one batch).

The seam to the facade (render/morph_pass.py, ``MorphRuntime``) is deliberately narrow:

- ``MorphBatch(ctx, instances, pose, delta_format=, slots=, kernel=)`` builds the GPU data of ``instances`` (the
  morphing ``PrimitiveInstance`` objects, in order; it reads ``inst.prim``, ``inst.node`` and
  ``inst.target_count`` and writes nothing into them) and publishes ``output`` (a ``memory.Buffer``: the morph
  output of every primitive) and ``ranges``, one row per instance (``RANGE``: byte offset of its vertices in an
  output slot, deltas stored, first chunk, chunks, first weight slot, targets).
- ``record_uploads(cb, dirty, slot)`` writes the weights and returns the bytes written: with
  ``weight_writes="transfer"`` it records ``vkCmdUpdateBuffer`` into one weight buffer shared by the slots
  (transfer writes, ordered by the facade's barriers); with ``"host"`` it records nothing and writes output
  slot ``slot``'s own host-visible weight buffer on the CPU (``WEIGHT_WRITES``, below);
  ``record_dispatches(cb, dirty, slot)`` binds and dispatches (compute reads/writes) and returns a
  ``Dispatched`` (calls, chunk ranges, workgroups). ``dirty`` is an ascending int array of indices into
  ``instances``: the chunk ranges of adjacent dirty primitives are merged into one range, and every range is
  dispatched, whatever their number, so GPU work follows the dirty primitives. The facade records the barriers
  around both (frames-in-flight guard before the uploads, transfer -> compute between unless the host wrote
  the weights, compute -> consumer after), so these two calls record no barriers and never submit or wait.
- ``gpu_bytes`` (name -> bytes), ``total_vertices``, ``total_deltas``, ``block_fill`` and ``kernel_family``
  ("workgroup" or "per-vertex", which the fill picks on a GPU); ``destroy()`` frees what it created.

The data layout (chunked target-major blocks with vertex masks) and why it is what it is: morph/gpu_data.py
``build_chunked_batch`` and glsl/morph_common.glsl.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..asset.model import attribute_offsets_words
from ..errors import UsageError
from ..gpu import memory as M
from ..gpu.context import Context
from ..gpu.interface import MORPH, MORPH_COMPACT, MORPH_COMPACT_VERTEX, MORPH_VERTEX
from ..gpu.interface import MORPH_PUSH as PUSH
from ..gpu.ownership import Owner
from ..gpu.pipeline import ComputePipeline
from ..gpu.vk import vk
from ..morph.gpu_data import DELTA_FORMATS, batch_block_fill, build_chunked_batch, scan_batch
from ..morph.state import SceneMorphPose

if TYPE_CHECKING:
    from .morph_pass import PrimitiveInstance

OUTPUT_ALIGNMENT = 256       # >= every device's minStorageBufferOffsetAlignment, so ranges can be bound
UPDATE_CHUNK = 65536         # vkCmdUpdateBuffer's limit per call
MAX_GROUPS = 65535           # maxComputeWorkGroupCount[0] every device supports: 16.7M vertices per dispatch
# Weight uploads bridge gaps of up to this many weight slots between changed primitives: the slots in a gap
# belong to primitives not changed since they were last uploaded, so rewriting their current values is
# harmless (the guard barrier orders every earlier read first), and one vkCmdUpdateBuffer of a few hundred
# bytes more costs less than a second call (Python and command-buffer overhead). Dispatches never bridge: a
# gap's chunks would be recomputed for nothing.
UPLOAD_GAP_SLOTS = 256
# Crowds ("transfer"): a weight upload bridges gaps of up to this many bytes of unchanged instances' rows (their
# current values, as above). One vkCmdUpdateBuffer carries at most 64 KiB, so with gaps up to that size bridged
# the calls are at most ~2 per 64 KiB of the changed rows' span (bounded by the crowd's weight bytes / 32 KiB,
# whatever the number of runs); the bytes copied into the command buffer cost less than a run (lavapipe,
# bench/2026-12-02-lavapipe-upload-gap.md: ~25 us recorded per run, its two calls and numpy, against ~16 us per
# 64 KiB recorded and executed; gaps just under 64 KiB, the worst case, cost 4-40 % more than unbridged).
CROWD_UPLOAD_GAP_BYTES = 65536
# Kernel per delta format. Two families, each with its own data layout (morph/gpu_data.py):
# - workgroup (GPUs with subgroup ballots): per chunk of 256 vertices the active (chunk, target) blocks are
#   compacted in shared memory and each thread finds its deltas in them by popcount; cost per thread grows
#   with the active blocks of its chunk, whether or not they move its vertex.
# - per-vertex (CPU devices, GPUs without ballots, and sparse batches on GPUs): each invocation adds the deltas
#   its own target bitmask and the frame's active-target bits select; no barriers, no per-block work, but a
#   warp's delta loads are scattered (vertex-major deltas).
# With kernel="auto" the batch's mean block fill (deltas / (blocks x 256)) picks the family on a GPU: below
# VERTEX_KERNEL_BELOW_FILL the per-vertex one. The threshold comes from a same-window A/B of both kernels on an
# H200 (bench/ab.py; the figures are in bench/ and the README's Benchmarks section, not here).
SHADERS = {"full": MORPH, "compact": MORPH_COMPACT}
CPU_SHADERS = {"full": MORPH_VERTEX, "compact": MORPH_COMPACT_VERTEX}
VERTEX_KERNEL_BELOW_FILL = 0.1
# How a frame's weights reach the kernel:
# - "transfer": one device-local weight buffer (and active-bit buffer) shared by every output slot, written in
#   the frame by vkCmdUpdateBuffer, then TRANSFER_TO_COMPUTE. Works whatever the host does between frames
#   (slots=1 with frames in flight: the guard barrier orders earlier reads on the GPU's timeline).
# - "host": per output slot its own weight (and active-bit) buffer, host-visible and coherent (device-local
#   where the device has such memory: gpu.memory.write_buffer), written by the CPU while the frame is recorded;
#   the frame records no transfer and no transfer -> compute barrier (vkQueueSubmit makes earlier host writes to
#   coherent memory visible to the submitted commands). Correct because a slot's buffer is rewritten only when
#   that slot is recorded again, after the host waited for the fence of the frame that last used the slot (the
#   rule of docs/embedding.md, "Output slots"); with one slot that means no frames in flight.
WEIGHT_WRITES = ("auto", "host", "transfer")


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


KERNELS = ("auto", "workgroup", "per-vertex")


def kernel_for(ctx: Context, delta_format: str, block_fill: float = 1.0, kernel: str = "auto"):
    """The morph kernel (its interface) for a batch whose mean block fill is ``block_fill`` on this device; the
    layout follows the kernel. ``kernel``: "auto" (the fill and the device decide), "workgroup" (a UsageError on
    a device without subgroup ballots in compute shaders) or "per-vertex"."""
    if kernel not in KERNELS:
        raise UsageError(f"kernel must be one of {KERNELS}, got {kernel!r}")
    if kernel == "workgroup":
        if not subgroup_ballot_in_compute(ctx):
            raise UsageError(f"kernel='workgroup' needs subgroup ballots in compute shaders, which "
                             f"{ctx.info.device_name!r} lacks; use kernel='per-vertex' or 'auto'")
        return SHADERS[delta_format]
    if kernel == "per-vertex":
        return CPU_SHADERS[delta_format]
    workgroup = ctx.info.device_type != "cpu" and block_fill >= VERTEX_KERNEL_BELOW_FILL \
        and subgroup_ballot_in_compute(ctx)
    return (SHADERS if workgroup else CPU_SHADERS)[delta_format]


def _align(n: int, a: int = OUTPUT_ALIGNMENT) -> int:
    return (n + a - 1) // a * a


# one row per primitive of the batch: where its data and output are, what a dispatch of it covers
RANGE = np.dtype([("vertex_offset", "<i8"),   # bytes into an output slot of ``output``
                  ("delta_count", "<i8"),     # deltas stored (zero deltas are not)
                  ("first_chunk", "<i8"), ("chunk_count", "<i8"),
                  ("weight_offset", "<i8"), ("target_count", "<i8")])


@dataclass
class Dispatched:
    """What ``record_dispatches`` recorded."""

    calls: int = 0       # vkCmdDispatch calls
    ranges: int = 0      # merged chunk ranges (adjacent dirty primitives share one)
    groups: int = 0      # workgroups (chunks of 256 vertices) dispatched
    from_list: bool = False   # crowds: the rows read the frame's instance list (several runs of instances)


def merged_ranges(first: np.ndarray, count: np.ndarray, idx: np.ndarray, gap: int = 0
                  ) -> tuple[np.ndarray, np.ndarray]:
    """(starts, lengths) of the ranges [first[i], first[i] + count[i]) for i in ``idx`` (ascending), where one
    that starts at most ``gap`` after the previous one's end is merged into it (0: only exactly adjacent ones).
    Vectorized: no Python work per range."""
    if len(idx) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    f = first[idx]
    e = f + count[idx]
    brk = np.flatnonzero(f[1:] - e[:-1] > gap) + 1
    starts = f[np.r_[0, brk]]
    ends = e[np.r_[brk - 1, len(idx) - 1]]
    return starts, ends - starts


class MorphBatch:
    """The chunked morph data of all morphing primitives behind one descriptor set; the output vertex data of
    each primitive at its own aligned offset of one STORAGE | VERTEX buffer (it starts as the full vertices)."""

    def __init__(self, ctx: Context, instances: Sequence[PrimitiveInstance], pose: SceneMorphPose, *,
                 delta_format: str = "full", slots: int = 1, kernel: str = "auto",
                 copies: int | None = None, weight_writes: str = "transfer"):
        if delta_format not in DELTA_FORMATS:
            raise UsageError(f"delta_format must be one of {DELTA_FORMATS}, got {delta_format!r}")
        if kernel not in KERNELS:
            raise UsageError(f"kernel must be one of {KERNELS}, got {kernel!r}")
        self.ctx, self.pose, self.delta_format, self.slots = ctx, pose, delta_format, int(slots)
        self.kernel_choice = kernel
        if weight_writes not in ("host", "transfer"):
            raise UsageError(f"weight_writes must be 'host' or 'transfer' here, got {weight_writes!r}")
        self.weight_writes = weight_writes
        self.host_weights = weight_writes == "host"
        self._slot = 0              # the output slot whose weights record_uploads is writing
        self.update_calls = 0       # vkCmdUpdateBuffer calls recorded so far (none with weight_writes="host")
        # crowds (an int): instances, each with its own weights and output range, all else shared; None: one
        self.crowd_layout = copies is not None
        self.copies = 1 if copies is None else int(copies)
        self.instances = list(instances)
        self.pipeline: ComputePipeline | None = None
        self._owner = Owner(ctx, "morph batch")
        self.ranges = np.zeros(len(self.instances), RANGE)
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
            node_slice = self.pose.slice_of(inst.node)
            gather.append(node_slice.start + np.arange(inst.target_count))
            slot += inst.target_count
            out_bytes = _align(out_bytes + prim.vertices.nbytes)
        scans = scan_batch(prims)
        self.block_fill = batch_block_fill(prims, scans)
        self.kernel = kernel_for(ctx, self.delta_format, self.block_fill, self.kernel_choice)
        lists = any(b.name == "vertex_records" for b in self.kernel.bindings)
        self.kernel_family = "per-vertex" if lists else "workgroup"
        data = build_chunked_batch(prims, weight_offsets, out_vec4, self.pose.weight_range, self.delta_format,
                                   slot_count=slot, vertex_lists=lists, scans=scans)
        del scans
        r = self.ranges
        r["vertex_offset"] = [16 * v for v in out_vec4]
        r["target_count"] = [inst.target_count for inst in self.instances]
        for k, ps in enumerate(data.slots):
            r[k]["delta_count"], r[k]["first_chunk"], r[k]["chunk_count"] = ps.delta_count, ps.first_chunk, \
                ps.chunk_count
            r[k]["weight_offset"] = ps.weight_offset
        self._first_chunk, self._chunk_count = r["first_chunk"].copy(), r["chunk_count"].copy()
        self._weight_offset, self._target_count = r["weight_offset"].copy(), r["target_count"].copy()
        self.ranges.flags.writeable = False
        self.total_vertices = sum(p.vertex_count for p in prims)
        self.total_deltas = data.delta_count
        self._gather = np.concatenate(gather).astype(np.int64)
        # crowds: instance i's weight slots start at i * instance_slots (a multiple of 32, so its active-bit words
        # are its own); one instance keeps the plain layout (instance_slots unused: the push field stays 0)
        self.slot_count = slot
        self.instance_slots = max(32, (slot + 31) // 32 * 32) if self.crowd_layout else 0
        total_slots = self.copies * self.instance_slots if self.crowd_layout else slot
        self.gpu_weights = np.zeros(total_slots, np.float32)
        staging = np.zeros(out_bytes, np.uint8)
        for inst, off in zip(self.instances, self.ranges["vertex_offset"]):
            raw = inst.prim.vertices.view(np.uint8)
            staging[off:off + raw.nbytes] = raw
        buffers = {}
        arrays = {"chunks": data.chunks, "deltas": data.delta_a, "deltas_tz": data.delta_b, "base": data.base}
        if lists:
            arrays["vertex_records"] = data.vertex_records
        else:
            arrays["table"], arrays["masks"] = data.table, data.masks
        # compact per-vertex kernel: per slot weight x (position, normal, tangent scale, 1), multiplied here per
        # frame (S x 4 floats) instead of per delta and lane in the shader, where that gather and multiply is
        # repeated for every delta (the measured share of the pass is in bench/, lavapipe-vs-previous)
        self.scales = data.scales[:max(1, slot)] if lists and self.delta_format == "compact" else None
        self.weight_words = 4 if self.scales is not None else 1
        self.gpu_scaled = np.zeros((max(1, total_slots), 4), np.float32) if self.scales is not None else None
        if self.delta_format == "compact" and self.scales is None:
            arrays["scales"] = data.scales
        for name, arr in arrays.items():
            buffers[name] = self._own(M.device_buffer(ctx, arr, M.STORAGE, name=f"morph {name}"))
        weight_bytes = 4 * self.weight_words * max(1, total_slots)
        if self.host_weights:      # per output slot, written by the CPU (WEIGHT_WRITES)
            self.slot_weights = [self._own(M.write_buffer(ctx, weight_bytes, M.STORAGE,
                                                          name=f"morph weights (slot {k}, host-written)"))
                                 for k in range(self.slots)]
            self._slot_words = [b.view(np.uint32) for b in self.slot_weights]
        self.weights = buffers["weights"] = self.slot_weights[0] if self.host_weights else self._own(
            M.device_buffer(ctx, None, M.STORAGE, size=weight_bytes, name="morph weights"))
        # output slot k (frames in flight) starts at k * slot_stride; instance i of it i * instance_stride later
        self.instance_stride = out_bytes
        self.slot_stride = out_bytes * self.copies
        # every slot and instance starts as the file's vertices: one staging copy, replicated on the GPU
        self.output = self._own(M.device_buffer(ctx, None, M.STORAGE | M.VERTEX, size=self.slots * self.slot_stride,
                                                name="morph output vertices"))
        M.upload_replicated(ctx, self.output, staging, self.slots * self.copies)
        # per-vertex kernel: bit s of the active-bit words = weight slot s is non-zero (+ a spare word it may read)
        self.active_bits = np.zeros((total_slots + 31) // 32 + 1 if lists else 0, np.uint32)
        if lists and self.host_weights:
            self.slot_active = [self._own(M.write_buffer(ctx, self.active_bits.nbytes, M.STORAGE,
                                                         name=f"morph active target bits (slot {k}, host-written)"))
                                for k in range(self.slots)]
            self._slot_bits = [b.view(np.uint32) for b in self.slot_active]
            self.active = buffers["active_bits"] = self.slot_active[0]
        elif lists:
            self.active = buffers["active_bits"] = self._own(M.device_buffer(
                ctx, None, M.STORAGE, size=self.active_bits.nbytes, name="morph active target bits"))
        # crowds: the frame's changed instances (ascending uint32), which a list dispatch's rows read
        # (record_crowd_dispatches); written like the weights: vkCmdUpdateBuffer into one shared buffer, or the
        # host into the slot's own mapped one. One instance: a 16-byte placeholder the kernel never reads.
        list_bytes = 4 * max(4, self.copies) if self.crowd_layout else 16
        if self.host_weights and self.crowd_layout:
            self.slot_lists = [self._own(M.write_buffer(ctx, list_bytes, M.STORAGE,
                                                        name=f"morph instance list (slot {k}, host-written)"))
                               for k in range(self.slots)]
            self._slot_list_words = [b.view(np.uint32) for b in self.slot_lists]
            self.instance_list = buffers["instance_list"] = self.slot_lists[0]
        else:
            self.instance_list = buffers["instance_list"] = self._own(M.device_buffer(
                ctx, None, M.STORAGE, size=list_bytes, name="morph instance list"))
        self.gpu_bytes = {name: b.size for name, b in buffers.items()}
        self.gpu_bytes["output"] = self.output.size
        # A crowd's output range can exceed maxStorageBufferRange (128 MiB on lavapipe: 1,600 RobotExpressives):
        # instances' outputs are bound in groups that fit, one descriptor set per (slot, group); a dispatch never
        # spans two groups and its output_instance is its group's first instance (weights stay bound whole).
        limit = int(ctx.info.limits.get("maxStorageBufferRange", 1 << 31))
        if self.crowd_layout:
            if out_bytes > limit:
                raise UsageError(f"one instance's morph output ({out_bytes} B) exceeds this device's "
                                 f"maxStorageBufferRange ({limit} B)")
            self.group_instances = min(self.copies, max(1, limit // max(out_bytes, 1)))
        else:
            self.group_instances = 1
        groups = -(-self.copies // self.group_instances)
        self.pipeline = self._own(ComputePipeline(ctx, self.kernel, max_sets=self.slots * groups))
        self.descriptor_sets = []          # slot k (plain) / [slot k][group g] (crowd)
        for k in range(self.slots):
            per_group = []
            for g in range(groups):
                first = g * self.group_instances
                n = min(self.group_instances, self.copies - first) if self.crowd_layout else 1
                buffers["output"] = (self.output, k * self.slot_stride + first * out_bytes, max(n * out_bytes, 16))
                if self.host_weights:
                    buffers["weights"] = self.slot_weights[k]
                    if lists:
                        buffers["active_bits"] = self.slot_active[k]
                    if self.crowd_layout:
                        buffers["instance_list"] = self.slot_lists[k]
                per_group.append(self.pipeline.make_set(buffers))
                if k == 0 and g == 0:
                    self.buffers = dict(buffers)
            self.descriptor_sets.append(per_group if self.crowd_layout else per_group[0])
        self._chunk_total = len(data.chunks)

    # ------------------------------------------------------------------ per frame
    def _weight_ranges(self, dirty: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        if dirty is None or len(dirty) == len(self.instances):
            S = len(self.gpu_weights)
            return np.array([0], np.int64), np.array([S], np.int64)
        return merged_ranges(self._weight_offset, self._target_count, dirty, UPLOAD_GAP_SLOTS)

    def record_uploads(self, cb, dirty: np.ndarray | None, slot: int = 0) -> int:
        """Gather the pose's weights for the ``dirty`` primitives (None: all) and write them for output
        ``slot``, one write per merged weight range (``vkCmdUpdateBuffer``, or a copy into the slot's mapped
        buffer with weight_writes="host"); returns bytes. Python work is per merged range (and the active-bit
        words covering them), not per slot of the batch."""
        S = len(self.gpu_weights)
        self._slot = slot
        firsts, counts = self._weight_ranges(dirty)
        ranges = list(zip(firsts.tolist(), counts.tolist()))
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
            w0s, w1s = firsts // 32, (firsts + counts - 1) // 32 + 1
            keep = counts > 0
            w0s, w1s = w0s[keep], w1s[keep]
            merged: list[list[int]] = []
            for w0, w1 in zip(w0s.tolist(), w1s.tolist()):   # ascending already (ranges are)
                if merged and w0 <= merged[-1][1]:
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

    def chunk_ranges(self, dirty: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
        """(first chunk, chunk count) of each merged range the ``dirty`` primitives (None: all) dispatch."""
        if dirty is None or len(dirty) == len(self.instances):
            return np.array([0], np.int64), np.array([self._chunk_total], np.int64)
        return merged_ranges(self._first_chunk, self._chunk_count, dirty)

    def record_dispatches(self, cb, dirty: np.ndarray | None, slot: int = 0) -> Dispatched:
        """Record the morph of the ``dirty`` primitives (None: all) into output ``slot``: one dispatch per merged
        chunk range (split at MAX_GROUPS workgroups), whatever the number of ranges."""
        firsts, counts = self.chunk_ranges(dirty)
        out = Dispatched(ranges=len(firsts), groups=int(counts.sum()))
        if not out.groups:
            return out
        self.pipeline.bind(cb, self.descriptor_sets[slot])
        pieces = []
        for first, count in zip(firsts.tolist(), counts.tolist()):
            pieces.extend((c, min(MAX_GROUPS, first + count - c)) for c in range(first, first + count, MAX_GROUPS))
        push = np.zeros(len(pieces), PUSH)      # one array per frame; vkCmdPushConstants copies at record time
        push["first_chunk"] = [c for c, _ in pieces]
        base = vk.ffi.cast("char *", M.cffi_pointer(push))
        for k, (_c, groups) in enumerate(pieces):
            self.pipeline.push(cb, base + k * PUSH.itemsize, PUSH.itemsize)
            vk.vkCmdDispatch(cb, groups, 1, 1)
        out.calls = len(pieces)
        return out

    # ------------------------------------------------------------------ per frame, crowds
    def instance_runs(self, rows: np.ndarray, gap: int = 0) -> tuple[np.ndarray, np.ndarray]:
        """(first instance, count) of the runs of consecutive ``rows`` (ascending; gaps up to ``gap`` bridged)."""
        return merged_ranges(self._instance_first, self._instance_one, rows, gap)

    @property
    def _instance_first(self) -> np.ndarray:
        return np.arange(self.copies, dtype=np.int64)

    @property
    def _instance_one(self) -> np.ndarray:
        return np.ones(self.copies, np.int64)

    def record_crowd_uploads(self, cb, rows: np.ndarray, weights: np.ndarray, slot: int = 0) -> int:
        """Gather the weights of the changed instances ``rows`` (ascending) from the crowd's (instances, pose
        slots) array and write them for output ``slot``; all numpy over the rows, no Python work per instance or
        per run of consecutive ones. Returns bytes.

        "host": one fancy-indexed assignment of the changed rows into the slot's mapped buffers (weights, active
        bits). "transfer": vkCmdUpdateBuffer over the changed rows' span with every gap of at most
        ``crowd_upload_gap`` instances bridged (CROWD_UPLOAD_GAP_BYTES): the calls are bounded by the crowd's
        weight bytes / 64 KiB, whatever the number of runs. When the rows form several runs it also writes this
        frame's instance list, which record_crowd_dispatches' list dispatch reads (``_crowd_plan``)."""
        Sp, S = self.instance_slots, self.slot_count
        self._slot = slot
        g = self.gpu_weights.reshape(self.copies, Sp)
        g[rows, :S] = weights[rows][:, self._gather]
        gs = None
        if self.gpu_scaled is not None:
            gs = self.gpu_scaled.reshape(self.copies, Sp, 4)
            gs[rows, :S] = g[rows, :S, None] * self.scales[None, :S]
        W = Sp // 32
        words = self.active_bits[:self.copies * W].reshape(self.copies, W) if len(self.active_bits) else None
        if words is not None:
            words[rows] = np.packbits(g[rows] != 0, axis=1, bitorder="little").view(np.uint32)
        rows = np.asarray(rows, np.int64)
        list_ = self._crowd_plan(rows)[3]     # several runs: the dispatch reads this frame's instance list
        n = 0
        if self.host_weights:       # one vectorized copy of the changed rows each, nothing recorded
            if list_:
                n += self._write_list(cb, rows.astype(np.uint32), slot)
            # a few runs (all changing: one): slice copies, cheaper than a gather; else one fancy-indexed copy
            firsts, counts = self.instance_runs(rows)
            sel = [slice(f, f + c) for f, c in zip(firsts.tolist(), counts.tolist())] if len(firsts) <= 4 \
                else [rows]
            src = self.gpu_scaled.view(np.uint32).reshape(self.copies, Sp * 4) if gs is not None \
                else g.view(np.uint32)
            dst = self._slot_words[slot][:src.size].reshape(src.shape)
            for r in sel:
                dst[r] = src[r]
            n += len(rows) * Sp * 4 * self.weight_words
            if words is not None:
                bits = self._slot_bits[slot][:self.copies * W].reshape(self.copies, W)
                for r in sel:
                    bits[r] = words[r]
                n += len(rows) * W * 4
            return n
        # rows in a bridged gap were uploaded at their current values (unchanged since), so rewriting is harmless
        firsts, counts = self.instance_runs(rows, self.crowd_upload_gap)
        if list_:
            n += self._write_list(cb, rows.astype(np.uint32), slot)
        runs = list(zip(firsts.tolist(), counts.tolist()))
        if gs is not None:
            n += sum(self._update(cb, self.weights, 4 * f * Sp, self.gpu_scaled[f * Sp:(f + c) * Sp].reshape(-1))
                     for f, c in runs)
        else:
            n += sum(self._update(cb, self.weights, f * Sp, self.gpu_weights[f * Sp:(f + c) * Sp]) for f, c in runs)
        if words is not None:
            n += sum(self._update(cb, self.active, f * W, self.active_bits[f * W:(f + c) * W]) for f, c in runs)
        return n

    @property
    def crowd_upload_gap(self) -> int:
        """Instances a crowd's weight upload bridges between changed ones ("transfer"): CROWD_UPLOAD_GAP_BYTES of
        their weight rows (at least UPLOAD_GAP_SLOTS' worth, as for primitives)."""
        row = 4 * self.instance_slots * self.weight_words
        return max(UPLOAD_GAP_SLOTS // max(self.instance_slots, 1) - 1, CROWD_UPLOAD_GAP_BYTES // max(row, 1))

    def record_crowd_dispatches(self, cb, rows: np.ndarray, slot: int = 0) -> Dispatched:
        """Morph every chunk of the changed instances ``rows`` (ascending) into output ``slot``, workgroup row y
        morphing one instance. One run of consecutive instances (per binding group): rows first_instance + y, as
        before. Several runs: the rows are written as this frame's instance list (vkCmdUpdateBuffer, or the
        slot's mapped list with weight_writes="host") and one dispatch per binding group (chunks x its changed
        instances; split at MAX_GROUPS either way) reads instance = list[first_instance + y]: the calls do not
        follow the runs, and no unchanged instance is morphed (bridging runs would re-morph every instance of a
        gap: a whole instance's chunks each, against ~25-40 us of recording per extra dispatch)."""
        rows = np.asarray(rows, np.int64)
        firsts, counts, bounds, from_list = self._crowd_plan(rows)
        out = Dispatched(ranges=len(firsts), groups=int(self._chunk_total * len(rows)))
        if not out.groups:
            return out
        G = self.group_instances
        chunk_pieces = [(c, min(MAX_GROUPS, self._chunk_total - c)) for c in range(0, self._chunk_total, MAX_GROUPS)]
        row_pieces = []        # (first instance | first list index, rows, binding group)
        if from_list:          # record_crowd_uploads wrote the list (before the transfer -> compute barrier)
            for grp in range(len(bounds) - 1):
                lo, hi = int(bounds[grp]), int(bounds[grp + 1])
                for r in range(lo, hi, MAX_GROUPS):
                    row_pieces.append((r, min(hi, r + MAX_GROUPS) - r, grp))
        else:
            for f, n in zip(firsts.tolist(), counts.tolist()):
                r = f
                while r < f + n:
                    end = min(f + n, (r // G + 1) * G, r + MAX_GROUPS)
                    row_pieces.append((r, end - r, r // G))
                    r = end
        push = np.zeros(len(chunk_pieces) * len(row_pieces), PUSH)
        push["first_chunk"] = np.tile([c for c, _ in chunk_pieces], len(row_pieces))
        push["first_instance"] = np.repeat([r for r, _, _ in row_pieces], len(chunk_pieces))
        push["output_instance"] = np.repeat([grp * G for _, _, grp in row_pieces], len(chunk_pieces))
        push["instance_slots"] = self.instance_slots
        push["instance_vec4"] = self.instance_stride // 16
        push["from_list"] = int(from_list)
        base = vk.ffi.cast("char *", M.cffi_pointer(push))
        k, bound = 0, -1
        for _r, nrows, grp in row_pieces:
            if grp != bound:
                bound = grp
                self.pipeline.bind(cb, self.descriptor_sets[slot][bound])
            for _c, groups in chunk_pieces:
                self.pipeline.push(cb, base + k * PUSH.itemsize, PUSH.itemsize)
                vk.vkCmdDispatch(cb, groups, nrows, 1)
                k += 1
        out.calls = k
        out.from_list = from_list
        return out

    def _crowd_plan(self, rows: np.ndarray):
        """(run firsts, run counts, list index where each binding group starts, list dispatch?) of ``rows``:
        the list when a binding group holds more than one run of consecutive instances."""
        firsts, counts = self.instance_runs(rows)
        G = self.group_instances
        bounds = np.searchsorted(rows, np.arange(0, self.copies + G, G))
        return firsts, counts, bounds, len(firsts) > int(np.count_nonzero(np.diff(bounds)))

    def _write_list(self, cb, ids: np.ndarray, slot: int) -> int:
        """This frame's instance list (uint32 ``ids``) at word 0: the slot's mapped list ("host") or
        vkCmdUpdateBuffer into the shared one (ordered by the facade's barriers like the weights)."""
        if self.host_weights:
            self._slot_list_words[slot][:len(ids)] = ids
            return ids.nbytes
        raw = ids.view(np.uint8)
        for start in range(0, raw.nbytes, UPDATE_CHUNK):
            chunk = raw[start:start + UPDATE_CHUNK]
            vk.vkCmdUpdateBuffer(cb, self.instance_list.handle, start, chunk.nbytes, M.cffi_pointer(chunk))
            self.update_calls += 1
        return raw.nbytes

    def _update(self, cb, buffer, first: int, words: np.ndarray) -> int:
        """4-byte ``words`` at word ``first`` of ``buffer`` (the weights or the active bits); bytes. "transfer":
        vkCmdUpdateBuffer (chunked at 64 KiB) into the shared buffer; "host": a copy into the mapped buffer of
        the slot being recorded, nothing recorded."""
        if self.host_weights:
            mine = (self._slot_words if buffer is self.weights else self._slot_bits)[self._slot]
            mine[first:first + len(words)] = words.view(np.uint32)
            return words.nbytes
        raw = words.view(np.uint8)
        for start in range(0, raw.nbytes, UPDATE_CHUNK):
            chunk = raw[start:start + UPDATE_CHUNK]
            vk.vkCmdUpdateBuffer(cb, buffer.handle, 4 * first + start, chunk.nbytes, M.cffi_pointer(chunk))
            self.update_calls += 1
        return raw.nbytes

    def destroy(self) -> None:
        self._owner.destroy()   # everything it created, in reverse creation order
