"""The index of a store: its backend chosen by the store's kind, opened and brought up to date."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from schemadoc.errors import SchemaDocError
from schemadoc.search.backends import Backend, PostgresBackend, SqliteBackend
from schemadoc.search.extension import IndexExtension
from schemadoc.search.index import Loader, Patches, SearchIndex
from schemadoc.storage.base import DocumentMeta, DocumentStore

__all__ = ["INDEX_FILE", "backend_for", "existing_backend", "open_index", "stored_metas"]

INDEX_FILE = "search-index.sqlite3"
"""The index of a files store, in its storage directory (with SQLite's ``-wal`` and ``-shm`` beside it)."""


def backend_for(store: DocumentStore) -> Backend:
    """A SQLite file in a files store's directory, in-memory SQLite for the memory store, tables beside a
    PostgreSQL store's."""
    from schemadoc.storage.files import FileDocumentStore
    from schemadoc.storage.postgres import PostgresDocumentStore

    if isinstance(store, PostgresDocumentStore):
        return PostgresBackend(store)
    if isinstance(store, FileDocumentStore):
        return SqliteBackend(store.storage_dir / INDEX_FILE)
    return SqliteBackend(None)


def existing_backend(store: DocumentStore) -> Backend | None:
    """The index of ``store`` when a server made one (None otherwise: nothing is created), for a process that has no
    index of its own but changes what one holds (``schemadoc check --record``)."""
    from schemadoc.storage.files import FileDocumentStore
    from schemadoc.storage.postgres import PostgresDocumentStore

    if isinstance(store, PostgresDocumentStore):
        with store.connections.connection(30.0) as connection:
            schema = store.schema.replace('"', '""')
            row = connection.execute("SELECT to_regclass(%s)", [f'"{schema}".search_state']).fetchone()
        return PostgresBackend(store) if row is not None and row[0] is not None else None
    if isinstance(store, FileDocumentStore) and (store.storage_dir / INDEX_FILE).is_file():
        return SqliteBackend(store.storage_dir / INDEX_FILE)
    return None


def open_index(store: DocumentStore, members: Sequence[str], status: Callable[[DocumentMeta], bool | None],
               extensions: Sequence[IndexExtension], load: Loader, patches: Patches, *,
               schema_digest: str = "") -> SearchIndex:
    index = SearchIndex(backend_for(store), members, status, schema_digest=schema_digest)
    for extension in extensions:
        index.add_extension(extension)
    index.open(store.list_metas(), load, patches, lambda doc_ids: stored_metas(store, doc_ids))
    return index


def stored_metas(store: DocumentStore, doc_ids: list[str]) -> dict[str, DocumentMeta]:
    """The stored metas of ``doc_ids`` as they are now (PostgreSQL: one round trip past the server's cache)."""
    read_metas = getattr(store, "read_metas", None)
    if read_metas is not None:
        found: dict[str, DocumentMeta] = read_metas(doc_ids)
        return found
    metas: dict[str, DocumentMeta] = {}
    for doc_id in doc_ids:
        try:
            metas[doc_id] = store.read_meta(doc_id)
        except SchemaDocError:
            continue  # gone or unreadable: the meta in hand stands
    return metas
