"""The store contract: creating, loading and committing documents, and snapshots that lag the journal."""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest
from contract.storage.helpers import (
    SCHEMA_URI,
    commit_patch,
    create_document,
    current_content,
    delete_document,
    new_doc_id,
)

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry, replay, utc_now
from schemadoc.storage.base import DocumentMeta, DocumentStore, RecoveryReport, keep_checkpoints

__all__ = ["DocumentsContract"]


class DocumentsContract:
    """Create, load, commit; the snapshot may lag the journal."""

    # -- create and load -----------------------------------------------------------------------

    def test_a_fresh_store_has_no_documents(self, store: DocumentStore) -> None:
        assert store.list_metas() == []

    def test_opening_an_opened_store_again_reports_nothing_to_recover(self, store: DocumentStore) -> None:
        create_document(store)
        assert store.open() == RecoveryReport()

    def test_a_created_document_loads_with_the_same_bytes_and_meta(self, store: DocumentStore) -> None:
        meta = create_document(store, {"title": "Über", "n": [1, 2.5, None, True]})
        stored = store.load(meta.doc_id)
        assert stored.meta == meta
        assert stored.content == orjson.dumps({"title": "Über", "n": [1, 2.5, None, True]})

    def test_content_bytes_are_kept_exactly_as_given(self, store: DocumentStore) -> None:
        data = b'{\n  "title": "spaced out",   "x": 1.50\n}\n'
        now = utc_now()
        meta = DocumentMeta(new_doc_id(), 1, SCHEMA_URI, now, now, len(data))
        entry = JournalEntry(1, "create", [{"op": "add", "path": "", "value": orjson.loads(data)}], now)
        store.create(meta, entry, data)
        assert store.load(meta.doc_id).content == data

    def test_read_meta_is_the_meta_of_load(self, store: DocumentStore) -> None:
        meta = create_document(store)
        assert store.read_meta(meta.doc_id) == store.load(meta.doc_id).meta == meta

    def test_create_writes_version_1_to_the_journal(self, store: DocumentStore) -> None:
        meta = create_document(store, {"a": 1})
        [entry] = store.read_journal(meta.doc_id)
        assert (entry.version, entry.op) == (1, "create")
        assert entry.patch == [{"op": "add", "path": "", "value": {"a": 1}}]

    def test_create_refuses_an_existing_document_and_keeps_it(self, store: DocumentStore) -> None:
        meta = create_document(store, {"a": 1})
        with pytest.raises(SchemaDocError) as raised:
            create_document(store, {"a": 2}, doc_id=meta.doc_id)
        assert raised.value.code == "storage-write-failed"
        assert store.load(meta.doc_id).content == orjson.dumps({"a": 1})
        assert len(store.read_journal(meta.doc_id)) == 1

    def test_create_refuses_versions_other_than_1(self, store: DocumentStore) -> None:
        data = b"{}"
        now = utc_now()
        meta = DocumentMeta(new_doc_id(), 2, SCHEMA_URI, now, now, len(data))
        with pytest.raises(ValueError):
            store.create(meta, JournalEntry(2, "create", [{"op": "add", "path": "", "value": {}}], now), data)

    def test_create_refuses_a_meta_whose_size_is_not_the_contents(self, store: DocumentStore) -> None:
        now = utc_now()
        meta = DocumentMeta(new_doc_id(), 1, SCHEMA_URI, now, now, 99)
        entry = JournalEntry(1, "create", [{"op": "add", "path": "", "value": {}}], now)
        with pytest.raises(ValueError):
            store.create(meta, entry, b"{}")

    def test_loading_an_unknown_id_is_document_not_found(self, store: DocumentStore) -> None:
        doc_id = new_doc_id()
        for read in (store.load, store.read_meta, store.read_journal):
            with pytest.raises(SchemaDocError) as raised:
                read(doc_id)
            assert raised.value.code == "document-not-found"
            assert raised.value.details["doc_id"] == doc_id

    def test_doc_ids_are_read_case_insensitively(self, store: DocumentStore) -> None:
        meta = create_document(store)
        assert store.load(meta.doc_id.lower()).meta == meta

    # -- commit --------------------------------------------------------------------------------

    def test_commit_bumps_the_version_and_appends_to_the_journal(self, store: DocumentStore) -> None:
        meta = create_document(store, {"title": "a", "tags": []})
        meta2 = commit_patch(store, meta, [{"op": "replace", "path": "/title", "value": "b"}],
                             op="update_node", info={"node_path": "/title"})
        stored = store.load(meta.doc_id)
        assert stored.meta == meta2
        assert stored.meta.version == 2
        assert orjson.loads(stored.content) == {"title": "b", "tags": []}
        entries = store.read_journal(meta.doc_id)
        assert [entry.version for entry in entries] == [1, 2]
        patch = [{"op": "replace", "path": "/title", "value": "b"}]
        assert entries[1] == JournalEntry(2, "update_node", patch, meta2.modified_at, {"node_path": "/title"})

    def test_commit_of_an_unknown_document_is_document_not_found(self, store: DocumentStore) -> None:
        now = utc_now()
        meta = DocumentMeta(new_doc_id(), 2, SCHEMA_URI, now, now, 2)
        with pytest.raises(SchemaDocError) as raised:
            store.commit(meta, JournalEntry(2, "patch", [], now), b"{}")
        assert raised.value.code == "document-not-found"

    def test_commit_that_skips_a_version_is_a_version_conflict_and_changes_nothing(
        self, store: DocumentStore
    ) -> None:
        meta = create_document(store, {"a": 1})
        now = utc_now()
        skipping = replace(meta, version=3, modified_at=now, content_size_bytes=len(b'{"a":3}'))
        entry = JournalEntry(3, "patch", [{"op": "replace", "path": "/a", "value": 3}], now)
        with pytest.raises(SchemaDocError) as raised:
            store.commit(skipping, entry, b'{"a":3}')
        assert raised.value.code == "version-conflict"
        assert raised.value.details == {"doc_id": meta.doc_id, "expected_version": 2, "actual_version": 1}
        assert store.load(meta.doc_id).meta == meta
        assert [entry.version for entry in store.read_journal(meta.doc_id)] == [1]

    def test_commit_that_repeats_a_version_is_a_version_conflict(self, store: DocumentStore) -> None:
        meta = create_document(store, {"a": 1})
        commit_patch(store, meta, [{"op": "replace", "path": "/a", "value": 2}])
        with pytest.raises(SchemaDocError) as raised:
            commit_patch(store, meta, [{"op": "replace", "path": "/a", "value": 3}])  # from stale version 1
        assert raised.value.code == "version-conflict"
        assert orjson.loads(store.load(meta.doc_id).content) == {"a": 2}

    def test_commit_refuses_a_meta_and_entry_that_disagree(self, store: DocumentStore) -> None:
        meta = create_document(store, {})
        now = utc_now()
        with pytest.raises(ValueError):
            store.commit(replace(meta, version=2), JournalEntry(3, "patch", [], now), b"{}")
        assert store.read_meta(meta.doc_id).version == 1

    # -- journal-first: the snapshot may lag the journal ----------------------------------------

    def test_an_inline_commit_makes_the_snapshot_current(self, store: DocumentStore) -> None:
        meta = create_document(store, {"n": 0})
        assert store.read_meta(meta.doc_id).snapshot_version == 1
        meta = commit_patch(store, meta, [{"op": "replace", "path": "/n", "value": 1}])
        stored = store.load(meta.doc_id)
        assert (stored.meta.version, stored.meta.snapshot_version, stored.entries) == (2, 2, ())
        assert orjson.loads(stored.content) == {"n": 1}

    def test_a_commit_without_content_is_journaled_and_loads_as_snapshot_plus_entries(
        self, store: DocumentStore
    ) -> None:
        meta = create_document(store, {"n": 0, "log": []})
        for n in range(1, 4):
            meta = commit_patch(store, meta, [{"op": "replace", "path": "/n", "value": n},
                                              {"op": "add", "path": f"/log/{n - 1}", "value": n}], inline=False)
        stored = store.load(meta.doc_id)
        assert stored.meta.version == store.read_meta(meta.doc_id).version == 4
        assert 1 <= stored.meta.snapshot_version <= 4
        assert current_content(store, meta.doc_id) == {"n": 3, "log": [1, 2, 3]}
        entries = store.read_journal(meta.doc_id)
        assert orjson.loads(stored.content) == replay(entries, upto=stored.meta.snapshot_version)
        assert stored.meta.content_size_bytes == len(orjson.dumps({"n": 3, "log": [1, 2, 3]}))
        assert stored.meta.modified_at == entries[-1].at

    def test_write_snapshot_brings_the_snapshot_forward_and_never_back(self, store: DocumentStore) -> None:
        meta = create_document(store, {"n": 0})
        for n in range(1, 5):
            meta = commit_patch(store, meta, [{"op": "replace", "path": "/n", "value": n}], inline=False)
        store.write_snapshot(meta.doc_id, 4, orjson.dumps({"n": 3}))
        stored = store.load(meta.doc_id)
        assert stored.meta.snapshot_version >= 4 and stored.meta.version == 5
        assert current_content(store, meta.doc_id) == {"n": 4}
        assert store.write_snapshot(meta.doc_id, 3, orjson.dumps({"n": 2})) is False
        assert store.write_snapshot(meta.doc_id, 4, orjson.dumps({"n": 3})) is False
        assert current_content(store, meta.doc_id) == {"n": 4}
        store.write_snapshot(meta.doc_id, 5, orjson.dumps({"n": 4}))
        stored = store.load(meta.doc_id)
        assert (stored.meta.snapshot_version, stored.entries, orjson.loads(stored.content)) == (5, (), {"n": 4})
        assert store.read_meta(meta.doc_id) == stored.meta == replace(meta, snapshot_version=5)

    def test_write_snapshot_refuses_versions_the_document_does_not_have(self, store: DocumentStore) -> None:
        meta = create_document(store, {"n": 0})
        for version in (0, 2):
            with pytest.raises(ValueError):
                store.write_snapshot(meta.doc_id, version, b"{}")
        with pytest.raises(SchemaDocError) as raised:
            store.write_snapshot(new_doc_id(), 1, b"{}")
        assert raised.value.code == "document-not-found"

    def test_a_lagging_snapshot_survives_delete_and_undelete(self, store: DocumentStore) -> None:
        meta = create_document(store, {"n": 0})
        meta = commit_patch(store, meta, [{"op": "replace", "path": "/n", "value": 1}], inline=False)
        deleted = delete_document(store, meta, inline=False)
        assert store.read_meta(meta.doc_id).deleted_at == deleted.deleted_at is not None
        restored = delete_document(store, deleted, undelete=True, inline=False)
        found = store.read_meta(meta.doc_id)
        assert replace(found, snapshot_version=restored.snapshot_version) == restored  # a store may snapshot early
        assert current_content(store, meta.doc_id) == {"n": 1}

    def test_persisted_checkpoints_are_bounded_and_keep_the_newest(self, store: DocumentStore) -> None:
        meta = create_document(store, {"n": 0})
        for n in range(1, 64):
            store.write_checkpoint(meta.doc_id, n * 256, orjson.dumps({"n": n}))
        found = {store.read_checkpoint(meta.doc_id, version) for version in range(256, 64 * 256, 128)}
        kept = sorted(hit[0] for hit in found if hit is not None)
        assert kept == keep_checkpoints(kept)  # what is left is what the retention rule keeps
        assert kept[-4:] == [60 * 256, 61 * 256, 62 * 256, 63 * 256]
        assert len(kept) <= 4 + (63 * 256).bit_length() and kept[0] == 256  # few, the oldest among them
        assert store.read_checkpoint(meta.doc_id, 63 * 256) == (63 * 256, orjson.dumps({"n": 63}))
