"""Baking a clip: every frame's deformed vertices, computed on the GPU and read back (``Model.bake``).

How a bake runs (``GpuBaker``), so that what bounds it is the readback, not Python:

1. Poses of a whole batch at once, on the GPU: a bake is a crowd of frames, so the crowd's clip-pose pass
   (``glsl/crowd_anim.comp`` through ``render.crowd_anim.ClipPosePass``, ``_GpuPose``) poses one frame per
   thread (every node channel at the frame's time, world matrices of every node, palettes and rigid parts' world
   matrices) into the matrices buffer the bake kernel reads; per batch the host writes one uvec4 per frame (its
   clip and clamped time) and records the pass and ``BAKE_POSE_TO_KERNEL``. Where the pass cannot pose
   (``GpuBaker.pose_refusal``: more than 128 nodes; mesh space with a clip that may scale a skinned mesh node
   to 0, whose inverse the host takes as a pseudo-inverse) or with ``pose="cpu"``, the host poses the batch
   (``vkmorph.anim.pose_batch.PoseBatch``: every node channel sampled at all the batch's times, world matrices,
   skin palettes) and writes the matrices; so does a bake of one frame (``Model.pose``) unless ``pose="gpu"``,
   cheaper there than building the pass. The morph weights of every frame are one (frames, slots) array
   (``frame_weights``: the clips' weight channels sampled once per bake, vectorized over all frames).
2. On the GPU (``glsl/bake_ubo.comp``), per batch: dispatches for every (instance, frame) whose vertices do not
   morph (their rest vertices, uploaded once, through the frame's palette or world matrix); per run of frames
   with the same weights, the renderer's version-gated morph pass (``MorphRuntime.record``: nothing when the
   weights did not move) and dispatches over the morphing instances for those frames. World transforms of
   rigid parts are done there too, in float32. On a GPU the kernel reads the matrices through a dynamic uniform
   buffer (cheaper than a storage buffer on lavapipe, which lowers a storage-buffer load to a loop over the
   lanes, before the texel buffer below): a 64 KiB window of whole frames' matrices
   (``GpuBaker.uniform_window``: 17 frames for RobotExpressive, whose four skins share one palette), one
   dispatch per window at its dynamic offset. Where one frame's matrices do not fit a window
   (over 1,024 matrices a frame) or the device's maxUniformBufferRange is below 64 KiB, ``glsl/bake.comp`` (the
   same code, the batch's matrices in a storage buffer) runs one dispatch per group and run instead. On a CPU
   device (``GpuBaker.split_modes``) the kernel is a pipeline per mode (skinned, rigid, copy: specialization
   constants fold the other modes' code away; llvmpipe runs both sides of every branch), the items sorted by
   mode, and the kernel is ``glsl/bake_wide.comp`` (``GpuBaker.wide_stores``): the batch's matrices through a
   uniform texel buffer (a vector gather on llvmpipe, where a uniform load at a per-item offset is a load per
   lane; one dispatch per mode covers the batch or a run of equal weights, no window) and 64-bit stores of
   vertex pairs; on a CPU device the pose pass runs one workgroup per host CPU (``_pose_group``).
3. The kernel writes three planes (positions, normals, tangents; [frame][vertex][xyz] float32, the layout of
   the ``Bake``'s arrays, nothing padded: float stores, a part's last quad of 4 vertices repeating its last
   vertex), three bindings placed per batch by dynamic offsets. Where the device imports host memory
   (VK_EXT_external_memory_host, ``GpuBaker.zero_copy_refusal``) and has host-cached device-local memory (by
   default; ``GpuBaker.uses_zero_copy``: on a discrete GPU the copy path is faster) they are windows of the
   ``Bake``'s own result array (``_ZeroCopyResult``: numpy memory at the import alignment, imported once per bake and
   released after its last fence): no output buffer, no staging, no host copy. Otherwise (``zero_copy=False``,
   no extension, a result too large to import) each slot has its own planes: on a device with host-cached
   device-local memory (lavapipe, integrated GPUs) host-visible and mapped once, elsewhere device-local with
   one ``vkCmdCopyBuffer`` per batch (three regions) to host-visible memory; the host copies each batch into
   the result with one numpy copy (the ``Bake``'s three arrays are views of one (3, F, V, 3) array).
4. Two batch slots (pose inputs, matrices, outputs or none, staging, command buffer, fence each): batch k is
   recorded and submitted, then batch k-1 is waited for (and copied out) while the GPU runs batch k, then batch
   k+1 is recorded; with zero copy the host faults in batch k+1's result pages meanwhile. With the pose on the
   GPU a batch costs the host a few numpy writes and the recording of a fixed number of commands
   (``GpuBaker.batch_host_cpu``: this thread's CPU seconds per batch).

``bake_numpy`` is the reference (float64, per frame through ``AnimationPlayer`` + ``Skeleton`` and the dense
``vkmorph.morph.reference``): the tests compare the GPU bake with it. ``bake_numpy_fast`` is the baseline a user
would write: the batched poses, sparse float32 deltas, the morph computed once per run of equal weights, numpy
skinning; ``measure_bake_throughput`` times the GPU bake against it (and the readback limit, ``readback_limits``:
the fastest of the copy path's readback and numpy writing a fresh result once, nothing computed).
"""

from __future__ import annotations

import math
import time as _time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from .errors import GpuError, UsageError

if TYPE_CHECKING:
    from .model import Model

__all__ = ["Bake", "GpuBaker", "bake_numpy", "bake_numpy_fast", "measure_bake_throughput", "readback_limit",
           "readback_limits"]

_ALIGN = 256                      # >= minStorageBufferOffsetAlignment on every device
_OFFSET_MAX = 0xFFFFFFFF          # a dynamic offset is a uint32_t: the planes' offsets must stay below 4 GiB
_BATCH_BYTES = 16 << 20           # output bytes per batch (three planes); two batches in flight
# a CPU device writing the result in place: batches of up to this much output, not split in two for overlap
# (there the "device" is the host's cores, so two batches in flight overlap nothing; each batch costs its pose
# pass, dispatches and fence: 64 frames of RobotExpressive in one batch took 0.84-0.99x the wall of two, 256
# frames in one 0.90-0.92x of four, bench/2026-12-02j-lavapipe-bake-batches.txt)
_IN_PLACE_CPU_BATCH_BYTES = 64 << 20
_SLOTS = 2                        # double buffering: record/submit batch k while batch k-1 is copied out
_ZERO_COPY_MIN_BYTES = 8 << 20    # the smallest result a bake writes in place by default (GpuBaker.uses_zero_copy)
_CPU_GROUP_FRAMES = 64            # frames per workgroup on a CPU device (_shape)


@dataclass
class Bake:
    """A baked clip: ``positions``/``normals`` are (frames, vertices, 3) float32 over every primitive instance
    concatenated in scene order; ``slices[name]`` is each primitive's vertex range, ``indices[name]`` its
    triangles (vertex numbers local to the primitive)."""

    times: np.ndarray
    positions: np.ndarray
    normals: np.ndarray
    space: str
    slices: dict[str, slice] = field(default_factory=dict)
    indices: dict[str, np.ndarray] = field(default_factory=dict)
    tangents: np.ndarray | None = None
    source: object = None        # vkmorph.export.ExportSource (set by Model.bake): nodes, materials, UVs, colours

    def primitive(self, name: str) -> tuple[np.ndarray, np.ndarray]:
        """(frames, V, 3) positions and normals of one primitive."""
        if name not in self.slices:
            raise UsageError(f"no primitive named {name!r}; the bake has {list(self.slices)}")
        s = self.slices[name]
        return self.positions[:, s], self.normals[:, s]

    def export(self, path):
        """.glb/.gltf: frame 0 as the mesh, every later frame as a morph target, and an animation that steps
        through them at ``times`` (any glTF viewer plays it), with the source's nodes, materials, textures, UVs
        and colours. .obj/.ply: one file per frame (``NAME_0000.obj`` ...; the list of paths), or the file
        itself for one frame. See `vkmorph.export`."""
        from .export import export

        return export(path, [(n, self.positions[:, s], self.normals[:, s], self.indices[n],
                              None if self.tangents is None else self.tangents[:, s])
                             for n, s in self.slices.items()], self.times, self.source)


