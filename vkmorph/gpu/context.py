"""Vulkan context: instance (+ validation), physical device, device, one graphics+compute queue, command pool.

Two ways in, modelled on Kompute's optional ownership:

* ``Context.create(...)`` creates and owns everything and destroys it in ``destroy()``. Only an owned context
  offers the blocking conveniences (``submit_and_wait``, ``wait_idle``, uploads that submit at once).
* ``Context.from_external(instance, physical_device, device, queue, queue_family_index)`` wraps a host's handles,
  owns none of them, checks that they meet vkmorph's requirements, and never submits to the host's queue or
  waits on its device: uploads are queued and recorded into the host's command buffer (``record_pending``),
  and objects are released when the host reports that the work that used them completed (``completed``).

Ownership (one model): every Vulkan object vkmorph creates registers itself with its Context (``track``) and
unregisters when destroyed; composite objects destroy their parts in reverse creation order; ``destroy()``
releases whatever is still alive in reverse creation order. ``live_children`` is the leak detector the test
fixtures check after every GPU test. Work is identified by *serials*: each recording into a host command buffer
gets the next serial; ``completed(serial)`` (the host saying that work finished) releases staging buffers and
objects whose destruction was deferred until then (``retire``).
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..errors import GpuError, UsageError
from . import driver_pin
from .device_info import DeviceInfo, _version_str
from .ownership import Owner
from .uploads import UploadQueue
from .validation import (
    _QUEUE_SUBMIT_SYNC,
    VALIDATION_LAYER,
    ValidationMessage,
    messenger_create_info,
    validation_requested,
)
from .vk import call, ffi, vk

# names other modules import from here (their homes are ownership.py, validation.py, device_info.py)
__all__ = ["API_VERSION", "HOST_MEMORY_EXTENSION", "OUTPUT_ALIGNMENT", "REQUIRED_FEATURES", "Context", "DeviceInfo",
           "Owner", "ValidationMessage", "validation_requested"]

API_VERSION = (1, 2)            # the SPIR-V is compiled for the Vulkan 1.2 environment
REQUIRED_FEATURES: tuple[str, ...] = ()   # VkPhysicalDeviceFeatures fields the kernels need (none today)
OUTPUT_ALIGNMENT = 256          # morph outputs sit at 256-byte offsets bound as storage buffers
# enabled wherever the device offers it (Context.create) or the host says it enabled it (from_external's
# device_extensions): a bake's result array, numpy memory, imported as the buffer its kernel writes
# (memory.HostImport: no staging, no copy); ``Context.host_import_alignment`` is 0 where it is not enabled
HOST_MEMORY_EXTENSION = "VK_EXT_external_memory_host"

_DEVICE_TYPE_RANK = {
    vk.VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: 0,
    vk.VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: 1,
    vk.VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: 2,
    vk.VK_PHYSICAL_DEVICE_TYPE_CPU: 3,
    vk.VK_PHYSICAL_DEVICE_TYPE_OTHER: 4,
}


# command buffers vkmorph allocated (owned contexts): address -> (context, "initial" | "recording" | "executable"),
# so record() can refuse one of another Context and one that is not recording. Such command buffers are begun
# and ended with Context.begin/end (a raw vkBeginCommandBuffer is invisible to vkmorph). Host command buffers
# are not known: the host guarantees they are recording.
_COMMAND_BUFFERS: dict[int, tuple[Context, str]] = {}


def _cb_key(cb) -> int:
    return int(ffi.cast("uintptr_t", cb))


@dataclass
class _Tracked:
    name: str
    destroy: Callable[[], None]


@dataclass
class _Retiring:
    serial: int
    name: str
    destroy: Callable[[], None]


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
        # minImportedHostPointerAlignment where VK_EXT_external_memory_host is enabled on the device (host memory
        # can be imported: memory.HostImport), else 0
        self.host_import_alignment = 0
        self._host_import_enabled = False
        # shaderInt64 and scalarBlockLayout both enabled on the device (Context.create enables them where offered;
        # a borrowed device: False): the bake's 64-bit stores (glsl/bake_wide.comp, GpuBaker.wide_stores)
        self.wide_stores = False
        self.pipeline_cache = None       # the host's VkPipelineCache (or None)
        self.allocator = None            # memory.Allocator, made with the first buffer
        self._set_name_fn = None         # vkSetDebugUtilsObjectNameEXT when debug utils are enabled
        self._serial = 0                 # last serial handed out
        self._completed = 0              # every serial <= this one has finished on the GPU
        self._retiring: list[_Retiring] = []
        self._uploads = UploadQueue()    # uploads waiting for a command buffer (uploads.py)
        self._finalizers: list[Callable[[], None]] = []      # run after all children (memory blocks)

    @property
    def owned(self) -> bool:
        """True when vkmorph created the device (Context.create): blocking conveniences are allowed."""
        return self._owns_device

    @property
    def destroyed(self) -> bool:
        return self._destroyed

    def check_alive(self, what: str = "this call") -> None:
        if self._destroyed:
            raise UsageError(f"{what}: the vkmorph Context was destroyed; create a new Context")

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
            self.physical_device = self._pick_physical_device(
                device_name if device_name is not None else os.environ.get("VKMORPH_DEVICE"))
            self.queue_family_index = self._pick_queue_family(self.physical_device)
            self._create_device()
            self._finish_init()
            if self._messenger is not None:
                self._set_name_fn = vk.vkGetInstanceProcAddr(self.instance, "vkSetDebugUtilsObjectNameEXT")
        except BaseException:
            try:
                self.destroy()
            except BaseException:  # noqa: BLE001 - the first failure is the one to report
                pass
            raise
        return self

    @classmethod
    def from_external(cls, instance, physical_device, device, queue, queue_family_index: int, *,
                      api_version: int | None = None, enabled_features=None, graphics: bool = False,
                      pipeline_cache=None, debug_utils: bool = False,
                      device_extensions: Sequence[str] = ()) -> Context:
        """Wrap a host's handles. vkmorph never destroys them, never submits to ``queue`` and never waits on
        ``device``; only what it creates is released, in destroy().

        Checked, each failure one UsageError saying what the host must change: ``api_version`` (the
        VkApplicationInfo.apiVersion the host created its instance with; the device's is checked too) is at
        least 1.2; ``queue_family_index`` exists and supports compute (and graphics when ``graphics=True``, i.e.
        vkmorph's SceneRenderer will draw); ``enabled_features`` (the VkPhysicalDeviceFeatures the host enabled;
        when None the device's supported features are checked) has every feature in REQUIRED_FEATURES; the
        device's minStorageBufferOffsetAlignment divides 256. ``pipeline_cache``: the host's VkPipelineCache,
        used for every pipeline vkmorph creates. ``debug_utils=True`` when the host enabled VK_EXT_debug_utils:
        vkmorph then names its objects ("vkmorph: morph deltas"). ``device_extensions``: the device extensions
        the host enabled; vkmorph uses VK_EXT_external_memory_host when it is among them (a bake then writes its
        result array directly, ``vkmorph.bake``), and does without it otherwise.
        """
        self = cls()
        self.instance, self.physical_device, self.device, self.queue = instance, physical_device, device, queue
        if device is None or queue is None or physical_device is None or instance is None:
            raise UsageError("Context.from_external: instance, physical_device, device and queue are required")
        try:
            self.queue_family_index = int(queue_family_index)
        except (TypeError, ValueError):
            raise UsageError(f"Context.from_external: queue_family_index must be an int, "
                             f"got {queue_family_index!r}") from None
        self._check_external(api_version, enabled_features, graphics)
        self.pipeline_cache = pipeline_cache
        if isinstance(device_extensions, (str, bytes)) or not all(isinstance(e, str) for e in device_extensions):
            raise UsageError("Context.from_external: device_extensions must be a list of extension names (str), "
                             f"got {device_extensions!r}")
        self._host_import_enabled = HOST_MEMORY_EXTENSION in set(device_extensions)
        try:
            self._finish_init()
            if debug_utils:
                self._set_name_fn = vk.vkGetInstanceProcAddr(self.instance, "vkSetDebugUtilsObjectNameEXT")
        except BaseException:
            try:
                self.destroy()
            except BaseException:  # noqa: BLE001 - the first failure is the one to report
                pass
            raise
        return self

    def _check_external(self, api_version: int | None, enabled_features, graphics: bool) -> None:
        need = vk.VK_MAKE_VERSION(*API_VERSION, 0)
        props = vk.vkGetPhysicalDeviceProperties(self.physical_device)
        for what, v in (("the instance (VkApplicationInfo.apiVersion)", api_version),
                        ("the physical device", props.apiVersion)):
            if v is not None and vk.VK_MAKE_VERSION(vk.VK_VERSION_MAJOR(v), vk.VK_VERSION_MINOR(v), 0) < need:
                raise UsageError(f"vkmorph needs Vulkan {API_VERSION[0]}.{API_VERSION[1]}; {what} uses "
                                 f"{_version_str(v)}: create it with apiVersion >= VK_API_VERSION_1_2")
        families = vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical_device)
        qfi = self.queue_family_index
        if not 0 <= qfi < len(families):
            raise UsageError(f"queue family {qfi} does not exist (the device has {len(families)})")
        flags = families[qfi].queueFlags
        if not flags & vk.VK_QUEUE_COMPUTE_BIT:
            raise UsageError(f"queue family {qfi} does not support compute: vkmorph records compute dispatches; "
                             "pass a queue from a family with VK_QUEUE_COMPUTE_BIT")
        if graphics and not flags & vk.VK_QUEUE_GRAPHICS_BIT:
            raise UsageError(f"queue family {qfi} does not support graphics, which the renderer needs: pass a "
                             "queue from a family with VK_QUEUE_GRAPHICS_BIT")
        feats = enabled_features if enabled_features is not None else \
            vk.vkGetPhysicalDeviceFeatures(self.physical_device)
        missing = [f for f in REQUIRED_FEATURES if not getattr(feats, f)]
        if missing:
            raise UsageError(f"the device must be created with VkPhysicalDeviceFeatures {', '.join(missing)} "
                             "enabled (vkmorph's kernels use them)")
        align = props.limits.minStorageBufferOffsetAlignment
        if OUTPUT_ALIGNMENT % align:
            raise UsageError(f"minStorageBufferOffsetAlignment {align} does not divide {OUTPUT_ALIGNMENT}: "
                             "vkmorph cannot bind its output ranges on this device")

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
                    "minStorageBufferOffsetAlignment": lim.minStorageBufferOffsetAlignment,
                    "maxUniformBufferRange": lim.maxUniformBufferRange,
                    "minUniformBufferOffsetAlignment": lim.minUniformBufferOffsetAlignment,
                    "maxTexelBufferElements": lim.maxTexelBufferElements,
                    "maxComputeWorkGroupSize": tuple(lim.maxComputeWorkGroupSize),
                    "maxComputeWorkGroupInvocations": lim.maxComputeWorkGroupInvocations,
                    "maxPerStageDescriptorStorageBuffers": lim.maxPerStageDescriptorStorageBuffers,
                    "maxPerStageDescriptorUniformBuffers": lim.maxPerStageDescriptorUniformBuffers,
                    "maxDescriptorSetStorageBuffersDynamic": lim.maxDescriptorSetStorageBuffersDynamic,
                    "maxDescriptorSetUniformBuffersDynamic": lim.maxDescriptorSetUniformBuffersDynamic},
        )
        # Vulkan 1.1 properties through vkGetPhysicalDeviceProperties2: the largest allocation, and (where the
        # extension is enabled) the alignment of imported host pointers and sizes
        host = vk.VkPhysicalDeviceExternalMemoryHostPropertiesEXT()
        m3 = vk.VkPhysicalDeviceMaintenance3Properties(pNext=host if self._host_import_enabled else ffi.NULL)
        props2 = vk.VkPhysicalDeviceProperties2(pNext=m3)
        vk.vkGetPhysicalDeviceProperties2(self.physical_device, props2)
        self.info.limits["maxMemoryAllocationSize"] = int(m3.maxMemoryAllocationSize)
        if self._host_import_enabled:
            self.host_import_alignment = int(host.minImportedHostPointerAlignment)
        self._memory_properties = vk.vkGetPhysicalDeviceMemoryProperties(self.physical_device)
        if self._owns_device:  # only owned contexts submit work of their own
            self.command_pool = call("vkCreateCommandPool", self.device, vk.VkCommandPoolCreateInfo(
                flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                queueFamilyIndex=self.queue_family_index), None)
            self._fence = call("vkCreateFence", self.device, vk.VkFenceCreateInfo(), None)

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
            messenger_ci = messenger_create_info(self.messages, lambda: self._echo, self._callback_keepalive)
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
            self._owns_instance = True     # from here on destroy() destroys it, whatever fails next
            driver_pin.pin_driver()   # keep the driver loaded: see driver_pin.py (NVIDIA's ~30-load wall)
        except vk.VkErrorIncompatibleDriver:
            raise GpuError("no Vulkan driver (ICD) found: `apt-get install mesa-vulkan-drivers` for lavapipe, "
                           "or install your GPU's Vulkan driver") from None
        except vk.VkErrorLayerNotPresent:
            raise GpuError(f"{VALIDATION_LAYER} failed to load: `apt-get install vulkan-validationlayers`") from None
        if messenger_ci is not None:
            create = vk.vkGetInstanceProcAddr(self.instance, "vkCreateDebugUtilsMessengerEXT")
            self._messenger = create(self.instance, messenger_ci, None)

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
        if HOST_MEMORY_EXTENSION in available and HOST_MEMORY_EXTENSION not in exts:
            exts.append(HOST_MEMORY_EXTENSION)
        self._host_import_enabled = HOST_MEMORY_EXTENSION in exts
        offered = vk.vkGetPhysicalDeviceFeatures(self.physical_device)
        # anisotropic texture filtering where the device offers it (samplers read ctx.max_anisotropy)
        # shaderInt64 and scalarBlockLayout where offered: the bake's 64-bit stores on CPU devices (bake_wide.comp;
        # llvmpipe offers both). A feature enabled and unused costs nothing.
        offered12 = vk.VkPhysicalDeviceVulkan12Features()
        vk.vkGetPhysicalDeviceFeatures2(self.physical_device, vk.VkPhysicalDeviceFeatures2(pNext=offered12))
        self.wide_stores = bool(offered.shaderInt64 and offered12.scalarBlockLayout)
        enabled12 = vk.VkPhysicalDeviceVulkan12Features(scalarBlockLayout=vk.VK_TRUE if self.wide_stores
                                                        else vk.VK_FALSE)
        features = vk.VkPhysicalDeviceFeatures(samplerAnisotropy=offered.samplerAnisotropy,
                                               shaderInt64=vk.VK_TRUE if self.wide_stores else vk.VK_FALSE)
        if offered.samplerAnisotropy:
            limits = vk.vkGetPhysicalDeviceProperties(self.physical_device).limits
            self.max_anisotropy = float(min(16.0, limits.maxSamplerAnisotropy))
        device_ci = vk.VkDeviceCreateInfo(pNext=enabled12, queueCreateInfoCount=1, pQueueCreateInfos=[queue_ci],
                                          enabledExtensionCount=len(exts), ppEnabledExtensionNames=exts,
                                          pEnabledFeatures=features)
        self.device = call("vkCreateDevice", self.physical_device, device_ci, None)
        self._owns_device = True       # from here on destroy() destroys it, whatever fails next
        driver_pin.pin_driver()        # what the driver loaded for the device too (driver_pin.py)
        self.queue = vk.vkGetDeviceQueue(self.device, self.queue_family_index, 0)

    # ------------------------------------------------------------------ children & memory
    def set_name(self, handle, object_type: int, name: str) -> None:
        """Name a Vulkan object "vkmorph: <name>" for validation messages and captures (when debug utils are on)."""
        if self._set_name_fn is None or handle is None:
            return
        label = f"vkmorph: {name}".encode()
        info = vk.VkDebugUtilsObjectNameInfoEXT(objectType=object_type,
                                                objectHandle=int(ffi.cast("uint64_t", handle)),
                                                pObjectName=label)
        self._set_name_fn(self.device, info)

    def track(self, name: str, destroy: Callable[[], None]) -> int:
        """Register a child object's destroy function; returns a key for ``untrack``."""
        if self._destroyed:
            raise UsageError(f"cannot create {name}: the vkmorph Context was destroyed")
        key = self._next_child
        self._next_child += 1
        self._children[key] = _Tracked(name, destroy)
        return key

    def untrack(self, key: int) -> None:
        self._children.pop(key, None)

    @property
    def live_children(self) -> list[str]:
        """Objects created and not yet destroyed (excluding those waiting for a completion): the leak list."""
        return [t.name for t in self._children.values()]

    @property
    def retiring(self) -> list[str]:
        """Objects destroyed by their owner but kept until the host reports that their last use completed."""
        return [r.name for r in self._retiring]

    def add_finalizer(self, fn: Callable[[], None]) -> None:
        """Run ``fn`` in destroy() after every child is gone (e.g. freeing the memory blocks buffers live in)."""
        self._finalizers.append(fn)

    # ------------------------------------------------------------------ serials and completion
    @property
    def last_serial(self) -> int:
        """The serial of the latest work vkmorph recorded (0: none yet)."""
        return self._serial

    @property
    def completed_serial(self) -> int:
        return self._completed

    def next_serial(self) -> int:
        """A new serial for work about to be recorded into a command buffer."""
        self._serial += 1
        return self._serial

    def completed(self, serial: int | None = None) -> None:
        """The host reports that all vkmorph work up to ``serial`` (default: all recorded so far) finished on the
        GPU (its fence signalled, or it waited for the queue/device). Releases what was waiting for it."""
        self.check_alive("completed()")
        s = self._serial if serial is None else int(serial)
        if s > self._serial:
            raise UsageError(f"completed({s}): vkmorph has recorded work only up to serial {self._serial}")
        self._completed = max(self._completed, s)
        due = [r for r in self._retiring if r.serial <= self._completed]
        self._retiring = [r for r in self._retiring if r.serial > self._completed]
        for r in reversed(due):
            r.destroy()

    def retire(self, name: str, destroy: Callable[[], None], serial: int | None = None) -> None:
        """Destroy now if work up to ``serial`` (default: the latest) is known complete, else when the host
        reports it (``completed``), or in destroy()."""
        s = self._serial if serial is None else serial
        if s <= self._completed or self._destroyed:
            destroy()
        else:
            self._retiring.append(_Retiring(s, name, destroy))

    # ------------------------------------------------------------------ uploads
    def queue_upload(self, record: Callable[[object], None], name: str, release: Callable[[], None],
                     target: object = None) -> None:
        """An upload (copy from a staging buffer vkmorph made): owned contexts submit it at once and wait;
        borrowed ones keep it until the host's next command buffer (``record_pending``) and call ``release``
        when the host reports that buffer completed."""
        if self._owns_device and not self._uploads.batching:
            try:
                self.submit_and_wait(record)
            finally:
                release()
            return
        self._uploads.add(record, name, release, target)

    @contextlib.contextmanager
    def batched_uploads(self):
        """Owned contexts: the uploads queued inside are recorded into one command buffer, behind one barrier,
        and submitted once at the end (a build's hundred buffers cost one submit-and-wait, not one each; their
        staging buffers live until then). Borrowed contexts defer every upload to the host's command buffer
        anyway: nothing changes. Nested use is one batch; a submit_and_wait inside records the queue first."""
        if not self._owns_device or self._uploads.batching:
            yield
            return
        self._uploads.batching = True
        try:
            yield
        finally:
            self._uploads.batching = False
            if self._uploads and not self._destroyed:
                self.submit_and_wait(lambda cb: None)

    @property
    def batching_uploads(self) -> bool:
        """True inside ``batched_uploads`` on an owned context (uploads are then recorded later, together)."""
        return self._uploads.batching

    def cancel_uploads(self, target: object) -> None:
        """Drop queued uploads into ``target`` (destroyed before the host recorded them), freeing their staging."""
        self._uploads.cancel(target)

    @property
    def has_pending(self) -> bool:
        return bool(self._uploads)

    def record_pending(self, cb) -> int:
        """Record the queued uploads into the host's ``cb`` (followed by one transfer -> everything barrier);
        returns how many. Their staging buffers are released when the host reports the serial complete."""
        if not self._uploads:
            return 0
        from . import barriers  # barriers imports only vk; local import keeps context.py free of cycles

        pending = self._uploads.take()
        serial = self.next_serial()
        for record, *_ in pending:
            record(cb)
        barriers.record(cb, barriers.TRANSFER_TO_ALL)
        for _, name, release, _ in pending:
            self.retire(f"staging for {name}", release, serial)
        return len(pending)

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

    # ------------------------------------------------------------------ commands (owned contexts only)
    def _require_owned(self, what: str) -> None:
        self.check_alive(what)
        if not self._owns_device:
            raise UsageError(f"{what} submits or waits, which vkmorph never does on a borrowed device: record "
                             "into your own command buffer instead (see docs/embedding.md)")

    def allocate_command_buffer(self):
        self._require_owned("allocate_command_buffer")
        cb = call("vkAllocateCommandBuffers", self.device, vk.VkCommandBufferAllocateInfo(
            commandPool=self.command_pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        _COMMAND_BUFFERS[_cb_key(cb)] = (self, "initial")  # begin/end it with ctx.begin/ctx.end
        return cb

    def free_command_buffer(self, cb) -> None:
        _COMMAND_BUFFERS.pop(_cb_key(cb), None)
        vk.vkFreeCommandBuffers(self.device, self.command_pool, 1, [cb])

    def begin(self, cb, flags: int = 0) -> None:
        """vkBeginCommandBuffer on a command buffer of this context (tracked, so misuse is caught)."""
        call("vkBeginCommandBuffer", cb, vk.VkCommandBufferBeginInfo(flags=flags))
        _COMMAND_BUFFERS[_cb_key(cb)] = (self, "recording")

    def end(self, cb) -> None:
        """vkEndCommandBuffer, tracked (vkResetCommandBuffer then ctx.begin to reuse it)."""
        call("vkEndCommandBuffer", cb)
        _COMMAND_BUFFERS[_cb_key(cb)] = (self, "executable")

    def check_command_buffer(self, cb, what: str) -> None:
        """UsageError unless ``cb`` can take this context's commands: a VkCommandBuffer handle, not one vkmorph
        allocated for another Context, and recording when vkmorph knows its state. A host's own command buffers
        cannot be inspected: record() requires them recording, outside a render pass, from a compute-capable
        pool of this device's queue family (docs/embedding.md)."""
        self.check_alive(what)
        if cb is None:
            raise UsageError(f"{what}: pass the VkCommandBuffer you are recording (after vkBeginCommandBuffer), "
                             "not None")
        cname = ffi.typeof(cb).cname if isinstance(cb, ffi.CData) else type(cb).__name__
        if "VkCommandBuffer" not in cname:
            raise UsageError(f"{what}: expected a VkCommandBuffer handle, got {cname}")
        known = _COMMAND_BUFFERS.get(_cb_key(cb))
        if known is None:
            return
        owner, state = known
        if owner is not self:
            raise UsageError(f"{what}: this command buffer belongs to another vkmorph Context (device "
                             f"{owner.info.name if owner.info else '?'}); record into one of this context's device")
        if state != "recording":
            raise UsageError(f"{what}: the command buffer is not recording ({state}): begin it with "
                             "ctx.begin(cb) (command buffers from ctx.allocate_command_buffer are begun and ended "
                             "with ctx.begin / ctx.end)")

    def submit_and_wait(self, record: Callable[[object], None], timeout_s: float = 60.0) -> None:
        """Blocking convenience of owned contexts: record into a fresh command buffer (after any queued
        uploads), submit, wait on a fence, free it. Marks all vkmorph work recorded so far as complete."""
        self._require_owned("submit_and_wait")
        cb = self.allocate_command_buffer()
        try:
            self.begin(cb, vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT)
            if self._uploads:          # uploads batched so far (batched_uploads) come first
                self.record_pending(cb)
            record(cb)
            self.end(cb)
            last = self._serial
            self.submit([cb], fence=self._fence)
            self.wait_fence(self._fence, timeout_s)
            self.completed(last)  # the fence covers everything submitted earlier to this queue
        finally:
            self.free_command_buffer(cb)

    def submit(self, command_buffers: list, fence=None, wait_semaphores=(), wait_stages=(),
               signal_semaphores=()) -> None:
        self._require_owned("submit")
        info = vk.VkSubmitInfo(
            waitSemaphoreCount=len(wait_semaphores), pWaitSemaphores=list(wait_semaphores) or None,
            pWaitDstStageMask=list(wait_stages) or None,
            commandBufferCount=len(command_buffers), pCommandBuffers=command_buffers,
            signalSemaphoreCount=len(signal_semaphores), pSignalSemaphores=list(signal_semaphores) or None)
        call("vkQueueSubmit", self.queue, 1, [info], fence if fence is not None else vk.VK_NULL_HANDLE)

    def wait_fence(self, fence, timeout_s: float = 60.0) -> None:
        self._require_owned("wait_fence")
        try:
            vk.vkWaitForFences(self.device, 1, [fence], vk.VK_TRUE, int(timeout_s * 1e9))
        except vk.VkTimeout:
            raise GpuError(f"GPU work did not finish within {timeout_s} s") from None
        vk.vkResetFences(self.device, 1, [fence])

    def wait_idle(self) -> None:
        """Owned contexts: wait for the device, then everything vkmorph recorded is complete."""
        self._require_owned("wait_idle")
        call("vkDeviceWaitIdle", self.device)
        self.completed()

    # ------------------------------------------------------------------ validation
    def errors_and_warnings(self) -> list[ValidationMessage]:
        return [m for m in self.messages if m.severity in ("warning", "error")]

    def clear_messages(self) -> None:
        self.messages.clear()

    # ------------------------------------------------------------------ teardown
    def destroy(self, *, host_idle: bool = False) -> None:
        """Release everything vkmorph created (idempotent); borrowed handles are left to their owner.

        Owned contexts wait for their device first. A borrowed context never waits: the host must have
        reported completion of all vkmorph work (``completed()``) or pass ``host_idle=True`` (it waited for
        its queue or device itself); otherwise UsageError, and nothing is destroyed.
        """
        if self._destroyed:
            return
        if self.device is not None and not self._owns_device and not host_idle and self._completed < self._serial:
            raise UsageError(f"Context.destroy(): vkmorph work up to serial {self._serial} may still run on your "
                             f"queue (completed: {self._completed}); wait for your fences, then call "
                             "ctx.completed() or ctx.destroy(host_idle=True)")
        self._destroyed = True
        # Every step runs even when an earlier one raised (a child's destroy, a driver error): the device and
        # the instance must go whatever happened before, or the process leaks them (a real driver runs out of
        # instances/devices; every later vkCreateInstance then fails). The first error is re-raised at the end.
        errors: list[BaseException] = []

        def attempt(fn: Callable[[], object]) -> None:
            try:
                fn()
            except BaseException as exc:  # noqa: BLE001 - re-raised after the remaining steps
                errors.append(exc)

        if self.device is not None:
            device = self.device
            if self._owns_device:
                try:
                    vk.vkDeviceWaitIdle(device)
                except vk.VkError:
                    pass            # e.g. a lost device: it is destroyed all the same
            self._uploads.clear()
            retiring, self._retiring = self._retiring, []
            for r in reversed(retiring):
                attempt(r.destroy)
            for key in sorted(self._children, reverse=True):
                attempt(self._children.pop(key).destroy)
            for fn in reversed(self._finalizers):
                attempt(fn)
            self._finalizers.clear()
            if self._fence is not None:
                fence = self._fence
                attempt(lambda: vk.vkDestroyFence(device, fence, None))
            if self.command_pool is not None:
                for k in [k for k, (c, _) in _COMMAND_BUFFERS.items() if c is self]:
                    del _COMMAND_BUFFERS[k]
                pool = self.command_pool
                attempt(lambda: vk.vkDestroyCommandPool(device, pool, None))
            if self._owns_device:
                attempt(lambda: vk.vkDestroyDevice(device, None))
        if self._owns_instance and self.instance is not None:
            instance, messenger = self.instance, self._messenger
            if messenger is not None:
                attempt(lambda: vk.vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT")(
                    instance, messenger, None))
            attempt(lambda: vk.vkDestroyInstance(instance, None))
        self._fence = self.command_pool = self._messenger = None
        if self._owns_device:
            self.device = self.queue = None
        if self._owns_instance:
            self.instance = None
        if errors:
            raise errors[0]

    def __enter__(self) -> Context:
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()
