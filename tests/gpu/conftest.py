"""GPU-test fixtures beyond the validated Context of tests/conftest.py."""

from __future__ import annotations

import pytest


@pytest.fixture
def user_device():
    """A user's own instance/device (python-vulkan only, validation on) and a vkmorph Context borrowing it.

    Yields ``(user, ctx)``; the test destroys vkmorph's objects. At teardown the host waits for its device, reports
    completion, vkmorph's context is destroyed, then the user destroys its own device and instance; the test fails
    if the user's messenger saw anything or an object vkmorph made was not destroyed.
    """
    from tests.gpu.rawvk import RawDevice
    from vkmorph.gpu.context import Context

    user = RawDevice(pipeline_cache=True)
    ctx = Context.from_external(user.instance, user.physical_device, user.device, user.queue,
                                user.queue_family_index, api_version=user.api_version,
                                enabled_features=user.enabled_features, pipeline_cache=user.pipeline_cache,
                                debug_utils=True)
    yield user, ctx
    user.wait_idle()               # the host's own wait, at its shutdown
    leaks = []
    if not ctx.destroyed:
        ctx.completed()            # ... which it reports to vkmorph
        leaks = ctx.live_children
        ctx.destroy()
    user.destroy()
    assert user.messages == [], user.messages
    assert not leaks, f"objects not destroyed by the test (leaked): {leaks}"
