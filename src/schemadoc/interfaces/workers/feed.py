"""The change feed of one worker of several on the files store (:class:`WorkersFeed`; the package's docstring)."""

from __future__ import annotations

import bisect
import itertools
import logging
import time
from collections.abc import Callable
from dataclasses import astuple
from typing import Any

from schemadoc.service.feed import ChangeFeed
from schemadoc.service.models import Change, ChangesPage

__all__ = ["TICK_SECONDS", "WorkersFeed"]

log = logging.getLogger("schemadoc")

TICK_SECONDS = 0.05
"""How often a worker tells the others its change feed's clock (they show each other's commits this much later)."""


class WorkersFeed(ChangeFeed):
    """The change feed of one worker of several on the files store: every worker's commits, and never a cursor
    passed while another worker may still deliver one below it.

    A worker's cursors are its hybrid clock's (microseconds), those equal to its number - 1 modulo the number
    of workers, so no two workers make the same one. Each settled commit goes to the other workers with the
    sender's state: its clock and the lowest cursor it still has in flight; so does a tick (at most every
    ``TICK_SECONDS``) that moves its clock to now, sent once when the worker starts and then only when
    another worker's commit arrived since it last spoke (an idle server sends nothing). A worker's future
    cursors are above its clock, and its settled commits reach the others before anything it sends later
    (one ordered channel), so another worker may show every cursor below ``min(in flight, clock + 1)`` of
    the sender's last message once it listed what came before. A worker not heard from yet (starting, or
    replacing one that ended) holds every other worker's feed back until its first tick. A lost message (a
    full channel; each carries the sender's sequence number) makes the receiver read its feed again from
    the journals.
    """

    def __init__(self, index: int, count: int, send: Callable[[list[Any]], None]) -> None:
        super().__init__()
        self.index = index
        self.count = count
        self._send = send
        self._bounds: dict[int, int | None] = {other: None for other in range(1, count + 1) if other != index}
        self._heard: dict[int, int] = {}  # sender -> the sequence number of its last message
        self._keys: set[tuple[str, int]] = set()
        self._arriving: list[Change] | None = None  # other workers' commits heard while the journals are read
        self._owed = False  # another worker's commit arrived since this one last spoke: tick

    def reserve(self) -> int:
        with self._lock:
            cursor = max(self._last + 1, time.time_ns() // 1000)
            cursor += (self.index - 1 - cursor) % self.count
            self._last = cursor
            self._inflight.add(cursor)
            return cursor

    def settle(self, cursor: int, change: Change | None) -> None:
        with self._lock:
            self._inflight.discard(cursor)
            if change is not None:
                self._insert(change)
            self._send(["s", *self._state(), None if change is None else list(astuple(change))])
            self._owed = False

    def tick(self, *, always: bool = False) -> None:
        """Move this worker's clock to now and tell the others (they may then show what is below it): when another
        worker's commit arrived since this worker last spoke (it waits for this), or ``always``."""
        with self._lock:
            if not (always or self._owed):
                return
            self._last = max(self._last, time.time_ns() // 1000)
            self._send(["t", *self._state()])
            self._owed = False

    def _state(self) -> list[int]:
        return [self._last, min(self._inflight) if self._inflight else 0]

    def _insert(self, change: Change) -> None:
        key = (change.doc_id, change.version)
        if self._changes is not None and key not in self._keys:
            self._keys.add(key)
            bisect.insort(self._changes, change, key=lambda c: c.cursor)
        elif self._changes is None and self._arriving is not None:
            self._arriving.append(change)

    def loaded(self) -> bool:
        with self._lock:
            if self._changes is None and self._arriving is None:
                self._arriving = []  # the service reads the journals now: what arrives meanwhile is kept
            return self._changes is not None

    def load(self, changes: list[Change]) -> None:
        with self._lock:
            if self._changes is not None:
                return
            known: dict[tuple[str, int], Change] = {}
            for change in [*changes, *(self._arriving or [])]:
                known.setdefault((change.doc_id, change.version), change)
            self._changes = sorted(known.values(), key=lambda c: c.cursor)
            self._keys = set(known)
            self._arriving = None
            if self._changes:
                self._last = max(self._last, self._changes[-1].cursor)

    def heard(self, sender: int, sequence: int, state: tuple[int, int] | None = None,
              change: Change | None = None) -> None:
        """Message ``sequence`` of worker ``sender``: its feed's ``state`` (clock, lowest cursor in flight or 0) and a
        commit it settled, when the message carries them."""
        with self._lock:
            if sequence != self._heard.get(sender, 0) + 1 and self._changes is not None:
                log.warning("worker %d: messages of worker %d were lost; the change feed is read again from the "
                            "journals", self.index, sender)
                self._changes = None
                self._keys = set()
            self._heard[sender] = sequence
            if state is not None:
                clock, lowest = state
                self._bounds[sender] = lowest if lowest else clock + 1
            if change is not None:
                self._insert(change)
                self._owed = True

    def ended(self, sender: int) -> None:
        """Worker ``sender`` ended: the feed waits for its replacement's first message."""
        with self._lock:
            self._heard.pop(sender, None)
            self._bounds[sender] = None

    def read(self, since: int, limit: int) -> ChangesPage:
        with self._lock:
            if self._changes is None:  # a gap dropped it since the service loaded it: the next read loads again
                return ChangesPage([], since)
            bounds = [*self._bounds.values(), *([min(self._inflight)] if self._inflight else [])]
            watermark = 0 if None in bounds else min((bound for bound in bounds if bound is not None), default=None)
            start = bisect.bisect_right(self._changes, since, key=lambda c: c.cursor)
            visible = itertools.takewhile(lambda c: watermark is None or c.cursor < watermark,
                                          itertools.islice(self._changes, start, None))
            page = list(itertools.islice(visible, limit))
            return ChangesPage(page, page[-1].cursor if page else since)
