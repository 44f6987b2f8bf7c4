"""``vkmorph bench``: the morph pass against the bandwidth floor of the device it runs on.

Two byte counts per case (``work_bytes_of``, ``format_bytes_of``):

    work unit (format-independent) = V x (48 B base read + 36 B written) + active deltas x 40 B
    format floor = V x (48 B base read + 48 B (workgroup kernel) or 36 B (per-vertex kernel) written)
                   + active deltas x 36 B (full) or 18 B (compact) + block metadata (workgroup: every chunk header
                   and table entry, a 32 B vertex mask per active block; per-vertex: every vertex's record)

The format floor is what this format's kernel must move at the least; ``roofline_fraction`` = format floor at
the copy bandwidth measured in the same window / morph time (1.0 = as fast as a copy of those bytes), the
headline; ``work_fraction`` the same for the work unit (comparable across formats; above 1 means the format
moves fewer bytes than the work unit counts).

Method (this GPU changes speed under load; only same-window ratios mean anything):
- warm-up: frames are submitted untimed until the device has run for ``warm_s`` seconds;
- each try records many frames in ONE command buffer: F morph frames (every frame really changes a weight, so
  each records its weight upload, the barriers and the dispatch), then F frames of a grid-stride uvec4 copy of
  exactly the format floor's bytes (half read, half written) behind the same kind of barrier; the order
  alternates per try; timestamps bracket each run of F frames;
- per try the ratio copy time / morph time; reported: the median over tries and its spread (min, max);
- the copy reference is checked against the best copy of the row's own byte size (``CopyCeilings``: the same
  copy kernel over the same bytes, best over COPY_CEILING_WINDOWS windows, measured once per size and cached):
  a copy's bandwidth depends on its size (on the H200 40-90 MB copies reach 0.35-0.5 of a 256 MB one in every
  window, a property of the size, not noise), so the 256 MB device ceiling made most rows repeat without ever
  passing. A row whose same-window copy reached less than COPY_OK of its size's best is run again (up to
  COPY_RETRIES times, the best window kept, while the bench's repeats stay within COPY_REPEAT_BUDGET_S) and
  flagged ``copy_low`` if it stays below. Each row reports both shares: ``copy_ratio`` (of its size's best,
  the rule) and ``copy_device_ratio`` (of the 256 MB device ceiling).
Device ceilings: the grid-stride copy and vkCmdCopyBuffer over 256 MB buffers, after warm-up.
numpy: what a user would write (``vkmorph.bake.SparseMorph``: sparse float32 deltas per target, the active
targets only), every instance of the case (nothing extrapolated), one warm-up call then the median of
NUMPY_REPEATS timed calls; speedup = numpy / morph medians, its spread min(numpy)/max(morph) to
max(numpy)/min(morph). ``max_error``: the GPU against the dense float64 reference ``morph_reference``.
Also per case: CPU build time of the runtime (layout + upload), GPU memory (and the previous CSR layout's, and
dense storage's).
Baking: ``vkmorph.bake.measure_bake_throughput`` on RobotExpressive's first clip (world space): the GPU bake,
the numpy baseline and the readback alone (the bake's own readback of the same bytes: on a device with
host-cached device-local memory the host's copy out of the mapped output, else vkCmdCopyBuffer to host memory and
that copy), each warmed up and timed BAKE_REPEATS times, frame-vertices per second with min-max, wall and
process CPU time.
CPU per frame: ``MorphRuntime.record`` for N primitives, recorded without submitting, with the weights
unchanged, all changed through the bulk ``pose.set_flat``, and all changed node by node (``pose.set_weights``):
thread CPU time (the figure the goals use) beside wall time, median and min-max.
Output slots (issue 13; ``--only slots`` runs just this): per frame the morph (every weight changed) into slot
frame % slots and a draw reading that whole slot (``DrawConsumer``), 3 frames in flight emulated with events in
the one command buffer (``FrameFences``); GPU time per frame with 1 slot and with 3, same window, and the ratio.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..asset.model import STATIC_VERTEX, MeshAsset, MeshPrimitiveAsset, MorphTargetAsset, NodeAsset, SceneAsset

FRAME_MS = 1000.0 / 60.0
WORK_UNIT_MODEL = "work unit = V x (48 B base read + 36 B written) + active deltas x 40 B"
LEGACY_BYTE_MODEL = "floor bytes = V x (48 B base read + 36 B written) + active deltas x 40 B"  # reports < 12-01
BYTE_MODEL = (f"{WORK_UNIT_MODEL}; format floor = V x (48 B read + 48 B (workgroup) or 36 B (per-vertex) "
              "written) + active deltas x 36 B (full) or 18 B (compact) + block metadata (workgroup: chunk headers, "
              "table entries, 32 B mask per active block; per-vertex: each vertex's record)")
DELTA_BYTES = {"full": 36, "compact": 18}      # what the kernels read per delta (morph/gpu_data.py)
COPY_OK, COPY_RETRIES = 0.8, 2
COPY_CEILING_WINDOWS = 3      # windows whose best copy is a byte size's ceiling (CopyCeilings)
COPY_REPEAT_BUDGET_S = 120.0  # wall seconds all of a bench's row repeats may take together
NUMPY_REPEATS = 5


def work_bytes_of(vertices: int, active_deltas: int) -> int:
    """The work unit (WORK_UNIT_MODEL): format-independent bytes of a morph."""
    return vertices * (48 + 36) + active_deltas * 40


floor_bytes_of = work_bytes_of    # the name bench/ab.py and bench/variants.py use


def format_bytes_of(vertices: int, active_deltas: int, delta_format: str, kernel: str, *, chunk_bytes: int = 0,
                    table_bytes: int = 0, active_blocks: int = 0, record_bytes: int = 0) -> int:
    """The format floor (BYTE_MODEL): bytes this format's kernel must move, metadata as the layout has it."""
    written = 48 if kernel == "workgroup" else 36
    meta = chunk_bytes + table_bytes + 32 * active_blocks if kernel == "workgroup" else record_bytes
    return vertices * (48 + written) + active_deltas * DELTA_BYTES[delta_format] + meta

COPY_MB = 256
WARM_MAX_S = 5.0             # wall-time cap of one warm-up (WindowTimer.same_window)


@dataclass
class Case:
    vertices: int
    targets: int
    coverage: float
    active: int
    pattern: str                 # random | clustered | model name
    instances: int = 1


@dataclass
class Row:
    case: str
    vertices: int
    targets: int
    coverage: float
    active: int
    pattern: str
    delta_format: str
    deltas: int
    active_deltas: int
    work_floor_mb: float      # the work unit's bytes (WORK_UNIT_MODEL)
    format_floor_mb: float    # this format's kernel's bytes (BYTE_MODEL)
    morph_us: float
    format_floor_us: float    # format floor at the same-window copy bandwidth
    work_floor_us: float
    roofline_fraction: float  # format_floor_us / morph_us, median over tries (the headline)
    fraction_min: float
    fraction_max: float
    work_fraction: float      # work_floor_us / morph_us
    copy_gbps: float          # the same-window copy reference
    copy_ratio: float         # copy_gbps / the best copy of this row's byte size (CopyCeilings): the rule
    copy_runs: int            # how many windows the row took (repeated while copy_ratio < COPY_OK)
    copy_low: bool            # still below COPY_OK after the repeats: the fraction is against a slow reference
    frames_per_try: int
    numpy_ms: float           # sparse float32 numpy, every instance, median of NUMPY_REPEATS
    numpy_ms_min: float
    numpy_ms_max: float
    speedup_vs_numpy: float
    speedup_min: float
    speedup_max: float
    max_error: float
    numpy_max_error: float
    gpu_mib: float
    previous_mib: float
    dense_mib: float
    build_s: float
    kernel: str = ""          # "workgroup" or "per-vertex" (vkmorph.render.morph_batch.kernel_for)
    block_fill: float = 1.0   # the batch's mean (chunk, target) block fill, which picks the kernel on a GPU
    copy_ceiling_gbps: float = 0.0   # the best copy of this row's byte size (what copy_ratio is against)
    copy_device_ratio: float = 0.0   # copy_gbps / the device's 256 MB copy ceiling (reported, not the rule)


# ------------------------------------------------------------------------------------------------ synthetic data
def synthetic_primitive(V: int, T: int, coverage: float, pattern: str = "random", seed: int = 0
                        ) -> MeshPrimitiveAsset:
    """V vertices, T targets each moving ``coverage`` of the vertices: ``random`` vertices, or ``clustered``
    (three contiguous runs of the vertex order per target, like a face rig's regions)."""
    rng = np.random.default_rng(seed)
    v = np.zeros(V, STATIC_VERTEX)
    v["position"] = rng.random((V, 3), np.float32)
    v["normal"] = (0.0, 0.0, 1.0)
    v["tangent"] = (1.0, 0.0, 0.0, 1.0)
    v["texcoord"] = v["position"][:, :2]
    n = max(1, int(V * coverage))
    targets = []
    for k in range(T):
        if pattern == "clustered":
            runs = np.diff(np.r_[0, np.sort(rng.integers(0, n + 1, 2)), n])
            idx = np.concatenate([np.arange(s, s + r) for s, r in zip(rng.integers(0, V - runs + 1), runs)])
            idx = np.unique(idx)
        else:
            idx = np.flatnonzero(rng.random(V) < coverage) if V > 4096 else rng.choice(V, n, replace=False)
        d = np.zeros((V, 3), np.float32)
        d[idx] = rng.normal(0, 0.01, (len(idx), 3))
        nd = np.zeros((V, 3), np.float32)
        nd[idx] = rng.normal(0, 0.05, (len(idx), 3))
        targets.append(MorphTargetAsset(f"t{k}", d, nd, None))
    return MeshPrimitiveAsset(vertices=v, indices=np.zeros(0, np.uint32), morph_targets=targets)


