"""``vkmorph bench``: the morph pass against the same device's copy bandwidth and the numpy reference.

All figures of one report come from one run on one device. GPU times are timestamp queries around the work,
median of many frames after warm-up. Byte model of the morph pass (per frame):
    per vertex   48 B base + 4 B offset (CSR) + 36 B written (position, normal, tangent.xyz)
    per delta    64 B when its target is active, 16 B (metadata row only) when its weight is 0
Copy bandwidth: glsl/copy.comp moving uvec4s (read + write counted), on a buffer of the morph pass's size.
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass

import numpy as np

from ..asset.model import STATIC_VERTEX, MeshAsset, MeshPrimitiveAsset, MorphTargetAsset, NodeAsset, SceneAsset


@dataclass
class Row:
    vertices: int
    targets: int
    coverage: float
    active: int
    deltas: int
    morph_ms: float
    morph_gbps: float
    copy_gbps: float
    ratio_to_copy: float
    numpy_ms: float
    speedup_vs_numpy: float
    max_error: float
    build_s: float


def synthetic_primitive(V: int, T: int, coverage: float, seed: int = 0) -> MeshPrimitiveAsset:
    """A mesh of V vertices and T targets, each touching a random ``coverage`` fraction of the vertices."""
    rng = np.random.default_rng(seed)
    v = np.zeros(V, STATIC_VERTEX)
    v["position"] = rng.random((V, 3), np.float32)
    v["normal"] = (0.0, 0.0, 1.0)
    v["tangent"] = (1.0, 0.0, 0.0, 1.0)
    targets = []
    for k in range(T):
        d = np.zeros((V, 3), np.float32)
        idx = rng.choice(V, int(V * coverage), replace=False)
        d[idx] = rng.normal(0, 0.01, (len(idx), 3)).astype(np.float32)
        nd = np.zeros((V, 3), np.float32)
        nd[idx] = rng.normal(0, 0.05, (len(idx), 3)).astype(np.float32)
        targets.append(MorphTargetAsset(f"t{k}", d, nd, None))
    return MeshPrimitiveAsset(vertices=v, indices=np.zeros(0, np.uint32), morph_targets=targets)


class Timer:
    """Two timestamps around recorded work; GPU milliseconds from the device's timestamp period."""

    def __init__(self, ctx):
        from ..gpu.vk import vk

        self.ctx, self.vk = ctx, vk
        self.pool = vk.vkCreateQueryPool(ctx.device, vk.VkQueryPoolCreateInfo(
            queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=2), None)
        self._key = ctx.track("timestamp query pool", self._release)

    def time_ms(self, record, repeats: int, warmup: int = 3) -> float:
        vk, ctx = self.vk, self.ctx
        out = []
        data = np.zeros(2, np.uint64)
        for i in range(warmup + repeats):
            def rec(cb):
                vk.vkCmdResetQueryPool(cb, self.pool, 0, 2)
                vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, self.pool, 0)
                record(cb)
                vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, self.pool, 1)
            ctx.submit_and_wait(rec)
            vk.vkGetQueryPoolResults(ctx.device, self.pool, 0, 2, 16, vk.ffi.from_buffer(data), 8,
                                     vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)
            if i >= warmup:
                out.append(float(data[1] - data[0]) * ctx.info.timestamp_period_ns * 1e-6)
        return float(np.median(out))

    def _release(self):
        self.vk.vkDestroyQueryPool(self.ctx.device, self.pool, None)

    def destroy(self):
        self._release()
        self.ctx.untrack(self._key)


