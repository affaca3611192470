"""The SQL of the PostgreSQL store: the commit in one statement, the change feed, the meta columns, the
tables of a schema and the keys of advisory locks.

Texts use ``{documents}``, ``{journal}``, ``{snapshots}``, ``{checkpoints}``, ``{purges}`` for the
tables of a schema (:func:`tables`) and ``%(name)s`` or ``%s`` for values; nothing in them comes
from a document.

The change feed lists commits in order of their transaction ids, held back at the oldest commit
of this store still running, so that no reader's cursor ever moves past a commit that lands
late. Every writing session holds the writers' lock (a shared advisory lock) from before its
commit has a transaction id until after it; a running transaction whose session lacks it
(another application or database, autovacuum) does not hold the feed back.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

import orjson
from psycopg import sql

from schemadoc.storage.base import DocumentMeta, Verdict

__all__ = [
    "CHANGES",
    "COMMIT",
    "KINDS",
    "META_COLUMNS",
    "META_COUNT",
    "NOTIFY_AND_UNLOCK",
    "NOTIFY_AND_UNLOCK_WRITERS",
    "POSITION",
    "PURGES",
    "TABLES",
    "lock_key",
    "meta",
    "tables",
    "verdict_text",
]

TABLES: Final = ("documents", "journal", "snapshots", "checkpoints", "purges", "schema_migrations")

META_COLUMNS: Final = ("version, schema_uri, created_at, modified_at, content_size_bytes, deleted_at, "
                        "snapshot_version, schema_digest, verdict")
META_COUNT: Final = 9
"""How many columns :data:`META_COLUMNS` names."""

COMMIT: Final = """
WITH moved AS (
    UPDATE {documents} SET version = %(version)s::integer, schema_uri = %(schema_uri)s::text,
        created_at = %(created_at)s::text, modified_at = %(modified_at)s::text,
        content_size_bytes = %(size)s::bigint, deleted_at = %(deleted_at)s::text,
        snapshot_version = CASE WHEN %(inline)s::boolean THEN %(version)s::integer ELSE snapshot_version END,
        schema_digest = %(schema_digest)s::text, verdict = %(verdict)s::text
    WHERE doc_id = %(doc_id)s::text AND version = %(version)s::integer - 1
    RETURNING doc_id),
journaled AS (
    INSERT INTO {journal} (doc_id, version, op, at, actor, entry)
    SELECT doc_id, %(version)s::integer, %(op)s::text, %(at)s::text, %(actor)s::text, %(entry)s::bytea FROM moved
    RETURNING txid),
snapshot AS (
    INSERT INTO {snapshots} (doc_id, version, content)
    SELECT doc_id, %(version)s::integer, %(content)s::bytea FROM moved WHERE %(inline)s::boolean
    ON CONFLICT (doc_id, version) DO UPDATE SET content = excluded.content),
dropped AS (
    DELETE FROM {snapshots} s USING moved
    WHERE %(inline)s::boolean AND s.doc_id = moved.doc_id AND s.version <> %(version)s::integer)
SELECT (SELECT count(*) FROM moved), (SELECT txid::text::bigint FROM journaled)
"""
"""A commit in one statement (its own transaction): the documents row moves from version n-1 to n, or nothing
happens at all; then the journal row and the snapshot when given. Its notification follows in a transaction
of its own (:data:`NOTIFY_AND_UNLOCK`)."""

NOTIFY_AND_UNLOCK: Final = """
SELECT (SELECT pg_notify(%(channel)s::text, %(payload)s::text) FROM {journal}
        WHERE doc_id = %(doc_id)s::text AND version = %(version)s::integer AND sha256(entry) = %(digest)s::bytea),
    pg_advisory_unlock(%(k1)s, %(k2)s), pg_advisory_unlock_shared(%(w1)s, %(w2)s)
"""
"""After a commit, in the next transaction: its notification, when the journal holds the very line it wrote (its
SHA-256: a refused commit tells nobody, though another one made that version), and the release of the
document's lock and the writers' lock."""

NOTIFY_AND_UNLOCK_WRITERS: Final = """
SELECT (SELECT pg_notify(%(channel)s::text, %(payload)s::text) FROM {journal}
        WHERE doc_id = %(doc_id)s::text AND version = %(version)s::integer AND sha256(entry) = %(digest)s::bytea),
    pg_advisory_unlock_shared(%(w1)s, %(w2)s)
"""
"""As :data:`NOTIFY_AND_UNLOCK`, after a commit made without the document's lock (an optimistic one)."""

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

CHANGES: Final = HORIZON_CTES + """SELECT txid::text::bigint, doc_id, version, op, at, actor FROM {journal}
WHERE txid > %(since)s::text::xid8 AND txid <= (
    SELECT max(txid) FROM (
        SELECT txid FROM {journal}, horizon
        WHERE txid > %(since)s::text::xid8 AND (horizon.xid IS NULL OR txid < horizon.xid)
        ORDER BY txid LIMIT %(limit)s) AS page)
ORDER BY txid, doc_id, version
"""
"""The change feed after a cursor, held back at the oldest commit of this store still running.

Visible journal rows all belong to finished transactions; a commit running when the snapshot was
taken is invisible, and a reader that moved past a later one would skip it once it lands. So rows
are shown only below the oldest transaction in the snapshot's running set that may be a commit of
this store: every store session takes the writers' lock (shared) before its commit has a
transaction id and keeps it until after the commit, so a running transaction whose session does
not hold it is not ours and does not hold the feed back (other databases, other applications,
autovacuum). A transaction that finished between the snapshot and the look at ``pg_locks`` is
counted as ours: that only delays the feed by one read.

A page holds whole transactions: the rows of the last transaction it reaches are all in it, even
past ``limit``, because the next page starts after that transaction's cursor. A commit is one
version; only an import (``restore``) writes several versions, a whole journal, in one transaction."""

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

KINDS: Final = {"create": "created", "delete_document": "deleted", "undelete_document": "undeleted"}


def lock_key(schema: str, doc_id: str) -> tuple[int, int]:
    """The two-int advisory lock key of a document (the two-int form never meets the bigint form)."""
    digest = hashlib.sha256(f"{schema}/{doc_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big", signed=True), int.from_bytes(digest[4:8], "big", signed=True)


def meta(doc_id: str, row: tuple[Any, ...]) -> DocumentMeta:
    """The meta of a row that starts with the :data:`META_COLUMNS`."""
    verdict = None
    if row[8] is not None:
        try:
            verdict = Verdict.from_dict(orjson.loads(row[8]))
        except orjson.JSONDecodeError:
            verdict = None
    return DocumentMeta(doc_id, row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], verdict)


def verdict_text(meta: DocumentMeta) -> str | None:
    """The ``verdict`` column of ``meta``."""
    return None if meta.verdict is None else orjson.dumps(meta.verdict.to_dict()).decode()


def tables(schema: str) -> dict[str, sql.Composable]:
    """Each table of :data:`TABLES`, qualified with ``schema`` (quoted as an identifier)."""
    return {name: sql.SQL(".").join([sql.Identifier(schema), sql.Identifier(name)]) for name in TABLES}
