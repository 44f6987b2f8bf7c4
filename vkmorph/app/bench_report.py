"""How the bench's results are written: the printed lines of the roofline, heads and CPU rows, the goals, the
markdown report, the plot, and the JSON / markdown / PNG files (each all or nothing)."""

from __future__ import annotations

import json
import math

import numpy as np

from .bench_bake import bake_line
from .bench_copy import COPY_CEILING_WINDOWS
from .bench_numpy import NUMPY_REPEATS
from .bench_roofline import BYTE_MODEL, COPY_OK, COPY_RETRIES, Row


def gbps(x: float) -> str:
    """GB/s as the reports print them: whole numbers on a GPU, two significant digits on a CPU device (lavapipe's
    kernels copy ~0.4 GB/s, which a whole number printed as 0); 'failed' when no time was measured."""
    if not (math.isfinite(x) and x > 0):
        return "failed"
    return f"{x:.0f}" if x >= 10 else f"{x:.2g}"


def gbps_text(x: float) -> str:
    """'0.41 GB/s', or what happened when the measurement gave no figure."""
    return f"{gbps(x)} GB/s" if gbps(x) != "failed" else "no figure (the copy measurement failed)"


def characters_line(c: dict) -> str:
    return (f"Dawn-like heads ({c['format']}, {c['heads']} in one batch, {c['kernel']}): {c['gpu_us_per_head']:.2f} "
            f"us each -> {c['heads_per_16_6_ms']:,} per 16.6 ms frame; fraction {c['roofline_fraction']:.2f}, "
            f"copy {gbps_text(c['copy_gbps'])} in that window")


def row_line(r: Row) -> str:
    low = " LOW COPY REFERENCE" if r.copy_low else ""
    return (f"{r.case:<44} {r.delta_format:>7} {r.kernel:>10}: morph {r.morph_us:9.1f} us, format floor "
            f"{r.format_floor_us:8.1f} us, fraction {r.roofline_fraction:4.2f} ({r.fraction_min:4.2f}-"
            f"{r.fraction_max:4.2f}), work unit {r.work_fraction:4.2f} | copy {gbps_text(r.copy_gbps)} = "
            f"{r.copy_ratio:.2f} of its size's best ({gbps_text(r.copy_ceiling_gbps)}), {r.copy_device_ratio:.2f} "
            f"of the device's, {r.copy_runs} window(s){low} | numpy x{r.speedup_vs_numpy:.1f} "
            f"({r.speedup_min:.1f}-{r.speedup_max:.1f}) | err {r.max_error:.1e} | {r.gpu_mib:7.1f} MiB (was "
            f"{r.previous_mib:7.1f}) | build {r.build_s:5.2f} s")


def cpu_line(c: dict) -> str:
    def one(mode: str, digits: int) -> str:
        if f"{mode}_ms_min" not in c:
            return f"{c[mode + '_ms']:.{digits}f}" if f"{mode}_ms" in c else "-"
        return (f"{c[mode + '_ms']:.{digits}f} ({c[mode + '_ms_min']:.{digits}f}-{c[mode + '_ms_max']:.{digits}f}), "
                f"wall {c[mode + '_wall_ms']:.{digits}f}")
    return (f"CPU per frame (thread CPU ms), {c['primitives']:>5} primitives: unchanged {one('unchanged', 4)}; "
            f"all changed, set_flat {one('changed', 3)}; all changed, set_weights per node {one('per_node', 3)}")


def write_reports(report: dict, args) -> None:
    """Each report all or nothing (vkmorph.outputs.atomic_write): an error or Ctrl-C leaves no half file."""
    from ..outputs import atomic_write

    if getattr(args, "json", None):
        atomic_write(args.json, lambda fh: fh.write(json.dumps(report, indent=2).encode()))
    if getattr(args, "markdown", None):
        atomic_write(args.markdown, lambda fh: fh.write(markdown(report).encode()))
    if getattr(args, "plot", None):
        plot(report, args.plot)


