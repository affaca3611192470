"""The cursor order of the cross-document change feed in one process (a shared store orders its own)."""

from __future__ import annotations

import bisect
import itertools
import threading
import time

from schemadoc.service.models import Change, ChangesPage

__all__ = ["ChangeFeed"]


class ChangeFeed:
    """Cursor order for the cross-document feed.

    Each commit reserves a cursor (a hybrid clock: microseconds since the epoch, strictly
    increasing in this process) before it is journaled; the cursor travels in the journal entry
    (``info.seq``), so the feed can be rebuilt from the journals after a restart. Readers only
    see cursors below the lowest one still being committed (the watermark), so a slow commit
    can never be skipped by a client that already moved past a faster one.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0
        self._inflight: set[int] = set()
        self._changes: list[Change] | None = None

    def reserve(self) -> int:
        with self._lock:
            self._last = max(self._last + 1, time.time_ns() // 1000)
            self._inflight.add(self._last)
            return self._last

    def settle(self, cursor: int, change: Change | None) -> None:
        """The commit holding ``cursor`` finished (``change``) or failed (``None``)."""
        with self._lock:
            self._inflight.discard(cursor)
            if change is not None and self._changes is not None:
                bisect.insort(self._changes, change, key=lambda c: c.cursor)

    def loaded(self) -> bool:
        return self._changes is not None

    def load(self, changes: list[Change]) -> None:
        with self._lock:
            if self._changes is None:
                known = sorted(changes, key=lambda c: c.cursor)
                self._changes = known
                if known:
                    self._last = max(self._last, known[-1].cursor)

    def read(self, since: int, limit: int) -> ChangesPage:
        with self._lock:
            assert self._changes is not None
            watermark = min(self._inflight) if self._inflight else None
            start = bisect.bisect_right(self._changes, since, key=lambda c: c.cursor)
            visible = itertools.takewhile(lambda c: watermark is None or c.cursor < watermark,
                                          itertools.islice(self._changes, start, None))
            page = list(itertools.islice(visible, limit))
            return ChangesPage(page, page[-1].cursor if page else since)
