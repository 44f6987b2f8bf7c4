"""Shared fixtures. GPU tests get a validated Context (Khronos layer + synchronization validation, also across
queue submissions) and fail on any warning or error the messenger saw."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("VKMORPH_VALIDATION", "1")
os.environ.setdefault(
    "VK_LAYER_ENABLES",
    "VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT:"
    "VALIDATION_CHECK_ENABLE_SYNCHRONIZATION_VALIDATION_QUEUE_SUBMIT",
)

from tests.helpers import vulkan_unavailable_reason

GPU_FIXTURES = {"ctx", "user_device"}


def pytest_collection_modifyitems(items):
    """Tests using a GPU fixture are ``gpu`` tests without saying so; others mark themselves."""
    for item in items:
        if GPU_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.gpu)


def pytest_runtest_setup(item):
    """The one place GPU tests skip: no Vulkan ICD on this machine."""
    if item.get_closest_marker("gpu") is not None:
        reason = vulkan_unavailable_reason()
        if reason:
            pytest.skip(f"no Vulkan ICD: {reason}")


@pytest.fixture
def ctx():
    """A fresh validated Context; the test fails if validation reported anything or if an object the test
    created was not destroyed (the Context's registry is the leak detector)."""
    from vkmorph.gpu.context import Context, validation_requested

    c = Context.create(validation=validation_requested(True))
    yield c
    leaks = []
    if not c.destroyed:
        c.wait_idle()                 # also releases what was waiting for a completion
        leaks = c.live_children
    c.destroy()
    bad = c.errors_and_warnings()
    assert not bad, "validation messages:\n" + "\n".join(str(m) for m in bad)
    assert not leaks, f"objects not destroyed by the test (leaked): {leaks}"

