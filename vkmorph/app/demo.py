"""``vkmorph demo [FILE]``: until the GLFW renderer lands, show the device and run the GPU morph pass on the
scene (default: the built-in red/blue/purple scene) through its first clip, checking each frame's output
against the numpy reference."""

from __future__ import annotations

import numpy as np

from ..asset.importer import load_scene


def run_demo(args) -> int:
    from ..anim.player import AnimationPlayer
    from ..gpu.context import Context
    from ..morph.reference import morph_reference
    from ..render.morph_pass import MorphRuntime

    scene = load_scene(args.file)
    ctx = Context.create(echo_messages=True)
    try:
        i = ctx.info
        print(f"device: {i.name} ({i.device_type}), Vulkan {i.api_version}, "
              f"validation {'on' if ctx.validation else 'off'}")
        print("the GLFW window and the skinning/shadow/forward passes are not built yet; running the morph "
              "pass headless instead")
        with MorphRuntime(ctx, scene) as rt:
            player = AnimationPlayer(scene, rt.pose)
            frames = args.frames or 8
            worst = 0.0
            for f in range(frames):
                player.advance(1.0 / 30.0 if f else 0.0)
                ctx.submit_and_wait(rt.record)
                c = [rt.last_counters]
                for inst in rt.morphing:
                    out = rt.read_vertices(inst)
                    p, _, _ = morph_reference(inst.prim, rt.pose.weights(inst.node)[: inst.state.target_count])
                    worst = max(worst, float(np.abs(out["position"] - p).max()))
                print(f"frame {f}: t={player.local_time():.3f}s dispatched {c[0].dispatched} skipped "
                      f"{c[0].skipped} uploaded {c[0].bytes_uploaded} B")
            print(f"max |GPU - numpy| over {frames} frames: {worst:.2e}")
    finally:
        ctx.destroy()
    return 3 if ctx.errors_and_warnings() else 0
