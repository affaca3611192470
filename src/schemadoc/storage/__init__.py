"""Document stores: where content, meta and journal of every document live.

- :mod:`~schemadoc.storage.base`: the :class:`DocumentStore` protocol and the data it exchanges;
- :mod:`~schemadoc.storage.files`: :class:`FileDocumentStore`, one flat directory (the default);
- :mod:`~schemadoc.storage.memory`: :class:`MemoryDocumentStore`, for tests and throwaway servers;
- :mod:`~schemadoc.storage.postgres`: ``PostgresDocumentStore``, one PostgreSQL database shared
  by several server processes (imported on demand: :func:`store_for`).
"""

from __future__ import annotations

from os import PathLike

from schemadoc.storage.base import DocumentStore
from schemadoc.storage.files import FileDocumentStore
from schemadoc.storage.memory import MemoryDocumentStore

__all__ = ["FileDocumentStore", "MemoryDocumentStore", "store_for"]


def store_for(storage_dir: str | PathLike[str], storage_url: str | None = None) -> DocumentStore:
    """The configured store, not yet opened: PostgreSQL at ``storage_url`` when given, else files."""
    if storage_url:
        from schemadoc.storage.postgres import PostgresDocumentStore

        return PostgresDocumentStore(storage_url)
    return FileDocumentStore(storage_dir)
