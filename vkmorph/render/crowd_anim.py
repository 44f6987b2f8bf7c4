"""Crowd animation on the GPU (glsl/crowd_anim.comp): clips as buffers, palettes written by a compute pass.

Why on the GPU: the CPU path (``CrowdState.play`` + ``skin_matrices``: vectorized numpy over instances) costs
~60-80 us per changed RobotExpressive (84 nodes, 43 joints) on the 2-core host, 0.8 s at 10,000; the issue's
budget is 10 ms. Here the clips' keyframes are uploaded once; per instance the CPU holds only (clip, phase,
speed), written when they change, and per frame one float, the crowd's clock, goes in a push constant. Instance
time = phase + speed x clock, wrapped by the clip's duration, so an instance playing on costs the CPU nothing.

One thread per instance (a workgroup costs lavapipe ~40 us of its own, so not one per joint): sample each
channel (STEP / LINEAR / CUBICSPLINE, rotations slerped and normalized as ``anim/sampler.py``), compose local
TRS (rest pose where no channel drives the node), world matrices parents first (nodes stored in that order, the
instance transform at the roots), palettes world[joint] x inverse bind into a per-slot host-visible buffer laid
out (instances, palette_width) mat4: one block per distinct skin (skins with the same joints and inverse binds
share one, as ``CrowdState.skin_matrices`` does), ``palette_first(skin)`` says where, then one column per node
with a rigid primitive holding its model matrix (``model_column(node)``).

Instances posed by hand (``CrowdState.set_local``, ``Instance.set_trs``: the crowd hands them back to the CPU)
get their CPU palettes written into the same buffer by the host (only when their skeleton version moved); the
shader skips them (clip ``NO_CLIP``). So the palette buffer always holds every instance's palette, from one
source each. Morph weights stay on the CPU: ``sample_weights(clock)`` samples the clips' weight channels for
the GPU-posed instances (vectorized per clip and channel, a few ms at 10,000) and the morph pass uploads the
changed rows as for any host-set weights (docs/architecture.md says why).

The pass itself (clip buffers, palette entries, pipeline, the dispatch) is ``ClipPosePass``; its per-pose inputs
and output belong to its user: ``CrowdAnimation`` (a pose per instance) and the bake (``vkmorph/bake.py``, a pose
per frame of a batch, whose entries may be relative to a node: mesh space).

Per frame ``record(cb, slot, time=)``: level 1, nothing recorded when neither the clock nor any version moved
since this slot was recorded; else host writes of the changed rows (parameters, transforms, CPU palettes),
``PREVIOUS_FRAME_TO_ANIM``, one dispatch over the GPU-posed instances' range, the consumer barrier. The host
must have waited for the frame that last used this slot (the frames-in-flight rule, as ``CrowdSkinning``).
"""

from __future__ import annotations

import numpy as np

from ..anim.crowd import CrowdState
from ..anim.pose_batch import parents_first
from ..asset.model import AnimationClip
from ..errors import UsageError
from ..gpu import barriers
from ..gpu import memory as M
from ..gpu.interface import CROWD_ANIM, CROWD_ANIM_LOCAL_SIZE_ID, CROWD_ANIM_MAX_NODES, CROWD_ANIM_PUSH
from ..gpu.ownership import Owner
from ..gpu.pipeline import ComputePipeline
from ..gpu.vk import vk

NO_CLIP = 0xFFFFFFFF          # the shader skips an instance with this clip (posed on the CPU)
ROOT = 0xFFFFFFFF
_MODES = {"STEP": 0, "LINEAR": 1, "CUBICSPLINE": 2}
_QUATERNION = 16
_PATHS = {"translation": 0, "rotation": 1, "scale": 2}
MAX_GROUPS = 65535


def _vec4(values: np.ndarray) -> np.ndarray:
    v = np.asarray(values, np.float32).reshape(len(values), -1)
    out = np.zeros((len(v), 4), np.float32)
    out[:, :v.shape[1]] = v[:, :4]
    return out


