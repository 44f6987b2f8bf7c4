"""Keep the Vulkan driver loaded for the life of the process once vkmorph has created an instance.

Why: the Vulkan loader loads the ICD (and its dependencies) with ``dlopen`` on every ``vkCreateInstance`` (and
every pre-instance query) and ``dlclose``-s it when the last instance is gone. NVIDIA's driver (580.159 on an
H200) survives only about 30 such load/unload cycles in one process; from the 31st on, ``vkCreateInstance`` returns
VK_ERROR_INCOMPATIBLE_DRIVER ("no ICD found"). Measured: creating and destroying a Context in a loop fails at
iteration 30 with or without the validation layer, and runs 300 iterations clean while one other instance stays
alive. A Python user who opens models one after another (``vkmorph.open`` in a loop, a notebook, the test suite)
hits that wall. So after a successful ``vkCreateInstance`` the shared objects mapped since this module was imported
— the driver and what it depends on (the loader keeps them mapped from the first pre-instance query on, so a
before/after diff around the create itself would miss them), not the layers — get one more reference with
``RTLD_NODELETE``: the loader's ``dlclose``
then leaves them mapped, and later instances reuse the loaded driver exactly as they would while another instance
is alive. Nothing is loaded that the loader did not load; on platforms without ``/proc/self/maps`` this is a no-op.
"""

from __future__ import annotations

import ctypes
import os

_pinned: dict[str, ctypes.CDLL] = {}


def mapped_shared_objects() -> set[str]:
    """Paths of the shared objects mapped into this process (empty where /proc is not available)."""
    try:
        with open("/proc/self/maps") as f:
            lines = f.read().splitlines()
    except OSError:
        return set()
    paths = set()
    for line in lines:
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5].startswith("/") and ".so" in os.path.basename(parts[5]):
            paths.add(parts[5])
    return paths


def pin_driver() -> list[str]:
    """Pin every shared object mapped now but not when this module was imported (layers excepted: they are
    per-instance state and reload cleanly). Returns the newly pinned paths. Never loads anything: ``RTLD_NOLOAD``
    only takes a reference to what is already there."""
    mode = getattr(os, "RTLD_NOLOAD", 0)
    nodelete = getattr(os, "RTLD_NODELETE", 0)
    if not mode or not nodelete:
        return []
    pinned = []
    for path in sorted(mapped_shared_objects() - _AT_IMPORT):
        if path in _pinned or os.path.basename(path).startswith("libVkLayer"):
            continue
        try:
            _pinned[path] = ctypes.CDLL(path, mode=os.RTLD_NOW | mode | nodelete)
        except OSError:
            continue          # mapped but not dlopen-able by path (e.g. replaced on disk): leave it to the loader
        pinned.append(path)
    return pinned


_AT_IMPORT = mapped_shared_objects()


def pinned() -> list[str]:
    """The shared objects pinned so far (for diagnostics and tests)."""
    return sorted(_pinned)
