"""One error family for the whole package, so callers can catch ``VkmorphError`` and CLIs print one line."""

from __future__ import annotations


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
            where.append(f"mesh {mesh!r}")
        if primitive is not None:
            where.append(f"primitive {primitive}")
        if target is not None:
            where.append(f"target {target!r}")
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
