"""The copy reference the morph is measured against: ``CopyFrames`` (a grid-stride uvec4 copy of a byte
count, and vkCmdCopyBuffer), the device's copy ceilings over COPY_MB buffers, and ``CopyCeilings``, the best
copy per byte size that decides whether a roofline row's window is repeated."""

from __future__ import annotations

import time

import numpy as np

from .bench_timing import WindowTimer

COPY_CEILING_WINDOWS = 3      # windows whose best copy is a byte size's ceiling (CopyCeilings)
COPY_REPEAT_BUDGET_S = 120.0  # wall seconds all of a bench's row repeats may take together
COPY_MB = 256


class CopyFrames:
    """One frame = a grid-stride uvec4 copy of ``nbytes`` (half read, half written) + a compute barrier."""

    def __init__(self, ctx, nbytes: int):
        from ..gpu import memory as M
        from ..gpu.interface import COPY, COPY_PUSH
        from ..gpu.pipeline import ComputePipeline

        self.n = max(1, nbytes // 32)
        self.src = M.device_buffer(ctx, None, M.STORAGE | M.TRANSFER_SRC, size=16 * self.n)
        self.dst = M.device_buffer(ctx, None, M.STORAGE | M.TRANSFER_DST, size=16 * self.n)
        self.pipe = ComputePipeline(ctx, COPY, max_sets=1)
        self.dset = self.pipe.make_set({"src": self.src, "dst": self.dst})
        self.push = np.array([(self.n, 0)], COPY_PUSH)
        self.ptr = M.cffi_pointer(self.push)
        self.groups = int(min(self.pipe.groups(self.n), 8192))     # grid-stride: enough to fill any GPU

    @staticmethod
    def _serialize(cb):
        """Each frame's copy finishes before the next one (kernel or vkCmdCopyBuffer) writes the same buffer."""
        from ..gpu import barriers

        barriers.record(cb, barriers.COPIES_TO_COPIES)

    def frame(self, cb):
        from ..gpu.vk import vk

        self.pipe.bind(cb, self.dset)
        self.pipe.push(cb, self.ptr)
        vk.vkCmdDispatch(cb, self.groups, 1, 1)
        self._serialize(cb)

    def transfer_frame(self, cb):
        from ..gpu.vk import vk

        vk.vkCmdCopyBuffer(cb, self.src.handle, self.dst.handle, 1,
                           [vk.VkBufferCopy(srcOffset=0, dstOffset=0, size=16 * self.n)])
        self._serialize(cb)

    def destroy(self):
        for o in (self.pipe, self.src, self.dst):
            o.destroy()


def device_ceilings(ctx, timer: WindowTimer, quick: bool) -> dict:
    """Best copy bandwidth: grid-stride uvec4 copy kernel and vkCmdCopyBuffer, COPY_MB per buffer."""
    mb = 32 if quick else COPY_MB
    cp = CopyFrames(ctx, 2 * mb * 2**20)
    frames, tries = timer.same_window(cp.frame, cp.transfer_frame, 3, 0.0 if quick else 0.5, 20.0, 1, 50)
    nbytes = 2 * 16 * cp.n
    kern = max(nbytes / (x * 1e-3) / 1e9 for x, _ in tries)
    xfer = max(nbytes / (y * 1e-3) / 1e9 for _, y in tries)
    cp.destroy()
    return {"buffer_mb": mb, "copy_kernel_gbps": kern, "copy_buffer_gbps": xfer}


class CopyCeilings:
    """The best copy bandwidth per byte size: the grid-stride copy (``CopyFrames``) of exactly that many bytes,
    best over COPY_CEILING_WINDOWS windows (each warmed up as the rows are), measured the first time a size is
    asked for and cached (a row repeated for a slow window reuses it). Also keeps the wall time spent on row
    repeats, which COPY_REPEAT_BUDGET_S bounds."""

    def __init__(self, ctx, timer: WindowTimer, warm_s: float, try_ms: float, windows: int = COPY_CEILING_WINDOWS,
                 repeat_budget_s: float = COPY_REPEAT_BUDGET_S):
        self.ctx, self.timer, self.warm_s, self.try_ms, self.windows = ctx, timer, warm_s, try_ms, windows
        self.cache: dict[int, float] = {}
        self.measure_s = 0.0          # wall seconds spent measuring sizes
        self.repeat_s = 0.0           # wall seconds spent repeating rows
        self.repeat_budget_s = repeat_budget_s

    def of(self, nbytes: int) -> float:
        cp = CopyFrames(self.ctx, nbytes)
        try:
            key = 2 * 16 * cp.n          # the bytes the copy really moves (what the row's reference moves)
            if key not in self.cache:
                t0 = time.perf_counter()
                best = 0.0
                for k in range(self.windows):     # the first window warms the GPU up, the next ones follow it
                    _frames, tries = self.timer.same_window(cp.frame, cp.frame, 1, self.warm_s if k == 0 else 0.0,
                                                            self.try_ms)
                    best = max(best, *(key / (ms * 1e-3) / 1e9 for pair in tries for ms in pair if ms > 0))
                self.cache[key] = best
                self.measure_s += time.perf_counter() - t0
            return self.cache[key]
        finally:
            cp.destroy()

    def may_repeat(self) -> bool:
        return self.repeat_s < self.repeat_budget_s
