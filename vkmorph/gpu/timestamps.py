"""GPU timestamps: one query pool with ``count`` timestamps per slot (a slot per frame in flight).

Shared by the demo (per-frame morph / frame GPU time) and usable by the benchmark::

    ts = Timestamps(ctx, count=3, slots=2)
    ts.reset(cb, slot); ts.write(cb, 0, slot, TOP); ...; ts.write(cb, 2, slot, BOTTOM)
    ms = ts.read_ms(slot)      # after the slot's fence: [t1 - t0, t2 - t0] in milliseconds, or None
"""

from __future__ import annotations

import numpy as np

from .context import Context
from .vk import call, ffi, vk

TOP = vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT
COMPUTE = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
BOTTOM = vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT


class Timestamps:
    def __init__(self, ctx: Context, count: int = 2, slots: int = 1):
        self.ctx, self.count, self.slots = ctx, count, slots
        self.valid = bool(ctx.info.timestamp_valid)
        self.pool = call("vkCreateQueryPool", ctx.device, vk.VkQueryPoolCreateInfo(
            queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=count * slots), None)
        self.used = [False] * slots
        self._data = np.zeros(count, np.uint64)
        self._key = ctx.track("timestamp query pool", self._release)

    def reset(self, cb, slot: int = 0) -> None:
        vk.vkCmdResetQueryPool(cb, self.pool, slot * self.count, self.count)

    def write(self, cb, index: int, slot: int = 0, stage: int = BOTTOM) -> None:
        vk.vkCmdWriteTimestamp(cb, stage, self.pool, slot * self.count + index)
        if index == self.count - 1:
            self.used[slot] = True

    def read_ms(self, slot: int = 0) -> list[float] | None:
        """Milliseconds from timestamp 0 to each later one (waits for the results); None before first use."""
        if not (self.valid and self.used[slot]):
            return None
        call("vkGetQueryPoolResults", self.ctx.device, self.pool, slot * self.count, self.count, 8 * self.count,
             ffi.from_buffer(self._data), 8, vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)
        p = self.ctx.info.timestamp_period_ns * 1e-6
        return [float(self._data[i] - self._data[0]) * p for i in range(1, self.count)]

    def _release(self) -> None:
        if self.pool is not None:
            vk.vkDestroyQueryPool(self.ctx.device, self.pool, None)
            self.pool = None

    def destroy(self) -> None:
        if self.pool is not None:
            self._release()
            self.ctx.untrack(self._key)
