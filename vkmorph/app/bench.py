"""``vkmorph bench``: the morph pass against the bandwidth floor of the device it runs on.

This module is the command's entry point (``run_bench``: options, outputs checked up front, the order of the
sections); each section lives in its own ``bench_*.py`` module beside it (docs/architecture.md lists them).

Two byte counts per case (``work_bytes_of``, ``format_bytes_of``):

    work unit (format-independent) = V x (48 B base read + 36 B written) + active deltas x 40 B
    format floor = V x (48 B base read + 48 B (workgroup kernel) or 36 B (per-vertex kernel) written)
                   + active deltas x 36 B (full) or 18 B (compact) + block metadata (workgroup: every chunk header
                   and table entry, a 32 B vertex mask per active block; per-vertex: every vertex's record)

The format floor is what this format's kernel must move at the least; ``roofline_fraction`` = format floor at
the copy bandwidth measured in the same window / morph time (1.0 = as fast as a copy of those bytes), the
headline; ``work_fraction`` the same for the work unit (comparable across formats; above 1 means the format
moves fewer bytes than the work unit counts).

Method (this GPU changes speed under load; only same-window ratios mean anything):
- warm-up: frames are submitted untimed until the device has run for ``warm_s`` seconds;
- each try records many frames in ONE command buffer: F morph frames (every frame really changes a weight, so
  each records its weight upload, the barriers and the dispatch), then F frames of a grid-stride uvec4 copy of
  exactly the format floor's bytes (half read, half written) behind the same kind of barrier; the order
  alternates per try; timestamps bracket each run of F frames;
- per try the ratio copy time / morph time; reported: the median over tries and its spread (min, max);
- the copy reference is checked against the best copy of the row's own byte size (``CopyCeilings``: the same
  copy kernel over the same bytes, best over COPY_CEILING_WINDOWS windows, measured once per size and cached):
  a copy's bandwidth depends on its size (on the H200 40-90 MB copies reach 0.35-0.5 of a 256 MB one in every
  window, a property of the size, not noise), so the 256 MB device ceiling made most rows repeat without ever
  passing. A row whose same-window copy reached less than COPY_OK of its size's best is run again (up to
  COPY_RETRIES times, the best window kept, while the bench's repeats stay within COPY_REPEAT_BUDGET_S) and
  flagged ``copy_low`` if it stays below. Each row reports both shares: ``copy_ratio`` (of its size's best,
  the rule) and ``copy_device_ratio`` (of the 256 MB device ceiling).
Device ceilings: the grid-stride copy and vkCmdCopyBuffer over 256 MB buffers, after warm-up.
numpy: what a user would write (``vkmorph.bake.SparseMorph``: sparse float32 deltas per target, the active
targets only), every instance of the case (nothing extrapolated), one warm-up call then the median of
NUMPY_REPEATS timed calls; speedup = numpy / morph medians, its spread min(numpy)/max(morph) to
max(numpy)/min(morph). ``max_error``: the GPU against the dense float64 reference ``morph_reference``.
Also per case: CPU build time of the runtime (layout + upload), GPU memory (and the previous CSR layout's, and
dense storage's).
Baking: ``vkmorph.bake.measure_bake_throughput`` on RobotExpressive's first clip (world space): the GPU bake,
the numpy baseline and the readback limit (``vkmorph.bake.readback_limits``, per repeat the fastest of: the copy
path's readback through the bake's slots, numpy writing every byte of a fresh result once, and that on all CPUs),
each warmed up and timed BAKE_REPEATS times, frame-vertices per second with min-max, wall and process CPU time.
CPU per frame: ``MorphRuntime.record`` for N primitives, recorded without submitting, with the weights
unchanged, all changed through the bulk ``pose.set_flat``, and all changed node by node (``pose.set_weights``):
thread CPU time (the figure the goals use) beside wall time, median and min-max.
Output slots (issue 13; ``--only slots`` runs just this): per frame the morph (every weight changed) into slot
frame % slots and a draw reading that whole slot (``DrawConsumer``), 3 frames in flight emulated with events in
the one command buffer (``FrameFences``); GPU time per frame with 1 slot and with 3, same window, and the ratio.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from dataclasses import asdict
from pathlib import Path

from .bench_bake import BAKE_FRAMES, BAKE_FRAMES_QUICK, BAKE_MODEL, bake_line, bake_throughput
from .bench_copy import COPY_CEILING_WINDOWS, COPY_REPEAT_BUDGET_S, CopyCeilings, CopyFrames, device_ceilings
from .bench_cpu import cpu_frame_costs, draw_costs_line, draw_frame_costs
from .bench_data import Case, find_model, model_primitives, standard_cases, synthetic_primitive, synthetic_scene
from .bench_dirty import dirty_scaling
from .bench_report import characters_line, cpu_line, gbps_text, markdown, row_line, write_reports
from .bench_roofline import (
    BYTE_MODEL,
    COPY_OK,
    COPY_RETRIES,
    _changing_record,
    bench_case,
    characters_per_frame,
    floor_bytes_of,
)
from .bench_slots import SLOTS_CASE, SLOTS_QUICK_CASE, slots_line, slots_overlap
from .bench_timing import WindowTimer, driver_string

# the command (run_bench, check_outputs), and the names the committed bench/ scripts import from this module (also
# from older revisions: bench/compare_revisions.py); the rest lives in the bench_*.py modules named above
__all__ = ["BAKE_FRAMES", "BAKE_MODEL", "Case", "CopyFrames", "WindowTimer", "_changing_record", "bake_line",
           "bake_throughput", "characters_per_frame", "check_outputs", "dirty_scaling", "draw_costs_line",
           "draw_frame_costs", "driver_string", "find_model", "floor_bytes_of", "markdown", "model_primitives",
           "run_bench", "standard_cases", "synthetic_primitive", "synthetic_scene"]


def _progress(total: int, quiet: bool):
    if quiet or not sys.stderr.isatty():
        return None
    from tqdm import tqdm

    return tqdm(total=total, unit="step", file=sys.stderr, leave=False)


def check_outputs(args) -> None:
    """Before any work: each output's folder exists and is writable, the suffix fits, --plot has matplotlib.
    Raises UsageError (one line)."""
    from ..errors import UsageError

    for flag, suffixes in (("json", (".json",)), ("markdown", (".md", ".markdown")), ("plot", (".png",))):
        path = getattr(args, flag, None)
        if path is None:
            continue
        p = Path(path)
        if str(path) == "" or p.is_dir():
            raise UsageError(f"--{flag} {str(path)!r}: name a file")
        if p.suffix.lower() not in suffixes:
            raise UsageError(f"--{flag} {str(path)!r} must end with {' or '.join(suffixes)}")
        folder = p.parent if str(p.parent) else Path(".")
        if not folder.is_dir():
            raise UsageError(f"--{flag} {str(path)!r}: folder {str(folder)!r} does not exist")
        if not os.access(folder, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
            raise UsageError(f"--{flag} {str(path)!r} is not writable")
    if getattr(args, "plot", None) is not None and getattr(args, "only", None):
        raise UsageError(f"--plot draws the roofline cases, which --only {args.only} leaves out")
    if getattr(args, "plot", None) is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError("--plot needs matplotlib: pip install 'vkmorph[bench]'") from None


def run_bench(args) -> int:
    from ..gpu.context import Context

    check_outputs(args)
    ctx = Context.create(echo_messages=True)
    discrete = ctx.info.device_type == "discrete"
    quick = bool(getattr(args, "quick", False))
    only = getattr(args, "only", None)
    cases = [] if only in ("slots", "crowd", "startup") else standard_cases(quick, discrete)
    tries = 3 if quick else 5
    warm_s = 0.3 if discrete else 0.0
    try_ms = 4.0 if discrete else 1.0
    counts = (1, 10, 100) if quick else (1, 10, 100, 1000, 10000)
    heads = 4 if quick else 256
    bar = _progress(len(cases) * 2 + (1 if only else 6), quick and not sys.stderr.isatty())
    report: dict = {}
    try:
        timer = WindowTimer(ctx)
        say = print if bar is None else bar.write
        driver = driver_string(ctx)
        load = os.getloadavg()[0]
        say(f"device: {ctx.info.name} (Vulkan {ctx.info.api_version}, driver {driver}); host {platform.node()}, "
            f"{os.cpu_count()} CPUs, load average {load:.1f}")
        report = {"device": ctx.info.name, "api": ctx.info.api_version, "driver": driver,
                  "host": platform.node(), "cpus": os.cpu_count(), "load_before": load,
                  "date": time.strftime("%Y-%m-%d %H:%M"), "byte_model": BYTE_MODEL,
                  "tries": tries, "rows": [], "cpu_per_frame": [], "characters": []}
        if only is None:
            _roofline_sections(ctx, timer, report, quick, cases, tries, warm_s, try_ms, counts, heads, say, bar)
        if only in (None, "crowd"):      # issue 25: N instances in one runtime (vkmorph/app/crowd_bench.py)
            from .crowd_bench import COUNTS, COUNTS_QUICK, crowd_costs, crowd_line
            report["crowd"] = crowd_costs(ctx, timer, COUNTS_QUICK if quick else COUNTS)
            for c in report["crowd"]:
                say(crowd_line(c))
        if only == "startup" or (only is None and quick):   # issue 28: app/startup_bench.py
            report["startup"] = _startup_section(quick, say)
        if only not in ("crowd", "startup"):
            slots = slots_overlap(ctx, timer, SLOTS_QUICK_CASE if quick else SLOTS_CASE, tries, warm_s, try_ms)
            say(slots_line(slots))
            say(f"  consumer: {slots['consumer']}; {slots['overlap']}")
            report["slots"] = slots
        report["load_after"] = os.getloadavg()[0]
        say(f"load average at the end {report['load_after']:.1f}")
        if bar is not None:
            bar.update(1)
            bar.close()
        timer.destroy()
    finally:
        ctx.destroy()
    write_reports(report, args)
    return 3 if ctx.errors_and_warnings() else 0


def _startup_section(quick: bool, say) -> dict:
    """The demo's frame loop, time to first frame, ``vkmorph info`` and ``vkmorph.open`` again, in children."""
    from .startup_bench import startup_costs, startup_lines

    out = startup_costs(quick)
    for line in startup_lines(out):
        say(line)
    return out


