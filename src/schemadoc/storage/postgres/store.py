"""The PostgreSQL store itself: writes, reads and write locks (see the package for the tables and the design)."""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Final

import orjson
import psycopg
from psycopg import sql
from psycopg_pool import PoolTimeout

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry
from schemadoc.storage.base import (
    LOCK_TIMEOUT_SECONDS,
    DocumentMeta,
    RecoveryReport,
    StoredDocument,
    Verdict,
    already_exists,
    check_doc_id,
    check_restore,
    check_write,
    document_not_found,
    journal_line,
    keep_checkpoints,
    lock_timeout,
    restored_entries,
    snapshot_due,
    version_conflict,
)
from schemadoc.storage.postgres import migrations
from schemadoc.storage.postgres.connections import RETRY_AFTER_SECONDS, Connections, split_schema
from schemadoc.storage.postgres.notifications import Listener, channel_name, notice_payload
from schemadoc.storage.postgres.statements import (
    CHANGES,
    COMMIT,
    KINDS,
    META_COLUMNS,
    META_COUNT,
    POSITION,
    PURGES,
    lock_key,
    tables,
    verdict_text,
)
from schemadoc.storage.postgres.statements import meta as _meta
from schemadoc.storage.shared import StoredChange, StoreNotice

__all__ = ["DEFAULT_SCHEMA", "PostgresDocumentStore"]

log = logging.getLogger("schemadoc.storage.postgres")

DEFAULT_SCHEMA: Final = "schemadoc"
_PURGES_KEPT: Final = "1 day"  # how long a purge is remembered for listeners that were disconnected
_PG_REMEDIATION: Final = ("The database's message is in details.reason and the server log; check the database "
                          "server and the role's privileges on the schema's tables.")
_READ_META: Final = "SELECT " + META_COLUMNS + " FROM {documents} WHERE doc_id = %s"
_PUT_SNAPSHOT: Final = ("INSERT INTO {snapshots} (doc_id, version, content) VALUES (%s, %s, %s) "
                        "ON CONFLICT (doc_id, version) DO UPDATE SET content = excluded.content")
_RESTORE_BATCH_BYTES: Final = 4 << 20
"""A restore sends its journal rows in batches of about this many bytes (bounded memory, few round trips)."""
_PUT_CHECKPOINT: Final = _PUT_SNAPSHOT.replace("{snapshots}", "{checkpoints}")


class _Held(threading.local):
    """The write locks this thread holds: doc_id -> the connection whose session holds it."""

    def __init__(self) -> None:
        self.locks: dict[str, psycopg.Connection[Any]] = {}


@dataclass
class _Transaction:
    """A create's or purge's transaction: its connection, the version it writes (the last one, for a purge)
    and, once written, the cursor of its row."""

    conn: psycopg.Connection[Any]
    version: int
    cursor: int | None = None


