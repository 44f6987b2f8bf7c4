"""Buffers and memory: device-local buffers with staging upload, persistently mapped host buffers as numpy views.

One allocation per buffer keeps the code obvious; the morph pass allocates a handful of buffers per primitive
(or per scene once batched), far below any driver allocation limit.
"""

from __future__ import annotations

import numpy as np

from ..errors import GpuError
from . import barriers
from .context import Context
from .vk import ffi, vk

DEVICE_LOCAL = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
HOST_VISIBLE = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT

STORAGE = vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
VERTEX = vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT
INDEX = vk.VK_BUFFER_USAGE_INDEX_BUFFER_BIT
UNIFORM = vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT
TRANSFER_SRC = vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
TRANSFER_DST = vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT


class Buffer:
    """A VkBuffer with its own memory. ``host=True`` maps it persistently and exposes ``mapped`` (uint8 numpy)."""

    def __init__(self, ctx: Context, size: int, usage: int, *, host: bool = False, name: str = "buffer"):
        if size <= 0:
            size = 4  # Vulkan forbids zero-sized buffers; an empty array still needs a valid binding
        self.ctx, self.size, self.usage, self.host, self.name = ctx, int(size), usage, host, name
        self.handle = self.memory = None
        self.mapped: np.ndarray | None = None
        dev = ctx.device
        self.handle = vk.vkCreateBuffer(dev, vk.VkBufferCreateInfo(
            size=self.size, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        try:
            req = vk.vkGetBufferMemoryRequirements(dev, self.handle)
            if host:
                index = ctx.find_memory_type(req.memoryTypeBits, HOST_VISIBLE,
                                             vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
            else:
                index = ctx.find_memory_type(req.memoryTypeBits, DEVICE_LOCAL)
            try:
                self.memory = vk.vkAllocateMemory(dev, vk.VkMemoryAllocateInfo(
                    allocationSize=req.size, memoryTypeIndex=index), None)
            except (vk.VkErrorOutOfDeviceMemory, vk.VkErrorOutOfHostMemory):
                raise GpuError(f"out of memory allocating {name} ({self.size} bytes)") from None
            vk.vkBindBufferMemory(dev, self.handle, self.memory, 0)
            if host:
                raw = vk.vkMapMemory(dev, self.memory, 0, self.size, 0)
                self.mapped = np.frombuffer(raw, dtype=np.uint8, count=self.size)
        except BaseException:
            self._release()
            raise
        self._key = ctx.track(f"{name} ({self.size} B)", self._release)

    def view(self, dtype, count: int | None = None) -> np.ndarray:
        """The mapped memory as an array of ``dtype`` (host buffers only)."""
        if self.mapped is None:
            raise GpuError(f"{self.name} is not host-visible")
        dtype = np.dtype(dtype)
        n = self.size // dtype.itemsize if count is None else count
        return self.mapped[: n * dtype.itemsize].view(dtype)

    def _release(self) -> None:
        dev = self.ctx.device
        if self.mapped is not None:
            self.mapped = None
            vk.vkUnmapMemory(dev, self.memory)
        if self.handle is not None:
            vk.vkDestroyBuffer(dev, self.handle, None)
            self.handle = None
        if self.memory is not None:
            vk.vkFreeMemory(dev, self.memory, None)
            self.memory = None

    def destroy(self) -> None:
        if self.handle is None and self.memory is None:
            return
        self._release()
        self.ctx.untrack(self._key)


def _as_bytes(array: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(array).reshape(-1).view(np.uint8)


def device_buffer(ctx: Context, data: np.ndarray | bytes | None, usage: int, *, size: int | None = None,
                  name: str = "buffer") -> Buffer:
    """A device-local buffer, filled from ``data`` through a staging buffer when given."""
    raw = None if data is None else _as_bytes(np.frombuffer(data, np.uint8) if isinstance(data, bytes) else data)
    nbytes = size if size is not None else (raw.nbytes if raw is not None else 0)
    buf = Buffer(ctx, nbytes, usage | TRANSFER_DST | TRANSFER_SRC, name=name)
    if raw is not None and raw.nbytes:
        try:
            upload(ctx, buf, raw)
        except BaseException:
            buf.destroy()
            raise
    return buf


def host_buffer(ctx: Context, size: int, usage: int, name: str = "host buffer") -> Buffer:
    return Buffer(ctx, size, usage, host=True, name=name)


def upload(ctx: Context, dst: Buffer, data: np.ndarray, offset: int = 0) -> None:
    """Copy ``data`` into ``dst`` at ``offset`` through a temporary staging buffer, waiting for completion."""
    raw = _as_bytes(data)
    staging = host_buffer(ctx, raw.nbytes, TRANSFER_SRC, name=f"staging for {dst.name}")
    try:
        staging.mapped[:] = raw

        def record(cb):
            vk.vkCmdCopyBuffer(cb, staging.handle, dst.handle, 1,
                               [vk.VkBufferCopy(srcOffset=0, dstOffset=offset, size=raw.nbytes)])
            barriers.transfer_write_to_all(cb)

        ctx.submit_and_wait(record)
    finally:
        staging.destroy()


def readback(ctx: Context, src: Buffer, dtype=np.uint8, count: int | None = None, offset: int = 0,
             before=None) -> np.ndarray:
    """Copy ``src`` to a host buffer and return a numpy copy. ``before(cb)`` may record a barrier first."""
    dtype = np.dtype(dtype)
    nbytes = (src.size - offset) if count is None else count * dtype.itemsize
    nbytes -= nbytes % dtype.itemsize
    staging = host_buffer(ctx, nbytes, TRANSFER_DST, name=f"readback of {src.name}")
    try:
        def record(cb):
            barriers.all_to_transfer_read(cb)
            vk.vkCmdCopyBuffer(cb, src.handle, staging.handle, 1,
                               [vk.VkBufferCopy(srcOffset=offset, dstOffset=0, size=nbytes)])
            barriers.transfer_write_to_host_read(cb)

        ctx.submit_and_wait(record)
        return staging.mapped[:nbytes].view(dtype).copy()
    finally:
        staging.destroy()


def cffi_pointer(array: np.ndarray):
    """A cffi pointer to a contiguous numpy array (for vkCmdUpdateBuffer / vkCmdPushConstants)."""
    return ffi.from_buffer(array)
