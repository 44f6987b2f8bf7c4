"""Run a function in a child process so that a native crash (Assimp's SIGFPE/SIGSEGV) becomes an AssetError.

The result (a ``SceneAsset``: dataclasses over numpy arrays) comes back pickled through a pipe; ``AssetError``
is re-raised with its fields, and warnings the child raised are re-issued in the parent. The child is forked
where the platform can (milliseconds: it shares the parent's already-imported modules and starts no Vulkan),
else it is a separate interpreter.

Never fork once Vulkan is loaded in this process: a forked child inherits the driver's state, which drivers do
not support (on the NVIDIA H200, after ~10 imports forked from a process holding a VkDevice, every later
vkCreateInstance in the parent failed with VK_ERROR_INCOMPATIBLE_DRIVER). Then the child is one long-lived
worker interpreter (``python -m vkmorph.asset.isolate``, started by fork + exec, so it holds no driver state)
that serves every later call: the first call pays its start (an interpreter, numpy and pyassimp: measured in
docs/guide.md), each later one only the import itself plus pickling the scene. Unlike multiprocessing's spawn it
never re-imports the caller's ``__main__``. A crash kills only the worker: that call reports it in one line and
the next call starts a new worker. The worker exits when this process closes its end of the pipe (at exit, or
``stop_worker()``); ``worker_fds()`` names the two pipe ends it holds here (the tests' fd leak check skips them).
"""

from __future__ import annotations

import atexit
import faulthandler
import importlib
import os
import pickle
import signal
import struct
import subprocess
import sys
import threading
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
    mp = sys.modules.get("multiprocessing")   # not imported: this process is no multiprocessing child
    return mp is None or not mp.current_process().daemon


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


class _Worker:
    """The long-lived isolated interpreter: requests and answers are length-prefixed pickles on its stdin and
    stdout. One call at a time (a lock), from any thread."""

    def __init__(self) -> None:
        package_root = str(Path(__file__).resolve().parents[2])
        env = {**os.environ,
               "PYTHONPATH": os.pathsep.join(p for p in (package_root, os.environ.get("PYTHONPATH")) if p)}
        if sys.version_info < (3, 12):      # pyassimp's distutils import: the stdlib's, not setuptools' shim
            env.setdefault("SETUPTOOLS_USE_DISTUTILS", "stdlib")
        self.proc = subprocess.Popen([sys.executable, "-X", "faulthandler=0", "-m", "vkmorph.asset.isolate"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     env=env)

    def call(self, fn, args, kwargs) -> tuple[tuple | None, int | None]:
        request = pickle.dumps((fn.__module__, fn.__qualname__, args, kwargs))
        try:
            _write(self.proc.stdin, request)
            answer = _read(self.proc.stdout)
        except (OSError, EOFError, ValueError):
            answer = None
        if answer is None:                  # it died: a signal (the import crashed) or an exit status
            self.close()
            return None, self.proc.returncode
        return pickle.loads(answer), 0

    def close(self) -> None:
        for pipe in (self.proc.stdin, self.proc.stdout):
            try:
                pipe.close()
            except OSError:
                pass
        try:
            self.proc.wait(60)
        except subprocess.TimeoutExpired:   # stuck in native code: nothing more to ask of it
            self.proc.kill()
            self.proc.wait()

    def fds(self) -> set[int]:
        return {p.fileno() for p in (self.proc.stdin, self.proc.stdout) if not p.closed}


_worker: _Worker | None = None
_worker_lock = threading.Lock()


def _write(pipe, data: bytes) -> None:
    pipe.write(struct.pack("<Q", len(data)))
    pipe.write(data)
    pipe.flush()


def _read(pipe) -> bytes | None:
    head = pipe.read(8)
    if len(head) < 8:
        return None
    (n,) = struct.unpack("<Q", head)
    data = pipe.read(n)
    return data if len(data) == n else None


def _run_subprocess(fn, args, kwargs) -> tuple[tuple | None, int]:
    """``fn`` in the long-lived worker interpreter (no inherited Vulkan state): (message or None, exit code)."""
    global _worker
    with _worker_lock:
        if _worker is None or _worker.proc.poll() is not None:
            _worker = _Worker()
        msg, code = _worker.call(fn, args, kwargs)
        if msg is None:
            _worker = None                  # the next call starts a new one
        return msg, code


def stop_worker() -> None:
    """End the worker interpreter, if one runs (the next isolated import starts another)."""
    global _worker
    with _worker_lock:
        if _worker is not None:
            _worker.close()
            _worker = None


def worker_fds() -> set[int]:
    """The file descriptors this process holds for the worker (empty when none runs)."""
    w = _worker
    return w.fds() if w is not None and w.proc.poll() is None else set()


atexit.register(stop_worker)


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
    import multiprocessing as mp  # here, not at import: ~50-100 ms of a short command's start on 2 cores

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
    """The worker's side: answer calls until the parent closes the pipe. pyassimp is imported first, so the
    first call does not pay for it after the interpreter started."""
    try:
        from .importer import _assimp

        _assimp()
    except Exception:  # noqa: BLE001 - libassimp missing: the call itself reports it as an AssetError
        pass
    stdin, stdout = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr                 # a stray print must not corrupt the answers
    while True:
        request = _read(stdin)
        if request is None:
            return
        module, qualname, args, kwargs = pickle.loads(request)
        fn = importlib.import_module(module)
        for part in qualname.split("."):
            fn = getattr(fn, part)
        _write(stdout, pickle.dumps(_call(fn, args, kwargs)))


if __name__ == "__main__":
    _main()
