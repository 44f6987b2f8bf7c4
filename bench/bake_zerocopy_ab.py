"""Where the zero-copy bake's time goes on this device: RobotExpressive's Dance, world space, --frames frames, four
variants in turn per round (the same moment, the same load), each on its own open model, wall and process CPU
(on lavapipe the device's threads are the process's), median over --rounds after a warm-up round:

- zero copy (the default where the device imports host memory): the kernel writes the Bake's fresh result
  array, the host faulting in batch k + 1's pages while the device runs batch k (``_ZeroCopyResult.touch``);
- zero copy without the host's touch: the kernel's own stores fault the fresh pages in;
- the copy path (``zero_copy=False``): the slots' planes (host-visible on lavapipe), a host copy per batch into
  a fresh result;
- zero copy into reused memory (timing only, not a bake anyone gets: the same already-faulted array every
  time): what the bake costs without first touching fresh memory.

Then one frame (what ``Model.pose`` bakes), zero copy forced against the copy path, each on its own model,
alternating, median of 4 x --rounds: the fixed cost of the import and the descriptor updates against one copy.

    python bench/bake_zerocopy_ab.py [--frames 256] [--rounds 9]
"""
import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main():
    import vkmorph
    from vkmorph import bake as B
    from vkmorph.app.bench import BAKE_MODEL, find_model
    from vkmorph.gpu import memory as M

    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=256)
    ap.add_argument("--rounds", type=int, default=9)
    a = ap.parse_args()
    path = find_model(BAKE_MODEL)
    fresh_bytes, touch = M.aligned_host_bytes, B._ZeroCopyResult.touch
    kept: dict = {}

    def reused_bytes(n, align):
        if n not in kept:
            kept[n] = fresh_bytes(n, align)
            kept[n][:] = 0
        return kept[n]

    names = ["zero copy (the default)", "zero copy, no host touch", "copy path (zero_copy=False)",
             "zero copy into reused memory (timing only)"]
    models = [vkmorph.open(path) for _ in names]
    try:
        bakers = [B.GpuBaker(models[0], "world"), B.GpuBaker(models[1], "world", zero_copy=True),
                  B.GpuBaker(models[2], "world", zero_copy=False), B.GpuBaker(models[3], "world", zero_copy=True)]
        times = np.linspace(0.0, models[0].scene.clip("Dance").duration, a.frames)
        res = [[] for _ in names]
        for r in range(a.rounds + 1):
            for k, b in enumerate(bakers):
                M.aligned_host_bytes = reused_bytes if k == 3 else fresh_bytes
                B._ZeroCopyResult.touch = (lambda self, first, n: None) if k == 1 else touch
                t0, c0 = time.perf_counter(), time.process_time()
                b.run(b.m.scene.clip("Dance"), times, None, None, False)
                if r:
                    res[k].append((time.perf_counter() - t0, time.process_time() - c0))
        M.aligned_host_bytes, B._ZeroCopyResult.touch = fresh_bytes, touch
        print(f"{time.strftime('%Y-%m-%d %H:%M')} {models[0].ctx.info.name}, host {platform.node()} "
              f"({os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}); RobotExpressive Dance, world space, "
              f"{a.frames} frames, median of {a.rounds} rounds (min-max)")
        for name, rows in zip(names, res):
            w, c = np.array(rows).T * 1e3
            print(f"  {name:44s} wall {np.median(w):6.1f} ms ({w.min():.1f}-{w.max():.1f})  "
                  f"CPU {np.median(c):6.1f} ms ({c.min():.1f}-{c.max():.1f})")
        one = [[], []]
        for r in range(4 * a.rounds + 1):
            for k in (1, 2):                                # zero copy forced, the copy path
                t0 = time.perf_counter()
                bakers[k].run(bakers[k].m.scene.clip("Dance"), times[a.frames // 2:a.frames // 2 + 1], None, None,
                              False)
                if r:
                    one[k - 1].append(time.perf_counter() - t0)
        print(f"  one frame: zero copy {1e3 * np.median(one[0]):.2f} ms wall, the copy path "
              f"{1e3 * np.median(one[1]):.2f} ms (medians of {4 * a.rounds})")
    finally:
        M.aligned_host_bytes, B._ZeroCopyResult.touch = fresh_bytes, touch
        for m in models:
            m.close()


if __name__ == "__main__":
    main()
