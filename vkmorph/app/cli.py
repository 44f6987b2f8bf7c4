"""The ``vkmorph`` command line (a stable contract, see docs/architecture.md).

Every output path is checked before any work (vkmorph.outputs). Errors are one line on stderr and an exit
status: 2 any vkmorph error (bad input or arguments, ``AssetError``/``UsageError``; a missing Vulkan loader,
driver or layer, ``GpuError``), 3 validation messages (``VKMORPH_VALIDATION=1``, each echoed as it comes),
1 an internal error (``VKMORPH_DEBUG=1`` shows the traceback), 130/143 interrupted by SIGINT/SIGTERM
(temporary files removed). Warnings are one line each, held back until the command succeeds (the demo: until
its file loaded), so a failing command prints only its error.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import warnings
from collections.abc import Sequence

from .. import __version__
from ..errors import UsageError, VkmorphError
from ..outputs import check_output, check_output_dir, printable

EXIT_INTERNAL = 1
EXIT_BAD_INPUT = 2
EXIT_VALIDATION = 3
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


def external_uris(args) -> bool | None:
    """``--allow-external-uris`` for load_scene: True when given, else None (the environment decides)."""
    return True if getattr(args, "allow_external_uris", False) else None


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
    check_output(args.out, suffixes=(".png",))
    from .render_cmd import run_render

    return run_render(args)


def cmd_demo(args) -> int:
    if args.screenshot is not None:
        check_output(args.screenshot, flag="--screenshot", suffixes=(".png",))
    from .demo import headless_requested, run_demo

    if headless_requested(args):
        check_output_dir(args.out_dir)

    return run_demo(args)


def cmd_bench(args) -> int:
    for flag, suffixes in (("json", (".json",)), ("markdown", (".md", ".markdown")), ("plot", (".png",))):
        if getattr(args, flag, None) is not None:
            check_output(getattr(args, flag), flag=f"--{flag}", suffixes=suffixes)
    if getattr(args, "plot", None) is not None:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            raise UsageError("--plot needs matplotlib: pip install 'vkmorph[bench]'") from None
    from .bench import run_bench

    return run_bench(args)


class _Parser(argparse.ArgumentParser):
    """argparse with the CLI's error contract: a usage error is ONE line on stderr and exit status 2."""

    def error(self, message: str):
        self.exit(EXIT_BAD_INPUT, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="vkmorph", description="GPU morph targets and skinning on Vulkan.",
                                 epilog="Environment: VKMORPH_VALIDATION=1|0 (validation layer, exit 3 on any "
                                        "message), VKMORPH_DEVICE=<name substring>, VKMORPH_ALLOW_EXTERNAL_URIS=1.")
    ap.add_argument("--version", action="version", version=f"vkmorph {__version__}")
    sub = ap.add_subparsers(dest="command")   # none: main() prints the help
    model = _Parser(add_help=False)   # what every command that reads a model file takes
    model.add_argument("--allow-external-uris", action="store_true",
                       help="let the file's buffer/image URIs leave its folder (absolute paths, ..); refused by "
                            "default (also VKMORPH_ALLOW_EXTERNAL_URIS=1)")

    p = sub.add_parser("devices", help="print the Vulkan device vkmorph would use")
    p.set_defaults(fn=cmd_devices)

    p = sub.add_parser("info", parents=[model], help="what the importer found in FILE, after validation")
    p.add_argument("file")
    p.add_argument("--json", action="store_true", help="machine-readable output (see docs/architecture.md)")
    p.add_argument("--lod", action="store_true",
                   help="also each primitive's triangles per level of detail (crowds: SceneRenderer(lod=))")
    p.set_defaults(fn=cmd_info)

    p = sub.add_parser("morph", parents=[model],
                       help="pose FILE on the GPU (morph, optionally skinning) and write vertices to .npz")
    p.add_argument("file")
    p.add_argument("--weights", help="comma-separated weights applied to every morph primitive")
    p.add_argument("--weight", action="append", metavar="NAME=W",
                   help="set morph target NAME to W on every node that has it (repeatable; after --clip)")
    p.add_argument("--clip", help="animation clip name or index, sampled at --time")
    p.add_argument("--time", type=float, default=None, help="seconds into --clip (clamped, not looped; default 0)")
    p.add_argument("--skinned", action="store_true", help="positions after morph + skinning")
    p.add_argument("--world", action="store_true", help="world space instead of the mesh node's space")
    p.add_argument("--names", action="store_true", help="keys <node>/<k>/... for every instance instead of p<i>/")
    p.add_argument("--out", required=True, help="output .npz (position, normal, tangent, indices per primitive)")
    p.set_defaults(fn=cmd_morph)

    p = sub.add_parser("render", parents=[model],
                       help="render one frame of FILE headless to a PNG (shadow + forward pass)")
    p.add_argument("file")
    p.add_argument("--clip", help="animation clip name or index (default: the first clip)")
    p.add_argument("--time", type=float, default=0.0,
                   help="seconds into --clip, or into the first clip without --clip (clamped; default 0)")
    p.add_argument("--weight", action="append", metavar="NAME=W",
                   help="set morph target NAME to W on every node that has it (repeatable; overrides the clip)")
    p.add_argument("--weights", metavar="W,..", help="comma-separated weights applied to every morph primitive")
    p.add_argument("--camera", metavar="YAW,PITCH[,DIST]",
                   help="orbit angles in degrees (default 20,17) and distance in model units (default: framed)")
    p.add_argument("--fov", type=float, metavar="DEG", help="vertical field of view in degrees (default 45)")
    p.add_argument("--size", default="640x480", help="WxH (default 640x480)")
    p.add_argument("--msaa", type=int, metavar="N", help="samples per pixel: 1, 2, 4 or 8 (default 4 where supported)")
    p.add_argument("--frames", type=int, default=0, metavar="N",
                   help="a headless frame loop: N frames from --time on, written as OUT_0000.png ...")
    p.add_argument("--fps", type=float, default=30.0, help="with --frames: frames per second of clip time (30)")
    p.add_argument("--out", required=True, help="output .png")
    p.set_defaults(fn=cmd_render)

    p = sub.add_parser("demo", parents=[model],
                       help="interactive GLFW demo (headless PNG frames when there is no display)")
    p.add_argument("file", nargs="?", help="model to show; default: the built-in scene")
    p.add_argument("--frames", type=int, default=0, help="stop after N frames (0 = run until closed)")
    p.add_argument("--screenshot", help="write the last frame to this PNG")
    p.add_argument("--no-vsync", action="store_true")
    p.add_argument("--headless", action="store_true", help="force headless rendering (automatic without a display)")
    p.add_argument("--out-dir", default="demo-frames", help="headless: folder for frame PNGs (default demo-frames)")
    p.add_argument("--log-frames", action="store_true", help="print each frame's morph dispatch counters")
    p.add_argument("--no-panel", action="store_true", help="no on-screen panel (keys still work)")
    p.add_argument("--clip", help="start on this animation clip (name or index; C cycles)")
    p.add_argument("--size", metavar="WxH", help="window size (default 960x640; 800x500 on a CPU device)")
    p.add_argument("--msaa", type=int, metavar="N",
                   help="samples per pixel: 1, 2, 4 or 8 (default 4 on a GPU, 1 on a CPU device)")
    p.add_argument("--scale", type=float, metavar="F",
                   help="render scale: the 3D view at F (0.25..1) of the window's size, upscaled; the panel stays "
                        "at full resolution (default 1 on a GPU, 0.75 on a CPU device; headless: 1)")
    p.add_argument("--shadow-size", type=int, metavar="PX",
                   help="shadow map size (default 1024 on a GPU, 512 on a CPU device)")
    p.add_argument("--crowd", type=int, metavar="N",
                   help="N instances on a grid, each at its own clip phase and speed (skinned once per frame, culled)")
    p.add_argument("--crowd-lod", choices=["off", "on", "0", "1", "2", "3"], default="off",
                   help="--crowd: levels of detail per instance by its size on screen (on), or one level forced "
                        "(0 = the full mesh .. 3 = ~7%% of its triangles as a target); the panel shows instances "
                        "per level")
    p.add_argument("--crowd-anim", choices=["gpu", "cpu"], default="gpu",
                   help="--crowd: pose the instances' skeletons on the GPU (default; morph weights sampled on the "
                        "CPU) or on the CPU (numpy, ~70 us per instance per frame)")
    p.set_defaults(fn=cmd_demo)

    p = sub.add_parser("bench", help="benchmark the morph pass against copy bandwidth and numpy",
                       description="Same-window roofline of the morph pass (floor bytes = V x (48 + 36) + active "
                                   "deltas x 40 at the copy bandwidth). A full run takes about 3 minutes on an H200 "
                                   "and 3-6 minutes on lavapipe (2 cores); --quick takes a few minutes on a busy "
                                   "2-core machine. Figures measured on a loaded machine are not the device's.")
    p.add_argument("--quick", action="store_true", help="small sizes only (minutes on lavapipe, less on a GPU)")
    p.add_argument("--only", choices=["slots", "crowd", "startup"],
                   help="run one section: slots = morph + draw per frame with 1 vs 3 output slots (issue 13; ~30 s "
                        "on an H200); crowd = RobotExpressive x N instances (issue 25); startup = the demo's "
                        "headless frame loop (FPS), time to first frame, vkmorph info and vkmorph.open again "
                        "(issue 28; also in --quick)")
    p.add_argument("--json", help="write results as JSON")
    p.add_argument("--markdown", help="write a markdown table")
    p.add_argument("--plot", help="write a PNG plot (needs matplotlib)")
    p.set_defaults(fn=cmd_bench)
    return ap


