"""Buffers and memory: device-local buffers with staging upload, persistently mapped host buffers as numpy views.

Buffers are sub-allocated from a few large VkDeviceMemory blocks per memory type (``Allocator``, one per
Context; first fit over coalescing hole lists that alignment padding never splits; a buffer larger than half a
block gets a block of its own), so a scene with hundreds of characters stays far below
maxMemoryAllocationCount (4096 on many drivers).
``ctx.allocator.stats()`` reports the counts. Host-visible blocks are mapped once; a host buffer's ``mapped``
is its slice of the block's mapping.

Uploads go through ``Context.queue_upload``: an owned context submits and waits at once (inside
``ctx.batched_uploads()``: all of them in one submission at its end); a borrowed one records the copy into the
host's next command buffer and frees the staging buffer when the host reports completion. ``upload_replicated``
fills a buffer with N copies of one array from one staging copy (doubling GPU copies: log2 N commands).
"""

from __future__ import annotations

import bisect

import numpy as np

from ..errors import GpuError
from . import barriers
from .context import Context
from .vk import call, ffi, result_name, vk

DEVICE_LOCAL = vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
HOST_VISIBLE = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT

STORAGE = vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT
VERTEX = vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT
INDEX = vk.VK_BUFFER_USAGE_INDEX_BUFFER_BIT
UNIFORM = vk.VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT
TRANSFER_SRC = vk.VK_BUFFER_USAGE_TRANSFER_SRC_BIT
TRANSFER_DST = vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT
UNIFORM_TEXEL = vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT

BLOCK_BYTES = {False: 32 << 20, True: 8 << 20}   # device-local / host-visible block sizes


class _Block:
    def __init__(self, ctx: Context, type_index: int, size: int, host: bool, serial: int):
        self.ctx, self.type_index, self.size, self.host = ctx, type_index, size, host
        try:
            self.memory = vk.vkAllocateMemory(ctx.device, vk.VkMemoryAllocateInfo(
                allocationSize=size, memoryTypeIndex=type_index), None)
        except (vk.VkErrorOutOfDeviceMemory, vk.VkErrorOutOfHostMemory):
            raise GpuError(f"out of {'host' if host else 'device'} memory allocating a {size}-byte block") from None
        ctx.set_name(self.memory, vk.VK_OBJECT_TYPE_DEVICE_MEMORY, f"memory block {serial} ({size} B)")
        self.mapped = None
        if host:
            raw = call("vkMapMemory", ctx.device, self.memory, 0, size, 0, what="memory block")
            self.mapped = np.frombuffer(raw, dtype=np.uint8, count=size)
        # sorted, disjoint, never adjacent [offset, size] holes; an allocation takes its alignment padding with
        # it (no sliver holes), so a block only filled has one hole and take() looks at one entry: the cost of an
        # allocation does not grow with the buffers already placed, only with the holes frees left
        self.free = [[0, size]]
        self._spans: dict[int, tuple[int, int]] = {}   # start -> (offset cut from the hole, bytes incl. padding)
        self.used = 0

    def take(self, size: int, alignment: int) -> int | None:
        for i, (off, n) in enumerate(self.free):
            start = (off + alignment - 1) // alignment * alignment
            end = start + size
            if end > off + n:
                continue
            if end == off + n:
                del self.free[i]
            else:
                self.free[i] = [end, off + n - end]
            self._spans[start] = (off, end - off)
            self.used += 1
            return start
        return None

    def give(self, offset: int, size: int) -> None:
        """Return the span that started at ``offset`` (with its padding), merged with the holes beside it:
        a binary search and at most two merges."""
        off, n = self._spans.pop(offset)
        self.used -= 1
        free = self.free
        i = bisect.bisect_left(free, [off, 0])
        if i > 0 and free[i - 1][0] + free[i - 1][1] == off:
            i -= 1
            free[i][1] += n
        else:
            free.insert(i, [off, n])
        if i + 1 < len(free) and free[i][0] + free[i][1] == free[i + 1][0]:
            free[i][1] += free[i + 1][1]
            del free[i + 1]

    def release(self) -> None:
        if self.mapped is not None:
            self.mapped = None
            vk.vkUnmapMemory(self.ctx.device, self.memory)
        vk.vkFreeMemory(self.ctx.device, self.memory, None)
        self.memory = None


