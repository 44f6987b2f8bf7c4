"""The benchmark's start-up section (issue 28): what a new user waits for, each in a fresh interpreter.

* **The demo's frame loop**: ``HeadlessFrames`` (the demo's loop minus the present: animation, host updates,
  morph + shadow + forward passes, one submission waited for per frame) on the built-in scene at the quality the
  demo picks for this device (``demo.quality``: 800x500, 1x MSAA, 512 shadow map and render scale on a CPU
  device); per frame wall time, the main thread's CPU time (Python + recording) and the process's CPU time (the
  driver's threads too: on lavapipe that is the rasterizer), median and 10th-90th percentile. FPS = 1 / median
  wall time. Also the time to the first frame after the imports (scene import, device, renderer build, frame 0).
* ``vkmorph info`` on a small file (SimpleMorph, 2 KB + 2 buffers): wall and CPU time of the whole command,
  beside an interpreter that only imports numpy (what no command can go below).
* ``vkmorph.open`` of RobotExpressive: the first open in a process, then the same file again after ``close()``
  (the scene cache: ``asset/scene_cache.py``), wall and process CPU time.

Each measurement runs ``repeats`` child interpreters (never the benchmark's own process, which already holds a
device and warm caches). ``vkmorph bench --only startup`` runs it alone; ``--quick`` includes it. No test asserts
these figures; they are written to ``bench/`` and quoted from there.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import time

FRAMES, FRAMES_QUICK = 60, 30
WARMUP = 5                      # llvmpipe compiles each pipeline's shaders at its first draws
REPEATS, REPEATS_QUICK = 3, 2
INFO_MODEL, OPEN_MODEL = "SimpleMorph", "RobotExpressive"
SCALES = (1.0, 0.75, 0.5)

_FRAME_CHILD = r"""
import json, sys, time
w0 = time.perf_counter()
from vkmorph.app.demo import HeadlessFrames, quality
from vkmorph.asset.importer import load_scene
from vkmorph.gpu.context import Context
import argparse
t0, c0 = time.perf_counter(), time.process_time()
scene = load_scene(None)
ctx = Context.create()
q = quality(argparse.Namespace(scale=float(sys.argv[3]) or None), ctx.info.device_type)
loop = HeadlessFrames(ctx, scene, size=q["size"], samples=q["samples"], shadow_size=q["shadow_size"],
                      sine=True, scale=q["scale"])
loop.step(0.0)
first = time.perf_counter() - t0, time.process_time() - c0
frames = []
for f in range(int(sys.argv[1]) + int(sys.argv[2])):
    w, c, p = time.perf_counter(), time.thread_time(), time.process_time()
    loop.step(1 / 60)
    if f >= int(sys.argv[2]):
        frames.append((time.perf_counter() - w, time.thread_time() - c, time.process_time() - p))
samples = loop.renderer.samples
loop.destroy()
ctx.destroy()
print(json.dumps({"imports_s": t0 - w0, "first_frame_s": first[0], "first_frame_cpu_s": first[1],
                  "frames": frames, "size": list(q["size"]), "render_size": list(loop.render_size),
                  "scale": q["scale"], "samples": samples, "shadow_size": q["shadow_size"],
                  "device": ctx.info.name}))
"""

_OPEN_CHILD = r"""
import json, sys, time
import vkmorph
out = []
for i in range(1 + int(sys.argv[2])):
    w, c = time.perf_counter(), time.process_time()
    m = vkmorph.open(sys.argv[1])
    out.append((time.perf_counter() - w, time.process_time() - c))
    m.close()
