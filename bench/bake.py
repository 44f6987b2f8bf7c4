"""The bake's figures on their own: ``vkmorph.bake.measure_bake_throughput`` (GPU bake, numpy baseline, readback
alone; warm-up + median of N each, min-max) on RobotExpressive's first clip, with the machine it ran on.

    python bench/bake.py [--frames 256] [--repeats 5] [--json OUT.json] [--file MODEL]

The same measurement is the bake line of ``vkmorph bench`` (64 frames with --quick, 256 without): beside the GPU
bake, numpy and the readback, the host thread's CPU per batch with the pose on the GPU (the default) and on the host
(``pose="cpu"``, as before the pose pass), and that bake's time. This script adds the pose pass alone: one batch's
pose dispatch (crowd_anim.comp through ClipPosePass) submitted and waited for, wall and process CPU (on lavapipe the
"GPU" is the process's own threads), median of --repeats after a warm-up. RobotExpressive's
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
    r.update(host=platform.node(), cpus=os.cpu_count(), date=time.strftime("%Y-%m-%d %H:%M"),
             load_before=load[0], load_after=os.getloadavg()[0])
    print(f"{r['date']} {r['device']}, host {r['host']} ({r['cpus']} CPUs, load {r['load_before']:.1f} before, "
          f"{r['load_after']:.1f} after)")
    print(bake_line(r))
    print(f"pose pass alone ({r['pose_pass_frames']} frames, one batch): {1e3 * r['pose_pass_s']:.2f} ms wall "
          f"({1e3 * r['pose_pass_s_min']:.2f}-{1e3 * r['pose_pass_s_max']:.2f}), "
          f"{1e3 * r['pose_pass_cpu_s']:.2f} ms process CPU")
    print("goals: >= 5x numpy:", "met" if r["speedup"] >= 5 else "not met",
          f"({r['speedup']:.2f}x, {r['speedup_min']:.2f}-{r['speedup_max']:.2f});",
          ">= 0.5 of the readback limit:", "met" if r["readback_fraction"] >= 0.5 else "not met",
          f"({r['readback_fraction']:.3f}, {r['readback_fraction_min']:.3f}-{r['readback_fraction_max']:.3f})")
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=2))


if __name__ == "__main__":
    main()
