"""Commits and purges of other processes, heard by ``LISTEN``/``NOTIFY`` and caught up on after a reconnect.

Every commit sends a notification on the store's channel (:func:`channel_name`: within
PostgreSQL's 63 bytes whatever the schema's name) right after it. :class:`Listener` runs one thread
with one connection doing ``LISTEN`` (:meth:`Listener._listen`), and tells the store's
:class:`~.current.CurrentMetas` what it heard and whether it is listening.

The listener reaches the store only through :class:`ListenerSource`, what the store hands it: the
channel, the store's origin, a new listening connection, the feed's position, the change feed and
the purges. It imports nothing of the store.
"""

from __future__ import annotations

import hashlib
import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

import orjson
import psycopg
from psycopg import sql

from schemadoc.errors import SchemaDocError
from schemadoc.storage.postgres.current import CurrentMetas
from schemadoc.storage.postgres.statements import KINDS
from schemadoc.storage.shared import StoredChange, StoreNotice

__all__ = ["META_CHANGED", "Listener", "ListenerSource", "channel_name", "notice_payload"]

log = logging.getLogger("schemadoc.storage.postgres")

_LISTEN_POLL_SECONDS: Final = 1.0
_MARK_MARGIN_SECONDS: Final = 2.0  # a feed position becomes the listener's mark this long after it was taken
_CATCH_UP_PAGE: Final = 1000
_RECONNECT_MAX_SECONDS: Final = 1.0  # the listener's reconnect delay doubles up to this
_CHANNEL_BYTES: Final = 63  # PostgreSQL names (and NOTIFY channels) are at most 63 bytes


def channel_name(schema: str) -> str:
    """The NOTIFY channel of a schema: ``schemadoc:NAME``, or, when that is over 63 bytes (a long or non-ASCII
    name), ``schemadoc:`` and a SHA-256 digest of the name (a cut would split a character or merge names)."""
    plain = f"schemadoc:{schema}"
    if len(plain.encode()) <= _CHANNEL_BYTES:
        return plain
    return f"schemadoc:{hashlib.sha256(schema.encode()).hexdigest()[:40]}"


META_CHANGED: Final = "meta"
"""The kind of a notification that a document's verdict or snapshot changed without a new version: it only
makes other processes read the meta again (:class:`~.current.CurrentMetas`); no watcher hears it."""


def notice_payload(origin: str, doc_id: str, version: int, kind: str) -> str:
    return orjson.dumps({"origin": origin, "doc_id": doc_id, "version": version, "kind": kind}).decode()


@dataclass(frozen=True)
class ListenerSource:
    """What a :class:`Listener` needs of the store it serves, and nothing more."""

    channel: str
    """The ``NOTIFY`` channel (:func:`channel_name`)."""
    origin: str
    """The store's origin: notifications carrying it are this process's own."""
    connect: Callable[[], psycopg.Connection[Any]]
    """A new connection for the listening thread (autocommit)."""
    position: Callable[[psycopg.Connection[Any]], int]
    """The feed position now, read on the given connection (:data:`~.statements.POSITION`)."""
    changes: Callable[[int, int], list[StoredChange]]
    """The change feed after a cursor, at most so many (``SharedStore.read_changes``)."""
    purges: Callable[[int], list[tuple[int, str, int]]]
    """Purges after a cursor, held back like the feed: (cursor, doc_id, last version)."""
    scrub: Callable[[BaseException], str]
    """An error's message without secrets (for the log)."""
    current: CurrentMetas
    """The metas known current, told what the listener hears and whether it listens."""