class Allocator:
    """Few large allocations per memory type; empty blocks are freed at once."""

    def __init__(self, ctx: Context):
        self.ctx = ctx
        self.blocks: list[_Block] = []
        self.buffers = 0
        self.peak_allocations = 0
        self._made = 0
        ctx.add_finalizer(self.release_all)

    @staticmethod
    def of(ctx: Context) -> Allocator:
        if ctx.allocator is None:
            ctx.allocator = Allocator(ctx)
        return ctx.allocator

    def allocate(self, req, host: bool, preferred: int | None = None) -> tuple[_Block, int]:
        if host:
            index = self.ctx.find_memory_type(req.memoryTypeBits, HOST_VISIBLE,
                                              vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT if preferred is None else preferred)
        else:
            index = self.ctx.find_memory_type(req.memoryTypeBits, DEVICE_LOCAL)
        block_bytes = BLOCK_BYTES[host]
        if req.size <= block_bytes // 2:
            for b in self.blocks:
                if b.type_index == index and b.host == host and b.size == block_bytes:
                    off = b.take(req.size, req.alignment)
                    if off is not None:
                        self.buffers += 1
                        return b, off
        size = block_bytes if req.size <= block_bytes // 2 else req.size
        self._made += 1
        b = _Block(self.ctx, index, size, host, self._made)
        self.blocks.append(b)
        self.peak_allocations = max(self.peak_allocations, len(self.blocks))
        off = b.take(req.size, req.alignment)
        self.buffers += 1
        return b, off

    def free(self, block: _Block, offset: int, size: int) -> None:
        block.give(offset, size)
        self.buffers -= 1
        if block.used == 0:
            self.blocks.remove(block)
            block.release()

    def stats(self) -> dict:
        """allocations: live VkDeviceMemory objects; buffers: live buffers in them; bytes: block bytes."""
        return {"allocations": len(self.blocks), "peak_allocations": self.peak_allocations,
                "buffers": self.buffers, "bytes": sum(b.size for b in self.blocks)}

    def release_all(self) -> None:
        for b in self.blocks:
            b.release()
        self.blocks.clear()