def _roofline_sections(ctx, timer, report, quick, cases, tries, warm_s, try_ms, counts, heads, say, bar) -> None:
    """Ceilings, the roofline cases, CPU per frame and Dawn-like heads, into ``report``."""
    say(f"byte model: {BYTE_MODEL}; roofline_fraction = format floor time at the same-window copy bandwidth / "
        f"morph time (median of {tries} tries, spread min-max); rows whose copy reference is below {COPY_OK} of "
        f"the best copy of their own byte size (best of {COPY_CEILING_WINDOWS} windows, once per size) are "
        f"repeated (up to {COPY_RETRIES} more windows, {COPY_REPEAT_BUDGET_S:.0f} s of repeats in all), then "
        "flagged")
    ceilings = report["ceilings"] = device_ceilings(ctx, timer, quick)
    sizes = CopyCeilings(ctx, timer, warm_s, try_ms)
    say(f"copy ceilings ({ceilings['buffer_mb']} MB buffers): grid-stride uvec4 kernel "
        f"{gbps_text(ceilings['copy_kernel_gbps'])}, vkCmdCopyBuffer {gbps_text(ceilings['copy_buffer_gbps'])}")
    rows = report["rows"]
    for case in cases:
        if case.instances > 1:
            prims = model_primitives(case.pattern)
            if not prims:
                say(f"{case.pattern}: model not found (set VKMORPH_ASSETS); case skipped")
                continue
            prims = [p for _ in range(case.instances) for p in prims]
            case.vertices = sum(p.vertex_count for p in prims)
            case.targets = max(len(p.morph_targets) for p in prims)
            case.active = case.targets
        else:
            prims = [synthetic_primitive(case.vertices, case.targets, case.coverage, case.pattern)]
        for fmt in ("full", "compact"):
            r = bench_case(ctx, timer, case, prims, fmt, tries, warm_s, try_ms, ceilings=sizes,
                           device_gbps=ceilings["copy_kernel_gbps"])
            rows.append(asdict(r))
            say(row_line(r))
            if bar is not None:
                bar.update(1)
        del prims
    ceilings["size_ceilings_gbps"] = {str(k): v for k, v in sorted(sizes.cache.items())}
    ceilings["size_ceiling_s"], ceilings["repeat_s"] = sizes.measure_s, sizes.repeat_s
    say(f"copy ceilings per row size: {len(sizes.cache)} sizes measured in {sizes.measure_s:.1f} s; row repeats "
        f"took {sizes.repeat_s:.1f} s")
    # the heads while the GPU is still busy from the cases, not after the CPU-only section below (a frame count
    # goal is in absolute time). This alone did not cure the slow windows it was meant for: full still read
    # 7,357 once with this order, at the same fraction as in a fast window (the GPU sometimes runs a whole
    # window ~2.5x slower; see WindowTimer.same_window); each window's copy bandwidth is reported
    chars = report["characters"] = [characters_per_frame(ctx, timer, heads, fmt, tries, warm_s, try_ms)
                                    for fmt in ("full", "compact")]
    for c in chars:
        say(characters_line(c))
    if bar is not None:
        bar.update(2)
    cpu = report["cpu_per_frame"] = cpu_frame_costs(ctx, counts)
    for c in cpu:
        say(cpu_line(c))
    draws = report["draws_per_frame"] = draw_frame_costs(ctx, (1, 100) if quick else (1, 100, 1000, 10000))
    for c in draws:
        say(draw_costs_line(c))
    dirty = report["dirty_scaling"] = dirty_scaling(ctx, timer, 100 if quick else 1000)
    for d in dirty:
        say(f"{d['changed']:>5} of {d['primitives']} primitives changed: GPU {d['gpu_ms']:.3f} ms per frame, "
            f"record() {d['record_cpu_ms']:.3f} ms CPU, {d['dispatch_ranges']} ranges, {d['groups']} workgroups")
    if bar is not None:
        bar.update(2)
    bake = report["bake"] = bake_throughput(BAKE_FRAMES_QUICK if quick else BAKE_FRAMES)
    say(bake_line(bake) if bake else "bake: RobotExpressive not found (set VKMORPH_ASSETS); skipped")
    if bar is not None:
        bar.update(1)
