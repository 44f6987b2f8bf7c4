"""The sections a short H200 loan measures when the full `vkmorph bench` does not fit: the bake against numpy,
GPU time with k of N primitives changed, and record()/draws() CPU per frame. Each section's result is written to
the JSON as soon as it is measured (a loan cut short still returns what was done).

    python bench/h200_extra.py OUT.json [bake] [dirty] [draws]
"""

from __future__ import annotations

import json
import sys

from vkmorph.app import bench as B
from vkmorph.gpu.context import Context


def main(argv: list[str]) -> int:
    out, sections = argv[0], argv[1:] or ["bake", "dirty", "draws"]
    report: dict = {}

    def save():
        with open(out, "w") as fh:
            json.dump(report, fh, indent=2)

    ctx = Context.create()
    try:
        report["device"] = ctx.info.name
        timer = B.WindowTimer(ctx)
        for s in sections:
            if s == "bake":
                report["bake"] = b = B.bake_throughput(B.BAKE_FRAMES)
                print(B.bake_line(b) if b else "bake: RobotExpressive not found", flush=True)
            elif s == "dirty":
                report["dirty_scaling"] = rows = B.dirty_scaling(ctx, timer, 1000)
                for d in rows:
                    print(f"{d['changed']:>5} of {d['primitives']} primitives changed: GPU {d['gpu_ms']:.3f} ms per "
                          f"frame, record() {d['record_cpu_ms']:.3f} ms CPU, {d['dispatch_ranges']} ranges, "
                          f"{d['groups']} workgroups", flush=True)
            elif s == "draws":
                report["draws_per_frame"] = rows = B.draw_frame_costs(ctx, (1, 100, 1000, 10000))
                for c in rows:
                    print(B.draw_costs_line(c), flush=True)
            save()
        timer.destroy()
    finally:
        ctx.destroy()
    save()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
