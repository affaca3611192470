"""The index of a store: its backend chosen by the store's kind, opened and brought up to date."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from schemadoc.errors import SchemaDocError
from schemadoc.search.backends import Backend, PostgresBackend, SqliteBackend
from schemadoc.search.extension import IndexExtension
from schemadoc.search.index import Loader, Patches, SearchIndex
from schemadoc.storage.base import DocumentMeta, DocumentStore

__all__ = ["INDEX_FILE", "backend_for", "open_index"]

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


def open_index(store: DocumentStore, members: Sequence[str], status: Callable[[DocumentMeta], bool | None],
               extensions: Sequence[IndexExtension], load: Loader, patches: Patches) -> SearchIndex:
    index = SearchIndex(backend_for(store), members, status)
    for extension in extensions:
        index.add_extension(extension)
    index.open(store.list_metas(), load, patches, lambda doc_ids: _metas(store, doc_ids))
    return index


def _metas(store: DocumentStore, doc_ids: list[str]) -> dict[str, DocumentMeta]:
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
