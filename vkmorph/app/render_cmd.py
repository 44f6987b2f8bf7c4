"""``vkmorph render FILE [--clip NAME --time T] [--weight NAME=W].. [--weights W,..] [--camera yaw,pitch[,d]]
[--fov DEG] [--size WxH] [--msaa N] [--frames N [--fps F]] --out OUT.png``: headless frames.

The camera and the ground are fitted to the model as posed at the sampled time (``SceneRenderer.frame_camera``:
the posed bounds of every primitive, morph weights and skinning included, from `MorphRuntime.bounds`); then
``--fov`` and ``--camera`` change the view. Weights given by flag are applied after the clip (they override it).
``--frames N`` is a headless frame loop: N frames from ``--time`` on, ``1/--fps`` apart (the clip loops), written
as ``OUT_0000.png`` ... with the camera framed once on the first (as the demo does). Arguments are checked before
any GPU work; each PNG is written atomically, nothing on error.
"""

from __future__ import annotations

import math
import sys
import time
from pathlib import Path

import numpy as np

from ..asset.importer import load_scene
from ..errors import UsageError
from .cli import external_uris
from .pose_args import apply_camera, apply_weights, check_fov, check_msaa, check_weight_args, parse_camera


def frame_paths(out: str, frames: int) -> list[Path]:
    """OUT.png itself for one frame (no --frames); OUT_0000.png ... for a frame loop."""
    p = Path(out)
    if not frames:
        return [p]
    return [p.with_name(f"{p.stem}_{i:04d}{p.suffix}") for i in range(frames)]


def run_render(args) -> int:
    from ..render.offscreen import parse_size, write_png_atomic

    w, h = parse_size(args.size)
    if not str(args.out).lower().endswith(".png"):
        raise UsageError(f"--out must be a .png file, got {args.out!r}")
    if not np.isfinite(args.time):
        raise UsageError(f"--time must be finite, got {args.time}")
    frames = getattr(args, "frames", 0) or 0
    fps = getattr(args, "fps", 30.0)
    if frames < 0 or frames > 100000:
        raise UsageError(f"--frames must be within 0..100000, got {frames}")
    if not (math.isfinite(fps) and fps > 0):
        raise UsageError(f"--fps must be a positive number, got {fps}")
    camera, fov = parse_camera(getattr(args, "camera", None)), check_fov(getattr(args, "fov", None))
    msaa = check_msaa(getattr(args, "msaa", None))
    from ..progress import stages

    with stages(["importing", "Vulkan device", "GPU data and pipelines", "rendering"], desc="vkmorph render") as step:
        scene = load_scene(args.file, allow_external_uris=external_uris(args))
        named, listed = check_weight_args(scene, args)
        clip = scene.clip(args.clip) if args.clip is not None else (scene.animations[0] if scene.animations else None)

        from ..anim.player import AnimationPlayer
        from ..gpu.context import Context
        from ..render.offscreen import OffscreenRenderer

        step()
        ctx = Context.create(echo_messages=True)
        written = []
        try:
            step()
            from ..gpu.image import msaa_samples

            off = OffscreenRenderer(ctx, scene, w, h, **({"samples": msaa_samples(ctx, msaa)} if msaa else {}))
            try:
                step()
                r = off.renderer
                player = None
                if clip is not None:
                    player = AnimationPlayer(scene, r.runtime.pose, r.skeleton)
                    player.clip = clip
                    player.loop = bool(frames)
                paths = frame_paths(args.out, frames)
                t0 = time.perf_counter()
                rendering = 0.0                   # seconds in off.render(): pose upload, passes, readback
                for i, path in enumerate(paths):
                    t = args.time + i / fps
                    if player is not None:
                        player.apply(t % clip.duration if frames and clip.duration > 0
                                     else min(max(t, 0.0), clip.duration))
                    apply_weights(scene, r.runtime.pose, named, listed)
                    if i == 0:
                        r.frame_camera()
                        apply_camera(r, camera, fov)
                    t1 = time.perf_counter()
                    rgba = off.render()
                    rendering += time.perf_counter() - t1
                    if i == 0:
                        for line in off.warnings:  # bad material data: rendered without it, exit status stays 0
                            print(f"vkmorph: warning: {line}", file=sys.stderr)
                    if ctx.errors_and_warnings():
                        break
                    write_png_atomic(path, rgba)
                    written.append(path)
                spent = time.perf_counter() - t0
            finally:
                off.destroy()
        finally:
            ctx.destroy()
    if ctx.errors_and_warnings():
        return 3
    if frames:
        print(f"wrote {len(written)} frames {written[0]} .. {written[-1]} ({w}x{h}); per frame "
              f"{rendering / len(written) * 1000:.1f} ms rendering, {spent / len(written) * 1000:.1f} ms with the "
              f"PNG write, on {ctx.info.name}")
    else:
        print(f"wrote {args.out} ({w}x{h})")
    return 0
