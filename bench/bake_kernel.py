"""What bounds the GPU bake on this device: one batch of RobotExpressive (world space, Dance) split into its
parts, each timed as submit + fence wait (wall) and process CPU time (on lavapipe the "GPU" is the host's
cores, so CPU seconds are the cost; wall depends on what else the host runs), median of N after a warm-up:

- kernel: the batch's dispatches as the bake records them (rigid, skinned and morphing parts): the wide kernel
  (bake_wide.comp, the default on CPU devices: 64-bit stores, the batch's matrices in a uniform texel buffer), and
  float stores with the matrices in the uniform window (bake_ubo.comp), each with a kernel pipeline per mode
  (``split_modes=True``, the default on a CPU device: the kernel specialized to skinned, rigid or copy, items
  dispatched per mode) and with one pipeline for every mode (``split_modes=False``, each item's mode read at run
  time, as on a GPU), alternating over --rounds rounds in the same process (the host poses: the matrices are
  written once);
- stores only: the same dispatches with every item in MODE_COPY (the kernel reads each vertex once and writes
  it for every frame: the output stores and the loop, no matrices, no transform);
- readback: the batch's readback alone (``_Slot.record_readback`` + the host's one copy into the result);
- numpy: ``bake_numpy_fast`` for the same frames (single-threaded; its CPU time is its cost).

    python bench/bake_kernel.py [--frames 64] [--repeats 9] [--rounds 5] [--out bench/NAME.txt]
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
    from vkmorph.bake import BakeResources, GpuBaker, _Layout, bake_numpy_fast, frame_weights
    from vkmorph.gpu.interface import BAKE_COPY
    from vkmorph.gpu.memory import host_cached_device_memory
    from vkmorph.gpu.vk import vk

    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=64)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out")
    a = ap.parse_args()
    m = vkmorph.open(find_model(BAKE_MODEL))
    lines, made = [], []
    try:
        clip = m.scene.clip("Dance")
        F = a.frames
        times = np.linspace(0.0, clip.duration, F)
        W = frame_weights(m, clip, times, None)
        baker = GpuBaker(m, "world", pose="cpu")
        V = baker.layout.total
        fv = F * V
        planes = np.empty((3, F, V, 3), np.float32)
        mats = baker.layout.matrices(PoseBatch(m.scene), times, clip)
        direct = host_cached_device_memory(m.ctx)
        copy_layout = _Layout(m, "world", True)
        copy_layout.modes = [BAKE_COPY] * len(copy_layout.modes)     # stores only: every item copied

        ubo_window = GpuBaker(m, "world", pose="cpu", wide_stores=False).window     # the float-store kernels'

        def setup(layout, split, wide):
            """One batch slot's resources of F frames (made apart from the model's cache, so all stay alive): the
            wide kernel reads the batch's matrices through a texel buffer, the others through the uniform window."""
            res = BakeResources(m, layout, F, direct, False, 0 if wide else ubo_window, split, wide=wide)
            made.append(res)
            slot = res.slots[0]
            slot.matrices.mapped[:mats.nbytes] = np.ascontiguousarray(mats.transpose(0, 1, 3, 2)) \
                .view(np.uint8).reshape(-1)
            return res, slot

        def batch(res, slot):
            baker._record(res, slot, 0, W, F, slot.out_offsets())
            m.ctx.submit([slot.cb], fence=slot.fence)
            m.ctx.wait_fence(slot.fence)

        variants = {"a kernel per mode, 64-bit stores (wide_stores, the default here)": (True, baker.wide_stores),
                    "a kernel per mode, float stores (wide_stores=False)": (True, False),
                    "one kernel for every mode (split_modes=False)": (False, False)}
        setups = {name: (setup(baker.layout, *v), setup(copy_layout, *v)) for name, v in variants.items()}
        ref = None
        for name, ((res, slot), _) in setups.items():         # both give the same bake
            batch(res, slot)
            got = np.empty_like(planes)
            slot.copy_into(got, 0, F)
            ref = got if ref is None else ref
            if not np.array_equal(got, ref):
                raise SystemExit(f"{name}: differs from the other variant by {np.abs(got - ref).max():.3g}")
        results = {}
        for _ in range(a.rounds):                # the variants alternate, so all see the same load
            for name, (kernel, stores) in setups.items():
                results.setdefault(name, []).append((timed(lambda k=kernel: batch(*k), a.repeats),
                                                     timed(lambda s_=stores: batch(*s_), a.repeats)))
        slot = setups[next(iter(setups))][0][1]

        def readback():
            vk.vkResetCommandBuffer(slot.cb, 0)
            m.ctx.begin(slot.cb, vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
            slot.record_readback(slot.cb, F, V)
            m.ctx.end(slot.cb)
            m.ctx.submit([slot.cb], fence=slot.fence)
            m.ctx.wait_fence(slot.fence)
            slot.copy_into(planes, 0, F)

        rb = timed(readback, a.repeats)
        npy = timed(lambda: bake_numpy_fast(m, clip="Dance", times=times, space="world"), a.repeats)
        load = os.getloadavg()[0]
        lines.append(f"{time.strftime('%Y-%m-%d %H:%M')} {m.ctx.info.name}, host {platform.node()} "
                     f"({os.cpu_count()} CPUs, load {load:.1f}); RobotExpressive Dance, world space, one batch of "
                     f"{F} frames x {V:,} vertices ({fv:,} frame-vertices), {baker.layout.matrices_per_frame} "
                     f"matrices a frame (the wide kernel: a texel buffer; the float-store kernels: a uniform window of "
                     f"{ubo_window} frames), direct readback: {direct}; "
                     f"median of {a.repeats}, {a.rounds} rounds; the two variants' bakes are equal")
        for r in range(a.rounds):
            for name, runs in results.items():
                kernel, stores = runs[r]
                lines.append(f"  round {r + 1}, {name}")
                for label, (w, c) in (("kernel (as the bake records it)", kernel),
                                      ("stores only (all MODE_COPY)", stores)):
                    lines.append(f"    {label:<34} wall {w * 1e3:8.1f} ms  CPU {c * 1e3:8.1f} ms  "
                                 f"CPU per frame-vertex {c / fv * 1e9:6.1f} ns")
        for label, (w, c) in (("readback alone", rb), ("numpy baseline (bake_numpy_fast)", npy)):
            lines.append(f"  {label:<36} wall {w * 1e3:8.1f} ms  CPU {c * 1e3:8.1f} ms  "
                         f"CPU per frame-vertex {c / fv * 1e9:6.1f} ns")
        names = list(variants)
        ks = {n: [r_[0][1] for r_ in results[n]] for n in names}          # kernel CPU per round
        kw = {n: [r_[0][0] for r_ in results[n]] for n in names}
        for n in names[1:]:
            ratios = [b / a_ for a_, b in zip(ks[names[0]], ks[n])]
            lines.append(f"  kernel CPU, {n} / {names[0]}: {np.median(ratios):.2f}x "
                         f"({min(ratios):.2f}-{max(ratios):.2f} over the rounds)")
        for n in names:
            lines.append(f"  kernel CPU per frame-vertex, {n}: {np.median(ks[n]) / fv * 1e9:.1f} ns "
                         f"({min(ks[n]) / fv * 1e9:.1f}-{max(ks[n]) / fv * 1e9:.1f}); numpy CPU / kernel CPU "
                         f"{npy[1] / np.median(ks[n]):.2f}, numpy CPU / kernel wall {npy[1] / np.median(kw[n]):.2f}")
        lines.append(f"  a 5x bake needs {npy[1] / 5 * 1e3:.1f} ms wall per batch, everything included")
    finally:
        for res in made:
            res.destroy()
        m.close()
    emit(lines, a.out)


if __name__ == "__main__":
    main()
