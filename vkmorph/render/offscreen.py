"""Headless rendering: an offscreen sRGB target (the forward pass resolves its multisampled colour into it)
and readback to numpy / PNG."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..asset.model import SceneAsset
from ..errors import UsageError
from ..gpu import barriers
from ..gpu import memory as M
from ..gpu.context import Context
from ..gpu.image import COLOR_FORMAT, Image
from ..gpu.vk import vk
from .renderer import SceneRenderer


class OffscreenRenderer:
    """A SceneRenderer drawing into its own image (multisampled, resolved into it); ``render()`` returns
    (H, W, 4) uint8 sRGB pixels. ``warnings`` lists bad material data that was rendered without."""

    def __init__(self, ctx: Context, scene: SceneAsset, width: int, height: int, **kw):
        self.ctx, self.width, self.height = ctx, width, height
        self.renderer = self.color = self.targets = self.pixels = None
        try:
            self.renderer = SceneRenderer(ctx, scene, COLOR_FORMAT, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, **kw)
            self.color = Image(ctx, width, height, COLOR_FORMAT,
                               vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                               vk.VK_IMAGE_ASPECT_COLOR_BIT, name="offscreen colour")
            self.targets = self.renderer.create_targets([self.color.view], width, height)
            self.pixels = M.host_buffer(ctx, width * height * 4, M.TRANSFER_DST, name="offscreen readback")
        except BaseException:
            self.destroy()
            raise
        self.last_counters = None

    @property
    def warnings(self) -> list[str]:
        return self.renderer.warnings

    def render(self, slot: int = 0) -> np.ndarray:
        """One frame in frame slot ``slot`` (< the ``frames_in_flight`` passed on; default 1), submitted and
        waited for."""
        r = self.renderer
        if isinstance(slot, bool) or not isinstance(slot, (int, np.integer)) or not 0 <= slot < r.slots:
            raise UsageError(f"slot must be an int in [0, {r.slots}) (frames_in_flight={r.slots}), got {slot!r}")
        r.update(slot, self.width / self.height, self.width, self.height)

        def record(cb):
            self.last_counters = r.record(cb, slot, self.targets.framebuffers[0], self.width, self.height)
            # readback: the forward pass's resolved_color_to_transfer_read dependency orders this copy
            region = vk.VkBufferImageCopy(
                bufferOffset=0, bufferRowLength=0, bufferImageHeight=0,
                imageSubresource=vk.VkImageSubresourceLayers(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=0,
                                                             baseArrayLayer=0, layerCount=1),
                imageOffset=vk.VkOffset3D(0, 0, 0), imageExtent=vk.VkExtent3D(self.width, self.height, 1))
            vk.vkCmdCopyImageToBuffer(cb, self.color.handle, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                                      self.pixels.handle, 1, [region])
            barriers.record(cb, barriers.TRANSFER_TO_HOST)

        self.ctx.submit_and_wait(record)
        return self.pixels.mapped.reshape(self.height, self.width, 4).copy()

    def destroy(self) -> None:
        """Reverse creation order."""
        for obj in (self.pixels, self.targets, self.color, self.renderer):
            if obj is not None:
                obj.destroy()
        self.pixels = self.targets = self.color = self.renderer = None


def parse_size(text: str) -> tuple[int, int]:
    try:
        w, h = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise UsageError(f"--size must look like 640x480, got {text!r}") from None
    if not (1 <= w <= 8192 and 1 <= h <= 8192):
        raise UsageError(f"--size {w}x{h} out of range (1..8192)")
    return w, h


def write_png_atomic(path: str | Path, rgba: np.ndarray) -> None:
    """PNG through vkmorph.outputs.atomic_write (temp file in the same folder, fsync, rename; nothing on error)."""
    from PIL import Image as PILImage

    from ..outputs import atomic_write

    atomic_write(path, lambda f: PILImage.fromarray(rgba, "RGBA").save(f, format="PNG"))
