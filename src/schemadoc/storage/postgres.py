"""A store in PostgreSQL, for several server processes (on one or many machines) on one database.

Tables (in one PostgreSQL schema, ``schemadoc`` unless the URL says ``?schema=NAME``), created
and migrated by the store itself (:data:`MIGRATIONS`, applied in order under an advisory lock,
each version once, recorded in ``schema_migrations``):

- ``documents``: one small row per document: the meta, with ``snapshot_version``;
- ``snapshots``: the snapshot of each document (its JSON bytes at ``snapshot_version``,
  ``bytea`` compressed with lz4: kept byte for byte, and measured 3 to 10 times cheaper to
  write than ``jsonb`` or ``bytea`` with the default compression, see benchmarks/postgres.py;
  read back in binary format, 4 times faster than hex text). Journal-first: a commit without content leaves it behind;
  :meth:`~PostgresDocumentStore.write_snapshot` writes a newer one beside it and then switches
  ``snapshot_version`` in a short transaction, so commits are never held up by its bytes;
- ``journal``: one row per version, primary key ``(doc_id, version)``, so two writers from one
  version can never both commit. ``entry`` is the JSON line the files store would write; ``txid``
  is the committing transaction's id, the cursor of the change feed;
- ``checkpoints``: the content of some past versions (a cache for past reads);
- ``purges``: the documents purged in the last day (id, last version, transaction id), so that
  a process whose listening connection was down hears of them after it reconnects.

A commit is one statement, so one transaction (:data:`_COMMIT`): the ``documents`` row moves
from version n-1 to n (a conditional update: another writer's commit makes it match nothing, a
``version-conflict``), the journal row is inserted (with the snapshot when the commit carries
one), and a notification is sent (delivered at commit, to every process). A process that
missed notifications while its listening connection was down reads what it missed from the
change feed and ``purges`` once it listens again (:meth:`PostgresDocumentStore.watch`).
:meth:`~PostgresDocumentStore.load` is one statement, so meta, snapshot and the journal after it
come from one consistent view without a lock.

Write locks are session advisory locks held on a connection of the pool for the ``with`` block
(released by the server when the process dies). Everything the holding thread does to that
document inside the block uses the same connection.

The change feed (:meth:`PostgresDocumentStore.read_changes`) orders commits by transaction id
and only shows transactions below the oldest one still running (``pg_snapshot_xmin``): a commit
that started earlier but lands later holds the feed back until it lands, so no reader ever skips
it. A transaction left open elsewhere on the same PostgreSQL server delays the feed (never loses
a change); ``idle_in_transaction_session_timeout`` bounds that.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import orjson
import psycopg
from psycopg import sql
from psycopg_pool import ConnectionPool, PoolTimeout

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry
from schemadoc.storage.base import (
    LOCK_TIMEOUT_SECONDS,
    DocumentMeta,
    RecoveryReport,
    StoredChange,
    StoredDocument,
    StoreNotice,
    check_doc_id,
    check_write,
    document_not_found,
    journal_line,
    keep_checkpoints,
    lock_timeout,
    version_conflict,
)

__all__ = ["DEFAULT_SCHEMA", "MIGRATIONS", "PostgresDocumentStore", "redact_url"]

log = logging.getLogger("schemadoc.storage.postgres")

DEFAULT_SCHEMA: Final = "schemadoc"
_MIGRATION_LOCK: Final = 0x5C4E_3ADC_0000_0001  # one bigint advisory key: migrations of any schema
_LISTEN_POLL_SECONDS: Final = 1.0
_MARK_MARGIN_SECONDS: Final = 2.0  # a feed position becomes the listener's mark this long after it was taken
_CATCH_UP_PAGE: Final = 1000
_PURGES_KEPT: Final = "1 day"  # how long a purge is remembered for listeners that were disconnected

MIGRATIONS: Final[list[tuple[int, str, str]]] = [
    (1, "documents, journal with its feed cursor, checkpoints", """
        CREATE TABLE {schema}.documents (
            doc_id             text PRIMARY KEY,
            version            integer NOT NULL CHECK (version >= 1),
            schema_uri         text NOT NULL,
            created_at         text NOT NULL,
            modified_at        text NOT NULL,
            content_size_bytes bigint NOT NULL,
            deleted_at         text,
            snapshot           bytea NOT NULL,
            snapshot_version   integer NOT NULL
        );
        CREATE TABLE {schema}.journal (
            doc_id  text NOT NULL,
            version integer NOT NULL,
            txid    xid8 NOT NULL DEFAULT pg_current_xact_id(),
            op      text NOT NULL,
            at      text NOT NULL,
            entry   bytea NOT NULL,
            PRIMARY KEY (doc_id, version)
        );
        CREATE INDEX journal_by_txid ON {schema}.journal (txid);
        CREATE TABLE {schema}.checkpoints (
            doc_id  text NOT NULL,
            version integer NOT NULL,
            content bytea NOT NULL,
            PRIMARY KEY (doc_id, version)
        );
    """),
    (2, "snapshots in their own table, so a lagging snapshot is written without holding up commits", """
        CREATE TABLE {schema}.snapshots (
            doc_id  text NOT NULL,
            version integer NOT NULL,
            content bytea NOT NULL,
            PRIMARY KEY (doc_id, version)
        );
        INSERT INTO {schema}.snapshots (doc_id, version, content)
            SELECT doc_id, snapshot_version, snapshot FROM {schema}.documents;
        ALTER TABLE {schema}.documents DROP COLUMN snapshot;
    """),
    (3, "snapshots, checkpoints and journal entries compressed with lz4 (pglz made a 1 MiB snapshot 6x slower)", """
        DO $$
        BEGIN
            ALTER TABLE {schema}.snapshots ALTER COLUMN content SET COMPRESSION lz4;
            ALTER TABLE {schema}.checkpoints ALTER COLUMN content SET COMPRESSION lz4;
            ALTER TABLE {schema}.journal ALTER COLUMN entry SET COMPRESSION lz4;
        EXCEPTION WHEN OTHERS THEN  -- a server built without lz4 (or before PostgreSQL 14): no compression
            ALTER TABLE {schema}.snapshots ALTER COLUMN content SET STORAGE EXTERNAL;
            ALTER TABLE {schema}.checkpoints ALTER COLUMN content SET STORAGE EXTERNAL;
        END
        $$;
    """),
    (4, "purges: recent purges, so that a process whose listening connection was down still hears of them", """
        CREATE TABLE {schema}.purges (
            doc_id    text NOT NULL,
            version   integer NOT NULL,
            txid      xid8 NOT NULL DEFAULT pg_current_xact_id(),
            purged_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (txid, doc_id)
        );
    """),
]
"""(version, what, SQL with ``{schema}``): applied in order, each once; append, never edit."""

_META_COLUMNS: Final = ("version, schema_uri, created_at, modified_at, content_size_bytes, deleted_at, "
                        "snapshot_version")

_COMMIT: Final = """
WITH moved AS (
    UPDATE {documents} SET version = %(version)s::integer, schema_uri = %(schema_uri)s::text,
        created_at = %(created_at)s::text, modified_at = %(modified_at)s::text,
        content_size_bytes = %(size)s::bigint, deleted_at = %(deleted_at)s::text,
        snapshot_version = CASE WHEN %(inline)s::boolean THEN %(version)s::integer ELSE snapshot_version END
    WHERE doc_id = %(doc_id)s::text AND version = %(version)s::integer - 1
    RETURNING doc_id),