class _Terminated(BaseException):
    """Raised by the SIGTERM handler so cleanup (temporary files, GPU objects) runs as for Ctrl-C."""


_sigterm_received = False


def _on_sigterm(signum, frame):
    global _sigterm_received
    _sigterm_received = True   # a C extension being imported turns the exception into an ImportError of its own
    raise _Terminated()


class _Warnings:
    """Warnings during a command, one line each (once each), held back: printed when the command succeeds, or when
    a long-running command releases them (``release_warnings``: the demo, once its file loaded and its flags were
    checked), dropped when it fails, so that a failing command prints ONE line (the error), not a repair warning
    of its file and then the error."""

    def __init__(self) -> None:
        self.held: list[str] = []
        self.holding = True

    def show(self, message, category, filename, lineno, file=None, line=None) -> None:
        text = f"vkmorph: warning: {printable(message)}"
        if not self.holding:
            print(text, file=sys.stderr)
        elif text not in self.held:
            self.held.append(text)

    def flush(self) -> None:
        """Print what was held; from now on warnings are printed as they come."""
        for text in self.held:
            print(text, file=sys.stderr)
        self.held.clear()
        self.holding = False


_current: _Warnings | None = None


def release_warnings() -> None:
    """Print the warnings held so far and stop holding them (a long-running command, after its input is known
    good: what comes later would otherwise wait for the command's end)."""
    if _current is not None:
        _current.flush()


