"""Skin once, draw many: compute skinning of a crowd's skinned primitives (glsl/crowd_skin.comp).

After the morph pass, every changed instance's vertices of each compute-path primitive are skinned once by its
own palette into a per-slot output buffer in the ``STATIC_VERTEX`` layout (world space), which every pass
(shadow, forward, outline) then draws as plain vertices with an identity model matrix, instead of skinning the
same vertices again in each pass's vertex shader. The vertex-shader path stays; the choice is per primitive.

Byte cost model (per vertex, ``skinning_cost``): vertex-shader skinning reads the vertex and four palette
matrices in every pass, ``passes x (stride + 4 x 64)``; compute skinning reads them once and writes 48 bytes,
then every pass reads 48 bytes: ``stride + 4 x 64 + 48 + passes x 48``. With two or more passes compute wins
for every layout vkmorph has; ``path="vertex"`` / ``"compute"`` forces one (the model is stated, not tuned on
a device: the benchmark has not measured it yet).

Per frame (``record(cb, slot)``, after ``rt.record(cb, slot=slot, consumer="compute")`` in the same command
buffer): instances whose weights or pose moved since this slot was skinned get their palettes written into
this slot's host-visible palette buffer (the host must have waited for the frame that last used this slot:
the frames-in-flight rule) and are dispatched, one dispatch per primitive and run of consecutive instances,
between ``MORPH_AND_DRAWS_TO_SKIN`` (the morph output written, read here; the earlier draws of this slot's skinned
vertices done before they are rewritten, even on a frame whose morph pass recorded nothing) and
``COMPUTE_TO_VERTEX`` (read as vertex input by the draws). Unchanged instances cost nothing. Each primitive's
range starts 256-byte aligned and is bound as its own descriptor range, so its dispatches touch no other's.

``visible=`` (render/crowd_cull.py): moved instances that are culled are not skinned and stay pending.
``motion_vectors=True``: the same dispatch also writes each instance's previous world positions (docs/embedding.md,
"Motion vectors": the previous frame's skinned vertex, read from the previous slot's output, or the current one
when there is no previous frame or no motion); an instance that moved in the last frame but not in this one is
dispatched once more so that its previous positions catch up. With one output slot ``last`` is this slot's own
output range, so the frame's runs are recorded one after another with ``SKIN_RUN_TO_NEXT_RUN`` between them
(descriptors bind a primitive's whole range: a later run reads what an earlier one wrote, as far as the binding
says).

With ``animation=`` (a ``render/crowd_anim.CrowdAnimation``, recorded before this pass with
``consumer="compute"``) the palettes are that pass's per-slot buffers: it writes every instance's (on the GPU,
or by the host for instances posed on the CPU), this pass writes none and also skins each GPU-posed instance
once per animation dispatch of the slot (culled ones stay pending until they are visible again). With
``motion_vectors`` too: GPU-posed instances move without their weight or skeleton versions moving (the clock, a
push constant, poses them), so the bookkeeping compares states instead, a stamp per instance that also moves
with the animation's ``pose_versions`` (its clip parameters, or the clock while it plays at a nonzero speed);
the shader and the barriers are the same as without animation (the previous positions are copied from the
previous slot's output, which that frame drew).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..asset.model import STATIC_VERTEX, attribute_offsets_words
from ..errors import UsageError
from ..gpu import barriers
from ..gpu import memory as M
from ..gpu.interface import CROWD_SKIN, CROWD_SKIN_PUSH
from ..gpu.ownership import Owner
from ..gpu.pipeline import ComputePipeline
from ..gpu.vk import vk
from ..morph.state import AppliedVersions
from .draw_list import VertexInput, vertex_input_of
from .morph_batch import MAX_GROUPS, merged_ranges
from .skin_cost import PATHS, SKINNED_OUT_BYTES, choose_path, skinning_cost  # noqa: F401 -- re-exported


@dataclass
class SkinnedCrowdDraw:
    """A compute-skinned primitive for every instance: world-space STATIC_VERTEX vertices, identity model."""

    node: int
    primitive: int
    vertex_buffer: object      # VkBuffer (this slot's skinned output)
    vertex_offset: int         # bytes: instance 0
    instance_stride: int       # bytes between instances
    vertex_count: int
    vertex_input: VertexInput
    index_buffer: object
    index_count: int
    previous_buffer: object = None   # VkBuffer (motion_vectors=True): this slot's previous world positions
    previous_offset: int = 0         # bytes: instance 0's, one vec4 (x, y, z, 1) per vertex
    previous_stride: int = 0         # bytes between instances' previous positions (16 x vertex_count)

    def offset_of(self, instance: int) -> int:
        return self.vertex_offset + instance * self.instance_stride

    def previous_offset_of(self, instance: int) -> int:
        return self.previous_offset + instance * self.previous_stride


class CrowdSkinning:
    """Compute skinning of a crowd runtime's skinned primitives (see the module docstring). ``passes``: how
    many passes draw each primitive (the cost model's input); ``path``: "auto" (the model), or forced;
    ``motion_vectors``: keep each instance's previous-frame world positions (one more vec4 per vertex and slot;
    docs/embedding.md, "Motion vectors")."""

    def __init__(self, rt, *, passes: int = 2, path: str = "auto", motion_vectors: bool = False,
                 animation=None):
        if rt.crowd is None:
            raise UsageError("CrowdSkinning needs a crowd runtime: MorphRuntime(..., instances=N)")
        self.rt, self.ctx, self.crowd = rt, rt.ctx, rt.crowd
        self.passes, self.path_choice, self.motion_vectors = int(passes), path, bool(motion_vectors)
        self.paths = {(inst.node, inst.prim_index): choose_path(inst.prim.vertices.dtype.itemsize, passes, path)
                      for inst in rt.instances if inst.prim.is_skinned}
        self.items = [inst for inst in rt.instances if self.paths.get((inst.node, inst.prim_index)) == "compute"]
        self._owner = Owner(self.ctx, "crowd skinning")
        self._last_serial = 0
        self.culled = 0            # the last record's moved-but-culled instances (left pending)
        N, slots = self.crowd.count, rt.slots
        # animation: a render/crowd_anim.CrowdAnimation whose per-slot palettes (GPU-sampled, or host-written
        # for CPU-posed instances) are read instead of this pass's own; per slot and instance, the animation
        # dispatch whose palettes the instance was last skinned from (-1: none)
        self.animation = animation
        self._anim_seen = np.full((slots, N), -1, np.int64)
        # palettes: one block per distinct skin palette (skins with the same joints share one, as the crowd does)
        self._palette_of: dict[int, int] = {}
        self._blocks: list[tuple[int, int]] = []    # (skin, first mat4 in an instance's palette row)
        width = 0
        for inst in ([] if animation is not None else self.items):
            s = inst.prim.skin
            arr = self.crowd.skin_matrices(s)
            for skin, first in self._blocks:
                if self.crowd.skin_matrices(skin) is arr or np.shares_memory(self.crowd.skin_matrices(skin), arr):
                    self._palette_of[s] = first
                    break
            else:
                self._palette_of[s] = width
                self._blocks.append((s, width))
                width += arr.shape[1]
        if animation is not None:
            self._palette_of = {inst.prim.skin: animation.palette_first(inst.prim.skin) for inst in self.items}
            width = animation.palette_width
        self.palette_width = width
        # each primitive's outputs start 256-byte aligned (>= minStorageBufferOffsetAlignment) and are bound as
        # their own range, so one primitive's dispatch never reads or writes (for the validation layer: binds)
        # another's range: the dispatches of one frame need no barrier between them
        firsts, total = [], 0
        for inst in self.items:
            firsts.append(total)
            total += -(-N * inst.prim.vertex_count * 3 // 16) * 16
        self._dst_first = firsts
        self._applied = AppliedVersions(np.arange(N), slots)
        # motion vectors: each instance's state, a stamp that moves whenever its skinned positions may have moved
        # (its weight or skeleton version, or with animation= its GPU pose version: the clock and its clip
        # parameters, which move no crowd version); per slot the state whose positions each instance's output
        # and previous range hold, and the states the last recorded frame drew (-1: not drawn: culled, no frame)
        self._state = np.zeros(N, np.int64)
        self._state_inputs = np.full((2, N), -1, np.int64)   # (weight/skeleton version, pose version) stamped
        self._state_stamp = 0
        self._out_of = np.full((slots, N), -1, np.int64)
        self._prev_of = np.full((slots, N), -1, np.int64)
        self._drawn = np.full(N, -1, np.int64)
        self.pipeline = self.palettes = self.outputs = self.previous = None
        self._last_is_output = self.motion_vectors and slots == 1    # one slot: the previous frame's vertices
        try:
            self._build(total)
        except BaseException:
            self._owner.destroy()
            raise

    def _build(self, total_vec4: int) -> None:
        ctx, rt, N = self.ctx, self.rt, self.crowd.count
        if not self.items:
            return
        # every binding is one whole range (no groups yet, unlike the morph output): refuse what cannot be bound
        limit = int(ctx.info.limits.get("maxStorageBufferRange", 1 << 31))
        need = max([16 * total_vec4, 64 * N * self.palette_width] + [inst.vertex_buffer.size for inst in self.items])
        if need > limit:
            raise UsageError(f"compute skinning of {N} instances binds {need} bytes at once, more than this "
                             f"device's maxStorageBufferRange ({limit} B): use fewer instances per runtime or the "
                             "vertex-shader path (path='vertex')")
        self.pipeline = self._owner.own(ComputePipeline(ctx, CROWD_SKIN, max_sets=len(self.items) * rt.slots))
        self.palettes = [self._owner.own(M.host_buffer(ctx, 64 * N * self.palette_width, M.STORAGE,
                                                       name=f"crowd palettes slot {k}")) for k in range(rt.slots)] \
            if self.animation is None else list(self.animation.palettes)
        self._palette_views = [b.view(np.float32, N * self.palette_width * 16).reshape(N, self.palette_width, 4, 4)
                               for b in self.palettes]
        self.outputs = [self._owner.own(M.device_buffer(ctx, None, M.STORAGE | M.VERTEX, size=16 * total_vec4,
                                                        name=f"crowd skinned vertices slot {k}"))
                        for k in range(rt.slots)]
        prev_firsts, prev_total = [], 0
        for inst in self.items:
            prev_firsts.append(prev_total)
            prev_total += -(-N * inst.prim.vertex_count // 16) * 16
        S = rt.slots
        if self.motion_vectors:    # previous positions (vec4 per vertex) and per instance where they come from
            self.previous = [self._owner.own(M.device_buffer(ctx, None, M.STORAGE | M.VERTEX, size=16 * prev_total,
                                                             name=f"crowd previous positions slot {k}"))
                             for k in range(S)]
            self._history = [self._owner.own(M.host_buffer(ctx, max(16, 4 * N), M.STORAGE,
                                                           name=f"crowd motion history slot {k}")) for k in range(S)]
            self._history_views = [b.view(np.uint32, N) for b in self._history]
            last = [self.outputs[(k - 1) % S] for k in range(S)]   # frames use the slots in turn
        else:                      # unused bindings (pc.motion = 0): small buffers, one read, one written
            spare_r, spare_w = (self._owner.own(M.device_buffer(ctx, None, M.STORAGE, size=256,
                                                                name=f"crowd motion (unused, {w})"))
                                for w in ("read", "written"))
            self._history = [spare_r] * S
            last = None

        def out_range(buf, i):
            n = 16 * (self._dst_first[i + 1] if i + 1 < len(self.items) else total_vec4) - 16 * self._dst_first[i]
            return (buf, 16 * self._dst_first[i], n)

        def prev_range(k, i):
            if not self.motion_vectors:
                return spare_w
            n = 16 * ((prev_firsts[i + 1] if i + 1 < len(self.items) else prev_total) - prev_firsts[i])
            return (self.previous[k], 16 * prev_firsts[i], n)

        self._sets = [[self.pipeline.make_set({"vertices": inst.vertex_buffer, "palettes": self.palettes[k],
                                               "output": out_range(self.outputs[k], i),
                                               "last": out_range(last[k], i) if last else spare_r,
                                               "previous": prev_range(k, i), "history": self._history[k]})
                       for i, inst in enumerate(self.items)] for k in range(S)]
        self._push = []
        for k in range(rt.slots):
            rows = np.zeros(len(self.items), CROWD_SKIN_PUSH)
            for i, inst in enumerate(self.items):
                o = attribute_offsets_words(inst.prim.vertices.dtype)
                r = rows[i]
                r["vertex_count"], r["stride_words"] = inst.prim.vertex_count, inst.prim.vertices.dtype.itemsize // 4
                for name in ("position", "normal", "tangent", "texcoord", "joints", "weights"):
                    r[f"{name}_offset"] = o[name]
                r["src_first_word"] = rt._offset(inst, k) // 4
                r["src_instance_words"] = (rt.batch.instance_stride // 4) if inst.is_morphing else 0
                r["palette_first"], r["palette_instance"] = self._palette_of[inst.prim.skin], self.palette_width
                # relative to the primitive's own bound ranges
                r["dst_first_vec4"], r["dst_instance_vec4"] = 0, inst.prim.vertex_count * 3
                r["motion"], r["prev_first_vec4"] = int(self.motion_vectors), 0
            self._push.append(rows)
        inputs = vertex_input_of(STATIC_VERTEX)
        self._draws = [[SkinnedCrowdDraw(node=inst.node, primitive=inst.prim_index,
                                         vertex_buffer=self.outputs[k].handle, vertex_offset=16 * self._dst_first[i],
                                         instance_stride=SKINNED_OUT_BYTES * inst.prim.vertex_count,
                                         vertex_count=inst.prim.vertex_count, vertex_input=inputs,
                                         index_buffer=inst.index_buffer.handle, index_count=inst.index_count,
                                         previous_buffer=self.previous[k].handle if self.previous else None,
                                         previous_offset=16 * prev_firsts[i],
                                         previous_stride=16 * inst.prim.vertex_count if self.previous else 0)
                        for i, inst in enumerate(self.items)] for k in range(rt.slots)]

    def draws(self, slot: int = 0) -> list[SkinnedCrowdDraw]:
        return list(self._draws[self.rt._slot(slot)]) if self.items else []

    def record(self, cb, slot: int = 0, visible: np.ndarray | None = None) -> int:
        """Skin the instances whose weights or pose moved since ``slot`` was skinned (see the module docstring);
        returns how many instances were skinned (0: nothing recorded, not even a barrier). ``visible``: a bool
        per instance (render/crowd_cull.py); moved instances that are not visible are not skinned and stay
        pending (versions not consumed), as in ``MorphRuntime.record(visible=)``, which must get the same mask."""
        slot = self.rt._slot(slot)
        crowd, applied = self.crowd, self._applied
        self.culled = 0
        anim = self.animation
        dispatch = anim.dispatches[slot] if anim is not None else -1
        # GPU-posed instances not yet skinned from this slot's latest animation dispatch
        animated = (np.flatnonzero(crowd.gpu_posed & (self._anim_seen[slot] != dispatch))
                    if anim is not None and dispatch > 0 else np.zeros(0, np.int64))
        if not self.items or (not len(animated) and not self.motion_vectors
                              and applied.up_to_date(slot, crowd.version)):
            return 0
        moved = np.maximum(crowd.weight_versions, crowd.skeleton_versions)   # one counter stamps both
        rows, cur = applied.changed(slot, moved)
        total = crowd.version
        if self.motion_vectors:
            state = self._states(moved)
            # previous wanted: what the last frame drew; not drawn (first frame, culled): the current state. Skinned:
            # every instance whose output or previous range does not hold that (a superset of ``changed``'s rows)
            want = np.where(self._drawn >= 0, self._drawn, state)
            rows = np.flatnonzero((self._out_of[slot] != state) | (self._prev_of[slot] != want))
        if len(animated):
            rows = np.union1d(rows, animated)
        if visible is not None:
            seen = np.asarray(visible, bool)[rows]
            self.culled = int(len(rows) - seen.sum())
            if self.culled:
                rows, total = rows[seen], -1
        if self.motion_vectors:
            self._drawn = np.where(np.asarray(visible, bool), state, -1) if visible is not None else state.copy()
        if len(rows):
            if self.motion_vectors:    # 1: previous = the last frame's vertex (it moved since), 0: = current
                self._history_views[slot][rows] = (want[rows] != state[rows]).astype(np.uint32)
                self._prev_of[slot, rows] = want[rows]
                self._out_of[slot, rows] = state[rows]
            if anim is not None:
                self._anim_seen[slot, rows] = dispatch
            view = self._palette_views[slot]
            sel = slice(None) if len(rows) == crowd.count else rows
            for skin, first in self._blocks:     # std430 mat4 is column-major; none with animation= (it writes them)
                pal = crowd.skin_matrices(skin)
                view[sel, first:first + pal.shape[1]] = pal[sel].transpose(0, 1, 3, 2)
            barriers.record(cb, barriers.MORPH_AND_DRAWS_TO_SKIN)   # morph output read, earlier draws' input rewritten
            starts, counts = merged_ranges(np.arange(crowd.count), np.ones(crowd.count, np.int64), rows)
            runs = [(f, min(MAX_GROUPS, s + n - f)) for s, n in zip(starts.tolist(), counts.tolist())
                    for f in range(s, s + n, MAX_GROUPS)]
            push = self._push[slot]
            base = vk.ffi.cast("char *", M.cffi_pointer(push))
            # motion vectors with one slot: ``last`` is ``output``'s own range, so run after run with a barrier
            # between them (SKIN_RUN_TO_NEXT_RUN); else every run of a primitive under one bind, no barrier
            batches = [[run] for run in runs] if self._last_is_output else [runs]
            for b, batch in enumerate(batches):
                if b:
                    barriers.record(cb, barriers.SKIN_RUN_TO_NEXT_RUN)   # the bound ranges the runs share
                for i, inst in enumerate(self.items):
                    self.pipeline.bind(cb, self._sets[slot][i])
                    for first, n in batch:
                        push[i]["first_instance"] = first
                        self.pipeline.push(cb, base + i * CROWD_SKIN_PUSH.itemsize, CROWD_SKIN_PUSH.itemsize)
                        vk.vkCmdDispatch(cb, self.pipeline.groups(inst.prim.vertex_count), n, 1)
            barriers.record(cb, barriers.COMPUTE_TO_VERTEX)      # skinned vertices read as vertex input
            self._last_serial = self.ctx.next_serial()
        applied.applied(slot, total, rows, cur)
        return len(rows)

    def _states(self, moved: np.ndarray) -> np.ndarray:
        """Motion vectors: stamp a new state on the instances whose weight/skeleton version (``moved``) or GPU
        pose version (``animation.pose_versions``, as of this frame's animation record) moved since the last
        record; equal states mean equal skinned positions."""
        pose = self.animation.pose_versions if self.animation is not None else 0
        seen = self._state_inputs
        hit = (moved != seen[0]) | (pose != seen[1])
        if hit.any():
            self._state_stamp += 1
            self._state[hit] = self._state_stamp
            seen[0], seen[1] = moved, pose
        return self._state

    def destroy(self) -> None:
        """Release (deferred until the host reported the last recording complete, as MorphRuntime.destroy)."""
        self.ctx.retire("crowd skinning", self._owner.destroy, self._last_serial)