def synthetic_scene(prims: list[MeshPrimitiveAsset]) -> SceneAsset:
    """One node per primitive; the same primitive object may repeat (instances of one mesh)."""
    meshes, index = [], {}
    for p in prims:
        if id(p) not in index:
            index[id(p)] = len(meshes)
            meshes.append(MeshAsset(f"m{len(meshes)}", [p]))
    return SceneAsset(nodes=[NodeAsset(f"n{i}", mesh=index[id(p)]) for i, p in enumerate(prims)],
                      meshes=meshes, skins=[], animations=[], roots=list(range(len(prims))))


MODELS = {"MorphStressTest": "MorphStressTest/MorphStressTest.gltf",
          "RobotExpressive": "RobotExpressive/RobotExpressive.glb", "SimpleMorph": "SimpleMorph/SimpleMorph.gltf"}


def find_model(name: str) -> Path | None:
    """A third-party model: $VKMORPH_ASSETS, the repository's tests/assets, or ../shared/assets."""
    root = Path(__file__).resolve().parents[2]
    folders = [os.environ.get("VKMORPH_ASSETS"), root / "tests" / "assets", root.parent / "shared" / "assets"]
    for folder in folders:
        if folder and (Path(folder) / MODELS[name]).is_file():
            return Path(folder) / MODELS[name]
    return None


def model_primitives(name: str) -> list[MeshPrimitiveAsset]:
    """The morphing primitives of a third-party model (MorphStressTest, RobotExpressive); [] when absent."""
    from ..asset.importer import load_scene

    path = find_model(name)
    if path is None:
        return []
    scene = load_scene(str(path))
    return [p for m in scene.meshes for p in m.primitives if p.morph_targets]


# ------------------------------------------------------------------------------------------------ timing
def driver_string(ctx) -> str:
    """The driver version as its vendor writes it: NVIDIA packs 10.8.8.6 bits, others use VK_MAKE_VERSION."""
    from ..gpu.vk import vk

    v = ctx.info.driver_version
    if vk.vkGetPhysicalDeviceProperties(ctx.physical_device).vendorID == 0x10DE:
        return f"{v >> 22}.{(v >> 14) & 0xFF}.{(v >> 6) & 0xFF}"
    return f"{v >> 22}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


class WindowTimer:
    """Runs of recorded frames timed with timestamps inside one command buffer (one time window); the query
    pools are vkmorph.gpu.timestamps' (shared with the demo), one per number of segments."""

    def __init__(self, ctx):
        self.ctx = ctx
        self._stamps: dict[int, object] = {}
        self.gpu_s = 0.0
        self.before_run = None      # called before each command buffer is recorded (e.g. FrameFences.begin)

    def run(self, segments, frames: int) -> list[float]:
        """Record ``frames`` frames of each segment back to back; returns GPU ms per frame of each."""
        from ..gpu.timestamps import BOTTOM, TOP, Timestamps

        n = len(segments) + 1
        if n not in self._stamps:
            self._stamps[n] = Timestamps(self.ctx, count=n)
        ts = self._stamps[n]

        def rec(cb):
            if self.before_run is not None:
                self.before_run()
            ts.reset(cb)
            ts.write(cb, 0, 0, TOP)
            for i, seg in enumerate(segments):
                for _ in range(frames):
                    seg(cb)
                ts.write(cb, i + 1, 0, BOTTOM)
        self.ctx.submit_and_wait(rec, timeout_s=600.0)
        ms = np.diff([0.0, *ts.read_ms(0)])
        self.gpu_s += float(ms.sum()) * 1e-3
        return [float(x) / frames for x in ms]

    def same_window(self, a, b, tries: int, warm_s: float, try_ms: float, min_frames: int = 2,
                    max_frames: int = 400):
        """Warm up, then per try F frames of ``a`` and F of ``b`` (order alternating). Returns (F, [(a_ms, b_ms)])."""
        probe = self.run([a, b], min_frames)
        start, t0 = self.gpu_s, time.perf_counter()
        best, steady = float("inf"), 0
        # warm_s of GPU time, then on until the reference (b) stops getting faster: three probes in a row none of
        # them more than 3 % faster than the best before it (a slower probe counts too: this waits out a clock
        # ramp, it does not wait for a fast state), at most WARM_MAX_S of wall time. Ratios are immune to the
        # GPU's clock state, absolute figures (heads per frame) are not; the H200 also sits in a state ~2.5x
        # slower for a whole window at times, which no warm-up here has cured (bench/heads-2026-11-30-h200.txt):
        # reports show each window's copy bandwidth so such a window can be recognized
        while warm_s > 0 and (self.gpu_s - start < warm_s or steady < 3) and time.perf_counter() - t0 < WARM_MAX_S:
            frames = int(np.clip(0.05 * 1e3 / max(sum(probe), 1e-6), min_frames, 4 * max_frames))
            probe = self.run([a, b], frames)
            steady = steady + 1 if probe[1] >= 0.97 * best else 0
            best = min(best, probe[1])
        frames = int(np.clip(try_ms / max(probe[0], 1e-6), min_frames, max_frames))
        out = []
        for t in range(tries):
            if t % 2:
                y, x = self.run([b, a], frames)
            else:
                x, y = self.run([a, b], frames)
            out.append((x, y))
        return frames, out

    def destroy(self):
        for ts in self._stamps.values():
            ts.destroy()
        self._stamps.clear()


class CopyFrames:
    """One frame = a grid-stride uvec4 copy of ``nbytes`` (half read, half written) + a compute barrier."""

    def __init__(self, ctx, nbytes: int):
        from ..gpu import memory as M
        from ..gpu.interface import COPY, COPY_PUSH
        from ..gpu.pipeline import ComputePipeline

        self.n = max(1, nbytes // 32)
        self.src = M.device_buffer(ctx, None, M.STORAGE | M.TRANSFER_SRC, size=16 * self.n)
        self.dst = M.device_buffer(ctx, None, M.STORAGE | M.TRANSFER_DST, size=16 * self.n)
        self.pipe = ComputePipeline(ctx, COPY, max_sets=1)
        self.dset = self.pipe.make_set({"src": self.src, "dst": self.dst})
        self.push = np.array([(self.n, 0)], COPY_PUSH)
        self.ptr = M.cffi_pointer(self.push)
        self.groups = int(min(self.pipe.groups(self.n), 8192))     # grid-stride: enough to fill any GPU

    @staticmethod
    def _serialize(cb):
        """Each frame's copy finishes before the next one (kernel or vkCmdCopyBuffer) writes the same buffer."""
        from ..gpu import barriers

        barriers.record(cb, barriers.COPIES_TO_COPIES)

    def frame(self, cb):
        from ..gpu.vk import vk

        self.pipe.bind(cb, self.dset)
        self.pipe.push(cb, self.ptr)
        vk.vkCmdDispatch(cb, self.groups, 1, 1)
        self._serialize(cb)

    def transfer_frame(self, cb):
        from ..gpu.vk import vk

        vk.vkCmdCopyBuffer(cb, self.src.handle, self.dst.handle, 1,
                           [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=16 * self.n)])
        self._serialize(cb)

    def destroy(self):
        for o in (self.pipe, self.src, self.dst):
            o.destroy()


def device_ceilings(ctx, timer: WindowTimer, quick: bool) -> dict:
    """Best copy bandwidth: grid-stride uvec4 copy kernel and vkCmdCopyBuffer, COPY_MB per buffer."""
    mb = 32 if quick else COPY_MB
    cp = CopyFrames(ctx, 2 * mb * 2**20)
    frames, tries = timer.same_window(cp.frame, cp.transfer_frame, 3, 0.0 if quick else 0.5, 20.0, 1, 50)
    nbytes = 2 * 16 * cp.n
    kern = max(nbytes / (x * 1e-3) / 1e9 for x, _ in tries)
    xfer = max(nbytes / (y * 1e-3) / 1e9 for _, y in tries)
    cp.destroy()
    return {"buffer_mb": mb, "copy_kernel_gbps": kern, "copy_buffer_gbps": xfer}


class CopyCeilings:
    """The best copy bandwidth per byte size: the grid-stride copy (``CopyFrames``) of exactly that many bytes,
    best over COPY_CEILING_WINDOWS windows (each warmed up as the rows are), measured the first time a size is
    asked for and cached (a row repeated for a slow window reuses it). Also keeps the wall time spent on row
    repeats, which COPY_REPEAT_BUDGET_S bounds."""

    def __init__(self, ctx, timer: WindowTimer, warm_s: float, try_ms: float, windows: int = COPY_CEILING_WINDOWS,
                 repeat_budget_s: float = COPY_REPEAT_BUDGET_S):
        self.ctx, self.timer, self.warm_s, self.try_ms, self.windows = ctx, timer, warm_s, try_ms, windows
        self.cache: dict[int, float] = {}
        self.measure_s = 0.0          # wall seconds spent measuring sizes
        self.repeat_s = 0.0           # wall seconds spent repeating rows
        self.repeat_budget_s = repeat_budget_s

    def of(self, nbytes: int) -> float:
        cp = CopyFrames(self.ctx, nbytes)
        try:
            key = 2 * 16 * cp.n          # the bytes the copy really moves (what the row's reference moves)
            if key not in self.cache:
                t0 = time.perf_counter()
                best = 0.0
                for k in range(self.windows):     # the first window warms the GPU up, the next ones follow it
                    _frames, tries = self.timer.same_window(cp.frame, cp.frame, 1, self.warm_s if k == 0 else 0.0,
                                                            self.try_ms)
                    best = max(best, *(key / (ms * 1e-3) / 1e9 for pair in tries for ms in pair if ms > 0))
                self.cache[key] = best
                self.measure_s += time.perf_counter() - t0
            return self.cache[key]
        finally:
            cp.destroy()

    def may_repeat(self) -> bool:
        return self.repeat_s < self.repeat_budget_s


