"""Reading input files for hostile input: regular files only, never blocking, never more than is there.

A URI in a model may name a FIFO (opening it blocks until a writer comes), a device (``/dev/zero`` never ends),
a directory or a socket. ``read_regular`` classifies the path with ``stat`` before opening it, opens it
non-blocking, checks again on the open descriptor (the path may have been swapped in between) and reads at most
the file's real size (and at most ``limit`` bytes), so a declared length never decides an allocation. Problems
raise ``FileProblem`` with a short reason (``"a FIFO, not a regular file"``) for the caller to put in its one
error line.
"""

from __future__ import annotations

import os
import stat

KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


class FileProblem(Exception):
    """The path cannot be read as a regular file; ``str(exc)`` is the reason."""


def kind(mode: int) -> str:
    return next((name for test, name in KINDS if test(mode)), "not a file")


def regular_size(path) -> int:
    """The size of the regular file at ``path`` (symlinks followed); FileProblem for anything else."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise FileProblem(exc.strerror or str(exc)) from None
    if not stat.S_ISREG(st.st_mode):
        raise FileProblem(f"{kind(st.st_mode)}, not a regular file")
    return st.st_size


def open_regular(path) -> tuple[int, int]:
    """(file descriptor, size) of the regular file at ``path``, opened read-only without blocking."""
    regular_size(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise FileProblem(exc.strerror or str(exc)) from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise FileProblem(f"{kind(st.st_mode)}, not a regular file")
    return fd, st.st_size


def read_exact(fd: int, offset: int, n: int) -> bytes:
    """``n`` bytes from ``offset`` (fewer only if the file shrank); MemoryError becomes FileProblem."""
    try:
        buf = bytearray(n)
    except MemoryError:
        raise FileProblem(f"not enough memory to read {n} bytes") from None
    view = memoryview(buf)
    got = 0
    while got < n:
        k = os.preadv(fd, [view[got:]], offset + got)
        if k <= 0:
            break
        got += k
    view.release()
    if got < n:
        del buf[got:]
    return bytes(buf) if got < (1 << 20) else buf   # large reads stay a bytearray (no second copy)


def read_regular(path, limit: int | None = None) -> tuple[bytes, int]:
    """(up to ``limit`` bytes of the file, its real size); the bytes are all of it when ``limit`` is None."""
    fd, size = open_regular(path)
    try:
        return read_exact(fd, 0, size if limit is None else min(size, limit)), size
    except OSError as exc:
        raise FileProblem(exc.strerror or str(exc)) from None
    finally:
        os.close(fd)
