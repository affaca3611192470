"""Document stores: where content, meta and journal of every document live.

- :mod:`~schemadoc.storage.base`: the :class:`DocumentStore` protocol and the data it exchanges;
- :mod:`~schemadoc.storage.files`: :class:`FileDocumentStore`, one flat directory (the default);
- :mod:`~schemadoc.storage.memory`: :class:`MemoryDocumentStore`, for tests and throwaway servers;
- :mod:`~schemadoc.storage.testing`: the contract suite every store passes (needs pytest; not
  imported here).
"""

from __future__ import annotations

from schemadoc.storage.base import (
    LOCK_TIMEOUT_SECONDS,
    DocumentMeta,
    DocumentStore,
    RecoveryReport,
    StoredDocument,
    check_doc_id,
)
from schemadoc.storage.files import FileDocumentStore
from schemadoc.storage.memory import MemoryDocumentStore

__all__ = [
    "LOCK_TIMEOUT_SECONDS",
    "DocumentMeta",
    "DocumentStore",
    "FileDocumentStore",
    "MemoryDocumentStore",
    "RecoveryReport",
    "StoredDocument",
    "check_doc_id",
]
