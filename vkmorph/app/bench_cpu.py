"""CPU per frame: ``MorphRuntime.record`` for N primitives (weights unchanged, all changed in bulk, all changed
node by node) and ``record()`` + ``draws()`` per frame, each in thread CPU time beside wall time."""

from __future__ import annotations

import time

import numpy as np

from .bench_data import synthetic_primitive, synthetic_scene


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
