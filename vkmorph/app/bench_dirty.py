"""k of N primitives changed: GPU time and record() CPU time per frame when only some primitives' weights
change, with the dispatched ranges and workgroups."""

from __future__ import annotations

import time

import numpy as np

from .bench_data import synthetic_primitive, synthetic_scene


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