def _entries(doc_id: str, lines: Iterable[bytes]) -> list[JournalEntry]:
    try:
        return [JournalEntry.from_line(bytes(line)) for line in lines]
    except ValueError as error:
        raise SchemaDocError("storage-read-failed", f"The journal of {doc_id} is damaged: {error}.",
                             {"doc_id": doc_id, "reason": str(error)}) from None


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
        self._writer_keys = {"k1": self._writer_key[0], "k2": self._writer_key[1]}  # the feed's parameters
        self._held = _Held()
        self._listener = Listener(self)
        self._statements: dict[str, sql.Composed] = {}

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

    # -- connections and statements ----------------------------------------------------------------

    @contextmanager
    def _connection(self, doc_id: str | None, *, timeout: float = LOCK_TIMEOUT_SECONDS,
                    ) -> Iterator[psycopg.Connection[Any]]:
        """The connection holding ``doc_id``'s write lock in this thread, or one from the pool."""
        held = self._held.locks.get(doc_id) if doc_id is not None else None
        if held is not None:
            yield held
            return
        with self.connections.connection(timeout) as conn:
            yield conn

    def _sql(self, statement: str) -> sql.Composed:
        """``statement`` with the tables of this store's schema in place of ``{documents}``, ``{journal}``, ..."""
        composed = self._statements.get(statement)
        if composed is None:
            composed = self._statements[statement] = sql.SQL(statement).format(**tables(self.schema))
        return composed

    def _read(self, doc_id: str | None, statement: str, params: Any = None, *, many: bool = False) -> Any:
        """One reading statement, on :meth:`_connection`: its rows, or (``many`` false) its first row, which
        must exist for a ``doc_id`` (else ``document-not-found``). Results come in binary format (``bytea`` 4
        times faster than hex text). Run once more after an outage nobody had noticed
        (:meth:`~.connections.Connections.retrying`): the first request after the database came back is
        served, not refused."""
        def attempt() -> Any:
            try:
                with self._connection(doc_id) as conn:
                    cursor = conn.execute(self._sql(statement), params, binary=True)
                    return cursor.fetchall() if many else cursor.fetchone()
            except psycopg.Error as error:
                raise self._failed(error, doc_id, write=False) from None

        found = self.connections.retrying(attempt)
        if found is None and doc_id is not None:
            raise document_not_found(doc_id)
        return found

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

    @contextmanager
    def _transaction(self, doc_id: str, version: int) -> Iterator[_Transaction]:
        """A transaction of a create (``version`` 1) or a purge (0) under the write lock, remembered as this
        process's own (:meth:`~.notifications.Listener.own_commit`). The block sets the cursor of its journal
        or purges row; a connection lost while COMMIT was sent is ``commit-outcome-unknown``."""
        with (self.write_lock(doc_id), self._connection(doc_id) as conn,
              self._listener.own_commit(doc_id, version) as cursor):
            done = _Transaction(conn, version)
            committing = False
            try:
                with conn.transaction():
                    yield done
                    committing = True  # leaving the block sends COMMIT
                assert done.cursor is not None
                cursor.append(done.cursor)
            except psycopg.Error as error:
                if committing:
                    raise self._unknown(error, conn, doc_id, done.version) from None
                raise self._failed(error, doc_id, write=True, conn=conn) from None

    # -- writes ----------------------------------------------------------------------------------

    def create(self, meta: DocumentMeta, entry: JournalEntry, content: bytes) -> None:
        doc_id = check_write(meta, entry, content, new=True)
        line = journal_line(doc_id, entry)
        with self._transaction(doc_id, 1) as done:
            inserted = done.conn.execute(self._sql(
                "INSERT INTO {documents} (doc_id, " + META_COLUMNS + ") "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, 1, %s, %s) ON CONFLICT (doc_id) DO NOTHING"),
                (doc_id, meta.version, meta.schema_uri, meta.created_at, meta.modified_at, meta.content_size_bytes,
                 meta.deleted_at, meta.schema_digest, verdict_text(meta)))
            if inserted.rowcount != 1:
                raise already_exists(doc_id)
            done.conn.execute(self._sql(_PUT_SNAPSHOT), (doc_id, 1, content))
            row = done.conn.execute(self._sql(
                "INSERT INTO {journal} (doc_id, version, op, at, actor, entry) VALUES (%s, %s, %s, %s, %s, %s) "
                "RETURNING txid::text::bigint"), (doc_id, entry.version, entry.op, entry.at, entry.actor, line)
            ).fetchone()
            self._notify(done.conn, doc_id, entry.version, KINDS.get(entry.op, "updated"))
            assert row is not None
            done.cursor = int(row[0])

    def restore(self, meta: DocumentMeta, entries: Iterable[JournalEntry], content: bytes) -> None:
        """One transaction: the documents row, the snapshot, then the journal rows in batches as the entries
        come (each batch bounded in bytes), and the ``created`` notification."""
        doc_id = check_restore(meta, content)
        with self._transaction(doc_id, meta.version) as done:
            inserted = done.conn.execute(self._sql(
                "INSERT INTO {documents} (doc_id, " + META_COLUMNS + ") "
                "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s) ON CONFLICT (doc_id) DO NOTHING"),
                (doc_id, meta.version, meta.schema_uri, meta.created_at, meta.modified_at, meta.content_size_bytes,
                 meta.deleted_at, meta.version, meta.schema_digest, verdict_text(meta)))
            if inserted.rowcount != 1:
                raise already_exists(doc_id)
            done.conn.execute(self._sql(_PUT_SNAPSHOT), (doc_id, meta.version, content))
            insert = self._sql(
                "INSERT INTO {journal} (doc_id, version, op, at, actor, entry) VALUES (%s, %s, %s, %s, %s, %s)")
            batch: list[tuple[str, int, str, str, str | None, bytes]] = []
            size = 0
            with done.conn.cursor() as cursor:
                for entry in restored_entries(meta, entries):
                    line = journal_line(doc_id, entry)
                    batch.append((doc_id, entry.version, entry.op, entry.at, entry.actor, line))
                    size += len(line)
                    if size >= _RESTORE_BATCH_BYTES or len(batch) >= 1000:
                        cursor.executemany(insert, batch)
                        batch, size = [], 0
                if batch:
                    cursor.executemany(insert, batch)
            row = done.conn.execute("SELECT pg_current_xact_id()::text::bigint").fetchone()
            self._notify(done.conn, doc_id, meta.version, "created")
            assert row is not None
            done.cursor = int(row[0])

    def commit(self, meta: DocumentMeta, entry: JournalEntry, content: bytes | None = None) -> None:
        doc_id = check_write(meta, entry, content)
        line = journal_line(doc_id, entry)
        payload = notice_payload(self.origin, doc_id, meta.version, KINDS.get(entry.op, "updated"))
        with (self.write_lock(doc_id), self._connection(doc_id) as conn,
              self._listener.own_commit(doc_id, meta.version) as cursor):
            try:
                row = conn.execute(self._sql(COMMIT), {
                    "doc_id": doc_id, "version": meta.version, "schema_uri": meta.schema_uri,
                    "created_at": meta.created_at, "modified_at": meta.modified_at,
                    "size": meta.content_size_bytes, "deleted_at": meta.deleted_at, "inline": content is not None,
                    "schema_digest": meta.schema_digest, "verdict": verdict_text(meta),
                    "content": content, "op": entry.op, "at": entry.at, "actor": entry.actor, "entry": line,
                    "channel": self.channel,
                    "payload": payload}).fetchone()
            except psycopg.Error as error:  # one statement in autocommit: it may have committed
                raise self._unknown(error, conn, doc_id, meta.version) from None
            try:
                if row is None or row[0] != 1:
                    found = conn.execute(self._sql("SELECT version FROM {documents} WHERE doc_id = %s"),
                                         (doc_id,)).fetchone()
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
                row = conn.execute(self._sql(_READ_META), (doc_id,)).fetchone()
                if row is None:
                    raise document_not_found(doc_id)
                if not snapshot_due(doc_id, version, _meta(doc_id, row)):
                    return False
                conn.execute(self._sql(_PUT_SNAPSHOT), (doc_id, version, content))
                with conn.transaction():
                    switched = conn.execute(self._sql(
                        "UPDATE {documents} SET snapshot_version = %s WHERE doc_id = %s AND snapshot_version < %s "
                        "AND version >= %s"), (version, doc_id, version, version)).rowcount == 1
                    if switched:
                        conn.execute(self._sql("DELETE FROM {snapshots} WHERE doc_id = %s AND version <> %s"),
                                     (doc_id, version))
                    else:  # a newer snapshot came first, or the document was purged meanwhile
                        conn.execute(self._sql(
                            "DELETE FROM {snapshots} s WHERE doc_id = %s AND version = %s AND NOT EXISTS "
                            "(SELECT 1 FROM {documents} d WHERE d.doc_id = s.doc_id "
                            "AND d.snapshot_version = s.version)"), (doc_id, version))
                    return switched
        except psycopg.Error as error:
            raise self._failed(error, doc_id, write=True) from None

    def _notify(self, conn: psycopg.Connection[Any], doc_id: str, version: int, kind: str) -> None:
        conn.execute("SELECT pg_notify(%s, %s)", (self.channel, notice_payload(self.origin, doc_id, version, kind)))

    def purge(self, doc_id: str) -> None:
        """Remove the document's rows; a row in ``purges`` (kept :data:`_PURGES_KEPT`) says it was purged.

        The ``purges`` row names only the document and its last version: a listener that was
        disconnected when the notification went out learns of the purge from it.
        """
        doc_id = check_doc_id(doc_id)
        with self._transaction(doc_id, 0) as done:
            row = done.conn.execute(self._sql("DELETE FROM {documents} WHERE doc_id = %s RETURNING version"),
                                    (doc_id,)).fetchone()
            if row is None:
                raise document_not_found(doc_id)
            done.version = row[0]
            for table in ("journal", "snapshots", "checkpoints"):
                done.conn.execute(self._sql(f"DELETE FROM {{{table}}} WHERE doc_id = %s"), (doc_id,))
            done.conn.execute(self._sql("DELETE FROM {purges} WHERE purged_at < now() - %s::interval"),
                              (_PURGES_KEPT,))
            purged = done.conn.execute(self._sql("INSERT INTO {purges} (doc_id, version) VALUES (%s, %s) "
                                                 "RETURNING txid::text::bigint"), (doc_id, row[0])).fetchone()
            self._notify(done.conn, doc_id, row[0], "purged")
            assert purged is not None
            done.cursor = int(purged[0])

    # -- reads -----------------------------------------------------------------------------------

    def load(self, doc_id: str) -> StoredDocument:
        doc_id = check_doc_id(doc_id)
        row = self._read(doc_id, (
            "SELECT " + ", ".join(f"d.{column.strip()}" for column in META_COLUMNS.split(",")) +
            ", s.content, array(SELECT j.entry FROM {journal} j WHERE j.doc_id = d.doc_id "
            "AND j.version > d.snapshot_version AND j.version <= d.version ORDER BY j.version) "
            "FROM {documents} d LEFT JOIN {snapshots} s ON s.doc_id = d.doc_id AND s.version = d.snapshot_version "
            "WHERE d.doc_id = %s"), (doc_id,))
        meta = _meta(doc_id, row)
        if row[META_COUNT] is None:
            raise SchemaDocError("storage-read-failed", f"The snapshot of document {doc_id} is missing.",
                                 {"doc_id": doc_id, "reason": f"no snapshot of version {meta.snapshot_version}"})
        entries = _entries(doc_id, row[META_COUNT + 1])
        if len(entries) != meta.version - meta.snapshot_version:
            raise SchemaDocError("storage-read-failed", f"The journal of {doc_id} lacks entries after its snapshot.",
                                 {"doc_id": doc_id, "reason": "journal entries missing"})
        return StoredDocument(meta, bytes(row[META_COUNT]), tuple(entries))

    def read_meta(self, doc_id: str) -> DocumentMeta:
        doc_id = check_doc_id(doc_id)
        return _meta(doc_id, self._read(doc_id, _READ_META, (doc_id,)))

    def record_verdict(self, doc_id: str, verdict: Verdict) -> bool:
        """One conditional update: the verdict is kept only while the document is at ``verdict.version``."""
        doc_id = check_doc_id(doc_id)
        text = orjson.dumps(verdict.to_dict()).decode()
        with self.write_lock(doc_id), self._connection(doc_id) as conn:
            try:
                updated = conn.execute(self._sql(
                    "UPDATE {documents} SET verdict = %s WHERE doc_id = %s AND version = %s"),
                    (text, doc_id, verdict.version))
                if updated.rowcount == 1:
                    return True
                found = conn.execute(self._sql("SELECT 1 FROM {documents} WHERE doc_id = %s"), (doc_id,)).fetchone()
            except psycopg.Error as error:
                raise self._failed(error, doc_id, write=True, conn=conn) from None
        if found is None:
            raise document_not_found(doc_id)
        return False

    def list_metas(self) -> list[DocumentMeta]:
        rows = self._read(None, "SELECT doc_id, " + META_COLUMNS + " FROM {documents} ORDER BY doc_id", many=True)
        return [_meta(row[0], row[1:]) for row in rows]

    def read_metas(self, doc_ids: list[str]) -> dict[str, DocumentMeta]:
        """The metas of several documents in one round trip (a listed page); those gone are left out."""
        rows = self._read(None, "SELECT doc_id, " + META_COLUMNS + " FROM {documents} WHERE doc_id = ANY(%s)",
                          ([check_doc_id(doc_id) for doc_id in doc_ids],), many=True)
        return {row[0]: _meta(row[0], row[1:]) for row in rows}

    def read_journal(self, doc_id: str, since_version: int = 0, until_version: int | None = None, *,
                     max_bytes: int | None = None) -> list[JournalEntry]:
        doc_id = check_doc_id(doc_id)
        until = until_version if until_version is not None else 2**31 - 1
        bounds = (max(since_version, 0), min(until, 2**31 - 1), doc_id)
        if max_bytes is None:
            rows = self._read(doc_id, "SELECT j.entry FROM {documents} d LEFT JOIN {journal} j ON j.doc_id = d.doc_id "
                                      "AND j.version > %s AND j.version <= least(%s, d.version) WHERE d.doc_id = %s "
                                      "ORDER BY j.version", bounds, many=True)
        else:  # the rows whose predecessors in the range add up to less than max_bytes
            rows = self._read(doc_id, "SELECT j.entry FROM {documents} d LEFT JOIN LATERAL (SELECT entry, version, "
                                      "sum(octet_length(entry)) OVER (ORDER BY version) - octet_length(entry) AS "
                                      "before FROM {journal} WHERE doc_id = d.doc_id AND version > %s AND version <= "
                                      "least(%s, d.version)) j ON true WHERE d.doc_id = %s AND (j.before IS NULL OR "
                                      "j.before < %s) ORDER BY j.version", (*bounds, max_bytes), many=True)
        if not rows:
            raise document_not_found(doc_id)
        return _entries(doc_id, [row[0] for row in rows if row[0] is not None])

    def write_checkpoint(self, doc_id: str, version: int, content: bytes) -> None:
        doc_id = check_doc_id(doc_id)
        try:
            with self._connection(doc_id) as conn, conn.transaction():
                conn.execute(self._sql(_PUT_CHECKPOINT), (doc_id, version, content))
                rows = conn.execute(self._sql("SELECT version FROM {checkpoints} WHERE doc_id = %s"),
                                    (doc_id,)).fetchall()
                kept = keep_checkpoints([row[0] for row in rows])
                conn.execute(self._sql("DELETE FROM {checkpoints} WHERE doc_id = %s AND NOT (version = ANY(%s))"),
                             (doc_id, kept))
        except psycopg.Error as error:
            self.connections.failed(error)
            raise OSError(f"checkpoint of {doc_id} v{version} not written: {self.connections.scrub(error)}") from None

    def read_checkpoint(self, doc_id: str, at_most: int) -> tuple[int, bytes] | None:
        doc_id = check_doc_id(doc_id)
        try:
            with self._connection(doc_id) as conn:
                row = conn.execute(self._sql("SELECT version, content FROM {checkpoints} WHERE doc_id = %s "
                                             "AND version <= %s ORDER BY version DESC LIMIT 1"),
                                   (doc_id, at_most), binary=True).fetchone()
        except psycopg.Error as error:
            self.connections.failed(error)
            log.warning("document %s: checkpoint not read: %s", doc_id, self.connections.scrub(error))
            return None
        return (row[0], bytes(row[1])) if row is not None else None

    # -- the change feed across processes ----------------------------------------------------------

    def read_changes(self, since: int, limit: int) -> list[StoredChange]:
        """The change feed after ``since``: its cursor is the committing transaction's id, and it holds back
        at the oldest commit of this store still running (:data:`~.statements.CHANGES`)."""
        rows = self._read(None, CHANGES, {"since": str(since), "limit": limit, **self._writer_keys}, many=True)
        return [StoredChange(*row) for row in rows]

    def _purges_since(self, since: int) -> list[tuple[int, str, int]]:
        """Purges after feed cursor ``since``, held back like the feed: (cursor, doc_id, last version)."""
        rows = self._read(None, PURGES, {"since": str(since), **self._writer_keys}, many=True)
        return [(int(txid), str(doc_id), int(version)) for txid, doc_id, version in rows]

    def _position(self, conn: psycopg.Connection[Any]) -> int:
        """The feed position now (:data:`~.statements.POSITION`), on ``conn``."""
        row = conn.execute(self._sql(POSITION), self._writer_keys).fetchone()
        assert row is not None
        return int(row[0])

    def watch(self, listener: Callable[[StoreNotice], None]) -> Callable[[], None]:
        """The first call starts the listening thread (one connection doing ``LISTEN``, named
        ``schemadoc-listen-{origin}`` in ``pg_stat_activity``); after a reconnect it catches up on what
        was committed or purged meanwhile, possibly repeating a notice (:class:`~.notifications.Listener`).
        """
        return self._listener.watch(listener)

    def _listen_connection(self) -> psycopg.Connection[Any]:
        """A new connection for the listening thread, named after this store's origin."""
        return self.connections.connect(application_name=f"schemadoc-listen-{self.origin}"[:63])

    # -- locks -----------------------------------------------------------------------------------

    @contextmanager
    def write_lock(self, doc_id: str, timeout: float = LOCK_TIMEOUT_SECONDS) -> Iterator[None]:
        """A session advisory lock on a pooled connection, held for the block (re-entrant in one thread).

        Everything this thread does to the document inside the block uses that connection
        (:meth:`_connection`). The session also holds the writers' lock (shared), which the change
        feed reads (:mod:`~.statements`). A dead server's locks go with its connections.
        """
        doc_id = check_doc_id(doc_id)
        held = self._held.locks
        if doc_id in held:
            yield
            return
        key = lock_key(self.schema, doc_id)
        started = time.monotonic()
        with self._connection(None, timeout=max(timeout, 0.5)) as conn:
            self._acquire(conn, doc_id, key, timeout, max(timeout - (time.monotonic() - started), 0.0))
            held[doc_id] = conn
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
            raise self._failed(error, doc_id, write=True, conn=conn) from None
