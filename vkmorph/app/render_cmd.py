"""``vkmorph render FILE [--clip NAME --time T] [--size WxH] --out OUT.png``: one headless frame.

The camera frames the scene's bounds at the sampled pose (skinned extents + morph conservative bounds).
Arguments are checked before any GPU work; the PNG is written atomically, nothing on error.
"""

from __future__ import annotations

import sys

import numpy as np

from ..asset.importer import load_scene
from ..errors import UsageError


def run_render(args) -> int:
    from ..render.offscreen import parse_size, write_png_atomic

    w, h = parse_size(args.size)
    if not str(args.out).lower().endswith(".png"):
        raise UsageError(f"--out must be a .png file, got {args.out!r}")
    if not np.isfinite(args.time):
        raise UsageError(f"--time must be finite, got {args.time}")
    from .progress import stages

    with stages(["importing", "Vulkan device", "GPU data and pipelines", "rendering"], desc="vkmorph render") as step:
        scene = load_scene(args.file)
        clip = scene.clip(args.clip) if args.clip is not None else (scene.animations[0] if scene.animations else None)

        from ..anim.player import AnimationPlayer
        from ..gpu.context import Context
        from ..render.offscreen import OffscreenRenderer

        step()
        ctx = Context.create(echo_messages=True)
        try:
            step()
            off = OffscreenRenderer(ctx, scene, w, h)
            step()
            if clip is not None:
                player = AnimationPlayer(scene, off.renderer.runtime.pose, off.renderer.skeleton)
                player.clip = clip
                player.apply(min(max(args.time, 0.0), clip.duration))
                off.renderer.reframe()
            rgba = off.render()
            for line in off.warnings:  # bad material data: rendered without it, exit status stays 0
                print(f"vkmorph: warning: {line}", file=sys.stderr)
            off.destroy()
        finally:
            ctx.destroy()
    if ctx.errors_and_warnings():
        return 3
    write_png_atomic(args.out, rgba)
    print(f"wrote {args.out} ({w}x{h})")
    return 0