def main(argv: Sequence[str] | None = None) -> int:
    # A dependency's SyntaxWarning (pyassimp on Python 3.12+, first import) must not reach stderr.
    warnings.filterwarnings("ignore", category=SyntaxWarning)
    global _current, _sigterm_received
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:   # bare `vkmorph`: what it can do, not an error
        parser.print_help()
        return 0
    held = _current = _Warnings()
    shown_before, warnings.showwarning = warnings.showwarning, held.show
    _sigterm_received = False
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if _main_thread() else None
    try:
        status = int(args.fn(args) or 0)
        held.flush()
        return status
    except VkmorphError as exc:   # the loader's hint names the Python keyword; on the command line, the flag
        print(f"vkmorph {args.command}: {printable(exc).replace('allow_external_uris=True', '--allow-external-uris')}",
              file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        print(f"vkmorph {args.command}: interrupted", file=sys.stderr)
        return EXIT_SIGINT
    except _Terminated:
        print(f"vkmorph {args.command}: terminated", file=sys.stderr)
        return EXIT_SIGTERM
    except BrokenPipeError:  # `vkmorph info x | head`
        _quiet_stdout()
        return 0
    except Exception as exc:  # noqa: BLE001 - one line instead of a traceback, unless asked for
        if _sigterm_received:   # e.g. numpy's "PyCapsule_Import could not import module" when SIGTERM came then
            print(f"vkmorph {args.command}: terminated", file=sys.stderr)
            return EXIT_SIGTERM
        if os.environ.get("VKMORPH_DEBUG"):
            raise
        print(f"vkmorph {args.command}: internal error: {type(exc).__name__}: {printable(exc)} "
              "(VKMORPH_DEBUG=1 shows the traceback)", file=sys.stderr)
        return EXIT_INTERNAL
    finally:
        warnings.showwarning, _current = shown_before, None   # what a failed command held is dropped
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _main_thread() -> bool:
    import threading

    return threading.current_thread() is threading.main_thread()


def _quiet_stdout() -> None:
    """After EPIPE, point stdout at /dev/null so the interpreter's final flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main())