def goals(report: dict) -> list[tuple[str, bool | None, str]]:
    """Issue 12's goals, each (goal, met, the numbers)."""
    out = []
    big = [r for r in report["rows"] if r["vertices"] >= 500_000]
    if big:
        worst = min(big, key=lambda r: r["roofline_fraction"])
        out.append(("roofline_fraction >= 0.5 in every case >= 500k vertices, both formats",
                    worst["roofline_fraction"] >= 0.5,
                    f"lowest {worst['roofline_fraction']:.2f}: {worst['case']} ({worst['delta_format']})"))
    if report.get("characters"):
        best = max(c["heads_per_16_6_ms"] for c in report["characters"])
        out.append((">= 15,000 Dawn-like heads per 16.6 ms", best >= 15_000,
                    ", ".join(f"{c['format']} {c['heads_per_16_6_ms']:,}" for c in report["characters"])))
    slow = [r for r in report["rows"] if r["speedup_vs_numpy"] < 1.0]
    out.append(("every case faster than numpy", not slow,
                "all faster" if not slow else "slower: " + "; ".join(f"{r['case']} {r['delta_format']}"
                                                                     for r in slow)))
    builds = [r for r in report["rows"] if r["vertices"] >= 2_000_000 and r["coverage"] == 0.25]
    if builds:
        worst = max(r["build_s"] for r in builds)
        out.append(("build of 2M x 52 x 25 % <= 5 s, either format", worst <= 5.0, f"slowest {worst:.2f} s"))
    cpu = {c["primitives"]: c for c in report.get("cpu_per_frame", [])}
    if 10000 in cpu:
        c = cpu[10000]
        clock = "thread CPU" if "clock" in c else "wall"
        out.append((f"CPU per frame, 10,000 primitives ({clock}): <= 0.01 ms unchanged, <= 2 ms all changed",
                    c["unchanged_ms"] <= 0.01 and c["changed_ms"] <= 2.0,
                    f"{c['unchanged_ms']:.4f} ms / {c['changed_ms']:.3f} ms"
                    + (f" (set_weights per node {c['per_node_ms']:.3f} ms)" if "per_node_ms" in c else "")))
    b = report.get("bake")
    if b and "readback_fraction" in b:
        out.append(("bake >= 5x the numpy baseline", b["speedup"] >= 5.0,
                    f"{b['speedup']:.2f}x ({b['speedup_min']:.2f}-{b['speedup_max']:.2f})"))
        out.append(("bake >= 0.5 of the readback limit", b["readback_fraction"] >= 0.5,
                    f"{b['readback_fraction']:.3f} ({b['readback_fraction_min']:.3f}-"
                    f"{b['readback_fraction_max']:.3f}) of {b['readback_vps'] / 1e6:.1f} M frame-vertices/s"))
    low = [r for r in report["rows"] if r.get("copy_low")]
    if any("copy_low" in r for r in report["rows"]):
        # reports since the per-size ceilings: against the best copy of the row's size; before: the device's
        of = "the best copy of its size" if any(r.get("copy_ceiling_gbps") for r in report["rows"]) \
            else "the device's best"
        out.append((f"every row's same-window copy reference >= {COPY_OK} of {of}", not low,
                    "all" if not low else "below: " + "; ".join(f"{r['case']} {r['delta_format']} "
                                                               f"{r['copy_ratio']:.2f}" for r in low)))
    bigger = [r for r in report["rows"] if r["gpu_mib"] > r["previous_mib"]]
    out.append(("GPU memory per case no larger than the previous layout's", not bigger,
                "all smaller or equal" if not bigger else "larger: " + "; ".join(
                    f"{r['case']} {r['delta_format']} {r['gpu_mib']:.1f} > {r['previous_mib']:.1f} MiB"
                    for r in bigger)))
    return out


