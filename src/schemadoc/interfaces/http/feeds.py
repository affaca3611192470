"""A live feed of one document's versions, read from its journal: what the REST door streams as SSE.

A feed first replays every journal entry after a version, then follows new commits as the
service publishes them, so a client that remembers the last version it saw (the SSE
``Last-Event-ID``) can reconnect and misses nothing and sees nothing twice:

1. subscribe to the service *before* reading the journal, so no commit falls between the two;
2. replay the journal after the start version, page by page, remembering the last version sent;
3. then take the queued change events in order, dropping those at or below the last version sent
   (they were in the replay) and reading the journal again on a gap (a commit by another process
   sharing the storage directory, or one that landed while the journal was being read).

The service calls listeners in the writer's thread; the :class:`_Inbox` only hands each event to
the event loop (``loop.call_soon_threadsafe``) and never blocks the writer.

Back-pressure: what one reader can make the server hold is bounded in bytes (``buffer_bytes``, the
``subscriber_buffer_bytes`` setting). While the feed follows, unread events queue, each charged the
size the service measured for its journal entry (:attr:`ChangeEvent.size`, never a serialisation);
a reader that leaves more than ``buffer_bytes`` unread is cut off: its queue is dropped at once
(even while the stream's send waits on a full socket) and the feed ends with a
``subscriber-too-slow`` error event whose ``details.last_version`` is the last version it was sent,
so that ``Last-Event-ID`` (or the change feed) resumes it without a gap. While the feed catches up
from the journal, a queue over ``buffer_bytes`` is dropped and the journal read further instead,
and each page holds at most ``buffer_bytes`` of journal lines (and one entry however big), as the
store reads them.

A deleted document keeps its feed open (an undelete may follow, and arrives as a version); a
purge ends it with a ``purged`` event. When the server stops (``stopping``,
:mod:`~schemadoc.interfaces.http.shutdown`), the feed ends with a ``shutting-down`` error event whose
``details.last_version`` is the last version it sent, and a ``retry_ms`` hint. Nothing here knows
HTTP: the REST door encodes :class:`FeedEvent` as Server-Sent Events.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import deque
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from typing import Any, Final, Protocol

import anyio

from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.http.request_context import error_object
from schemadoc.interfaces.http.subscribers import SUBSCRIBER_BUFFER_BYTES
from schemadoc.operations import results
from schemadoc.ops.journal import JournalEntry
from schemadoc.service import ChangeEvent, DocumentService, HistoryPage
from schemadoc.service.checks import LARGEST_INTEGER, check_int

__all__ = [
    "HEARTBEAT_SECONDS",
    "STOPPED",
    "TOO_SLOW",
    "FeedEvent",
    "StopNotice",
    "document_events",
    "start_version",
    "stopped",
    "too_slow",
]

log = logging.getLogger("schemadoc.feeds")

HEARTBEAT_SECONDS: Final = 15.0
"""An idle feed sends a heartbeat this often (keeps proxies from closing the connection)."""

_PAGE_SIZE: Final = 1000


@dataclass(frozen=True)
class FeedEvent:
    """One item of a feed.

    ``kind`` is ``"version"`` (``body`` is the journal entry of ``version``, ``data`` the body encoded when
    the feed was given an encoder), ``"purged"`` (``body`` is the purge result; the feed ends), ``"error"``
    (``body`` is the error object; the feed ends) or ``"heartbeat"`` (no body).
    """

    kind: str
    version: int | None = None
    body: Any = None
    data: bytes | None = None
    retry_ms: int | None = None  # how long a client waits before it reconnects (the server stops)


class StopNotice(Protocol):
    """What a feed needs of the server's stop (:class:`~schemadoc.interfaces.http.shutdown.Stopping`)."""

    def listen(self, callback: Callable[[], None]) -> Callable[[], None]: ...


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


