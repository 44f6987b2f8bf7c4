"""Validation: whether it was requested (``VKMORPH_VALIDATION``), the layer's name and settings, and the
debug-utils messenger that turns the layer's messages into ``ValidationMessage`` values on a Context."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from .vk import ffi, vk

VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation"
# Cross-submission hazards (frames in flight) are only checked with this layer switch, which
# VkValidationFeaturesEXT cannot set; it must be in the environment before the instance is created.
_QUEUE_SUBMIT_SYNC = ("VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT:"
                      "VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT")

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


def messenger_create_info(messages: list[ValidationMessage], echo: Callable[[], bool], keepalive: list):
    """A VkDebugUtilsMessengerCreateInfoEXT whose callback appends each warning/error to ``messages`` and, while
    ``echo()`` is true, prints it to stderr. The callback goes into ``keepalive``, which must outlive the
    messenger (the instance's owner keeps it)."""
    def callback(severity, types, data, user_data):
        msg_id = data.pMessageIdName
        msg_id = ffi.string(msg_id).decode(errors="replace") if msg_id != ffi.NULL else "?"
        text = ffi.string(data.pMessage).decode(errors="replace") if data.pMessage != ffi.NULL else ""
        m = ValidationMessage(_SEVERITY_NAMES.get(severity, str(severity)), msg_id, text)
        messages.append(m)
        if echo():
            print(f"vkmorph: validation {m}", file=sys.stderr)
        return 0

    keepalive.append(callback)
    return vk.VkDebugUtilsMessengerCreateInfoEXT(
        messageSeverity=(vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
                         | vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT),
        messageType=(vk.VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT
                     | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT
                     | vk.VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT),
        pfnUserCallback=callback)
