"""``python -m vkmorph.app.soak [--frames N] [--cycles M] [FILE]``: resident memory over a long run.

Two soaks with validation off (the layer keeps its own per-object records, ~160 KB per runtime cycle, that are
not vkmorph's): the headless demo (offscreen renderer + scene driver) over N frames, and M create/destroy
cycles of a ``MorphRuntime`` on one Context. RSS (``/proc/self/statm``) is taken after a warm-up, half-way and
at the end; growth above the bounds (frames: over the second half, after the allocator settled) exits 1.
``make soak ARGS="--frames 6000 --cycles 500"`` is the long version; the test suite runs a short one.
"""

from __future__ import annotations

import argparse
import faulthandler
import gc
import os
import sys


def rss_kib() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1024


def soak_frames(scene, frames: int, warmup: int = 20, size: tuple[int, int] = (160, 120)) -> dict:
    from ..gpu.context import Context
    from ..render.offscreen import OffscreenRenderer
    from .driver import SceneDriver

    ctx = Context.create(validation=False)
    try:
        off = OffscreenRenderer(ctx, scene, *size)
        try:
            r = off.renderer
            driver = SceneDriver(scene, r.runtime.pose, r.skeleton, sine=True)
            start = mid = None
            half = warmup + frames // 2
            for f in range(warmup + frames):
                if f in (warmup, half):
                    gc.collect()
                    if f == warmup:
                        start = rss_kib()
                    if f == half:
                        mid = rss_kib()
                driver.advance(1 / 60)
                off.render()
            gc.collect()
            end = rss_kib()
        finally:
            # Idle before freeing: once (1 run in 19, loaded host) a llvmpipe thread crashed (SIGSEGV) while
            # Context.destroy waited for the device right after this destroy freed what the last frames used,
            # every frame's fence already signalled (bench/2026-12-01-lavapipe-soak-sigsegv.txt). Waiting for
            # the whole device first leaves the driver no work in flight when the objects go.
            ctx.wait_idle()
            off.destroy()
    finally:
        ctx.destroy()
    # the allocator settles within the first ~2000 frames (~2 MiB, then flat): the bound is on the second half
    return {"frames": frames, "rss_start_kib": start, "rss_mid_kib": mid, "rss_end_kib": end,
            "kib_per_1000_frames_total": (end - start) * 1000 / max(frames, 1),
            "kib_per_1000_frames": (end - mid) * 1000 / max(frames - frames // 2, 1)}


def soak_cycles(scene, cycles: int, warmup: int = 5) -> dict:
    from ..gpu.context import Context
    from ..render.morph_pass import MorphRuntime

    ctx = Context.create(validation=False)
    try:
        start = None
        for c in range(warmup + cycles):
            if c == warmup:
                gc.collect()
                start = rss_kib()
            rt = MorphRuntime(ctx, scene)
            rt.pose.set_flat(rt.pose.flat + 0.5)
            ctx.submit_and_wait(rt.record)
            ctx.wait_idle()   # as in soak_frames: nothing left in the driver when the runtime's objects go
            rt.destroy()
        gc.collect()
        end = rss_kib()
        leaked = list(ctx.live_children)
    finally:
        ctx.destroy()
    return {"cycles": cycles, "rss_start_kib": start, "rss_end_kib": end,
            "kib_per_cycle": (end - start) / max(cycles, 1), "live_children": leaked}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m vkmorph.app.soak", description=__doc__.split("\n\n")[0])
    ap.add_argument("file", nargs="?", help="model (default: the built-in scene)")
    ap.add_argument("--frames", type=int, default=2000)
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--max-kib-per-1000-frames", type=float, default=1024.0)
    ap.add_argument("--max-kib-per-cycle", type=float, default=64.0)
    args = ap.parse_args(argv)
    from ..asset.importer import load_scene

    # Each phase's line is flushed as it ends, so a run that dies (a signal: faulthandler, on here, prints the
    # Python stack on stderr) shows how far it got; a block-buffered pipe used to lose everything.
    faulthandler.enable()
    print("soak: importing", flush=True)
    scene = load_scene(args.file)
    print("soak: frames", flush=True)
    fr = soak_frames(scene, args.frames)
    print(f"frames: {fr['frames']}, RSS {fr['rss_start_kib']:.0f} -> {fr['rss_mid_kib']:.0f} -> "
          f"{fr['rss_end_kib']:.0f} KiB, second half {fr['kib_per_1000_frames']:.1f} KiB per 1000 frames "
          f"(bound {args.max_kib_per_1000_frames}; whole run {fr['kib_per_1000_frames_total']:.1f})", flush=True)
    cy = soak_cycles(scene, args.cycles)
    print(f"runtime cycles: {cy['cycles']}, RSS {cy['rss_start_kib']:.0f} -> {cy['rss_end_kib']:.0f} KiB, "
          f"{cy['kib_per_cycle']:.2f} KiB per cycle (bound {args.max_kib_per_cycle}), "
          f"live objects after: {cy['live_children'] or 'none'}", flush=True)
    ok = (fr["kib_per_1000_frames"] <= args.max_kib_per_1000_frames and cy["kib_per_cycle"] <= args.max_kib_per_cycle
          and not cy["live_children"])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
