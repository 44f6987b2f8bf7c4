"""The in-process scene cache: a validated ``SceneAsset`` reused when the same unchanged file is loaded again.

Opening a model a second time in one process (a notebook re-running a cell, a test opening the same asset,
``vkmorph.open`` after a ``close()``) used to import and validate it again (~0.5 s for RobotExpressive on a
2-core host). The cache keeps the result of a successful ``load_scene`` keyed by everything the result depends on:

* every file the import read: the model file and, for glTF, each buffer / image file its URIs name
  (``GltfDocument.local_files``), each by resolved path and ``stat`` (size, ``st_mtime_ns``, ``st_ctime_ns``,
  inode, device). ``st_ctime_ns`` moves on every write and cannot be set back by ``os.utime``, so a file rewritten
  with its old size and mtime still misses;
* the path as given (the scene names its file that way), the options that change the result (``validate``,
  whether external URIs are allowed) and every ``VKMORPH_*`` environment variable (the import limits of
  ``asset/limits.py`` are read from there).

Invariants: only successes are stored (an error is raised again by a fresh import every time); an entry is
stored only if no file changed while it was imported (stat before and after agree); a hit returns a deep copy,
so no caller can change what the next one gets; the warnings the import raised are re-issued on every hit, as a
fresh import would. Formats other than glTF are not cached: Assimp may read files vkmorph does not know of.
Bounded: ``MAX_ENTRIES`` scenes, none larger than ``MAX_BYTES`` of arrays. ``VKMORPH_SCENE_CACHE=0`` turns it
off; ``clear()`` empties it.
"""

from __future__ import annotations

import copy
import os
import threading
import warnings
from collections import OrderedDict
from pathlib import Path

import numpy as np

ENV = "VKMORPH_SCENE_CACHE"
MAX_ENTRIES = 4
MAX_BYTES = 256 << 20

_lock = threading.Lock()
_entries: OrderedDict = OrderedDict()   # key -> (files and their stats, scene, warnings), least recent first


def enabled() -> bool:
    return os.environ.get(ENV, "1") not in ("0", "false", "no")


def file_stat(path: Path) -> tuple | None:
    """What identifies one version of a file; None if it cannot be stat'ed (never a hit then)."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev)


def options_key(path: Path, validate: bool, allow_external_uris: bool) -> tuple:
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith("VKMORPH_")))
    # the path as given too: the scene names its file that way (``scene.source``, in messages)
    return (str(path.resolve()), str(path), bool(validate), bool(allow_external_uris), env)


def lookup(key: tuple):
    """A deep copy of the cached scene whose files are all unchanged, with its warnings re-issued; else None."""
    if not enabled():
        return None
    with _lock:
        entry = _entries.get(key)
        if entry is None:
            return None
        files, scene, caught = entry
        if any(file_stat(p) != st for p, st in files):
            del _entries[key]       # a file changed: that version is gone for good
            return None
        _entries.move_to_end(key)
    out = copy.deepcopy(scene)
    for w in caught:
        warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return out


def store(key: tuple, files: list[tuple[Path, tuple | None]], scene, caught: list) -> None:
    """Keep ``scene`` (a deep copy) if every file still has the stat taken before the import began."""
    if not enabled() or any(st is None or file_stat(p) != st for p, st in files):
        return
    if scene_bytes(scene) > MAX_BYTES:
        return
    kept = copy.deepcopy(scene)
    with _lock:
        _entries[key] = (files, kept, list(caught))
        _entries.move_to_end(key)
        while len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)


def scene_bytes(scene) -> int:
    total = 0
    for p in scene.primitives:
        total += p.vertices.nbytes + p.indices.nbytes
        for t in p.morph_targets:
            total += sum(a.nbytes for a in (t.position_deltas, t.normal_deltas, t.tangent_deltas)
                         if isinstance(a, np.ndarray))
    return total


def clear() -> None:
    with _lock:
        _entries.clear()


def size() -> int:
    return len(_entries)
