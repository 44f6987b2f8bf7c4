"""Same-window comparison of two checkouts' bakes: RobotExpressive Dance, 256 frames, world space, one warm-up
then 3 timed bakes (wall and process CPU), each checkout in its own interpreter, alternating.

    python bench/bake_old_vs_new.py OLD_ROOT NEW_ROOT [--rounds 2]

Each root must hold a built vkmorph (its SPIR-V) and tests/assets; nothing is written there (no bytecode).
"""
import argparse
import os
import subprocess
import sys

CHILD = """
import sys, time, numpy as np
sys.path.insert(0, sys.argv[1])
import vkmorph
m = vkmorph.open(sys.argv[1] + "/tests/assets/RobotExpressive/RobotExpressive.glb", validation=False)
times = np.linspace(0, m.scene.clip("Dance").duration, 256)
m.bake(clip="Dance", times=times, space="world", progress=False)
out = []
for _ in range(3):
    t0, c0 = time.perf_counter(), time.process_time()
    m.bake(clip="Dance", times=times, space="world", progress=False)
    out.append((time.perf_counter() - t0, time.process_time() - c0))
m.close()
print(sys.argv[1], " ".join(f"{w:.2f} s wall / {c:.2f} s CPU" for w, c in out), flush=True)
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("old")
    ap.add_argument("new")
    ap.add_argument("--rounds", type=int, default=2)
    a = ap.parse_args()
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    print(f"load {os.getloadavg()[0]:.1f}, {os.cpu_count()} CPUs", flush=True)
    for _ in range(a.rounds):
        for root in (a.old, a.new):
            subprocess.run([sys.executable, "-c", CHILD, os.path.abspath(root)], check=True, env=env)
    print(f"load {os.getloadavg()[0]:.1f}", flush=True)


if __name__ == "__main__":
    main()