class Listener:
    """The listening thread of one store, its mark, and this process's commits the mark has not passed."""

    def __init__(self, source: ListenerSource) -> None:
        self.source = source
        self._watchers: list[Callable[[StoreNotice], None]] = []
        self._watch_guard = threading.Lock()
        self._thread: threading.Thread | None = None
        self.closing = threading.Event()
        # this process's commits whose feed cursor the listener has not passed yet: (doc_id, version)
        # -> cursor (None while committing); a catch-up after a reconnect skips them, as _dispatch does
        self._own: dict[tuple[str, int], int | None] = {}
        self._own_guard = threading.Lock()
        self._mark: int | None = None  # a feed cursor: every commit at or below it was announced

    def watch(self, listener: Callable[[StoreNotice], None]) -> Callable[[], None]:
        """See :meth:`PostgresDocumentStore.watch`."""
        with self._watch_guard:
            self._watchers.append(listener)
            if self._thread is None:
                self._mark = None
                ready = threading.Event()
                self._thread = threading.Thread(target=self._listen, args=(ready,), daemon=True,
                                                name="schemadoc-listen")
                self._thread.start()
                ready.wait(10)

        def stop() -> None:
            with self._watch_guard:
                if listener in self._watchers:
                    self._watchers.remove(listener)

        return stop

    def close(self) -> None:
        self.closing.set()
        with self._watch_guard:
            thread, self._thread = self._thread, None
            self._watchers.clear()
        if thread is not None:
            thread.join(5)

    @contextmanager
    def own_commit(self, doc_id: str, version: int) -> Iterator[list[int]]:
        """Remember a commit (``version`` 0: a purge) of this process, from before it starts (so a
        catch-up never mistakes it for another process's) to after the listener's mark passed its
        cursor, which the block appends to the list it is given once the commit succeeded."""
        key = (doc_id, version)
        cursor: list[int] = []
        if self._thread is None:  # nobody listens, so there is no catch-up to skip it in
            yield cursor
            return
        with self._own_guard:
            self._own[key] = None
        try:
            yield cursor
        finally:
            with self._own_guard:
                if cursor:
                    self._own[key] = cursor[0]
                else:
                    self._own.pop(key, None)

    def _listen(self, ready: threading.Event) -> None:
        """Listen, dispatch, and after each reconnect announce what was committed while disconnected.

        The listener keeps a *mark*: a feed cursor such that every commit at or below it has had
        its notification dispatched. Notifications sent while the connection was down are lost
        with it, so after a reconnect every commit above the mark is read from the change feed
        (:meth:`_catch_up`). The mark is a feed cursor, not a time: the feed
        holds back behind commits still running, so a commit that was in flight when the
        connection dropped (its transaction started before, its notification lost with the
        connection) is above the mark and found, whereas a timestamp taken before it committed
        could place it before the mark and miss it.

        The mark moves forward while connected: each poll takes the feed position *on the
        listening connection* (a round trip: every notification the server sent before the reply
        has been received, and is dispatched by the next ``notifies()``), and a position becomes
        the mark once a later round trip, at least :data:`_MARK_MARGIN_SECONDS` later,
        succeeded, by when the notifications of the commits below it have long been signalled
        to this session.
        """
        delay = 0.1
        source = self.source
        while not self.closing.is_set():
            try:
                with source.connect() as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(source.channel)))
                    position = source.position(conn)  # after LISTEN: later commits are notified here
                    if self._mark is not None:  # a reconnect: announce what was committed meanwhile
                        position = max(position, self._catch_up(self._mark))
                    self._advance(position)
                    source.current.listening()
                    ready.set()
                    delay = 0.1
                    self._follow(conn)
                source.current.lost()
            except (psycopg.Error, SchemaDocError) as error:
                source.current.lost()  # notifications sent from now until LISTEN is in force again are lost
                if self.closing.is_set():
                    return
                log.warning("listening for commits of other processes failed (%s); reconnecting",
                            source.scrub(error))
                self.closing.wait(delay)
                delay = min(delay * 2, _RECONNECT_MAX_SECONDS)

    def _follow(self, conn: psycopg.Connection[Any]) -> None:
        """Dispatch notifications until closed (or an error), moving the mark forward as it goes."""
        taken: deque[tuple[float, int]] = deque()
        while not self.closing.is_set():
            for notice in conn.notifies(timeout=_LISTEN_POLL_SECONDS):
                self._dispatch(notice.payload)
                if self.closing.is_set():
                    return
            now = time.monotonic()
            taken.append((now, self.source.position(conn)))
            while taken and taken[0][0] <= now - _MARK_MARGIN_SECONDS:
                self._advance(taken.popleft()[1])

    def _advance(self, position: int) -> None:
        """Move the mark forward to ``position`` and forget this process's commits at or below it."""
        if self._mark is not None and position <= self._mark:
            return
        self._mark = position
        with self._own_guard:
            passed = [key for key, cursor in self._own.items() if cursor is not None and cursor <= position]
            for key in passed:
                del self._own[key]

    def _catch_up(self, since: int) -> int:
        """Dispatch a notice for each document another process committed or purged after cursor ``since``.

        One notice per document committed, its newest version (feeds read the versions between
        from the journal), and one per purge (from ``purges``; a purged document has no journal
        rows left), in cursor order. Returns the cursor of the last commit read (``since`` when
        none). Purges are read after the feed, so none below that cursor can be missing.
        """
        newest: dict[str, StoredChange] = {}
        cursor = since
        while True:
            page = self.source.changes(cursor, _CATCH_UP_PAGE)
            for change in page:
                newest[change.doc_id] = change  # the feed lists each document's versions in order
            if page:
                cursor = page[-1].cursor
            if len(page) < _CATCH_UP_PAGE:
                break
        purges = self.source.purges(since)
        with self._own_guard:
            own = set(self._own)
        missed = sorted(
            [(c.cursor, StoreNotice(c.doc_id, c.version, KINDS.get(c.op, "updated")))
             for c in newest.values() if (c.doc_id, c.version) not in own] +
            [(txid, StoreNotice(doc_id, version, "purged"))
             for txid, doc_id, version in purges if (doc_id, 0) not in own],
            key=lambda pair: pair[0])
        if missed:
            log.info("announcing %d commit(s) and purge(s) of other processes made while not listening", len(missed))
        for _, notice in missed:
            self.source.current.heard(notice.doc_id, notice.version, notice.kind)
            self._deliver(notice)
        return cursor

    def _dispatch(self, payload: str) -> None:
        try:
            data = orjson.loads(payload)
            if data.get("origin") == self.source.origin:
                return  # this process published its own commit already
            notice = StoreNotice(str(data["doc_id"]), int(data["version"]), str(data["kind"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            log.warning("ignoring a malformed commit notification: %r", payload[:200])
            return
        self.source.current.heard(notice.doc_id, notice.version, notice.kind)
        if notice.kind != META_CHANGED:
            self._deliver(notice)

    def _deliver(self, notice: StoreNotice) -> None:
        with self._watch_guard:
            watchers = list(self._watchers)
        for watcher in watchers:
            try:
                watcher(notice)
            except Exception:
                log.exception("commit watcher failed for %s v%d", notice.doc_id, notice.version)