class _Inbox:
    """Change events of one document, handed from writer threads to the event loop, bounded in bytes.

    Events queue, each charged its :attr:`ChangeEvent.size`. Past ``max_bytes`` (and more than one
    event) the queue is emptied at once: while the feed follows (``following``), the reader is cut off
    (``too_slow``); while it catches up from the journal, the journal serves as the backlog (``missed``
    keeps the highest version dropped). A purge is remembered apart (``purge``).
    """

    def __init__(self, doc_id: str, loop: asyncio.AbstractEventLoop, max_bytes: int) -> None:
        self.doc_id = doc_id
        self.loop = loop
        self.max_bytes = max_bytes
        self.pending: deque[ChangeEvent] = deque()
        self.pending_bytes = 0
        self.following = False
        self.missed = 0
        self.too_slow = False
        self.purge: ChangeEvent | None = None
        self.stopped = False
        self.wake = asyncio.Event()

    def stop(self) -> None:
        """The server stops (on the event loop): the feed ends after the event it is sending."""
        self.stopped = True
        self.wake.set()

    def catch_up(self) -> None:
        """The journal is read from here: what is queued is dropped (the journal has it)."""
        self.following = False
        self.pending.clear()
        self.pending_bytes = 0

    def listener(self, event: ChangeEvent) -> None:
        """The service listener (the writer's thread): hand the event on, never block."""
        if event.doc_id != self.doc_id:
            return
        with contextlib.suppress(RuntimeError):  # a closed loop: nobody is reading any more
            self.loop.call_soon_threadsafe(self._put, event)

    def _put(self, event: ChangeEvent) -> None:
        if event.kind == "purged":
            self.purge = event
        if self.too_slow:
            return
        self.pending.append(event)
        self.pending_bytes += event.size
        if self.pending_bytes > self.max_bytes and len(self.pending) > 1:
            # dropped now, even while the stream's send waits on a full socket
            self.missed = max(self.missed, self.pending[-1].version)
            self.pending.clear()
            self.pending_bytes = 0
            if self.following:
                log.info("feed of %s left more than %d bytes of changes unread; cutting it off", self.doc_id,
                         self.max_bytes)
                self.too_slow = True
        self.wake.set()

    async def get(self, timeout: float) -> ChangeEvent | _TooSlow | _Stopped | None:
        """The next event, :data:`TOO_SLOW` once cut off, :data:`STOPPED` once the server stops, or ``None``
        when ``timeout`` passed idle."""
        if self.stopped:
            return STOPPED
        if self.too_slow:
            return TOO_SLOW
        if not self.pending:
            self.wake.clear()
            try:
                await asyncio.wait_for(self.wake.wait(), timeout)
            except TimeoutError:
                return None
            if self.stopped:
                return STOPPED
            if self.too_slow:
                return TOO_SLOW
        event = self.pending.popleft()
        self.pending_bytes -= event.size
        return event


class _TooSlow:
    """Marker: the reader left more than its buffer unread and is cut off."""


TOO_SLOW: Final = _TooSlow()


class _Stopped:
    """Marker: the server stops."""


STOPPED: Final = _Stopped()


