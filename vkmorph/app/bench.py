"""``vkmorph bench``: the morph pass against the same device's copy bandwidth and the numpy reference.

All figures of one report come from one run on one device. GPU times are timestamp queries around the work,
median of many frames after warm-up; every measured frame really changes a weight, so it records the upload,
the barriers and the dispatch. Byte model of the morph pass (per frame):
    per vertex   48 B base + 4 B CSR offset + 4 B output address + 36 B written (position, normal, tangent.xyz)
    per delta    full format: 64 B if its target is active, 16 B (metadata row) if not
                 compact format: 24 B if active, 8 B (index + tangent.z word) if not
Copy bandwidth: glsl/copy.comp moving uvec4s (read + write counted) over the same number of bytes.
CPU figures: Python time of ``MorphRuntime.record`` (plus ``pose.set_flat`` when weights change) for N
primitives, recorded into a command buffer without submitting.
"""

from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict, dataclass

import numpy as np

from ..asset.model import STATIC_VERTEX, MeshAsset, MeshPrimitiveAsset, MorphTargetAsset, NodeAsset, SceneAsset

FRAME_MS = 1000.0 / 60.0


@dataclass
class Row:
    vertices: int
    targets: int
    coverage: float
    active: int
    delta_format: str
    deltas: int
    morph_ms: float
    morph_gbps: float
    copy_gbps: float
    ratio_to_copy: float
    numpy_ms: float
    speedup_vs_numpy: float
    max_error: float
    gpu_mib: float
    dense_mib: float
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
        idx = rng.choice(V, max(1, int(V * coverage)), replace=False)
        d[idx] = rng.normal(0, 0.01, (len(idx), 3)).astype(np.float32)
        nd = np.zeros((V, 3), np.float32)
        nd[idx] = rng.normal(0, 0.05, (len(idx), 3)).astype(np.float32)
        targets.append(MorphTargetAsset(f"t{k}", d, nd, None))
    return MeshPrimitiveAsset(vertices=v, indices=np.zeros(0, np.uint32), morph_targets=targets)


def synthetic_scene(prims: list[MeshPrimitiveAsset]) -> SceneAsset:
    return SceneAsset(nodes=[NodeAsset(f"n{i}", mesh=i) for i in range(len(prims))],
                      meshes=[MeshAsset(f"m{i}", [p]) for i, p in enumerate(prims)], skins=[], animations=[],
                      roots=list(range(len(prims))))


class Timer:
    """Two timestamps around recorded work; GPU milliseconds (vkmorph.gpu.timestamps, shared with the demo)."""

    def __init__(self, ctx):
        from ..gpu.timestamps import Timestamps

        self.ctx = ctx
        self.stamps = Timestamps(ctx, count=2)

    def time_ms(self, record, repeats: int, warmup: int = 3) -> float:
        from ..gpu.timestamps import BOTTOM, TOP

        ts, out = self.stamps, []
        for i in range(warmup + repeats):
            def rec(cb):
                ts.reset(cb)
                ts.write(cb, 0, 0, TOP)
                record(cb)
                ts.write(cb, 1, 0, BOTTOM)
            self.ctx.submit_and_wait(rec)
            ms = ts.read_ms(0)
            if i >= warmup:
                out.append(ms[0] if ms else float("nan"))
        return float(np.median(out))

    def destroy(self):
        self.stamps.destroy()


