"""Run a function in a child process so that a native crash (Assimp's SIGFPE/SIGSEGV) becomes an AssetError.

The result (a ``SceneAsset``: dataclasses over numpy arrays) comes back pickled through a pipe; ``AssetError``
is re-raised with its fields, and warnings the child raised are re-issued in the parent. The child is forked
where the platform can (milliseconds: it shares the parent's already-imported modules and starts no Vulkan),
else spawned.
"""

from __future__ import annotations

import faulthandler
import multiprocessing as mp
import signal
import sys
import traceback
import warnings

from ..errors import AssetError

METHODS = ("fork", "forkserver", "spawn")


def default_method() -> str:
    """fork on Linux (the child only runs Assimp and numpy, never Vulkan or GLFW), else spawn."""
    return "fork" if sys.platform.startswith("linux") else "spawn"


def can_isolate() -> bool:
    """False inside a daemonic multiprocessing worker, which may not start children."""
    return not mp.current_process().daemon


def _child(conn, fn, args, kwargs) -> None:
    faulthandler.disable()  # a crash here is reported by the parent in one line, not as a dumped traceback
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = fn(*args, **kwargs)
        conn.send(("ok", result, [(w.category, str(w.message)) for w in caught]))
    except AssetError as exc:
        conn.send(("asset", (exc.reason, exc.file, exc.mesh, exc.primitive, exc.target, exc.index), []))
    except BaseException as exc:  # noqa: BLE001 - reported in the parent with its type and place
        tb = traceback.extract_tb(exc.__traceback__)
        place = f" at {tb[-1].filename}:{tb[-1].lineno}" if tb else ""
        conn.send(("other", f"{type(exc).__name__}: {exc}{place}", []))
    finally:
        conn.close()


def run_isolated(fn, *args, file: str, method: str | None = None, **kwargs):
    """``fn(*args, **kwargs)`` in a child process; a crash raises "the importer crashed on FILE (signal X)"."""
    ctx = mp.get_context(method or default_method())
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
    if msg is None:
        code = proc.exitcode
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
