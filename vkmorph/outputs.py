"""Output files, all or nothing: one up-front path check and one atomic-write helper for every writer.

``check_output(path, ...)`` is called before long work starts and raises ``UsageError`` (one line) for an empty
path, a non-UTF-8 path, a directory, a missing or read-only folder or a wrong suffix. ``atomic_write(path, fn)``
then writes through a temporary file in the same folder (fsync, rename), so a reader never sees half a file and
an error, Ctrl-C or SIGTERM (the CLI turns it into ``SystemExit``) leaves nothing behind. Decisions:

- permissions: a new file gets ``0o666 & ~umask`` (as ``open()`` would), a replaced file keeps its mode;
- symlinks are followed: the file they point to is replaced, the link stays;
- FIFOs, character devices and sockets (``/dev/null``, ``/dev/stdout``) are written in place, never replaced.

This module is layer-neutral (no Vulkan, no numpy needed) so every layer and the CLI share it.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import BinaryIO

from .errors import UsageError

__all__ = ["atomic_write", "check_output", "check_output_dir", "printable"]


def printable(text: object) -> str:
    """``text`` with control characters and undecodable bytes escaped, safe to print on a terminal."""
    out = []
    for ch in str(text):
        o = ord(ch)
        if o < 0x20 or o == 0x7F or 0x80 <= o < 0xA0:
            out.append(f"\\x{o:02x}")
        elif 0xDC80 <= o <= 0xDCFF:  # a byte that was not UTF-8 (surrogateescape)
            out.append(f"\\x{o - 0xDC00:02x}")
        else:
            out.append(ch)
    return "".join(out)


def _utf8(path: str | os.PathLike, flag: str) -> Path:
    text = os.fsdecode(path)
    if text == "":
        raise UsageError(f"{flag} is empty")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError(f"{flag} {printable(text)!r} is not valid UTF-8; use a UTF-8 path") from None
    return Path(text)


def _writable_folder(folder: Path, flag: str, shown: str) -> None:
    if not folder.exists():
        raise UsageError(f"{flag} {shown}: folder {printable(folder)} does not exist")
    if not folder.is_dir():
        raise UsageError(f"{flag} {shown}: {printable(folder)} is not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise UsageError(f"{flag} {shown}: folder {printable(folder)} is not writable")


def check_output(path: str | os.PathLike, *, flag: str = "--out", suffixes: Iterable[str] = ()) -> Path:
    """Validate an output file path before any work; returns it as a Path. Raises UsageError (one line)."""
    p = _utf8(path, flag)
    shown = repr(printable(p))
    target = Path(os.path.realpath(p))
    if target.is_dir():
        raise UsageError(f"{flag} {shown} is a folder; name a file")
    suffixes = tuple(s.lower() for s in suffixes)
    if suffixes and p.suffix.lower() not in suffixes and not _is_special(target):
        raise UsageError(f"{flag} {shown} must end with {' or '.join(suffixes)}")
    if target.exists() and not _is_special(target) and not os.access(target, os.W_OK):
        raise UsageError(f"{flag} {shown} exists and is not writable")
    if not _is_special(target):
        _writable_folder(target.parent, flag, shown)
    return p


def check_output_dir(path: str | os.PathLike, *, flag: str = "--out-dir") -> Path:
    """Validate a folder that will receive files: it exists as a folder or its parent folder exists."""
    p = _utf8(path, flag)
    shown = repr(printable(p))
    if p.exists():
        if not p.is_dir():
            raise UsageError(f"{flag} {shown} exists and is not a folder")
        if not os.access(p, os.W_OK | os.X_OK):
            raise UsageError(f"{flag} {shown} is not writable")
        return p
    _writable_folder(p.resolve().parent, flag, shown)
    return p


def _is_special(p: Path) -> bool:
    try:
        mode = os.stat(p).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISSOCK(mode) or stat.S_ISBLK(mode)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path: str | os.PathLike, write: Callable[[BinaryIO], None]) -> Path:
    """Write a file through ``write(binary_file)`` all or nothing (see the module docstring); returns the path.

    The temporary file is removed on any exception, including KeyboardInterrupt and SystemExit (SIGTERM in the
    CLI). OS errors (disk full, permissions) become one-line ``UsageError``s naming the path."""
    p = Path(os.fsdecode(path))
    target = Path(os.path.realpath(p))
    try:
        if _is_special(target):
            with open(target, "wb") as f:
                write(f)
            return p
        mode = stat.S_IMODE(os.stat(target).st_mode) if target.exists() else 0o666 & ~_umask()
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    except OSError as exc:
        raise UsageError(f"cannot write {printable(p)!r}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise UsageError(f"cannot write {printable(p)!r}: {exc.strerror or exc}") from None
        raise
    return p