def copy_bandwidth(ctx, timer: Timer, nbytes: int, repeats: int) -> float:
    from ..gpu import memory as M
    from ..gpu.pipeline import ComputePipeline
    from ..gpu.vk import vk

    n = min(max(1, nbytes // 32), 65535 * 256)  # half read, half written; uvec4 = 16 B; one dispatch
    src = M.device_buffer(ctx, None, M.STORAGE, size=16 * n)
    dst = M.device_buffer(ctx, None, M.STORAGE, size=16 * n)
    pipe = ComputePipeline(ctx, "copy.comp", 2, 8)
    dset = pipe.make_set([src, dst])
    push = np.array([n, 0], np.uint32)

    def rec(cb):
        pipe.bind(cb, dset)
        pipe.push(cb, M.cffi_pointer(push), 8)
        vk.vkCmdDispatch(cb, (n + 255) // 256, 1, 1)

    ms = timer.time_ms(rec, repeats)
    moved = 2 * 16 * n
    for o in (pipe, src, dst):
        o.destroy()
    return moved / (ms * 1e-3) / 1e9


def bench_case(ctx, timer, V, T, coverage, active, repeats) -> Row:
    from ..morph.reference import morph_reference
    from ..render.morph_pass import MorphRuntime

    t0 = time.perf_counter()
    prim = synthetic_primitive(V, T, coverage)
    scene = SceneAsset(nodes=[NodeAsset("n", mesh=0)], meshes=[MeshAsset("m", [prim])], skins=[], animations=[],
                       roots=[0])
    rt = MorphRuntime(ctx, scene)
    build_s = time.perf_counter() - t0
    inst = rt.morphing[0]
    w = np.zeros(T, np.float32)
    w[:active] = np.linspace(0.3, 0.9, active)
    rt.set_weights(0, w)
    flip = [0]

    def rec(cb):
        flip[0] ^= 1  # a real weight change every frame, so every frame records upload + dispatch
        w[0] = 0.5 + 0.1 * flip[0]
        rt.set_weights(0, w)
        rt.record(cb)
    ms = timer.time_ms(rec, repeats)
    from ..morph.gpu_data import nonzero_vertices

    D = inst.delta_count
    act = sum(len(nonzero_vertices(prim, int(t))) for t in np.flatnonzero(w))
    nbytes = V * (48 + 4 + 36) + act * 64 + (D - act) * 16
    gbps = nbytes / (ms * 1e-3) / 1e9
    cp = copy_bandwidth(ctx, timer, nbytes, repeats)
    t1 = time.perf_counter()
    p, _, _ = morph_reference(prim, w)
    np_ms = (time.perf_counter() - t1) * 1e3
    out = rt.read_vertices(inst)
    err = float(np.abs(out["position"] - p).max())
    rt.destroy()
    return Row(V, T, coverage, active, D, ms, gbps, cp, gbps / cp, np_ms, np_ms / ms, err, build_s)


def run_bench(args) -> int:
    from ..gpu.context import Context

    ctx = Context.create(echo_messages=True)
    cases = ([(5_000, 8, 0.25, 5), (50_000, 52, 0.25, 5)] if args.quick else
             [(5_000, 8, 0.25, 5), (50_000, 52, 0.25, 5), (500_000, 52, 0.25, 5), (500_000, 52, 0.05, 52),
              (2_000_000, 52, 0.05, 5)])
    repeats = 5 if args.quick else 20
    rows = []
    try:
        timer = Timer(ctx)
        print(f"device: {ctx.info.name} (Vulkan {ctx.info.api_version}, driver {ctx.info.driver_version})")
        for V, T, cov, act in cases:
            r = bench_case(ctx, timer, V, T, cov, act, repeats)
            rows.append(r)
            print(f"V={V:>9,} T={T:>3} cov={cov:.0%} active={act:>2} deltas={r.deltas:>10,}: morph "
                  f"{r.morph_ms:8.3f} ms {r.morph_gbps:7.1f} GB/s | copy {r.copy_gbps:7.1f} GB/s | ratio "
                  f"{r.ratio_to_copy:5.2f} | numpy {r.numpy_ms:8.1f} ms x{r.speedup_vs_numpy:6.1f} | "
                  f"err {r.max_error:.1e} | build {r.build_s:.2f} s", flush=True)
        timer.destroy()
    finally:
        ctx.destroy()
    report = {"device": ctx.info.name, "api": ctx.info.api_version, "driver": ctx.info.driver_version,
              "host": platform.node(), "date": time.strftime("%Y-%m-%d"), "rows": [asdict(r) for r in rows]}
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(f"# vkmorph bench, {report['date']}, {report['device']} (driver {report['driver']})\n\n")
            fh.write("| V | T | coverage | active | deltas | morph ms | GB/s | copy GB/s | ratio | numpy ms | "
                     "speedup | max err |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n")
            for r in rows:
                fh.write(f"| {r.vertices:,} | {r.targets} | {r.coverage:.0%} | {r.active} | {r.deltas:,} | "
                         f"{r.morph_ms:.3f} | {r.morph_gbps:.1f} | {r.copy_gbps:.1f} | {r.ratio_to_copy:.2f} | "
                         f"{r.numpy_ms:.1f} | {r.speedup_vs_numpy:.1f} | {r.max_error:.1e} |\n")
    return 3 if ctx.errors_and_warnings() else 0