def _align(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


def _granule(align: int) -> int:
    """What a zero-copy window's dynamic offset is a multiple of: minStorageBufferOffsetAlignment and 24 bytes,
    so that the float shift of a batch's first frame in the window (a multiple of 12 bytes when a frame has an
    even number of vertices) is a whole number of vertex pairs (6 floats), as bake_wide.comp's 64-bit stores
    need."""
    return math.lcm(align, 24)


# ---------------------------------------------------------------------- poses of a batch (CPU, vectorized)
def clip_times(clip, times: np.ndarray) -> np.ndarray:
    """The times a frame samples: clamped to the clip, not looped (as ``Model.pose``)."""
    return np.clip(np.asarray(times, np.float64), 0.0, clip.duration) if clip is not None else np.zeros(len(times))


def frame_weights(model: Model, clip, times: np.ndarray, weights) -> np.ndarray:
    """(F, len(pose.flat)) float64 morph weights per frame, as ``Model._reset`` + ``Model._apply`` set them: the
    file's default weights, the clip's weight channels at each time (float32, as the player writes them), then
    the overrides ({target name: w} on every node with that target, or one list for every morph node)."""
    from .anim.pose_batch import sample_many

    pose = model.runtime.pose
    base = np.zeros(len(pose.flat))
    for node in pose.morph_nodes:
        sl = pose.slice_of(node)
        dw = model.scene.nodes[node].default_weights
        if dw is not None and len(dw) == sl.stop - sl.start:
            base[sl] = dw
    W = np.repeat(base[None], len(times), 0)
    if clip is not None:
        t = clip_times(clip, times)
        for ch in clip.morph_channels:
            if pose.has_targets(ch.node):
                sl = pose.slice_of(ch.node)
                w = sample_many(ch.times, ch.values, t, ch.interpolation).astype(np.float32)
                n = min(sl.stop - sl.start, w.shape[1])
                W[:, sl.start:sl.start + n] = w[:, :n]
    if isinstance(weights, dict):
        for node in pose.morph_nodes:
            sl = pose.slice_of(node)
            for k, name in enumerate(model._node_targets(node)):
                if name in weights:
                    W[:, sl.start + k] = weights[name]
    elif weights is not None:
        for node in pose.morph_nodes:
            W[:, pose.slice_of(node)] = weights
    return W


def weight_runs(W: np.ndarray) -> list[tuple[int, int]]:
    """[start, stop) runs of consecutive frames with identical weights (one morph pass serves each run)."""
    if len(W) == 0:
        return []
    cut = np.flatnonzero((W[1:] != W[:-1]).any(axis=1)) + 1
    edges = [0, *cut.tolist(), len(W)]
    return list(zip(edges[:-1], edges[1:]))


class _Layout:
    """Which instances bake how: per instance its mode (copy / rigid / skinned), its first matrix in a frame's
    matrices and its vertex range in a frame; rest (never morphing) instances first, then the morphing ones.
    Skinned instances whose palettes are equal share one (the same joints and inverse binds, and in mesh space
    the same node: RobotExpressive's four skins are one palette, 58 matrices a frame instead of 187), so more
    frames fit a uniform window (``GpuBaker``). ``matrices_per_frame`` is padded so that a frame's matrices
    start at a multiple of the device's minUniformBufferOffsetAlignment (a window's dynamic offset)."""

    def __init__(self, model: Model, space: str, skinning: bool):
        from .gpu.interface import BAKE_COPY, BAKE_RIGID, BAKE_SKINNED

        self.model, self.space = model, space
        insts = model.instances
        self.skin = [i.prim.is_skinned and skinning for i in insts]
        self.slices, start = {}, 0
        for name, inst in zip(model.names, insts):
            self.slices[name] = slice(start, start + inst.prim.vertex_count)
            start += inst.prim.vertex_count
        self.total = start
        self.modes, self.matrix, self.owns, m = [], [], [], 0
        palettes: dict = {}                 # (joints, inverse binds[, node]) -> first matrix of that palette
        for k, inst in enumerate(insts):
            owns = True                     # whether instance k's matrices are its own (False: shared, written once)
            if self.skin[k]:
                self.modes.append(BAKE_SKINNED)
                s = model.scene.skins[inst.prim.skin]
                key = (tuple(int(j) for j in s.joints), np.asarray(s.inverse_bind_matrices, np.float64).tobytes(),
                       inst.node if space == "mesh" else None)
                owns = key not in palettes
                self.matrix.append(palettes.setdefault(key, m))
                m += len(s.joints) if owns else 0
            elif space == "world":
                self.modes.append(BAKE_RIGID)
                self.matrix.append(m)
                m += 1
            else:
                self.modes.append(BAKE_COPY)
                self.matrix.append(m)
            self.owns.append(owns)
        unit = max(1, int(model.ctx.info.limits.get("minUniformBufferOffsetAlignment", 256)) // 64)
        self.matrices_per_frame = -(-max(m, 1) // unit) * unit
        self.rest = [k for k, i in enumerate(insts) if not i.is_morphing]
        self.morphing = [k for k, i in enumerate(insts) if i.is_morphing]

    @property
    def needs_matrices(self) -> bool:
        """False when every instance is copied as stored (mesh space, nothing skinned): no pose at all."""
        from .gpu.interface import BAKE_COPY

        return any(mode != BAKE_COPY for mode in self.modes)

    def singular_risk(self, clip) -> str | None:
        """Why the pose pass cannot pose this layout for ``clip`` (None: it can). Mesh-space palettes are
        relative to the skinned mesh node: the pass inverts its world matrix in float32, where the host takes the
        pseudo-inverse of a singular one (a node scaled to 0 to hide it). A product of TRS matrices is singular
        only through a zero scale, so the pass poses every clip in which no scale on the way to such a node (its
        own and its ancestors': rest values, key values) is 0 or changes sign, and none is a cubic spline (which
        may overshoot through 0)."""
        if self.space != "mesh" or not any(self.skin):
            return None
        scene, chain = self.model.scene, set()
        for k, inst in enumerate(self.model.instances):
            n = inst.node if self.skin[k] else None
            while n is not None and n not in chain:
                chain.add(n)
                n = scene.nodes[n].parent
        why = "mesh-space palettes need the inverse of a skinned mesh node's world matrix, and node {!r} {}"
        for n in sorted(chain):
            if (np.asarray(scene.nodes[n].scale) == 0).any():
                return why.format(scene.nodes[n].name, "has a zero scale")
        for ch in clip.node_channels if clip is not None else ():
            if ch.path != "scale" or ch.node not in chain:
                continue
            v = np.asarray(ch.values, np.float64).reshape(-1, 3)
            name = scene.nodes[ch.node].name
            if ch.interpolation == "CUBICSPLINE":
                return why.format(name, f"has a cubic-spline scale in clip {clip.name!r}, which may pass through 0")
            if (v == 0).any() or (np.sign(v) != np.sign(v[:1])).any():
                return why.format(name, f"is scaled to 0 (or through it) in clip {clip.name!r}")
        return None

    def pose_entries(self, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The matrices of a frame as the pose pass's palette entries (``render.crowd_anim.ClipPosePass``):
        (node position ``pos[node]``, inverse bind, matrix, relative) per matrix (a joint of a skinned instance:
        its world matrix x inverse bind, in mesh space relative to the instance's node: relative = its position
        + 1; a rigid instance in world space: its node's world matrix, the identity as inverse bind), and the
        inverse binds, (E, 4, 4) float32 (the identity first, each skin's once)."""
        entries, ibms, first = [], [np.eye(4)], {}
        for k, inst in enumerate(self.model.instances):
            m = self.matrix[k]
            if not self.owns[k]:                 # a shared palette: its owner's entries write it
                continue
            if self.skin[k]:
                s = self.model.scene.skins[inst.prim.skin]
                if inst.prim.skin not in first:
                    first[inst.prim.skin] = len(ibms)
                    ibms.extend(np.asarray(s.inverse_bind_matrices, np.float64))
                rel = pos[inst.node] + 1 if self.space == "mesh" else 0      # mesh space: relative to its node
                entries += [(pos[j], first[inst.prim.skin] + i, m + i, rel) for i, j in enumerate(s.joints)]
            elif self.space == "world":
                entries.append((pos[inst.node], 0, m, 0))
        return np.array(entries, np.uint32).reshape(-1, 4), np.array(ibms, np.float32)

    def matrices(self, batch, times: np.ndarray, clip) -> np.ndarray:
        """(F, matrices_per_frame, 4, 4) float32, math convention (M @ v): palettes and world matrices."""
        F = len(times)
        world = batch.world_matrices(*batch.sample(clip, clip_times(clip, times)))
        out = np.zeros((F, self.matrices_per_frame, 4, 4), np.float32)
        for k, inst in enumerate(self.model.instances):
            m = self.matrix[k]
            if not self.owns[k]:
                continue
            if self.skin[k]:
                mesh_node = inst.node if self.space == "mesh" else None
                pal = batch.skin_matrices(world, inst.prim.skin, mesh_node)
                out[:, m:m + pal.shape[1]] = pal
            elif self.space == "world":
                out[:, m] = world[:, inst.node]
        return out


# ---------------------------------------------------------------------- the GPU baker
_PLANES = ("positions", "normals", "tangents")     # the kernel's three output bindings (dynamic storage buffers)


class _Slot:
    """One batch in flight: its matrices (host-visible, written before submit), its outputs, command buffer and
    fence. Outputs, one of three ways:

    * ``zero_copy`` (``_ZeroCopyResult``: the device imports host memory): none of its own; the kernel writes
      the batch's frames straight into the bake's result array, bound per bake (``point_at``) and placed per batch
      by the three planes' dynamic offsets (``_ZeroCopyResult.offsets``).
    * ``direct`` (a device with host-cached device-local memory: CPU and integrated devices such as lavapipe):
      the output planes are host-visible and mapped once, the kernel writes there and the host copies the batch
      out (``copy_into``), no ``vkCmdCopyBuffer``.
    * otherwise (a discrete GPU) the output is device-local and one ``vkCmdCopyBuffer`` per batch brings it to
      ``staging`` (host-visible), which the host copies out."""

    def __init__(self, ctx, pipelines: dict, B: int, layout: _Layout, sources: dict, items, direct: bool,
                 gpu_pose: bool, window: int, zero_copy: bool = False, wide: bool = False):
        if wide and window:
            raise GpuError("bake: the wide kernel (bake_wide.comp) reads a texel buffer, not a uniform window")
        self.ctx, self.direct, self.zero_copy = ctx, direct, zero_copy
        self.matrices = self.view = self.output = self.staging = self.cb = self.fence = None
        self.busy: tuple[int, int, int] | None = None      # (first frame, frames, serial) while in flight
        try:
            self._build(pipelines, B, layout, sources, items, direct, gpu_pose, window, zero_copy, wide)
        except BaseException:                  # what was made so far goes (no leak when a later step fails)
            self.destroy()
            raise

    def _build(self, pipelines, B, layout, sources, items, direct, gpu_pose, window, zero_copy, wide) -> None:
        from .gpu import memory as M
        from .gpu.interface import BAKE_UBO_MATRICES
        from .gpu.vk import call, vk

        ctx = self.ctx
        # a frame's vertices in the planes, the instances contiguous, as in the result: the kernel writes floats,
        # so nothing is padded
        self.frame_vertices = layout.total
        self.plane_bytes = 0 if zero_copy else _align(12 * B * self.frame_vertices)
        out_bytes = 3 * self.plane_bytes
        mat_bytes = max(64, B * layout.matrices_per_frame * 64)
        # window (frames of matrices per uniform window, GpuBaker): the kernel reads them as a dynamic uniform
        # buffer of BAKE_UBO_MATRICES mat4 from a frame's first matrix on, so the buffer extends that far past the
        # last frame's (never read there)
        usage = M.STORAGE | (M.UNIFORM_TEXEL if wide else 0)
        if window:                                     # (never wide: __init__)
            usage, mat_bytes = M.STORAGE | M.UNIFORM, mat_bytes + 64 * BAKE_UBO_MATRICES
        # the pose pass writes the matrices on the GPU (device-local); the CPU pose path writes them from the host
        self.matrices = (M.device_buffer(ctx, None, usage, size=mat_bytes, name="bake matrices (pose pass)")
                         if gpu_pose else M.host_buffer(ctx, mat_bytes, usage, name="bake matrices"))
        # wide (bake_wide.comp): the kernel reads them through a uniform texel buffer, 4 RGBA32F texels a matrix
        # (GpuBaker.batch_size keeps 4 B matrices_per_frame within maxTexelBufferElements)
        if wide:
            self.view = M.TexelView(ctx, self.matrices, max(4, 4 * B * layout.matrices_per_frame),
                                    name="bake matrices (texels)")
        if zero_copy:
            pass
        elif direct:
            self.output = M.host_buffer(ctx, out_bytes, M.STORAGE, name="bake output (host-visible)")
        else:
            self.output = M.device_buffer(ctx, None, M.STORAGE | M.TRANSFER_SRC, size=out_bytes,
                                          name="bake output")
            self.staging = M.host_buffer(ctx, out_bytes, M.TRANSFER_DST, name="bake readback")
        self._inputs = {"items": items, "matrices": self.view if wide else
                        (self.matrices, 0, 64 * BAKE_UBO_MATRICES) if window else self.matrices}
        self._pipelines, self._sources = pipelines, sources
        # a descriptor set per (pipeline, source): the pipelines' mode (None: the one pipeline of every mode);
        # made here with the slot's own planes, or by the first bake's point_at (zero_copy)
        self.sets: dict = {}
        if not zero_copy:
            self._point({p: (self.output, 0, self.plane_bytes) for p in _PLANES})
        self.cb = ctx.allocate_command_buffer()
        self.fence = call("vkCreateFence", ctx.device, vk.VkFenceCreateInfo(), None)

    def _point(self, planes: dict) -> None:
        for mode, pipe in self._pipelines.items():
            for key, buf in self._sources.items():
                if (mode, key) in self.sets:
                    pipe.update_set(self.sets[(mode, key)], planes)
                else:
                    self.sets[(mode, key)] = pipe.make_set({"source": buf, **self._inputs, **planes})

    def point_at(self, result: _ZeroCopyResult) -> None:
        """This bake's result (zero_copy): the three planes' bindings at its imported buffer, a window of
        ``result.window_bytes`` each (placed per batch by dynamic offsets). The slot must be idle."""
        self._point({p: (result.imported, 0, result.window_bytes) for p in _PLANES})

    def out_offsets(self) -> tuple[list[int], int]:
        """The planes' dynamic offsets and the kernel's float shift for a batch in the slot's own planes."""
        return [k * self.plane_bytes for k in range(3)], 0

    def planes(self, n: int, V: int) -> np.ndarray:
        """(3, n, V, 3) float32 view of the mapped planes of a batch of n frames (positions, normals, tangents):
        the host's one copy per batch reads this (a strided view, the planes are ``plane_bytes`` apart)."""
        mapped = (self.output if self.direct else self.staging).mapped
        return np.lib.stride_tricks.as_strided(mapped.view(np.float32), (3, n, V, 3),
                                               (self.plane_bytes, 12 * self.frame_vertices, 12, 4), writeable=False)

    def copy_into(self, planes: np.ndarray, first: int, n: int, copier: _HostCopier | None = None) -> None:
        """The batch's n frames into ``planes[:, first:first + n]`` ((3, F, V, 3), the result): one copy, or split
        over ``copier``'s threads (nothing with zero_copy, where the kernel wrote them there)."""
        if self.zero_copy:
            return
        dst, src = planes[:, first:first + n], self.planes(n, planes.shape[2])
        if copier is None:
            dst[...] = src
        else:
            copier.copy(dst, src)

    def record_readback(self, cb, n: int, V: int) -> None:
        """After the batch's writes: their bytes to host-visible memory (the copy on a discrete GPU), visible to
        the host once the fence signals."""
        from .gpu import barriers
        from .gpu.vk import vk

        if self.direct or self.zero_copy:
            barriers.record(cb, barriers.COMPUTE_AND_TRANSFER_TO_HOST)
            return
        barriers.record(cb, barriers.COMPUTE_TO_TRANSFER)
        vk.vkCmdCopyBuffer(cb, self.output.handle, self.staging.handle, 3, [
            vk.VkBufferCopy(srcOffset=p * self.plane_bytes, dstOffset=p * self.plane_bytes,
                            size=12 * n * self.frame_vertices) for p in range(3)])
        barriers.record(cb, barriers.TRANSFER_TO_HOST)

    def destroy(self) -> None:
        from .gpu.vk import vk

        if self.fence is not None:
            vk.vkDestroyFence(self.ctx.device, self.fence, None)
            self.fence = None
        if self.cb is not None:
            self.ctx.free_command_buffer(self.cb)
            self.cb = None
        for b in (self.staging, self.output, self.view, self.matrices):
            if b is not None:
                b.destroy()


class _HostCopier:
    """The host's copy of each batch into the result on the copy path, split by frames over ``threads`` threads
    (numpy releases the GIL while it copies). On a discrete GPU that copy, with the first touch of the result's
    fresh pages, is most of the copy path's readback (the H200's host: 26.7 ms for RobotExpressive's 256 frames,
    66.5 MB, against 17.7 ms for numpy writing them once on one thread and 7.2 ms on all 16 CPUs,
    ``bench/2026-12-02g-h200-bake.txt``). ``close()`` joins the threads (the bake's ``finally``)."""

    def __init__(self, threads: int):
        from concurrent.futures import ThreadPoolExecutor

        self.threads = threads
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="vkmorph bake copy")

    def copy(self, dst: np.ndarray, src: np.ndarray) -> None:
        """``dst[...] = src`` for (3, n, V, 3) arrays, a slice of frames of one plane per task."""
        n = dst.shape[1]
        per = max(1, -(-3 * n // self.threads))           # frames per task, so that there are ~threads tasks
        tasks = [self.pool.submit(np.copyto, dst[p, a:a + per], src[p, a:a + per])
                 for p in range(3) for a in range(0, n, per)]
        for t in tasks:
            t.result()                                    # in order; a failed copy raises here

    def close(self) -> None:
        self.pool.shutdown(wait=True)


_HUGE_PAGE = 2 << 20     # a transparent huge page (x86-64, arm64 with 4 KiB pages)


def _result_memory(nbytes: int, import_alignment: int) -> np.ndarray:
    """Host memory for a zero-copy result (``memory.aligned_host_bytes``: importable at the device's alignment)
    that, from one huge page on, starts at a multiple of 2 MiB. numpy asks Linux for transparent huge pages on
    large arrays (MADV_HUGEPAGE), which map only whole aligned 2 MiB ranges: at 4 KiB alignment the partial head
    and tail of the result faulted in as 4 KiB pages (RobotExpressive, 256 frames, 66 MB: 635 faults against 124
    aligned, 3.4 against 2.8 ms to fault it in, ``bench/2026-12-02-lavapipe-bake-host.txt``)."""
    from .gpu import memory as M

    huge = nbytes >= _HUGE_PAGE
    return M.aligned_host_bytes(nbytes, max(import_alignment, _HUGE_PAGE) if huge else import_alignment)


class _ZeroCopyResult:
    """A bake's (3, F, V, 3) float32 result in host memory that the device imports (VK_EXT_external_memory_host,
    ``memory.HostImport``), so the kernel writes every batch's frames into it in their final layout: no output
    buffer, no staging, no host copy. Allocated at the device's minImportedHostPointerAlignment
    (``memory.aligned_host_bytes``); the planes (positions, normals, tangents, each (F, V, 3) C-contiguous, the
    ``Bake``'s arrays) are ``plane_bytes`` apart, a multiple of minStorageBufferOffsetAlignment, so one float
    shift serves all three windows of a batch. The kernel sees a window of ``window_bytes`` per plane (a batch of
    frames and the alignment's slack, within maxStorageBufferRange), placed per batch by dynamic offsets; the
    allocation extends one window past the last plane so that every window lies inside the buffer (never
    written there). ``release()`` frees the import (after the last fence: the bake waits for it first); the
    arrays stay the ``Bake``'s."""

    def __init__(self, ctx, F: int, V: int, B: int):
        from .gpu import memory as M

        self.V = V
        self.align = int(ctx.info.limits.get("minStorageBufferOffsetAlignment", 16))
        self.plane_bytes, self.window_bytes, total = self.sizes(self.align, F, V, B)
        self.bytes = _result_memory(total, ctx.host_import_alignment)
        self.planes = np.lib.stride_tricks.as_strided(self.bytes.view(np.float32), (3, F, V, 3),
                                                      (self.plane_bytes, 12 * V, 12, 4))
        self.imported = M.HostImport(ctx, self.bytes, M.STORAGE, name="bake result (imported host memory)")

    @staticmethod
    def sizes(align: int, F: int, V: int, B: int) -> tuple[int, int, int]:
        """(plane stride, window bytes, allocation bytes before rounding to the import alignment)."""
        plane = -(-12 * F * V // align) * align
        window = 12 * B * V + _granule(align)
        return plane, window, 3 * plane + window

    def offsets(self, first: int) -> tuple[list[int], int]:
        """The three planes' dynamic offsets for a batch from frame ``first`` on (aligned down), and the float
        shift of that frame in each window."""
        at = 12 * first * self.V
        base = at - at % _granule(self.align)
        return [base + k * self.plane_bytes for k in range(3)], (at - base) // 4

    def touch(self, first: int, n: int) -> None:
        """Fault in the pages of frames [first, first + n) of the three planes from the host (one byte written
        per page, inside that range only: no byte another batch's kernel writes), before the batch that writes
        them is submitted (its submission orders these host writes before the kernel's). The first touch of
        fresh pages is the zero-copy bake's largest cost after the kernel on lavapipe (a 256-frame bake into
        already-faulted memory took 66-68 against 75-78 ms, ``bench/2026-12-02-lavapipe-bake-zerocopy.txt``); the
        host thread takes it for batch k + 1 while the device runs batch k, instead of waiting on the fence
        (there 75-78 against 85-89 ms wall without it). On the same thread: left to the kernel's stores (the
        device's threads) or to a helper thread, the faults were erratic on this project's VM host (12 bakes in a
        row: 29-106 ms against 29-32 ms here, ``bench/2026-12-02-lavapipe-bake-host.txt``)."""
        for k in range(3):
            start = k * self.plane_bytes + 12 * first * self.V
            end = start + 12 * n * self.V
            page = -(-start // 4096) * 4096
            self.bytes[start:start + 1] = 0
            self.bytes[page:end:4096] = 0

    def release(self) -> None:
        if self.imported is not None:
            self.imported.destroy()
            self.imported = None


_WORDS = {"position": 0, "normal": 3, "tangent": 6, "joints": 12, "weights": 16}   # where bake.comp reads them


def _check_vertex_layout(dtype: np.dtype, word: int) -> None:
    """bake.comp reads whole uvec4 at fixed word offsets (STATIC_VERTEX / SKINNED_VERTEX); say so if not."""
    from .asset.model import attribute_offsets_words
    from .errors import GpuError

    o = attribute_offsets_words(dtype)
    wrong = [n for n, w in _WORDS.items() if n in o and o[n] != w]
    if wrong or dtype.itemsize % 16 or word % 4:
        raise GpuError(f"bake: vertex layout {dtype} (at word {word}) is not the one glsl/bake.comp reads")


def _pose_group(ctx, B: int) -> int | None:
    """Frames per workgroup of the bake's pose pass (``ClipPosePass(local_size=)``). A CPU device runs a workgroup
    on one of its threads, so a batch's frames are split into one workgroup per host CPU (a multiple of 8 frames,
    lavapipe's SIMD width on AVX2; at most the pass's 64): lavapipe posed a batch of 64 frames on one of its two
    threads in one workgroup of 64; in two of 32 on both (bench/bake.py's pose pass alone: wall about half the
    CPU where a core is free). Workgroups of 16, 8 or 4 frames were not faster there (4: twice the CPU). A GPU
    keeps the pass's 64 (None)."""
    import os

    if ctx.info.device_type != "cpu":
        return None
    per_cpu = -(-B // max(1, os.cpu_count() or 1))
    return int(min(64, max(8, -(-per_cpu // 8) * 8)))


class _GpuPose:
    """The bake's pose pass: a bake is a crowd of frames, so ``glsl/crowd_anim.comp`` (the crowd's clip
    sampling, ``render.crowd_anim.ClipPosePass``) poses one frame per thread: every node channel of the clip at
    the frame's time, world matrices of every node parents first, then per matrix of the layout
    (``_Layout.pose_entries``) a joint's world x inverse bind or a rigid node's world matrix, written into the
    slot's ``matrices`` (frame-major, ``matrices_per_frame`` column-major mat4 each): the buffer bake.comp reads,
    and any other kernel of the same layout could. Per frame the host writes one uvec4 (clip, clamped time,
    speed 0, duration 0: no wrap), per batch one write of the batch's rows. The clips are the scene's animations
    plus an empty one, the rest pose (no clip). In mesh space a skinned instance's palette is relative to its
    node (the pass inverts that node's world matrix; ``_Layout.singular_risk`` keeps singular ones on the host).
    Another kernel of the same layout (one matrix block per frame) can read the same buffer."""

    def __init__(self, model: Model, layout: _Layout, B: int, matrices: list):
        from .asset.model import AnimationClip
        from .gpu import memory as M
        from .gpu.ownership import Owner
        from .render.crowd_anim import ClipPosePass, ClipTables

        ctx = model.ctx
        self.clips = list(model.scene.animations)
        tables = ClipTables(model.scene, [*self.clips, AnimationClip("rest pose", 0.0)])   # UsageError: too many nodes
        entries, ibms = layout.pose_entries(tables.pos)
        self._owner = Owner(ctx, "bake pose")
        try:
            o = self._owner
            group = _pose_group(ctx, B)
            self.pose = o.own(ClipPosePass(ctx, tables, entries, ibms, layout.matrices_per_frame,
                                           max_sets=len(matrices), name="bake pose", local_size=group))
            roots = np.repeat(np.eye(4, dtype=np.float32)[None], B, 0)           # the scene's roots at the origin
            self.roots = o.own(M.device_buffer(ctx, roots, M.STORAGE, name="bake pose roots"))
            self.params = [o.own(M.host_buffer(ctx, 16 * B, M.STORAGE, name=f"bake pose frames slot {k}"))
                           for k in range(len(matrices))]
            self.views = [b.view(np.uint32, 4 * B).reshape(B, 4) for b in self.params]
            for v in self.views:
                v[:] = 0                                   # speed 0 and duration 0: a frame's time is its phase
            self.sets = [self.pose.make_set(p, self.roots, mat) for p, mat in zip(self.params, matrices)]
        except BaseException:
            self._owner.destroy()
            raise

    def clip_index(self, clip) -> int | None:
        """The clip's row in the pass's tables (the rest pose for None); None if it is not a scene animation."""
        if clip is None:
            return len(self.clips)
        return next((i for i, c in enumerate(self.clips) if c is clip), None)

    def write(self, slot: int, clip_index: int, times: np.ndarray) -> None:
        """The batch's frames (clamped times, ``clip_times``) for slot ``slot``: its one host write."""
        v = self.views[slot]
        v[:len(times), 0] = clip_index
        v[:len(times), 1] = np.asarray(times, np.float32).view(np.uint32)

    def record(self, cb, slot: int, n: int) -> None:
        """Pose frames [0, n) of slot ``slot``, then ``BAKE_POSE_TO_KERNEL`` for the kernel that reads them."""
        from .gpu import barriers

        self.pose.record(cb, self.sets[slot], time=0.0, first=0, count=n)
        barriers.record(cb, barriers.BAKE_POSE_TO_KERNEL)

    def destroy(self) -> None:
        self._owner.destroy()


class BakeResources:
    """What a model keeps between bakes of one configuration (space, skinning, batch size): the pipeline, the
    rest vertices and the item table (device-local, uploaded once) and two batch slots. ``destroy()`` frees it
    (``Model.close`` does)."""

    def __init__(self, model: Model, layout: _Layout, B: int, direct: bool, gpu_pose: bool = False,
                 window: int = 0, split: bool = False, zero_copy: bool = False, wide: bool = False):
        from .gpu import memory as M
        from .gpu.interface import BAKE, BAKE_ITEM, BAKE_MODE_ID, BAKE_SKIP_ZERO_ID, BAKE_UBO, BAKE_WIDE
        from .gpu.pipeline import ComputePipeline

        ctx = model.ctx
        self.key = (layout.space, tuple(layout.skin), B, direct, gpu_pose, window, split, zero_copy, wide)
        # zero_copy (_ZeroCopyResult): the slots have no outputs of their own, each bake binds its result array
        self.zero_copy = zero_copy
        self.window = window          # frames per uniform window of matrices (bake_ubo.comp); 0: bake.comp, or
        #                               bake_wide.comp where wide (the batch's matrices in a texel buffer)
        # split (GpuBaker.split_modes): a pipeline per mode (the kernel specialized to it), the items of a source
        # sorted by mode and dispatched per mode; else one pipeline for every mode (each item's own)
        self.split = split
        self.B, self.layout = B, layout
        self._made: list = []
        try:
            insts = model.instances
            order = layout.rest + layout.morphing
            if split:                   # by source (in order of first use), then mode: a run per (source, mode)
                src_of = [("rest" if not insts[k].is_morphing else id(insts[k].vertex_buffer)) for k in order]
                first_use = {key: i for i, key in reversed(list(enumerate(src_of)))}
                order = [k for _, k in sorted(zip(src_of, order),
                                              key=lambda e: (first_use[e[0]], layout.modes[e[1]]))]
            items = np.zeros(len(order), BAKE_ITEM)
            rest_bytes, placed = bytearray(), {}
            sources: dict = {}
            # (source key, first item, items, max V, mode): items of one source and, when split, one mode
            self.groups: list[tuple[object, int, int, int, int | None]] = []
            for j, k in enumerate(order):
                inst = insts[k]
                dtype = inst.prim.vertices.dtype
                if inst.is_morphing:
                    key, word = id(inst.vertex_buffer), inst.vertex_offset // 4
                    sources.setdefault(key, inst.vertex_buffer)
                else:
                    key = "rest"
                    if id(inst.prim) not in placed:            # instances of one mesh share its rest vertices
                        placed[id(inst.prim)] = len(rest_bytes) // 4
                        rest_bytes += inst.prim.vertices.tobytes()
                        rest_bytes += bytes(-len(rest_bytes) % 16)
                    word = placed[id(inst.prim)]
                _check_vertex_layout(dtype, word)
                out = layout.slices[model.names[k]].start
                items[j] = (word, dtype.itemsize // 4, inst.prim.vertex_count, out, layout.modes[k],
                            layout.matrix[k], 0, 0)
                mode = layout.modes[k] if split else None
                if self.groups and self.groups[-1][0] == key and self.groups[-1][4] == mode:
                    g = self.groups[-1]
                    self.groups[-1] = (key, g[1], g[2] + 1, max(g[3], inst.prim.vertex_count), mode)
                else:
                    self.groups.append((key, j, 1, inst.prim.vertex_count, mode))
            self.rest_groups = [g for g in self.groups if g[0] == "rest"]
            self.morph_groups = [g for g in self.groups if g[0] != "rest"]
            if rest_bytes:
                sources["rest"] = self._own(M.device_buffer(ctx, np.frombuffer(bytes(rest_bytes), np.uint8),
                                                            M.STORAGE, name="bake rest vertices"))
            self.items = self._own(M.device_buffer(ctx, items, M.STORAGE, name="bake items"))
            # wide (GpuBaker.wide_stores: a pipeline per mode, no uniform window): bake_wide.comp, writing whole
            # quads in 64-bit words, the batch's matrices in a texel buffer
            iface = BAKE_WIDE if wide else BAKE_UBO if window else BAKE
            sets = _SLOTS * max(1, len(sources))
            modes = sorted({g[4] for g in self.groups}) if split else [None]
            # split, a kernel per mode, is for CPU devices, which run both sides of a branch: there a skinned
            # vertex reads all four joints (BAKE_SKIP_ZERO off) rather than branching on their weights
            self.pipelines = {mode: self._own(ComputePipeline(
                ctx, iface, max_sets=sets, specialization=None if mode is None else
                {BAKE_MODE_ID: mode, BAKE_SKIP_ZERO_ID: 0}))
                for mode in modes}
            self.pipeline = next(iter(self.pipelines.values()))
            self.direct = direct
            self.slots = [self._own(_Slot(ctx, self.pipelines, B, layout, sources, self.items, direct, gpu_pose,
                                          window, zero_copy, wide)) for _ in range(_SLOTS)]
            # the pose pass writing the slots' matrices (None: the host writes them, _Layout.matrices)
            self.pose = self._own(_GpuPose(model, layout, B, [s.matrices for s in self.slots])) if gpu_pose else None
        except BaseException:
            self.destroy()
            raise

    def _own(self, obj):
        self._made.append(obj)
        return obj

    def destroy(self) -> None:
        for obj in reversed(self._made):
            obj.destroy()
        self._made.clear()


def _shape(cpu: bool, vertex_groups: int, frames: int) -> tuple[int, int]:
    """(workgroups along x, frames per workgroup) of one bake dispatch. A GPU gets a workgroup per 64 quads of 4
    vertices and frame. On a CPU device a workgroup has a fixed cost of its own (lavapipe: ~40 us on this
    project's 2-core host, a kernel that returns at once took 0.89 s over 21,504 workgroups), so there one
    workgroup loops over an item's vertices and up to 64 frames (the two worker threads still get several
    workgroups each)."""
    if cpu:
        return 1, min(frames, _CPU_GROUP_FRAMES)
    return vertex_groups, 1


def _progress(total: int, enabled: bool | None):
    """A tqdm bar on a terminal (``enabled=None``: only when stderr is a TTY and the job is long)."""
    if enabled is False or (enabled is None and total < 64):
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="frame", desc="bake", disable=None if enabled is None else not enabled,
                leave=False)


class GpuBaker:
    """Bakes ``times`` of ``clip`` for a model in batches of B frames, two batches in flight (module docstring)."""

    def __init__(self, model: Model, space: str, skinning: bool = True, *, direct: bool | None = None,
                 pose: str | None = None, window: int | None = None, split_modes: bool | None = None,
                 zero_copy: bool | None = None, wide_stores: bool | None = None, copy_threads: int | None = None):
        # zero_copy: the kernel writes the bake's result array itself (host memory the device imports,
        # _ZeroCopyResult: no output buffer, no staging, no host copy); None: wherever the context has
        # VK_EXT_external_memory_host enabled and the bake fits (``zero_copy_refusal``); False: the slots' own
        # outputs and a host copy per batch (below); True: zero copy or a UsageError saying why not.
        # direct (without zero copy): the kernel writes host-visible memory (no device copy); None: where the
        # device has host-cached device-local memory (gpu.memory.host_cached_device_memory); False forces the
        # device's copy to staging.
        # pose: "gpu" (the pose pass, _GpuPose), "cpu" (PoseBatch on the host, per batch), None: the GPU wherever
        # it can pose the layout (``pose_refusal`` says why not where it cannot) for more than one frame (one
        # frame, Model.pose, is cheaper on the host than building the pass and its pipeline)
        # window: at most this many frames' matrices per uniform window (bake_ubo.comp, ``uniform_window``);
        # None: as many as fit, or the wide kernel's texel buffer where it runs; 0: the storage-buffer kernel
        # (bake.comp); a number picks the uniform-window kernel (so not the wide one)
        # split_modes: a kernel pipeline per mode (skinned, rigid, copy: the kernel specialized, BAKE_MODE), the
        # items dispatched per mode; False: one pipeline, each item's mode read at run time; None: split on CPU
        # devices (lavapipe runs every branch of a kernel, masked, so a rigid item paid for the skinned code:
        # bench/2026-12-02-lavapipe-bake-kernel.txt), one pipeline on GPUs (as measured there before)
        # wide_stores: the CPU devices' kernel (bake_wide.comp; ``wide_refusal`` says where it cannot): whole quads
        # written as 64-bit words, the batch's matrices read through a uniform texel buffer in one dispatch per
        # mode; None: wherever it can (the kernel per mode is for CPU devices, where it halves the stores' cost);
        # True: wide or a UsageError saying why not; False: float stores, matrices as ``window`` says
        # copy_threads: threads of the host's copy of each batch on the copy path (``host_copy_threads``); None:
        # half the host's CPUs, at most 8, for results of 8 MiB or more
        from .anim.pose_batch import parents_first
        from .gpu.interface import CROWD_ANIM_MAX_NODES

        if pose not in (None, "gpu", "cpu"):
            raise UsageError(f"bake: pose must be 'gpu', 'cpu' or None, got {pose!r}")
        if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 0):
            raise UsageError(f"bake: window must be None or an int >= 0 (frames per uniform window), got {window!r}")
        if not (split_modes is None or split_modes is True or split_modes is False):     # not 0 / 1 / 0.0
            raise UsageError(f"bake: split_modes must be None, True or False, got {split_modes!r}")
        if not (zero_copy is None or zero_copy is True or zero_copy is False):
            raise UsageError(f"bake: zero_copy must be None, True or False, got {zero_copy!r}")
        if not (wide_stores is None or wide_stores is True or wide_stores is False):
            raise UsageError(f"bake: wide_stores must be None, True or False, got {wide_stores!r}")
        if copy_threads is not None and (isinstance(copy_threads, bool) or not isinstance(copy_threads, int)
                                         or copy_threads < 1):
            raise UsageError(f"bake: copy_threads must be None or an int >= 1, got {copy_threads!r}")
        self.copy_threads = copy_threads
        self._copier: _HostCopier | None = None
        self.m, self.space, self.direct, self.pose, self.zero_copy = model, space, direct, pose, zero_copy
        self.split_modes = model.ctx.info.device_type == "cpu" if split_modes is None else split_modes
        self.layout = _Layout(model, space, skinning)
        self.wide_refusal = self._wide_refusal(window)
        if wide_stores is True and self.wide_refusal:
            raise UsageError(f"bake: wide_stores=True but {self.wide_refusal}")
        self.wide_stores = wide_stores is not False and self.wide_refusal is None
        # the wide kernel reads the batch's matrices through a texel buffer: no uniform window
        self.window = 0 if self.wide_stores else self.uniform_window(window)
        nodes = len(parents_first(model.scene))
        self._too_many = (f"the pose pass handles up to {CROWD_ANIM_MAX_NODES} nodes, the scene has {nodes}"
                          if nodes > CROWD_ANIM_MAX_NODES else None)
        self._decide(None, 2)

    def _decide(self, clip, frames: int) -> None:
        """``pose_refusal`` (why the pose pass cannot pose this layout and clip, or None) and ``gpu_pose``
        (whether it does: not with pose="cpu", nor for one frame unless pose="gpu", nor where no matrices are
        needed at all: mesh space, nothing skinned)."""
        self.pose_refusal = self._too_many or self.layout.singular_risk(clip)
        if self.pose == "gpu" and self.pose_refusal:
            raise UsageError(f"bake: the pose cannot be computed on the GPU: {self.pose_refusal} (use pose='cpu')")
        wanted = self.pose == "gpu" or (self.pose is None and frames > 1)
        self.gpu_pose = self.layout.needs_matrices and wanted and self.pose_refusal is None

    def _wide_refusal(self, window: int | None) -> str | None:
        """Why the wide kernel (bake_wide.comp: 64-bit stores, matrices in a texel buffer) cannot bake here (None:
        it can). Its pairs of vertices start at even vertices of a frame, so a frame must hold an even number of
        vertices (the layout has no padding: the Bake's arrays); it is a kernel per mode (``split_modes``); it
        reads the matrices through a texel buffer, so ``window`` (which picks the uniform-window or the
        storage-buffer kernel) must be None and a frame's matrices must fit maxTexelBufferElements; and the device
        must have shaderInt64 and scalarBlockLayout enabled (``Context.wide_stores``: Context.create enables
        them where offered; not on a borrowed device)."""
        if not self.m.ctx.wide_stores:
            return "the device has no shaderInt64 + scalarBlockLayout enabled (Context.wide_stores)"
        if not self.split_modes:
            return "it is a variant of the kernel per mode (split_modes=True)"
        if window is not None:
            return (f"window={window} picks the {'uniform-window' if window else 'storage-buffer'} kernel (the wide "
                    "one reads the matrices through a texel buffer)")
        if self.layout.total % 2:
            return f"a frame has an odd number of vertices ({self.layout.total}): pairs would straddle frames"
        most = int(self.m.ctx.info.limits.get("maxTexelBufferElements", 65536))
        if 4 * self.layout.matrices_per_frame > most:
            return (f"a frame's {self.layout.matrices_per_frame} matrices are over maxTexelBufferElements ({most} "
                    "texels, 4 a matrix)")
        return None

    def uniform_window(self, most: int | None) -> int:
        """Frames of matrices the kernel reads per uniform window (bake_ubo.comp: a dynamic uniform buffer of
        ``BAKE_UBO_MATRICES`` mat4, 64 KiB, one dispatch per window of frames at its dynamic offset), at most
        ``most`` (None: no cap). 0 selects the storage-buffer kernel (bake.comp, the whole batch's matrices
        bound): where one frame's matrices exceed the window (> 1024 matrices a frame: palettes of over a
        thousand joints), where the device's maxUniformBufferRange is below 64 KiB, where nothing reads
        matrices (mesh space, nothing skinned), or with ``most=0``."""
        from .gpu.interface import BAKE_UBO_MATRICES

        lay = self.layout
        if not lay.needs_matrices or int(self.m.ctx.info.limits.get("maxUniformBufferRange", 0)) < \
                64 * BAKE_UBO_MATRICES:
            return 0
        fits = BAKE_UBO_MATRICES // lay.matrices_per_frame
        return fits if most is None else min(fits, most)

    def batch_size(self, frames: int, batch_frames: int | None, *, in_place_cpu: bool = False) -> int:
        """Frames per batch: ``batch_frames`` or about ``_BATCH_BYTES`` of output, and never more than one plane
        binding can hold (a batch's frames of a plane, and the zero-copy window's alignment slack, within
        maxStorageBufferRange: the copy path binds each slot plane whole), nor more than a slot's three planes can
        hold in one allocation with their dynamic offsets (uint32) below 4 GiB (the H200's maxStorageBufferRange is
        4 GiB: a plane of 3 GiB put the third plane's offset past 2^32), nor, with the wide kernel, more frames'
        matrices than one texel view holds (maxTexelBufferElements). ``in_place_cpu``: a zero-copy bake on a CPU
        device, whose batches are larger and not split in two (``_IN_PLACE_CPU_BATCH_BYTES``)."""
        per_frame = max(1, 36 * self.layout.total)
        budget, split = (_IN_PLACE_CPU_BATCH_BYTES, 1) if in_place_cpu else (_BATCH_BYTES, _SLOTS)
        B = batch_frames or max(1, min(1024, budget // per_frame, math.ceil(frames / split)))
        limits = self.m.ctx.info.limits
        lim = int(limits.get("maxStorageBufferRange", 0))
        if lim:
            B = min(int(B), (lim - _ALIGN) // max(1, 12 * self.layout.total))
        # the slot's planes at 0, plane, 2 x plane (_Slot: each _align(12 B V) bytes) in one buffer
        most = min(_OFFSET_MAX, int(limits.get("maxMemoryAllocationSize", 0) or _OFFSET_MAX))
        B = min(int(B), (most - 3 * _ALIGN) // max(1, per_frame))
        if self.wide_stores:                         # the batch's matrices in one texel view (_wide_refusal)
            # (at most 2^31 - 1 texels: texelFetch takes an int index)
            most = min(0x7FFFFFFF, int(self.m.ctx.info.limits.get("maxTexelBufferElements", 65536)))
            B = min(int(B), most // max(1, 4 * self.layout.matrices_per_frame))
        return max(1, min(int(B), frames))

    def zero_copy_refusal(self, frames: int, B: int) -> str | None:
        """Why a bake of ``frames`` frames in batches of ``B`` cannot write its result array directly (None: it
        can): the context has no VK_EXT_external_memory_host enabled (the device lacks it, or a borrowed device
        was created without it: ``Context.from_external(device_extensions=)``); a batch's window of a plane is
        over maxStorageBufferRange (128 MiB on lavapipe; ``batch_size`` keeps batches within it, so only where
        one frame is larger); the whole result is over maxMemoryAllocationSize (2 GiB on lavapipe: ~8,000 frames
        of RobotExpressive); or its planes lie so far apart that a batch's dynamic offsets (uint32) would pass
        4 GiB. Such bakes take the slots' outputs and a host copy per batch."""
        ctx = self.m.ctx
        if not ctx.host_import_alignment:
            return "the context has no VK_EXT_external_memory_host enabled (host memory cannot be imported)"
        lim = ctx.info.limits
        _, window, total = _ZeroCopyResult.sizes(int(lim.get("minStorageBufferOffsetAlignment", 16)), frames,
                                                 self.layout.total, B)
        if window > int(lim.get("maxStorageBufferRange", 0)):
            return f"a batch's plane window ({window} B) is over maxStorageBufferRange ({lim['maxStorageBufferRange']})"
        most = int(lim.get("maxMemoryAllocationSize", 0) or 1 << 31)
        if total + ctx.host_import_alignment > most:
            return f"the result ({total} B) is over maxMemoryAllocationSize ({most} B)"
        if total - window > _OFFSET_MAX:               # the last plane's last batch offset, a uint32_t
            return f"the result ({total} B) puts its planes' dynamic offsets past 4 GiB (a 32-bit offset)"
        return None

    def uses_zero_copy(self, frames: int, B: int) -> bool:
        """Whether a bake of ``frames`` in batches of ``B`` writes its result directly (``zero_copy``). By default
        only a result of at least ``_ZERO_COPY_MIN_BYTES``: the import and the descriptor updates cost a bake
        ~1.5 ms (lavapipe: one frame of RobotExpressive, ``Model.pose``, 7.1 against 5.7 ms,
        ``bench/2026-12-02-lavapipe-bake-zerocopy.txt``), the copy they save ~0.25 ms a MiB; and by default only
        on a device with host-cached device-local memory (lavapipe, integrated GPUs): on a discrete GPU the kernel
        would write host memory across the bus in scattered 4-byte stores, and the copy path (device-local
        planes, one vkCmdCopyBuffer and a host copy per batch) was 1.8x faster on the H200 (0.031 against
        0.054-0.056 s for 256 frames, ``bench/2026-12-02f-h200-bake.txt``); ``zero_copy=True`` still forces it."""
        why = self.zero_copy_refusal(frames, B) if self.zero_copy is not False else None
        if self.zero_copy is True and why:
            raise UsageError(f"bake: zero_copy=True but {why}")
        if why is not None or self.zero_copy is False:
            return False
        if self.zero_copy is True:
            return True
        from .gpu.memory import host_cached_device_memory

        big = 36 * frames * self.layout.total >= _ZERO_COPY_MIN_BYTES
        return big and host_cached_device_memory(self.m.ctx)

    def host_copy_threads(self, frames: int) -> int:
        """Threads of the host's copy of each batch into the result on the copy path (``_HostCopier``; 1: one
        numpy copy): ``copy_threads``, else half the host's CPUs (the others run the Python thread and the
        driver; on a CPU device the device itself), at most 8, for results of ``_ZERO_COPY_MIN_BYTES`` or more."""
        import os

        if self.copy_threads is not None:
            return self.copy_threads
        big = 36 * frames * self.layout.total >= _ZERO_COPY_MIN_BYTES
        return max(1, min(8, (os.cpu_count() or 1) // 2)) if big else 1

    def _resources(self, B: int, zero_copy: bool = False) -> BakeResources:
        from .gpu.memory import host_cached_device_memory

        direct = host_cached_device_memory(self.m.ctx) if self.direct is None else self.direct
        m, key = self.m, (self.space, tuple(self.layout.skin), B, direct, self.gpu_pose, self.window,
                          self.split_modes, zero_copy, self.wide_stores)
        cache = getattr(m, "_bake_cache", None)
        if isinstance(cache, BakeResources) and cache.key == key:
            return cache
        m._free_bake_cache()
        m._bake_cache = BakeResources(m, self.layout, B, direct, self.gpu_pose, self.window, self.split_modes,
                                      zero_copy, self.wide_stores)
        return m._bake_cache

    def run(self, clip, times: np.ndarray, weights, batch_frames: int | None, progress) -> Bake:
        from .anim.pose_batch import PoseBatch

        m, F, lay = self.m, len(times), self.layout
        B = self.batch_size(F, batch_frames)
        self._decide(clip, F)
        zero_copy = self.uses_zero_copy(F, B)
        if zero_copy and batch_frames is None and m.ctx.info.device_type == "cpu":
            big = self.batch_size(F, None, in_place_cpu=True)      # fewer, larger batches there
            if big > B and self.zero_copy_refusal(F, big) is None:
                B = big
        result = None
        if zero_copy:
            try:
                result = _ZeroCopyResult(m.ctx, F, lay.total, B)
            except GpuError:                            # the driver refused this memory: the copy path, unless forced
                if self.zero_copy:
                    raise
                zero_copy = False
        try:
            res = self._resources(B, zero_copy)
            pose = res.pose
            clip_index = pose.clip_index(clip) if pose is not None else None
            if pose is not None and clip_index is None:
                raise UsageError(f"bake: clip {clip.name!r} is not one of the scene's animations, which the pose "
                                 "pass holds (use pose='cpu')")
        except BaseException:
            if result is not None:                           # nothing was submitted: the import can go
                result.release()
            raise
        ct = clip_times(clip, times)
        batch = PoseBatch(m.scene) if pose is None and lay.needs_matrices else None
        W = frame_weights(m, clip, times, weights)
        # one array: the kernel's windows of it (zero copy), or a batch copied out in one go
        planes = result.planes if result is not None else np.empty((3, F, lay.total, 3), np.float32)
        out = Bake(times, planes[0], planes[1], self.space, dict(lay.slices),
                   {name: inst.prim.indices.astype(np.uint32) for name, inst in zip(m.names, m.instances)},
                   planes[2])
        bar = _progress(F, progress)
        threads = 1 if zero_copy else self.host_copy_threads(F)
        self._copier = _HostCopier(threads) if threads > 1 else None
        # this thread's CPU seconds per batch for its pose and recording (the collect, which waits and copies,
        # excluded): ``batch_host_cpu`` after the run; bench/bake.py compares pose="gpu" with pose="cpu"
        self.batch_host_cpu = res.batch_host_cpu = host_cpu = []
        try:
            if result is not None:
                result.touch(0, min(B, F))
            for k, first in enumerate(range(0, F, B)):
                s = k % _SLOTS
                slot = res.slots[s]
                if slot.busy is not None:                    # batch k-2 (normally collected already)
                    self._collect(slot, planes)
                n = min(B, F - first)
                if result is not None and k < _SLOTS:
                    # the slot's first batch of this bake: its sets at this result. It is idle (the previous bake
                    # collected it), and its sets are its own: slot 1's update runs while the device runs batch 0
                    # instead of before the first submit (~0.2 ms, bench/2026-12-02-lavapipe-bake-host.txt)
                    slot.point_at(result)
                c0 = _time.thread_time()
                if pose is not None:                         # the batch's frames: one write, posed on the GPU
                    pose.write(s, clip_index, ct[first:first + n])
                elif batch is not None:                      # posed on the host (pose="cpu", pose_refusal)
                    mats = lay.matrices(batch, times[first:first + n], clip)
                    slot.matrices.mapped[:mats.nbytes] = np.ascontiguousarray(mats.transpose(0, 1, 3, 2)) \
                        .view(np.uint8).reshape(-1)          # std430 mat4 is column-major
                outs = result.offsets(first) if result is not None else slot.out_offsets()
                self._record(res, slot, s, W[first:first + n], n, outs)
                serial = m.ctx.last_serial
                m.ctx.submit([slot.cb], fence=slot.fence)
                host_cpu.append(_time.thread_time() - c0)
                slot.busy = (first, n, serial)
                if result is not None and first + n < F:     # the next batch's pages, while this one runs
                    result.touch(first + n, min(B, F - first - n))
                other = res.slots[(k + 1) % _SLOTS]
                if other.busy is not None:                   # batch k-1, copied out while the GPU runs batch k
                    bar_n = other.busy[1]
                    self._collect(other, planes)
                    if bar is not None:
                        bar.update(bar_n)
            # leave the runtime's weights and the model's skeleton at the last frame (Model.pose reads its bounds
            # there): on the host while the device runs the last batch (the recording that reads the runtime's
            # weights is done), not after its fence (~0.4 ms, bench/2026-12-02-lavapipe-bake-host.txt)
            m._reset()
            m._apply(clip, times[-1] if clip is not None else None, weights)
            for slot in res.slots:
                if slot.busy is not None:
                    bar_n = slot.busy[1]
                    self._collect(slot, planes)
                    if bar is not None:
                        bar.update(bar_n)
        except BaseException:
            try:
                for slot in res.slots:                   # leave nothing in flight
                    if slot.busy is not None:
                        m.ctx.wait_fence(slot.fence)
                        slot.busy = None
            except BaseException:
                # a wait failed (a timeout, an interrupt): the device may still write the slots and the imported
                # result, which the finally below frees; wait for the whole device first (no time limit)
                from .gpu.vk import vk

                m.ctx.wait_idle()
                for slot in res.slots:                   # signalled now: unsignalled for the next bake's submit
                    if slot.busy is not None:
                        vk.vkResetFences(m.ctx.device, 1, [slot.fence])
                        slot.busy = None
                raise
            raise
        finally:
            if result is not None:                           # nothing in flight any more: the import can go
                result.release()
            if self._copier is not None:                     # its last copy returned (or raised) already
                self._copier.close()
                self._copier = None
            if bar is not None:
                bar.close()
        return out

    def _record(self, res: BakeResources, slot: _Slot, s: int, W: np.ndarray, n: int,
                outs: tuple[list[int], int]) -> None:
        from .gpu import barriers
        from .gpu.interface import BAKE_PUSH
        from .gpu.memory import cffi_pointer
        from .gpu.vk import vk

        m, cb = self.m, slot.cb
        lay = self.layout
        push = np.zeros(1, BAKE_PUSH)
        push["matrices_per_frame"], push["frame_vertices"] = lay.matrices_per_frame, slot.frame_vertices
        out_offsets, push["out_shift"] = outs          # the planes' windows of this batch (dynamic offsets)
        vk.vkResetCommandBuffer(cb, 0)
        m.ctx.begin(cb, vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        barriers.record(cb, barriers.READBACK_TO_BAKE_WRITES)
        if res.pose is not None:                         # the frames' matrices, then BAKE_POSE_TO_KERNEL
            res.pose.record(cb, s, n)

        cpu = m.ctx.info.device_type == "cpu"

        window, stride = res.window, 64 * lay.matrices_per_frame        # bytes of a frame's matrices

        def dispatch(group, frame_first: int, frames: int) -> None:
            key, item_first, count, max_v, mode = group
            pipe = res.pipelines[mode]
            # the storage-buffer kernel: one dispatch, the batch's matrices bound; the uniform one: a dispatch per
            # window of frames, bound at its first frame's matrices (stride: a multiple of the offset alignment)
            step = window or frames
            for first in range(frame_first, frame_first + frames, step):
                n_f = min(step, frame_first + frames - first)
                x, per_group = _shape(cpu, pipe.groups(-(-max_v // 4)), n_f)   # quads of 4 vertices
                pipe.bind(cb, slot.sets[(mode, key)], ([first * stride] if window else []) + out_offsets)
                push["item_first"], push["frame_first"], push["frame_count"] = item_first, first, n_f
                push["frames_per_group"], push["matrix_frame"] = per_group, first if window else 0
                pipe.push(cb, cffi_pointer(push))
                vk.vkCmdDispatch(cb, x, count, -(-n_f // per_group))

        for g in res.rest_groups:                        # every frame of the batch in one dispatch
            dispatch(g, 0, n)
        if res.morph_groups:
            for a, b in weight_runs(W):
                m.runtime.pose.set_flat(W[a])
                m.runtime.record(cb, consumer="compute")  # nothing when the weights did not move
                for g in res.morph_groups:
                    dispatch(g, a, b - a)
        slot.record_readback(cb, n, lay.total)
        m.ctx.end(cb)

    def _collect(self, slot: _Slot, planes: np.ndarray) -> None:
        first, n, serial = slot.busy
        self.m.ctx.wait_fence(slot.fence)
        slot.busy = None
        self.m.ctx.completed(serial)
        slot.copy_into(planes, first, n, self._copier)   # the batch's one copy (split over threads: _HostCopier)


# ---------------------------------------------------------------------- numpy: the reference and the baseline
def _cofactor(m3: np.ndarray) -> np.ndarray:
    """Cofactor matrices of (..., 3, 3) (= det * inverse-transpose), defined for singular matrices too."""
    c0, c1, c2 = m3[..., :, 0], m3[..., :, 1], m3[..., :, 2]
    return np.stack([np.cross(c1, c2), np.cross(c2, c0), np.cross(c0, c1)], axis=-1)


def _unit(v: np.ndarray) -> np.ndarray:
    length = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.where(length > 1e-20, v / np.where(length > 1e-20, length, 1.0), 0.0).astype(np.float32)


def _to_world(world: np.ndarray, p: np.ndarray, n: np.ndarray, t: np.ndarray):
    """Positions by the node's world matrix, normals by its cofactor, tangents by its 3x3 (both renormalized).
    ``world`` is (4, 4) or (F, 4, 4) with (F, V, 3) arrays."""
    m3 = world[..., :3, :3]
    tr = world[..., None, :3, 3]
    return ((p @ np.swapaxes(m3, -1, -2) + tr).astype(np.float32), _unit(n @ np.swapaxes(_cofactor(m3), -1, -2)),
            _unit(np.asarray(t, np.float64) @ np.swapaxes(m3, -1, -2)))


def _bake_arrays(model: Model, times, space: str, skinning: bool):
    lay = _Layout(model, space, skinning)
    positions = np.empty((len(times), lay.total, 3), np.float32)
    return lay, positions, np.empty_like(positions), np.empty_like(positions)


def bake_numpy(model: Model, clip=None, times=None, weights=None, space: str = "mesh",
               skinning: bool = True) -> Bake:
    """The reference: per frame ``Model._reset`` + ``_apply`` (AnimationPlayer, Skeleton), the dense float64
    `vkmorph.morph.reference` morph, four-bone skinning, float64 world transforms. Independent of the GPU path's
    batched poses, weights and layout; slow on purpose (the tests' oracle, not a speed baseline)."""
    from .morph.reference import morph_reference, skin_reference

    c = model._check(clip, 0.0 if times is not None else None, space)
    w = model._check_weights(weights)
    times = np.zeros(1) if times is None else np.asarray(times, np.float64).reshape(-1)
    lay, positions, normals, tangents = _bake_arrays(model, times, space, skinning)
    pose = model.runtime.pose
    for f, t in enumerate(times):
        model._reset()
        model._apply(c, t if c is not None else None, w)
        world = model.skeleton.world_matrices()
        for k, (name, inst) in enumerate(zip(model.names, model.instances)):
            prim, s, v = inst.prim, lay.slices[name], inst.prim.vertices
            if prim.morph_targets:
                p, n, tan = morph_reference(prim, pose.weights(inst.node))
            else:
                p, n, tan = v["position"], v["normal"], v["tangent"]
            if lay.skin[k]:
                p, n, tan = skin_reference(p, n, tan, v["joints"], v["weights"], model._matrices(inst, space))
            elif space == "world":
                p, n, tan = _to_world(world[inst.node], p, n, tan[:, :3])
            positions[f, s], normals[f, s], tangents[f, s] = p, n, tan[:, :3]
    indices = {name: inst.prim.indices.astype(np.uint32) for name, inst in zip(model.names, model.instances)}
    return Bake(times, positions, normals, space, dict(lay.slices), indices, tangents)


class SparseMorph:
    """A primitive's deltas as a user would keep them for numpy: per target the moved vertices and their float32
    position / normal / tangent deltas (zero rows dropped)."""

    def __init__(self, prim):
        v = prim.vertices
        self.p0, self.n0 = v["position"].astype(np.float32), v["normal"].astype(np.float32)
        self.t0 = v["tangent"][:, :3].astype(np.float32)
        self.targets = []
        for tgt in prim.morph_targets:
            parts = [np.asarray(d, np.float32) if d is not None else np.zeros_like(self.p0)
                     for d in (tgt.position_deltas, tgt.normal_deltas, tgt.tangent_deltas)]
            idx = np.flatnonzero(np.any(np.concatenate(parts, axis=1) != 0, axis=1))
            self.targets.append((idx, *(d[idx] for d in parts)))

    def __call__(self, w: np.ndarray):
        p, n, t = self.p0.copy(), self.n0.copy(), self.t0.copy()
        for k, (idx, dp, dn, dt) in enumerate(self.targets):
            if k < len(w) and w[k] != 0.0 and len(idx):
                wk = np.float32(w[k])
                p[idx] += wk * dp
                n[idx] += wk * dn
                t[idx] += wk * dt
        n = _normalize_or32(n, self.n0)
        t = _normalize_or32(t - n * np.sum(n * t, axis=1, keepdims=True), self.t0)
        return p, n, t


def _normalize_or32(v: np.ndarray, fallback: np.ndarray) -> np.ndarray:
    len2 = np.sum(v * v, axis=-1, keepdims=True)
    ok = len2 > 1e-12
    return np.where(ok, v / np.sqrt(np.where(ok, len2, 1.0)), fallback)


def bake_numpy_fast(model: Model, clip=None, times=None, weights=None, space: str = "mesh",
                    skinning: bool = True, chunk_frames: int = 64) -> Bake:
    """The numpy baseline a user would write: the batched poses (``PoseBatch``, ``frame_weights``), sparse
    float32 deltas per target (``SparseMorph``), the morph once per run of frames with equal weights, and
    skinning / world transforms vectorized over the run's frames (``chunk_frames`` at a time) per instance, in
    float32. Same results as ``bake_numpy`` within float32 rounding."""
    from .anim.pose_batch import PoseBatch

    c = model._check(clip, 0.0 if times is not None else None, space)
    w = model._check_weights(weights)
    times = np.zeros(1) if times is None else np.asarray(times, np.float64).reshape(-1)
    lay, positions, normals, tangents = _bake_arrays(model, times, space, skinning)
    cache = model.__dict__.setdefault("_numpy_morphs", {})
    mats = lay.matrices(PoseBatch(model.scene), times, c)
    W = frame_weights(model, c, times, w)
    pose = model.runtime.pose
    for a0, b0 in weight_runs(W):
        morphed = {}
        for k, inst in enumerate(model.instances):
            if inst.prim.morph_targets:
                sm = cache.get(id(inst.prim)) or cache.setdefault(id(inst.prim), SparseMorph(inst.prim))
                morphed[k] = sm(W[a0, pose.slice_of(inst.node)])
        for a in range(a0, b0, chunk_frames):
            b = min(b0, a + chunk_frames)
            for k, (name, inst) in enumerate(zip(model.names, model.instances)):
                v, s = inst.prim.vertices, lay.slices[name]
                p, n, t = morphed[k] if k in morphed else (v["position"], v["normal"], v["tangent"][:, :3])
                if lay.skin[k]:
                    J = len(model.scene.skins[inst.prim.skin].joints)
                    pal = mats[a:b, lay.matrix[k]:lay.matrix[k] + J]                    # (F, J, 4, 4)
                    wts, jts = v["weights"], v["joints"]
                    sk = wts[None, :, 0, None, None] * pal[:, jts[:, 0]]                  # (F, V, 4, 4)
                    for i in range(1, 4):
                        sk += wts[None, :, i, None, None] * pal[:, jts[:, i]]
                    r = sk[..., :3, :3]
                    positions[a:b, s] = (r @ p[..., None])[..., 0] + sk[..., :3, 3]
                    n2, t2 = (r @ n[..., None])[..., 0], (r @ t[..., None])[..., 0]
                    normals[a:b, s] = _normalize_or32(n2, np.broadcast_to(n, n2.shape))
                    tangents[a:b, s] = _normalize_or32(t2, np.broadcast_to(t, t2.shape))
                elif space == "world":
                    m4 = mats[a:b, lay.matrix[k]]                                         # (F, 4, 4)
                    m3 = m4[:, :3, :3]
                    m3t = m3.transpose(0, 2, 1)
                    positions[a:b, s] = p @ m3t + m4[:, None, :3, 3]                       # (F, V, 3)
                    normals[a:b, s] = _unit(n @ _cofactor(m3).transpose(0, 2, 1))
                    tangents[a:b, s] = _unit(t @ m3t)
                else:
                    positions[a:b, s], normals[a:b, s], tangents[a:b, s] = p, n, t
    indices = {name: inst.prim.indices.astype(np.uint32) for name, inst in zip(model.names, model.instances)}
    return Bake(times, positions, normals, space, dict(lay.slices), indices, tangents)


# ---------------------------------------------------------------------- throughput
def readback_limit(model: Model, frames: int, *, batch_frames: int | None = None, repeats: int = 5) -> list[float]:
    """Seconds per repeat of the least work that brings a bake's bytes to the host, for ``frames`` frames of this
    model: per repeat the fastest of ``readback_limits``' three ways (each warmed up, the same repeat's
    measurements compared), so the limit is the hardest of them for the bake to approach, whichever path it
    takes. ``frames x vertices / seconds`` is the limit a bake can approach."""
    parts = readback_limits(model, frames, batch_frames=batch_frames, repeats=repeats)
    return [min(r) for r in zip(*parts.values())]


def readback_limits(model: Model, frames: int, *, batch_frames: int | None = None,
                    repeats: int = 5) -> dict[str, list[float]]:
    """Seconds per repeat (after a warm-up) of three ways to get the bake's result bytes into a fresh result array,
    nothing computed:

    * ``copy``: the copy path's readback, through the bake's own slots (batch size, two in flight) and
      ``_Slot.record_readback``: on a discrete GPU one vkCmdCopyBuffer of the batch's three output planes from
      device-local to host-visible memory, on a device with host-cached device-local memory nothing; then the
      fence and the host's one copy of the batch into the result (over ``GpuBaker.host_copy_threads`` threads,
      as that bake copies);
    * ``write``: the zero-copy bake's floor, every byte of a fresh result array (allocated as the zero-copy bake
      allocates it, ``_ZeroCopyResult``'s aligned host memory) written once by numpy, one thread: what a bake
      that writes its result in place cannot avoid (the first touch of fresh pages is part of it, as in a bake);
    * ``write_threads``: the same writes split over the host's CPUs (numpy releases the GIL), as the device's
      threads (lavapipe: one per core) write in a zero-copy bake.
    """
    import os
    import threading

    from .gpu import barriers
    from .gpu.vk import vk

    baker = GpuBaker(model, "world", zero_copy=False)
    B = baker.batch_size(frames, batch_frames)
    res = baker._resources(B)
    V = baker.layout.total
    threads = baker.host_copy_threads(frames)          # the copy path's host copy, as that bake makes it
    align = max(model.ctx.host_import_alignment, 4096)

    def fresh() -> np.ndarray:
        plane, _, total = _ZeroCopyResult.sizes(16, frames, V, B)
        raw = _result_memory(total, align)
        return np.lib.stride_tricks.as_strided(raw.view(np.float32), (3, frames, V, 3), (plane, 12 * V, 12, 4))

    def copy(planes) -> None:
        copier = _HostCopier(threads) if threads > 1 else None
        try:
            copy_batches(planes, copier)
        finally:
            if copier is not None:
                copier.close()

    def copy_batches(planes, copier) -> None:
        busy: list = [None] * _SLOTS
        for k, first in enumerate(range(0, frames, B)):
            s = k % _SLOTS
            slot = res.slots[s]
            if busy[s] is not None:
                _readback_collect(model, slot, busy[s], planes, V, copier)
            n = min(B, frames - first)
            cb = slot.cb
            vk.vkResetCommandBuffer(cb, 0)
            model.ctx.begin(cb, vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
            barriers.record(cb, barriers.READBACK_TO_BAKE_WRITES)
            slot.record_readback(cb, n, V)
            model.ctx.end(cb)
            model.ctx.submit([cb], fence=slot.fence)
            busy[s] = (first, n)
            o = (k + 1) % _SLOTS
            if busy[o] is not None:
                _readback_collect(model, res.slots[o], busy[o], planes, V, copier)
                busy[o] = None
        for s in range(_SLOTS):
            if busy[s] is not None:
                _readback_collect(model, res.slots[s], busy[s], planes, V, copier)

    def write(planes) -> None:
        planes.fill(1.0)

    def write_threads(planes) -> None:
        cuts = np.linspace(0, frames, max(1, os.cpu_count() or 1) + 1).astype(int)
        threads = [threading.Thread(target=planes[:, a:b].fill, args=(1.0,)) for a, b in zip(cuts[:-1], cuts[1:])]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    ways = {"copy": copy, "write": write, "write_threads": write_threads}
    secs: dict[str, list[float]] = {k: [] for k in ways}
    for r in range(repeats + 1):                     # the first repeat warms up
        for name, fn in ways.items():
            planes = fresh()                         # fresh memory each time, as each bake's result
            t0 = _time.perf_counter()
            fn(planes)
            if r:
                secs[name].append(_time.perf_counter() - t0)
            del planes
    return secs


def _readback_collect(model, slot, busy, planes, V, copier=None) -> None:
    first, n = busy
    model.ctx.wait_fence(slot.fence)
    slot.copy_into(planes, first, n, copier)


_WARMUPS = 2          # untimed calls before the timed ones (_timed)


def _timed(fn, repeats: int) -> tuple[list[float], list[float], object, list[float]]:
    """Wall and process-CPU seconds of ``repeats`` calls after ``_WARMUPS`` untimed ones, the last result, and
    the warm-ups' wall seconds (reported apart: costs a user pays once). Two warm-ups, since the timed calls keep
    the previous result alive while the next is made (``result = fn()``, as a user's loop does): the first call
    builds what later calls reuse (a bake's pipelines and buffers), the second is the first to hold two results
    at once. On this project's lavapipe host (a VM that hands freed guest memory back to its hypervisor, so
    memory not touched lately faults in ~30x slower) that second call took the cost of memory new to the process:
    with one warm-up it was the first timed repeat, 0.186 s against 0.032-0.035 s for the others and the
    speedup's minimum 1.7x against 4.7x (``bench/2026-12-02-lavapipe-bake-host.txt``)."""
    warm = []
    for _ in range(_WARMUPS):
        t0 = _time.perf_counter()
        result = fn()
        warm.append(_time.perf_counter() - t0)
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = _time.perf_counter(), _time.process_time()
        result = fn()
        wall.append(_time.perf_counter() - t0)
        cpu.append(_time.process_time() - c0)
    return wall, cpu, result, warm


def measure_bake_throughput(path=None, frames: int = 64, clip=None, space: str = "world",
                            model: Model | None = None, repeats: int = 5) -> dict:
    """Baking throughput: frames x vertices per second of the GPU bake, of the numpy baseline
    (``bake_numpy_fast``) and of the readback limit (``readback_limits``' three ways, the fastest per repeat:
    ``readback_*_s`` each, ``readback_s`` the limit), each warmed up and timed ``repeats``
    times (medians and min-max); the GPU/numpy ratio per repeat pair, the fraction of the readback limit, and
    the largest difference from the numpy reference ``bake_numpy`` (first frames). The GPU bake's and numpy's
    untimed warm-ups (``_timed``) are ``gpu_warmup_s`` / ``numpy_warmup_s``: the first bake of a model pays for
    its resources and pipelines there. Used by ``vkmorph bench``."""
    from .model import open as open_model

    own = model is None
    m = open_model(path) if own else model
    try:
        c = m.scene.clip(clip) if clip is not None else (m.scene.animations[0] if m.scene.animations else None)
        times = np.linspace(0.0, c.duration, frames) if c is not None else np.zeros(frames)
        name = c.name if c is not None else None
        gw, gc, gpu, g_warm = _timed(lambda: m.bake(clip=name, times=times, space=space, progress=False), repeats)
        batch = m._bake_cache.B                                   # the frames per batch that bake used
        host = list(m._bake_cache.batch_host_cpu)            # the last repeat's, per batch
        pose_gpu = m._bake_cache.pose is not None
        # the same bake with the pose on the host (PoseBatch per batch, as before the pose pass): before / after
        hw, hc, _, _ = _timed(lambda: GpuBaker(m, space, pose="cpu").run(c, times, None, None, False), repeats)
        host_cpu_pose = list(m._bake_cache.batch_host_cpu)
        nw, nc, fast, n_warm = _timed(lambda: bake_numpy_fast(m, clip=name, times=times, space=space), repeats)
        parts = readback_limits(m, frames, repeats=repeats)
        limit = [min(r) for r in zip(*parts.values())]           # readback_limit: the fastest way per repeat
        zero_copy = GpuBaker(m, space).uses_zero_copy(frames, GpuBaker(m, space).batch_size(frames, None))
        n_ref = max(2, min(frames, 8))
        ref_times = times[np.linspace(0, frames - 1, n_ref).astype(int)]
        ref = bake_numpy(m, clip=name, times=ref_times, space=space)
        pick = np.linspace(0, frames - 1, n_ref).astype(int)
        err = float(np.abs(gpu.positions[pick] - ref.positions).max()) if gpu.positions.size else 0.0
        err_n = float(np.abs(gpu.normals[pick] - ref.normals).max()) if gpu.normals.size else 0.0
        err_fast = float(np.abs(fast.positions[pick] - ref.positions).max()) if fast.positions.size else 0.0
        V = gpu.positions.shape[1]
        fv = frames * V
        ratios = [n / g for g, n in zip(gw, nw)]
        fractions = [lim / g for g, lim in zip(gw, limit)]
        # the "readback copy limit": the copy path's readback alone (the stricter limit above also
        # counts numpy writing the result once, on one thread and on all CPUs)
        copy_fractions = [lim / g for g, lim in zip(gw, parts["copy"])]
        med = float(np.median(gw))
        return {"file": m.scene.source, "clip": name, "space": space, "frames": frames, "vertices": V,
                "device": m.ctx.info.name, "repeats": repeats,
                "batch_frames": batch,
                "weight_runs": len(weight_runs(frame_weights(m, c, times, None))),
                "gpu_s": med, "gpu_s_min": min(gw), "gpu_s_max": max(gw), "gpu_cpu_s": float(np.median(gc)),
                # the warm-ups (_timed): the first bake builds the model's bake resources and pipelines
                "gpu_warmup_s": g_warm, "numpy_warmup_s": n_warm,
                "numpy_s": float(np.median(nw)), "numpy_s_min": min(nw), "numpy_s_max": max(nw),
                "numpy_cpu_s": float(np.median(nc)),
                "readback_s": float(np.median(limit)), "readback_s_min": min(limit), "readback_s_max": max(limit),
                **{f"readback_{k}_s": float(np.median(v)) for k, v in parts.items()}, "zero_copy": zero_copy,
                "gpu_vps": fv / med, "numpy_vps": fv / float(np.median(nw)),
                "readback_vps": fv / float(np.median(limit)),
                "speedup": float(np.median(ratios)), "speedup_min": min(ratios), "speedup_max": max(ratios),
                "readback_fraction": float(np.median(fractions)), "readback_fraction_min": min(fractions),
                "readback_fraction_max": max(fractions),
                "copy_readback_fraction": float(np.median(copy_fractions)),
                "copy_readback_fraction_min": min(copy_fractions), "copy_readback_fraction_max": max(copy_fractions),
                "numpy_s_per_frame": float(np.median(nw)) / frames,
                "pose_on_gpu": pose_gpu, "host_batch_cpu_s": float(np.median(host)),
                "host_batch_cpu_s_min": min(host), "host_batch_cpu_s_max": max(host),
                "cpu_pose_s": float(np.median(hw)), "cpu_pose_s_min": min(hw), "cpu_pose_s_max": max(hw),
                "cpu_pose_cpu_s": float(np.median(hc)),
                "cpu_pose_host_batch_cpu_s": float(np.median(host_cpu_pose)),
                "cpu_pose_host_batch_cpu_s_min": min(host_cpu_pose),
                "cpu_pose_host_batch_cpu_s_max": max(host_cpu_pose),
                "max_error": err, "max_normal_error": err_n, "numpy_max_error": err_fast}
    finally:
        if own:
            m.close()
