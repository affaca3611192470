"""The PostgreSQL store's write locks: one per document, across threads and across processes.

A write lock is first a lock of this process (so two threads never race on one document, even after
the database lock was let go early), then a session advisory lock on a pooled connection, held for the
``with`` block; everything the holding thread does to that document inside uses that connection. A
dead server's locks go with its connections. The session also holds the writers' lock (shared), which
the change feed reads (:mod:`~.statements`).

Taking the lock and reading the document's meta are one round trip (a pipeline: the meta is read by a
statement of its own, after the lock was granted, so it sees every commit before). The meta read under
the lock is what :meth:`PostgresDocumentStore.read_meta` answers inside the block. A commit lets the
database lock go in its own round trip (:meth:`WriteLocks.released_by_commit`), after its transaction ended.

A write's own lock (:meth:`WriteLocks.hold` with ``optimistic``) takes no database lock: the lock of this
process, a pooled connection, and the meta known current (no round trip) or read alone. Its commit is
conditional on the version it read (:data:`~.statements.COMMIT`), and takes the writers' lock in its own
pipeline, so a write costs one round trip; a commit another server's got ahead of is refused as
``version-conflict``, as a write with a stale version is.
"""

from __future__ import annotations

import contextlib
import select
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any, Final

import psycopg
from psycopg import sql

from schemadoc.errors import SchemaDocError
from schemadoc.storage.base import DocumentMeta, check_doc_id, lock_timeout
from schemadoc.storage.postgres.connections import Connections
from schemadoc.storage.postgres.statements import lock_key
from schemadoc.storage.postgres.statements import meta as _meta

__all__ = ["UNLOCK", "WriteLocks"]

UNLOCK: Final = "pg_advisory_unlock(%s, %s), pg_advisory_unlock_shared(%s, %s)"
"""The select list that lets a document's lock and the writers' lock go."""

Failed = Callable[[psycopg.Error, str, psycopg.Connection[Any]], SchemaDocError]


class _Held(threading.local):
    """The write locks this thread holds: doc_id -> the connection whose session holds it, and the meta read
    under it (None: no such document); the documents whose database lock a commit already let go."""

    def __init__(self) -> None:
        self.locks: dict[str, psycopg.Connection[Any]] = {}
        self.metas: dict[str, DocumentMeta | None] = {}
        self.released: set[str] = set()
        self.optimistic: set[str] = set()
        """Held without a database lock (a write's own, :meth:`WriteLocks.hold` with ``optimistic``)."""
        self.writers: set[str] = set()
        """Of those, the ones whose commit was sent with the writers' lock before it."""


def _ended_by_server(conn: psycopg.Connection[Any]) -> bool:
    """Whether an idle pooled connection was spoken to: a session that waits for nothing hears only its end (the
    server's last message, then the socket closed), so a commit sent on it would fail where nothing can tell
    whether it ran. One ``select`` with no wait; a closed connection counts as ended."""
    if conn.closed or conn.broken:
        return True
    try:
        readable, _, _ = select.select([conn.fileno()], [], [], 0)
    except (OSError, ValueError):
        return True
    return bool(readable)


class _Local:
    """This process's lock of one document, with how many threads hold or wait for it."""

    __slots__ = ("lock", "users")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.users = 0


