"""A user's own Vulkan instance/device, created with python-vulkan directly (no vkmorph code), for embedding tests."""

from __future__ import annotations

import vulkan as vk


class RawDevice:
    def __init__(self) -> None:
        self.messages: list[str] = []

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
        app = vk.VkApplicationInfo(pApplicationName="user-app", apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))
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
        dci = vk.VkDeviceCreateInfo(queueCreateInfoCount=1, pQueueCreateInfos=[qci])
        self.device = vk.vkCreateDevice(self.physical_device, dci, None)
        self.queue = vk.vkGetDeviceQueue(self.device, self.queue_family_index, 0)
        self.pool = vk.vkCreateCommandPool(self.device, vk.VkCommandPoolCreateInfo(
            queueFamilyIndex=self.queue_family_index), None)

    def run(self, record) -> None:
        """The user's own submit: allocate, record via ``record(cb)``, submit, wait, free."""
        cb = vk.vkAllocateCommandBuffers(self.device, vk.VkCommandBufferAllocateInfo(
            commandPool=self.pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo())
        record(cb)
        vk.vkEndCommandBuffer(cb)
        fence = vk.vkCreateFence(self.device, vk.VkFenceCreateInfo(), None)
        vk.vkQueueSubmit(self.queue, 1, [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[cb])], fence)
        vk.vkWaitForFences(self.device, 1, [fence], vk.VK_TRUE, 10**10)
        vk.vkDestroyFence(self.device, fence, None)
        vk.vkFreeCommandBuffers(self.device, self.pool, 1, [cb])

    def destroy(self) -> None:
        vk.vkDestroyCommandPool(self.device, self.pool, None)
        vk.vkDestroyDevice(self.device, None)
        vk.vkGetInstanceProcAddr(self.instance, "vkDestroyDebugUtilsMessengerEXT")(
            self.instance, self.messenger, None)
        vk.vkDestroyInstance(self.instance, None)
