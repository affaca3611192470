"""The change feed across processes: commits in order of their transaction ids, held back at the oldest
commit of this store still running, so that no reader's cursor ever moves past a commit that lands late.

Every writing session holds the writers' lock (a shared advisory lock) from before its commit has
a transaction id until after it; a running transaction whose session lacks it (another
application or database, autovacuum) does not hold the feed back.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

import psycopg
from psycopg import sql

from schemadoc.storage.base import StoredChange

if TYPE_CHECKING:
    from schemadoc.storage.postgres.store import PostgresDocumentStore

__all__ = ["CHANGES", "POSITION", "PURGES", "Feed"]

HORIZON_CTES: Final = """
WITH snapshot AS (SELECT pg_current_snapshot() AS s),
writers AS (  -- sessions of this store that may be committing: they hold the writers' lock (shared)
    SELECT pid FROM pg_locks
    WHERE locktype = 'advisory' AND objsubid = 2 AND classid::bigint = (%(k1)s::bigint & 4294967295)
        AND objid::bigint = (%(k2)s::bigint & 4294967295)
        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())),
others AS (  -- transactions still running now that are provably not commits of this store
    SELECT transactionid::text::bigint AS xid FROM pg_locks
    WHERE locktype = 'transactionid' AND mode = 'ExclusiveLock' AND granted
        AND pid NOT IN (SELECT pid FROM writers)),
horizon AS (  -- the oldest transaction, running when the snapshot was taken, that may be one of ours
    SELECT min(running) AS xid FROM snapshot, pg_snapshot_xip(snapshot.s) AS running
    WHERE (running::text::bigint %% 4294967296) NOT IN (SELECT xid FROM others))
"""

CHANGES: Final = HORIZON_CTES + """SELECT txid::text::bigint, doc_id, version, op, at FROM {journal}, horizon
WHERE txid > %(since)s::text::xid8 AND (horizon.xid IS NULL OR txid < horizon.xid)
ORDER BY txid, doc_id, version LIMIT %(limit)s
"""
"""The change feed after a cursor, held back at the oldest commit of this store still running.

Visible journal rows all belong to finished transactions; a commit running when the snapshot was
taken is invisible, and a reader that moved past a later one would skip it once it lands. So rows
are shown only below the oldest transaction in the snapshot's running set that may be a commit of
this store: every store session takes the writers' lock (shared) before its commit has a
transaction id and keeps it until after the commit, so a running transaction whose session does
not hold it is not ours and does not hold the feed back (other databases, other applications,
autovacuum). A transaction that finished between the snapshot and the look at ``pg_locks`` is
counted as ours: that only delays the feed by one read."""

POSITION: Final = HORIZON_CTES + """
SELECT coalesce((SELECT xid FROM horizon), pg_snapshot_xmax(snapshot.s))::text::bigint - 1 FROM snapshot
"""
"""The feed's position now: every commit of this store with a cursor at or below it has finished
(the horizon of :data:`CHANGES`, or the next transaction id when none of ours is running)."""

PURGES: Final = HORIZON_CTES + """SELECT txid::text::bigint, doc_id, version FROM {purges}, horizon
WHERE txid > %(since)s::text::xid8 AND (horizon.xid IS NULL OR txid < horizon.xid)
ORDER BY txid, doc_id
"""
"""Purges after a cursor, held back like the change feed (a purge holds the writers' lock too)."""


class Feed:
    """The change feed of one store (its SQL bound to the store's tables and writers' lock)."""

    def __init__(self, store: PostgresDocumentStore, writer_key: tuple[int, int]) -> None:
        self.store = store
        self._keys = {"k1": writer_key[0], "k2": writer_key[1]}
        self._changes_sql = sql.SQL(CHANGES).format(journal=store._q["journal"])
        self._position_sql = sql.SQL(POSITION)
        self._purges_sql = sql.SQL(PURGES).format(purges=store._q["purges"])

    def changes(self, since: int, limit: int) -> list[StoredChange]:
        """Committed versions of every document after cursor ``since``, oldest first, at most ``limit``."""
        try:
            with self.store._connection(None) as conn:
                rows = conn.execute(self._changes_sql, {"since": str(since), "limit": limit, **self._keys}).fetchall()
        except psycopg.Error as error:
            raise self.store._failed(error, None, write=False) from None
        return [StoredChange(*row) for row in rows]

    def purges(self, since: int) -> list[tuple[int, str, int]]:
        """Purges after feed cursor ``since``, held back like the feed: (cursor, doc_id, last version)."""
        try:
            with self.store._connection(None) as conn:
                rows = conn.execute(self._purges_sql, {"since": str(since), **self._keys}).fetchall()
        except psycopg.Error as error:
            raise self.store._failed(error, None, write=False) from None
        return [(int(txid), str(doc_id), int(version)) for txid, doc_id, version in rows]

    def position(self, conn: psycopg.Connection[Any]) -> int:
        """The feed position now (:data:`POSITION`), on ``conn``."""
        row = conn.execute(self._position_sql, self._keys).fetchone()
        assert row is not None
        return int(row[0])
