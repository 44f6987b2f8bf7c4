"""The single place that imports python-vulkan, and the one error path of Vulkan calls.

Importing: cffi raises ``OSError``/``ImportError`` deep inside the binding when ``libvulkan.so.1`` is absent;
users should instead learn which Debian package to install.

Calling: every Vulkan call that returns a VkResult goes through ``call``, which turns python-vulkan's
``VkError`` exceptions into one ``GpuError`` line naming the call, what it was for, and the VkResult:
``vkCreateBuffer (morph deltas) failed: VK_ERROR_OUT_OF_DEVICE_MEMORY``. Calls without a result (vkCmd*,
vkDestroy*, vkUpdateDescriptorSets) are made directly on ``vk``.
"""

from __future__ import annotations

import re

from ..errors import GpuError

try:
    import vulkan as vk  # noqa: F401  (re-exported)
    from vulkan import ffi  # noqa: F401
except (OSError, ImportError) as exc:  # pragma: no cover - depends on the machine
    raise GpuError(
        "Vulkan loader not found (libvulkan.so.1): install it with `apt-get install libvulkan1 "
        f"mesa-vulkan-drivers` (or your GPU driver) [{type(exc).__name__}: {str(exc).splitlines()[0][:80]}]"
    ) from None

WHOLE_SIZE = vk.VK_WHOLE_SIZE & 0xFFFFFFFFFFFFFFFF


def result_name(exc: BaseException) -> str:
    """``VkErrorOutOfDeviceMemory`` -> ``VK_ERROR_OUT_OF_DEVICE_MEMORY`` (python-vulkan names its exceptions so)."""
    name = type(exc).__name__
    if not name.startswith("Vk"):
        return name
    return "VK_" + re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name[2:]).upper()


def call(name: str, *args, what: str = "", fn=None):
    """``vk.<name>(*args)``; a VkError becomes ``GpuError("<name> (<what>) failed: VK_ERROR_...")``.
    ``fn``: the function to call instead of ``vk.<name>`` (extension functions from vkGet*ProcAddr)."""
    try:
        return (fn or getattr(vk, name))(*args)
    except vk.VkError as exc:
        raise GpuError(f"{name}{f' ({what})' if what else ''} failed: {result_name(exc)}") from None

