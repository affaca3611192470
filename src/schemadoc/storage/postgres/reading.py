"""The PostgreSQL store's connections, statements and reads: :class:`StoreReads`, which the store builds on.

Reads of a document's meta come from :class:`~.current.CurrentMetas` when it is known current (no round
trip), from the write lock's own read when the thread holds it (:mod:`~.locks`), else from one statement.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, Final

import psycopg
from psycopg import sql

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry
from schemadoc.storage.base import (
    LOCK_TIMEOUT_SECONDS,
    DocumentMeta,
    StoredDocument,
    check_doc_id,
    document_not_found,
)
from schemadoc.storage.postgres.connections import RETRY_AFTER_SECONDS, Connections, split_schema
from schemadoc.storage.postgres.current import CurrentMetas
from schemadoc.storage.postgres.locks import WriteLocks
from schemadoc.storage.postgres.notifications import channel_name
from schemadoc.storage.postgres.statements import CHANGES, META_COLUMNS, META_COUNT, POSITION, PURGES, tables
from schemadoc.storage.postgres.statements import meta as _meta
from schemadoc.storage.shared import StoredChange

__all__ = ["DEFAULT_SCHEMA", "READ_META", "StoreReads"]

log = logging.getLogger("schemadoc.storage.postgres")

DEFAULT_SCHEMA: Final = "schemadoc"
READ_META: Final = "SELECT " + META_COLUMNS + " FROM {documents} WHERE doc_id = %s"
_PG_REMEDIATION: Final = ("The database's message is in details.reason and the server log; check the database "
                          "server and the role's privileges on the schema's tables.")


def _entries(doc_id: str, lines: Iterable[bytes]) -> list[JournalEntry]:
    try:
        return [JournalEntry.from_line(bytes(line)) for line in lines]
    except ValueError as error:
        raise SchemaDocError("storage-read-failed", f"The journal of {doc_id} is damaged: {error}.",
                             {"doc_id": doc_id, "reason": str(error)}) from None


class StoreReads:
    """The connections, statements, errors and reads of :class:`~.store.PostgresDocumentStore`."""

    def __init__(self, url: str, *, schema: str | None = None, pool_size: int = 16) -> None:
        self.url, from_url = split_schema(url)
        self.schema = schema or from_url or DEFAULT_SCHEMA
        self.channel = channel_name(self.schema)
        self.origin = f"{os.getpid()}-{id(self):x}-{time.time_ns():x}"
        self.connections = Connections(self.url, name=f"schemadoc-{self.schema}", pool_size=pool_size)
        self._statements: dict[str, sql.Composed] = {}
        self._locks = WriteLocks(self.schema, self.connections, self._sql(READ_META),
                                 lambda error, doc_id, conn: self._failed(error, doc_id, write=True, conn=conn),
                                 lambda doc_id: self.current.get(doc_id))
        self._held = self._locks.held
        self._writer_keys = {"k1": self._locks.writer_key[0], "k2": self._locks.writer_key[1]}  # the feed's
        self.current = CurrentMetas()
        """The metas known current, kept by this store's own writes and its listener (:mod:`~.current`)."""

    def problem(self) -> SchemaDocError | None:
        """``storage-unavailable`` with its cause while the database cannot be used, else None (readiness)."""
        return self.connections.problem()

    # -- connections and statements ----------------------------------------------------------------

    @contextmanager
    def _connection(self, doc_id: str | None, *, timeout: float = LOCK_TIMEOUT_SECONDS,
                    ) -> Iterator[psycopg.Connection[Any]]:
        """The connection holding ``doc_id``'s write lock in this thread, or one from the pool."""
        held = self._locks.connection(doc_id)
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


    def load(self, doc_id: str) -> StoredDocument:
        doc_id = check_doc_id(doc_id)
        epoch = self.current.epoch
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
        self.current.put(meta, epoch)
        return StoredDocument(meta, bytes(row[META_COUNT]), tuple(entries))

    def read_meta(self, doc_id: str) -> DocumentMeta:
        """Under the write lock, the meta read with it; else the meta known current (:mod:`~.current`), no round
        trip; else one read."""
        doc_id = check_doc_id(doc_id)
        held, meta = self._locks.meta(doc_id)
        if held:
            if meta is None:
                raise document_not_found(doc_id)
            return meta
        known = self.current.get(doc_id)
        if known is not None:
            return known
        epoch = self.current.epoch
        meta = _meta(doc_id, self._read(doc_id, READ_META, (doc_id,)))
        self.current.put(meta, epoch)
        return meta


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
