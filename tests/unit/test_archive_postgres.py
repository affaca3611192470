"""An import into PostgreSQL writes a whole journal in one transaction: the change feed still lists every
version once, in pages of any size (docs/backup.md)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from contract.storage import commit_patch, create_document
from pg_support import throwaway_schema

from schemadoc.storage.memory import MemoryDocumentStore


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with throwaway_schema() as url:
        yield url


@pytest.mark.parametrize("limit", [1, 2, 3, 100])
def test_the_feed_lists_every_version_of_a_restored_journal_once_whatever_the_page_size(
        postgres_url: str, limit: int) -> None:
    from schemadoc.storage.postgres import PostgresDocumentStore

    elsewhere = MemoryDocumentStore()
    meta = create_document(elsewhere, {"n": 0})
    for n in range(1, 5):
        meta = commit_patch(elsewhere, meta, [{"op": "replace", "path": "/n", "value": n}],
                            info={"actor": f"writer-{n}"})
    content = elsewhere.load(meta.doc_id).content
    store = PostgresDocumentStore(postgres_url)
    store.open()
    try:
        before = create_document(store, {"n": "before"})
        store.restore(meta, elsewhere.read_journal(meta.doc_id), content)
        after = create_document(store, {"n": "after"})
        seen, actors, cursor = [], {}, 0
        while page := store.read_changes(cursor, limit):
            assert len({change.cursor for change in page}) <= limit
            seen += [(change.doc_id, change.version) for change in page]
            actors |= {change.version: change.actor for change in page if change.doc_id == meta.doc_id}
            cursor = page[-1].cursor
        assert seen == [(before.doc_id, 1), *[(meta.doc_id, version) for version in range(1, 6)], (after.doc_id, 1)]
        # the restored rows name their actors in the feed's own column, as committed ones do
        assert actors == {1: None, **{n + 1: f"writer-{n}" for n in range(1, 5)}}
    finally:
        store.close()


def test_an_import_into_postgres_replaces_a_stored_document_with_the_archive_s(postgres_url: str) -> None:
    import io

    from schemadoc.archive import export_store, import_archive
    from schemadoc.examples import example_path
    from schemadoc.schema import load_schema
    from schemadoc.storage.postgres import PostgresDocumentStore
    from schemadoc.validation import DocumentValidator

    elsewhere = MemoryDocumentStore()
    meta = create_document(elsewhere, {"title": "Kept", "metadata": {"language": "en", "status": "draft",
                                                                      "edition": 1}, "chapters": []})
    meta = commit_patch(elsewhere, meta, [{"op": "replace", "path": "/title", "value": "Archived"}])
    archive = io.BytesIO()
    export_store(elsewhere, archive, history=True)
    store = PostgresDocumentStore(postgres_url)
    store.open()
    try:
        validator = DocumentValidator(load_schema(example_path("book")))
        import_archive(io.BytesIO(archive.getvalue()), store, validator, report=lambda line: None)
        stored = store.read_meta(meta.doc_id)
        commit_patch(store, stored, [{"op": "replace", "path": "/title", "value": "Changed since"}])
        lines: list[str] = []
        summary = import_archive(io.BytesIO(archive.getvalue()), store, validator, existing="replace",
                                 report=lines.append)
        assert (summary.imported, summary.replaced, lines) == (1, 1, [f"{meta.doc_id}: replaced by the archive's "
                                                                      "version 2"])
        assert store.read_meta(meta.doc_id).version == 2
        assert store.read_journal(meta.doc_id) == elsewhere.read_journal(meta.doc_id)
    finally:
        store.close()
