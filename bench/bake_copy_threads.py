"""How the copy path's bake scales with the threads of its host copy (``GpuBaker(copy_threads=)``) and the batch
size, on one model (opened once per batch size, so that no bake rebuilds its resources): every configuration
baked in turn per round (same moment, same load), after a warm-up, median and min-max of the rounds' wall and
process CPU; numpy's baseline (``bake_numpy_fast``) in the same rounds.

    python bench/bake_copy_threads.py [--frames 256] [--rounds 5] [--threads 1,4,8,16] [--batches 0,32] [--out F]

``--batches 0`` is the bake's own batch size (``GpuBaker.batch_size``). On a discrete GPU the copy path is the
default (``GpuBaker.uses_zero_copy``), and its readback is the host copy of each batch into fresh result pages.
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
    ap.add_argument("--frames", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--threads", default="1,4,8,16")
    ap.add_argument("--batches", default="0,32")
    ap.add_argument("--out")
    a = ap.parse_args()
    threads = [int(x) for x in a.threads.split(",")]
    batches = [int(x) for x in a.batches.split(",")]
    path = find_model(BAKE_MODEL)
    models = {b: vkmorph.open(path) for b in batches}     # a model per batch size: each keeps its resources
    m = models[batches[0]]
    try:
        clip = m.scene.animations[0]
        times = np.linspace(0.0, clip.duration, a.frames)
        configs = [(t, b) for b in batches for t in threads]
        runs = {c: (lambda c=c: GpuBaker(models[c[1]], "world", zero_copy=False, copy_threads=c[0])
                    .run(models[c[1]].scene.animations[0], times, None, c[1] or None, False)) for c in configs}
        runs["numpy"] = lambda: bake_numpy_fast(m, clip=clip.name, times=times, space="world")
        for fn in runs.values():
            fn()
        secs = {k: [] for k in runs}
        for _ in range(a.rounds):
            for k, fn in runs.items():
                t0, c0 = time.perf_counter(), time.process_time()
                fn()
                secs[k].append((time.perf_counter() - t0, time.process_time() - c0))
        B0 = GpuBaker(m, "world", zero_copy=False).batch_size(a.frames, None)
        npw = np.array([w for w, _ in secs["numpy"]])
        lines = [f"# bench/bake_copy_threads.py --frames {a.frames} --rounds {a.rounds} --threads {a.threads} "
                 f"--batches {a.batches}, {time.strftime('%Y-%m-%d %H:%M')} UTC",
                 f"## {m.ctx.info.name}, host {platform.node()} ({os.cpu_count()} CPUs, load "
                 f"{os.getloadavg()[0]:.1f}); {path.name}, {a.frames} frames x {GpuBaker(m, 'world').layout.total:,} "
                 f"vertices, the copy path (zero_copy=False); median (min-max) of {a.rounds} rounds",
                 f"  numpy (bake_numpy_fast)        wall {np.median(npw) * 1e3:7.1f} ms ({npw.min() * 1e3:.1f}-"
                 f"{npw.max() * 1e3:.1f})"]
        for (t, b) in configs:
            w = np.array([x for x, _ in secs[(t, b)]])
            c = np.array([y for _, y in secs[(t, b)]])
            r = npw / w
            lines.append(f"  copy threads {t:>2}, batch {b or B0:>4}   wall {np.median(w) * 1e3:7.1f} ms "
                         f"({w.min() * 1e3:.1f}-{w.max() * 1e3:.1f}), CPU {np.median(c) * 1e3:7.1f} ms; numpy / bake "
                         f"{np.median(r):.1f}x ({r.min():.1f}-{r.max():.1f}, per round)")
    finally:
        for mm in models.values():
            mm.close()
    emit(lines, a.out)


if __name__ == "__main__":
    main()