def markdown(report: dict) -> str:
    c = report.get("ceilings", {})
    out = [f"# vkmorph bench, {report['date']}, {report['device']} (driver {report['driver']})\n"]
    if "load_before" in report:
        out += [f"Host {report.get('host', '?')}, {report.get('cpus', '?')} CPUs, load average "
                f"{report['load_before']:.1f} at the start, {report.get('load_after', float('nan')):.1f} at the "
                "end.", ""]
    if report["rows"]:
        sized = any(r.get("copy_ceiling_gbps") for r in report["rows"])   # reports before 12-01: device's best
        ref = (f"the best copy of the row's own byte size (best of {COPY_CEILING_WINDOWS} windows, measured once "
               "per size)") if sized else "the device's best"
        dev = ", then `dev`, its share of the 256 MB device ceiling" if sized else ""
        out += [f"Byte model: {report.get('byte_model', BYTE_MODEL)}. `floor us` = the (format) floor's bytes at "
                f"the copy bandwidth measured in the same window; `fraction` = floor / morph time, median of "
                f"{report.get('tries', '?')} tries (min-max); `work` = the same against the work unit; `copy` = the "
                f"same-window copy's GB/s and its share of {ref}, `!` where below {COPY_OK} after up to "
                f"{COPY_RETRIES} repeats{dev}, and the windows taken; numpy: sparse float32, all instances, "
                f"median of {NUMPY_REPEATS} (speedup min-max).", ""]
        if c:
            out += [f"Device ceilings ({c['buffer_mb']} MB buffers): grid-stride uvec4 copy kernel "
                    f"{gbps_text(c['copy_kernel_gbps'])}, vkCmdCopyBuffer {gbps_text(c['copy_buffer_gbps'])}.", ""]
        out += _roofline_tables(report) + [""]
    if report.get("bake"):
        out += [f"Baking: {bake_line(report['bake'])}.", ""]
    if report.get("crowd"):
        from .crowd_bench import crowd_markdown
        out += crowd_markdown(report["crowd"]) + [""]
    if report.get("startup"):
        from .startup_bench import startup_markdown
        out += startup_markdown(report["startup"]) + [""]
    s = report.get("slots")
    if s:
        n = s["frames_in_flight"]
        out += [f"Output slots ({s['case']}, {n} frames in flight, weights changed every frame): per frame the "
                f"morph (final barrier compute -> vertex input) and {s['consumer']}; {s['overlap']}.", "",
                "| slots | GPU us per frame | max error |", "|---|---|---|",
                f"| 1 | {s['one_slot_us']:.1f} | {s['max_error_one_slot']:.1e} |",
                f"| {n} | {s['slots_us']:.1f} | {s['max_error_slots']:.1e} |", "",
                f"{n} slots / 1 slot: {s['ratio']:.3f} (min-max {s['ratio_min']:.3f}-{s['ratio_max']:.3f} over "
                f"{s['tries']} tries of {s['frames_per_try']} frames each)."]
    return "\n".join(out) + "\n"


def _row_cells(r: dict) -> str:
    """One roofline row; reports before the per-format floor (floor_mb / floor_us) render with what they have."""
    floor_us = r.get("format_floor_us", r.get("floor_us", 0.0))
    work = f"{r['work_fraction']:.2f}" if "work_fraction" in r else ""
    copy = gbps(r["copy_gbps"])
    if "copy_ratio" in r:
        dev = f", dev {r['copy_device_ratio']:.2f}" if r.get("copy_ceiling_gbps") else ""
        copy += f" ({r['copy_ratio']:.2f}{' !' if r.get('copy_low') else ''}{dev}, {r.get('copy_runs', 1)}x)"
    speed = f"{r['speedup_vs_numpy']:.1f}"
    if "speedup_min" in r:
        speed += f" ({r['speedup_min']:.1f}-{r['speedup_max']:.1f})"
    return (f"| {r['case']} | {r['delta_format']} | {r.get('kernel', '')} ({r.get('block_fill', 1.0):.2f}) | "
            f"{r['deltas']:,} | {r['morph_us']:.1f} | {floor_us:.1f} | {r['roofline_fraction']:.2f} "
            f"({r['fraction_min']:.2f}-{r['fraction_max']:.2f}) | {work} | {copy} | {r['numpy_ms']:.1f} | {speed} | "
            f"{r['max_error']:.1e} | {r['gpu_mib']:.1f} | {r['previous_mib']:.1f} | {r['dense_mib']:.1f} | "
            f"{r['build_s']:.2f} |")


def _cpu_cell(c: dict, mode: str, digits: int) -> str:
    if f"{mode}_ms" not in c:
        return ""
    if f"{mode}_ms_min" not in c:
        return f"{c[mode + '_ms']:.{digits}f}"
    return (f"{c[mode + '_ms']:.{digits}f} ({c[mode + '_ms_min']:.{digits}f}-{c[mode + '_ms_max']:.{digits}f}); "
            f"wall {c[mode + '_wall_ms']:.{digits}f}")