class Buffer:
    """A VkBuffer sub-allocated from its Context's memory blocks. ``host=True`` gives a persistently mapped
    buffer exposing ``mapped`` (uint8 numpy), in a host-visible coherent memory type with the ``preferred``
    property flags where one has them (default: host-cached, for what the host reads)."""

    def __init__(self, ctx: Context, size: int, usage: int, *, host: bool = False, name: str = "buffer",
                 preferred: int | None = None):
        ctx.check_alive(f"creating buffer {name}")
        if size <= 0:
            size = 4  # Vulkan forbids zero-sized buffers; an empty array still needs a valid binding
        self.ctx, self.size, self.usage, self.host, self.name = ctx, int(size), usage, host, name
        self.handle = self._block = None
        self.mapped: np.ndarray | None = None
        dev = ctx.device
        self.handle = call("vkCreateBuffer", dev, vk.VkBufferCreateInfo(
            size=self.size, usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None, what=name)
        try:
            req = vk.vkGetBufferMemoryRequirements(dev, self.handle)
            self._req_size = req.size
            self._block, self.memory_offset = Allocator.of(ctx).allocate(req, host, preferred)
            call("vkBindBufferMemory", dev, self.handle, self._block.memory, self.memory_offset, what=name)
            if host:
                self.mapped = self._block.mapped[self.memory_offset:self.memory_offset + self.size]
            ctx.set_name(self.handle, vk.VK_OBJECT_TYPE_BUFFER, name)
        except BaseException:
            self._release()
            raise
        self._key = ctx.track(f"{name} ({self.size} B)", self._release)

    @property
    def memory(self):
        return None if self._block is None else self._block.memory

    def view(self, dtype, count: int | None = None) -> np.ndarray:
        """The mapped memory as an array of ``dtype`` (host buffers only)."""
        if self.mapped is None:
            raise GpuError(f"{self.name} is not host-visible")
        dtype = np.dtype(dtype)
        n = self.size // dtype.itemsize if count is None else count
        return self.mapped[: n * dtype.itemsize].view(dtype)

    def _release(self) -> None:
        self.mapped = None
        if self.ctx.has_pending:
            self.ctx.cancel_uploads(self)
        if self.handle is not None:
            vk.vkDestroyBuffer(self.ctx.device, self.handle, None)
            self.handle = None
        if self._block is not None:
            self.ctx.allocator.free(self._block, self.memory_offset, self._req_size)
            self._block = None

    @property
    def alive(self) -> bool:
        return self.handle is not None

    def destroy(self) -> None:
        if self.handle is None and self._block is None:
            return
        self._release()
        self.ctx.untrack(self._key)


class TexelView:
    """A VkBufferView of ``buffer`` as ``count`` texels of ``format`` from byte 0 (a uniform texel buffer, which a
    shader reads with texelFetch; the buffer needs UNIFORM_TEXEL usage). ``destroy()`` before the buffer's."""

    def __init__(self, ctx: Context, buffer: Buffer, count: int, *,
                 format: int = vk.VK_FORMAT_R32G32B32A32_SFLOAT, texel_bytes: int = 16, name: str = "texel view"):
        ctx.check_alive(f"creating {name}")
        most = int(ctx.info.limits.get("maxTexelBufferElements", 65536))
        if count > most:
            raise GpuError(f"{name}: {count} texels is over maxTexelBufferElements ({most})")
        if count * texel_bytes > buffer.size or buffer.handle is None:
            raise GpuError(f"{name}: {count} texels of {texel_bytes} B do not fit {buffer.name} ({buffer.size} B"
                           f"{', destroyed' if buffer.handle is None else ''})")
        self.ctx, self.count = ctx, int(count)
        self.view = call("vkCreateBufferView", ctx.device, vk.VkBufferViewCreateInfo(
            buffer=buffer.handle, format=format, offset=0, range=self.count * texel_bytes), None, what=name)
        ctx.set_name(self.view, vk.VK_OBJECT_TYPE_BUFFER_VIEW, name)
        self._key = ctx.track(f"{name} ({count} texels)", self._release)

    def _release(self) -> None:
        if self.view is not None:
            vk.vkDestroyBufferView(self.ctx.device, self.view, None)
            self.view = None

    def destroy(self) -> None:
        if self.view is None:
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


def host_cached_device_memory(ctx: Context) -> bool:
    """Whether the device has a memory type that is device-local, host-visible and host-cached: CPU devices
    (lavapipe) and most integrated GPUs, where a kernel can write its results straight into memory the host
    reads at full speed (no staging copy). Discrete GPUs have none (their host-visible device memory, if any, is
    uncached for the CPU), so a readback goes through a copy to host memory there."""
    wanted = DEVICE_LOCAL | vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT
    try:
        ctx.find_memory_type(0xFFFFFFFF, wanted)
    except GpuError:
        return False
    return True


def host_buffer(ctx: Context, size: int, usage: int, name: str = "host buffer") -> Buffer:
    return Buffer(ctx, size, usage, host=True, name=name)


def device_local_host_visible(ctx: Context) -> bool:
    """Whether a memory type is device-local and host-visible + coherent (lavapipe's only type; a discrete GPU's
    BAR / resizable-BAR memory): the host can write small per-frame inputs there that a kernel reads at
    device speed, with no transfer in the frame (``write_buffer``)."""
    try:
        ctx.find_memory_type(0xFFFFFFFF, DEVICE_LOCAL | HOST_VISIBLE)
    except GpuError:
        return False
    return True


def write_buffer(ctx: Context, size: int, usage: int, name: str = "host-written buffer") -> Buffer:
    """A persistently mapped buffer the host writes and the device reads: device-local + host-visible memory
    where there is such a type (device_local_host_visible), else any host-visible coherent memory; zeroed.
    Coherent memory needs no flush, and a host write made before vkQueueSubmit is visible to the commands that
    submission runs (the submission's implicit host -> device memory dependency), so no barrier orders it; the
    caller must not rewrite it while submitted work may still read it (per-slot buffers, the host's fence)."""
    buf = Buffer(ctx, size, usage, host=True, name=name, preferred=DEVICE_LOCAL)
    buf.mapped[:] = 0
    return buf


def upload(ctx: Context, dst: Buffer, data: np.ndarray, offset: int = 0) -> None:
    """Copy ``data`` into ``dst`` at ``offset`` through a staging buffer: at once on owned contexts (submits and
    waits), in the host's next command buffer on borrowed ones (see Context.queue_upload)."""
    upload_replicated(ctx, dst, data, 1, offset)


def upload_replicated(ctx: Context, dst: Buffer, data: np.ndarray, count: int, offset: int = 0) -> None:
    """``count`` consecutive copies of ``data`` into ``dst`` from ``offset`` on, through ONE staging copy: the first
    copy comes from staging, the rest by doubling buffer-to-buffer copies (1 -> 2 -> 4 ...), so the host writes
    and the staging memory stay those of one copy whatever ``count`` is."""
    raw = _as_bytes(data)
    n = raw.nbytes
    staging = host_buffer(ctx, n, TRANSFER_SRC, name=f"staging for {dst.name}")
    staging.mapped[:] = raw
    standalone = ctx.owned and not ctx.batching_uploads   # else record_pending adds one barrier after all copies

    def record(cb):
        vk.vkCmdCopyBuffer(cb, staging.handle, dst.handle, 1, [vk.VkBufferCopy(srcOffset=0, dstOffset=offset, size=n)])
        done = 1
        while done < count:
            k = min(done, count - done)
            barriers.record(cb, barriers.REPLICATE_COPIES)
            vk.vkCmdCopyBuffer(cb, dst.handle, dst.handle, 1, [vk.VkBufferCopy(
                srcOffset=offset, dstOffset=offset + done * n, size=k * n)])
            done += k
        if standalone:
            barriers.record(cb, barriers.TRANSFER_TO_ALL)

    ctx.queue_upload(record, dst.name, staging.destroy, target=dst)


def readback(ctx: Context, src: Buffer, dtype=np.uint8, count: int | None = None, offset: int = 0) -> np.ndarray:
    """Copy ``src`` to a host buffer and return a numpy copy (owned contexts: submits and waits)."""
    dtype = np.dtype(dtype)
    nbytes = (src.size - offset) if count is None else count * dtype.itemsize
    nbytes -= nbytes % dtype.itemsize
    staging = host_buffer(ctx, nbytes, TRANSFER_DST, name=f"readback of {src.name}")
    try:
        def record(cb):
            barriers.record(cb, barriers.ALL_TO_TRANSFER_READ)
            vk.vkCmdCopyBuffer(cb, src.handle, staging.handle, 1,
                               [vk.VkBufferCopy(srcOffset=offset, dstOffset=0, size=nbytes)])
            barriers.record(cb, barriers.TRANSFER_TO_HOST)

        ctx.submit_and_wait(record)
        return staging.mapped[:nbytes].view(dtype).copy()
    finally:
        staging.destroy()


def cffi_pointer(array: np.ndarray):
    """A cffi pointer to a contiguous numpy array (for vkCmdUpdateBuffer / vkCmdPushConstants)."""
    return ffi.from_buffer(array)


def aligned_host_bytes(nbytes: int, alignment: int) -> np.ndarray:
    """A uint8 numpy array of ``nbytes`` rounded up to ``alignment``, starting at a multiple of it (a view into
    an over-allocated numpy buffer, which it keeps alive): host memory that ``HostImport`` can import."""
    size = max(alignment, -(-int(nbytes) // alignment) * alignment)
    raw = np.empty(size + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    return raw[start:start + size]


class HostImport:
    """Host memory (a numpy array, ``aligned_host_bytes``) imported as a VkBuffer through
    VK_EXT_external_memory_host (``ctx.host_import_alignment`` > 0): what the device writes there lands in the
    array itself, no staging buffer and no copy. The array must outlive the import: ``destroy()`` (after the last
    work that uses the buffer has completed) frees the VkDeviceMemory and the buffer and drops the reference;
    the array stays the caller's. Host reads after the device's writes need the writes made visible to the host
    (``barriers.COMPUTE_AND_TRANSFER_TO_HOST``) and the fence waited for, as for any host-visible memory."""

    HANDLE = vk.VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT

    def __init__(self, ctx: Context, array: np.ndarray, usage: int, *, name: str = "imported host memory"):
        ctx.check_alive(f"importing {name}")
        align = ctx.host_import_alignment
        if not align:
            raise GpuError(f"{name}: the device has no VK_EXT_external_memory_host enabled")
        ptr, size = array.ctypes.data, array.nbytes
        if ptr % align or size % align or not array.flags.c_contiguous:
            raise GpuError(f"{name}: host memory at {ptr:#x}, {size} B is not a contiguous run aligned to {align} B")
        self.ctx, self.size, self.name, self.array = ctx, size, name, array
        self.handle = self.memory = None
        dev = ctx.device
        try:
            get = vk.vkGetDeviceProcAddr(dev, "vkGetMemoryHostPointerPropertiesEXT")
            host_ptr = ffi.cast("void *", ptr)
            # the driver may refuse the pointer here (VK_ERROR_INVALID_EXTERNAL_HANDLE): a GpuError, as every
            # refusal below, so that a bake falls back to its copy path (vkmorph.bake)
            props = call("vkGetMemoryHostPointerPropertiesEXT", dev, self.HANDLE, host_ptr,
                         vk.VkMemoryHostPointerPropertiesEXT(), what=name, fn=get)
            external = vk.VkExternalMemoryBufferCreateInfo(handleTypes=self.HANDLE)
            info = vk.VkBufferCreateInfo(pNext=external, size=size, usage=usage,
                                         sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE)
            self.handle = call("vkCreateBuffer", dev, info, None, what=name)
            req = vk.vkGetBufferMemoryRequirements(dev, self.handle)
            bits = req.memoryTypeBits & props.memoryTypeBits
            if not bits:
                raise GpuError(f"{name}: no memory type can hold both the buffer and the imported host memory")
            # host-coherent: the host reads the array after the fence with no invalidate (it never maps it)
            index = ctx.find_memory_type(bits, HOST_VISIBLE, vk.VK_MEMORY_PROPERTY_HOST_CACHED_BIT)
            imported = vk.VkImportMemoryHostPointerInfoEXT(handleType=self.HANDLE, pHostPointer=host_ptr)
            alloc = vk.VkMemoryAllocateInfo(pNext=imported, allocationSize=size, memoryTypeIndex=index)
            try:
                self.memory = vk.vkAllocateMemory(dev, alloc, None)
            except vk.VkError as exc:
                raise GpuError(f"{name}: the device refused to import {size} B of host memory "
                               f"(vkAllocateMemory failed: {result_name(exc)})") from None
            call("vkBindBufferMemory", dev, self.handle, self.memory, 0, what=name)
            ctx.set_name(self.handle, vk.VK_OBJECT_TYPE_BUFFER, name)
        except BaseException:
            self._release()
            raise
        self._key = ctx.track(f"{name} ({size} B)", self._release)

    def _release(self) -> None:
        if self.handle is not None:
            vk.vkDestroyBuffer(self.ctx.device, self.handle, None)
            self.handle = None
        if self.memory is not None:
            vk.vkFreeMemory(self.ctx.device, self.memory, None)
            self.memory = None
        self.array = None

    @property
    def alive(self) -> bool:
        return self.handle is not None

    def destroy(self) -> None:
        if self.handle is None and self.memory is None:
            return
        self._release()
        self.ctx.untrack(self._key)