# ------------------------------------------------------------------------------------------------ cases
def _changing_record(rt, weights: np.ndarray):
    """A frame that changes every weight (alternating scale), so each frame does the whole work."""
    flip = [0]
    scaled = (weights * 0.9).astype(np.float32)

    def rec(cb):
        flip[0] ^= 1
        rt.pose.set_flat(scaled if flip[0] else weights)
        rt.record(cb)
    return rec


def previous_layout_bytes(V: int, D: int, S: int, out_bytes: int, fmt: str) -> int:
    """GPU bytes of the CSR layout this kernel replaced (base 48 B + offset 4 B + output word 4 B per vertex,
    64 B (full) or 24 B (compact) per delta, weights, scales), for the memory comparison."""
    return V * 56 + 4 + D * (64 if fmt == "full" else 24) + 4 * S + out_bytes + (16 * S if fmt == "compact" else 0)


def numpy_morph_times(rt, scene, repeats: int = NUMPY_REPEATS) -> tuple[list[float], list]:
    """Seconds of ``repeats`` numpy morphs of every morphing instance at the runtime's current weights (sparse
    float32, ``vkmorph.bake.SparseMorph``, one per distinct primitive, built untimed), after one warm-up call;
    the last call's (positions, normals, tangents) per instance."""
    from ..bake import SparseMorph

    made: dict[int, SparseMorph] = {}
    jobs = []
    for inst in rt.morphing:
        sm = made.get(id(inst.prim)) or made.setdefault(id(inst.prim), SparseMorph(inst.prim))
        jobs.append((sm, rt.pose.flat[rt.pose.slice_of(inst.node)].copy()))
    out = [sm(w) for sm, w in jobs]
    secs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = [sm(w) for sm, w in jobs]
        secs.append(time.perf_counter() - t0)
    return secs, out


