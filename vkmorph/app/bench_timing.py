"""GPU time inside one window: ``WindowTimer`` (runs of recorded frames bracketed by timestamps in one
command buffer, with the warm-up and the alternating same-window tries), the frame budget, and the driver
string the reports print."""

from __future__ import annotations

import time

import numpy as np

FRAME_MS = 1000.0 / 60.0
WARM_MAX_S = 5.0             # wall-time cap of one warm-up (WindowTimer.same_window)


def driver_string(ctx) -> str:
    """The driver version as its vendor writes it: NVIDIA packs 10.8.8.6 bits, others use VK_MAKE_VERSION."""
    from ..gpu.vk import vk

    v = ctx.info.driver_version
    if vk.vkGetPhysicalDeviceProperties(ctx.physical_device).vendorID == 0x10DE:
        return f"{v >> 22}.{(v >> 14) & 0xFF}.{(v >> 6) & 0xFF}"
    return f"{v >> 22}.{(v >> 12) & 0x3FF}.{v & 0xFFF}"


class WindowTimer:
    """Runs of recorded frames timed with timestamps inside one command buffer (one time window); the query
    pools are vkmorph.gpu.timestamps' (shared with the demo), one per number of segments."""

    def __init__(self, ctx):
        self.ctx = ctx
        self._stamps: dict[int, object] = {}
        self.gpu_s = 0.0
        self.before_run = None      # called before each command buffer is recorded (e.g. FrameFences.begin)

    def run(self, segments, frames: int) -> list[float]:
        """Record ``frames`` frames of each segment back to back; returns GPU ms per frame of each."""
        from ..gpu.timestamps import BOTTOM, TOP, Timestamps

        n = len(segments) + 1
        if n not in self._stamps:
            self._stamps[n] = Timestamps(self.ctx, count=n)
        ts = self._stamps[n]

        def rec(cb):
            if self.before_run is not None:
                self.before_run()
            ts.reset(cb)
            ts.write(cb, 0, 0, TOP)
            for i, seg in enumerate(segments):
                for _ in range(frames):
                    seg(cb)
                ts.write(cb, i + 1, 0, BOTTOM)
        self.ctx.submit_and_wait(rec, timeout_s=600.0)
        ms = np.diff([0.0, *ts.read_ms(0)])
        self.gpu_s += float(ms.sum()) * 1e-3
        return [float(x) / frames for x in ms]

    def same_window(self, a, b, tries: int, warm_s: float, try_ms: float, min_frames: int = 2,
                    max_frames: int = 400):
        """Warm up, then per try F frames of ``a`` and F of ``b`` (order alternating). Returns (F, [(a_ms, b_ms)])."""
        probe = self.run([a, b], min_frames)
        start, t0 = self.gpu_s, time.perf_counter()
        best, steady = float("inf"), 0
        # warm_s of GPU time, then on until the reference (b) stops getting faster: three probes in a row none of
        # them more than 3 % faster than the best before it (a slower probe counts too: this waits out a clock
        # ramp, it does not wait for a fast state), at most WARM_MAX_S of wall time. Ratios are immune to the
        # GPU's clock state, absolute figures (heads per frame) are not; the H200 also sits in a state ~2.5x
        # slower for a whole window at times, which no warm-up here has cured (bench/heads-2026-11-30-h200.txt):
        # reports show each window's copy bandwidth so such a window can be recognized
        while warm_s > 0 and (self.gpu_s - start < warm_s or steady < 3) and time.perf_counter() - t0 < WARM_MAX_S:
            frames = int(np.clip(0.05 * 1e3 / max(sum(probe), 1e-6), min_frames, 4 * max_frames))
            probe = self.run([a, b], frames)
            steady = steady + 1 if probe[1] >= 0.97 * best else 0
            best = min(best, probe[1])
        frames = int(np.clip(try_ms / max(probe[0], 1e-6), min_frames, max_frames))
        out = []
        for t in range(tries):
            if t % 2:
                y, x = self.run([b, a], frames)
            else:
                x, y = self.run([a, b], frames)
            out.append((x, y))
        return frames, out

    def destroy(self):
        for ts in self._stamps.values():
            ts.destroy()
        self._stamps.clear()