def stopped(doc_id: str, last_version: int, retry_ms: int) -> FeedEvent:
    """The final event of a feed when the server stops: ``shutting-down`` naming the last version sent (with the
    stream's request id, as every error event of a feed)."""
    error = SchemaDocError(
        "shutting-down", f"The server is stopping, so this stream of {doc_id} ends here; version {last_version} "
        "was the last one sent.",
        {"doc_id": doc_id, "last_version": last_version, "retry_after_seconds": max(1, retry_ms // 1000)},
        remediation=f"Reconnect with Last-Event-ID: {last_version} (to this server once it is back, or another on "
                    "the same storage) to resume without a gap.")
    return FeedEvent("error", None, error_object(error), retry_ms=retry_ms)


def too_slow(doc_id: str, last_version: int, buffer_bytes: int) -> SchemaDocError:
    """``subscriber-too-slow``: the final event of a feed whose reader fell too far behind."""
    return SchemaDocError(
        "subscriber-too-slow",
        f"This stream of {doc_id} left more than {buffer_bytes} bytes of changes unread "
        f"(subscriber_buffer_bytes), so it ends here; version {last_version} was the last one sent.",
        {"doc_id": doc_id, "last_version": last_version, "limit": "subscriber_buffer_bytes",
         "subscriber_buffer_bytes": buffer_bytes},
        remediation=f"Reconnect with Last-Event-ID: {last_version} to resume without a gap, or read "
                    f"GET /api/v1/changes from there; read the stream promptly.")


async def _history(service: DocumentService, doc_id: str, since: int, limit: int, max_bytes: int) -> HistoryPage:
    # include_deleted: a deletion committed while the stream runs is delivered as its journal entry
    return await anyio.to_thread.run_sync(
        functools.partial(service.history, doc_id, since, limit, include_deleted=True, max_bytes=max_bytes))


def _purged(event: ChangeEvent) -> FeedEvent:
    return FeedEvent("purged", None, results.PurgeResult(doc_id=event.doc_id))


async def document_events(service: DocumentService, doc_id: str, since: int, *,
                          heartbeat_seconds: float = HEARTBEAT_SECONDS,
                          buffer_bytes: int = SUBSCRIBER_BUFFER_BYTES,
                          page_size: int = _PAGE_SIZE,
                          encode: Callable[[Any], bytes] | None = None,
                          stopping: StopNotice | None = None,
                          retry_ms: int = 2000) -> AsyncGenerator[FeedEvent, None]:
    """Every version of ``doc_id`` after ``since``, then each new one as it commits, each exactly once.

    Runs on an asyncio loop. Ends after a ``purged`` or an ``error`` event (``subscriber-too-slow``
    when the reader left more than ``buffer_bytes`` of changes unread); otherwise runs until the
    consumer stops iterating (closing or cancelling it unsubscribes from the service).

    A catch-up page holds at most ``page_size`` entries and ``buffer_bytes`` of journal lines (at least
    one entry). ``encode``: when given, each version event also carries its body encoded (``data``).
    ``stopping``: the server's stop, which ends the feed with :func:`stopped` (``retry_ms`` its hint).
    """
    inbox = _Inbox(doc_id, asyncio.get_running_loop(), buffer_bytes)
    unsubscribe = service.subscribe(inbox.listener)  # before the journal is read: no gap
    unlisten = stopping.listen(inbox.stop) if stopping is not None else None
    last = since

    def version_event(entry: JournalEntry) -> FeedEvent:
        body = results.journal_entry_body(entry)
        return FeedEvent("version", entry.version, body, None if encode is None else encode(body))

    try:
        while True:
            # catch up from the journal, page by page (commits landing meanwhile queue)
            inbox.catch_up()
            while True:
                try:
                    page = await _history(service, doc_id, last, page_size, buffer_bytes)
                except SchemaDocError as error:
                    yield (_purged(inbox.purge) if inbox.purge is not None
                           else FeedEvent("error", None, error_object(error)))
                    return
                entries = deque(page.entries)
                page.entries.clear()  # each entry is freed once sent
                if not entries:
                    break
                while entries:
                    if inbox.stopped:
                        yield stopped(doc_id, last, retry_ms)
                        return
                    entry = entries.popleft()
                    if entry.version > last:
                        last = entry.version
                        yield version_event(entry)
                    del entry
                if last >= page.current_version:
                    break
            inbox.following = True
            if inbox.missed > last:
                continue  # commits dropped from the queue while catching up: the journal has them
            while True:
                item = await inbox.get(heartbeat_seconds)
                if item is None:
                    yield HEARTBEAT
                elif isinstance(item, _Stopped):
                    yield stopped(doc_id, last, retry_ms)
                    return
                elif isinstance(item, _TooSlow):
                    yield FeedEvent("error", None, error_object(too_slow(doc_id, last, buffer_bytes)))
                    return
                elif item.kind == "purged":
                    yield _purged(item)
                    return
                elif item.version <= last:
                    continue  # already sent from the journal
                elif item.version == last + 1 and item.entry is not None:
                    last = item.version
                    yield version_event(item.entry)
                else:
                    break  # a gap: a commit by another process; the journal has it
    finally:
        unsubscribe()
        if unlisten is not None:
            unlisten()
