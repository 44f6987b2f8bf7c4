"""Window surface and swapchain (VK_KHR_surface / VK_KHR_swapchain through proc addresses).

Recreated on resize (the caller passes the old one for a smooth hand-over); an sRGB BGRA/RGBA format is
preferred so the forward pass writes linear colour and the hardware encodes it.
"""

from __future__ import annotations

from ..errors import GpuError
from .context import Context
from .vk import call, ffi, vk

_UINT32_MAX = 0xFFFFFFFF


class SurfaceFunctions:
    """Instance- and device-level WSI entry points, looked up once."""

    def __init__(self, ctx: Context):
        gi = vk.vkGetInstanceProcAddr
        gd = vk.vkGetDeviceProcAddr
        self.support = gi(ctx.instance, "vkGetPhysicalDeviceSurfaceSupportKHR")
        self.caps = gi(ctx.instance, "vkGetPhysicalDeviceSurfaceCapabilitiesKHR")
        self.formats = gi(ctx.instance, "vkGetPhysicalDeviceSurfaceFormatsKHR")
        self.modes = gi(ctx.instance, "vkGetPhysicalDeviceSurfacePresentModesKHR")
        self.destroy_surface = gi(ctx.instance, "vkDestroySurfaceKHR")
        self.create = gd(ctx.device, "vkCreateSwapchainKHR")
        self.destroy = gd(ctx.device, "vkDestroySwapchainKHR")
        self.images = gd(ctx.device, "vkGetSwapchainImagesKHR")
        self.acquire = gd(ctx.device, "vkAcquireNextImageKHR")
        self.present = gd(ctx.device, "vkQueuePresentKHR")


def choose_format(formats) -> tuple[int, int]:
    preferred = (vk.VK_FORMAT_B8G8R8A8_SRGB, vk.VK_FORMAT_R8G8B8A8_SRGB)
    for f in formats:
        if f.format in preferred and f.colorSpace == vk.VK_COLOR_SPACE_SRGB_NONLINEAR_KHR:
            return f.format, f.colorSpace
    raise GpuError(f"the surface offers no sRGB format (got {[f.format for f in formats]})")


class Swapchain:
    def __init__(self, ctx: Context, fns: SurfaceFunctions, surface, width: int, height: int, vsync: bool = True,
                 old: Swapchain | None = None):
        self.ctx, self.fns, self.surface = ctx, fns, surface
        pd = ctx.physical_device
        if not fns.support(pd, ctx.queue_family_index, surface):
            raise GpuError("the graphics queue cannot present to this window surface")
        caps = fns.caps(pd, surface)
        self.format, color_space = choose_format(fns.formats(pd, surface))
        modes = list(fns.modes(pd, surface))
        self.present_mode = vk.VK_PRESENT_MODE_FIFO_KHR
        if not vsync:
            for m in (vk.VK_PRESENT_MODE_MAILBOX_KHR, vk.VK_PRESENT_MODE_IMMEDIATE_KHR):
                if m in modes:
                    self.present_mode = m
                    break
        if caps.currentExtent.width != _UINT32_MAX:
            width, height = caps.currentExtent.width, caps.currentExtent.height
        else:
            width = min(max(width, caps.minImageExtent.width), caps.maxImageExtent.width)
            height = min(max(height, caps.minImageExtent.height), caps.maxImageExtent.height)
        self.width, self.height = width, height
        count = caps.minImageCount + 1
        if caps.maxImageCount:
            count = min(count, caps.maxImageCount)
        usage = vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT
        self.can_copy = bool(caps.supportedUsageFlags & vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT)
        if self.can_copy:
            usage |= vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT
        # a blit destination: the demo's render scale upscales its 3D view into the image (app/scaled_view.py)
        self.can_blit_to = bool(caps.supportedUsageFlags & vk.VK_IMAGE_USAGE_TRANSFER_DST_BIT)
        if self.can_blit_to:
            usage |= vk.VK_IMAGE_USAGE_TRANSFER_DST_BIT
        info = vk.VkSwapchainCreateInfoKHR(
            surface=surface, minImageCount=count, imageFormat=self.format, imageColorSpace=color_space,
            imageExtent=vk.VkExtent2D(width, height), imageArrayLayers=1, imageUsage=usage,
            imageSharingMode=vk.VK_SHARING_MODE_EXCLUSIVE, preTransform=caps.currentTransform,
            compositeAlpha=vk.VK_COMPOSITE_ALPHA_OPAQUE_BIT_KHR, presentMode=self.present_mode,
            clipped=vk.VK_TRUE, oldSwapchain=old.handle if old is not None else vk.VK_NULL_HANDLE)
        self.handle = fns.create(ctx.device, info, None)
        self.images = list(fns.images(ctx.device, self.handle))
        self.views = []
        rng = vk.VkImageSubresourceRange(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, baseMipLevel=0, levelCount=1,
                                         baseArrayLayer=0, layerCount=1)
        for img in self.images:
            self.views.append(call("vkCreateImageView", ctx.device, vk.VkImageViewCreateInfo(
                image=img, viewType=vk.VK_IMAGE_VIEW_TYPE_2D, format=self.format, subresourceRange=rng), None))
        self._key = ctx.track("swapchain", self._release)

    def acquire(self, semaphore) -> tuple[int | None, bool]:
        """(image index, still optimal). Index None: out of date, recreate before rendering. A suboptimal
        image is still acquired (its semaphore will signal), so it is rendered and presented, then recreated."""
        index = ffi.new("uint32_t*")
        try:
            self.fns.acquire(self.ctx.device, self.handle, 10**10, semaphore, vk.VK_NULL_HANDLE, index)
        except vk.VkErrorOutOfDateKhr:
            return None, False
        except vk.VkSuboptimalKhr:
            return int(index[0]), False
        return int(index[0]), True

    def present(self, index: int, wait_semaphore) -> bool:
        """Queue the image; False when the swapchain should be recreated (out of date or suboptimal)."""
        info = vk.VkPresentInfoKHR(waitSemaphoreCount=1, pWaitSemaphores=[wait_semaphore], swapchainCount=1,
                                   pSwapchains=[self.handle], pImageIndices=[index])
        try:
            self.fns.present(self.ctx.queue, info)
        except (vk.VkErrorOutOfDateKhr, vk.VkSuboptimalKhr):
            return False
        return True

    def _release(self) -> None:
        for v in self.views:
            vk.vkDestroyImageView(self.ctx.device, v, None)
        self.views = []
        if self.handle is not None:
            self.fns.destroy(self.ctx.device, self.handle, None)
            self.handle = None

    def destroy(self) -> None:
        if self.handle is not None:
            self._release()
            self.ctx.untrack(self._key)


def create_surface(ctx: Context, window):
    """A VkSurfaceKHR for a GLFW window (glfw converts the cffi instance handle itself)."""
    import glfw

    surface = ffi.new("VkSurfaceKHR*")
    result = glfw.create_window_surface(ctx.instance, window, None, surface)
    if result != vk.VK_SUCCESS:
        raise GpuError(f"glfwCreateWindowSurface failed with VkResult {result}")
    return surface[0]
