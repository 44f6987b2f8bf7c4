"""``DeviceInfo``: what a Context reports about its physical device (name, type, versions, timestamps, limits)."""

from __future__ import annotations

from dataclasses import dataclass, field

from .vk import vk


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
