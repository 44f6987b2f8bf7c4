"""The bake's figures on their own: ``vkmorph.bake.measure_bake_throughput`` (GPU bake, numpy baseline, readback
alone; warm-up + median of N each, min-max) on RobotExpressive's first clip, with the machine it ran on.

    python bench/bake.py [--frames 256] [--repeats 5] [--json OUT.json] [--file MODEL]

The same measurement is the bake line of ``vkmorph bench`` (64 frames with --quick, 256 without). RobotExpressive's
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
    r.update(host=platform.node(), cpus=os.cpu_count(), date=time.strftime("%Y-%m-%d %H:%M"),
             load_before=load[0], load_after=os.getloadavg()[0])
    print(f"{r['date']} {r['device']}, host {r['host']} ({r['cpus']} CPUs, load {r['load_before']:.1f} before, "
          f"{r['load_after']:.1f} after)")
    print(bake_line(r))
    print("goals: >= 5x numpy:", "met" if r["speedup"] >= 5 else "not met",
          f"({r['speedup']:.2f}x, {r['speedup_min']:.2f}-{r['speedup_max']:.2f});",
          ">= 0.5 of the readback limit:", "met" if r["readback_fraction"] >= 0.5 else "not met",
          f"({r['readback_fraction']:.3f}, {r['readback_fraction_min']:.3f}-{r['readback_fraction_max']:.3f})")
    if a.json:
        Path(a.json).write_text(json.dumps(r, indent=2))


if __name__ == "__main__":
    main()
