"""The PostgreSQL store itself: writes, reads and write locks (see the package for the tables and the design)."""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Final

import orjson
import psycopg
from psycopg_pool import PoolTimeout

from schemadoc.ops.journal import JournalEntry
from schemadoc.storage.base import (
    LOCK_TIMEOUT_SECONDS,
    DocumentMeta,
    RecoveryReport,
    Verdict,
    already_exists,
    check_doc_id,
    check_restore,
    check_write,
    document_not_found,
    journal_line,
    keep_checkpoints,
    restored_entries,
    snapshot_due,
    version_conflict,
)
from schemadoc.storage.postgres import migrations
from schemadoc.storage.postgres.notifications import (
    META_CHANGED,
    Listener,
    ListenerSource,
    notice_payload,
)
from schemadoc.storage.postgres.reading import DEFAULT_SCHEMA, READ_META, StoreReads
from schemadoc.storage.postgres.statements import (
    COMMIT,
    KINDS,
    META_COLUMNS,
    NOTIFY_AND_UNLOCK,
    NOTIFY_AND_UNLOCK_WRITERS,
    verdict_text,
)
from schemadoc.storage.postgres.statements import meta as _meta
from schemadoc.storage.shared import StoreNotice

__all__ = ["DEFAULT_SCHEMA", "PostgresDocumentStore"]

log = logging.getLogger("schemadoc.storage.postgres")

_PURGES_KEPT: Final = "1 day"  # how long a purge is remembered for listeners that were disconnected
_PUT_SNAPSHOT: Final = ("INSERT INTO {snapshots} (doc_id, version, content) VALUES (%s, %s, %s) "
                        "ON CONFLICT (doc_id, version) DO UPDATE SET content = excluded.content")
_RESTORE_BATCH_BYTES: Final = 4 << 20
"""A restore sends its journal rows in batches of about this many bytes (bounded memory, few round trips)."""
_PUT_CHECKPOINT: Final = _PUT_SNAPSHOT.replace("{snapshots}", "{checkpoints}")


@dataclass
class _Transaction:
    """A create's or purge's transaction: its connection, the version it writes (the last one, for a purge)
    and, once written, the cursor of its row."""

    conn: psycopg.Connection[Any]
    version: int
    cursor: int | None = None


def _sync_queued(pipeline: psycopg.Pipeline) -> None:
    """End the implicit transaction of the statements queued so far without waiting for their results, so the
    whole pipeline stays one round trip; a psycopg without that hook syncs (one round trip more)."""
    enqueue = getattr(pipeline, "_enqueue_sync", None)
    if enqueue is None:
        pipeline.sync()
    else:
        enqueue()