class ClipTables:
    """The clips of a scene as the shader's buffers (built once; numpy only, no Vulkan)."""

    def __init__(self, scene, clips: list[AnimationClip]):
        order = parents_first(scene)
        if len(order) > CROWD_ANIM_MAX_NODES:
            raise UsageError(f"GPU crowd animation handles up to {CROWD_ANIM_MAX_NODES} nodes; the scene has "
                             f"{len(order)} (animate it on the CPU: CrowdState.play)")
        pos = np.empty(len(order), np.int64)
        pos[order] = np.arange(len(order))
        self.order, self.pos = np.array(order, np.int64), pos
        nodes = np.zeros((len(order), 3, 4), np.float32)
        for k, n in enumerate(order):
            node = scene.nodes[n]
            nodes[k, 0, :3], nodes[k, 1], nodes[k, 2, :3] = node.translation, node.rotation, node.scale
        parents = np.array([ROOT if scene.nodes[n].parent is None else pos[scene.nodes[n].parent] for n in order],
                           np.uint32)
        nodes[:, 0, 3] = parents.view(np.float32)
        self.nodes = nodes
        channels, times, values = [], [], []
        t_len = v_len = 0
        node_channels = np.zeros((max(1, len(clips)), len(order), 4), np.uint32)
        for ci, clip in enumerate(clips):
            for ch in clip.node_channels:        # in channel order: a later channel of the same path wins
                tt = np.asarray(ch.times, np.float32).reshape(-1)
                vv = _vec4(ch.values)
                mode = _MODES[ch.interpolation] | (_QUATERNION if ch.path == "rotation" else 0)
                node_channels[ci, pos[ch.node], _PATHS[ch.path]] = len(channels) + 1
                channels.append((mode, t_len, len(tt), v_len))
                times.append(tt)
                values.append(vv)
                t_len += len(tt)
                v_len += len(vv)
        self.channels = np.array(channels or [(0, 0, 0, 0)], np.uint32).reshape(-1, 4)
        self.times = np.concatenate(times) if times else np.zeros(1, np.float32)
        self.values = np.concatenate(values) if values else np.zeros((1, 4), np.float32)
        self.node_channels = node_channels
        self.durations = np.array([float(c.duration) for c in clips], np.float64)


