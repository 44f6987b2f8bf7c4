"""Keep the Vulkan driver loaded for the life of the process once vkmorph has created an instance.

Why: the Vulkan loader loads the ICD (and its dependencies) with ``dlopen`` on every ``vkCreateInstance`` (and
every pre-instance query) and ``dlclose``-s it when the last instance is gone. NVIDIA's driver (580.159 on an
H200) survives only about 30 such load/unload cycles in one process; from the 31st on, ``vkCreateInstance`` returns
VK_ERROR_INCOMPATIBLE_DRIVER ("no ICD found"). Measured: creating and destroying a Context in a loop fails at
iteration 30 with or without the validation layer, and runs 300 iterations clean while one other instance stays
alive. A Python user who opens models one after another (``vkmorph.open`` in a loop, a notebook, the test suite)
hits that wall.

So after vkmorph creates an instance (and again after it creates a device: a driver may load its compiler
libraries then) every shared object mapped into the process — the driver, what it depends on and what it loaded
itself — gets one more reference with ``RTLD_NOLOAD | RTLD_NODELETE``, layers excepted (they are per-instance state
and reload cleanly): the loader's ``dlclose`` then leaves them mapped, and later instances reuse the loaded driver
exactly as they would while another instance is alive. Nothing is loaded that was not already there; objects that
were mapped before (also by a host that used Vulkan before importing vkmorph) are pinned too, which costs nothing
for the ones that stay loaded anyway. Best effort: without ``/proc/self/maps`` or ``RTLD_NODELETE`` it does nothing,
and it never raises.
"""

from __future__ import annotations

import ctypes
import os

_pinned: dict[str, ctypes.CDLL] = {}


def parse_maps(data: bytes) -> set[str]:
    """Paths of the shared objects in a ``/proc/<pid>/maps`` text (bytes: paths need not be UTF-8)."""
    paths = set()
    for line in data.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and parts[5].startswith(b"/"):
            path = os.fsdecode(parts[5])
            if ".so" in os.path.basename(path):
                paths.add(path)
    return paths


def mapped_shared_objects() -> set[str]:
    """Paths of the shared objects mapped into this process (empty where /proc is not available)."""
    try:
        with open("/proc/self/maps", "rb") as f:
            return parse_maps(f.read())
    except OSError:
        return set()


def pin_driver() -> list[str]:
    """Pin every mapped shared object not pinned yet (layers excepted); returns the newly pinned paths."""
    noload, nodelete = getattr(os, "RTLD_NOLOAD", 0), getattr(os, "RTLD_NODELETE", 0)
    if not noload or not nodelete:
        return []
    pinned = []
    try:
        for path in sorted(mapped_shared_objects() - _pinned.keys()):
            if os.path.basename(path).startswith("libVkLayer"):
                continue
            try:
                _pinned[path] = ctypes.CDLL(path, mode=os.RTLD_NOW | noload | nodelete)
            except OSError:
                continue      # mapped but not dlopen-able by path (replaced on disk, not a library): left alone
            pinned.append(path)
    except Exception:  # noqa: BLE001 - best effort: never let keeping a driver loaded break creating a context
        pass
    return pinned


def pinned() -> list[str]:
    """The shared objects pinned so far (for diagnostics and tests)."""
    return sorted(_pinned)
