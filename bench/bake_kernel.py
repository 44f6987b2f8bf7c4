"""What bounds the GPU bake on this device: one batch of RobotExpressive (world space, Dance) split into its
parts, each timed as submit + fence wait (wall) and process CPU time (on lavapipe the "GPU" is the host's
cores, so CPU seconds are the cost; wall depends on what else the host runs), median of N after a warm-up:

- kernel: the batch's dispatches as the bake records them (rigid, skinned and morphing parts), with the
  matrices in a uniform window (bake_ubo.comp, the default) and in a storage buffer (bake.comp, window=0),
  alternating over --rounds rounds in the same process (the host poses: the matrices are written once);
- stores only: the same dispatches with every item set to MODE_COPY (the kernel reads each vertex once and
  writes it for every frame: the output stores and the loop, no matrices, no transform);
- readback: the batch's readback alone (``_Slot.record_readback`` + the host's one copy into the result);
- numpy: ``bake_numpy_fast`` for the same frames (single-threaded; its CPU time is its cost).

    python bench/bake_kernel.py [--frames 64] [--repeats 9] [--rounds 3] [--out bench/NAME.txt]
"""
import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def timed(fn, repeats):
    fn()
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return float(np.median(wall)), float(np.median(cpu))


def main():
    import vkmorph
    from vkmorph.anim.pose_batch import PoseBatch
    from vkmorph.app.bench import BAKE_MODEL, find_model
    from vkmorph.bake import GpuBaker, bake_numpy_fast, frame_weights
    from vkmorph.gpu import memory as M
    from vkmorph.gpu.interface import BAKE_COPY, BAKE_ITEM
    from vkmorph.gpu.vk import vk

    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out")
    a = ap.parse_args()
    m = vkmorph.open(find_model(BAKE_MODEL))
    lines = []
    try:
        clip = m.scene.clip("Dance")
        F = a.frames
        times = np.linspace(0.0, clip.duration, F)
        W = frame_weights(m, clip, times, None)
        V = GpuBaker(m, "world").layout.total
        fv = F * V
        planes = np.empty((3, F, V, 3), np.float32)
        results = {}

        def measure(window):
            """(kernel, stores only) of one batch of F frames with the kernel that ``window`` selects."""
            baker = GpuBaker(m, "world", pose="cpu", window=window)
            res = baker._resources(F)
            slot = res.slots[0]
            mats = baker.layout.matrices(PoseBatch(m.scene), times, clip)
            slot.matrices.mapped[:mats.nbytes] = np.ascontiguousarray(mats.transpose(0, 1, 3, 2)) \
                .view(np.uint8).reshape(-1)

            def batch():
                baker._record(res, slot, 0, W, F)
                m.ctx.submit([slot.cb], fence=slot.fence)
                m.ctx.wait_fence(slot.fence)

            kernel = timed(batch, a.repeats)     # includes its own readback barrier (and copy on a discrete GPU)
            items = M.readback(m.ctx, res.items, BAKE_ITEM).copy()
            copy_items = items.copy()
            copy_items["mode"] = BAKE_COPY
            M.upload(m.ctx, res.items, copy_items)
            stores = timed(batch, a.repeats)
            M.upload(m.ctx, res.items, items)
            return baker, res, slot, kernel, stores

        for _ in range(a.rounds):                # the two kernels alternate, so both see the same load
            for name, window in (("uniform window", None), ("storage buffer", 0)):
                baker, res, slot, kernel, stores = measure(window)
                results.setdefault(name, []).append((kernel, stores, baker.window))

        def readback():
            vk.vkResetCommandBuffer(slot.cb, 0)
            m.ctx.begin(slot.cb, vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
            slot.record_readback(slot.cb, F, V)
            m.ctx.end(slot.cb)
            m.ctx.submit([slot.cb], fence=slot.fence)
            m.ctx.wait_fence(slot.fence)
            planes[:] = slot.planes(F, V)

        rb = timed(readback, a.repeats)
        npy = timed(lambda: bake_numpy_fast(m, clip="Dance", times=times, space="world"), a.repeats)
        load = os.getloadavg()[0]
        lines.append(f"{time.strftime('%Y-%m-%d %H:%M')} {m.ctx.info.name}, host {platform.node()} "
                     f"({os.cpu_count()} CPUs, load {load:.1f}); RobotExpressive Dance, world space, one batch of "
                     f"{F} frames x {V:,} vertices ({fv:,} frame-vertices), {baker.layout.matrices_per_frame} "
                     f"matrices a frame, direct readback: {res.direct}; median of {a.repeats}, {a.rounds} rounds")
        for r in range(a.rounds):
            for runs in results.values():
                kernel, stores, window = runs[r]
                what = (f"matrices in a uniform window of {window} frames (bake_ubo.comp)" if window else
                        "matrices in a storage buffer (bake.comp)")
                lines.append(f"  round {r + 1}, {what}")
                for label, (w, c) in (("kernel (as the bake records it)", kernel),
                                      ("stores only (all MODE_COPY)", stores)):
                    lines.append(f"    {label:<34} wall {w * 1e3:8.1f} ms  CPU {c * 1e3:8.1f} ms  "
                                 f"CPU per frame-vertex {c / fv * 1e9:6.1f} ns")
        for label, (w, c) in (("readback alone", rb), ("numpy baseline (bake_numpy_fast)", npy)):
            lines.append(f"  {label:<36} wall {w * 1e3:8.1f} ms  CPU {c * 1e3:8.1f} ms  "
                         f"CPU per frame-vertex {c / fv * 1e9:6.1f} ns")
        ubo = [k[0][1] for k in results["uniform window"]]
        ssbo = [k[0][1] for k in results["storage buffer"]]
        ratios = [s_ / u for u, s_ in zip(ubo, ssbo)]
        stores = [k[1][1] for k in results["uniform window"]]
        lines.append(f"  kernel CPU, storage buffer / uniform window: {np.median(ratios):.2f}x "
                     f"({min(ratios):.2f}-{max(ratios):.2f} over the rounds)")
        lines.append(f"  numpy CPU / kernel CPU: uniform window {npy[1] / np.median(ubo):.2f}, storage buffer "
                     f"{npy[1] / np.median(ssbo):.2f}; numpy CPU / stores-only CPU = {npy[1] / np.median(stores):.2f}; "
                     f"a 5x bake needs {npy[1] / 5 * 1e3:.1f} ms wall, the stores alone on both cores take >= "
                     f"{np.median(stores) / 2 * 1e3:.1f} ms")
    finally:
        m.close()
    text = "\n".join(lines)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
