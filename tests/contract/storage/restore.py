"""The store contract: ``restore``, a whole document with its journal as it was elsewhere (import)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace

import orjson
import pytest
from contract.storage.helpers import SCHEMA_URI, commit_patch, create_document, current_content, new_doc_id

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry, replay
from schemadoc.storage.base import DocumentMeta, DocumentStore

__all__ = ["RestoreContract"]


def _history(store: DocumentStore) -> tuple[DocumentMeta, list[JournalEntry], bytes]:
    """A document with five versions (a delete among them) written the ordinary way: meta, journal, content."""
    meta = create_document(store, {"title": "Elsewhere", "n": 0})
    for n in range(1, 4):
        meta = commit_patch(store, meta, [{"op": "replace", "path": "/n", "value": n}],
                            info={"seq": n, "actor": "alice"})
    meta = commit_patch(store, meta, [{"op": "add", "path": "/tags", "value": ["a", "b"]}], inline=False)
    entries = store.read_journal(meta.doc_id)
    return store.read_meta(meta.doc_id), entries, orjson.dumps(current_content(store, meta.doc_id))


def _as_new(meta: DocumentMeta) -> DocumentMeta:
    return replace(meta, doc_id=new_doc_id())


class RestoreContract:
    """``restore`` writes a document with a given history, atomically, keeping times and entries as they were."""

    def test_a_restored_document_has_the_given_meta_journal_and_content(self, store: DocumentStore) -> None:
        source, entries, content = _history(store)
        meta = replace(_as_new(source), created_at="2020-01-02T03:04:05.006Z", modified_at="2021-01-01T00:00:00.000Z")
        store.restore(meta, iter(entries), content)
        stored = store.read_meta(meta.doc_id)
        assert (stored.version, stored.created_at, stored.modified_at, stored.content_size_bytes,
                stored.deleted_at) == (5, meta.created_at, meta.modified_at, len(content), None)
        assert store.read_journal(meta.doc_id) == entries  # op, patch, at and info kept as they were
        assert current_content(store, meta.doc_id) == orjson.loads(content) == replay(entries)
        assert store.read_journal(meta.doc_id, since_version=2, until_version=3) == entries[2:3]
        assert meta.doc_id in [listed.doc_id for listed in store.list_metas()]

    def test_a_restored_document_takes_further_commits_from_its_version(self, store: DocumentStore) -> None:
        source, entries, content = _history(store)
        meta = _as_new(source)
        store.restore(meta, entries, content)
        after = commit_patch(store, store.read_meta(meta.doc_id), [{"op": "replace", "path": "/n", "value": 9}])
        assert after.version == 6
        assert current_content(store, meta.doc_id)["n"] == 9
        assert [entry.version for entry in store.read_journal(meta.doc_id)] == [1, 2, 3, 4, 5, 6]

    def test_a_deleted_document_is_restored_deleted(self, store: DocumentStore) -> None:
        source, entries, content = _history(store)
        meta = replace(_as_new(source), deleted_at="2022-02-02T00:00:00.000Z")
        store.restore(meta, entries, content)
        assert store.read_meta(meta.doc_id).deleted_at == "2022-02-02T00:00:00.000Z"

    def test_restoring_over_an_existing_document_fails_and_changes_nothing(self, store: DocumentStore) -> None:
        existing = create_document(store, {"title": "Already here"})
        source, entries, content = _history(store)
        with pytest.raises(SchemaDocError) as raised:
            store.restore(replace(source, doc_id=existing.doc_id), entries, content)
        assert raised.value.code == "storage-write-failed"
        assert store.read_meta(existing.doc_id) == existing
        assert current_content(store, existing.doc_id) == {"title": "Already here"}
        assert [entry.version for entry in store.read_journal(existing.doc_id)] == [1]

    @pytest.mark.parametrize("cut", ["gap", "short", "long"])
    def test_a_journal_that_is_not_versions_one_to_the_meta_s_writes_nothing(
            self, store: DocumentStore, cut: str) -> None:
        source, entries, content = _history(store)
        meta = _as_new(source)
        given = {"gap": entries[:2] + entries[3:], "short": entries[:-1],
                 "long": [*entries, JournalEntry(6, "patch", [], entries[-1].at)]}[cut]

        def drawn() -> Iterator[JournalEntry]:  # drawn one at a time: the store finds out late
            yield from given

        with pytest.raises(ValueError, match="version"):
            store.restore(meta, drawn(), content)
        assert meta.doc_id not in [listed.doc_id for listed in store.list_metas()]
        with pytest.raises(SchemaDocError) as raised:
            store.read_meta(meta.doc_id)
        assert raised.value.code == "document-not-found"
        store.restore(meta, entries, content)  # nothing was left behind in the way
        assert store.read_meta(meta.doc_id).version == 5

    def test_a_content_size_the_meta_does_not_give_is_refused(self, store: DocumentStore) -> None:
        source, entries, content = _history(store)
        with pytest.raises(ValueError, match="content_size_bytes"):
            store.restore(_as_new(source), entries, content + b" ")

    def test_a_bad_doc_id_is_refused_before_anything_is_written(self, store: DocumentStore) -> None:
        meta = DocumentMeta("../escape", 1, SCHEMA_URI, "2020-01-01T00:00:00.000Z", "2020-01-01T00:00:00.000Z", 2)
        with pytest.raises(SchemaDocError) as raised:
            store.restore(meta, [JournalEntry(1, "create", [{"op": "add", "path": "", "value": {}}], "x")], b"{}")
        assert raised.value.code == "invalid-doc-id"