journaled AS (
    INSERT INTO {journal} (doc_id, version, op, at, entry)
    SELECT doc_id, %(version)s::integer, %(op)s::text, %(at)s::text, %(entry)s::bytea FROM moved
    RETURNING txid),
snapshot AS (
    INSERT INTO {snapshots} (doc_id, version, content)
    SELECT doc_id, %(version)s::integer, %(content)s::bytea FROM moved WHERE %(inline)s::boolean
    ON CONFLICT (doc_id, version) DO UPDATE SET content = excluded.content),
dropped AS (
    DELETE FROM {snapshots} s USING moved
    WHERE %(inline)s::boolean AND s.doc_id = moved.doc_id AND s.version <> %(version)s::integer),
notified AS (
    SELECT pg_notify(%(channel)s::text, %(payload)s::text) FROM moved)
SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM notified),
    (SELECT txid::text::bigint FROM journaled)
"""
"""A commit in one statement (one round trip, its own transaction): the documents row moves from
version n-1 to n, or nothing happens at all; then the journal row, the snapshot when given, and
the notification (sent at commit)."""

_HORIZON_CTES: Final = """
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

_CHANGES: Final = _HORIZON_CTES + """SELECT txid::text::bigint, doc_id, version, op, at FROM {journal}, horizon
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

_POSITION: Final = _HORIZON_CTES + """
SELECT coalesce((SELECT xid FROM horizon), pg_snapshot_xmax(snapshot.s))::text::bigint - 1 FROM snapshot
"""
"""The feed's position now: every commit of this store with a cursor at or below it has finished
(the horizon of :data:`_CHANGES`, or the next transaction id when none of ours is running)."""

_PURGES: Final = _HORIZON_CTES + """SELECT txid::text::bigint, doc_id, version FROM {purges}, horizon
WHERE txid > %(since)s::text::xid8 AND (horizon.xid IS NULL OR txid < horizon.xid)
ORDER BY txid, doc_id
"""
"""Purges after a cursor, held back like the change feed (a purge holds the writers' lock too)."""

_KINDS: Final = {"create": "created", "delete_document": "deleted", "undelete_document": "undeleted"}


def redact_url(url: str) -> str:
    """``url`` without its password (for logs and messages)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{netloc[-1]}"))


def _split_schema(url: str) -> tuple[str, str | None]:
    """The connection URL without schemadoc's own ``schema`` parameter, and that parameter."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((value for key, value in query if key == "schema"), None)
    rest = [(key, value) for key, value in query if key != "schema"]
    return urlunsplit(parts._replace(query=urlencode(rest))), schema


def _lock_key(schema: str, doc_id: str) -> tuple[int, int]:
    """The two-int advisory lock key of a document (the two-int form never meets the bigint form)."""
    digest = hashlib.sha256(f"{schema}/{doc_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big", signed=True), int.from_bytes(digest[4:8], "big", signed=True)


def _meta(doc_id: str, row: tuple[Any, ...]) -> DocumentMeta:
    version, schema_uri, created_at, modified_at, size, deleted_at, snapshot_version = row[:7]
    return DocumentMeta(doc_id, version, schema_uri, created_at, modified_at, size, deleted_at, snapshot_version)


def _meta_values(meta: DocumentMeta) -> tuple[Any, ...]:
    """The values of the meta columns but ``snapshot_version`` (the store decides that one)."""
    return (meta.version, meta.schema_uri, meta.created_at, meta.modified_at, meta.content_size_bytes,
            meta.deleted_at)


@dataclass
class _Held:
    connection: psycopg.Connection[Any]
    depth: int


class PostgresDocumentStore:
    """A :class:`~schemadoc.storage.base.DocumentStore` (and change feed) in a PostgreSQL database.

    ``url`` is a libpq URL (``postgresql://user:password@host:5432/dbname``); an extra query
    parameter ``schema=NAME`` names the PostgreSQL schema that holds the tables (default
    ``schemadoc``; created when missing). Thread-safe; one instance per process.
    """

    def __init__(self, url: str, *, schema: str | None = None, pool_size: int = 16) -> None:
        self.url, from_url = _split_schema(url)
        self.schema = schema or from_url or DEFAULT_SCHEMA
        self.channel = f"schemadoc:{self.schema}"[:63]  # PostgreSQL names are at most 63 bytes
        self.origin = f"{os.getpid()}-{id(self):x}-{time.time_ns():x}"
        self._writer_key = _lock_key(self.schema, "#writers")  # held (shared) by every writing session
        self._pool_size = max(pool_size, 2)
        self._pool: ConnectionPool[psycopg.Connection[Any]] | None = None
        self._open_guard = threading.Lock()
        self._held = threading.local()
        self._watchers: list[Callable[[StoreNotice], None]] = []
        self._watch_guard = threading.Lock()
        self._listener: threading.Thread | None = None
        self._closing = threading.Event()
        # this process's commits whose feed cursor the listener has not passed yet: (doc_id, version)
        # -> cursor (None while committing); a catch-up after a reconnect skips them, as _dispatch does
        self._own: dict[tuple[str, int], int | None] = {}
        self._own_guard = threading.Lock()
        self._mark: int | None = None  # the listener's feed cursor: every commit at or below it was announced
        self._q = {name: sql.SQL(".").join([sql.Identifier(self.schema), sql.Identifier(name)])
                   for name in ("documents", "journal", "snapshots", "checkpoints", "purges", "schema_migrations")}
        self._changes_sql = sql.SQL(_CHANGES).format(journal=self._q["journal"])
        self._position_sql = sql.SQL(_POSITION)
        self._purges_sql = sql.SQL(_PURGES).format(purges=self._q["purges"])
        self._commit_sql = sql.SQL(_COMMIT).format(**{name: self._q[name] for name in
                                                      ("documents", "journal", "snapshots")})

    # -- life cycle ------------------------------------------------------------------------------

    def open(self) -> RecoveryReport:
        """Connect, create the schema and tables or migrate them; nothing to recover (transactions).

        Raises ``storage-write-failed`` (details ``{"storage_url", "reason"}``) when the database
        cannot be reached or migrated.
        """
        with self._open_guard:
            if self._pool is None:
                try:
                    with psycopg.connect(self.url, autocommit=True, **self._connect_timeout()) as conn:
                        self._migrate(conn)
                    pool: ConnectionPool[psycopg.Connection[Any]] = ConnectionPool(
                        self.url, min_size=1, max_size=self._pool_size, kwargs={"autocommit": True},
                        open=False, name=f"schemadoc-{self.schema}")
                    pool.open(wait=True, timeout=10)
                except (psycopg.Error, PoolTimeout) as error:
                    raise self._unusable(error) from None
                self._pool = pool
                self._closing.clear()
        return RecoveryReport()

    def close(self) -> None:
        """Stop listening and close every connection (the store cannot be used afterwards)."""
        self._closing.set()
        with self._watch_guard:
            listener, self._listener = self._listener, None
            self._watchers.clear()
        if listener is not None:
            listener.join(5)
        with self._open_guard:
            if self._pool is not None:
                self._pool.close()
                self._pool = None

    def migration_versions(self) -> list[int]:
        """The migration versions applied to this store's schema, in order."""
        with self._connection(None) as conn:
            rows = conn.execute(sql.SQL("SELECT version FROM {} ORDER BY version").format(
                self._q["schema_migrations"])).fetchall()
        return [row[0] for row in rows]

    def _connect_timeout(self) -> dict[str, Any]:
        """``connect_timeout`` of 10 seconds unless the URL gives one (libpq waits forever by default)."""
        given = psycopg.conninfo.conninfo_to_dict(self.url)
        return {} if "connect_timeout" in given else {"connect_timeout": 10}

    def _migrate(self, conn: psycopg.Connection[Any]) -> None:
        """Apply the migrations this schema has not had yet, one transaction, under an advisory lock."""
        schema = sql.Identifier(self.schema)
        with conn.transaction():
            conn.execute("SET LOCAL lock_timeout = 0")
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(schema))
            conn.execute(sql.SQL("CREATE TABLE IF NOT EXISTS {} (version integer PRIMARY KEY, "
                                 "description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
                         .format(self._q["schema_migrations"]))
            row = conn.execute(sql.SQL("SELECT coalesce(max(version), 0) FROM {}").format(
                self._q["schema_migrations"])).fetchone()
            applied = row[0] if row else 0
            for version, description, statements in MIGRATIONS:
                if version <= applied:
                    continue
                conn.execute(sql.SQL(statements).format(schema=schema))
                conn.execute(sql.SQL("INSERT INTO {} (version, description) VALUES (%s, %s)").format(
                    self._q["schema_migrations"]), (version, description))
                log.info("storage schema %s migrated to version %d: %s", self.schema, version, description)

    def _unusable(self, error: BaseException) -> SchemaDocError:
        reason = str(error).strip() or type(error).__name__
        return SchemaDocError("storage-write-failed",
                              f"The PostgreSQL store {redact_url(self.url)} cannot be used: {reason}",
                              {"storage_url": redact_url(self.url), "reason": reason},
                              remediation="Check that the database server answers at that URL and that the role "
                                          "may create a schema and tables in the database.")

    # -- connections -----------------------------------------------------------------------------

    def _held_locks(self) -> dict[str, _Held]:
        held: dict[str, _Held] | None = getattr(self._held, "locks", None)
        if held is None:
            held = self._held.locks = {}
        return held

    @contextmanager
    def _connection(self, doc_id: str | None, *, timeout: float = LOCK_TIMEOUT_SECONDS,
                    ) -> Iterator[psycopg.Connection[Any]]:
        """The connection holding ``doc_id``'s write lock in this thread, or one from the pool."""
        if doc_id is not None:
            held = self._held_locks().get(doc_id)
            if held is not None:
                yield held.connection
                return
        pool = self._pool
        if pool is None:
            raise SchemaDocError("storage-read-failed", "The PostgreSQL store is not open.",
                                 {"doc_id": doc_id, "reason": "the store is not open"})
        try:
            with pool.connection(timeout=timeout) as conn:
                yield conn
        except PoolTimeout:
            if doc_id is not None:
                raise lock_timeout(doc_id, timeout) from None
            raise SchemaDocError("storage-read-failed",
                                 f"No connection to PostgreSQL came free within {timeout:g} seconds.",
                                 {"doc_id": None, "reason": "every pooled connection is busy"}) from None

    def _failed(self, error: psycopg.Error, doc_id: str | None, *, write: bool) -> SchemaDocError:
        reason = str(error).strip() or type(error).__name__
        code = "storage-write-failed" if write else "storage-read-failed"
        what = "written" if write else "read"
        return SchemaDocError(code, f"Document {doc_id} could not be {what} in PostgreSQL: {reason}",
                              {"doc_id": doc_id, "reason": reason})

    # -- writes ----------------------------------------------------------------------------------

    def create(self, meta: DocumentMeta, entry: JournalEntry, content: bytes) -> None:
        doc_id = check_write(meta, entry, content, new=True)
        line = journal_line(doc_id, entry)
        with self.write_lock(doc_id), self._connection(doc_id) as conn, self._own_commit(doc_id, 1) as cursor:
            try:
                with conn.transaction():
                    inserted = conn.execute(sql.SQL(
                        "INSERT INTO {} (doc_id, " + _META_COLUMNS + ") "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s, 1) ON CONFLICT (doc_id) DO NOTHING"
                    ).format(self._q["documents"]), (doc_id, *_meta_values(meta)))
                    if inserted.rowcount != 1:
                        raise SchemaDocError("storage-write-failed", f"Document {doc_id} already exists.",
                                             {"doc_id": doc_id, "reason": "the document already exists"})
                    self._put_snapshot(conn, doc_id, 1, content)
                    committed = self._append(conn, doc_id, entry, line)
                cursor.append(committed)
            except psycopg.Error as error:
                raise self._failed(error, doc_id, write=True) from None

    def commit(self, meta: DocumentMeta, entry: JournalEntry, content: bytes | None = None) -> None:
        doc_id = check_write(meta, entry, content)
        line = journal_line(doc_id, entry)
        payload = orjson.dumps({"origin": self.origin, "doc_id": doc_id, "version": meta.version,
                                "kind": _KINDS.get(entry.op, "updated")}).decode()
        with (self.write_lock(doc_id), self._connection(doc_id) as conn,
              self._own_commit(doc_id, meta.version) as cursor):
            try:
                row = conn.execute(self._commit_sql, {
                    "doc_id": doc_id, "version": meta.version, "schema_uri": meta.schema_uri,
                    "created_at": meta.created_at, "modified_at": meta.modified_at,
                    "size": meta.content_size_bytes, "deleted_at": meta.deleted_at, "inline": content is not None,
                    "content": content, "op": entry.op, "at": entry.at, "entry": line, "channel": self.channel,
                    "payload": payload}).fetchone()
                if row is None or row[0] != 1:
                    found = conn.execute(sql.SQL("SELECT version FROM {} WHERE doc_id = %s").format(
                        self._q["documents"]), (doc_id,)).fetchone()
                    if found is None:
                        raise document_not_found(doc_id)
                    raise version_conflict(doc_id, entry.version - 1, found[0])
                cursor.append(row[2])
            except psycopg.Error as error:
                raise self._failed(error, doc_id, write=True) from None

    def write_snapshot(self, doc_id: str, version: int, content: bytes) -> bool:
        """Write the snapshot of ``version`` beside the current one, then switch to it in a short transaction.

        Takes no write lock: the bytes go to their own row while commits go on; the switch is a
        conditional update (only forward, only to a version the document has).
        """
        doc_id = check_doc_id(doc_id)
        try:
            with self._connection(doc_id) as conn:
                row = conn.execute(sql.SQL("SELECT version, snapshot_version FROM {} WHERE doc_id = %s").format(
                    self._q["documents"]), (doc_id,)).fetchone()
                if row is None:
                    raise document_not_found(doc_id)
                if not 1 <= version <= row[0]:
                    raise ValueError(f"version {version} is not a version of document {doc_id} (1 to {row[0]})")
                if version <= row[1]:
                    return False
                conn.execute(sql.SQL("INSERT INTO {} (doc_id, version, content) VALUES (%s, %s, %s) "
                                     "ON CONFLICT (doc_id, version) DO UPDATE SET content = excluded.content")
                             .format(self._q["snapshots"]), (doc_id, version, content))
                with conn.transaction():
                    switched = conn.execute(sql.SQL(
                        "UPDATE {} SET snapshot_version = %s WHERE doc_id = %s AND snapshot_version < %s "
                        "AND version >= %s").format(self._q["documents"]), (version, doc_id, version, version))
                    if switched.rowcount == 1:
                        self._drop_snapshots_but(conn, doc_id, version)
                    else:  # a newer snapshot came first, or the document was purged meanwhile
                        conn.execute(sql.SQL("DELETE FROM {} s WHERE doc_id = %s AND version = %s AND NOT EXISTS "
                                             "(SELECT 1 FROM {} d WHERE d.doc_id = s.doc_id "
                                             "AND d.snapshot_version = s.version)").format(
                            self._q["snapshots"], self._q["documents"]), (doc_id, version))
                    return switched.rowcount == 1
        except psycopg.Error as error:
            raise self._failed(error, doc_id, write=True) from None

    def _put_snapshot(self, conn: psycopg.Connection[Any], doc_id: str, version: int, content: bytes) -> None:
        conn.execute(sql.SQL("INSERT INTO {} (doc_id, version, content) VALUES (%s, %s, %s) "
                             "ON CONFLICT (doc_id, version) DO UPDATE SET content = excluded.content")
                     .format(self._q["snapshots"]), (doc_id, version, content))

    def _drop_snapshots_but(self, conn: psycopg.Connection[Any], doc_id: str, version: int) -> None:
        conn.execute(sql.SQL("DELETE FROM {} WHERE doc_id = %s AND version <> %s").format(self._q["snapshots"]),
                     (doc_id, version))

    def _append(self, conn: psycopg.Connection[Any], doc_id: str, entry: JournalEntry, line: bytes) -> int:
        """Insert the journal row and the notification, inside the commit's transaction; the row's cursor."""
        row = conn.execute(sql.SQL("INSERT INTO {} (doc_id, version, op, at, entry) VALUES (%s, %s, %s, %s, %s) "
                                   "RETURNING txid::text::bigint").format(self._q["journal"]),
                           (doc_id, entry.version, entry.op, entry.at, line)).fetchone()
        self._notify(conn, doc_id, entry.version, _KINDS.get(entry.op, "updated"))
        assert row is not None
        return int(row[0])

    @contextmanager
    def _own_commit(self, doc_id: str, version: int) -> Iterator[list[int]]:
        """Remember a commit (``version`` 0: a purge) of this process, from before it starts (so a
        catch-up never mistakes it for another process's) to after the listener's mark passed its
        cursor; forgotten if it fails.

        The block appends the commit's cursor to the list it is given once the commit succeeded.
        """
        key = (doc_id, version)
        cursor: list[int] = []
        if self._listener is None:  # nobody listens, so there is no catch-up to skip it in
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

    def _notify(self, conn: psycopg.Connection[Any], doc_id: str, version: int, kind: str) -> None:
        payload = orjson.dumps({"origin": self.origin, "doc_id": doc_id, "version": version, "kind": kind})
        conn.execute("SELECT pg_notify(%s, %s)", (self.channel, payload.decode()))

    def purge(self, doc_id: str) -> None:
        """Remove the document's rows; a row in ``purges`` (kept :data:`_PURGES_KEPT`) says it was purged.

        The ``purges`` row names only the document and its last version: a listener that was
        disconnected when the notification went out learns of the purge from it.
        """
        doc_id = check_doc_id(doc_id)
        with self.write_lock(doc_id), self._connection(doc_id) as conn, self._own_commit(doc_id, 0) as cursor:
            try:
                with conn.transaction():
                    row = conn.execute(sql.SQL("DELETE FROM {} WHERE doc_id = %s RETURNING version").format(
                        self._q["documents"]), (doc_id,)).fetchone()
                    if row is None:
                        raise document_not_found(doc_id)
                    for table in ("journal", "snapshots", "checkpoints"):
                        conn.execute(sql.SQL("DELETE FROM {} WHERE doc_id = %s").format(self._q[table]), (doc_id,))
                    conn.execute(sql.SQL("DELETE FROM {} WHERE purged_at < now() - %s::interval").format(
                        self._q["purges"]), (_PURGES_KEPT,))
                    purged = conn.execute(sql.SQL("INSERT INTO {} (doc_id, version) VALUES (%s, %s) "
                                                  "RETURNING txid::text::bigint").format(self._q["purges"]),
                                          (doc_id, row[0])).fetchone()
                    self._notify(conn, doc_id, row[0], "purged")
                assert purged is not None
                cursor.append(int(purged[0]))
            except psycopg.Error as error:
                raise self._failed(error, doc_id, write=True) from None

    # -- reads -----------------------------------------------------------------------------------

    def load(self, doc_id: str) -> StoredDocument:
        doc_id = check_doc_id(doc_id)
        try:
            with self._connection(doc_id) as conn:
                row = conn.execute(sql.SQL(
                    "SELECT " + ", ".join(f"d.{column.strip()}" for column in _META_COLUMNS.split(",")) +
                    ", s.content, array(SELECT j.entry FROM {} j WHERE j.doc_id = d.doc_id "
                    "AND j.version > d.snapshot_version AND j.version <= d.version ORDER BY j.version) "
                    "FROM {} d LEFT JOIN {} s ON s.doc_id = d.doc_id AND s.version = d.snapshot_version "
                    "WHERE d.doc_id = %s").format(self._q["journal"], self._q["documents"], self._q["snapshots"]),
                    (doc_id,), binary=True).fetchone()
        except psycopg.Error as error:
            raise self._failed(error, doc_id, write=False) from None
        if row is None:
            raise document_not_found(doc_id)
        meta = _meta(doc_id, row)
        if row[7] is None:
            raise SchemaDocError("storage-read-failed", f"The snapshot of document {doc_id} is missing.",
                                 {"doc_id": doc_id, "reason": f"no snapshot of version {meta.snapshot_version}"})
        try:
            entries = tuple(JournalEntry.from_line(bytes(line)) for line in row[8])
        except ValueError as error:
            raise SchemaDocError("storage-read-failed", f"The journal of {doc_id} is damaged: {error}.",
                                 {"doc_id": doc_id, "reason": str(error)}) from None
        if len(entries) != meta.version - meta.snapshot_version:
            raise SchemaDocError("storage-read-failed", f"The journal of {doc_id} lacks entries after its snapshot.",
                                 {"doc_id": doc_id, "reason": "journal entries missing"})
        return StoredDocument(meta, bytes(row[7]), entries)

    def read_meta(self, doc_id: str) -> DocumentMeta:
        doc_id = check_doc_id(doc_id)
        return _meta(doc_id, self._one(doc_id, "SELECT " + _META_COLUMNS + " FROM {} WHERE doc_id = %s", "documents"))

    def _one(self, doc_id: str, query: str, table: str) -> tuple[Any, ...]:
        try:
            with self._connection(doc_id) as conn:
                row = conn.execute(sql.SQL(query).format(self._q[table]), (doc_id,)).fetchone()
        except psycopg.Error as error:
            raise self._failed(error, doc_id, write=False) from None
        if row is None:
            raise document_not_found(doc_id)
        return tuple(row)

    def list_metas(self) -> list[DocumentMeta]:
        try:
            with self._connection(None) as conn:
                rows = conn.execute(sql.SQL("SELECT doc_id, " + _META_COLUMNS + " FROM {} ORDER BY doc_id").format(
                    self._q["documents"])).fetchall()
        except psycopg.Error as error:
            raise self._failed(error, None, write=False) from None
        return [_meta(row[0], row[1:]) for row in rows]

    def read_journal(self, doc_id: str, since_version: int = 0,
                     until_version: int | None = None) -> list[JournalEntry]:
        doc_id = check_doc_id(doc_id)
        until = until_version if until_version is not None else 2**31 - 1
        try:
            with self._connection(doc_id) as conn:
                rows = conn.execute(sql.SQL(
                    "SELECT j.entry FROM {} d LEFT JOIN {} j ON j.doc_id = d.doc_id AND j.version > %s "
                    "AND j.version <= least(%s, d.version) WHERE d.doc_id = %s ORDER BY j.version"
                ).format(self._q["documents"], self._q["journal"]),
                    (max(since_version, 0), min(until, 2**31 - 1), doc_id), binary=True).fetchall()
        except psycopg.Error as error:
            raise self._failed(error, doc_id, write=False) from None
        if not rows:
            raise document_not_found(doc_id)
        try:
            return [JournalEntry.from_line(bytes(row[0])) for row in rows if row[0] is not None]
        except ValueError as error:
            raise SchemaDocError("storage-read-failed", f"The journal of {doc_id} is damaged: {error}.",
                                 {"doc_id": doc_id, "reason": str(error)}) from None

    def write_checkpoint(self, doc_id: str, version: int, content: bytes) -> None:
        doc_id = check_doc_id(doc_id)
        try:
            with self._connection(doc_id) as conn, conn.transaction():
                conn.execute(sql.SQL("INSERT INTO {} (doc_id, version, content) VALUES (%s, %s, %s) "
                                     "ON CONFLICT (doc_id, version) DO UPDATE SET content = excluded.content")
                             .format(self._q["checkpoints"]), (doc_id, version, content))
                rows = conn.execute(sql.SQL("SELECT version FROM {} WHERE doc_id = %s").format(
                    self._q["checkpoints"]), (doc_id,)).fetchall()
                kept = keep_checkpoints([row[0] for row in rows])
                conn.execute(sql.SQL("DELETE FROM {} WHERE doc_id = %s AND NOT (version = ANY(%s))").format(
                    self._q["checkpoints"]), (doc_id, kept))
        except psycopg.Error as error:
            raise OSError(f"checkpoint of {doc_id} v{version} not written: {error}") from None

    def read_checkpoint(self, doc_id: str, at_most: int) -> tuple[int, bytes] | None:
        doc_id = check_doc_id(doc_id)
        try:
            with self._connection(doc_id) as conn:
                row = conn.execute(sql.SQL("SELECT version, content FROM {} WHERE doc_id = %s AND version <= %s "
                                           "ORDER BY version DESC LIMIT 1").format(self._q["checkpoints"]),
                                   (doc_id, at_most), binary=True).fetchone()
        except psycopg.Error as error:
            log.warning("document %s: checkpoint not read: %s", doc_id, error)
            return None
        return (row[0], bytes(row[1])) if row is not None else None

    # -- the change feed across processes ----------------------------------------------------------

    def read_changes(self, since: int, limit: int) -> list[StoredChange]:
        """Committed versions of every document after cursor ``since``, oldest first, at most ``limit``.

        The cursor is the committing transaction's id. Only transactions below the oldest commit
        of this store still running are shown, so a commit that lands after a later one was
        listed is never skipped (:data:`_CHANGES`).
        """
        try:
            with self._connection(None) as conn:
                rows = conn.execute(self._changes_sql, {"since": str(since), "limit": limit,
                                                         "k1": self._writer_key[0], "k2": self._writer_key[1]}
                                    ).fetchall()
        except psycopg.Error as error:
            raise self._failed(error, None, write=False) from None
        return [StoredChange(*row) for row in rows]

    def watch(self, listener: Callable[[StoreNotice], None]) -> Callable[[], None]:
        """Call ``listener`` (in a listening thread) for each commit or purge made by another process.

        Returns the function that stops the calls. The first call starts the listening thread
        (one connection doing ``LISTEN``, named ``schemadoc-listen-{origin}`` in
        ``pg_stat_activity``); it reconnects after a lost connection. Notifications sent while it
        was disconnected are lost with the connection, so after each reconnect (once ``LISTEN``
        is in force again) the listener reads the change feed from its last mark and calls
        ``listener`` once for each document another process committed meanwhile, with the newest
        such version and its kind, and once for each purge (the ``purges`` table remembers them
        for :data:`_PURGES_KEPT`). A call may repeat a notice already made (the catch-up starts a
        little before the connection was lost); listeners read the journal by version, so that is
        harmless.
        """
        with self._watch_guard:
            self._watchers.append(listener)
            if self._listener is None:
                self._mark = None
                ready = threading.Event()
                self._listener = threading.Thread(target=self._listen, args=(ready,), daemon=True,
                                                  name=f"schemadoc-listen-{self.schema}")
                self._listener.start()
                ready.wait(10)

        def stop() -> None:
            with self._watch_guard:
                if listener in self._watchers:
                    self._watchers.remove(listener)

        return stop

    def _listen_connection(self) -> psycopg.Connection[Any]:
        """A new connection for the listening thread, named after this store's origin."""
        return psycopg.connect(self.url, autocommit=True, application_name=f"schemadoc-listen-{self.origin}"[:63],
                               **self._connect_timeout())

    def _position(self, conn: psycopg.Connection[Any]) -> int:
        """The feed position now (:data:`_POSITION`)."""
        row = conn.execute(self._position_sql, {"k1": self._writer_key[0], "k2": self._writer_key[1]}).fetchone()
        assert row is not None
        return int(row[0])

    def _listen(self, ready: threading.Event) -> None:
        """Listen, dispatch, and after each reconnect announce what was committed while disconnected.

        The listener keeps a *mark*: a feed cursor such that every commit at or below it has had
        its notification dispatched. After a reconnect, every commit above the mark is read from
        the change feed (:meth:`_catch_up`). The mark is a feed cursor, not a time: the feed
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
        while not self._closing.is_set():
            try:
                with self._listen_connection() as conn:
                    conn.execute(sql.SQL("LISTEN {}").format(sql.Identifier(self.channel)))
                    position = self._position(conn)  # after LISTEN: later commits are notified here
                    if self._mark is not None:  # a reconnect: announce what was committed meanwhile
                        position = max(position, self._catch_up(self._mark))
                    self._advance(position)
                    ready.set()
                    delay = 0.1
                    self._follow(conn)
            except (psycopg.Error, SchemaDocError) as error:
                if self._closing.is_set():
                    return
                log.warning("listening for commits of other processes failed (%s); reconnecting", error)
                self._closing.wait(delay)
                delay = min(delay * 2, 5.0)

    def _follow(self, conn: psycopg.Connection[Any]) -> None:
        """Dispatch notifications until closed (or an error), moving the mark forward as it goes."""
        taken: deque[tuple[float, int]] = deque()
        while not self._closing.is_set():
            for notice in conn.notifies(timeout=_LISTEN_POLL_SECONDS):
                self._dispatch(notice.payload)
                if self._closing.is_set():
                    return
            now = time.monotonic()
            taken.append((now, self._position(conn)))
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
            page = self.read_changes(cursor, _CATCH_UP_PAGE)
            for change in page:
                newest[change.doc_id] = change  # the feed lists each document's versions in order
            if page:
                cursor = page[-1].cursor
            if len(page) < _CATCH_UP_PAGE:
                break
        try:
            with self._connection(None) as conn:
                purges = conn.execute(self._purges_sql, {"since": str(since), "k1": self._writer_key[0],
                                                         "k2": self._writer_key[1]}).fetchall()
        except psycopg.Error as error:
            raise self._failed(error, None, write=False) from None
        with self._own_guard:
            own = set(self._own)
        missed = sorted(
            [(c.cursor, StoreNotice(c.doc_id, c.version, _KINDS.get(c.op, "updated")))
             for c in newest.values() if (c.doc_id, c.version) not in own] +
            [(txid, StoreNotice(doc_id, version, "purged"))
             for txid, doc_id, version in purges if (doc_id, 0) not in own],
            key=lambda pair: pair[0])
        if missed:
            log.info("announcing %d commit(s) and purge(s) of other processes made while not listening", len(missed))
        for _, notice in missed:
            self._deliver(notice)
        return cursor

    def _dispatch(self, payload: str) -> None:
        try:
            data = orjson.loads(payload)
            if data.get("origin") == self.origin:
                return  # this process published its own commit already
            notice = StoreNotice(str(data["doc_id"]), int(data["version"]), str(data["kind"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            log.warning("ignoring a malformed commit notification: %r", payload[:200])
            return
        self._deliver(notice)

    def _deliver(self, notice: StoreNotice) -> None:
        with self._watch_guard:
            watchers = list(self._watchers)
        for watcher in watchers:
            try:
                watcher(notice)
            except Exception:
                log.exception("commit watcher failed for %s v%d", notice.doc_id, notice.version)

    # -- locks -----------------------------------------------------------------------------------

    @contextmanager
    def write_lock(self, doc_id: str, timeout: float = LOCK_TIMEOUT_SECONDS) -> Iterator[None]:
        doc_id = check_doc_id(doc_id)
        held = self._held_locks()
        mine = held.get(doc_id)
        if mine is not None:
            mine.depth += 1
            try:
                yield
            finally:
                mine.depth -= 1
            return
        key = _lock_key(self.schema, doc_id)
        started = time.monotonic()
        with self._connection(None, timeout=max(timeout, 0.5)) as conn:
            left = max(timeout - (time.monotonic() - started), 0.0)
            self._acquire(conn, doc_id, key, timeout, left)
            held[doc_id] = _Held(conn, 1)
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
            raise self._failed(error, doc_id, write=True) from None
