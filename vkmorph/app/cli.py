"""The ``vkmorph`` command line (a stable contract, see docs/architecture.md).

Every sub-command turns a ``VkmorphError`` into one line on stderr and exit status 2, writes nothing on error,
and, with ``VKMORPH_VALIDATION=1``, prints each validation message and exits 3 if there was any.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from ..errors import VkmorphError

EXIT_BAD_INPUT = 2
EXIT_VALIDATION = 3


def _gpu_context(**kw):
    from ..gpu.context import Context

    return Context.create(echo_messages=True, **kw)


def _finish(ctx) -> int:
    """Destroy the context; exit 3 when validation reported anything (messages were echoed as they came)."""
    ctx.destroy()
    return EXIT_VALIDATION if ctx.errors_and_warnings() else 0


def cmd_devices(args) -> int:
    ctx = _gpu_context()
    i = ctx.info
    print(f"device: {i.name} ({i.device_type}), Vulkan {i.api_version}, validation "
          f"{'on' if ctx.validation else 'off'}")
    return _finish(ctx)


def cmd_info(args) -> int:
    from .info import run_info

    return run_info(args)


def cmd_morph(args) -> int:
    from .morph_cmd import run_morph

    return run_morph(args)


def cmd_render(args) -> int:
    from .render_cmd import run_render

    return run_render(args)


def cmd_demo(args) -> int:
    from .demo import run_demo

    return run_demo(args)


def cmd_bench(args) -> int:
    from .bench import run_bench

    return run_bench(args)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="vkmorph", description="GPU morph targets and skinning on Vulkan.",
                                 epilog="Environment: VKMORPH_VALIDATION=1|0 (validation layer, exit 3 on any "
                                        "message), VKMORPH_DEVICE=<name substring>.")
    sub = ap.add_subparsers(dest="command", required=True)

    p = sub.add_parser("devices", help="print the Vulkan device vkmorph would use")
    p.set_defaults(fn=cmd_devices)

    p = sub.add_parser("info", help="what the importer found in FILE, after validation")
    p.add_argument("file")
    p.add_argument("--json", action="store_true", help="machine-readable output (see docs/architecture.md)")
    p.set_defaults(fn=cmd_info)

    p = sub.add_parser("morph", help="run the GPU morph pass on FILE and write the output vertices to .npz")
    p.add_argument("file")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--weights", help="comma-separated weights applied to every morph primitive")
    g.add_argument("--clip", help="animation clip name or index, sampled at --time")
    p.add_argument("--time", type=float, default=0.0, help="seconds into --clip (clamped, not looped)")
    p.add_argument("--skinned", action="store_true", help="positions after morph + skinning (mesh node space)")
    p.add_argument("--out", required=True, help="output .npz")
    p.set_defaults(fn=cmd_morph)

    p = sub.add_parser("render", help="render one frame of FILE headless to a PNG (shadow + forward pass)")
    p.add_argument("file")
    p.add_argument("--clip", help="animation clip name or index (default: the first clip)")
    p.add_argument("--time", type=float, default=0.0, help="seconds into the clip (clamped)")
    p.add_argument("--size", default="640x480", help="WxH (default 640x480)")
    p.add_argument("--out", required=True, help="output .png")
    p.set_defaults(fn=cmd_render)

    p = sub.add_parser("demo", help="interactive GLFW demo (headless PNG frames when there is no display)")
    p.add_argument("file", nargs="?", help="model to show; default: the built-in scene")
    p.add_argument("--frames", type=int, default=0, help="stop after N frames (0 = run until closed)")
    p.add_argument("--screenshot", help="write the last frame to this PNG")
    p.add_argument("--no-vsync", action="store_true")
    p.add_argument("--headless", action="store_true", help="force headless rendering (automatic without a display)")
    p.add_argument("--out-dir", default="demo-frames", help="headless: folder for frame PNGs (default demo-frames)")
    p.add_argument("--log-frames", action="store_true", help="print each frame's morph dispatch counters")
    p.set_defaults(fn=cmd_demo)

    p = sub.add_parser("bench", help="benchmark the morph pass against copy bandwidth and numpy",
                       description="Same-window roofline of the morph pass (floor bytes = V x (48 + 36) + active "
                                   "deltas x 40 at the copy bandwidth); a full run takes about 3 minutes on an H200 "
                                   "and about 15 minutes on lavapipe with 2 cores.")
    p.add_argument("--quick", action="store_true", help="small sizes only (a minute on lavapipe)")
    p.add_argument("--json", help="write results as JSON")
    p.add_argument("--markdown", help="write a markdown table")
    p.add_argument("--plot", help="write a PNG plot (needs matplotlib)")
    p.set_defaults(fn=cmd_bench)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args) or 0)
    except VkmorphError as exc:
        print(f"vkmorph {args.command}: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # `vkmorph info x | head`
        return 0


if __name__ == "__main__":
    sys.exit(main())
