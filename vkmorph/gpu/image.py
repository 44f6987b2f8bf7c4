"""2D images (attachments, shadow maps) with their own memory and view, and samplers."""

from __future__ import annotations

from .context import Context
from .vk import call, vk

DEPTH_FORMAT = vk.VK_FORMAT_D32_SFLOAT
COLOR_FORMAT = vk.VK_FORMAT_R8G8B8A8_SRGB


class Image:
    def __init__(self, ctx: Context, width: int, height: int, fmt: int, usage: int, aspect: int,
                 name: str = "image"):
        self.ctx, self.width, self.height, self.format, self.name = ctx, width, height, fmt, name
        self.handle = self.memory = self.view = None
        dev = ctx.device
        try:
            info = vk.VkImageCreateInfo(
                imageType=vk.VK_IMAGE_TYPE_2D, format=fmt, extent=vk.VkExtent3D(width, height, 1), mipLevels=1,
                arrayLayers=1, samples=vk.VK_SAMPLE_COUNT_1_BIT, tiling=vk.VK_IMAGE_TILING_OPTIMAL, usage=usage,
                sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE, initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED)
            self.handle = call("vkCreateImage", dev, info, None)
            req = vk.vkGetImageMemoryRequirements(dev, self.handle)
            index = ctx.find_memory_type(req.memoryTypeBits, vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
            alloc = vk.VkMemoryAllocateInfo(allocationSize=req.size, memoryTypeIndex=index)
            self.memory = call("vkAllocateMemory", dev, alloc, None, what=f"{name} {width}x{height}")
            call("vkBindImageMemory", dev, self.handle, self.memory, 0)
            rng = vk.VkImageSubresourceRange(aspectMask=aspect, baseMipLevel=0, levelCount=1, baseArrayLayer=0,
                                             layerCount=1)
            self.view = call("vkCreateImageView", dev, vk.VkImageViewCreateInfo(
                image=self.handle, viewType=vk.VK_IMAGE_VIEW_TYPE_2D, format=fmt, subresourceRange=rng), None)
        except BaseException:
            self._release()
            raise
        self._key = ctx.track(f"{name} {width}x{height}", self._release)

    def _release(self) -> None:
        dev = self.ctx.device
        if self.view is not None:
            vk.vkDestroyImageView(dev, self.view, None)
            self.view = None
        if self.handle is not None:
            vk.vkDestroyImage(dev, self.handle, None)
            self.handle = None
        if self.memory is not None:
            vk.vkFreeMemory(dev, self.memory, None)
            self.memory = None

    def destroy(self) -> None:
        if self.handle is None and self.view is None and self.memory is None:
            return
        self._release()
        self.ctx.untrack(self._key)


class Sampler:
    """Linear clamp-to-border sampler; ``compare=True`` gives hardware depth comparison (sampler2DShadow)."""

    def __init__(self, ctx: Context, compare: bool = False):
        self.ctx = ctx
        info = vk.VkSamplerCreateInfo(
            magFilter=vk.VK_FILTER_LINEAR, minFilter=vk.VK_FILTER_LINEAR,
            mipmapMode=vk.VK_SAMPLER_MIPMAP_MODE_NEAREST,
            addressModeU=vk.VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER,
            addressModeV=vk.VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER,
            addressModeW=vk.VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER,
            compareEnable=vk.VK_TRUE if compare else vk.VK_FALSE, compareOp=vk.VK_COMPARE_OP_LESS_OR_EQUAL,
            borderColor=vk.VK_BORDER_COLOR_FLOAT_OPAQUE_WHITE, maxLod=0.0)
        self.handle = call("vkCreateSampler", ctx.device, info, None)
        self._key = ctx.track("sampler", self._release)

    def _release(self) -> None:
        if self.handle is not None:
            vk.vkDestroySampler(self.ctx.device, self.handle, None)
            self.handle = None

    def destroy(self) -> None:
        if self.handle is not None:
            self._release()
            self.ctx.untrack(self._key)