class WriteLocks:
    """The write locks of one store (see the module docstring)."""

    def __init__(self, schema: str, connections: Connections, read_meta: sql.Composed, failed: Failed,
                 known: Callable[[str], DocumentMeta | None] = lambda doc_id: None) -> None:
        self.schema = schema
        self._known = known
        self.connections = connections
        self.writer_key = lock_key(schema, "#writers")  # held (shared) by every writing session
        self._read_meta = read_meta
        self._failed = failed
        self.held = _Held()
        self._local: dict[str, _Local] = {}
        self._guard = threading.Lock()

    def connection(self, doc_id: str | None) -> psycopg.Connection[Any] | None:
        """The connection of ``doc_id``'s lock when this thread holds it."""
        return self.held.locks.get(doc_id) if doc_id is not None else None

    def meta(self, doc_id: str) -> tuple[bool, DocumentMeta | None]:
        """Whether this thread holds ``doc_id``'s lock, and the meta read under it (None: no such document)."""
        metas = self.held.metas
        if doc_id in metas:
            return True, metas[doc_id]
        return False, None

    def committed(self, doc_id: str, meta: DocumentMeta | None) -> None:
        """This thread wrote ``meta`` under the lock (None: purged)."""
        if doc_id in self.held.metas:
            self.held.metas[doc_id] = meta

    def forget(self, doc_id: str) -> None:
        """The meta read under the lock is no longer current (a verdict was recorded): read it again."""
        self.held.metas.pop(doc_id, None)

    def unlock_params(self, doc_id: str) -> tuple[int, int, int, int]:
        return (*lock_key(self.schema, doc_id), *self.writer_key)

    def optimistic(self, doc_id: str) -> bool:
        """Whether this thread holds ``doc_id``'s lock without a database lock (its commit takes the writers')."""
        return doc_id in self.held.optimistic

    def taking_writers(self, doc_id: str) -> None:
        """An optimistic commit takes the writers' lock in its pipeline: let it go at the block's end unless the
        commit did (:meth:`released_by_commit`)."""
        self.held.writers.add(doc_id)

    def released_by_commit(self, doc_id: str) -> None:
        """The commit let the database lock go (in its pipeline): the block's end must not again."""
        self.held.released.add(doc_id)

    @contextmanager
    def hold(self, doc_id: str, timeout: float, *, optimistic: bool = False) -> Iterator[None]:
        """See :meth:`PostgresDocumentStore.write_lock` (and ``commit_lock``, ``optimistic``: no database lock)."""
        doc_id = check_doc_id(doc_id)
        held = self.held
        if doc_id in held.locks:
            yield
            return
        started = time.monotonic()
        local = self._enter(doc_id)
        try:
            got = local.lock.acquire(timeout=timeout) if timeout > 0 else local.lock.acquire(blocking=False)
            if not got:
                raise lock_timeout(doc_id, timeout)
            try:
                stack, conn, meta = self.connections.retrying(
                    lambda: self._checkout(doc_id, timeout, started, optimistic))
                with stack:
                    held.metas[doc_id] = meta
                    held.locks[doc_id] = conn
                    if optimistic:
                        held.optimistic.add(doc_id)
                    try:
                        yield
                    finally:
                        del held.locks[doc_id]
                        held.metas.pop(doc_id, None)
                        if doc_id in held.released:
                            held.released.discard(doc_id)
                        elif optimistic:
                            if doc_id in held.writers:  # a commit that failed half-way may have kept it
                                with contextlib.suppress(psycopg.Error):
                                    conn.execute("SELECT pg_advisory_unlock_shared(%s, %s)", self.writer_key)
                        else:
                            with contextlib.suppress(psycopg.Error):  # a lost connection has lost its locks too
                                conn.execute("SELECT " + UNLOCK, self.unlock_params(doc_id))
                        held.optimistic.discard(doc_id)
                        held.writers.discard(doc_id)
            finally:
                local.lock.release()
        finally:
            self._leave(doc_id, local)

    def _checkout(self, doc_id: str, timeout: float, started: float,
                  optimistic: bool = False) -> tuple[ExitStack, psycopg.Connection[Any], DocumentMeta | None]:
        """A pooled connection holding the lock, the stack that gives it back, and the meta read with the lock.
        Run through :meth:`~.connections.Connections.retrying`: after an outage nobody had noticed (the pooled
        connections died with a database that is back), the lock is taken on the reopened pool."""
        stack = ExitStack()
        try:
            conn = stack.enter_context(self.connections.connection(max(timeout, 0.5)))
            if optimistic:
                if _ended_by_server(conn):  # the database restarted unseen: found here, where it can be retried
                    try:
                        conn.execute("SELECT 1")
                    except psycopg.Error as error:
                        raise self._failed(error, doc_id, conn) from None
                return stack, conn, self._current(conn, doc_id)
            left = max(timeout - (time.monotonic() - started), 0.0)
            return stack, conn, self._acquire(conn, doc_id, timeout, left)
        except BaseException:
            stack.close()
            raise

    def _enter(self, doc_id: str) -> _Local:
        with self._guard:
            local = self._local.get(doc_id)
            if local is None:
                local = self._local[doc_id] = _Local()
            local.users += 1
            return local

    def _leave(self, doc_id: str, local: _Local) -> None:
        with self._guard:
            local.users -= 1
            if local.users == 0:
                self._local.pop(doc_id, None)

    def _current(self, conn: psycopg.Connection[Any], doc_id: str) -> DocumentMeta | None:
        """The meta known current (no round trip), else read alone."""
        known = self._known(doc_id)
        if known is not None:
            return known
        try:
            found = conn.execute(self._read_meta, (doc_id,), binary=True).fetchone()
        except psycopg.Error as error:
            raise self._failed(error, doc_id, conn) from None
        return None if found is None else _meta(doc_id, found)

    def _acquire(self, conn: psycopg.Connection[Any], doc_id: str, timeout: float,
                 left: float) -> DocumentMeta | None:
        """Take the document's lock, then the writers' lock (shared, never waits), and read the meta: one round
        trip. The meta's statement runs after the lock's, so it sees every commit made before it."""
        key = lock_key(self.schema, doc_id)
        try:
            with conn.pipeline():
                if left <= 0:
                    tried = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", key)
                else:
                    tried = None
                    conn.execute("SELECT set_config('lock_timeout', %s, false), pg_advisory_lock(%s, %s)",
                                 (f"{max(int(left * 1000), 1)}ms", *key))
                shared = conn.execute("SELECT pg_advisory_lock_shared(%s, %s)", self.writer_key)
                read = conn.execute(self._read_meta, (doc_id,), binary=True)
            if tried is not None:
                row = tried.fetchone()
                if not (row and row[0]):
                    with contextlib.suppress(psycopg.Error):
                        conn.execute("SELECT pg_advisory_unlock_shared(%s, %s)", self.writer_key)
                    raise lock_timeout(doc_id, timeout)
            del shared
            found = read.fetchone()
            return None if found is None else _meta(doc_id, found)
        except psycopg.errors.LockNotAvailable:
            raise lock_timeout(doc_id, timeout) from None
        except psycopg.Error as error:
            raise self._failed(error, doc_id, conn) from None
