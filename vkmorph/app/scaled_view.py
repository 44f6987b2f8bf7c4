"""The demo's render scale (``--scale``): the 3D view is rendered at a fraction of the window's size and blitted
(linear filter) into the swapchain image; the panel is then drawn over it at the window's full resolution.

On a CPU device (lavapipe) the frame is bound by the rasterizer's per-pixel work, so fewer pixels are the one
lever that keeps the demo interactive (figures: ``bench/2026-12-01-lavapipe-startup.md``).

Per frame (``blit``), after the renderer's passes into this object's framebuffer for the swapchain image:
``SWAPCHAIN_TO_BLIT_DST`` (chained behind the acquire semaphore), ``vkCmdBlitImage`` (the forward pass left the
scaled image in TRANSFER_SRC_OPTIMAL behind its ``resolved_color_to_transfer_read`` dependency), then
``BLIT_DST_TO_PRESENT`` (the overlay pass loads the image). The next frame's writes into the scaled image wait
for the blit's read through the forward pass's ``previous_frame_to_attachment_writes`` (transfer stage included).
"""

from __future__ import annotations

from ..gpu import barriers
from ..gpu.image import Image
from ..gpu.vk import vk


def blit_filter(ctx, fmt: int) -> int | None:
    """LINEAR where the format can be a filtered blit source, else NEAREST; None when it cannot be blitted."""
    props = vk.vkGetPhysicalDeviceFormatProperties(ctx.physical_device, fmt)
    feats = props.optimalTilingFeatures
    if not (feats & vk.VK_FORMAT_FEATURE_BLIT_SRC_BIT and feats & vk.VK_FORMAT_FEATURE_BLIT_DST_BIT):
        return None
    return (vk.VK_FILTER_LINEAR if feats & vk.VK_FORMAT_FEATURE_SAMPLED_IMAGE_FILTER_LINEAR_BIT
            else vk.VK_FILTER_NEAREST)


def scaled_size(width: int, height: int, scale: float) -> tuple[int, int]:
    return max(16, round(width * scale)), max(16, round(height * scale))


class ScaledTargets:
    """``WindowPresenter.attach(create_targets=...)``'s object for a render scale: one scaled colour image per
    swapchain image (so a frame in flight never shares one with the next), the renderer's framebuffers for them
    (``framebuffers[image index]``), and the blit into the swapchain image."""

    def __init__(self, renderer, views, width: int, height: int, scale: float, filter_: int):
        self.window_size = (width, height)
        self.width, self.height = scaled_size(width, height, scale)
        self.filter = filter_
        self.images, self.targets = [], None
        try:
            for i in range(len(views)):
                self.images.append(Image(renderer.ctx, self.width, self.height, renderer.color_format,
                                         vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                                         vk.VK_IMAGE_ASPECT_COLOR_BIT, name=f"scaled 3D view {i}"))
            self.targets = renderer.create_targets([im.view for im in self.images], self.width, self.height)
        except BaseException:
            self.destroy()
            raise
        self.framebuffers = self.targets.framebuffers

    def blit(self, cb, index: int, swapchain_image) -> None:
        w, h = self.window_size
        sub = vk.VkImageSubresourceLayers(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=0, baseArrayLayer=0,
                                          layerCount=1)
        region = vk.VkImageBlit(srcSubresource=sub, srcOffsets=[vk.VkOffset3D(0, 0, 0),
                                                                vk.VkOffset3D(self.width, self.height, 1)],
                                dstSubresource=sub, dstOffsets=[vk.VkOffset3D(0, 0, 0), vk.VkOffset3D(w, h, 1)])
        barriers.record_image(cb, barriers.SWAPCHAIN_TO_BLIT_DST, swapchain_image)
        vk.vkCmdBlitImage(cb, self.images[index].handle, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, swapchain_image,
                          vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, 1, [region], self.filter)
        barriers.record_image(cb, barriers.BLIT_DST_TO_PRESENT, swapchain_image)

    def destroy(self) -> None:
        if self.targets is not None:
            self.targets.destroy()
            self.targets = None
        for im in reversed(self.images):
            im.destroy()
        self.images = []
