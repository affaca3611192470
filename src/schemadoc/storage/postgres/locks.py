"""Write locks of the PostgreSQL store: session advisory locks on a pooled connection, held for a ``with`` block.

Everything the holding thread does to that document inside the block uses the same connection
(:meth:`WriteLocks.held`). A session that holds a document's lock also holds the writers' lock
(shared), which the change feed reads (:mod:`~schemadoc.storage.postgres.feed`). A dead
server's locks go with its connections.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import psycopg

from schemadoc.storage.base import lock_timeout
from schemadoc.storage.postgres.statements import lock_key

if TYPE_CHECKING:
    from schemadoc.storage.postgres.store import PostgresDocumentStore

__all__ = ["Held", "WriteLocks"]


@dataclass
class Held:
    connection: psycopg.Connection[Any]
    depth: int


class WriteLocks:
    """The write locks of one store, per thread."""

    def __init__(self, store: PostgresDocumentStore, writer_key: tuple[int, int]) -> None:
        self.store = store
        self._writer_key = writer_key
        self._held = threading.local()

    def held(self) -> dict[str, Held]:
        """The locks this thread holds: doc_id -> the connection holding it, and how deeply."""
        held: dict[str, Held] | None = getattr(self._held, "locks", None)
        if held is None:
            held = self._held.locks = {}
        return held

    @contextmanager
    def hold(self, doc_id: str, timeout: float) -> Iterator[None]:
        """Hold ``doc_id``'s lock for the block (re-entrant in one thread); ``lock-timeout`` after ``timeout``."""
        held = self.held()
        mine = held.get(doc_id)
        if mine is not None:
            mine.depth += 1
            try:
                yield
            finally:
                mine.depth -= 1
            return
        key = lock_key(self.store.schema, doc_id)
        started = time.monotonic()
        with self.store._connection(None, timeout=max(timeout, 0.5)) as conn:
            left = max(timeout - (time.monotonic() - started), 0.0)
            self._acquire(conn, doc_id, key, timeout, left)
            held[doc_id] = Held(conn, 1)
            try:
                yield
            finally:
                del held[doc_id]
                with contextlib.suppress(psycopg.Error):  # a lost connection has lost its locks too
                    conn.execute("SELECT pg_advisory_unlock(%s, %s), pg_advisory_unlock_shared(%s, %s)",
                                 (*key, *self._writer_key))

    def _acquire(self, conn: psycopg.Connection[Any], doc_id: str, key: tuple[int, int], timeout: float,
                 left: float) -> None:
        try:
            if left <= 0:
                row = conn.execute("SELECT pg_try_advisory_lock(%s, %s)", key).fetchone()
                if not (row and row[0]):
                    raise lock_timeout(doc_id, timeout)
                conn.execute("SELECT pg_advisory_lock_shared(%s, %s)", self._writer_key)
                return
            # left to right: the document's lock, then the writers' shared lock (never waits)
            conn.execute("SELECT set_config('lock_timeout', %s, false), pg_advisory_lock(%s, %s), "
                         "pg_advisory_lock_shared(%s, %s)", (f"{max(int(left * 1000), 1)}ms", *key,
                                                             *self._writer_key))
        except psycopg.errors.LockNotAvailable:
            raise lock_timeout(doc_id, timeout) from None
        except psycopg.Error as error:
            raise self.store._failed(error, doc_id, write=True, conn=conn) from None
