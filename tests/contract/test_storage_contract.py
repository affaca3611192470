"""Every store passes the one contract suite (tests/contract/storage)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from contract.storage import DocumentStoreContract
from pg_support import empty_tables, throwaway_schema

from schemadoc.storage.base import DocumentStore
from schemadoc.storage.files import FileDocumentStore
from schemadoc.storage.memory import MemoryDocumentStore


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


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    """One PostgreSQL schema for this module's run (its own: concurrent runs never meet), dropped at the end."""
    with throwaway_schema() as url:
        yield url


class TestPostgresDocumentStore(DocumentStoreContract):
    @pytest.fixture
    def store(self, postgres_url: str) -> Iterator[DocumentStore]:
        from schemadoc.storage.postgres import PostgresDocumentStore

        store = PostgresDocumentStore(postgres_url)
        store.open()  # migrates the schema on first use, then finds nothing to do
        empty_tables(postgres_url)
        try:
            yield store
        finally:
            store.close()