def _format_metadata(rt, prims_by_node: list, active: int) -> dict:
    """Block metadata the kernel reads (format_bytes_of): chunk headers and table entries (all of them), vertex
    masks of active blocks, or the per-vertex records, from the batch's buffer sizes and the active targets."""
    from ..morph.gpu_data import CHUNK, nonzero_vertices

    g = rt.gpu_bytes
    blocks, counted = 0, {}
    for prim in prims_by_node:
        if id(prim) not in counted:
            counted[id(prim)] = sum(len(np.unique(nonzero_vertices(prim, t) // CHUNK)) for t in range(active))
        blocks += counted[id(prim)]
    return {"chunk_bytes": g.get("chunks", 0), "table_bytes": g.get("table", 0), "active_blocks": blocks,
            "record_bytes": g.get("vertex_records", 0)}


def bench_case(ctx, timer, case: Case, prims: list, fmt: str, tries: int, warm_s: float, try_ms: float,
               ceiling_gbps: float = 0.0, *, ceilings: CopyCeilings | None = None, device_gbps: float = 0.0) -> Row:
    """One row; repeated (up to COPY_RETRIES more windows, the best kept) while the same-window copy reference
    is below COPY_OK of the best copy of the row's byte size (``ceilings``; or the fixed ``ceiling_gbps``) and
    the repeat budget lasts. ``device_gbps``: the 256 MB device ceiling, for the reported second share."""
    best = None
    for run in range(1 + COPY_RETRIES):
        t0 = time.perf_counter()
        r = _bench_case_once(ctx, timer, case, prims, fmt, tries, warm_s, try_ms, ceiling_gbps, ceilings,
                             device_gbps)
        if run and ceilings is not None:
            ceilings.repeat_s += time.perf_counter() - t0
        if best is None or r.copy_gbps > best.copy_gbps:
            best = r
        best.copy_runs = run + 1
        if best.copy_ceiling_gbps <= 0 or best.copy_ratio >= COPY_OK or \
                (ceilings is not None and not ceilings.may_repeat()):
            break
    best.copy_low = best.copy_ceiling_gbps > 0 and best.copy_ratio < COPY_OK
    return best


def _bench_case_once(ctx, timer, case: Case, prims: list, fmt: str, tries: int, warm_s: float, try_ms: float,
                     ceiling_gbps: float, ceilings: CopyCeilings | None = None, device_gbps: float = 0.0) -> Row:
    from ..morph.gpu_data import nonzero_vertices
    from ..morph.reference import morph_reference
    from ..render.morph_pass import MorphRuntime

    scene = synthetic_scene(prims)
    t0 = time.perf_counter()
    rt = MorphRuntime(ctx, scene, delta_format=fmt)
    build_s = time.perf_counter() - t0
    cp = None
    try:
        w = np.zeros(len(rt.pose.flat), np.float32)
        active_deltas = 0
        counted: dict[int, int] = {}
        node_prims = []
        for node in range(len(scene.nodes)):
            sl = rt.pose.slice_of(node)
            prim = scene.meshes[scene.nodes[node].mesh].primitives[0]
            node_prims.append(prim)
            w[sl.start:sl.start + case.active] = np.linspace(0.3, 0.9, case.active)
            if id(prim) not in counted:
                counted[id(prim)] = sum(len(nonzero_vertices(prim, t)) for t in range(case.active))
            active_deltas += counted[id(prim)]
        V = rt.total_vertices
        kernel = rt.batch.kernel_family
        work_bytes = work_bytes_of(V, active_deltas)
        fmt_bytes = format_bytes_of(V, active_deltas, fmt, kernel, **_format_metadata(rt, node_prims, case.active))
        if ceilings is not None:        # measured before the row's window (cached per size)
            ceiling_gbps = ceilings.of(fmt_bytes)
        cp = CopyFrames(ctx, fmt_bytes)
        frames, res = timer.same_window(_changing_record(rt, w), cp.frame, tries, warm_s, try_ms)
        fr = [c / m for m, c in res]
        morph_us = float(np.median([m for m, _ in res])) * 1e3
        floor_us = float(np.median([c for _, c in res])) * 1e3
        copy_gbps = 2 * 16 * cp.n / (floor_us * 1e-6) / 1e9
        secs, outs = numpy_morph_times(rt, scene)
        np_ms = float(np.median(secs)) * 1e3
        morphs = [m for m, _ in res]
        inst = rt.morphing[0]
        p, _, _ = morph_reference(inst.prim, rt.pose.flat[rt.pose.slice_of(inst.node)].astype(np.float64))
        out = rt.read_vertices(inst)
        err = float(np.abs(out["position"] - p).max())
        np_err = float(np.abs(outs[0][0] - p).max())
        gpu_b = sum(rt.gpu_bytes.values())
        S = len(rt.pose.flat)
        prev = previous_layout_bytes(V, rt.total_deltas, S, rt.gpu_bytes["output"], fmt)
        dense = sum(pr.vertex_count * (48 + len(pr.morph_targets) * 24 + pr.vertices.dtype.itemsize) for pr in prims)
        D = rt.total_deltas
        fill = rt.batch.block_fill
    finally:
        if cp is not None:
            cp.destroy()
        rt.destroy()
    name = f"{case.vertices // 1000:,}k x {case.targets}, {case.coverage:.0%} {case.pattern}, {case.active} active"
    if case.instances > 1:
        name = f"{case.pattern} x {case.instances} ({V:,} vertices), {case.active} active"
    work_us = floor_us * work_bytes / fmt_bytes
    return Row(name, V, case.targets, case.coverage, case.active, case.pattern, fmt, D, active_deltas,
               work_bytes / 1e6, fmt_bytes / 1e6, morph_us, floor_us, work_us, float(np.median(fr)), float(min(fr)),
               float(max(fr)), work_us / morph_us, copy_gbps, copy_gbps / ceiling_gbps if ceiling_gbps > 0 else 1.0,
               1, False, frames, np_ms, min(secs) * 1e3, max(secs) * 1e3, np_ms / (morph_us * 1e-3),
               min(secs) / (max(morphs) * 1e-3), max(secs) / (min(morphs) * 1e-3), err, np_err, gpu_b / 2**20,
               prev / 2**20, dense / 2**20, build_s, kernel, fill, ceiling_gbps,
               copy_gbps / device_gbps if device_gbps > 0 else 0.0)


def _spread(values: list[float]) -> dict:
    return {"median": float(np.median(values)), "min": float(min(values)), "max": float(max(values))}


def cpu_frame_costs(ctx, counts=(1, 10, 100, 1000, 10000), repeats: int = 30) -> list[dict]:
    """Milliseconds per frame of record() for N primitives, recorded without submitting: weights unchanged, all
    changed through the bulk ``pose.set_flat``, all changed node by node (``pose.set_weights`` per node). Thread
    CPU time (``*_ms``: what the frame costs this thread, whatever else the host runs) beside wall time
    (``*_wall_ms``), medians with min-max (``*_ms_min`` / ``*_ms_max``)."""
    from ..gpu.vk import vk
    from ..render.morph_pass import MorphRuntime

    rows = []
    cb = ctx.allocate_command_buffer()
    try:
        prim = synthetic_primitive(64, 8, 0.5, seed=1)
        for n in counts:
            rt = MorphRuntime(ctx, synthetic_scene([prim] * n))
            base = np.random.default_rng(0).random(len(rt.pose.flat)).astype(np.float32)
            alt = base * 0.5
            nodes = [(node, rt.pose.slice_of(node)) for node in rt.pose.morph_nodes]
            cpu = {"unchanged": [], "changed": [], "per_node": []}
            wall = {k: [] for k in cpu}
            calls = 0
            for mode in ("changed", "per_node", "unchanged"):   # steady state of each
                reps = repeats if mode != "per_node" or n <= 1000 else max(5, repeats // 4)
                for i in range(reps + 3):
                    w = alt if i % 2 else base
                    ctx.begin(cb)
                    t, c = time.perf_counter(), time.thread_time()
                    if mode == "changed":
                        rt.pose.set_flat(w)
                    elif mode == "per_node":
                        for node, sl in nodes:
                            rt.pose.set_weights(node, w[sl])
                    counters = rt.record(cb)
                    dc, dt = (time.thread_time() - c) * 1e3, (time.perf_counter() - t) * 1e3
                    ctx.end(cb)
                    vk.vkResetCommandBuffer(cb, 0)
                    if mode == "changed":
                        calls = counters.dispatch_calls
                    if i >= 3:
                        cpu[mode].append(dc)
                        wall[mode].append(dt)
            row = {"primitives": n, "dispatch_calls_changed": calls, "clock": "thread CPU time (wall beside it)"}
            for mode in cpu:
                c, w = _spread(cpu[mode]), _spread(wall[mode])
                row.update({f"{mode}_ms": c["median"], f"{mode}_ms_min": c["min"], f"{mode}_ms_max": c["max"],
                            f"{mode}_wall_ms": w["median"], f"{mode}_wall_ms_min": w["min"],
                            f"{mode}_wall_ms_max": w["max"]})
            rows.append(row)
            rt.destroy()
    finally:
        ctx.free_command_buffer(cb)
    return rows


def draw_frame_costs(ctx, counts=(1, 100, 1000, 10000), repeats: int = 30) -> list[dict]:
    """Per frame, for N primitive instances (N nodes): ``record()`` then ``draws()``, each timed in wall time and
    in this thread's CPU time (``time.thread_time``: immune to other processes on a loaded host), median ms.
    "unchanged": nothing moved since the last frame; "changed": every weight and every node's transform moved,
    so record() uploads and dispatches everything and the draw list rewrites every matrix."""
    from ..gpu.vk import vk
    from ..render.morph_pass import MorphRuntime

    rows = []
    cb = ctx.allocate_command_buffer()
    try:
        prim = synthetic_primitive(64, 8, 0.5, seed=1)
        for n in counts:
            rt = MorphRuntime(ctx, synthetic_scene([prim] * n))
            base = np.random.default_rng(0).random(len(rt.pose.flat)).astype(np.float32)
            alt = base * 0.5
            t0 = np.asarray(rt.skeleton.translation).copy()
            times = {(m, what, clock): [] for m in ("unchanged", "changed") for what in ("record", "draws")
                     for clock in ("wall", "cpu")}
            for mode in ("changed", "unchanged"):
                for i in range(repeats + 3):
                    if mode == "changed":
                        rt.pose.set_flat(alt if i % 2 else base)
                        rt.skeleton.set_local(translation=t0 + (0.01 * (i % 2 + 1), 0.0, 0.0))
                    ctx.begin(cb)
                    w, c = time.perf_counter(), time.thread_time()
                    rt.record(cb)
                    w1, c1 = time.perf_counter(), time.thread_time()
                    draws = rt.draws()
                    w2, c2 = time.perf_counter(), time.thread_time()
                    ctx.end(cb)
                    vk.vkResetCommandBuffer(cb, 0)
                    assert len(draws) == n
                    if i >= 3:
                        for what, dw, dc in (("record", w1 - w, c1 - c), ("draws", w2 - w1, c2 - c1)):
                            times[(mode, what, "wall")].append(dw * 1e3)
                            times[(mode, what, "cpu")].append(dc * 1e3)
            row = {"primitives": n}
            for (mode, what, clock), v in times.items():
                row[f"{what}_{mode}_{clock}_ms"] = float(np.median(v))
            rows.append(row)
            rt.destroy()
    finally:
        ctx.free_command_buffer(cb)
    return rows


def draw_costs_line(c: dict) -> str:
    return (f"record()+draws(), {c['primitives']:>5} primitives: unchanged record {c['record_unchanged_cpu_ms']:.4f} "
            f"+ draws {c['draws_unchanged_cpu_ms']:.4f} ms CPU (wall {c['record_unchanged_wall_ms']:.4f} + "
            f"{c['draws_unchanged_wall_ms']:.4f}); all changed record {c['record_changed_cpu_ms']:.3f} + draws "
            f"{c['draws_changed_cpu_ms']:.3f} ms CPU (wall {c['record_changed_wall_ms']:.3f} + "
            f"{c['draws_changed_wall_ms']:.3f})")


def dirty_scaling(ctx, timer, n: int = 1000, ks=None, frames: int = 3) -> list[dict]:
    """GPU time per frame when k of N primitives change (k = 1, 5, 50, N/2, N), the changed ones spread evenly so
    none is adjacent to another (k merged ranges) until k = N (one). With the dirty ranges dispatched, time grows
    with k, not with N; the counters report the workgroups really dispatched."""
    from ..render.morph_pass import MorphRuntime

    ks = ks or (1, 5, 50, n // 2, n)
    prim = synthetic_primitive(256, 8, 0.5, seed=2)
    rt = MorphRuntime(ctx, synthetic_scene([prim] * n))
    rows = []
    try:
        nodes = rt.pose.morph_nodes
        base = np.random.default_rng(1).random(len(rt.pose.flat)).astype(np.float32)
        rt.pose.set_flat(base)
        timer.run([rt.record], 1)
        for k in ks:
            pick = [nodes[i] for i in np.linspace(0, n - 1, k).round().astype(int)] if k < n else nodes
            flip = [0]
            counters, cpu = [], []

            def frame(cb, pick=pick, flip=flip, counters=counters, cpu=cpu):
                flip[0] ^= 1
                for node in pick:
                    sl = rt.pose.slice_of(node)
                    rt.set_weights(node, base[sl] * (0.5 if flip[0] else 1.0))
                t = time.thread_time()
                counters.append(rt.record(cb))
                cpu.append(time.thread_time() - t)

            ms = min(timer.run([frame], frames)[0] for _ in range(3))
            c = counters[-1]
            rows.append({"primitives": n, "changed": k, "gpu_ms": ms, "record_cpu_ms": float(np.median(cpu)) * 1e3,
                         "dispatched": c.dispatched, "dispatch_ranges": c.dispatch_ranges, "groups": c.groups,
                         "kernel": rt.batch.kernel_family})
    finally:
        rt.destroy()
    return rows


def characters_per_frame(ctx, timer, heads: int, fmt: str, tries: int, warm_s: float, try_ms: float) -> dict:
    """Dawn-like heads (14k vertices, 50 targets, 10 % clustered coverage, 5 active) in one runtime, timed
    against a same-window copy of the batch's floor bytes (also its roofline fraction)."""
    from ..morph.gpu_data import nonzero_vertices
    from ..render.morph_pass import MorphRuntime

    head = synthetic_primitive(14_000, 50, 0.1, "clustered", seed=3)
    rt = MorphRuntime(ctx, synthetic_scene([head] * heads), delta_format=fmt)
    active = 5
    floor_bytes = heads * floor_bytes_of(head.vertex_count, sum(len(nonzero_vertices(head, t)) for t in range(active)))
    cp = None
    try:
        cp = CopyFrames(ctx, floor_bytes)
        w = np.zeros(len(rt.pose.flat), np.float32)
        for i in range(heads):
            sl = rt.pose.slice_of(i)
            w[sl.start:sl.start + active] = 0.5
        frames, res = timer.same_window(_changing_record(rt, w), cp.frame, tries, warm_s, try_ms)
        kernel = rt.batch.kernel_family
    finally:
        if cp is not None:
            cp.destroy()
        rt.destroy()
    ms = float(np.median([m for m, _ in res]))
    copy_ms = float(np.median([c for _, c in res]))
    per = ms / heads
    return {"heads": heads, "format": fmt, "gpu_ms_all_heads": ms, "gpu_us_per_head": per * 1e3,
            "heads_per_16_6_ms": int(FRAME_MS / per) if per > 0 else 0, "kernel": kernel,
            "floor_us": copy_ms * 1e3, "roofline_fraction": float(np.median([c / m for m, c in res])),
            "copy_gbps": floor_bytes / (copy_ms * 1e-3) / 1e9 if copy_ms > 0 else 0.0}   # 0: printed as failed


# ------------------------------------------------------------------------------------------------ output slots
SLOTS_CASE = Case(500_000, 52, 0.05, 5, "clustered")
SLOTS_QUICK_CASE = Case(50_000, 52, 0.05, 5, "clustered")
FRAMES_IN_FLIGHT = 3
SLOTS_OVERLAP = ("with 1 slot the frames-in-flight guard (previous frame -> morph writes) makes frame N+1's weight "
                 "upload and morph wait until frame N's draw has read the output; with 3 slots the guard (previous "
                 "morph -> morph writes) waits only for earlier uploads and dispatches, so frame N+1's morph may run "
                 "while frame N's draw still reads its own slot (frame N+3 reuses that slot after its fence)")
SLOTS_CONSUMER = ("a renderer's draw of the whole output slot (vertex input + static.vert, depth-only pass, "
                  "triangles collapsed to a point: vertex work only)")


class FrameFences:
    """Frames in flight inside one command buffer: after frame i, vkCmdSetEvent(e_i); before frame i + n,
    vkCmdWaitEvents(e_i), which is what the host's fence wait for frame i does before it records frame i + n (a
    pipeline barrier there would also wait for frames i+1 .. i+n-1). ``begin()`` starts a command buffer."""

    def __init__(self, ctx, in_flight: int = FRAMES_IN_FLIGHT):
        from ..gpu.context import Owner

        self.ctx, self.in_flight = ctx, in_flight
        self.owner = Owner(ctx, "bench frame fences")
        self.events: list = []
        self.frame = 0

    def begin(self) -> None:
        """A new command buffer (the previous one completed): events back to unsignalled, frame 0."""
        from ..gpu.vk import vk

        for e in self.events[:self.frame]:
            vk.vkResetEvent(self.ctx.device, e)
        self.frame = 0

    def wait(self, cb) -> int:
        """Before frame i: wait for frame i - in_flight's event; returns i."""
        from ..gpu.vk import call, vk

        i = self.frame
        if i >= len(self.events):
            self.events.append(self.owner.add(vk.vkDestroyEvent, call("vkCreateEvent", self.ctx.device,
                                                                      vk.VkEventCreateInfo(), None)))
        if i >= self.in_flight:
            every = vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
            vk.vkCmdWaitEvents(cb, 1, [self.events[i - self.in_flight]], every, every, 0, None, 0, None, 0, None)
        return i

    def signal(self, cb) -> None:
        """After frame i: set its event once everything recorded so far has finished."""
        from ..gpu.vk import vk

        vk.vkCmdSetEvent(cb, self.events[self.frame], vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT)
        self.frame += 1

    def destroy(self) -> None:
        self.owner.destroy()


class DrawConsumer:
    """Reads the morph output the way the renderer does: a depth-only render pass (the shadow pass's) whose
    draw pulls every vertex of the output slot through vertex input and static.vert. The camera maps every vertex
    to one point, so the triangles have no area and the cost is the vertex work (no fragments)."""

    SIZE = 8

    def __init__(self, ctx, rt):
        from ..gpu import graphics as G
        from ..gpu import memory as M
        from ..gpu.image import DEPTH_FORMAT, Image
        from ..gpu.interface import EXTRA_INPUT, EXTRA_VERTEX, FRAME_UBO, ITEM_PUSH, SCENE, STATIC_INPUT
        from ..gpu.pipeline import descriptor_type, push_constant_stages
        from ..gpu.vk import vk
        from ..render.morph_pass import vertex_input_of

        self.ctx, self.rt = ctx, rt
        self.g = g = G.ObjectGroup(ctx, "bench draw consumer")
        inst = rt.morphing[0]
        self.count = inst.prim.vertex_count // 3 * 3
        self.buffer = inst.vertex_buffer.handle
        self.offsets = [rt.vertex_buffer_offset(inst.node, inst.prim_index, slot=k) for k in range(rt.slots)]
        self.depth = g.own(Image(ctx, self.SIZE, self.SIZE, DEPTH_FORMAT, vk.VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT
                                 | vk.VK_IMAGE_USAGE_SAMPLED_BIT, vk.VK_IMAGE_ASPECT_DEPTH_BIT, name="bench depth"))
        self.pass_ = G.shadow_render_pass(ctx, g, DEPTH_FORMAT)
        self.fb = G.framebuffer(ctx, g, self.pass_, [self.depth.view], self.SIZE, self.SIZE)
        extra = np.zeros(inst.prim.vertex_count, EXTRA_VERTEX)
        self.extra = g.own(M.device_buffer(ctx, extra, M.VERTEX, name="bench colour/uv1"))
        frame = SCENE["frame"]
        set_layout = G.set_layout(ctx, g, [(frame.binding, descriptor_type(frame), vk.VK_SHADER_STAGE_VERTEX_BIT)])
        self.push_stages = push_constant_stages(SCENE)
        self.layout = G.pipeline_layout(ctx, g, [set_layout], ITEM_PUSH.itemsize, self.push_stages)
        vin = vertex_input_of(STATIC_INPUT.vertex)
        spec = G.PipelineSpec("static.vert", None, vin.stride, [(loc, fmt, off) for loc, _, fmt, off in vin.attributes],
                              color=False, extra_stride=EXTRA_VERTEX.itemsize,
                              extra_attributes=[(a.location, getattr(vk, a.vk_format), a.offset)
                                                for a in EXTRA_INPUT.vertex_attributes()])
        self.pipeline = G.graphics_pipeline(ctx, g, spec, self.layout, self.pass_)
        point = np.zeros(16, np.float32)
        point[15] = 1.0                      # every vertex -> clip (0, 0, 0, 1)
        ubo = np.zeros(1, FRAME_UBO)
        ubo["view_proj"] = ubo["light_view_proj"] = point
        ubo["viewport"] = (self.SIZE, self.SIZE, 0, 0)
        self.ubo = g.own(M.host_buffer(ctx, FRAME_UBO.itemsize, M.UNIFORM, name="bench frame constants"))
        self.ubo.mapped[:] = ubo.view(np.uint8)
        pool = G.descriptor_pool(ctx, g, 1, {vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER: 1})
        self.set = G.allocate_set(ctx, pool, set_layout)
        G.write_buffer(ctx, self.set, frame.binding, descriptor_type(frame), self.ubo.handle)
        self.push = np.zeros(1, ITEM_PUSH)
        self.push["model"] = np.eye(4, dtype=np.float32).reshape(-1)
        self.push["pass"] = SCENE.constant("PASS_SHADOW")
        self.push["heat_joint"] = -1
        self.push_ptr = M.cffi_pointer(self.push)

    def draw(self, cb, slot: int) -> None:
        from ..gpu import graphics as G
        from ..gpu.vk import vk

        clear = vk.VkClearValue(depthStencil=vk.VkClearDepthStencilValue(depth=1.0, stencil=0))
        vk.vkCmdBeginRenderPass(cb, vk.VkRenderPassBeginInfo(
            renderPass=self.pass_, framebuffer=self.fb,
            renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(self.SIZE, self.SIZE)),
            clearValueCount=1, pClearValues=[clear]), vk.VK_SUBPASS_CONTENTS_INLINE)
        G.set_viewport(cb, self.SIZE, self.SIZE)
        vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.pipeline)
        vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.layout, 0, 1, [self.set], 0, None)
        vk.vkCmdPushConstants(cb, self.layout, self.push_stages, 0, self.push.itemsize, self.push_ptr)
        vk.vkCmdBindVertexBuffers(cb, 0, 2, [self.buffer, self.extra.handle], [self.offsets[slot], 0])
        vk.vkCmdDraw(cb, self.count, 1, 0, 0)
        vk.vkCmdEndRenderPass(cb)

    def destroy(self) -> None:
        self.g.destroy()


def _slot_frames(rt, fences: FrameFences, consumer: DrawConsumer, weights: np.ndarray, last: dict):
    """A frame: wait for the frame ``in_flight`` back (its fence), change every weight, morph into slot
    frame % slots (final barrier: compute -> vertex input), draw that slot, signal this frame's fence."""
    flip = [0]
    scaled = (weights * 0.9).astype(np.float32)

    def rec(cb):
        i = fences.wait(cb)
        flip[0] ^= 1
        rt.pose.set_flat(scaled if flip[0] else weights)
        slot = i % rt.slots
        c = rt.record(cb, slot=slot, consumer="vertex")
        consumer.draw(cb, slot)
        fences.signal(cb)
        last["slot"], last["dispatched"] = slot, c.dispatched
    return rec


def slots_overlap(ctx, timer: WindowTimer, case: Case, tries: int, warm_s: float, try_ms: float,
                  max_frames: int = 100) -> dict:
    """Per-frame GPU time of morph + draw with 1 output slot and with FRAMES_IN_FLIGHT slots, in one window."""
    from ..morph.reference import morph_reference
    from ..render.morph_pass import MorphRuntime

    prim = synthetic_primitive(case.vertices, case.targets, case.coverage, case.pattern, seed=5)
    scene = synthetic_scene([prim])
    w = np.zeros(case.targets, np.float32)
    w[:case.active] = np.linspace(0.3, 0.9, case.active)
    fences = FrameFences(ctx)
    made: list = []
    try:
        frames_of, last = {}, {}
        for slots in (1, FRAMES_IN_FLIGHT):
            # every frame goes into one command buffer (no host fence between a slot's uses), which host-written
            # weights do not allow; both slot counts use the vkCmdUpdateBuffer path, so only the slots differ
            rt = MorphRuntime(ctx, scene, slots=slots, weight_writes="transfer")
            made.append(rt)
            made.append(DrawConsumer(ctx, rt))
            last[slots] = {}
            frames_of[slots] = _slot_frames(rt, fences, made[-1], w, last[slots])
        timer.before_run = fences.begin
        frames, res = timer.same_window(frames_of[1], frames_of[FRAMES_IN_FLIGHT], tries, warm_s, try_ms,
                                        min_frames=2 * FRAMES_IN_FLIGHT + 1, max_frames=max_frames)  # slots reused
        errors = {}
        for rt in made[::2]:
            inst = rt.morphing[0]
            ref, _, _ = morph_reference(prim, rt.pose.flat[rt.pose.slice_of(inst.node)].astype(np.float64))
            out = rt.read_vertices(inst, slot=last[rt.slots]["slot"])
            errors[rt.slots] = float(np.abs(out["position"] - ref).max())
    finally:
        timer.before_run = None
        for obj in reversed(made):
            obj.destroy()
        fences.destroy()
    ratios = [b / a for a, b in res]
    name = f"{case.vertices // 1000:,}k x {case.targets}, {case.coverage:.0%} {case.pattern}, {case.active} active"
    return {"case": name, "vertices": case.vertices, "targets": case.targets, "active": case.active,
            "frames_in_flight": FRAMES_IN_FLIGHT, "frames_per_try": frames, "tries": tries,
            "one_slot_us": float(np.median([a for a, _ in res])) * 1e3,
            "slots_us": float(np.median([b for _, b in res])) * 1e3,
            "ratio": float(np.median(ratios)), "ratio_min": float(min(ratios)), "ratio_max": float(max(ratios)),
            "max_error_one_slot": errors[1], "max_error_slots": errors[FRAMES_IN_FLIGHT],
            "consumer": SLOTS_CONSUMER, "overlap": SLOTS_OVERLAP}


def slots_line(s: dict) -> str:
    n = s["frames_in_flight"]
    return (f"output slots ({s['case']}, {n} frames in flight, morph + draw per frame): 1 slot "
            f"{s['one_slot_us']:.1f} us, {n} slots {s['slots_us']:.1f} us per frame; {n} slots / 1 slot = "
            f"{s['ratio']:.3f} ({s['ratio_min']:.3f}-{s['ratio_max']:.3f}, {s['tries']} tries); max error "
            f"{max(s['max_error_one_slot'], s['max_error_slots']):.1e}")


def standard_cases(quick: bool, discrete: bool) -> list[Case]:
    if quick:
        return [Case(5_000, 8, 0.25, 5, "random"), Case(50_000, 52, 0.25, 5, "random"),
                Case(50_000, 52, 0.05, 52, "clustered"), Case(0, 0, 0.0, 0, "MorphStressTest", 16)]
    cases = [Case(50_000, 52, 0.25, 5, "random")]
    for V in (500_000, 2_000_000):
        for pattern in ("random", "clustered"):
            cases += [Case(V, 52, 0.25, 5, pattern), Case(V, 52, 0.05, 52, pattern)]
    cases += [Case(500_000, 200, 0.05, 1, "clustered"), Case(500_000, 8, 1.0, 8, "random"),
              Case(0, 0, 0.0, 0, "MorphStressTest", 256)]
    if discrete:
        cases += [Case(5_000_000, 52, 0.05, 5, "clustered")]
    return cases


def _progress(total: int, quiet: bool):
    if quiet or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="step", file=sys.stderr, leave=False)


def check_outputs(args) -> None:
    """Before any work: each output's folder exists and is writable, the suffix fits, --plot has matplotlib.
    Raises UsageError (one line)."""
    from ..errors import UsageError

    for flag, suffixes in (("json", (".json",)), ("markdown", (".md", ".markdown")), ("plot", (".png",))):
        path = getattr(args, flag, None)
        if path is None:
            continue
        p = Path(path)
        if str(path) == "" or p.is_dir():
            raise UsageError(f"--{flag} {str(path)!r}: name a file")
        if p.suffix.lower() not in suffixes:
            raise UsageError(f"--{flag} {str(path)!r} must end with {' or '.join(suffixes)}")
        folder = p.parent if str(p.parent) else Path(".")
        if not folder.is_dir():
            raise UsageError(f"--{flag} {str(path)!r}: folder {str(folder)!r} does not exist")
        if not os.access(folder, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
            raise UsageError(f"--{flag} {str(path)!r} is not writable")
    if getattr(args, "plot", None) is not None and getattr(args, "only", None):
        raise UsageError(f"--plot draws the roofline cases, which --only {args.only} leaves out")
    if getattr(args, "plot", None) is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError("--plot needs matplotlib: pip install 'vkmorph[bench]'") from None


def run_bench(args) -> int:
    from ..gpu.context import Context

    check_outputs(args)
    ctx = Context.create(echo_messages=True)
    discrete = ctx.info.device_type == "discrete"
    quick = bool(getattr(args, "quick", False))
    only = getattr(args, "only", None)
    cases = [] if only in ("slots", "crowd", "startup") else standard_cases(quick, discrete)
    tries = 3 if quick else 5
    warm_s = 0.3 if discrete else 0.0
    try_ms = 4.0 if discrete else 1.0
    counts = (1, 10, 100) if quick else (1, 10, 100, 1000, 10000)
    heads = 4 if quick else 256
    bar = _progress(len(cases) * 2 + (1 if only else 6), quick and not sys.stderr.isatty())
    report: dict = {}
    try:
        timer = WindowTimer(ctx)
        say = print if bar is None else bar.write
        driver = driver_string(ctx)
        load = os.getloadavg()[0]
        say(f"device: {ctx.info.name} (Vulkan {ctx.info.api_version}, driver {driver}); host {platform.node()}, "
            f"{os.cpu_count()} CPUs, load average {load:.1f}")
        report = {"device": ctx.info.name, "api": ctx.info.api_version, "driver": driver,
                  "host": platform.node(), "cpus": os.cpu_count(), "load_before": load,
                  "date": time.strftime("%Y-%m-%d %H:%M"), "byte_model": BYTE_MODEL,
                  "tries": tries, "rows": [], "cpu_per_frame": [], "characters": []}
        if only is None:
            _roofline_sections(ctx, timer, report, quick, cases, tries, warm_s, try_ms, counts, heads, say, bar)
        if only in (None, "crowd"):      # issue 25: N instances in one runtime (vkmorph/app/crowd_bench.py)
            from .crowd_bench import COUNTS, COUNTS_QUICK, crowd_costs, crowd_line
            report["crowd"] = crowd_costs(ctx, timer, COUNTS_QUICK if quick else COUNTS)
            for c in report["crowd"]:
                say(crowd_line(c))
        if only == "startup" or (only is None and quick):   # issue 28: app/startup_bench.py
            report["startup"] = _startup_section(quick, say)
        if only not in ("crowd", "startup"):
            slots = slots_overlap(ctx, timer, SLOTS_QUICK_CASE if quick else SLOTS_CASE, tries, warm_s, try_ms)
            say(slots_line(slots))
            say(f"  consumer: {slots['consumer']}; {slots['overlap']}")
            report["slots"] = slots
        report["load_after"] = os.getloadavg()[0]
        say(f"load average at the end {report['load_after']:.1f}")
        if bar is not None:
            bar.update(1)
            bar.close()
        timer.destroy()
    finally:
        ctx.destroy()
    write_reports(report, args)
    return 3 if ctx.errors_and_warnings() else 0


def _startup_section(quick: bool, say) -> dict:
    """The demo's frame loop, time to first frame, ``vkmorph info`` and ``vkmorph.open`` again, in children."""
    from .startup_bench import startup_costs, startup_lines

    out = startup_costs(quick)
    for line in startup_lines(out):
        say(line)
    return out


def _roofline_sections(ctx, timer, report, quick, cases, tries, warm_s, try_ms, counts, heads, say, bar) -> None:
    """Ceilings, the roofline cases, CPU per frame and Dawn-like heads, into ``report``."""
    say(f"byte model: {BYTE_MODEL}; roofline_fraction = format floor time at the same-window copy bandwidth / "
        f"morph time (median of {tries} tries, spread min-max); rows whose copy reference is below {COPY_OK} of "
        f"the best copy of their own byte size (best of {COPY_CEILING_WINDOWS} windows, once per size) are "
        f"repeated (up to {COPY_RETRIES} more windows, {COPY_REPEAT_BUDGET_S:.0f} s of repeats in all), then "
        "flagged")
    ceilings = report["ceilings"] = device_ceilings(ctx, timer, quick)
    sizes = CopyCeilings(ctx, timer, warm_s, try_ms)
    say(f"copy ceilings ({ceilings['buffer_mb']} MB buffers): grid-stride uvec4 kernel "
        f"{gbps_text(ceilings['copy_kernel_gbps'])}, vkCmdCopyBuffer {gbps_text(ceilings['copy_buffer_gbps'])}")
    rows = report["rows"]
    for case in cases:
        if case.instances > 1:
            prims = model_primitives(case.pattern)
            if not prims:
                say(f"{case.pattern}: model not found (set VKMORPH_ASSETS); case skipped")
                continue
            prims = [p for _ in range(case.instances) for p in prims]
            case.vertices = sum(p.vertex_count for p in prims)
            case.targets = max(len(p.morph_targets) for p in prims)
            case.active = case.targets
        else:
            prims = [synthetic_primitive(case.vertices, case.targets, case.coverage, case.pattern)]
        for fmt in ("full", "compact"):
            r = bench_case(ctx, timer, case, prims, fmt, tries, warm_s, try_ms, ceilings=sizes,
                           device_gbps=ceilings["copy_kernel_gbps"])
            rows.append(asdict(r))
            say(row_line(r))
            if bar is not None:
                bar.update(1)
        del prims
    ceilings["size_ceilings_gbps"] = {str(k): v for k, v in sorted(sizes.cache.items())}
    ceilings["size_ceiling_s"], ceilings["repeat_s"] = sizes.measure_s, sizes.repeat_s
    say(f"copy ceilings per row size: {len(sizes.cache)} sizes measured in {sizes.measure_s:.1f} s; row repeats "
        f"took {sizes.repeat_s:.1f} s")
    # the heads while the GPU is still busy from the cases, not after the CPU-only section below (a frame count
    # goal is in absolute time). This alone did not cure the slow windows it was meant for: full still read
    # 7,357 once with this order, at the same fraction as in a fast window (the GPU sometimes runs a whole
    # window ~2.5x slower; see WindowTimer.same_window); each window's copy bandwidth is reported
    chars = report["characters"] = [characters_per_frame(ctx, timer, heads, fmt, tries, warm_s, try_ms)
                                    for fmt in ("full", "compact")]
    for c in chars:
        say(characters_line(c))
    if bar is not None:
        bar.update(2)
    cpu = report["cpu_per_frame"] = cpu_frame_costs(ctx, counts)
    for c in cpu:
        say(cpu_line(c))
    draws = report["draws_per_frame"] = draw_frame_costs(ctx, (1, 100) if quick else (1, 100, 1000, 10000))
    for c in draws:
        say(draw_costs_line(c))
    dirty = report["dirty_scaling"] = dirty_scaling(ctx, timer, 100 if quick else 1000)
    for d in dirty:
        say(f"{d['changed']:>5} of {d['primitives']} primitives changed: GPU {d['gpu_ms']:.3f} ms per frame, "
            f"record() {d['record_cpu_ms']:.3f} ms CPU, {d['dispatch_ranges']} ranges, {d['groups']} workgroups")
    if bar is not None:
        bar.update(2)
    bake = report["bake"] = bake_throughput(BAKE_FRAMES_QUICK if quick else BAKE_FRAMES)
    say(bake_line(bake) if bake else "bake: RobotExpressive not found (set VKMORPH_ASSETS); skipped")
    if bar is not None:
        bar.update(1)


BAKE_MODEL, BAKE_FRAMES, BAKE_FRAMES_QUICK, BAKE_REPEATS = "RobotExpressive", 256, 64, 5


def gbps(x: float) -> str:
    """GB/s as the reports print them: whole numbers on a GPU, two significant digits on a CPU device (lavapipe's
    kernels copy ~0.4 GB/s, which a whole number printed as 0); 'failed' when no time was measured."""
    if not (math.isfinite(x) and x > 0):
        return "failed"
    return f"{x:.0f}" if x >= 10 else f"{x:.2g}"


def gbps_text(x: float) -> str:
    """'0.41 GB/s', or what happened when the measurement gave no figure."""
    return f"{gbps(x)} GB/s" if gbps(x) != "failed" else "no figure (the copy measurement failed)"


def characters_line(c: dict) -> str:
    return (f"Dawn-like heads ({c['format']}, {c['heads']} in one batch, {c['kernel']}): {c['gpu_us_per_head']:.2f} "
            f"us each -> {c['heads_per_16_6_ms']:,} per 16.6 ms frame; fraction {c['roofline_fraction']:.2f}, "
            f"copy {gbps_text(c['copy_gbps'])} in that window")


def row_line(r: Row) -> str:
    low = " LOW COPY REFERENCE" if r.copy_low else ""
    return (f"{r.case:<44} {r.delta_format:>7} {r.kernel:>10}: morph {r.morph_us:9.1f} us, format floor "
            f"{r.format_floor_us:8.1f} us, fraction {r.roofline_fraction:4.2f} ({r.fraction_min:4.2f}-"
            f"{r.fraction_max:4.2f}), work unit {r.work_fraction:4.2f} | copy {gbps_text(r.copy_gbps)} = "
            f"{r.copy_ratio:.2f} of its size's best ({gbps_text(r.copy_ceiling_gbps)}), {r.copy_device_ratio:.2f} "
            f"of the device's, {r.copy_runs} window(s){low} | numpy x{r.speedup_vs_numpy:.1f} "
            f"({r.speedup_min:.1f}-{r.speedup_max:.1f}) | err {r.max_error:.1e} | {r.gpu_mib:7.1f} MiB (was "
            f"{r.previous_mib:7.1f}) | build {r.build_s:5.2f} s")


def cpu_line(c: dict) -> str:
    def one(mode: str, digits: int) -> str:
        if f"{mode}_ms_min" not in c:
            return f"{c[mode + '_ms']:.{digits}f}" if f"{mode}_ms" in c else "-"
        return (f"{c[mode + '_ms']:.{digits}f} ({c[mode + '_ms_min']:.{digits}f}-{c[mode + '_ms_max']:.{digits}f}), "
                f"wall {c[mode + '_wall_ms']:.{digits}f}")
    return (f"CPU per frame (thread CPU ms), {c['primitives']:>5} primitives: unchanged {one('unchanged', 4)}; "
            f"all changed, set_flat {one('changed', 3)}; all changed, set_weights per node {one('per_node', 3)}")


def bake_throughput(frames: int, repeats: int = BAKE_REPEATS) -> dict | None:
    """``vkmorph.bake.measure_bake_throughput`` on RobotExpressive's first clip in world space: the GPU bake, the
    numpy baseline and the readback alone, each median of ``repeats`` after a warm-up."""
    from ..bake import measure_bake_throughput

    path = find_model(BAKE_MODEL)
    return measure_bake_throughput(path, frames=frames, repeats=repeats) if path is not None else None


def bake_line(b: dict) -> str:
    head = (f"bake ({Path(b['file']).name}, clip {b['clip']}, {b['space']} space, {b['frames']} frames x "
            f"{b['vertices']:,} vertices): GPU {b['gpu_vps'] / 1e6:.2f} M frame-vertices/s, numpy "
            f"{b['numpy_vps'] / 1e6:.2f} M/s, {b['speedup']:.1f}x")
    if "speedup_min" not in b:          # reports before the batched bake
        return f"{head}, max error {b['max_error']:.1e}"
    return (f"{head} ({b['speedup_min']:.1f}-{b['speedup_max']:.1f}, {b['repeats']} repeats); readback alone "
            f"{b['readback_vps'] / 1e6:.1f} M/s, the bake at {b['readback_fraction']:.2f} of it "
            f"({b['readback_fraction_min']:.2f}-{b['readback_fraction_max']:.2f}); GPU {b['gpu_s']:.3f} s wall "
            f"({b['gpu_s_min']:.3f}-{b['gpu_s_max']:.3f}), {b['gpu_cpu_s']:.3f} s process CPU; numpy "
            f"{b['numpy_s']:.3f} s wall, {b['numpy_cpu_s']:.3f} s CPU; {b['batch_frames']} frames per batch, "
            f"{b['weight_runs']} weight run(s); max error {b['max_error']:.1e} (numpy {b['numpy_max_error']:.1e})"
            + (f"; pose on the {'GPU' if b['pose_on_gpu'] else 'host'}: host {1e3 * b['host_batch_cpu_s']:.2f} ms "
               f"thread CPU per batch ({1e3 * b['host_batch_cpu_s_min']:.2f}-{1e3 * b['host_batch_cpu_s_max']:.2f}), "
               f"pose on the host {1e3 * b['cpu_pose_host_batch_cpu_s']:.2f} ms "
               f"({1e3 * b['cpu_pose_host_batch_cpu_s_min']:.2f}-{1e3 * b['cpu_pose_host_batch_cpu_s_max']:.2f}), "
               f"that bake {b['cpu_pose_s']:.3f} s wall ({b['cpu_pose_s_min']:.3f}-{b['cpu_pose_s_max']:.3f}), "
               f"{b['cpu_pose_cpu_s']:.3f} s process CPU" if "pose_on_gpu" in b else ""))


def write_reports(report: dict, args) -> None:
    """Each report all or nothing (vkmorph.outputs.atomic_write): an error or Ctrl-C leaves no half file."""
    from ..outputs import atomic_write

    if getattr(args, "json", None):
        atomic_write(args.json, lambda fh: fh.write(json.dumps(report, indent=2).encode()))
    if getattr(args, "markdown", None):
        atomic_write(args.markdown, lambda fh: fh.write(markdown(report).encode()))
    if getattr(args, "plot", None):
        plot(report, args.plot)


# ------------------------------------------------------------------------------------------------ reports
def goals(report: dict) -> list[tuple[str, bool | None, str]]:
    """Issue 12's goals, each (goal, met, the numbers)."""
    out = []
    big = [r for r in report["rows"] if r["vertices"] >= 500_000]
    if big:
        worst = min(big, key=lambda r: r["roofline_fraction"])
        out.append(("roofline_fraction >= 0.5 in every case >= 500k vertices, both formats",
                    worst["roofline_fraction"] >= 0.5,
                    f"lowest {worst['roofline_fraction']:.2f}: {worst['case']} ({worst['delta_format']})"))
    if report.get("characters"):
        best = max(c["heads_per_16_6_ms"] for c in report["characters"])
        out.append((">= 15,000 Dawn-like heads per 16.6 ms", best >= 15_000,
                    ", ".join(f"{c['format']} {c['heads_per_16_6_ms']:,}" for c in report["characters"])))
    slow = [r for r in report["rows"] if r["speedup_vs_numpy"] < 1.0]
    out.append(("every case faster than numpy", not slow,
                "all faster" if not slow else "slower: " + "; ".join(f"{r['case']} {r['delta_format']}"
                                                                     for r in slow)))
    builds = [r for r in report["rows"] if r["vertices"] >= 2_000_000 and r["coverage"] == 0.25]
    if builds:
        worst = max(r["build_s"] for r in builds)
        out.append(("build of 2M x 52 x 25 % <= 5 s, either format", worst <= 5.0, f"slowest {worst:.2f} s"))
    cpu = {c["primitives"]: c for c in report.get("cpu_per_frame", [])}
    if 10000 in cpu:
        c = cpu[10000]
        clock = "thread CPU" if "clock" in c else "wall"
        out.append((f"CPU per frame, 10,000 primitives ({clock}): <= 0.01 ms unchanged, <= 2 ms all changed",
                    c["unchanged_ms"] <= 0.01 and c["changed_ms"] <= 2.0,
                    f"{c['unchanged_ms']:.4f} ms / {c['changed_ms']:.3f} ms"
                    + (f" (set_weights per node {c['per_node_ms']:.3f} ms)" if "per_node_ms" in c else "")))
    b = report.get("bake")
    if b and "readback_fraction" in b:
        out.append(("bake >= 5x the numpy baseline", b["speedup"] >= 5.0,
                    f"{b['speedup']:.2f}x ({b['speedup_min']:.2f}-{b['speedup_max']:.2f})"))
        out.append(("bake >= 0.5 of the readback limit", b["readback_fraction"] >= 0.5,
                    f"{b['readback_fraction']:.3f} ({b['readback_fraction_min']:.3f}-"
                    f"{b['readback_fraction_max']:.3f}) of {b['readback_vps'] / 1e6:.1f} M frame-vertices/s"))
    low = [r for r in report["rows"] if r.get("copy_low")]
    if any("copy_low" in r for r in report["rows"]):
        # reports since the per-size ceilings: against the best copy of the row's size; before: the device's
        of = "the best copy of its size" if any(r.get("copy_ceiling_gbps") for r in report["rows"]) \
            else "the device's best"
        out.append((f"every row's same-window copy reference >= {COPY_OK} of {of}", not low,
                    "all" if not low else "below: " + "; ".join(f"{r['case']} {r['delta_format']} "
                                                               f"{r['copy_ratio']:.2f}" for r in low)))
    bigger = [r for r in report["rows"] if r["gpu_mib"] > r["previous_mib"]]
    out.append(("GPU memory per case no larger than the previous layout's", not bigger,
                "all smaller or equal" if not bigger else "larger: " + "; ".join(
                    f"{r['case']} {r['delta_format']} {r['gpu_mib']:.1f} > {r['previous_mib']:.1f} MiB"
                    for r in bigger)))
    return out


def markdown(report: dict) -> str:
    c = report.get("ceilings", {})
    out = [f"# vkmorph bench, {report['date']}, {report['device']} (driver {report['driver']})\n"]
    if "load_before" in report:
        out += [f"Host {report.get('host', '?')}, {report.get('cpus', '?')} CPUs, load average "
                f"{report['load_before']:.1f} at the start, {report.get('load_after', float('nan')):.1f} at the "
                "end.", ""]
    if report["rows"]:
        sized = any(r.get("copy_ceiling_gbps") for r in report["rows"])   # reports before 12-01: device's best
        ref = (f"the best copy of the row's own byte size (best of {COPY_CEILING_WINDOWS} windows, measured once "
               "per size)") if sized else "the device's best"
        dev = ", then `dev`, its share of the 256 MB device ceiling" if sized else ""
        out += [f"Byte model: {report.get('byte_model', BYTE_MODEL)}. `floor us` = the (format) floor's bytes at "
                f"the copy bandwidth measured in the same window; `fraction` = floor / morph time, median of "
                f"{report.get('tries', '?')} tries (min-max); `work` = the same against the work unit; `copy` = the "
                f"same-window copy's GB/s and its share of {ref}, `!` where below {COPY_OK} after up to "
                f"{COPY_RETRIES} repeats{dev}, and the windows taken; numpy: sparse float32, all instances, "
                f"median of {NUMPY_REPEATS} (speedup min-max).", ""]
        if c:
            out += [f"Device ceilings ({c['buffer_mb']} MB buffers): grid-stride uvec4 copy kernel "
                    f"{gbps_text(c['copy_kernel_gbps'])}, vkCmdCopyBuffer {gbps_text(c['copy_buffer_gbps'])}.", ""]
        out += _roofline_tables(report) + [""]
    if report.get("bake"):
        out += [f"Baking: {bake_line(report['bake'])}.", ""]
    if report.get("crowd"):
        from .crowd_bench import crowd_markdown
        out += crowd_markdown(report["crowd"]) + [""]
    if report.get("startup"):
        from .startup_bench import startup_markdown
        out += startup_markdown(report["startup"]) + [""]
    s = report.get("slots")
    if s:
        n = s["frames_in_flight"]
        out += [f"Output slots ({s['case']}, {n} frames in flight, weights changed every frame): per frame the "
                f"morph (final barrier compute -> vertex input) and {s['consumer']}; {s['overlap']}.", "",
                "| slots | GPU us per frame | max error |", "|---|---|---|",
                f"| 1 | {s['one_slot_us']:.1f} | {s['max_error_one_slot']:.1e} |",
                f"| {n} | {s['slots_us']:.1f} | {s['max_error_slots']:.1e} |", "",
                f"{n} slots / 1 slot: {s['ratio']:.3f} (min-max {s['ratio_min']:.3f}-{s['ratio_max']:.3f} over "
                f"{s['tries']} tries of {s['frames_per_try']} frames each)."]
    return "\n".join(out) + "\n"


def _row_cells(r: dict) -> str:
    """One roofline row; reports before the per-format floor (floor_mb / floor_us) render with what they have."""
    floor_us = r.get("format_floor_us", r.get("floor_us", 0.0))
    work = f"{r['work_fraction']:.2f}" if "work_fraction" in r else ""
    copy = gbps(r["copy_gbps"])
    if "copy_ratio" in r:
        dev = f", dev {r['copy_device_ratio']:.2f}" if r.get("copy_ceiling_gbps") else ""
        copy += f" ({r['copy_ratio']:.2f}{' !' if r.get('copy_low') else ''}{dev}, {r.get('copy_runs', 1)}x)"
    speed = f"{r['speedup_vs_numpy']:.1f}"
    if "speedup_min" in r:
        speed += f" ({r['speedup_min']:.1f}-{r['speedup_max']:.1f})"
    return (f"| {r['case']} | {r['delta_format']} | {r.get('kernel', '')} ({r.get('block_fill', 1.0):.2f}) | "
            f"{r['deltas']:,} | {r['morph_us']:.1f} | {floor_us:.1f} | {r['roofline_fraction']:.2f} "
            f"({r['fraction_min']:.2f}-{r['fraction_max']:.2f}) | {work} | {copy} | {r['numpy_ms']:.1f} | {speed} | "
            f"{r['max_error']:.1e} | {r['gpu_mib']:.1f} | {r['previous_mib']:.1f} | {r['dense_mib']:.1f} | "
            f"{r['build_s']:.2f} |")


def _cpu_cell(c: dict, mode: str, digits: int) -> str:
    if f"{mode}_ms" not in c:
        return ""
    if f"{mode}_ms_min" not in c:
        return f"{c[mode + '_ms']:.{digits}f}"
    return (f"{c[mode + '_ms']:.{digits}f} ({c[mode + '_ms_min']:.{digits}f}-{c[mode + '_ms_max']:.{digits}f}); "
            f"wall {c[mode + '_wall_ms']:.{digits}f}")


def _roofline_tables(report: dict) -> list[str]:
    out = ["| case | format | kernel (block fill) | deltas | morph us | floor us | fraction (min-max) | work | "
           "copy GB/s (share, windows) | numpy ms | speedup (min-max) | max err | GPU MiB | previous MiB | "
           "dense MiB | build s |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    out += [_row_cells(r) for r in report["rows"]]
    clock = "thread CPU" if any("clock" in c for c in report["cpu_per_frame"]) else "wall"
    out += ["", f"| primitives | CPU ms/frame unchanged ({clock}) | all changed, set_flat | all changed, "
            "set_weights per node | dispatch calls |", "|---|---|---|---|---|"]
    for c in report["cpu_per_frame"]:
        out.append(f"| {c['primitives']:,} | {_cpu_cell(c, 'unchanged', 4)} | {_cpu_cell(c, 'changed', 3)} | "
                   f"{_cpu_cell(c, 'per_node', 3)} | {c['dispatch_calls_changed']} |")
    if report.get("draws_per_frame"):
        out += ["", "| primitives | record() unchanged ms CPU (wall) | draws() unchanged ms CPU (wall) | "
                "record() all changed ms CPU (wall) | draws() all changed ms CPU (wall) |", "|---|---|---|---|---|"]
        for c in report["draws_per_frame"]:
            out.append(" | ".join([f"| {c['primitives']:,}"] + [
                f"{c[f'{w}_{m}_cpu_ms']:.4f} ({c[f'{w}_{m}_wall_ms']:.4f})"
                for m in ("unchanged", "changed") for w in ("record", "draws")]) + " |")
    if report.get("dirty_scaling"):
        out += ["", "| changed of N primitives | GPU ms per frame | record() CPU ms | ranges | workgroups |",
                "|---|---|---|---|---|"]
        for d in report["dirty_scaling"]:
            out.append(f"| {d['changed']:,} of {d['primitives']:,} | {d['gpu_ms']:.3f} | {d['record_cpu_ms']:.3f} | "
                       f"{d['dispatch_ranges']} | {d['groups']:,} |")
    out += ["", "| format | heads in one batch | GPU us per Dawn-like head (14k verts, 50 targets, 5 active) | "
            "heads per 16.6 ms | fraction | copy GB/s (same window) |", "|---|---|---|---|---|---|"]
    for c in report["characters"]:
        frac = f"{c['roofline_fraction']:.2f}" if "roofline_fraction" in c else ""
        copy = gbps(c["copy_gbps"]) if "copy_gbps" in c else ""
        out.append(f"| {c['format']} | {c['heads']} | {c['gpu_us_per_head']:.2f} | {c['heads_per_16_6_ms']:,} | "
                   f"{frac} | {copy} |")
    out += ["", "| goal | met | numbers |", "|---|---|---|"]
    for g, met, numbers in goals(report):
        out.append(f"| {g} | {'yes' if met else 'no'} | {numbers} |")
    return out


def plot(report: dict, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from ..errors import UsageError

        raise UsageError("--plot needs matplotlib: pip install 'vkmorph[bench]'") from None
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.5))
    rows = report["rows"]
    x = np.arange(len(rows) // 2)
    for k, fmt in enumerate(("full", "compact")):
        rs = [r for r in rows if r["delta_format"] == fmt]
        y = [r["roofline_fraction"] for r in rs]
        err = [[r["roofline_fraction"] - r["fraction_min"] for r in rs],
               [r["fraction_max"] - r["roofline_fraction"] for r in rs]]
        ax[0].bar(x[:len(rs)] + (k - 0.5) * 0.4, y, 0.4, yerr=err, label=fmt, capsize=2)
    ax[0].set_xticks(x, [r["case"] for r in rows if r["delta_format"] == "full"], rotation=60, ha="right",
                     fontsize=7)
    ax[0].axhline(0.5, ls="--", c="grey", label="goal 0.5")
    ax[0].set_ylabel("roofline fraction (floor / morph time)")
    ax[0].legend(fontsize=8)
    cpu = report["cpu_per_frame"]
    ax[1].plot([c["primitives"] for c in cpu], [c["changed_ms"] for c in cpu], "o-", label="all changed")
    ax[1].plot([c["primitives"] for c in cpu], [c["unchanged_ms"] for c in cpu], "s-", label="unchanged")
    ax[1].set_xscale("log")
    ax[1].set_yscale("log")
    ax[1].set_xlabel("morphing primitives")
    ax[1].set_ylabel("CPU ms per frame")
    ax[1].legend()
    fig.suptitle(f"vkmorph bench: {report['device']} ({report['date']})")
    fig.tight_layout()
    from ..outputs import atomic_write

    atomic_write(path, lambda fh: fig.savefig(fh, dpi=110, format="png"))
    plt.close(fig)