class ClipPosePass:
    """The clip-pose pass of ``glsl/crowd_anim.comp``, shared by its two users: the clips' buffers (a
    ``ClipTables``), the palette layout (``entries``: per matrix written, (node position in ``tables.order``,
    inverse bind, column, 0); ``inverse_binds``: (E, 4, 4) math matrices; ``palette_width``: columns per pose) and
    the pipeline. A user owns the per-pose inputs and the output and binds them with ``make_set``: ``params`` (per
    pose (clip or ``NO_CLIP``, phase, speed, duration) as uvec4, the floats' bits), ``transforms`` (per pose the
    mat4 at the roots) and ``palettes`` (per pose ``palette_width`` mat4, column-major). ``record`` dispatches one
    thread per pose of a range. Users: ``CrowdAnimation`` (a pose per crowd instance) and ``vkmorph.bake`` (a pose
    per frame of a batch, written into the matrices its kernel reads). Owns only what it creates;
    ``destroy()`` frees it at once (its owner defers that until the GPU is done with it)."""

    def __init__(self, ctx, tables: ClipTables, entries: np.ndarray, inverse_binds: np.ndarray,
                 palette_width: int, *, max_sets: int, name: str = "clip pose", local_size: int | None = None):
        # local_size: poses per workgroup (the shader's local_size_x through a specialization constant); None:
        # the interface's 64. A CPU device runs a workgroup on one thread, so a few poses (a bake's batch of
        # frames) spread over its threads only in smaller workgroups; a crowd keeps 64
        if local_size is not None and (isinstance(local_size, bool) or not isinstance(local_size, int)
                                       or not 1 <= local_size <= 1024):
            raise UsageError(f"{name}: local_size must be None or an int in [1, 1024], got {local_size!r}")
        self.ctx, self.tables = ctx, tables
        self.local_size = CROWD_ANIM.local_size if local_size is None else local_size
        self._owner = Owner(ctx, name)
        entries = np.asarray(entries, np.uint32).reshape(-1, 4)
        try:
            o, t = self._owner, tables
            ibm = np.asarray(inverse_binds, np.float32).reshape(-1, 4, 4)
            if not len(ibm):
                ibm = np.eye(4, dtype=np.float32)[None]
            data = {"channels": t.channels, "times": t.times, "values": t.values, "node_channels": t.node_channels,
                    "nodes": t.nodes, "entries": entries if len(entries) else np.zeros((1, 4), np.uint32),
                    "inverse_binds": ibm.transpose(0, 2, 1).copy()}          # std430 mat4: column-major
            with ctx.batched_uploads():
                self._static = {key: o.own(M.device_buffer(ctx, d, M.STORAGE, name=f"{name} {key}"))
                                for key, d in data.items()}
            self.pipeline = o.own(ComputePipeline(
                ctx, CROWD_ANIM, max_sets=max_sets,
                specialization=None if local_size is None else {CROWD_ANIM_LOCAL_SIZE_ID: local_size}))
        except BaseException:
            self._owner.destroy()
            raise
        self._push = np.zeros(1, CROWD_ANIM_PUSH)
        self._push["node_count"] = len(t.order)
        self._push["entry_count"] = len(entries)
        self._push["palette_width"] = palette_width

    def make_set(self, params, transforms, palettes):
        """A descriptor set over this pass's buffers and a user's per-pose inputs and output (class docstring)."""
        return self.pipeline.make_set({**self._static, "instances": params, "transforms": transforms,
                                       "palettes": palettes})

    def record(self, cb, dset, *, time: float, first: int, count: int) -> None:
        """Dispatch poses [first, first + count) of ``dset`` at the clock ``time`` (pose time = phase + speed x
        time, wrapped by its duration when that is > 0). The caller records the barriers around it."""
        self.pipeline.bind(cb, dset)
        push = self._push
        push["time"] = time
        per = MAX_GROUPS * self.local_size
        for lo in range(first, first + count, per):
            n = min(per, first + count - lo)
            push["first_instance"], push["instance_count"] = lo, n
            self.pipeline.push(cb, vk.ffi.from_buffer(push))
            vk.vkCmdDispatch(cb, -(-n // self.local_size), 1, 1)

    def destroy(self) -> None:
        self._owner.destroy()


class CrowdAnimation:
    """GPU clip sampling and palettes for a crowd runtime (see the module docstring). ``clips``: the clips an
    instance may play (default: the scene's animations), addressed by index, name or the clip itself."""

    def __init__(self, rt, *, clips: list[AnimationClip] | None = None):
        if rt.crowd is None:
            raise UsageError("CrowdAnimation needs a crowd runtime: MorphRuntime(..., instances=N)")
        self.rt, self.ctx, self.crowd = rt, rt.ctx, rt.crowd
        crowd: CrowdState = self.crowd
        scene = crowd.scene
        self.clips = list(scene.animations if clips is None else clips)
        self.tables = ClipTables(scene, self.clips)
        N, slots = crowd.count, rt.slots
        # palette blocks: one per distinct skin (same joints and inverse binds), as CrowdState aliases them
        self._first: dict[int, int] = {}
        keys: dict[tuple[bytes, bytes], int] = {}
        entries, ibms = [], []
        width = 0
        for si, s in enumerate(scene.skins):
            key = (np.asarray(s.joints).tobytes(), np.asarray(s.inverse_bind_matrices).tobytes())
            if key in keys:
                self._first[si] = keys[key]
                continue
            keys[key] = self._first[si] = width
            for j, node in enumerate(s.joints):
                entries.append((self.tables.pos[node], len(ibms), width + j, 0))
                ibms.append(np.asarray(s.inverse_bind_matrices[j], np.float64))
            width += len(s.joints)
        # model matrices of the rigid primitives' nodes (world, the instance transform included): one more column
        # each, identity in place of an inverse bind, so a draw of a rigid part of a GPU-posed instance has it too
        self._model_column: dict[int, int] = {}
        rigid = sorted({inst.node for inst in rt.instances if not inst.prim.is_skinned})
        if rigid:
            eye = len(ibms)
            ibms.append(np.eye(4))
            for node in rigid:
                entries.append((self.tables.pos[node], eye, width, 0))
                self._model_column[node] = width
                width += 1
        self.palette_width = width
        # first column -> the lowest skin index with that block (the one CrowdState.skin_matrices caches)
        self._blocks = {v: k for k, v in sorted(self._first.items(), reverse=True)}
        self.entries = np.array(entries or [(0, 0, 0, 0)], np.uint32).reshape(-1, 4)
        # per instance: (clip or NO_CLIP, phase, speed, duration); a version per row moves when play/stop wrote it
        self._clip = np.full(N, NO_CLIP, np.uint32)
        self._phase = np.zeros(N, np.float64)
        self._speed = np.ones(N, np.float64)
        self.version = 0
        self._param_versions = np.zeros(N, np.int64)
        self._applied_params = np.full((slots, N), -1, np.int64)
        self._applied_transforms = np.full((slots, N), -1, np.int64)
        self._applied_skeleton = np.full((slots, N), -1, np.int64)
        self._applied_frame: list[tuple | None] = [None] * slots
        self.dispatches = [0] * slots    # per slot: how many times record() dispatched (CrowdSkinning follows it)
        # pose versions (motion vectors: CrowdSkinning(motion_vectors=True) compares them with the skeleton and
        # weight versions): per instance a stamp that moves on every record where the pose the GPU samples for it
        # may have changed -- its parameters (play), or the clock while it plays at a nonzero speed
        self._pose_versions = np.zeros(N, np.int64)
        self._pose_params = np.zeros(N, np.int64)     # the parameter versions the stamps have seen
        self._pose_clock: float | None = None
        self._pose_stamp = 0
        self._applied_clock: list[float | None] = [None] * slots
        self._owner = Owner(self.ctx, "crowd animation")
        self._last_serial = 0
        try:
            ctx, o = self.ctx, self._owner
            self.pose = o.own(ClipPosePass(ctx, self.tables, np.array(entries, np.uint32).reshape(-1, 4),
                                           np.array(ibms, np.float32).reshape(-1, 4, 4), width, max_sets=slots,
                                           name="crowd anim"))
            self.pipeline = self.pose.pipeline
            self.params = [o.own(M.host_buffer(ctx, 16 * N, M.STORAGE, name=f"crowd anim params slot {k}"))
                           for k in range(slots)]
            self.transforms = [o.own(M.host_buffer(ctx, 64 * N, M.STORAGE, name=f"crowd transforms slot {k}"))
                               for k in range(slots)]
            self.palettes = [o.own(M.host_buffer(ctx, 64 * N * max(1, width), M.STORAGE,
                                                 name=f"crowd anim palettes slot {k}")) for k in range(slots)]
            self._param_views = [b.view(np.uint32, 4 * N).reshape(N, 4) for b in self.params]
            self._transform_views = [b.view(np.float32, 16 * N).reshape(N, 4, 4) for b in self.transforms]
            self._palette_views = [b.view(np.float32, 16 * N * max(1, width)).reshape(N, max(1, width), 4, 4)
                                   for b in self.palettes]
            for v in self._param_views:
                v[:, 0] = NO_CLIP
            self._sets = [self.pose.make_set(self.params[k], self.transforms[k], self.palettes[k])
                          for k in range(slots)]
        except BaseException:
            self._owner.destroy()
            raise

    # ------------------------------------------------------------------ what instances play
    def clip_index(self, clip) -> int:
        if isinstance(clip, AnimationClip):
            for i, c in enumerate(self.clips):
                if c is clip:
                    return i
            raise UsageError(f"clip {clip.name!r} is not one of this CrowdAnimation's clips")
        if isinstance(clip, str):
            for i, c in enumerate(self.clips):
                if c.name == clip:
                    return i
            raise UsageError(f"no clip named {clip!r}; clips: {[c.name for c in self.clips]}")
        if isinstance(clip, bool) or not isinstance(clip, (int, np.integer)) or not 0 <= clip < len(self.clips):
            raise UsageError(f"clip {clip!r} out of range: {len(self.clips)} clips")
        return int(clip)

    def play(self, clip, *, phase=0.0, speed=1.0, rows=None) -> int:
        """Instances ``rows`` (None: all) play ``clip`` on the GPU from now on, at time phase + speed x clock
        (``phase``, ``speed``: scalars or one per row). Returns how many instances' parameters changed."""
        r = self.crowd._rows(rows)
        ci = self.clip_index(clip)
        ph, sp = (np.asarray(v, np.float64).reshape(-1) for v in (phase, speed))
        for what, v in (("phase", ph), ("speed", sp)):
            if len(v) not in (1, len(r)):
                raise UsageError(f"{what} must be one value or one per row: {len(r)} rows, {len(v)} values")
            if not np.isfinite(v).all():
                raise UsageError(f"{what} must be finite")
        ph, sp = np.broadcast_to(ph, r.shape), np.broadcast_to(sp, r.shape)
        self.crowd.set_gpu_posed(r, True)
        diff = (self._clip[r] != ci) | (self._phase[r] != ph) | (self._speed[r] != sp)
        hit = r[diff]
        if len(hit):
            self._clip[hit], self._phase[hit], self._speed[hit] = ci, ph[diff], sp[diff]
            self.version += 1
            self._param_versions[hit] = self.version
        return len(hit)

    def stop(self, rows=None) -> int:
        """Instances ``rows`` (None: all) go back to their CPU pose (``CrowdState.local``)."""
        return self.crowd.set_gpu_posed(self.crowd._rows(rows), False)

    def times(self, clock: float) -> np.ndarray:
        """(instances,) float64 clip time of every instance at ``clock``, as the shader computes it (the CPU
        fallback and the tests sample ``CrowdState.play`` at these)."""
        d = np.where(self._clip == NO_CLIP, 0.0, self.tables.durations[np.minimum(self._clip, len(self.clips) - 1)]
                     if len(self.clips) else 0.0)
        t = self._phase + self._speed * float(np.float32(clock))
        return np.where(d > 0, t - d * np.floor(t / np.where(d > 0, d, 1.0)), t)

    def sample_weights(self, clock: float) -> int:
        """The GPU-posed instances' morph weights from their clips' weight channels at ``clock``, on the CPU
        (``CrowdState.play_weights``: vectorized per clip and channel); returns how many instances changed."""
        rows = np.flatnonzero(self.crowd.gpu_posed)
        if not len(rows) or not any(c.morph_channels for c in self.clips):
            return 0
        return self.crowd.play_weights(self.clips, self._clip[rows], self.times(clock)[rows], rows=rows)

    @property
    def pose_versions(self) -> np.ndarray:
        """(instances,) int64, read-only: per instance a version of its GPU-sampled pose as of the last ``record``
        (any slot). It moves when the instance's parameters changed (``play``) or the clock moved while it plays
        at a nonzero speed, so two records with equal pose versions (and equal skeleton versions: transforms, who
        poses it, hand poses) wrote the same palettes for it. Conservative: a clock that comes back to an earlier
        value is a new version."""
        v = self._pose_versions.view()
        v.flags.writeable = False
        return v

    def _stamp_poses(self, clock: float) -> None:
        hit = self._param_versions != self._pose_params
        if clock != self._pose_clock:      # speed 0: time = phase whatever the clock (0 x a finite float32 is 0)
            hit |= self.crowd._gpu_posed & (self._speed != 0)
            self._pose_clock = clock
        if hit.any():
            self._pose_stamp += 1
            self._pose_versions[hit] = self._pose_stamp
            self._pose_params[hit] = self._param_versions[hit]

    @property
    def clip_of(self) -> np.ndarray:
        """(instances,) clip index per instance (``NO_CLIP``: none set)."""
        v = self._clip.view()
        v.flags.writeable = False
        return v

    def palette_first(self, skin: int) -> int:
        """First mat4 column of ``skin``'s palette block in an instance's row."""
        return self._first[skin]

    def model_column(self, node: int) -> int:
        """The mat4 column holding the model matrix (world, the instance transform included) of ``node``, a node
        with a rigid (unskinned) primitive, in an instance's row."""
        if node not in self._model_column:
            raise UsageError(f"node {node!r} has no rigid primitive; rigid nodes: {sorted(self._model_column)}")
        return self._model_column[node]

    def palette_view(self, slot: int = 0) -> np.ndarray:
        """(instances, palette_width, 4, 4) float32 math matrices of ``slot``'s palettes (a transposed view of the
        mapped memory: read it after the frame's fence)."""
        return self._palette_views[self.rt._slot(slot)].transpose(0, 1, 3, 2)

    # ------------------------------------------------------------------ per frame
    def record(self, cb, slot: int = 0, *, time: float, consumer: str = "compute") -> int:
        """Bring ``slot``'s palettes to ``time`` (see the module docstring); returns how many instances were
        dispatched (0 with nothing recorded at all when nothing moved)."""
        slot = self.rt._slot(slot)
        crowd = self.crowd
        if not np.isfinite(time):
            raise UsageError(f"time must be finite, got {time!r}")
        clock = float(np.float32(time))
        self._stamp_poses(clock)            # before level 1: the stamps follow the records, not the slots
        posed = crowd._gpu_posed
        any_gpu = bool(posed.any())
        frame = (crowd.version, self.version, clock if any_gpu else None)
        if self._applied_frame[slot] == frame:
            return 0
        barrier = barriers.CONSUMERS.get(consumer)
        if barrier is None:
            raise UsageError(f"consumer must be one of {sorted(barriers.CONSUMERS)}, got {consumer!r}")
        skel = crowd._skeleton_versions
        moved = np.flatnonzero(skel != self._applied_skeleton[slot])
        rows = np.union1d(moved, np.flatnonzero(self._param_versions != self._applied_params[slot]))
        if len(rows):                       # parameters: the clip only where the GPU poses the instance
            pv = self._param_views[slot]
            clip = np.where(posed[rows], self._clip[rows], NO_CLIP).astype(np.uint32)
            dur = np.where(clip == NO_CLIP, 0.0,
                           self.tables.durations[np.minimum(clip, max(0, len(self.clips) - 1))]
                           if len(self.clips) else 0.0)
            pv[rows, 0] = clip
            pv[rows, 1:4] = np.stack([self._phase[rows], self._speed[rows], dur], 1).astype(np.float32).view(np.uint32)
            self._applied_params[slot, rows] = self._param_versions[rows]
        tv = crowd._transform_versions
        trows = np.flatnonzero(tv != self._applied_transforms[slot])
        if len(trows):                      # std430 mat4 is column-major: the math matrix transposed
            self._transform_views[slot][trows] = crowd._transform[trows].transpose(0, 2, 1)
            self._applied_transforms[slot, trows] = tv[trows]
        cpu_rows = moved[~posed[moved]]
        if len(cpu_rows):                   # posed on the CPU: its palettes, written by the host
            view = self._palette_views[slot]
            for first, skin in self._blocks.items():
                pal = crowd.skin_matrices(skin)
                view[cpu_rows, first:first + pal.shape[1]] = pal[cpu_rows].transpose(0, 1, 3, 2)
            if self._model_column:
                nodes = list(self._model_column)
                cols = list(self._model_column.values())
                world = crowd.world_matrices()[cpu_rows][:, nodes]          # (rows, rigid nodes, 4, 4)
                view[cpu_rows[:, None], np.array(cols)[None]] = world.transpose(0, 1, 3, 2)
        self._applied_skeleton[slot, moved] = skel[moved]
        dispatched = 0
        # the GPU-posed palettes depend on the clock, their parameters, transforms and who poses them: when none
        # of those moved for this slot (only weights did, say), its palettes are current and nothing is recorded
        if any_gpu and (clock != self._applied_clock[slot] or len(rows) or len(trows)):
            gpu_rows = np.flatnonzero(posed)
            lo, hi = int(gpu_rows[0]), int(gpu_rows[-1]) + 1
            barriers.record(cb, barriers.PREVIOUS_FRAME_TO_ANIM)
            self.pose.record(cb, self._sets[slot], time=clock, first=lo, count=hi - lo)
            dispatched = len(gpu_rows)
            self.dispatches[slot] += 1
            self._applied_clock[slot] = clock
        if dispatched:
            barriers.record(cb, barrier)    # palettes read by skinning (compute) or skin.vert (vertex)
            self._last_serial = self.ctx.next_serial()
        self._applied_frame[slot] = frame
        return dispatched

    def destroy(self) -> None:
        """Release (deferred until the host reported the last recording complete, as MorphRuntime.destroy)."""
        self.ctx.retire("crowd animation", self._owner.destroy, self._last_serial)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()
