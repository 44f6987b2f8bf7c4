"""One error family for the whole package, so callers can catch ``VkmorphError`` and CLIs print one line."""

from __future__ import annotations

ABRIDGE_OVER = 80    # a name longer than this is shown as its first 40 and last 20 characters and its length


def abridged(name: object) -> str:
    """``repr(name)`` for messages; a string over ``ABRIDGE_OVER`` characters as its first 40 characters, '…', its
    last 20 and its length (a file can name a node with a megabyte)."""
    if not isinstance(name, str):
        text = repr(name)             # an object's repr can hold whole arrays: its type and start only
        return text if len(text) <= ABRIDGE_OVER else f"{type(name).__name__} {text[:40]}…"
    if len(name) <= ABRIDGE_OVER:
        return repr(name)
    return f"{name[:40] + '…' + name[-20:]!r} ({len(name)} characters)"


def name_list(names, most: int = 12) -> str:
    """Names for a message, each ``abridged``, comma-separated; past ``most``: '... and N more'."""
    names = list(names)
    shown = ", ".join(abridged(n) for n in names[:most])
    return shown + (f" and {len(names) - most} more" if len(names) > most else "") if names else "none"


class VkmorphError(Exception):
    """Base class: every error vkmorph raises on purpose derives from it."""


class AssetError(VkmorphError):
    """Bad input data. The message names file, mesh, primitive, target and the first offending index."""

    def __init__(self, message: str, *, file: str | None = None, mesh: str | None = None,
                 primitive: int | None = None, target: str | int | None = None, index: int | None = None):
        where = []
        if file is not None:
            where.append(f"file {file!s}")
        if mesh is not None:
            where.append(f"mesh {abridged(mesh)}")
        if primitive is not None:
            where.append(f"primitive {primitive}")
        if target is not None:
            where.append(f"target {abridged(target)}")
        if index is not None:
            where.append(f"index {index}")
        self.file, self.mesh, self.primitive, self.target, self.index = file, mesh, primitive, target, index
        self.reason = message
        super().__init__(f"{', '.join(where)}: {message}" if where else message)


class AssetWarning(UserWarning):
    """Input that vkmorph repaired on purpose (e.g. renormalized weights); the message says what and where."""


class UsageError(VkmorphError):
    """Bad arguments to an API or CLI call (unknown clip, wrong weight count, non-finite weight)."""


class GpuError(VkmorphError):
    """A Vulkan-side failure: missing loader/driver/layer, no suitable device or memory type, a failed call."""
