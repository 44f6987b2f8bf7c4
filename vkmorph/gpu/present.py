"""Presenting to a window: surface, swapchain (recreated on resize), depth + framebuffers per image, frames in
flight (command buffer, fence, acquire semaphore per slot), timestamps, screenshots. The demo keeps only input
and scene logic; a frame is::

    frame = presenter.begin_frame()            # None: nothing to draw this time (minimized / recreated)
    ... record your passes into frame.cb with frame.framebuffer, frame.width, frame.height ...
    pixels = presenter.end_frame(frame, screenshot=False)   # submit, present; RGBA pixels when asked
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import barriers
from . import graphics as G
from . import memory as M
from .context import Context
from .image import DEPTH_FORMAT, Image
from .swapchain import SurfaceFunctions, Swapchain, choose_format, create_surface
from .timestamps import BOTTOM, TOP, Timestamps
from .vk import call, vk


@dataclass
class Frame:
    slot: int
    cb: object
    image: int
    framebuffer: object
    overlay_framebuffer: object  # for the overlay pass given to attach(), else None
    width: int
    height: int
    gpu_ms: list[float] | None   # the previous use of this slot: [stamp1 - stamp0, stamp2 - stamp0, ...]


class WindowPresenter:
    """Owns everything between a GLFW window and a render pass; ``destroy()`` releases it in reverse order."""

    def __init__(self, ctx: Context, window, *, vsync: bool = True, frames_in_flight: int = 2, timestamps: int = 3):
        self.ctx, self.window, self.vsync, self.n = ctx, window, vsync, frames_in_flight
        self.fns = SurfaceFunctions(ctx)
        self.surface = create_surface(ctx, window)
        self.format, _ = choose_format(self.fns.formats(ctx.physical_device, self.surface))
        self.swapchain = self.render_pass = self.overlay_pass = self.sc_group = self.depth = self.targets = None
        self.create_targets = None
        self.framebuffers, self.render_done = [], []
        self.frame_group = G.ObjectGroup(ctx, "frames in flight")
        self.cbs = [ctx.allocate_command_buffer() for _ in range(frames_in_flight)]
        self.frame_group.add(lambda d, h, a: vk.vkFreeCommandBuffers(d, ctx.command_pool, len(h), h), self.cbs)
        self.fences = [self.frame_group.add(vk.vkDestroyFence, call("vkCreateFence",
            ctx.device, vk.VkFenceCreateInfo(flags=vk.VK_FENCE_CREATE_SIGNALED_BIT), None))
            for _ in range(frames_in_flight)]
        self.acquired = [self.frame_group.add(vk.vkDestroySemaphore, call("vkCreateSemaphore",
            ctx.device, vk.VkSemaphoreCreateInfo(), None)) for _ in range(frames_in_flight)]
        self.timestamps = Timestamps(ctx, timestamps, frames_in_flight)
        self.resized = False
        self.frame_index = 0

    # ------------------------------------------------------------------ swapchain
    def attach(self, render_pass, overlay_pass=None, create_targets=None) -> None:
        """Create the swapchain and one framebuffer per image for ``render_pass`` (colour = the swapchain
        format in PRESENT_SRC layout, then depth), and for ``overlay_pass`` (colour only, e.g. a UI).
        ``create_targets(views, width, height)``, when given, makes the ``render_pass`` attachments instead (an
        object with ``framebuffers`` and ``destroy()``, e.g. SceneRenderer's multisampled colour + depth-stencil
        resolved into the swapchain image)."""
        self.render_pass, self.overlay_pass, self.create_targets = render_pass, overlay_pass, create_targets
        self._recreate()

    def _recreate(self) -> None:
        import glfw

        w, h = glfw.get_framebuffer_size(self.window)
        old = self.swapchain
        if old is not None:
            self.ctx.wait_idle()
        sc = Swapchain(self.ctx, self.fns, self.surface, w, h, vsync=self.vsync, old=old)
        if old is not None:
            self._destroy_swapchain_objects()
            old.destroy()
        self.swapchain = sc
        self.sc_group = G.ObjectGroup(self.ctx, "swapchain framebuffers")
        if self.create_targets is not None:
            self.targets = self.create_targets(sc.views, sc.width, sc.height)
            self.framebuffers = self.targets.framebuffers
        else:
            self.depth = Image(self.ctx, sc.width, sc.height, DEPTH_FORMAT,
                               vk.VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT, vk.VK_IMAGE_ASPECT_DEPTH_BIT,
                               name="window depth")
            self.framebuffers = [G.framebuffer(self.ctx, self.sc_group, self.render_pass, [v, self.depth.view],
                                               sc.width, sc.height) for v in sc.views]
        self.overlay_framebuffers = [G.framebuffer(self.ctx, self.sc_group, self.overlay_pass, [v], sc.width,
                                                   sc.height) if self.overlay_pass is not None else None
                                     for v in sc.views]
        self.render_done = [self.sc_group.add(vk.vkDestroySemaphore, call(
            "vkCreateSemaphore", self.ctx.device, vk.VkSemaphoreCreateInfo(), None)) for _ in sc.images]

    def _destroy_swapchain_objects(self) -> None:
        if self.sc_group is not None:
            self.sc_group.destroy()
            self.sc_group = None
        if self.depth is not None:
            self.depth.destroy()
            self.depth = None
        if self.targets is not None:
            self.targets.destroy()
            self.targets = None

    # ------------------------------------------------------------------ frames
    def begin_frame(self) -> Frame | None:
        """Wait for this slot's previous frame, acquire an image and begin the slot's command buffer (timestamp
        0 written). None when the swapchain had to be recreated: call again next loop."""
        ctx, slot = self.ctx, self.frame_index % self.n
        fence = self.fences[slot]
        self._wait(fence)
        gpu = self.timestamps.read_ms(slot)
        if self.resized:
            self.resized = False
            self._recreate()
        index, optimal = self.swapchain.acquire(self.acquired[slot])
        if index is None:
            self._recreate()
            return None
        self._optimal = optimal
        call("vkResetFences", ctx.device, 1, [fence])
        cb = self.cbs[slot]
        call("vkResetCommandBuffer", cb, 0)
        ctx.begin(cb, vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
        self.timestamps.reset(cb, slot)
        self.timestamps.write(cb, 0, slot, TOP)
        sc = self.swapchain
        return Frame(slot, cb, index, self.framebuffers[index], self.overlay_framebuffers[index], sc.width,
                     sc.height, gpu)

    def end_frame(self, frame: Frame, screenshot: bool = False) -> np.ndarray | None:
        """Last timestamp, end, submit, present. With ``screenshot`` (and a swapchain that allows copies):
        wait and return the presented image as (H, W, 4) RGBA uint8."""
        ctx, sc, cb = self.ctx, self.swapchain, frame.cb
        staging = None
        if screenshot and sc.can_copy:
            staging = M.host_buffer(ctx, sc.width * sc.height * 4, M.TRANSFER_DST, name="screenshot")
            record_swapchain_copy(cb, sc.images[frame.image], staging.handle, sc.width, sc.height)
            barriers.record(cb, barriers.TRANSFER_TO_HOST)
        self.timestamps.write(cb, self.timestamps.count - 1, frame.slot, BOTTOM)
        ctx.end(cb)
        try:
            ctx.submit([cb], fence=self.fences[frame.slot], wait_semaphores=[self.acquired[frame.slot]],
                       wait_stages=[vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT],
                       signal_semaphores=[self.render_done[frame.image]])
            presented = sc.present(frame.image, self.render_done[frame.image])
            pixels = None
            if staging is not None:
                self._wait(self.fences[frame.slot])
                pixels = staging.mapped.reshape(sc.height, sc.width, 4).copy()
                if sc.format == vk.VK_FORMAT_B8G8R8A8_SRGB:
                    pixels = pixels[..., [2, 1, 0, 3]]
                pixels[..., 3] = 255
        finally:
            if staging is not None:
                staging.destroy()
        if not presented or not self._optimal:
            self.resized = True
        self.frame_index += 1
        return pixels

    def _wait(self, fence) -> None:
        """Wait without resetting (the fence is reset only right before the submit that signals it again)."""
        from ..errors import GpuError

        try:
            call("vkWaitForFences", self.ctx.device, 1, [fence], vk.VK_TRUE, 10**10)
        except vk.VkTimeout:
            raise GpuError("a frame did not finish within 10 s") from None

    def destroy(self) -> None:
        """Wait for the device, then release frames, swapchain objects, swapchain and surface (reverse order)."""
        if self.surface is None:
            return
        try:
            self.ctx.wait_idle()
        finally:
            self.timestamps.destroy()
            self.frame_group.destroy()
            self._destroy_swapchain_objects()
            if self.swapchain is not None:
                self.swapchain.destroy()
                self.swapchain = None
            self.fns.destroy_surface(self.ctx.instance, self.surface, None)
            self.surface = None


def record_swapchain_copy(cb, image, buffer, width: int, height: int) -> None:
    """present_to_transfer_src, copy, transfer_src_to_present: the image goes back to presentation unchanged."""
    barriers.record_image(cb, barriers.PRESENT_TO_TRANSFER_SRC, image)
    region = vk.VkBufferImageCopy(
        bufferOffset=0, bufferRowLength=0, bufferImageHeight=0,
        imageSubresource=vk.VkImageSubresourceLayers(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=0,
                                                     baseArrayLayer=0, layerCount=1),
        imageOffset=vk.VkOffset3D(0, 0, 0), imageExtent=vk.VkExtent3D(width, height, 1))
    vk.vkCmdCopyImageToBuffer(cb, image, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, buffer, 1, [region])
    barriers.record_image(cb, barriers.TRANSFER_SRC_TO_PRESENT, image)
