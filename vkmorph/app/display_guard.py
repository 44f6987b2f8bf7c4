"""Survive the display going away (``xdotool windowclose`` / ``windowkill``, a killed X server).

Xlib's default handlers print and ``exit()`` the process on a protocol error for a destroyed window or a lost
connection, so nothing would be released. ``DisplayGuard`` installs handlers that only record what happened
(libX11 >= 1.7's ``XSetIOErrorExitHandler`` lets a lost connection return instead of exiting); the demo loop
checks ``guard.lost`` and shuts down cleanly: wait for the GPU, release every Vulkan object, one line, exit 0.
On Wayland or without libX11 it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import socket
import sys
import tempfile

_ERR = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
_IOERR = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
_IOEXIT = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p)


class DisplayGuard:
    def __init__(self, glfw):
        self.lost: str | None = None
        self._keep = []
        self._fd = None
        try:
            display = glfw.get_x11_display()
        except Exception:  # noqa: BLE001 - not X11 (Wayland) or GLFW built without X11
            return
        if not display:
            return
        name = ctypes.util.find_library("X11") or "libX11.so.6"
        try:
            x11 = ctypes.CDLL(name)
        except OSError:
            return
        x11.XConnectionNumber.argtypes = [ctypes.c_void_p]
        self._fd = int(x11.XConnectionNumber(ctypes.c_void_p(display)))
        on_error = _ERR(self._on_error)
        on_io = _IOERR(self._on_io)
        self._keep += [on_error, on_io]
        x11.XSetErrorHandler(on_error)
        x11.XSetIOErrorHandler(on_io)
        if hasattr(x11, "XSetIOErrorExitHandler"):
            on_exit = _IOEXIT(self._on_io_exit)
            self._keep.append(on_exit)
            x11.XSetIOErrorExitHandler.argtypes = [ctypes.c_void_p, _IOEXIT, ctypes.c_void_p]
            x11.XSetIOErrorExitHandler(ctypes.c_void_p(display), on_exit, None)

    def check(self) -> bool:
        """True while the display connection is alive: a peek at its socket finds the server's hang-up before an
        X request does (Xlib can crash inside a request that meets a dead connection)."""
        if self.lost is None and self._fd is not None:
            try:
                with socket.fromfd(self._fd, socket.AF_UNIX, socket.SOCK_STREAM) as sock:
                    if sock.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) == b"":
                        self.lost = "the connection to the display was lost"
            except BlockingIOError:
                pass                       # alive, nothing to read
            except OSError:
                self.lost = "the connection to the display was lost"
        return self.lost is None

    def hold_stderr(self) -> None:
        """From the loss on, Xlib writes complaints for every request on the dead connection straight to fd 2:
        hold fd 2 in a temporary file until ``release_stderr`` (which passes on everything that is not Xlib's)."""
        if getattr(self, "_saved", None) is not None:
            return
        sys.stderr.flush()
        self._held = tempfile.TemporaryFile()
        self._saved = os.dup(2)
        os.dup2(self._held.fileno(), 2)

    def release_stderr(self) -> None:
        if getattr(self, "_saved", None) is None:
            return
        sys.stderr.flush()
        os.dup2(self._saved, 2)
        os.close(self._saved)
        self._saved = None
        self._held.seek(0)
        for line in self._held.read().decode("utf-8", "replace").splitlines():
            if line.strip() and not line.startswith("Xlib:"):
                print(line, file=sys.stderr)
        self._held.close()

    def _on_error(self, display, event) -> int:
        self.lost = self.lost or "the window was destroyed by the display server"
        return 0

    def _on_io(self, display) -> int:
        self.lost = "the connection to the display was lost"
        return 0

    def _on_io_exit(self, display, user) -> None:
        self.lost = "the connection to the display was lost"
