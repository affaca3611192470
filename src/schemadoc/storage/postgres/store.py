"""The PostgreSQL store itself: writes, reads and write locks (see the package for the tables and the design)."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final

import psycopg
from psycopg import sql
from psycopg_pool import PoolTimeout

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
    version_conflict,
)
from schemadoc.storage.postgres import migrations
from schemadoc.storage.postgres.connections import RETRY_AFTER_SECONDS, Connections, healing, split_schema
from schemadoc.storage.postgres.feed import Feed
from schemadoc.storage.postgres.locks import WriteLocks
from schemadoc.storage.postgres.notifications import Listener, channel_name, notice_payload
from schemadoc.storage.postgres.statements import (
    COMMIT,
    KINDS,
    META_COLUMNS,
    lock_key,
    meta_values,
    tables,
)
from schemadoc.storage.postgres.statements import meta as _meta

__all__ = ["DEFAULT_SCHEMA", "PostgresDocumentStore"]

log = logging.getLogger("schemadoc.storage.postgres")

DEFAULT_SCHEMA: Final = "schemadoc"
_PURGES_KEPT: Final = "1 day"  # how long a purge is remembered for listeners that were disconnected
_PG_REMEDIATION: Final = ("The database's message is in details.reason and the server log; check the database "
                          "server and the role's privileges on the schema's tables.")


class PostgresDocumentStore:
    """A :class:`~schemadoc.storage.base.DocumentStore` (and change feed) in a PostgreSQL database.

    ``url`` is a libpq URL (``postgresql://user:password@host:5432/dbname``); an extra query
    parameter ``schema=NAME`` names the PostgreSQL schema that holds the tables (default
    ``schemadoc``). Thread-safe; one instance per process. While the database is out every
    operation raises ``storage-unavailable`` (:mod:`~schemadoc.storage.postgres.connections`).
    """

    def __init__(self, url: str, *, schema: str | None = None, pool_size: int = 16) -> None:
        self.url, from_url = split_schema(url)
        self.schema = schema or from_url or DEFAULT_SCHEMA
        self.channel = channel_name(self.schema)
        self.origin = f"{os.getpid()}-{id(self):x}-{time.time_ns():x}"
        self._writer_key = lock_key(self.schema, "#writers")  # held (shared) by every writing session
        self.connections = Connections(self.url, name=f"schemadoc-{self.schema}", pool_size=pool_size)
        self._open_guard = threading.Lock()
        self._locks = WriteLocks(self, self._writer_key)
        self._listener = Listener(self)
        self._q = tables(self.schema)
        self._feed = Feed(self, self._writer_key)
        self._commit_sql = sql.SQL(COMMIT).format(**{name: self._q[name] for name in
                                                     ("documents", "journal", "snapshots")})

    # -- life cycle ------------------------------------------------------------------------------

    def open(self) -> RecoveryReport:
        """Connect, and create or migrate the tables when they need it; nothing to recover (transactions).

        A schema that is up to date is only read (a role limited to reading and writing rows
        starts); one that needs migrations is migrated when the role may, else the start fails
        with ``storage-write-failed`` naming ``schemadoc migrate``. A database that cannot be
        reached or refuses the login is ``storage-unavailable``; a URL libpq cannot parse is
        ``config-invalid``. No message ever carries the password.
        """
        with self._open_guard:
            if not self.connections.is_open:
                try:
                    with self.connections.connect() as conn:
                        if migrations.pending(conn, self.schema):
                            migrations.migrate_or_explain(conn, self.schema, self.connections)
                    self.connections.open()
                except (psycopg.Error, PoolTimeout) as error:
                    raise self.connections.unusable(error) from None
                self._listener.closing.clear()
        return RecoveryReport()

    def migrate(self) -> list[int]:
        """Create the schema and tables, or migrate them (as ``schemadoc migrate`` does); the versions applied."""
        try:
            with self.connections.connect() as conn:
                return migrations.migrate(conn, self.schema)
        except psycopg.Error as error:
            raise self.connections.unusable(error) from None

    def close(self) -> None:
        """Stop listening and close every connection (the store cannot be used afterwards)."""
        self._listener.close()
        with self._open_guard:
            self.connections.close()

    def problem(self) -> SchemaDocError | None:
        """``storage-unavailable`` with its cause while the database cannot be used, else None (readiness)."""
        return self.connections.problem()

    def migration_versions(self) -> list[int]:
        """The migration versions applied to this store's schema, in order."""
        with self._connection(None) as conn:
            rows = conn.execute(sql.SQL("SELECT version FROM {} ORDER BY version").format(
                self._q["schema_migrations"])).fetchall()
        return [row[0] for row in rows]

    # -- connections -----------------------------------------------------------------------------

    @contextmanager
    def _connection(self, doc_id: str | None, *, timeout: float = LOCK_TIMEOUT_SECONDS,
                    ) -> Iterator[psycopg.Connection[Any]]:
        """The connection holding ``doc_id``'s write lock in this thread, or one from the pool."""
        if doc_id is not None:
            held = self._locks.held().get(doc_id)
            if held is not None:
                yield held.connection
                return
        with self.connections.connection(timeout) as conn:
            yield conn

    def _failed(self, error: psycopg.Error, doc_id: str | None, *, write: bool,
                conn: psycopg.Connection[Any] | None = None) -> SchemaDocError:
        """``storage-unavailable`` when the database is out (nothing happened), else the storage error."""
        if self.connections.failed(error, conn):
            return self.connections.unavailable(doc_id=doc_id)
        reason = self.connections.scrub(error)
        code = "storage-write-failed" if write else "storage-read-failed"
        what = "written" if write else "read"
        return SchemaDocError(code, f"Document {doc_id} could not be {what} in PostgreSQL: {reason}",
                              {"doc_id": doc_id, "reason": reason}, remediation=_PG_REMEDIATION)

    def _unknown(self, error: psycopg.Error, conn: psycopg.Connection[Any], doc_id: str,
                 version: int) -> SchemaDocError:
        """The connection broke after the commit was sent: it may or may not have happened."""
        if not self.connections.failed(error, conn):
            return self._failed(error, doc_id, write=True, conn=conn)
        return SchemaDocError(
            "commit-outcome-unknown",
            f"The connection to PostgreSQL was lost while version {version} of {doc_id} was being committed; "
            f"it may or may not have been: {self.connections.scrub(error)}",
            {"doc_id": doc_id, "version": version, "expected_version": version - 1,
             "reason": self.connections.scrub(error), "retry_after_seconds": RETRY_AFTER_SECONDS})

    # -- writes ----------------------------------------------------------------------------------

    def create(self, meta: DocumentMeta, entry: JournalEntry, content: bytes) -> None:
        doc_id = check_write(meta, entry, content, new=True)
        line = journal_line(doc_id, entry)
        with self.write_lock(doc_id), self._connection(doc_id) as conn, self._listener.own_commit(doc_id, 1) as cursor:
            committing = False
            try:
                with conn.transaction():
                    inserted = conn.execute(sql.SQL(
                        "INSERT INTO {} (doc_id, " + META_COLUMNS + ") "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s, 1) ON CONFLICT (doc_id) DO NOTHING"
                    ).format(self._q["documents"]), (doc_id, *meta_values(meta)))
                    if inserted.rowcount != 1:
                        raise SchemaDocError("storage-write-failed", f"Document {doc_id} already exists.",
                                             {"doc_id": doc_id, "reason": "the document already exists"})
                    self._put_snapshot(conn, doc_id, 1, content)
                    committed = self._append(conn, doc_id, entry, line)
                    committing = True  # leaving the block sends COMMIT
                cursor.append(committed)
            except psycopg.Error as error:
                if committing:
                    raise self._unknown(error, conn, doc_id, 1) from None
                raise self._failed(error, doc_id, write=True, conn=conn) from None

    def commit(self, meta: DocumentMeta, entry: JournalEntry, content: bytes | None = None) -> None:
        doc_id = check_write(meta, entry, content)
        line = journal_line(doc_id, entry)
        payload = notice_payload(self.origin, doc_id, meta.version, KINDS.get(entry.op, "updated"))
        with (self.write_lock(doc_id), self._connection(doc_id) as conn,
              self._listener.own_commit(doc_id, meta.version) as cursor):
            try:
                row = conn.execute(self._commit_sql, {
                    "doc_id": doc_id, "version": meta.version, "schema_uri": meta.schema_uri,
                    "created_at": meta.created_at, "modified_at": meta.modified_at,
                    "size": meta.content_size_bytes, "deleted_at": meta.deleted_at, "inline": content is not None,
                    "content": content, "op": entry.op, "at": entry.at, "entry": line, "channel": self.channel,
                    "payload": payload}).fetchone()
            except psycopg.Error as error:  # one statement in autocommit: it may have committed
                raise self._unknown(error, conn, doc_id, meta.version) from None
            try:
                if row is None or row[0] != 1:
                    found = conn.execute(sql.SQL("SELECT version FROM {} WHERE doc_id = %s").format(
                        self._q["documents"]), (doc_id,)).fetchone()
                    if found is None:
                        raise document_not_found(doc_id)
                    raise version_conflict(doc_id, entry.version - 1, found[0])
                cursor.append(row[2])
            except psycopg.Error as error:
                raise self._failed(error, doc_id, write=True, conn=conn) from None

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
        self._notify(conn, doc_id, entry.version, KINDS.get(entry.op, "updated"))
        assert row is not None
        return int(row[0])

    def _notify(self, conn: psycopg.Connection[Any], doc_id: str, version: int, kind: str) -> None:
        conn.execute("SELECT pg_notify(%s, %s)", (self.channel, notice_payload(self.origin, doc_id, version, kind)))

    def purge(self, doc_id: str) -> None:
        """Remove the document's rows; a row in ``purges`` (kept :data:`_PURGES_KEPT`) says it was purged.

        The ``purges`` row names only the document and its last version: a listener that was
        disconnected when the notification went out learns of the purge from it.
        """
        doc_id = check_doc_id(doc_id)
        with self.write_lock(doc_id), self._connection(doc_id) as conn, self._listener.own_commit(doc_id, 0) as cursor:
            committing, last = False, 0
            try:
                with conn.transaction():
                    row = conn.execute(sql.SQL("DELETE FROM {} WHERE doc_id = %s RETURNING version").format(
                        self._q["documents"]), (doc_id,)).fetchone()
                    if row is None:
                        raise document_not_found(doc_id)
                    last = row[0]
                    for table in ("journal", "snapshots", "checkpoints"):
                        conn.execute(sql.SQL("DELETE FROM {} WHERE doc_id = %s").format(self._q[table]), (doc_id,))
                    conn.execute(sql.SQL("DELETE FROM {} WHERE purged_at < now() - %s::interval").format(
                        self._q["purges"]), (_PURGES_KEPT,))
                    purged = conn.execute(sql.SQL("INSERT INTO {} (doc_id, version) VALUES (%s, %s) "
                                                  "RETURNING txid::text::bigint").format(self._q["purges"]),
                                          (doc_id, row[0])).fetchone()
                    self._notify(conn, doc_id, row[0], "purged")
                    committing = True
                assert purged is not None
                cursor.append(int(purged[0]))
            except psycopg.Error as error:
                if committing:
                    raise self._unknown(error, conn, doc_id, last) from None
                raise self._failed(error, doc_id, write=True, conn=conn) from None

    # -- reads -----------------------------------------------------------------------------------

    @healing
    def load(self, doc_id: str) -> StoredDocument:
        doc_id = check_doc_id(doc_id)
        try:
            with self._connection(doc_id) as conn:
                row = conn.execute(sql.SQL(
                    "SELECT " + ", ".join(f"d.{column.strip()}" for column in META_COLUMNS.split(",")) +
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

    @healing
    def read_meta(self, doc_id: str) -> DocumentMeta:
        doc_id = check_doc_id(doc_id)
        return _meta(doc_id, self._one(doc_id, "SELECT " + META_COLUMNS + " FROM {} WHERE doc_id = %s", "documents"))

    def _one(self, doc_id: str, query: str, table: str) -> tuple[Any, ...]:
        try:
            with self._connection(doc_id) as conn:
                row = conn.execute(sql.SQL(query).format(self._q[table]), (doc_id,)).fetchone()
        except psycopg.Error as error:
            raise self._failed(error, doc_id, write=False) from None
        if row is None:
            raise document_not_found(doc_id)
        return tuple(row)

    @healing
    def list_metas(self) -> list[DocumentMeta]:
        try:
            with self._connection(None) as conn:
                rows = conn.execute(sql.SQL("SELECT doc_id, " + META_COLUMNS + " FROM {} ORDER BY doc_id").format(
                    self._q["documents"])).fetchall()
        except psycopg.Error as error:
            raise self._failed(error, None, write=False) from None
        return [_meta(row[0], row[1:]) for row in rows]

    @healing
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
            self.connections.failed(error)
            raise OSError(f"checkpoint of {doc_id} v{version} not written: {self.connections.scrub(error)}") from None

    def read_checkpoint(self, doc_id: str, at_most: int) -> tuple[int, bytes] | None:
        doc_id = check_doc_id(doc_id)
        try:
            with self._connection(doc_id) as conn:
                row = conn.execute(sql.SQL("SELECT version, content FROM {} WHERE doc_id = %s AND version <= %s "
                                           "ORDER BY version DESC LIMIT 1").format(self._q["checkpoints"]),
                                   (doc_id, at_most), binary=True).fetchone()
        except psycopg.Error as error:
            self.connections.failed(error)
            log.warning("document %s: checkpoint not read: %s", doc_id, self.connections.scrub(error))
            return None
        return (row[0], bytes(row[1])) if row is not None else None

    # -- the change feed across processes ----------------------------------------------------------

    @healing
    def read_changes(self, since: int, limit: int) -> list[StoredChange]:
        """Committed versions of every document after cursor ``since``, oldest first, at most ``limit``.

        The cursor is the committing transaction's id. Only transactions below the oldest commit
        of this store still running are shown, so a commit that lands after a later one was
        listed is never skipped (:mod:`~schemadoc.storage.postgres.feed`).
        """
        return self._feed.changes(since, limit)

    def _purges_since(self, since: int) -> list[tuple[int, str, int]]:
        return self._feed.purges(since)

    def _position(self, conn: psycopg.Connection[Any]) -> int:
        return self._feed.position(conn)

    def watch(self, listener: Callable[[StoreNotice], None]) -> Callable[[], None]:
        """Call ``listener`` (in a listening thread) for each commit or purge made by another process.

        Returns the function that stops the calls. The first call starts the listening thread
        (one connection doing ``LISTEN``, named ``schemadoc-listen-{origin}`` in
        ``pg_stat_activity``); it reconnects after a lost connection. Notifications sent while it
        was disconnected are lost with the connection, so after each reconnect (once ``LISTEN``
        is in force again) the listener reads the change feed from its last mark and calls
        ``listener`` once for each document another process committed meanwhile, with the newest
        such version and its kind, and once for each purge (the ``purges`` table remembers them
        for a day). A call may repeat a notice already made (the catch-up starts a little before
        the connection was lost); listeners read the journal by version, so that is harmless.
        """
        return self._listener.watch(listener)

    def _listen_connection(self) -> psycopg.Connection[Any]:
        """A new connection for the listening thread, named after this store's origin."""
        return self.connections.connect(application_name=f"schemadoc-listen-{self.origin}"[:63])

    # -- locks -----------------------------------------------------------------------------------

    def write_lock(self, doc_id: str, timeout: float = LOCK_TIMEOUT_SECONDS) -> contextlib.AbstractContextManager[None]:
        """The document's write lock (:class:`~schemadoc.storage.postgres.locks.WriteLocks`)."""
        return self._locks.hold(check_doc_id(doc_id), timeout)