class PostgresDocumentStore(StoreReads):
    """A :class:`~schemadoc.storage.base.DocumentStore` (and change feed) in a PostgreSQL database.

    ``url`` is a libpq URL (``postgresql://user:password@host:5432/dbname``); an extra query
    parameter ``schema=NAME`` names the PostgreSQL schema that holds the tables (default
    ``schemadoc``). Thread-safe; one instance per process. While the database is out every
    operation raises ``storage-unavailable`` (:mod:`~schemadoc.storage.postgres.connections`).
    """

    def __init__(self, url: str, *, schema: str | None = None, pool_size: int = 16) -> None:
        super().__init__(url, schema=schema, pool_size=pool_size)
        self._open_guard = threading.Lock()
        self._listener = Listener(ListenerSource(
            self.channel, self.origin, lambda: self._listen_connection(), self._position, self.read_changes,
            self._purges_since, self.connections.scrub, self.current))

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
                self._locks.forget(doc_id)
                if version == 0:
                    self.current.heard(doc_id, done.version, "purged")
                else:
                    self.current.drop(doc_id)
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
        """One round trip (a pipeline): the commit (:data:`~.statements.COMMIT`, its own transaction), then, in a
        transaction of its own, its notification and the release of the write lock taken for it.

        ``NOTIFY`` serialises every notifying transaction of the database cluster until it ends (a lock held
        through the commit's WAL flush), so a commit that notified inside its own transaction could never share
        a flush with another: the notification goes out in the next transaction, which writes no WAL and is
        not flushed. It follows the commit in the same pipeline, so it is sent whenever the commit was; if the
        database crashes between the two, the listeners reconnect and catch up from the feed.
        """
        doc_id = check_write(meta, entry, content)
        line = journal_line(doc_id, entry)
        payload = notice_payload(self.origin, doc_id, meta.version, KINDS.get(entry.op, "updated"))
        epoch = self.current.epoch
        with (self.write_lock(doc_id), self._connection(doc_id) as conn,
              self._listener.own_commit(doc_id, meta.version) as cursor):
            try:
                optimistic = self._locks.optimistic(doc_id)
                with conn.pipeline() as pipeline:
                    if optimistic:  # no document lock was taken: the writers' lock, before the commit's transaction
                        self._locks.taking_writers(doc_id)
                        conn.execute("SELECT pg_advisory_lock_shared(%s, %s)", self._locks.writer_key)
                    written = conn.execute(self._sql(COMMIT), {
                        "doc_id": doc_id, "version": meta.version, "schema_uri": meta.schema_uri,
                        "created_at": meta.created_at, "modified_at": meta.modified_at,
                        "size": meta.content_size_bytes, "deleted_at": meta.deleted_at,
                        "inline": content is not None, "schema_digest": meta.schema_digest,
                        "verdict": verdict_text(meta), "content": content, "op": entry.op, "at": entry.at,
                        "actor": entry.actor, "entry": line})
                    _sync_queued(pipeline)  # the commit's transaction ends here, before the next statement
                    k1, k2, w1, w2 = self._locks.unlock_params(doc_id)
                    notify = NOTIFY_AND_UNLOCK_WRITERS if optimistic else NOTIFY_AND_UNLOCK
                    conn.execute(self._sql(notify), {"channel": self.channel, "payload": payload,
                                                                 "doc_id": doc_id, "version": meta.version,
                                                                 "digest": hashlib.sha256(line).digest(),
                                                                 "k1": k1, "k2": k2, "w1": w1, "w2": w2})
                self._locks.released_by_commit(doc_id)
                row = written.fetchone()
            except psycopg.Error as error:  # the commit may have committed
                raise self._unknown(error, conn, doc_id, meta.version) from None
            try:
                if row is None or row[0] != 1:
                    self.current.drop(doc_id)
                    found = conn.execute(self._sql("SELECT version FROM {documents} WHERE doc_id = %s"),
                                         (doc_id,)).fetchone()
                    if found is None:
                        raise document_not_found(doc_id)
                    raise version_conflict(doc_id, entry.version - 1, found[0])
                cursor.append(row[1])
            except psycopg.Error as error:
                raise self._failed(error, doc_id, write=True, conn=conn) from None
        self._locks.committed(doc_id, meta)
        self.current.put(meta, epoch)

    def write_snapshot(self, doc_id: str, version: int, content: bytes) -> bool:
        """Write the snapshot of ``version`` beside the current one, then switch to it in a short transaction.

        Takes no write lock: the bytes go to their own row while commits go on; the switch is a
        conditional update (only forward, only to a version the document has).
        """
        doc_id = check_doc_id(doc_id)
        try:
            with self._connection(doc_id) as conn:
                row = conn.execute(self._sql(READ_META), (doc_id,)).fetchone()
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
                if switched:
                    self._meta_changed(conn, doc_id, version)
                return switched
        except psycopg.Error as error:
            raise self._failed(error, doc_id, write=True) from None

    def _notify(self, conn: psycopg.Connection[Any], doc_id: str, version: int, kind: str) -> None:
        conn.execute("SELECT pg_notify(%s, %s)", (self.channel, notice_payload(self.origin, doc_id, version, kind)))

    def _meta_changed(self, conn: psycopg.Connection[Any], doc_id: str, version: int) -> None:
        """A verdict or the snapshot changed without a new version (committed): the meta is read again, here
        and in the other processes (a notification of its own, after the change's transaction)."""
        self._locks.forget(doc_id)
        self.current.drop(doc_id)
        self._notify(conn, doc_id, version, META_CHANGED)

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
                    self._meta_changed(conn, doc_id, verdict.version)
                    return True
                found = conn.execute(self._sql("SELECT 1 FROM {documents} WHERE doc_id = %s"), (doc_id,)).fetchone()
            except psycopg.Error as error:
                raise self._failed(error, doc_id, write=True, conn=conn) from None
        if found is None:
            raise document_not_found(doc_id)
        return False

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

    optimistic_commits = True

    def commit_lock(self, doc_id: str, timeout: float = LOCK_TIMEOUT_SECONDS) -> AbstractContextManager[None]:
        """A write's lock: this process's, with no database lock; the meta known current, else read alone; the
        commit is conditional on that version and takes the writers' lock itself (:mod:`~.locks`). One round
        trip a write where :meth:`write_lock` costs two."""
        return self._locks.hold(doc_id, timeout, optimistic=True)

    def write_lock(self, doc_id: str, timeout: float = LOCK_TIMEOUT_SECONDS) -> AbstractContextManager[None]:
        """A lock of this process, then a session advisory lock on a pooled connection, held for the block
        (re-entrant in one thread); taking it reads the document's meta in the same round trip (:mod:`~.locks`).

        Everything this thread does to the document inside the block uses that connection
        (:meth:`_connection`). The session also holds the writers' lock (shared), which the change
        feed reads (:mod:`~.statements`). A dead server's locks go with its connections.
        """
        return self._locks.hold(doc_id, timeout)
