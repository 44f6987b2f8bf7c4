"""Does the heads-per-frame figure survive an idle GPU? (experiment, not part of vkmorph)

Times the Dawn-like heads (both formats, twice each) after idle stretches of 0 and 5 s, with the bench's own
``characters_per_frame`` (warm-up included), and prints us per head and the same-window fraction of each.

    python bench/heads_check.py
"""
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def main():
    from vkmorph.app import bench as B
    from vkmorph.gpu.context import Context

    ctx = Context.create()
    timer = B.WindowTimer(ctx)
    print("device", ctx.info.name, B.driver_string(ctx), flush=True)
    for idle in (5.0, 0.0, 5.0):
        for fmt in ("full", "compact"):
            time.sleep(idle)
            c = B.characters_per_frame(ctx, timer, 256, fmt, 5, 0.3, 4.0)
            print(f"idle {idle:3.0f}s {fmt:>7}: {c['gpu_us_per_head']:.2f} us/head -> {c['heads_per_16_6_ms']:,} "
                  f"per frame, fraction {c['roofline_fraction']:.2f}, copy floor {c['floor_us']:.1f} us", flush=True)
    timer.destroy()
    ctx.destroy()


if __name__ == "__main__":
    main()
