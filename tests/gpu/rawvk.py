"""A host's own Vulkan instance/device, created with python-vulkan directly (no vkmorph code), for embedding tests.

It does what a real host renderer does: its own queue, command buffers and fences, frames submitted without
waiting, its own buffers and a compute pipeline of its own that reads vkmorph's output.
"""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import vulkan as vk


class RawDevice:
    """The host's instance + debug messenger, device, queue, command pool (and pipeline cache): ``destroy()`` or
    ``with RawDevice() as user:``; a failed construction destroys what it had made before raising."""

    def __init__(self, api_version: int = vk.VK_MAKE_VERSION(1, 2, 0), pipeline_cache: bool = False) -> None:
        self.messages: list[str] = []
        self.api_version = api_version

        def cb(severity, types, data, user):
            if severity >= vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT:
                self.messages.append(vk.ffi.string(data.pMessage).decode())
            return 0

        self._cb = cb
        self._messenger_ci = vk.VkDebugUtilsMessengerCreateInfoEXT(
            messageSeverity=vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
            | vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
            messageType=vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
            | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
            pfnUserCallback=cb)
        self._features = vk.VkValidationFeaturesEXT(
            enabledValidationFeatureCount=1,
            pEnabledValidationFeatures=[vk.VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT],
            pNext=self._messenger_ci)
        self.instance = self.messenger = self.device = self.pool = self.pipeline_cache = None
        self._buffers: list[tuple] = []
        self._fences: list = []         # submissions not waited for: destroyed with the device (an NVIDIA fence
        self._copy = None               # holds a /dev/nvidia0 fd; a leaked one shows as a leaked fd)
        try:
            self._create(api_version, pipeline_cache)
        except BaseException:
            self.destroy()          # whatever was made so far: a failed set-up leaks no instance or device
            raise

    def _create(self, api_version: int, pipeline_cache: bool) -> None:
        app = vk.VkApplicationInfo(pApplicationName="user-app", apiVersion=api_version)
        layers = ["VK_LAYER_KHRONOS_validation"]
        exts = ["VK_EXT_debug_utils"]
        ici = vk.VkInstanceCreateInfo(pApplicationInfo=app, enabledLayerCount=1, ppEnabledLayerNames=layers,
                                      enabledExtensionCount=1, ppEnabledExtensionNames=exts, pNext=self._features)
        self.instance = vk.vkCreateInstance(ici, None)
        self.messenger = vk.vkGetInstanceProcAddr(self.instance, "vkCreateDebugUtilsMessengerEXT")(
            self.instance, self._messenger_ci, None)
        self.physical_device = vk.vkEnumeratePhysicalDevices(self.instance)[0]
        want = vk.VK_QUEUE_GRAPHICS_BIT | vk.VK_QUEUE_COMPUTE_BIT
        self.queue_family_index = next(
            i for i, q in enumerate(vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical_device))
            if q.queueFlags & want == want)
        qci = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.queue_family_index, queueCount=1,
                                         pQueuePriorities=[1.0])
        self.enabled_features = vk.VkPhysicalDeviceFeatures()
        dci = vk.VkDeviceCreateInfo(queueCreateInfoCount=1, pQueueCreateInfos=[qci],
                                    pEnabledFeatures=self.enabled_features)
        self.device = vk.vkCreateDevice(self.physical_device, dci, None)
        self.queue = vk.vkGetDeviceQueue(self.device, self.queue_family_index, 0)
        self.pool = vk.vkCreateCommandPool(self.device, vk.VkCommandPoolCreateInfo(
            flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
            queueFamilyIndex=self.queue_family_index), None)
        if pipeline_cache:
            self.pipeline_cache = vk.vkCreatePipelineCache(self.device, vk.VkPipelineCacheCreateInfo(), None)

    # ------------------------------------------------------------------ submission (the host's own)
    def submit(self, record):
        """Allocate a command buffer, record via ``record(cb)``, submit with a fresh fence; does not wait."""
        cb = vk.vkAllocateCommandBuffers(self.device, vk.VkCommandBufferAllocateInfo(
            commandPool=self.pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo())
        result = record(cb)
        vk.vkEndCommandBuffer(cb)
        fence = vk.vkCreateFence(self.device, vk.VkFenceCreateInfo(), None)
        self._fences.append(fence)
        vk.vkQueueSubmit(self.queue, 1, [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[cb])], fence)
        return cb, fence, result

    def wait(self, submission) -> None:
        cb, fence, _ = submission
        vk.vkWaitForFences(self.device, 1, [fence], vk.VK_TRUE, 10**10)
        self._fences.remove(fence)
        vk.vkDestroyFence(self.device, fence, None)
        vk.vkFreeCommandBuffers(self.device, self.pool, 1, [cb])

    def run(self, record):
        """The host's own blocking submit: record, submit, wait; returns what ``record`` returned."""
        sub = self.submit(record)
        self.wait(sub)
        return sub[2]

    # ------------------------------------------------------------------ the host's own resources
    def host_buffer(self, size: int):
        """A host-visible storage/transfer-dst buffer of the host: (VkBuffer, uint8 numpy view)."""
        buf = vk.vkCreateBuffer(self.device, vk.VkBufferCreateInfo(
            size=size, usage=vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT,
            sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        req = vk.vkGetBufferMemoryRequirements(self.device, buf)
        mp = vk.vkGetPhysicalDeviceMemoryProperties(self.physical_device)
        want = vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT
        idx = next(i for i in range(mp.memoryTypeCount)
                   if (req.memoryTypeBits >> i) & 1 and mp.memoryTypes[i].propertyFlags & want == want)
        mem = vk.vkAllocateMemory(self.device, vk.VkMemoryAllocateInfo(allocationSize=req.size,
                                                                       memoryTypeIndex=idx), None)
        vk.vkBindBufferMemory(self.device, buf, mem, 0)
        view = np.frombuffer(vk.vkMapMemory(self.device, mem, 0, size, 0), np.uint8, count=size)
        self._buffers.append((buf, mem))
        return buf, view

    def record_compute_copy(self, cb, src, src_offset: int, nbytes: int, dst) -> None:
        """The host's own compute pass reading ``src`` (e.g. vkmorph's morph output) into ``dst``."""
        if self._copy is None:
            self._copy = _CopyPipeline(self)
        self._copy.record(cb, src, src_offset, nbytes, dst)

    def record_compute_read_barrier(self, cb) -> None:
        """Host-side: its compute write to its own buffers visible to the host after the fence."""
        mb = vk.VkMemoryBarrier(srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT, dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT)
        vk.vkCmdPipelineBarrier(cb, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                                [mb], 0, None, 0, None)

    def wait_idle(self) -> None:
        vk.vkDeviceWaitIdle(self.device)

    def destroy(self) -> None:
        """Destroy what exists, children first, device and instance last; idempotent. Every step runs even when
        an earlier one raised (the first error is re-raised), so the instance and device never outlive it."""
        errors: list[BaseException] = []

        def attempt(fn, *args) -> None:
            try:
                fn(*args)
            except BaseException as exc:  # noqa: BLE001 - re-raised after the remaining steps
                errors.append(exc)

        dev = self.device
        if dev is not None:
            if self._fences:
                attempt(vk.vkDeviceWaitIdle, dev)      # submissions nobody waited for, e.g. a failed test's
            for fence in self._fences:
                attempt(vk.vkDestroyFence, dev, fence, None)
            if self._copy is not None:
                attempt(self._copy.destroy)
            for buf, mem in self._buffers:
                attempt(vk.vkDestroyBuffer, dev, buf, None)
                attempt(vk.vkFreeMemory, dev, mem, None)
            if self.pipeline_cache is not None:
                attempt(vk.vkDestroyPipelineCache, dev, self.pipeline_cache, None)
            if self.pool is not None:
                attempt(vk.vkDestroyCommandPool, dev, self.pool, None)
            attempt(vk.vkDestroyDevice, dev, None)
        if self.instance is not None:
            if self.messenger is not None:
                attempt(lambda: vk.vkGetInstanceProcAddr(self.instance, "vkDestroyDebugUtilsMessengerEXT")(
                    self.instance, self.messenger, None))
            attempt(vk.vkDestroyInstance, self.instance, None)
        self._copy, self._buffers, self._fences = None, [], []
        self.device = self.pool = self.pipeline_cache = self.messenger = self.instance = None
        if errors:
            raise errors[0]

    def __enter__(self) -> RawDevice:
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()


@contextmanager
def borrowed_device(**raw_kwargs):
    """A RawDevice and a vkmorph Context borrowing it (``from_external``): yields ``(user, ctx)``.

    On leaving, like a host at shutdown: wait for its device, report completion to vkmorph, note what vkmorph
    still had alive (``user.leaked``: ``ctx.live_children``), destroy vkmorph's context, then the host's device
    and instance. Whatever raises on the way (the test, the wait, a failing ``ctx.destroy()``), the host's
    device and instance are destroyed: nothing outlives the block.
    """
    from vkmorph.gpu.context import Context

    user = RawDevice(**raw_kwargs)
    try:
        ctx = Context.from_external(user.instance, user.physical_device, user.device, user.queue,
                                    user.queue_family_index, api_version=user.api_version,
                                    enabled_features=user.enabled_features, pipeline_cache=user.pipeline_cache,
                                    debug_utils=True)
    except BaseException:
        user.destroy()
        raise
    user.leaked = []
    try:
        yield user, ctx
    finally:
        try:
            user.wait_idle()                 # the host's own wait, at its shutdown
            if not ctx.destroyed:
                ctx.completed()              # ... which it reports to vkmorph
                user.leaked = ctx.live_children
                ctx.destroy()
        finally:
            if not ctx.destroyed:
                ctx.destroy(host_idle=True)  # the wait above failed: still release vkmorph's objects
            user.destroy()


class _CopyPipeline:
    """The host's compute pipeline: dst[i] = src[i] (uvec4), from the copy.comp SPIR-V file."""

    def __init__(self, host: RawDevice):
        from vkmorph.gpu.shaders import load_spirv  # only to find the .spv file; everything else is raw vk

        self.host = d = host
        dev = d.device
        binds = [vk.VkDescriptorSetLayoutBinding(binding=i, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                 descriptorCount=1, stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT)
                 for i in range(2)]
        self.set_layout = vk.vkCreateDescriptorSetLayout(dev, vk.VkDescriptorSetLayoutCreateInfo(
            bindingCount=2, pBindings=binds), None)
        rng = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=8)]
        self.layout = vk.vkCreatePipelineLayout(dev, vk.VkPipelineLayoutCreateInfo(
            setLayoutCount=1, pSetLayouts=[self.set_layout], pushConstantRangeCount=1, pPushConstantRanges=rng),
            None)
        code = load_spirv("copy.comp")
        module = vk.vkCreateShaderModule(dev, vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code), None)
        stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module, pName="main")
        self.pipeline = vk.vkCreateComputePipelines(dev, vk.VK_NULL_HANDLE, 1, [vk.VkComputePipelineCreateInfo(
            stage=stage, layout=self.layout)], None)[0]
        vk.vkDestroyShaderModule(dev, module, None)
        sizes = [vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=128)]
        self.pool = vk.vkCreateDescriptorPool(dev, vk.VkDescriptorPoolCreateInfo(
            flags=vk.VK_DESCRIPTOR_POOL_CREATE_FREE_DESCRIPTOR_SET_BIT, maxSets=64, poolSizeCount=1,
            pPoolSizes=sizes), None)
        self._keep = []

    def record(self, cb, src, src_offset: int, nbytes: int, dst) -> None:
        dev = self.host.device
        dset = vk.vkAllocateDescriptorSets(dev, vk.VkDescriptorSetAllocateInfo(
            descriptorPool=self.pool, descriptorSetCount=1, pSetLayouts=[self.set_layout]))[0]
        infos = [vk.VkDescriptorBufferInfo(buffer=src, offset=src_offset, range=nbytes),
                 vk.VkDescriptorBufferInfo(buffer=dst, offset=0, range=nbytes)]
        writes = [vk.VkWriteDescriptorSet(dstSet=dset, dstBinding=i, descriptorCount=1,
                                          descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                          pBufferInfo=[infos[i]]) for i in range(2)]
        vk.vkUpdateDescriptorSets(dev, 2, writes, 0, None)
        push = np.array([nbytes // 16, 0], np.uint32)
        self._keep.append(push)
        vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.pipeline)
        vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.layout, 0, 1, [dset], 0, None)
        vk.vkCmdPushConstants(cb, self.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, vk.ffi.from_buffer(push))
        vk.vkCmdDispatch(cb, (nbytes // 16 + 255) // 256, 1, 1)

    def destroy(self) -> None:
        dev = self.host.device
        vk.vkDestroyDescriptorPool(dev, self.pool, None)
        vk.vkDestroyPipeline(dev, self.pipeline, None)
        vk.vkDestroyPipelineLayout(dev, self.layout, None)
        vk.vkDestroyDescriptorSetLayout(dev, self.set_layout, None)
