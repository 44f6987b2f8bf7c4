"""The bake's figures on their own: ``vkmorph.bake.measure_bake_throughput`` (GPU bake, numpy baseline, readback
limit; warm-up + median of N each, min-max) on RobotExpressive's first clip, with the machine it ran on.

    python bench/bake.py [--frames 256] [--repeats 5] [--json OUT.json] [--file MODEL]

The same measurement is the bake line of ``vkmorph bench`` (64 frames with --quick, 256 without): beside the GPU
bake, numpy and the readback, the host thread's CPU per batch with the pose on the GPU (the default) and on the host
(``pose="cpu"``, as before the pose pass), and that bake's time. This script adds the pose pass alone: one batch's
pose dispatch (crowd_anim.comp through ClipPosePass) submitted and waited for, wall and process CPU (on lavapipe the
"GPU" is the process's own threads), median of --repeats after a warm-up; and the kernels in turn: the default bake
(on a CPU device bake_wide.comp: a kernel pipeline per mode, ``split_modes``, 64-bit stores, the batch's matrices in a
uniform texel buffer; on a GPU bake_ubo.comp, the matrices in a uniform window), the same bake with one kernel
pipeline for every mode (``split_modes=False``, as on a GPU), the bake with the matrices in a storage buffer
(bake.comp, ``window=0``), the kernel per mode with float stores and the uniform window (``wide_stores=False``,
bake_ubo.comp), numpy, the copy path (``zero_copy=False``: the slots' own output
planes and a host copy per batch, the path before the zero-copy result) and the copy path with its host copy on
one thread (``copy_threads=1``; the default splits it over ``host_copy_threads``), one after the other per repeat, with
the ratios within each round. RobotExpressive's
clips keep their weights constant (one morph pass per bake); ``--file`` with a model whose clip animates weights
(tests/assets/AnimatedMorphCube) times the per-frame morph path.
"""
import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def pose_pass_alone(path, frames: int, repeats: int) -> dict:
    """Seconds (wall, process CPU) of one batch's pose pass alone, through the bake's own resources."""
    import numpy as np

    import vkmorph
    from vkmorph.bake import GpuBaker, clip_times
    from vkmorph.gpu import barriers
    from vkmorph.gpu.vk import vk

    m = vkmorph.open(path)
    try:
        clip = m.scene.animations[0]
        times = np.linspace(0.0, clip.duration, frames)
        baker = GpuBaker(m, "world")
        baker.run(clip, times, None, None, False)
        res = m._bake_cache
        n = res.B
        res.pose.write(0, res.pose.clip_index(clip), clip_times(clip, times[:n]))
        slot = res.slots[0]
        wall, cpu = [], []
        for _ in range(repeats + 1):
            vk.vkResetCommandBuffer(slot.cb, 0)
            m.ctx.begin(slot.cb, vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
            barriers.record(slot.cb, barriers.READBACK_TO_BAKE_WRITES)
            res.pose.record(slot.cb, 0, n)
            m.ctx.end(slot.cb)
            t0, c0 = time.perf_counter(), time.process_time()
            m.ctx.submit([slot.cb], fence=slot.fence)
            m.ctx.wait_fence(slot.fence)
            wall.append(time.perf_counter() - t0)
            cpu.append(time.process_time() - c0)
        wall, cpu = wall[1:], cpu[1:]
        return {"pose_pass_frames": n, "pose_pass_s": float(np.median(wall)), "pose_pass_s_min": min(wall),
                "pose_pass_s_max": max(wall), "pose_pass_cpu_s": float(np.median(cpu))}
    finally:
        m.close()


def kernels_alternating(path, frames: int, repeats: int) -> dict:
    """The default bake against one kernel pipeline for every mode (``split_modes=False``) and the matrices in a
    storage buffer (bake.comp, ``window=0``), float stores with the uniform window (``wide_stores=False``), and the
    numpy baseline, timed in turn ``repeats`` times after a
    warm-up (each kernel on its own open model, so none rebuilds its resources): medians, and the ratios of each
    round (same moment, same load); and the copy path (``zero_copy=False``) against the default (zero copy where
    the device imports host memory)."""
    import numpy as np

    import vkmorph
    from vkmorph.bake import GpuBaker, bake_numpy_fast

    models = [vkmorph.open(path) for _ in range(6)]
    try:
        clip = models[0].scene.animations[0]
        times = np.linspace(0.0, clip.duration, frames)
        bakers = [GpuBaker(models[0], "world"), GpuBaker(models[1], "world", split_modes=False),
                  GpuBaker(models[2], "world", window=0), GpuBaker(models[3], "world", zero_copy=False),
                  GpuBaker(models[4], "world", zero_copy=False, copy_threads=1),
                  GpuBaker(models[5], "world", wide_stores=False)]
        runs = [lambda b=b: b.run(b.m.scene.animations[0], times, None, None, False) for b in bakers]
        runs.insert(3, lambda: bake_numpy_fast(models[0], clip=clip.name, times=times, space="world"))
        for fn in runs:
            fn()
        wall, cpu = [[] for _ in runs], [[] for _ in runs]
        for _ in range(repeats):
            for k, fn in enumerate(runs):
                t0, c0 = time.perf_counter(), time.process_time()
                fn()
                wall[k].append(time.perf_counter() - t0)
                cpu[k].append(time.process_time() - c0)
        out = {"window_frames": bakers[0].window, "floats_window_frames": bakers[5].window,
               "matrices_per_frame": bakers[0].layout.matrices_per_frame,
               "split_modes": bakers[0].split_modes, "zero_copy": models[0]._bake_cache.zero_copy,
               "wide_stores": bakers[0].wide_stores, "copy_threads": bakers[3].host_copy_threads(frames)}
        for k, name in enumerate(("ubo", "one", "ssbo", "numpy", "copy", "copy1", "floats")):
            out[f"alt_{name}_s"], out[f"alt_{name}_cpu_s"] = float(np.median(wall[k])), float(np.median(cpu[k]))
        for name, num, den in (("numpy_over_ubo", 3, 0), ("numpy_over_one", 3, 1), ("numpy_over_ssbo", 3, 2),
                               ("one_over_ubo", 1, 0), ("ssbo_over_ubo", 2, 0), ("numpy_over_copy", 3, 4),
                               ("copy_over_ubo", 4, 0), ("copy1_over_copy", 5, 4), ("floats_over_ubo", 6, 0)):
            r = [n / d for n, d in zip(wall[num], wall[den])]
            rc = [n / d for n, d in zip(cpu[num], cpu[den])]
            out[f"alt_{name}"], out[f"alt_{name}_min"], out[f"alt_{name}_max"] = float(np.median(r)), min(r), max(r)
            out[f"alt_{name}_cpu"] = float(np.median(rc))
        return out
    finally:
        for m in models:
            m.close()


def main():
    from vkmorph.app.bench import BAKE_MODEL, bake_line, find_model
    from vkmorph.bake import measure_bake_throughput

    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=256)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--json")
    ap.add_argument("--file", help="another model (default: RobotExpressive)")
    a = ap.parse_args()
    path = Path(a.file) if a.file else find_model(BAKE_MODEL)
    if path is None:
        sys.exit(f"{BAKE_MODEL} not found (set VKMORPH_ASSETS)")
    load = os.getloadavg()
    r = measure_bake_throughput(path, frames=a.frames, repeats=a.repeats)
    r.update(pose_pass_alone(path, a.frames, a.repeats))
    r.update(kernels_alternating(path, a.frames, a.repeats))
    r.update(host=platform.node(), cpus=os.cpu_count(), date=time.strftime("%Y-%m-%d %H:%M"),
             load_before=load[0], load_after=os.getloadavg()[0])
    print(f"{r['date']} {r['device']}, host {r['host']} ({r['cpus']} CPUs, load {r['load_before']:.1f} before, "
          f"{r['load_after']:.1f} after)")
    print(bake_line(r))
    print(f"pose pass alone ({r['pose_pass_frames']} frames, one batch): {1e3 * r['pose_pass_s']:.2f} ms wall "
          f"({1e3 * r['pose_pass_s_min']:.2f}-{1e3 * r['pose_pass_s_max']:.2f}), "
          f"{1e3 * r['pose_pass_cpu_s']:.2f} ms process CPU")
    def ratio(name):
        return (f"{r[f'alt_{name}']:.2f}x ({r[f'alt_{name}_min']:.2f}-{r[f'alt_{name}_max']:.2f}; "
                f"CPU {r[f'alt_{name}_cpu']:.2f}x)")

    split = "a kernel per mode" if r["split_modes"] else "one kernel"
    matrices = ("64-bit stores, matrices in a texel buffer" if r["wide_stores"] else
                f"matrices in a uniform window of {r['window_frames']} frames")
    print(f"kernels in turn (world space, {a.frames} frames, {a.repeats} rounds): the default ({matrices}, "
          f"{r['matrices_per_frame']} a frame; {split}) "
          f"{r['alt_ubo_s']:.3f} s wall, {r['alt_ubo_cpu_s']:.3f} s CPU; one kernel for every mode (split_modes=False) "
          f"{r['alt_one_s']:.3f} s wall, {r['alt_one_cpu_s']:.3f} s CPU; matrices in a storage buffer (window=0) "
          f"{r['alt_ssbo_s']:.3f} s wall, {r['alt_ssbo_cpu_s']:.3f} s CPU; numpy {r['alt_numpy_s']:.3f} s wall, "
          f"{r['alt_numpy_cpu_s']:.3f} s CPU; numpy / default {ratio('numpy_over_ubo')}, numpy / one kernel "
          f"{ratio('numpy_over_one')}, numpy / storage {ratio('numpy_over_ssbo')}, one kernel / default "
          f"{ratio('one_over_ubo')}, storage / default {ratio('ssbo_over_ubo')}; the default's zero copy: "
          f"{r['zero_copy']}; the copy path (zero_copy=False: the slots' planes, a host copy per batch) "
          f"{r['alt_copy_s']:.3f} s wall, {r['alt_copy_cpu_s']:.3f} s CPU, numpy / copy path "
          f"{ratio('numpy_over_copy')}, copy path / default {ratio('copy_over_ubo')}; the copy path's host copy on "
          f"{r['copy_threads']} thread(s) (GpuBaker.host_copy_threads), on one thread (copy_threads=1) "
          f"{r['alt_copy1_s']:.3f} s wall, {r['alt_copy1_cpu_s']:.3f} s CPU, one thread / default threads "
          f"{ratio('copy1_over_copy')}; the default's 64-bit stores (wide_stores): {r['wide_stores']}; float stores, "
          f"matrices in a uniform window of {r['floats_window_frames']} frames (wide_stores=False) "
          f"{r['alt_floats_s']:.3f} s wall, {r['alt_floats_cpu_s']:.3f} s CPU, float / default "
          f"{ratio('floats_over_ubo')}")
    print("goals: >= 5x numpy:", "met" if r["speedup"] >= 5 else "not met",
          f"({r['speedup']:.2f}x, {r['speedup_min']:.2f}-{r['speedup_max']:.2f});",
          ">= 0.5 of the readback limit:", "met" if r["readback_fraction"] >= 0.5 else "not met",
          f"({r['readback_fraction']:.3f}, {r['readback_fraction_min']:.3f}-{r['readback_fraction_max']:.3f});",
          ">= 0.5 of the copy path's readback alone (the issue's readback copy limit):",
          "met" if r["copy_readback_fraction"] >= 0.5 else "not met",
          f"({r['copy_readback_fraction']:.3f}, {r['copy_readback_fraction_min']:.3f}-"
          f"{r['copy_readback_fraction_max']:.3f})")
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=2))


if __name__ == "__main__":
    main()
