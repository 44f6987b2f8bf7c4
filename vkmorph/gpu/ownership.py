"""``Owner``: the one way vkmorph groups objects that are released together, in reverse creation order."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .context import Context


class Owner:
    """The one way vkmorph groups objects: things released together in reverse creation order.

    ``own(obj)`` takes anything with ``destroy()`` (buffers, pipelines, images, other Owners); ``add(destroy,
    handle)`` a raw handle with its vkDestroy*/vkFree* function (called as ``destroy(device, handle, None)``).
    The Owner is itself one tracked child of its Context, so a forgotten one shows in ``ctx.live_children``
    (the leak list) and is released by ``ctx.destroy()``.
    """

    def __init__(self, ctx: Context, name: str):
        self.ctx, self.name = ctx, name
        self._items: list[Callable[[], None]] = []
        self._key = ctx.track(name, self._release)

    def own(self, obj):
        self._items.append(obj.destroy)
        return obj

    def add(self, destroy: Callable, handle):
        self._items.append(lambda: destroy(self.ctx.device, handle, None))
        return handle

    def _release(self) -> None:
        while self._items:
            self._items.pop()()

    def destroy(self) -> None:
        if self._key is not None:
            self._release()
            self.ctx.untrack(self._key)
            self._key = None