def copy_bandwidth(ctx, timer: Timer, nbytes: int, repeats: int) -> float:
    from ..gpu import memory as M
    from ..gpu.interface import COPY, COPY_PUSH
    from ..gpu.pipeline import ComputePipeline
    from ..gpu.vk import vk

    n = min(max(1, nbytes // 32), 65535 * COPY.local_size)  # half read, half written; uvec4 = 16 B; one dispatch
    src = M.device_buffer(ctx, None, M.STORAGE, size=16 * n)
    dst = M.device_buffer(ctx, None, M.STORAGE, size=16 * n)
    pipe = ComputePipeline(ctx, COPY)
    dset = pipe.make_set({"src": src, "dst": dst})
    push = np.array([(n, 0)], COPY_PUSH)

    def rec(cb):
        pipe.bind(cb, dset)
        pipe.push(cb, M.cffi_pointer(push))
        vk.vkCmdDispatch(cb, pipe.groups(n), 1, 1)

    ms = timer.time_ms(rec, repeats)
    for o in (pipe, src, dst):
        o.destroy()
    return 2 * 16 * n / (ms * 1e-3) / 1e9


def _changing_record(rt, rng_weights: np.ndarray):
    """A record function that changes every weight each frame (so every frame does the full work)."""
    flip = [0]

    def rec(cb):
        flip[0] ^= 1
        rt.pose.set_flat(rng_weights * (0.9 if flip[0] else 1.0))
        rt.record(cb)
    return rec


def bench_case(ctx, timer, V, T, coverage, active, fmt, repeats) -> Row:
    from ..morph.gpu_data import nonzero_vertices
    from ..morph.reference import morph_reference
    from ..render.morph_pass import MorphRuntime

    t0 = time.perf_counter()
    prim = synthetic_primitive(V, T, coverage)
    rt = MorphRuntime(ctx, synthetic_scene([prim]), delta_format=fmt)
    build_s = time.perf_counter() - t0
    inst = rt.morphing[0]
    w = np.zeros(T, np.float32)
    w[:active] = np.linspace(0.3, 0.9, active)
    ms = timer.time_ms(_changing_record(rt, w), repeats)
    D = inst.delta_count
    act = sum(len(nonzero_vertices(prim, int(t))) for t in np.flatnonzero(w))
    per_active, per_idle = (64, 16) if fmt == "full" else (24, 8)
    nbytes = V * (48 + 4 + 4 + 36) + act * per_active + (D - act) * per_idle
    gbps = nbytes / (ms * 1e-3) / 1e9
    cp = copy_bandwidth(ctx, timer, nbytes, repeats)
    last = rt.pose.weights(0).astype(np.float64)
    t1 = time.perf_counter()
    p, _, _ = morph_reference(prim, last)
    np_ms = (time.perf_counter() - t1) * 1e3
    out = rt.read_vertices(inst)
    err = float(np.abs(out["position"] - p).max())
    gpu_mib = sum(rt.gpu_bytes.values()) / 2**20
    dense_mib = (V * 48 + T * V * 2 * 12 + V * 48) / 2**20  # base + one (pos, normal) array per target + output
    rt.destroy()
    return Row(V, T, coverage, active, fmt, D, ms, gbps, cp, gbps / cp, np_ms, np_ms / ms, err, gpu_mib,
               dense_mib, build_s)


def cpu_frame_costs(ctx, counts=(1, 10, 100, 1000), repeats: int = 50) -> list[dict]:
    """Python milliseconds per frame of record() for N primitives: weights unchanged vs all changed."""
    from ..gpu.vk import vk
    from ..render.morph_pass import MorphRuntime

    rows = []
    cb = ctx.allocate_command_buffer()
    try:
        for n in counts:
            prims = [synthetic_primitive(64, 8, 0.5, seed=i) for i in range(n)]
            rt = MorphRuntime(ctx, synthetic_scene(prims))
            base = np.random.default_rng(0).random(len(rt.pose.flat)).astype(np.float32)
            timings = {"unchanged": [], "changed": []}
            for i in range(repeats + 5):
                for mode in ("changed", "unchanged"):
                    ctx.begin(cb)
                    t = time.perf_counter()
                    if mode == "changed":
                        rt.pose.set_flat(base * (0.5 if i % 2 else 1.0))
                    rt.record(cb)
                    dt = (time.perf_counter() - t) * 1e3
                    ctx.end(cb)
                    vk.vkResetCommandBuffer(cb, 0)
                    if i >= 5:
                        timings[mode].append(dt)
            rows.append({"primitives": n, "unchanged_ms": float(np.median(timings["unchanged"])),
                         "changed_ms": float(np.median(timings["changed"])),
                         "dispatch_calls_changed": 1 if n > 4 else n})
            rt.destroy()
    finally:
        ctx.free_command_buffer(cb)
    return rows


def characters_per_frame(ctx, timer, heads: int, repeats: int, fmt: str) -> dict:
    """Dawn-like heads (14k vertices, 50 targets, 5 active) batched in one runtime: how many fit in 16.6 ms."""
    from ..render.morph_pass import MorphRuntime

    prims = [synthetic_primitive(14_000, 50, 0.1, seed=i) for i in range(heads)]
    rt = MorphRuntime(ctx, synthetic_scene(prims), delta_format=fmt)
    w = np.zeros(len(rt.pose.flat), np.float32)
    for i in range(heads):
        sl = rt.pose.slice_of(i)
        w[sl.start:sl.start + 5] = 0.5
    ms = timer.time_ms(_changing_record(rt, w), repeats)
    rt.destroy()
    per = ms / heads
    return {"heads": heads, "format": fmt, "gpu_ms_all_heads": ms, "gpu_ms_per_head": per,
            "heads_per_16_6_ms": int(FRAME_MS / per) if per > 0 else 0}


def run_bench(args) -> int:
    from ..gpu.context import Context

    ctx = Context.create(echo_messages=True)
    if args.quick:
        cases = [(5_000, 8, 0.25, 5, "full"), (50_000, 52, 0.25, 5, "full"), (50_000, 52, 0.25, 5, "compact")]
        counts, heads, repeats = (1, 10, 100), 4, 5
    else:
        cases = [(5_000, 8, 0.25, 5, "full")]
        for V in (50_000, 500_000, 2_000_000):
            for fmt in ("full", "compact"):
                cases += [(V, 52, 0.25, 5, fmt), (V, 52, 0.05, 52, fmt)]
        cases += [(500_000, 200, 0.05, 1, "full"), (500_000, 8, 1.0, 8, "full"), (500_000, 8, 1.0, 8, "compact")]
        if ctx.info.device_type == "discrete":
            cases += [(5_000_000, 52, 0.05, 5, "full"), (5_000_000, 52, 0.05, 5, "compact")]
        counts, heads, repeats = (1, 10, 100, 1000), 32, 20
    rows = []
    report: dict = {}
    try:
        timer = Timer(ctx)
        print(f"device: {ctx.info.name} (Vulkan {ctx.info.api_version}, driver {ctx.info.driver_version})")
        for V, T, cov, act, fmt in cases:
            r = bench_case(ctx, timer, V, T, cov, act, fmt, repeats)
            rows.append(r)
            print(f"V={V:>9,} T={T:>3} cov={cov:>4.0%} active={act:>3} {fmt:>7} deltas={r.deltas:>10,}: morph "
                  f"{r.morph_ms:8.3f} ms {r.morph_gbps:7.1f} GB/s | copy {r.copy_gbps:7.1f} GB/s | ratio "
                  f"{r.ratio_to_copy:5.2f} | numpy {r.numpy_ms:8.1f} ms x{r.speedup_vs_numpy:7.1f} | "
                  f"err {r.max_error:.1e} | {r.gpu_mib:7.1f} MiB (dense {r.dense_mib:7.1f}) | build {r.build_s:.2f} s",
                  flush=True)
        cpu = cpu_frame_costs(ctx, counts)
        for c in cpu:
            print(f"CPU per frame, {c['primitives']:>4} primitives: unchanged {c['unchanged_ms']:.4f} ms, all "
                  f"changed {c['changed_ms']:.3f} ms", flush=True)
        chars = [characters_per_frame(ctx, timer, heads, repeats, fmt) for fmt in ("full", "compact")]
        for c in chars:
            print(f"Dawn-like heads ({c['format']}): {c['gpu_ms_per_head'] * 1e3:.1f} us each -> "
                  f"{c['heads_per_16_6_ms']} per 16.6 ms frame", flush=True)
        timer.destroy()
        report = {"device": ctx.info.name, "api": ctx.info.api_version, "driver": ctx.info.driver_version,
                  "host": platform.node(), "date": time.strftime("%Y-%m-%d"), "rows": [asdict(r) for r in rows],
                  "cpu_per_frame": cpu, "characters": chars}
    finally:
        ctx.destroy()
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(report, fh, indent=2)
    if args.markdown:
        with open(args.markdown, "w") as fh:
            fh.write(markdown(report))
    if args.plot:
        plot(report, args.plot)
    return 3 if ctx.errors_and_warnings() else 0


def markdown(report: dict) -> str:
    out = [f"# vkmorph bench, {report['date']}, {report['device']} (driver {report['driver']})\n",
           "| V | T | coverage | active | format | deltas | morph ms | GB/s | copy GB/s | ratio | numpy ms | "
           "speedup | max err | GPU MiB | dense MiB |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in report["rows"]:
        out.append(f"| {r['vertices']:,} | {r['targets']} | {r['coverage']:.0%} | {r['active']} | {r['delta_format']} "
                   f"| {r['deltas']:,} | {r['morph_ms']:.3f} | {r['morph_gbps']:.1f} | {r['copy_gbps']:.1f} | "
                   f"{r['ratio_to_copy']:.2f} | {r['numpy_ms']:.1f} | {r['speedup_vs_numpy']:.1f} | "
                   f"{r['max_error']:.1e} | {r['gpu_mib']:.1f} | {r['dense_mib']:.1f} |")
    out += ["", "| primitives | CPU ms/frame unchanged | CPU ms/frame all changed |", "|---|---|---|"]
    for c in report["cpu_per_frame"]:
        out.append(f"| {c['primitives']} | {c['unchanged_ms']:.4f} | {c['changed_ms']:.3f} |")
    out += ["", "| format | GPU us per Dawn-like head (14k verts, 50 targets, 5 active) | heads per 16.6 ms |",
            "|---|---|---|"]
    for c in report["characters"]:
        out.append(f"| {c['format']} | {c['gpu_ms_per_head'] * 1e3:.1f} | {c['heads_per_16_6_ms']} |")
    return "\n".join(out) + "\n"


def plot(report: dict, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from ..errors import UsageError

        raise UsageError("--plot needs matplotlib: pip install 'vkmorph[bench]'") from None
    fig, ax = plt.subplots(1, 2, figsize=(11, 4))
    for fmt, marker in (("full", "o"), ("compact", "s")):
        rows = [r for r in report["rows"] if r["delta_format"] == fmt]
        ax[0].scatter([r["vertices"] for r in rows], [r["ratio_to_copy"] for r in rows], marker=marker, label=fmt)
    ax[0].set_xscale("log")
    ax[0].axhline(0.75, ls="--", c="grey", label="goal 0.75")
    ax[0].set_xlabel("vertices")
    ax[0].set_ylabel("morph GB/s / copy GB/s")
    ax[0].legend()
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
    fig.savefig(path, dpi=110)
