"""Every store passes the one contract suite (schemadoc.storage.testing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from schemadoc.storage.base import DocumentStore
from schemadoc.storage.files import FileDocumentStore
from schemadoc.storage.memory import MemoryDocumentStore
from schemadoc.storage.testing import DocumentStoreContract


class TestMemoryDocumentStore(DocumentStoreContract):
    @pytest.fixture
    def store(self) -> DocumentStore:
        store = MemoryDocumentStore()
        store.open()
        return store


class TestFileDocumentStore(DocumentStoreContract):
    @pytest.fixture
    def store(self, tmp_path: Path) -> DocumentStore:
        store = FileDocumentStore(tmp_path / "documents")
        store.open()
        return store


def test_both_stores_satisfy_the_protocol() -> None:
    stores: list[DocumentStore] = [MemoryDocumentStore(), FileDocumentStore("documents")]
    assert all(isinstance(store, DocumentStore) for store in stores)
