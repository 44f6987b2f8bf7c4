"""The bake row: ``vkmorph.bake.measure_bake_throughput`` on RobotExpressive's first clip, and its line."""

from __future__ import annotations

from pathlib import Path

from .bench_data import find_model

BAKE_MODEL, BAKE_FRAMES, BAKE_FRAMES_QUICK, BAKE_REPEATS = "RobotExpressive", 256, 64, 5


def bake_throughput(frames: int, repeats: int = BAKE_REPEATS) -> dict | None:
    """``vkmorph.bake.measure_bake_throughput`` on RobotExpressive's first clip in world space: the GPU bake, the
    numpy baseline and the readback alone, each median of ``repeats`` after warm-ups (``vkmorph.bake._timed``)."""
    from ..bake import measure_bake_throughput

    path = find_model(BAKE_MODEL)
    return measure_bake_throughput(path, frames=frames, repeats=repeats) if path is not None else None


def _limit_words(b: dict) -> str:
    """What the readback limit was (``vkmorph.bake.readback_limits``: per repeat the fastest of three ways)."""
    if "readback_write_s" not in b:     # reports before the zero-copy bake: the copy path's readback alone
        return "readback alone "
    ms = ", ".join(f"{1e3 * b[f'readback_{k}_s']:.1f}" for k in ("copy", "write", "write_threads"))
    return ("readback limit (the fastest per repeat of the copy path's readback, numpy writing the result once, "
            f"and on all CPUs: {ms} ms) ")


def bake_line(b: dict) -> str:
    head = (f"bake ({Path(b['file']).name}, clip {b['clip']}, {b['space']} space, {b['frames']} frames x "
            f"{b['vertices']:,} vertices): GPU {b['gpu_vps'] / 1e6:.2f} M frame-vertices/s, numpy "
            f"{b['numpy_vps'] / 1e6:.2f} M/s, {b['speedup']:.1f}x")
    if "speedup_min" not in b:          # reports before the batched bake
        return f"{head}, max error {b['max_error']:.1e}"
    limit = _limit_words(b)
    return (f"{head} ({b['speedup_min']:.1f}-{b['speedup_max']:.1f}, {b['repeats']} repeats); {limit}"
            f"{b['readback_vps'] / 1e6:.1f} M/s, the bake at {b['readback_fraction']:.2f} of it "
            f"({b['readback_fraction_min']:.2f}-{b['readback_fraction_max']:.2f})"
            + (f", at {b['copy_readback_fraction']:.2f} of the copy path's readback alone "
               f"({b['copy_readback_fraction_min']:.2f}-{b['copy_readback_fraction_max']:.2f})"
               if "copy_readback_fraction" in b else "")
            + f"; GPU {b['gpu_s']:.3f} s wall "
            f"({b['gpu_s_min']:.3f}-{b['gpu_s_max']:.3f}), {b['gpu_cpu_s']:.3f} s process CPU; numpy "
            f"{b['numpy_s']:.3f} s wall, {b['numpy_cpu_s']:.3f} s CPU; {b['batch_frames']} frames per batch, "
            f"{b['weight_runs']} weight run(s)"
            + (f", zero copy: {b['zero_copy']}" if "zero_copy" in b else "")
            + ("; untimed warm-ups, the first bake building its resources and pipelines: GPU "
               + ", ".join(f"{x:.3f}" for x in b["gpu_warmup_s"]) + " s, numpy "
               + ", ".join(f"{x:.3f}" for x in b["numpy_warmup_s"]) + " s" if "gpu_warmup_s" in b else "")
            + f"; max error {b['max_error']:.1e} (numpy {b['numpy_max_error']:.1e})"
            + (f"; pose on the {'GPU' if b['pose_on_gpu'] else 'host'}: host {1e3 * b['host_batch_cpu_s']:.2f} ms "
               f"thread CPU per batch ({1e3 * b['host_batch_cpu_s_min']:.2f}-{1e3 * b['host_batch_cpu_s_max']:.2f}), "
               f"pose on the host {1e3 * b['cpu_pose_host_batch_cpu_s']:.2f} ms "
               f"({1e3 * b['cpu_pose_host_batch_cpu_s_min']:.2f}-{1e3 * b['cpu_pose_host_batch_cpu_s_max']:.2f}), "
               f"that bake {b['cpu_pose_s']:.3f} s wall ({b['cpu_pose_s_min']:.3f}-{b['cpu_pose_s_max']:.3f}), "
               f"{b['cpu_pose_cpu_s']:.3f} s process CPU" if "pose_on_gpu" in b else ""))
