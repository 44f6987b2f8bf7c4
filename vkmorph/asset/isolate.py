"""Run a function in a child process so that a native crash (Assimp's SIGFPE/SIGSEGV) becomes an AssetError.

The result (a ``SceneAsset``: dataclasses over numpy arrays) comes back pickled through a pipe; ``AssetError``
is re-raised with its fields, and warnings the child raised are re-issued in the parent. The child is forked
where the platform can (milliseconds: it shares the parent's already-imported modules and starts no Vulkan),
else spawned.

Never fork once Vulkan is loaded in this process: a forked child inherits the driver's state, which drivers do
not support (on the NVIDIA H200, after ~10 imports forked from a process holding a VkDevice, every later
vkCreateInstance in the parent failed with VK_ERROR_INCOMPATIBLE_DRIVER). Then the child is a fresh interpreter
(``python -m vkmorph.asset.isolate``, ~0.3 s) that gets the call pickled on stdin and answers on stdout; unlike
multiprocessing's spawn it never re-imports the caller's ``__main__``.
"""

from __future__ import annotations

import faulthandler
import importlib
import multiprocessing as mp
import os
import pickle
import signal
import subprocess
import sys
import traceback
import warnings
from pathlib import Path

from ..errors import AssetError

METHODS = ("fork", "forkserver", "spawn", "subprocess")


def vulkan_loaded() -> bool:
    """True once python-vulkan (and so possibly a driver) is loaded in this process: forking is unsafe then."""
    return "vulkan" in sys.modules


def default_method() -> str:
    """fork on Linux while no Vulkan is loaded (the child only runs Assimp and numpy), else a fresh interpreter
    ("subprocess"); spawn elsewhere."""
    if not sys.platform.startswith("linux"):
        return "spawn"
    return "subprocess" if vulkan_loaded() else "fork"


def can_isolate() -> bool:
    """False inside a daemonic multiprocessing worker, which may not start children."""
    return not mp.current_process().daemon


def _call(fn, args, kwargs) -> tuple:
    """Run ``fn`` and turn its outcome into the message the parent decodes."""
    faulthandler.disable()  # a crash here is reported by the parent in one line, not as a dumped traceback
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fn(*args, **kwargs)
        return ("ok", result, [(w.category, str(w.message)) for w in caught])
    except AssetError as exc:
        return ("asset", (exc.reason, exc.file, exc.mesh, exc.primitive, exc.target, exc.index), [])
    except BaseException as exc:  # noqa: BLE001 - reported in the parent with its type and place
        tb = traceback.extract_tb(exc.__traceback__)
        place = f" at {tb[-1].filename}:{tb[-1].lineno}" if tb else ""
        return ("other", f"{type(exc).__name__}: {exc}{place}", [])


def _child(conn, fn, args, kwargs) -> None:
    try:
        conn.send(_call(fn, args, kwargs))
    finally:
        conn.close()


def _run_subprocess(fn, args, kwargs) -> tuple[tuple | None, int]:
    """``fn`` in a fresh interpreter (no inherited Vulkan state): (message or None, exit code)."""
    package_root = str(Path(__file__).resolve().parents[2])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}
    request = pickle.dumps((fn.__module__, fn.__qualname__, args, kwargs))
    r = subprocess.run([sys.executable, "-X", "faulthandler=0", "-m", "vkmorph.asset.isolate"], input=request,
                       capture_output=True, env=env)
    try:
        return pickle.loads(r.stdout), r.returncode
    except Exception:  # noqa: BLE001 - no answer: the child crashed or died; the exit code says how
        return None, r.returncode


def run_isolated(fn, *args, file: str, method: str | None = None, **kwargs):
    """``fn(*args, **kwargs)`` in a child process; a crash raises "the importer crashed on FILE (signal X)"."""
    method = method or default_method()
    if method == "subprocess":
        msg, code = _run_subprocess(fn, args, kwargs)
    else:
        msg, code = _run_multiprocessing(method, fn, args, kwargs)
    if msg is None:
        if code is not None and code < 0:
            try:
                how = f"signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"signal {-code}"
        else:
            how = f"exit status {code}"
        err = AssetError(f"the importer crashed on {file} ({how})")
        err.file = file
        raise err
    kind, payload, caught = msg
    for category, text in caught:
        warnings.warn(category(text), stacklevel=2)
    if kind == "ok":
        return payload
    if kind == "asset":
        reason, f, mesh, prim, target, index = payload
        raise AssetError(reason, file=f, mesh=mesh, primitive=prim, target=target, index=index)
    raise AssetError(f"the importer failed on {file}: {payload}")


def _run_multiprocessing(method: str, fn, args, kwargs) -> tuple[tuple | None, int | None]:
    ctx = mp.get_context(method)
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(send, fn, args, kwargs), daemon=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12: fork with threads alive
        proc.start()
    send.close()
    try:
        msg = recv.recv()
    except EOFError:
        msg = None
    finally:
        recv.close()
        proc.join()
    return msg, proc.exitcode


def _main() -> None:
    """Child side of ``method="subprocess"``: the call pickled on stdin, the outcome pickled on stdout."""
    module, qualname, args, kwargs = pickle.loads(sys.stdin.buffer.read())
    fn = importlib.import_module(module)
    for part in qualname.split("."):
        fn = getattr(fn, part)
    out = pickle.dumps(_call(fn, args, kwargs))
    sys.stdout.buffer.write(out)
    sys.stdout.buffer.flush()


if __name__ == "__main__":
    _main()
