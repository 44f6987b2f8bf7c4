"""Shared fixtures. GPU tests get a validated Context (Khronos layer + synchronization validation, also across
queue submissions) and fail on any warning or error the messenger saw."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("VKMORPH_VALIDATION", "1")
os.environ.setdefault(
    "VK_LAYER_ENABLES",
    "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT:"
    "VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT",
)

ROOT = Path(__file__).resolve().parents[1]
ASSETS = Path(os.environ.get("VKMORPH_ASSETS", ROOT / "tests" / "assets"))

_gpu_reason: list[str | None] = []


def vulkan_unavailable_reason() -> str | None:
    """None when a Vulkan ICD exists; else why GPU tests are skipped (the only reason they may skip)."""
    if not _gpu_reason:
        reason = None
        try:
            from vkmorph.gpu.context import Context

            Context.create(validation=False).destroy()
        except Exception as exc:  # noqa: BLE001 - reported as the skip reason
            msg = str(exc)
            reason = msg if ("driver" in msg or "loader" in msg or "physical device" in msg) else None
            if reason is None:
                raise
        _gpu_reason.append(reason)
    return _gpu_reason[0]


@pytest.fixture
def ctx():
    """A fresh validated Context; the test fails if validation reported anything or a child was left alive."""
    reason = vulkan_unavailable_reason()
    if reason:
        pytest.skip(f"no Vulkan ICD: {reason}")
    from vkmorph.gpu.context import Context, validation_requested

    c = Context.create(validation=validation_requested(True))
    yield c
    c.destroy()
    bad = c.errors_and_warnings()
    assert not bad, "validation messages:\n" + "\n".join(str(m) for m in bad)


def asset(*parts: str) -> Path:
    p = ASSETS.joinpath(*parts)
    if not p.exists():
        pytest.skip(f"shared asset {p} not present")
    return p
