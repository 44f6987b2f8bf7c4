"""``vkmorph demo``: until the GLFW renderer lands, show what the context sees and run a GPU morph round trip
on the built-in default scene, checking it against the numpy reference."""

from __future__ import annotations

import numpy as np


def run_demo(args) -> int:
    from ..gpu.context import Context

    ctx = Context.create(echo_messages=True)
    try:
        i = ctx.info
        print(f"device: {i.name} ({i.device_type}), Vulkan {i.api_version}, "
              f"validation {'on' if ctx.validation else 'off'}")
        try:
            from ..render.morph_pass import demo_round_trip
        except ImportError:
            demo_round_trip = None
        if demo_round_trip is not None:
            demo_round_trip(ctx, args)
        else:
            from ..gpu import memory as M

            data = np.arange(4096, dtype=np.uint32)
            buf = M.device_buffer(ctx, data, M.STORAGE)
            ok = np.array_equal(M.readback(ctx, buf, np.uint32), data)
            buf.destroy()
            print(f"upload/readback round trip: {'ok' if ok else 'MISMATCH'}")
    finally:
        ctx.destroy()
    return 3 if ctx.errors_and_warnings() else 0
