"""``UploadQueue``: uploads (copies from staging buffers vkmorph made) waiting to be recorded into a command buffer.

A Context holds one. Borrowed contexts queue every upload until the host's next command buffer; owned contexts
queue them only inside ``Context.batched_uploads`` (``batching``). This module only keeps the list: recording,
serials and submitting stay with the Context (``Context.record_pending``, ``Context.submit_and_wait``).
"""

from __future__ import annotations

from collections.abc import Callable

# (record(cb), name, release(), target): what to record, what it is, how to free its staging, what it fills
Upload = tuple[Callable[[object], None], str, Callable[[], None], object]


class UploadQueue:
    def __init__(self) -> None:
        self._pending: list[Upload] = []
        self.batching = False       # owned contexts inside batched_uploads(): uploads wait here too

    def __bool__(self) -> bool:
        return bool(self._pending)

    def add(self, record: Callable[[object], None], name: str, release: Callable[[], None],
            target: object = None) -> None:
        self._pending.append((record, name, release, target))

    def cancel(self, target: object) -> None:
        """Drop queued uploads into ``target``, calling their ``release`` (freeing their staging)."""
        keep = []
        for p in self._pending:
            if p[3] is target:
                p[2]()
            else:
                keep.append(p)
        self._pending = keep

    def take(self) -> list[Upload]:
        """Everything queued, in order; the queue is empty afterwards."""
        pending, self._pending = self._pending, []
        return pending

    def clear(self) -> None:
        """Forget everything queued without releasing it (the Context is being destroyed)."""
        self._pending.clear()