print(json.dumps(out))
"""


def _child(args: list[str]) -> tuple[str, float, float]:
    """Run a child interpreter; (stdout, wall s, CPU s of the child: user + system)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    w = time.perf_counter()
    r = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=900)
    wall = time.perf_counter() - w
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        raise RuntimeError(f"{args[:3]} exited {r.returncode}: {r.stderr.strip().splitlines()[-1:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return r.stdout, wall, cpu


def _stats(values: list[float]) -> dict:
    v = sorted(values)
    q = statistics.quantiles(v, n=10) if len(v) >= 2 else [v[0]] * 9
    return {"median": statistics.median(v), "p10": q[0], "p90": q[-1], "min": v[0], "max": v[-1], "n": len(v)}


def frame_loop(frames: int, repeats: int, scale: float = 0.0) -> dict:
    """``scale`` 0: the demo's default for this device."""
    runs = [json.loads(_child(["-c", _FRAME_CHILD, str(frames), str(WARMUP), str(scale)])[0].strip()
                       .splitlines()[-1]) for _ in range(repeats)]
    pooled = [f for r in runs for f in r["frames"]]
    wall, thread, proc = (_stats([f[k] * 1e3 for f in pooled]) for k in range(3))
    first = runs[0]
    return {"device": first["device"], "size": first["size"], "render_size": first["render_size"],
            "scale": first["scale"], "samples": first["samples"], "shadow_size": first["shadow_size"],
            "frames_per_run": frames, "warmup": WARMUP, "runs": repeats,
            "frame_wall_ms": wall, "frame_thread_cpu_ms": thread, "frame_process_cpu_ms": proc,
            "fps": 1e3 / wall["median"], "fps_p10_p90": [1e3 / wall["p90"], 1e3 / wall["p10"]],
            "first_frame_s": _stats([r["first_frame_s"] for r in runs]),
            "first_frame_cpu_s": _stats([r["first_frame_cpu_s"] for r in runs]),
            "imports_s": _stats([r["imports_s"] for r in runs])}


def info_times(path, repeats: int) -> dict:
    info = [_child(["-m", "vkmorph", "info", str(path)])[1:] for _ in range(repeats)]
    bare = [_child(["-c", "import numpy"])[1:] for _ in range(repeats)]
    return {"file": os.path.basename(path), "file_bytes": os.path.getsize(path),
            "wall_s": _stats([w for w, _ in info]), "cpu_s": _stats([c for _, c in info]),
            "numpy_only_wall_s": _stats([w for w, _ in bare]), "numpy_only_cpu_s": _stats([c for _, c in bare])}


def open_times(path, repeats: int) -> dict:
    out = json.loads(_child(["-c", _OPEN_CHILD, str(path), str(repeats)])[0].strip().splitlines()[-1])
    first, again = out[0], out[1:]
    return {"file": os.path.basename(path), "first_wall_s": first[0], "first_cpu_s": first[1],
            "again_wall_s": _stats([w for w, _ in again]), "again_cpu_s": _stats([c for _, c in again])}


def startup_costs(quick: bool) -> dict:
    from .bench_data import find_model

    repeats = REPEATS_QUICK if quick else REPEATS
    out: dict = {"load_before": os.getloadavg()[0]}
    frames = FRAMES_QUICK if quick else FRAMES
    out["frames"] = frame_loop(frames, repeats)
    # the same loop at each render scale, one run each, in the same window: what the scale buys on this device
    out["scales"] = [frame_loop(frames, 1, sc) for sc in SCALES]
    info_path, open_path = find_model(INFO_MODEL), find_model(OPEN_MODEL)
    if info_path is not None:
        out["info"] = info_times(info_path, repeats + 1)
    if open_path is not None:
        out["open"] = open_times(open_path, repeats + 1)
    out["load_after"] = os.getloadavg()[0]
    return out


def _s(st: dict, unit: str = "s", k: float = 1.0, fmt: str = ".2f") -> str:
    return f"{st['median'] * k:{fmt}} {unit} ({st['min'] * k:{fmt}}-{st['max'] * k:{fmt}})"


def startup_lines(s: dict) -> list[str]:
    f = s["frames"]
    w, h = f["size"]
    rw, rh = f["render_size"]
    out = [f"demo frame loop (built-in scene, {w}x{h}, 3D view rendered at {rw}x{rh} (scale {f['scale']:g}), "
           f"MSAA {f['samples']}x, shadow {f['shadow_size']}; {f['runs']} runs x {f['frames_per_run']} frames "
           f"after {f['warmup']}): {f['fps']:.1f} FPS (p10-p90 {f['fps_p10_p90'][0]:.1f}-{f['fps_p10_p90'][1]:.1f}); "
           f"per frame wall {f['frame_wall_ms']['median']:.1f} ms, main-thread CPU "
           f"{f['frame_thread_cpu_ms']['median']:.1f} ms, process CPU {f['frame_process_cpu_ms']['median']:.1f} ms",
           f"  time to the first frame after imports {_s(f['first_frame_s'])} (CPU {_s(f['first_frame_cpu_s'])}); "
           f"the imports themselves {_s(f['imports_s'])}"]
    for sc in s.get("scales", []):
        rw, rh = sc["render_size"]
        out.append(f"  render scale {sc['scale']:g} ({rw}x{rh}): {sc['fps']:.1f} FPS, wall "
                   f"{sc['frame_wall_ms']['median']:.1f} ms, process CPU {sc['frame_process_cpu_ms']['median']:.1f} "
                   "ms per frame")
    if "info" in s:
        i = s["info"]
        out.append(f"vkmorph info {i['file']} ({i['file_bytes']} B): wall {_s(i['wall_s'])}, CPU {_s(i['cpu_s'])}; "
                   f"an interpreter importing only numpy: wall {_s(i['numpy_only_wall_s'])}, "
                   f"CPU {_s(i['numpy_only_cpu_s'])}")
    if "open" in s:
        o = s["open"]
        out.append(f"vkmorph.open({o['file']}): first {o['first_wall_s']:.2f} s (CPU {o['first_cpu_s']:.2f} s); "
                   f"again after close() {_s(o['again_wall_s'])} (CPU {_s(o['again_cpu_s'])})")
    out.append(f"  load average {s['load_before']:.1f} before, {s['load_after']:.1f} after")
    return out


def startup_markdown(s: dict) -> list[str]:
    f = s["frames"]
    rows = ["## Start-up and the demo's frame loop", "",
            "Each figure from fresh interpreters (median, min-max; frames: median, p10-p90). Wall time on a "
            "loaded host is that host's; CPU time beside it.", "", "| what | wall | CPU |", "|---|---|---|",
            f"| demo frame loop, {f['size'][0]}x{f['size'][1]} (3D at {f['render_size'][0]}x{f['render_size'][1]}), "
            f"MSAA {f['samples']}x, shadow {f['shadow_size']} | {f['frame_wall_ms']['median']:.1f} ms/frame "
            f"({f['frame_wall_ms']['p10']:.1f}-{f['frame_wall_ms']['p90']:.1f}) = **{f['fps']:.1f} FPS** | main "
            f"thread {f['frame_thread_cpu_ms']['median']:.1f} ms, process {f['frame_process_cpu_ms']['median']:.1f} "
            "ms |",
            f"| first frame after imports | {_s(f['first_frame_s'])} | {_s(f['first_frame_cpu_s'])} |",
            f"| the imports (vkmorph.app.demo, importer, context) | {_s(f['imports_s'])} | |"]
    for sc in s.get("scales", []):
        rows.append(f"| ... render scale {sc['scale']:g} ({sc['render_size'][0]}x{sc['render_size'][1]}), one run | "
                    f"{sc['frame_wall_ms']['median']:.1f} ms/frame = {sc['fps']:.1f} FPS | process "
                    f"{sc['frame_process_cpu_ms']['median']:.1f} ms |")
    if "info" in s:
        i = s["info"]
        rows += [f"| `vkmorph info {i['file']}` | {_s(i['wall_s'])} | {_s(i['cpu_s'])} |",
                 f"| `python -c 'import numpy'` (the floor) | {_s(i['numpy_only_wall_s'])} | "
                 f"{_s(i['numpy_only_cpu_s'])} |"]
    if "open" in s:
        o = s["open"]
        rows += [f"| `vkmorph.open({o['file']})`, first in the process | {o['first_wall_s']:.2f} s | "
                 f"{o['first_cpu_s']:.2f} s |",
                 f"| ... again after `close()` | {_s(o['again_wall_s'])} | {_s(o['again_cpu_s'])} |"]
    rows += ["", f"Load average {s['load_before']:.1f} before, {s['load_after']:.1f} after."]
    return rows


def main(argv: list[str] | None = None) -> int:
    import argparse

    ap = argparse.ArgumentParser(prog="python -m vkmorph.app.startup_bench", description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    for line in startup_lines(startup_costs(args.quick)):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
