"""A live feed of one document's versions, read from its journal: what the REST door streams as SSE.

A feed first replays every journal entry after a version, then follows new commits as the
service publishes them, so a client that remembers the last version it saw (the SSE
``Last-Event-ID``) can reconnect and misses nothing and sees nothing twice:

1. subscribe to the service *before* reading the journal, so no commit falls between the two;
2. replay the journal after the start version, page by page, remembering the last version sent;
3. then take the queued change events in order, dropping those at or below the last version sent
   (they were in the replay) and reading the journal again on a gap (a commit by another process
   sharing the storage directory, or events dropped because the client fell far behind).

The service calls listeners in the writer's thread; the :class:`_Inbox` only hands each event to
the event loop (``loop.call_soon_threadsafe``) and never blocks the writer. Its queue is bounded:
past ``max_pending`` unread events it is emptied and the journal serves as the backlog.

A deleted document keeps its feed open (an undelete may follow, and arrives as a version); a
purge ends it with a ``purged`` event. Nothing here knows HTTP: the REST door encodes
:class:`FeedEvent` as Server-Sent Events.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import deque
from collections.abc import AsyncGenerator
from dataclasses import dataclass
from typing import Any, Final

import anyio

from schemadoc.errors import SchemaDocError
from schemadoc.operations import results
from schemadoc.service import ChangeEvent, DocumentService, HistoryPage
from schemadoc.service.checks import LARGEST_INTEGER, check_int

__all__ = [
    "HEARTBEAT_SECONDS",
    "MAX_PENDING_EVENTS",
    "FeedEvent",
    "document_events",
    "start_version",
]

log = logging.getLogger("schemadoc.feeds")

HEARTBEAT_SECONDS: Final = 15.0
"""An idle feed sends a heartbeat this often (keeps proxies from closing the connection)."""

MAX_PENDING_EVENTS: Final = 10_000
"""Unread change events kept per feed; beyond this the journal is read instead."""

_PAGE_SIZE: Final = 1000


@dataclass(frozen=True)
class FeedEvent:
    """One item of a feed.

    ``kind`` is ``"version"`` (``body`` is the journal entry of ``version``), ``"purged"``
    (``body`` is the purge result; the feed ends), ``"error"`` (``body`` is the error object;
    the feed ends) or ``"heartbeat"`` (no body).
    """

    kind: str
    version: int | None = None
    body: Any = None


HEARTBEAT: Final = FeedEvent("heartbeat")


def start_version(service: DocumentService, doc_id: str, since: int | None, last_event_id: str | None) -> int:
    """The version a feed starts after: ``Last-Event-ID`` wins over ``since``; neither means "from now".

    Runs in a worker thread before the stream starts, so its errors are ordinary error responses:
    ``invalid-doc-id``, ``document-not-found`` (also for a deleted document, ``details.deleted``),
    ``invalid-request`` naming the argument, ``version-not-found`` for a version the document has
    not reached.
    """
    current = service.version_of(doc_id)
    argument = "since"
    if since is not None:
        check_int(argument, since, 0, None)
    if last_event_id is not None and last_event_id.strip():
        argument = "Last-Event-ID"
        text = last_event_id.strip()
        # int() of more than 4,300 digits fails: the length is checked first
        digits = text.lstrip("0") or "0"
        if not (text.isascii() and text.isdigit()) or len(digits) > len(str(LARGEST_INTEGER)) \
                or int(digits) > LARGEST_INTEGER:
            shown = last_event_id if len(last_event_id) <= 100 else last_event_id[:100] + "…"
            raise SchemaDocError(
                "invalid-request", f"Last-Event-ID must be the version of the last event seen, got {shown!r}.",
                {"argument": argument, "value": shown})
        start = int(digits)
    elif since is not None:
        start = since
    else:
        return current
    if start > current:
        raise SchemaDocError(
            "version-not-found",
            f"Document {doc_id} is at version {current}; there is no version {start} to follow from.",
            {"doc_id": doc_id, "version": start, "latest_version": current, "argument": argument},
            remediation="Start from a version you have seen (ETag, or the id of the last event), or 0 for the "
                        "whole history.")
    return start


class _Overflow:
    """Marker: events were dropped because the reader fell behind."""


class _Inbox:
    """Change events of one document, handed from writer threads to the event loop."""

    def __init__(self, doc_id: str, loop: asyncio.AbstractEventLoop, max_pending: int) -> None:
        self.doc_id = doc_id
        self.loop = loop
        self.max_pending = max_pending
        self.pending: deque[ChangeEvent | _Overflow] = deque()
        self.wake = asyncio.Event()

    def listener(self, event: ChangeEvent) -> None:
        """The service listener (the writer's thread): hand the event on, never block."""
        if event.doc_id != self.doc_id:
            return
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is reading any more
            self.loop.call_soon_threadsafe(self._put, event)

    def _put(self, event: ChangeEvent) -> None:
        if len(self.pending) >= self.max_pending:
            log.info("feed of %s fell %d events behind; reading the journal instead", self.doc_id, self.max_pending)
            self.pending.clear()
            self.pending.append(_Overflow())
        self.pending.append(event)
        self.wake.set()

    async def get(self, timeout: float) -> ChangeEvent | _Overflow | None:
        """The next event, an :class:`_Overflow` after a drop, or ``None`` when ``timeout`` passed idle."""
        if not self.pending:
            self.wake.clear()
            try:
                await asyncio.wait_for(self.wake.wait(), timeout)
            except TimeoutError:
                return None
        return self.pending.popleft()

    def purge_pending(self) -> ChangeEvent | None:
        return next((event for event in self.pending if isinstance(event, ChangeEvent) and event.kind == "purged"),
                    None)


async def _history(service: DocumentService, doc_id: str, since: int, limit: int) -> HistoryPage:
    # include_deleted: a deletion committed while the stream runs is delivered as its journal entry
    return await anyio.to_thread.run_sync(
        functools.partial(service.history, doc_id, since, limit, include_deleted=True))


def _purged(event: ChangeEvent) -> FeedEvent:
    return FeedEvent("purged", None, results.PurgeResult(doc_id=event.doc_id))


async def document_events(service: DocumentService, doc_id: str, since: int, *,
                          heartbeat_seconds: float = HEARTBEAT_SECONDS,
                          max_pending: int = MAX_PENDING_EVENTS,
                          page_size: int = _PAGE_SIZE) -> AsyncGenerator[FeedEvent, None]:
    """Every version of ``doc_id`` after ``since``, then each new one as it commits, each exactly once.

    Runs on an asyncio loop. Ends after a ``purged`` or an ``error`` event; otherwise runs until
    the consumer stops iterating (closing or cancelling it unsubscribes from the service).
    """
    inbox = _Inbox(doc_id, asyncio.get_running_loop(), max_pending)
    unsubscribe = service.subscribe(inbox.listener)  # before the journal is read: no gap
    last = since
    catch_up = True
    try:
        while True:
            if catch_up:
                try:
                    page = await _history(service, doc_id, last, page_size)
                except SchemaDocError as error:
                    purge = inbox.purge_pending()
                    yield _purged(purge) if purge is not None else FeedEvent("error", None, error.to_dict())
                    return
                for entry in page.entries:
                    if entry.version > last:
                        last = entry.version
                        yield FeedEvent("version", entry.version, results.journal_entry_body(entry))
                catch_up = page.has_more and bool(page.entries)
                continue
            item = await inbox.get(heartbeat_seconds)
            if item is None:
                yield HEARTBEAT
            elif isinstance(item, _Overflow):
                catch_up = True
            elif item.kind == "purged":
                yield _purged(item)
                return
            elif item.version <= last:
                continue  # already sent from the journal
            elif item.version == last + 1 and item.entry is not None:
                last = item.version
                yield FeedEvent("version", item.version, results.journal_entry_body(item.entry))
            else:
                catch_up = True  # a gap: a commit by another process, or dropped events; the journal has it
    finally:
        unsubscribe()
