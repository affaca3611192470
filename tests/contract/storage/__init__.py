"""The contract suite every document store passes (imported by the store tests as ``contract.storage``).

A store's test module is a few lines::

    class TestMemoryDocumentStore(DocumentStoreContract):
        @pytest.fixture
        def store(self) -> DocumentStore:
            store = MemoryDocumentStore()
            store.open()
            return store

The fixture returns an opened, empty store. The helpers (:func:`create_document`,
:func:`commit_patch`, …) build real documents and real patches, so that every test can also
check that the journal replays to the stored content.
"""

from __future__ import annotations

import pytest
from contract.storage.documents import DocumentsContract
from contract.storage.helpers import (
    BAD_DOC_IDS,
    SCHEMA_URI,
    commit_patch,
    create_document,
    current_content,
    delete_document,
    new_doc_id,
)
from contract.storage.history import HistoryContract
from contract.storage.locks import LocksContract
from contract.storage.restore import RestoreContract
from contract.storage.verdicts import VerdictsContract

from schemadoc.storage.base import DocumentStore

__all__ = [
    "BAD_DOC_IDS",
    "SCHEMA_URI",
    "DocumentStoreContract",
    "commit_patch",
    "create_document",
    "current_content",
    "delete_document",
    "new_doc_id",
]


class DocumentStoreContract(DocumentsContract, HistoryContract, LocksContract, RestoreContract, VerdictsContract):
    """What every :class:`~schemadoc.storage.base.DocumentStore` does. Override ``store``."""

    @pytest.fixture
    def store(self) -> DocumentStore:
        raise NotImplementedError("a store's test class overrides the `store` fixture")
