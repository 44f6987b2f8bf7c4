"""The single place that imports python-vulkan, turning a missing loader into a one-line, actionable error.

cffi raises ``OSError``/``ImportError`` deep inside the binding when ``libvulkan.so.1`` is absent; users should
instead learn which Debian package to install.
"""

from __future__ import annotations

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


def check(result: int, what: str) -> None:
    """Raise GpuError when a raw VkResult is an error code."""
    if result < 0:
        raise GpuError(f"{what} failed with VkResult {result}")
