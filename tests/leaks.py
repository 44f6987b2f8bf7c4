"""The process-level leak detector of the test session: live VkInstance / VkDevice handles and open file descriptors.

Why: a VkInstance or VkDevice that a test leaves alive costs nothing visible on lavapipe, but a real driver
keeps per-instance/per-device state (the NVIDIA driver opens /dev/nvidia* descriptors for each) and runs out,
after which every later vkCreateInstance in the process fails. The Context registry (``ctx.live_children``)
only sees what vkmorph made; this sees every instance and device the process creates, whoever creates it
(vkmorph, tests/gpu/rawvk.py, a test's own python-vulkan code).

``install(vk)`` wraps python-vulkan's vkCreateInstance / vkDestroyInstance / vkCreateDevice / vkDestroyDevice
(module attributes, looked up at call time by every caller, vkmorph's ``vk.call`` included), recording for each
live handle where it was created. tests/conftest.py takes a ``snapshot()`` before each test and fails the test
when ``leaks_since(snapshot)`` lists anything afterwards.
"""

from __future__ import annotations

import gc
import os
import sys
from dataclasses import dataclass, field

KINDS = (("VkInstance", "vkCreateInstance", "vkDestroyInstance"),
         ("VkDevice", "vkCreateDevice", "vkDestroyDevice"))
_FD_DIR = "/proc/self/fd"
_SKIP_FILES = (os.sep + "vulkan" + os.sep, os.path.join("vkmorph", "gpu", "vk.py"), __file__)


@dataclass
class Snapshot:
    handles: dict[str, set[int]]
    fds: dict[int, str] | None          # None where /proc/self/fd does not exist


@dataclass
class Tracker:
    live: dict[str, dict[int, str]] = field(default_factory=lambda: {k: {} for k, _, _ in KINDS})
    installed: bool = False

    # ------------------------------------------------------------------ handles
    def install(self, vk) -> None:
        """Wrap the create/destroy functions of the python-vulkan module ``vk`` (once)."""
        if self.installed:
            return
        for kind, create, destroy in KINDS:
            setattr(vk, create, self._wrap_create(vk, kind, getattr(vk, create)))
            setattr(vk, destroy, self._wrap_destroy(vk, kind, getattr(vk, destroy)))
        self.installed = True

    def _wrap_create(self, vk, kind: str, real):
        def create(*args, **kwargs):
            handle = real(*args, **kwargs)
            self.live[kind][_key(vk, handle)] = _caller()
            return handle

        create.__wrapped__ = real
        return create

    def _wrap_destroy(self, vk, kind: str, real):
        def destroy(handle, *args, **kwargs):
            self.live[kind].pop(_key(vk, handle), None)
            return real(handle, *args, **kwargs)

        destroy.__wrapped__ = real
        return destroy

    # ------------------------------------------------------------------ checking
    def snapshot(self) -> Snapshot:
        return Snapshot({k: set(v) for k, v in self.live.items()}, open_fds())

    def leaks_since(self, before: Snapshot) -> list[str]:
        """What is alive now and was not at ``before``: one line per VkInstance/VkDevice (with where it was
        created) and per extra file descriptor (with its target). Descriptors get one garbage collection to
        close (a file object in a reference cycle) before they count."""
        found = [f"{kind} created at {site} was never destroyed"
                 for kind, live in self.live.items() for h, site in live.items() if h not in before.handles[kind]]
        if before.fds is not None:
            extra = _new_fds(before.fds, open_fds())
            if extra:
                gc.collect()
                extra = _new_fds(before.fds, open_fds())
            if extra:   # the importer's long-lived worker is meant to outlive the test that started it
                keep = _worker_fds()
                extra = [(fd, t) for fd, t in extra if fd not in keep]
            found += [f"file descriptor {fd} -> {target} left open" for fd, target in extra]
        return found


def open_fds() -> dict[int, str] | None:
    """{fd: what it points to} for this process, or None without /proc."""
    try:
        names = os.listdir(_FD_DIR)
    except OSError:
        return None
    out = {}
    for name in names:
        try:
            out[int(name)] = os.readlink(f"{_FD_DIR}/{name}")
        except OSError:
            pass                    # the directory listing's own descriptor, already closed
    return out


def _new_fds(before: dict[int, str], after: dict[int, str] | None) -> list[tuple[int, str]]:
    """Descriptors now open beyond those open before (only when the count grew: numbers are reused)."""
    if after is None or len(after) <= len(before):
        return []
    return sorted((fd, t) for fd, t in after.items() if before.get(fd) != t)


def _worker_fds() -> set[int]:
    """The pipe ends of vkmorph's isolated importer worker (vkmorph.asset.isolate), if one runs."""
    isolate = sys.modules.get("vkmorph.asset.isolate")
    return isolate.worker_fds() if isolate is not None else set()


def _key(vk, handle) -> int:
    return int(vk.ffi.cast("uintptr_t", handle))


def _caller() -> str:
    """file:line of the first frame outside python-vulkan, vkmorph's vk.call and this module."""
    f = sys._getframe(2)
    while f is not None and any(s in f.f_code.co_filename for s in _SKIP_FILES):
        f = f.f_back
    if f is None:
        return "?"
    name = f.f_code.co_filename
    for root in sys.path:
        if root and name.startswith(root + os.sep):
            name = name[len(root) + 1:]
            break
    return f"{name}:{f.f_lineno}"


TRACKER = Tracker()
