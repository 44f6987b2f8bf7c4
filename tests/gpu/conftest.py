"""GPU-test fixtures beyond the validated Context of tests/conftest.py."""

from __future__ import annotations

import pytest


@pytest.fixture
def user_device():
    """A user's own instance/device (python-vulkan only, validation on) and a vkmorph Context borrowing it.

    Yields ``(user, ctx)``; the test destroys vkmorph's objects. At teardown the host waits for its device, reports
    completion, vkmorph's context is destroyed, then the user destroys its own device and instance (always, even
    when the test or a step of the teardown failed: tests/gpu/rawvk.py ``borrowed_device``); the test fails if
    the user's messenger saw anything or an object vkmorph made was not destroyed.
    """
    from tests.gpu.rawvk import borrowed_device

    with borrowed_device(pipeline_cache=True) as (user, ctx):
        yield user, ctx
    assert user.messages == [], user.messages
    assert not user.leaked, f"objects not destroyed by the test (leaked): {user.leaked}"
