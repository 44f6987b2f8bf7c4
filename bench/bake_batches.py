"""Frames per batch on this device: a zero-copy bake of RobotExpressive (world space, Dance) with each of the
given batch sizes, one open model each (so none rebuilds another's resources), timed in turn --repeats times after
two warm-ups: wall and process CPU medians (min-max of wall), and each against the numpy baseline of the same
round (``bake_numpy_fast``). On a CPU device the "device" is the host's cores: two batches in flight overlap
nothing there, while each batch costs its pose pass, dispatches and fence (``GpuBaker.batch_size``,
``in_place_cpu``).

    python bench/bake_batches.py [--frames 64] [--batches 32,64] [--repeats 11] [--out FILE.txt]
"""
import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_common import emit  # noqa: E402


def main():
    import vkmorph
    from vkmorph.app.bench import BAKE_MODEL, find_model
    from vkmorph.bake import GpuBaker, bake_numpy_fast

    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=64)
    ap.add_argument("--batches", default="32,64")
    ap.add_argument("--repeats", type=int, default=11)
    ap.add_argument("--out")
    a = ap.parse_args()
    sizes = [int(b) for b in a.batches.split(",")]
    models = [vkmorph.open(find_model(BAKE_MODEL)) for _ in sizes]
    try:
        clip = models[0].scene.clip("Dance")
        times = np.linspace(0.0, clip.duration, a.frames)

        def bake(k):
            m = models[k]
            t0, c0 = time.perf_counter(), time.process_time()
            GpuBaker(m, "world").run(m.scene.clip("Dance"), times, None, sizes[k], False)
            return time.perf_counter() - t0, time.process_time() - c0

        for k in range(len(sizes)):
            bake(k)
            bake(k)
            assert models[k]._bake_cache.B == sizes[k] and models[k]._bake_cache.zero_copy, sizes[k]
        rows, numpy_s = [[] for _ in sizes], []
        for _ in range(a.repeats):
            for k in range(len(sizes)):
                rows[k].append(bake(k))
            t0 = time.perf_counter()
            bake_numpy_fast(models[0], clip="Dance", times=times, space="world")
            numpy_s.append(time.perf_counter() - t0)
        load = os.getloadavg()[0]
        lines = [f"# bench/bake_batches.py --frames {a.frames} --batches {a.batches} --repeats {a.repeats}, "
                 f"{time.strftime('%Y-%m-%d %H:%M')} {models[0].ctx.info.name}, host {platform.node()} "
                 f"({os.cpu_count()} CPUs, load {load:.1f}); RobotExpressive Dance, world space, zero copy; numpy "
                 f"{np.median(numpy_s) * 1e3:.1f} ms wall (median)"]
        base = [w for w, _ in rows[0]]
        for k, b in enumerate(sizes):
            wall, cpu = [w for w, _ in rows[k]], [c for _, c in rows[k]]
            ratio = [w / w0 for w, w0 in zip(wall, base)]
            speed = [n / w for n, w in zip(numpy_s, wall)]
            lines.append(f"  {b:5d} frames a batch ({-(-a.frames // b)} batches): wall {np.median(wall) * 1e3:7.2f} ms "
                         f"({min(wall) * 1e3:.2f}-{max(wall) * 1e3:.2f}), CPU {np.median(cpu) * 1e3:7.2f} ms; "
                         f"wall / {sizes[0]} a batch {np.median(ratio):.2f}x ({min(ratio):.2f}-{max(ratio):.2f}); "
                         f"numpy / this {np.median(speed):.2f}x ({min(speed):.2f}-{max(speed):.2f})")
    finally:
        for m in models:
            m.close()
    emit(lines, a.out)


if __name__ == "__main__":
    main()
