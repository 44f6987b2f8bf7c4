"""Vulkan context: instance (+ validation), physical device, device, one graphics+compute queue, command pool.

Two ways in, modelled on Kompute's optional ownership:

* ``Context.create(...)`` creates and owns everything and destroys it in ``destroy()``.
* ``Context.from_external(instance, physical_device, device, queue, queue_family_index)`` wraps a user's handles,
  owns none of them, and only ever destroys the objects vkmorph itself created (command pool, buffers, ...).

Every child object vkmorph creates registers itself with the context; ``destroy()`` releases whatever is still
alive in reverse creation order, so nothing leaks even when a caller forgets a ``destroy()``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from ..errors import GpuError
from .vk import ffi, vk

VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"
# Cross-submission hazards (frames in flight) are only checked with this layer switch, which
# VkValidationFeaturesEXT cannot set; it must be in the environment before the instance is created.
_QUEUE_SUBMIT_SYNC = ("VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT:"
                      "VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT")

_DEVICE_TYPE_RANK = {
    vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: 0,
    vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: 1,
    vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: 2,
    vk.VK_PHYSICAL_DEVICE_TYPE_CPU: 3,
    vk.VK_PHYSICAL_DEVICE_TYPE_OTHER: 4,
}
_SEVERITY_NAMES = {
    vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_VERBOSE_BIT_EXT: "verbose",
    vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_INFO_BIT_EXT: "info",
    vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT: "warning",
    vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT: "error",
}


def validation_requested(default: bool = False) -> bool:
    """``VKMORPH_VALIDATION=1|0`` overrides ``default`` (tests default to on, everything else to off)."""
    value = os.environ.get("VKMORPH_VALIDATION")
    if value is None or value == "":
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


@dataclass
class ValidationMessage:
    severity: str
    message_id: str
    text: str

    def __str__(self) -> str:
        return f"[{self.severity}] {self.message_id}: {self.text}"


@dataclass
class _Tracked:
    name: str
    destroy: Callable[[], None]


@dataclass
class DeviceInfo:
    name: str
    device_type: str
    api_version: str
    driver_version: int
    timestamp_period_ns: float
    timestamp_valid: bool
    limits: dict = field(default_factory=dict)


def _version_str(v: int) -> str:
    return f"{vk.VK_VERSION_MAJOR(v)}.{vk.VK_VERSION_MINOR(v)}.{vk.VK_VERSION_PATCH(v)}"


class Context:
    """Owns (or borrows) the Vulkan objects every other vkmorph GPU object is created from."""

    def __init__(self) -> None:  # use create() / from_external()
        self.instance = None
        self.physical_device = None
        self.device = None
        self.queue = None
        self.queue_family_index = -1
        self.command_pool = None
        self.validation = False
        self.messages: list[ValidationMessage] = []
        self.info: DeviceInfo | None = None
        self._owns_instance = False
        self._owns_device = False
        self._messenger = None
        self._callback_keepalive: list = []
        self._children: dict[int, _Tracked] = {}
        self._next_child = 0
        self._destroyed = False
        self._memory_properties = None
        self._fence = None
        self._echo = False
        self._extra_instance_extensions: list[str] = []
        self._extra_device_extensions: list[str] = []
        self.max_anisotropy = 0.0   # > 0 when samplerAnisotropy was enabled on a device vkmorph created

    # ------------------------------------------------------------------ construction
    @classmethod
    def create(cls, *, validation: bool | None = None, device_name: str | None = None,
               app_name: str = "vkmorph", echo_messages: bool = False,
               instance_extensions: Sequence[str] = (), device_extensions: Sequence[str] = ()) -> Context:
        """Create instance, device and queue; owned by the returned Context.

        ``validation=None`` reads ``VKMORPH_VALIDATION`` (default off); ``device_name=None`` reads
        ``VKMORPH_DEVICE`` (a substring of the device name, e.g. ``llvmpipe`` or ``H200``).
        """
        self = cls()
        self.validation = validation_requested(False) if validation is None else validation
        self._extra_instance_extensions = list(instance_extensions)
        self._extra_device_extensions = list(device_extensions)
        try:
            self._create_instance(app_name)
            # Loader chatter during a failed vkCreateInstance is replaced by one GpuError line; once the
            # instance exists, earlier and later messages are echoed as they come (CLI use).
            self._echo = echo_messages
            if echo_messages:
                for m in self.messages:
                    print(f"vkmorph: validation {m}", file=sys.stderr)
            self._owns_instance = True
            self.physical_device = self._pick_physical_device(
                device_name if device_name is not None else os.environ.get("VKMORPH_DEVICE"))
            self.queue_family_index = self._pick_queue_family(self.physical_device)
            self._create_device()
            self._owns_device = True
            self._finish_init()
        except BaseException:
            self.destroy()
            raise
        return self

    @classmethod
    def from_external(cls, instance, physical_device, device, queue, queue_family_index: int) -> Context:
        """Wrap a user's handles. vkmorph never destroys them; only what it creates is released in destroy()."""
        self = cls()
        self.instance, self.physical_device, self.device, self.queue = instance, physical_device, device, queue
        self.queue_family_index = int(queue_family_index)
        try:
            self._finish_init()
        except BaseException:
            self.destroy()
            raise
        return self

    def _finish_init(self) -> None:
        props = vk.vkGetPhysicalDeviceProperties(self.physical_device)
        qprops = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical_device)[self.queue_family_index]
        lim = props.limits
        self.info = DeviceInfo(
            name=ffi.string(props.deviceName).decode() if not isinstance(props.deviceName, str) else props.deviceName,
            device_type={0: "other", 1: "integrated", 2: "discrete", 3: "virtual", 4: "cpu"}.get(props.deviceType, "?"),
            api_version=_version_str(props.apiVersion),
            driver_version=props.driverVersion,
            timestamp_period_ns=float(lim.timestampPeriod),
            timestamp_valid=qprops.timestampValidBits > 0,
            limits={"maxStorageBufferRange": lim.maxStorageBufferRange,
                    "maxComputeWorkGroupCount": tuple(lim.maxComputeWorkGroupCount),
                    "maxPushConstantsSize": lim.maxPushConstantsSize,
                    "minStorageBufferOffsetAlignment": lim.minStorageBufferOffsetAlignment},
        )
        self._memory_properties = vk.vkGetPhysicalDeviceMemoryProperties(self.physical_device)
        self.command_pool = vk.vkCreateCommandPool(self.device, vk.VkCommandPoolCreateInfo(
            flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
            queueFamilyIndex=self.queue_family_index), None)
        self._fence = vk.vkCreateFence(self.device, vk.VkFenceCreateInfo(), None)

    def _create_instance(self, app_name: str) -> None:
        try:
            layers = {ffi.string(p.layerName).decode() if not isinstance(p.layerName, str) else p.layerName
                      for p in vk.vkEnumerateInstanceLayerProperties()}
            exts = {e.extensionName for e in vk.vkEnumerateInstanceExtensionProperties(None)}
        except vk.VkError as exc:
            raise GpuError(f"cannot query Vulkan instance ({type(exc).__name__}): is a driver installed? "
                           "`apt-get install mesa-vulkan-drivers`") from None
        enabled_layers: list[str] = []
        enabled_exts: list[str] = []
        if self.validation:
            if VALIDATION_LAYER not in layers:
                raise GpuError(f"validation requested but {VALIDATION_LAYER} is not installed: "
                               "`apt-get install vulkan-validationlayers` (or set VKMORPH_VALIDATION=0)")
            enabled_layers.append(VALIDATION_LAYER)
            os.environ.setdefault("VK_LAYER_ENABLES", _QUEUE_SUBMIT_SYNC)
        if "VK_EXT_debug_utils" in exts:
            enabled_exts.append("VK_EXT_debug_utils")
        for ext in self._extra_instance_extensions:
            if ext not in exts:
                raise GpuError(f"instance extension {ext} is not available")
            if ext not in enabled_exts:
                enabled_exts.append(ext)
        app_info = vk.VkApplicationInfo(pApplicationName=app_name, applicationVersion=1, pEngineName="vkmorph",
                                        engineVersion=1, apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))
        messenger_ci = None
        if "VK_EXT_debug_utils" in enabled_exts:
            messenger_ci = self._messenger_create_info()
        p_next = messenger_ci
        features = None
        if self.validation:
            features = vk.VkValidationFeaturesEXT(
                enabledValidationFeatureCount=1,
                pEnabledValidationFeatures=[vk.VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT],
                pNext=messenger_ci)
            p_next = features
        create_info = vk.VkInstanceCreateInfo(
            pApplicationInfo=app_info, enabledLayerCount=len(enabled_layers), ppEnabledLayerNames=enabled_layers,
            enabledExtensionCount=len(enabled_exts), ppEnabledExtensionNames=enabled_exts,
            pNext=p_next if p_next is not None else ffi.NULL)
        self._callback_keepalive.extend([app_info, messenger_ci, features, create_info])
        try:
            self.instance = vk.vkCreateInstance(create_info, None)
        except vk.VkErrorIncompatibleDriver:
            raise GpuError("no Vulkan driver (ICD) found: `apt-get install mesa-vulkan-drivers` for lavapipe, "
                           "or install your GPU's Vulkan driver") from None
        except vk.VkErrorLayerNotPresent:
            raise GpuError(f"{VALIDATION_LAYER} failed to load: `apt-get install vulkan-validationlayers`") from None
        if messenger_ci is not None:
            create = vk.vkGetInstanceProcAddr(self.instance, "vkCreateDebugUtilsMessengerEXT")
            self._messenger = create(self.instance, messenger_ci, None)

    def _messenger_create_info(self):
        def callback(severity, types, data, user_data):
            msg_id = data.pMessageIdName
            msg_id = ffi.string(msg_id).decode(errors="replace") if msg_id != ffi.NULL else "?"
            text = ffi.string(data.pMessage).decode(errors="replace") if data.pMessage != ffi.NULL else ""
            m = ValidationMessage(_SEVERITY_NAMES.get(severity, str(severity)), msg_id, text)
            self.messages.append(m)
            if self._echo:
                print(f"vkmorph: validation {m}", file=sys.stderr)
            return 0

        self._callback_keepalive.append(callback)
        return vk.VkDebugUtilsMessengerCreateInfoEXT(
            messageSeverity=(vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
                             | vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT),
            messageType=(vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
                         | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
                         | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT),
            pfnUserCallback=callback)

    def _pick_physical_device(self, name_filter: str | None):
        devices = vk.vkEnumeratePhysicalDevices(self.instance)
        if not devices:
            raise GpuError("no Vulkan physical device: `apt-get install mesa-vulkan-drivers` (lavapipe) "
                           "or a GPU driver")
        candidates = []
        for d in devices:
            p = vk.vkGetPhysicalDeviceProperties(d)
            name = p.deviceName if isinstance(p.deviceName, str) else ffi.string(p.deviceName).decode()
            if name_filter and name_filter.lower() not in name.lower():
                continue
            try:
                self._pick_queue_family(d)
            except GpuError:
                continue
            candidates.append((_DEVICE_TYPE_RANK.get(p.deviceType, 9), name, d))
        if not candidates:
            names = [vk.vkGetPhysicalDeviceProperties(d).deviceName for d in devices]
            raise GpuError(f"no usable Vulkan device matches VKMORPH_DEVICE={name_filter!r}; devices: {names}")
        candidates.sort(key=lambda c: c[0])
        return candidates[0][2]

    @staticmethod
    def _pick_queue_family(physical_device) -> int:
        want = vk.VK_QUEUE_GRAPHICS_BIT | vk.VK_QUEUE_COMPUTE_BIT
        for i, q in enumerate(vk.vkGetPhysicalDeviceQueueFamilyProperties(physical_device)):
            if q.queueFlags & want == want:
                return i
        raise GpuError("the device has no queue family with both graphics and compute")

    def _create_device(self) -> None:
        queue_ci = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.queue_family_index, queueCount=1,
                                              pQueuePriorities=[1.0])
        available = {e.extensionName for e in vk.vkEnumerateDeviceExtensionProperties(self.physical_device, None)}
        missing = [e for e in self._extra_device_extensions if e not in available]
        if missing:
            raise GpuError(f"the device lacks extensions {missing}")
        exts = list(self._extra_device_extensions)
        offered = vk.vkGetPhysicalDeviceFeatures(self.physical_device)
        # anisotropic texture filtering where the device offers it (samplers read ctx.max_anisotropy)
        features = vk.VkPhysicalDeviceFeatures(samplerAnisotropy=offered.samplerAnisotropy)
        if offered.samplerAnisotropy:
            limits = vk.vkGetPhysicalDeviceProperties(self.physical_device).limits
            self.max_anisotropy = float(min(16.0, limits.maxSamplerAnisotropy))
        device_ci = vk.VkDeviceCreateInfo(queueCreateInfoCount=1, pQueueCreateInfos=[queue_ci],
                                          enabledExtensionCount=len(exts), ppEnabledExtensionNames=exts,
                                          pEnabledFeatures=features)
        self.device = vk.vkCreateDevice(self.physical_device, device_ci, None)
        self.queue = vk.vkGetDeviceQueue(self.device, self.queue_family_index, 0)

    # ------------------------------------------------------------------ children & memory
    def track(self, name: str, destroy: Callable[[], None]) -> int:
        """Register a child object's destroy function; returns a key for ``untrack``."""
        if self._destroyed:
            raise GpuError(f"cannot create {name}: the context is destroyed")
        key = self._next_child
        self._next_child += 1
        self._children[key] = _Tracked(name, destroy)
        return key

    def untrack(self, key: int) -> None:
        self._children.pop(key, None)

    @property
    def live_children(self) -> list[str]:
        return [t.name for t in self._children.values()]

    def find_memory_type(self, type_bits: int, required: int, preferred: int = 0) -> int:
        """Index of a memory type allowed by ``type_bits`` with the ``required`` property flags.

        Types that also have ``preferred`` flags win. Raises GpuError naming the flags when none fits.
        """
        mp = self._memory_properties
        best = -1
        for i in range(mp.memoryTypeCount):
            flags = mp.memoryTypes[i].propertyFlags
            if not (type_bits >> i) & 1 or flags & required != required:
                continue
            if flags & preferred == preferred:
                return i
            if best < 0:
                best = i
        if best < 0:
            raise GpuError(f"no memory type with property flags 0x{required:x} in type bits 0x{type_bits:x}")
        return best

    # ------------------------------------------------------------------ commands
    def allocate_command_buffer(self):
        return vk.vkAllocateCommandBuffers(self.device, vk.VkCommandBufferAllocateInfo(
            commandPool=self.command_pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]

    def free_command_buffer(self, cb) -> None:
        vk.vkFreeCommandBuffers(self.device, self.command_pool, 1, [cb])

    def submit_and_wait(self, record: Callable[[object], None], timeout_s: float = 60.0) -> None:
        """One-shot: record into a fresh command buffer, submit, wait on a fence, free it."""
        cb = self.allocate_command_buffer()
        try:
            vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo(
                flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
            record(cb)
            vk.vkEndCommandBuffer(cb)
            self.submit([cb], fence=self._fence)
            self.wait_fence(self._fence, timeout_s)
        finally:
            self.free_command_buffer(cb)

    def submit(self, command_buffers: list, fence=None, wait_semaphores=(), wait_stages=(),
               signal_semaphores=()) -> None:
        info = vk.VkSubmitInfo(
            waitSemaphoreCount=len(wait_semaphores), pWaitSemaphores=list(wait_semaphores) or None,
            pWaitDstStageMask=list(wait_stages) or None,
            commandBufferCount=len(command_buffers), pCommandBuffers=command_buffers,
            signalSemaphoreCount=len(signal_semaphores), pSignalSemaphores=list(signal_semaphores) or None)
        vk.vkQueueSubmit(self.queue, 1, [info], fence if fence is not None else vk.VK_NULL_HANDLE)

    def wait_fence(self, fence, timeout_s: float = 60.0) -> None:
        try:
            vk.vkWaitForFences(self.device, 1, [fence], vk.VK_TRUE, int(timeout_s * 1e9))
        except vk.VkTimeout:
            raise GpuError(f"GPU work did not finish within {timeout_s} s") from None
        vk.vkResetFences(self.device, 1, [fence])

    def wait_idle(self) -> None:
        if self.device is not None:
            vk.vkDeviceWaitIdle(self.device)

    # ------------------------------------------------------------------ validation
    def errors_and_warnings(self) -> list[ValidationMessage]:
        return [m for m in self.messages if m.severity in ("warning", "error")]

    def clear_messages(self) -> None:
        self.messages.clear()

    # ------------------------------------------------------------------ teardown
    def destroy(self) -> None:
        """Release everything vkmorph created (idempotent); borrowed handles are left to their owner."""
        if self._destroyed:
            return
        self._destroyed = True
        if self.device is not None:
            try:
                vk.vkDeviceWaitIdle(self.device)
            except vk.VkError:
                pass
            for key in sorted(self._children, reverse=True):
                self._children.pop(key).destroy()
            if self._fence is not None:
                vk.vkDestroyFence(self.device, self._fence, None)
            if self.command_pool is not None:
                vk.vkDestroyCommandPool(self.device, self.command_pool, None)
            if self._owns_device:
                vk.vkDestroyDevice(self.device, None)
        if self._owns_instance and self.instance is not None:
            if self._messenger is not None:
                destroy = vk.vkGetInstanceProcAddr(self.instance, "vkDestroyDebugUtilsMessengerEXT")
                destroy(self.instance, self._messenger, None)
            vk.vkDestroyInstance(self.instance, None)
        self._fence = self.command_pool = None
        if self._owns_device:
            self.device = self.queue = None
        if self._owns_instance:
            self.instance = None

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()
