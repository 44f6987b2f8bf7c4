"""Shared fixtures. GPU tests get a validated Context (Khronos layer + synchronization validation, also across
queue submissions) and fail on any warning or error the messenger saw. Every test fails when it leaves a
VkInstance, a VkDevice or a file descriptor open that was not open before it (tests/leaks.py)."""

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
from tests.leaks import TRACKER

try:
    import vulkan as _vulkan
except (OSError, ImportError):  # no loader: GPU tests skip; nothing to track
    _vulkan = None
else:
    TRACKER.install(_vulkan)   # before any test creates an instance or device

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
        _warm_up()


_warm = []


def _warm_up() -> None:
    """Once, before the first GPU test: a validated instance + device made and destroyed, so that what the
    loader, the layer and the driver keep open for the life of the process is open before any test's count."""
    if not _warm:
        _warm.append(True)
        from vkmorph.gpu.context import Context
        from vkmorph.gpu.validation import validation_requested

        Context.create(validation=validation_requested(True)).destroy()


RESOURCE_LOG = os.environ.get("VKMORPH_TEST_RESOURCE_LOG")   # a path: one line per test (driver diagnosis)
_current_test: list[str] = [""]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logstart(nodeid, location):
    _current_test[0] = nodeid


def _log_resources(leaks) -> None:
    """With VKMORPH_TEST_RESOURCE_LOG set, append the process's open fds and live VkInstance/VkDevice count after
    each test, flushed at once: on a driver that runs out of something, the log survives a killed run and shows
    where the counts start to climb."""
    if not RESOURCE_LOG:
        return
    snap = TRACKER.snapshot()
    fds = len(snap.fds) if snap.fds is not None else -1
    maps = sum(1 for _ in open("/proc/self/maps")) if os.path.exists("/proc/self/maps") else -1
    threads = len(os.listdir("/proc/self/task")) if os.path.isdir("/proc/self/task") else -1
    with open(RESOURCE_LOG, "a") as f:
        f.write(f"{_current_test[0]} fds={fds} instances={len(snap.handles['VkInstance'])} "
                f"devices={len(snap.handles['VkDevice'])} maps={maps} threads={threads} leaks={len(leaks)}\n")


@pytest.fixture(autouse=True)
def empty_scene_cache():
    """Each test starts with an empty in-process scene cache (asset/scene_cache.py), so what it imports does not
    depend on which tests ran before it in the same worker."""
    from vkmorph.asset import scene_cache

    scene_cache.clear()
    yield
    scene_cache.clear()


@pytest.fixture(autouse=True)
def no_leaked_instances_devices_or_fds():
    """Fails the test (at teardown, after every other fixture's teardown) when it leaves a VkInstance, a VkDevice
    or a file descriptor alive that was not alive before it; the message says where each was created."""
    before = TRACKER.snapshot()
    yield
    leaks = TRACKER.leaks_since(before)
    _log_resources(leaks)
    if leaks:
        pytest.fail("the test leaked (a real driver runs out of these):\n  " + "\n  ".join(leaks), pytrace=False)


@pytest.fixture
def ctx():
    """A fresh validated Context; the test fails if validation reported anything or if an object the test
    created was not destroyed (the Context's registry is the leak detector)."""
    from vkmorph.gpu.context import Context
    from vkmorph.gpu.validation import validation_requested

    c = Context.create(validation=validation_requested(True))
    yield c
    leaks = []
    try:
        if not c.destroyed:
            c.wait_idle()             # also releases what was waiting for a completion
            leaks = c.live_children
    finally:
        c.destroy()                   # instance and device go even when the wait or a child's destroy fails
    bad = c.errors_and_warnings()
    assert not bad, "validation messages:\n" + "\n".join(str(m) for m in bad)
    assert not leaks, f"objects not destroyed by the test (leaked): {leaks}"

