"""Documents at their current version, read one at a time from a store that may be in use: what commands that
walk a whole store (``schemadoc check``) read, beside running servers.

:func:`open_for_reading` opens a store without writing to it: the files store ``read_only`` (no start-up
recovery, no format marker recorded, no lock file made, a damaged snapshot reported rather than rebuilt), the
PostgreSQL store only when its tables are up to date (it never creates or migrates them). :func:`read_current`
is the document at its current version: the snapshot with the journal entries after it replayed (the snapshot
lags the journal by design, so it alone may be an older version), read in one consistent piece (the files
store holds the document's lock only while it reads the files).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import msgspec
import orjson

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import replay
from schemadoc.storage.base import DocumentMeta, DocumentStore
from schemadoc.storage.files import FileDocumentStore
from schemadoc.storage.layout import META_SUFFIX, doc_id_of

__all__ = ["CurrentDocument", "current_documents", "list_documents", "open_for_reading", "read_current"]

_DECODER = msgspec.json.Decoder()


@dataclass(frozen=True)
class CurrentDocument:
    """A document at its current version: ``meta.version`` is the version ``content`` holds."""

    meta: DocumentMeta
    content: Any


def open_for_reading(storage_dir: str | os.PathLike[str], storage_url: str | None = None) -> DocumentStore:
    """The store at ``storage_url`` (PostgreSQL) or in ``storage_dir`` (files), opened to be read only.

    Raises ``storage-read-failed`` (a missing directory; PostgreSQL tables missing or behind this version),
    ``store-format-unsupported`` (a format this version cannot read without an upgrade) and
    ``storage-unavailable`` (the database cannot be reached). Close a PostgreSQL store when done.
    """
    if not storage_url:
        store = FileDocumentStore(storage_dir, read_only=True)
        store.open()
        return store
    import psycopg

    from schemadoc.storage.postgres import PostgresDocumentStore
    from schemadoc.storage.postgres.migrations import pending

    database = PostgresDocumentStore(storage_url, pool_size=2)
    try:
        with database.connections.connect() as conn:
            needed = pending(conn, database.schema)
    except psycopg.Error as error:
        raise database.connections.unusable(error) from None
    if needed:
        why = (f"its tables need migration(s) {', '.join(map(str, needed))}" if needed[0] > 1
               else "it has no schemadoc tables")
        raise SchemaDocError(
            "storage-read-failed", f"The PostgreSQL schema {database.schema} cannot be read: {why}.",
            {"storage_url": database.connections.shown, "schema": database.schema, "reason": why},
            remediation="Name the schema the server uses (?schema=NAME in the URL), or run `schemadoc migrate` "
                        "(or start a server) on it first; this command writes nothing.")
    database.open()  # up to date: only reads
    return database


def _parse(data: bytes) -> Any:
    """Stored JSON as Python values: ``msgspec`` (no transient parse tree, integers beyond 64 bits exact),
    orjson asked about what it refuses, for the error."""
    try:
        return _DECODER.decode(data)
    except msgspec.DecodeError:
        return orjson.loads(data)


def read_current(store: DocumentStore, doc_id: str) -> CurrentDocument:
    """The document ``doc_id`` at its current version (snapshot + the journal after it).

    Raises ``document-not-found``, ``storage-read-failed`` (also for a snapshot that is not JSON or a journal
    that does not replay on it), ``lock-timeout``.
    """
    stored = store.load(doc_id)
    meta = stored.meta
    try:
        content = _parse(stored.content)
    except orjson.JSONDecodeError as error:
        raise SchemaDocError("storage-read-failed", f"The snapshot of document {doc_id} is not JSON: {error}.",
                             {"doc_id": doc_id, "reason": f"snapshot not JSON: {error}"}) from None
    if stored.entries:
        try:
            content = replay(stored.entries, start=content, start_version=meta.snapshot_version, copy=False)
        except ValueError as error:
            raise SchemaDocError("storage-read-failed", f"The journal of document {doc_id} does not replay on "
                                 f"its snapshot: {error}.", {"doc_id": doc_id, "reason": str(error)}) from None
    return CurrentDocument(meta, content)


def list_documents(store: DocumentStore) -> tuple[list[DocumentMeta], list[SchemaDocError]]:
    """The meta of every document of ``store`` (sorted by doc_id), and the error of each whose meta cannot be
    read (``list_metas`` leaves those out; a command that answers for every document names them)."""
    if not isinstance(store, FileDocumentStore):
        return store.list_metas(), []
    try:
        names = os.listdir(store.storage_dir)
    except OSError as error:
        why = f"cannot list the storage directory: {error.strerror or error}"
        raise SchemaDocError("storage-read-failed", why + ".",
                             {"storage_dir": str(store.storage_dir), "reason": why}) from None
    metas: list[DocumentMeta] = []
    failures: list[SchemaDocError] = []
    for doc_id in sorted(doc_id for name in names if name.endswith(META_SUFFIX)
                         and (doc_id := doc_id_of(name)) is not None):
        try:
            metas.append(store.read_meta(doc_id))
        except SchemaDocError as error:
            if error.code != "document-not-found":  # purged meanwhile
                failures.append(error)
    return metas, failures


def current_documents(store: DocumentStore, metas: list[DocumentMeta]) -> Iterator[CurrentDocument | SchemaDocError]:
    """Each of ``metas``' documents at its current version, one at a time (each read when it is drawn, so only
    one is held): the document, or the error that kept it from being read (``document-not-found`` for one
    purged since it was listed)."""
    for meta in metas:
        try:
            yield read_current(store, meta.doc_id)
        except SchemaDocError as error:
            yield error
