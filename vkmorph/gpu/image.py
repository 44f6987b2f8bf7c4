"""2D images (attachments, shadow maps, mip-mapped textures) with their own memory and view, and samplers.

Textures are uploaded in one command buffer for a whole scene: a staging copy into mip level 0, then a
vkCmdBlitImage chain down to 1x1. Each level goes TRANSFER_DST -> TRANSFER_SRC (blit_source_ready: the copy or
previous blit wrote it) before it is blitted from, and -> SHADER_READ_ONLY (level_done: the blit read it) before
the fragment shader samples it; the last level goes there straight from TRANSFER_DST.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from . import barriers
from . import memory as M
from .context import Context
from .vk import call, vk

DEPTH_FORMAT = vk.VK_FORMAT_D32_SFLOAT
COLOR_FORMAT = vk.VK_FORMAT_R8G8B8A8_SRGB
TEXTURE_SRGB = vk.VK_FORMAT_R8G8B8A8_SRGB     # colour data (base colour, emissive)
TEXTURE_LINEAR = vk.VK_FORMAT_R8G8B8A8_UNORM  # everything else (normals, metallic-roughness, occlusion)
_DEPTH_STENCIL_CANDIDATES = (vk.VK_FORMAT_D32_SFLOAT_S8_UINT, vk.VK_FORMAT_D24_UNORM_S8_UINT,
                             vk.VK_FORMAT_D16_UNORM_S8_UINT)
_BLIT_FEATURES = (vk.VK_FORMAT_FEATURE_BLIT_SRC_BIT | vk.VK_FORMAT_FEATURE_BLIT_DST_BIT
                  | vk.VK_FORMAT_FEATURE_SAMPLED_IMAGE_FILTER_LINEAR_BIT)


def _optimal_features(ctx: Context, fmt: int) -> int:
    return vk.vkGetPhysicalDeviceFormatProperties(ctx.physical_device, fmt).optimalTilingFeatures


def depth_stencil_format(ctx: Context) -> int:
    """A depth format with stencil (the outline pass masks with stencil); D32 without stencil as a last resort."""
    for fmt in _DEPTH_STENCIL_CANDIDATES:
        if _optimal_features(ctx, fmt) & vk.VK_FORMAT_FEATURE_DEPTH_STENCIL_ATTACHMENT_BIT:
            return fmt
    return DEPTH_FORMAT


def has_stencil(fmt: int) -> bool:
    return fmt in _DEPTH_STENCIL_CANDIDATES


def msaa_samples(ctx: Context, wanted: int = 4) -> int:
    """``wanted`` samples when colour and depth attachments both support it, else 1."""
    lim = vk.vkGetPhysicalDeviceProperties(ctx.physical_device).limits
    ok = lim.framebufferColorSampleCounts & lim.framebufferDepthSampleCounts & lim.framebufferStencilSampleCounts
    return wanted if ok & wanted else 1


class Image:
    def __init__(self, ctx: Context, width: int, height: int, fmt: int, usage: int, aspect: int,
                 name: str = "image", samples: int = 1, mip_levels: int = 1):
        self.ctx, self.width, self.height, self.format, self.name = ctx, width, height, fmt, name
        self.mip_levels, self.samples, self.aspect = mip_levels, samples, aspect
        self.handle = self.memory = self.view = None
        dev = ctx.device
        try:
            info = vk.VkImageCreateInfo(
                imageType=vk.VK_IMAGE_TYPE_2D, format=fmt, extent=vk.VkExtent3D(width, height, 1),
                mipLevels=mip_levels, arrayLayers=1, samples=samples, tiling=vk.VK_IMAGE_TILING_OPTIMAL,
                usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE, initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED)
            self.handle = call("vkCreateImage", dev, info, None)
            req = vk.vkGetImageMemoryRequirements(dev, self.handle)
            index = ctx.find_memory_type(req.memoryTypeBits, vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
            self.memory = call("vkAllocateMemory", dev, vk.VkMemoryAllocateInfo(allocationSize=req.size,
                                                                           memoryTypeIndex=index), None)
            call("vkBindImageMemory", dev, self.handle, self.memory, 0)
            rng = vk.VkImageSubresourceRange(aspectMask=aspect, baseMipLevel=0, levelCount=mip_levels,
                                             baseArrayLayer=0, layerCount=1)
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


def mip_count(width: int, height: int) -> int:
    return int(np.floor(np.log2(max(width, height)))) + 1


def record_mip_upload(cb, image: Image, staging_handle, staging_offset: int) -> int:
    """Copy level 0 from the staging buffer and blit the rest of the chain; returns the barriers recorded."""
    L = vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL
    h = image.handle
    # every level, before the copy and the blits write them
    count = barriers.record_image(cb, barriers.UNDEFINED_TO_TRANSFER_DST, h, levels=image.mip_levels)
    region = vk.VkBufferImageCopy(
        bufferOffset=staging_offset, bufferRowLength=0, bufferImageHeight=0,
        imageSubresource=vk.VkImageSubresourceLayers(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=0,
                                                     baseArrayLayer=0, layerCount=1),
        imageOffset=vk.VkOffset3D(0, 0, 0), imageExtent=vk.VkExtent3D(image.width, image.height, 1))
    vk.vkCmdCopyBufferToImage(cb, staging_handle, h, L[0], 1, [region])
    w, ht = image.width, image.height
    for lv in range(1, image.mip_levels):
        # level lv-1 was written (copy or previous blit); it is now read by this blit
        count += barriers.record_image(cb, barriers.BLIT_SOURCE_READY, h, base_level=lv - 1)
        nw, nh = max(1, w // 2), max(1, ht // 2)
        sub = [vk.VkImageSubresourceLayers(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=m, baseArrayLayer=0,
                                           layerCount=1) for m in (lv - 1, lv)]
        blit = vk.VkImageBlit(srcSubresource=sub[0], srcOffsets=[vk.VkOffset3D(0, 0, 0), vk.VkOffset3D(w, ht, 1)],
                              dstSubresource=sub[1], dstOffsets=[vk.VkOffset3D(0, 0, 0), vk.VkOffset3D(nw, nh, 1)])
        vk.vkCmdBlitImage(cb, h, L[1], h, L[0], 1, [blit], vk.VK_FILTER_LINEAR)
        # the blit has read level lv-1; the fragment shader samples it from now on
        count += barriers.record_image(cb, barriers.BLIT_SOURCE_TO_SAMPLED, h, base_level=lv - 1)
        w, ht = nw, nh
    # the last level, written by the copy or the last blit, sampled by the fragment shader
    return count + barriers.record_image(cb, barriers.UPLOADED_TO_SAMPLED, h, base_level=image.mip_levels - 1)


@dataclass
class TextureData:
    rgba: np.ndarray          # (H, W, 4) uint8
    srgb: bool
    mipmaps: bool = True
    name: str = "texture"


def upload_textures(ctx: Context, textures: Sequence[TextureData]) -> list[Image]:
    """Device images for ``textures`` (sRGB or linear RGBA8, full mip chains where the format can be blitted),
    uploaded through one staging buffer in one command buffer: at once on owned contexts, in the host's next
    command buffer on borrowed ones (Context.queue_upload). The caller owns (destroys) the images."""
    images: list[Image] = []
    offsets, total = [], 0
    for t in textures:
        offsets.append(total)
        total += (t.rgba.nbytes + 15) // 16 * 16
    staging = M.host_buffer(ctx, max(total, 16), M.TRANSFER_SRC, name="texture staging")
    try:
        for t, off in zip(textures, offsets):
            fmt = TEXTURE_SRGB if t.srgb else TEXTURE_LINEAR
            h, w = t.rgba.shape[:2]
            can_blit = _optimal_features(ctx, fmt) & _BLIT_FEATURES == _BLIT_FEATURES
            levels = mip_count(w, h) if t.mipmaps and can_blit else 1
            images.append(Image(ctx, w, h, fmt, vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT
                                | vk.VK_IMAGE_USAGE_TRANSFER_DST_BIT | vk.VK_IMAGE_USAGE_SAMPLED_BIT,
                                vk.VK_IMAGE_ASPECT_COLOR_BIT, name=t.name, mip_levels=levels))
            staging.mapped[off:off + t.rgba.nbytes] = np.ascontiguousarray(t.rgba).reshape(-1)
    except BaseException:
        for img in reversed(images):
            img.destroy()
        staging.destroy()
        raise

    def record(cb):
        for img, off in zip(images, offsets):
            record_mip_upload(cb, img, staging.handle, off)

    try:
        ctx.queue_upload(record, "textures", staging.destroy)
    except BaseException:
        for img in reversed(images):
            img.destroy()
        raise
    return images


_ADDRESS = {"repeat": vk.VK_SAMPLER_ADDRESS_MODE_REPEAT, "clamp": vk.VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_EDGE,
            "mirror": vk.VK_SAMPLER_ADDRESS_MODE_MIRRORED_REPEAT}


class Sampler:
    """A sampler. Default: linear clamp-to-border, one level; ``compare=True`` gives hardware depth comparison
    (sampler2DShadow). ``settings`` (an asset SamplerSettings) gives a file's texture sampler: its filters and
    wrap modes, the whole mip chain, anisotropic filtering when the context enabled it."""

    def __init__(self, ctx: Context, compare: bool = False, settings=None):
        self.ctx = ctx
        if settings is None:
            info = vk.VkSamplerCreateInfo(
                magFilter=vk.VK_FILTER_LINEAR, minFilter=vk.VK_FILTER_LINEAR,
                mipmapMode=vk.VK_SAMPLER_MIPMAP_MODE_NEAREST,
                addressModeU=vk.VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER,
                addressModeV=vk.VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER,
                addressModeW=vk.VK_SAMPLER_ADDRESS_MODE_CLAMP_TO_BORDER,
                compareEnable=vk.VK_TRUE if compare else vk.VK_FALSE, compareOp=vk.VK_COMPARE_OP_LESS_OR_EQUAL,
                borderColor=vk.VK_BORDER_COLOR_FLOAT_OPAQUE_WHITE, maxLod=0.0)
        else:
            s = settings
            aniso = ctx.max_anisotropy if s.mipmaps and s.min_linear else 0.0
            lin = {True: vk.VK_FILTER_LINEAR, False: vk.VK_FILTER_NEAREST}
            info = vk.VkSamplerCreateInfo(
                magFilter=lin[s.mag_linear], minFilter=lin[s.min_linear],
                mipmapMode=vk.VK_SAMPLER_MIPMAP_MODE_LINEAR if s.mip_linear else vk.VK_SAMPLER_MIPMAP_MODE_NEAREST,
                addressModeU=_ADDRESS[s.wrap_s], addressModeV=_ADDRESS[s.wrap_t],
                addressModeW=vk.VK_SAMPLER_ADDRESS_MODE_REPEAT,
                anisotropyEnable=vk.VK_TRUE if aniso > 1.0 else vk.VK_FALSE, maxAnisotropy=max(aniso, 1.0),
                minLod=0.0, maxLod=vk.VK_LOD_CLAMP_NONE if s.mipmaps else 0.0,
                borderColor=vk.VK_BORDER_COLOR_FLOAT_OPAQUE_WHITE)
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
