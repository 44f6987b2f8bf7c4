"""GPU-test fixtures beyond the validated Context of tests/conftest.py."""

from __future__ import annotations

import pytest


@pytest.fixture
def user_device():
    """A user's own instance/device (python-vulkan only, validation on) and a vkmorph Context borrowing it.

    Yields ``(user, ctx)``; the test destroys vkmorph's objects and ``ctx`` first. At teardown the user destroys
    its own device and instance, and the test fails if the user's messenger saw anything.
    """
    from tests.gpu.rawvk import RawDevice
    from vkmorph.gpu.context import Context

    user = RawDevice()
    ctx = Context.from_external(user.instance, user.physical_device, user.device, user.queue,
                                user.queue_family_index)
    yield user, ctx
    ctx.destroy()
    user.destroy()
    assert user.messages == [], user.messages