def _roofline_tables(report: dict) -> list[str]:
    out = ["| case | format | kernel (block fill) | deltas | morph us | floor us | fraction (min-max) | work | "
           "copy GB/s (share, windows) | numpy ms | speedup (min-max) | max err | GPU MiB | previous MiB | "
           "dense MiB | build s |",
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    out += [_row_cells(r) for r in report["rows"]]
    clock = "thread CPU" if any("clock" in c for c in report["cpu_per_frame"]) else "wall"
    out += ["", f"| primitives | CPU ms/frame unchanged ({clock}) | all changed, set_flat | all changed, "
            "set_weights per node | dispatch calls |", "|---|---|---|---|---|"]
    for c in report["cpu_per_frame"]:
        out.append(f"| {c['primitives']:,} | {_cpu_cell(c, 'unchanged', 4)} | {_cpu_cell(c, 'changed', 3)} | "
                   f"{_cpu_cell(c, 'per_node', 3)} | {c['dispatch_calls_changed']} |")
    if report.get("draws_per_frame"):
        out += ["", "| primitives | record() unchanged ms CPU (wall) | draws() unchanged ms CPU (wall) | "
                "record() all changed ms CPU (wall) | draws() all changed ms CPU (wall) |", "|---|---|---|---|---|"]
        for c in report["draws_per_frame"]:
            out.append(" | ".join([f"| {c['primitives']:,}"] + [
                f"{c[f'{w}_{m}_cpu_ms']:.4f} ({c[f'{w}_{m}_wall_ms']:.4f})"
                for m in ("unchanged", "changed") for w in ("record", "draws")]) + " |")
    if report.get("dirty_scaling"):
        out += ["", "| changed of N primitives | GPU ms per frame | record() CPU ms | ranges | workgroups |",
                "|---|---|---|---|---|"]
        for d in report["dirty_scaling"]:
            out.append(f"| {d['changed']:,} of {d['primitives']:,} | {d['gpu_ms']:.3f} | {d['record_cpu_ms']:.3f} | "
                       f"{d['dispatch_ranges']} | {d['groups']:,} |")
    out += ["", "| format | heads in one batch | GPU us per Dawn-like head (14k verts, 50 targets, 5 active) | "
            "heads per 16.6 ms | fraction | copy GB/s (same window) |", "|---|---|---|---|---|---|"]
    for c in report["characters"]:
        frac = f"{c['roofline_fraction']:.2f}" if "roofline_fraction" in c else ""
        copy = gbps(c["copy_gbps"]) if "copy_gbps" in c else ""
        out.append(f"| {c['format']} | {c['heads']} | {c['gpu_us_per_head']:.2f} | {c['heads_per_16_6_ms']:,} | "
                   f"{frac} | {copy} |")
    out += ["", "| goal | met | numbers |", "|---|---|---|"]
    for g, met, numbers in goals(report):
        out.append(f"| {g} | {'yes' if met else 'no'} | {numbers} |")
    return out


def plot(report: dict, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        from ..errors import UsageError

        raise UsageError("--plot needs matplotlib: pip install 'vkmorph[bench]'") from None
    fig, ax = plt.subplots(1, 2, figsize=(12, 4.5))
    rows = report["rows"]
    x = np.arange(len(rows) // 2)
    for k, fmt in enumerate(("full", "compact")):
        rs = [r for r in rows if r["delta_format"] == fmt]
        y = [r["roofline_fraction"] for r in rs]
        err = [[r["roofline_fraction"] - r["fraction_min"] for r in rs],
               [r["fraction_max"] - r["roofline_fraction"] for r in rs]]
        ax[0].bar(x[:len(rs)] + (k - 0.5) * 0.4, y, 0.4, yerr=err, label=fmt, capsize=2)
    ax[0].set_xticks(x, [r["case"] for r in rows if r["delta_format"] == "full"], rotation=60, ha="right",
                     fontsize=7)
    ax[0].axhline(0.5, ls="--", c="grey", label="goal 0.5")
    ax[0].set_ylabel("roofline fraction (floor / morph time)")
    ax[0].legend(fontsize=8)
    cpu = report["cpu_per_frame"]
    ax[1].plot([c["primitives"] for c in cpu], [c["changed_ms"] for c in cpu], "o-", label="all changed")
    ax[1].plot([c["primitives"] for c in cpu], [c["unchanged_ms"] for c in cpu], "s-", label="unchanged")
    ax[1].set_xscale("log")
    ax[1].set_yscale("log")
    ax[1].set_xlabel("morphing primitives")
    ax[1].set_ylabel("CPU ms per frame")
    ax[1].legend()
    fig.suptitle(f"vkmorph bench: {report['device']} ({report['date']})")
    fig.tight_layout()
    from ..outputs import atomic_write

    atomic_write(path, lambda fh: fig.savefig(fh, dpi=110, format="png"))
    plt.close(fig)
