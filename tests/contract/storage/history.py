"""The store contract: the journal, the listing, delete and purge, and doc ids."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson
import pytest
from contract.storage.helpers import (
    BAD_DOC_IDS,
    SCHEMA_URI,
    commit_patch,
    create_document,
    delete_document,
    new_doc_id,
)

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry, replay, utc_now
from schemadoc.storage.base import DocumentMeta, DocumentStore

__all__ = ["HistoryContract"]


class HistoryContract:
    """The journal and what is kept of a document over its life."""

    # -- journal -------------------------------------------------------------------------------

    def test_read_journal_returns_the_entries_after_since_version_in_order(
        self, store: DocumentStore
    ) -> None:
        meta = create_document(store, {"n": 0})
        for n in range(1, 5):
            meta = commit_patch(store, meta, [{"op": "replace", "path": "/n", "value": n}])
        assert [entry.version for entry in store.read_journal(meta.doc_id)] == [1, 2, 3, 4, 5]
        assert [entry.version for entry in store.read_journal(meta.doc_id, since_version=2)] == [3, 4, 5]
        later = store.read_journal(meta.doc_id, since_version=3)
        assert [entry.patch[0]["value"] for entry in later] == [3, 4]
        assert store.read_journal(meta.doc_id, since_version=5) == []
        assert store.read_journal(meta.doc_id, since_version=9) == []

    def test_read_journal_stops_at_the_entry_that_reaches_max_bytes(self, store: DocumentStore) -> None:
        meta = create_document(store, {"n": ""})
        for n in range(1, 9):
            meta = commit_patch(store, meta, [{"op": "replace", "path": "/n", "value": f"{n}" * 1000}])
        pages = [store.read_journal(meta.doc_id, since_version=1, max_bytes=limit) for limit in (1, 2500, 100_000)]
        after_last = store.read_journal(meta.doc_id, since_version=8, until_version=9, max_bytes=2500)

        assert [[entry.version for entry in page] for page in pages] == [[2], [2, 3, 4], list(range(2, 10))]
        assert [entry.version for entry in after_last] == [9]
        assert store.read_journal(meta.doc_id, since_version=9, max_bytes=2500) == []

    def test_the_journal_replays_to_the_stored_content_at_every_version(self, store: DocumentStore) -> None:
        meta = create_document(store, {"items": [], "title": "t"})
        seen = {1: orjson.loads(store.load(meta.doc_id).content)}
        patches: list[list[dict[str, Any]]] = [
            [{"op": "add", "path": "/items/0", "value": {"k": "a"}}],
            [{"op": "add", "path": "/items/1", "value": {"k": "b"}},
             {"op": "test", "path": "/title", "value": "t"}],
            [{"op": "move", "from": "/items/0", "path": "/items/1"}],
            [{"op": "copy", "from": "/items/0", "path": "/first"}, {"op": "remove", "path": "/title"}],
            [{"op": "replace", "path": "", "value": {"fresh": True}}],
        ]
        for patch in patches:
            meta = commit_patch(store, meta, patch)
            seen[meta.version] = orjson.loads(store.load(meta.doc_id).content)
        entries = store.read_journal(meta.doc_id)
        for version, content in seen.items():
            assert replay(entries, upto=version) == content

    def test_journal_entries_keep_their_info(self, store: DocumentStore) -> None:
        meta = create_document(store, {"a": {}})
        commit_patch(store, meta, [{"op": "add", "path": "/a/b", "value": 1}], op="create_node",
                     info={"node_path": "/a/b", "by": ["agent", 7]})
        entry = store.read_journal(meta.doc_id, since_version=1)[0]
        assert (entry.op, entry.info) == ("create_node", {"node_path": "/a/b", "by": ["agent", 7]})

    def test_changing_a_returned_entry_does_not_change_the_journal(self, store: DocumentStore) -> None:
        meta = create_document(store, {"a": [1]})
        store.read_journal(meta.doc_id)[0].patch[0]["value"]["a"].append(2)
        assert store.read_journal(meta.doc_id)[0].patch[0]["value"] == {"a": [1]}

    # -- listing -------------------------------------------------------------------------------

    def test_list_metas_is_sorted_by_doc_id_and_complete(self, store: DocumentStore) -> None:
        ids = [new_doc_id() for _ in range(6)]
        created = {doc_id: create_document(store, {"i": i}, doc_id=doc_id)
                   for i, doc_id in enumerate(reversed(ids))}
        metas = store.list_metas()
        assert [meta.doc_id for meta in metas] == sorted(ids)
        assert metas == [created[doc_id] for doc_id in sorted(ids)]

    def test_list_metas_shows_the_latest_version(self, store: DocumentStore) -> None:
        meta = create_document(store, {"a": 1})
        meta = commit_patch(store, meta, [{"op": "replace", "path": "/a", "value": 2}])
        assert store.list_metas() == [meta]

    # -- whole-document delete, purge ------------------------------------------------------------

    def test_deleted_at_round_trips_through_delete_and_undelete(self, store: DocumentStore) -> None:
        meta = create_document(store, {"a": 1})
        deleted = delete_document(store, meta)
        assert deleted.deleted_at is not None
        assert store.read_meta(meta.doc_id) == deleted
        assert store.load(meta.doc_id).content == orjson.dumps({"a": 1})
        assert store.list_metas() == [deleted]  # deleted documents are listed; the flag says so
        restored = delete_document(store, deleted, undelete=True)
        assert store.read_meta(meta.doc_id).deleted_at is None
        assert store.read_meta(meta.doc_id) == restored
        assert [(e.version, e.op, e.patch) for e in store.read_journal(meta.doc_id, since_version=1)] == [
            (2, "delete_document", []), (3, "undelete_document", [])]

    def test_read_journal_stops_at_until_version_also_when_read_again_from_the_middle(
        self, store: DocumentStore
    ) -> None:
        meta = create_document(store, {"n": 0})
        for n in range(1, 200):
            meta = commit_patch(store, meta, [{"op": "replace", "path": "/n", "value": n}])
        assert [e.version for e in store.read_journal(meta.doc_id, until_version=3)] == [1, 2, 3]
        assert [e.version for e in store.read_journal(meta.doc_id, since_version=130, until_version=133)] == \
            [131, 132, 133]
        assert [e.version for e in store.read_journal(meta.doc_id, since_version=64, until_version=66)] == [65, 66]
        assert [e.version for e in store.read_journal(meta.doc_id, since_version=198)] == [199, 200]
        assert len(store.read_journal(meta.doc_id, until_version=999)) == 200

    def test_the_newest_checkpoint_at_or_below_a_version_is_returned(self, store: DocumentStore) -> None:
        meta = create_document(store, {"n": 0})
        assert store.read_checkpoint(meta.doc_id, 10) is None
        store.write_checkpoint(meta.doc_id, 4, b'{"n": 4}')
        store.write_checkpoint(meta.doc_id, 8, b'{"n": 8}')
        assert store.read_checkpoint(meta.doc_id, 3) is None
        assert store.read_checkpoint(meta.doc_id, 4) == (4, b'{"n": 4}')
        assert store.read_checkpoint(meta.doc_id, 7) == (4, b'{"n": 4}')
        assert store.read_checkpoint(meta.doc_id, 100) == (8, b'{"n": 8}')

    def test_purge_removes_every_trace_of_the_document(self, store: DocumentStore) -> None:
        meta = create_document(store)
        kept = create_document(store)
        store.write_checkpoint(meta.doc_id, 1, b"{}")
        store.purge(meta.doc_id)
        for read in (store.load, store.read_meta, store.read_journal, store.purge):
            with pytest.raises(SchemaDocError) as raised:
                read(meta.doc_id)
            assert raised.value.code == "document-not-found"
        assert store.list_metas() == [kept]

    def test_purging_an_unknown_document_is_document_not_found(self, store: DocumentStore) -> None:
        with pytest.raises(SchemaDocError) as raised:
            store.purge(new_doc_id())
        assert raised.value.code == "document-not-found"

    # -- doc ids ---------------------------------------------------------------------------------

    @pytest.mark.parametrize("bad_id", BAD_DOC_IDS, ids=repr)
    def test_every_method_rejects_an_invalid_doc_id(self, store: DocumentStore, bad_id: Any) -> None:
        calls: list[Callable[[], object]] = [
            lambda: store.load(bad_id),
            lambda: store.read_meta(bad_id),
            lambda: store.read_journal(bad_id),
            lambda: store.purge(bad_id),
            lambda: store.write_lock(bad_id).__enter__(),
        ]
        for call in calls:
            with pytest.raises(SchemaDocError) as raised:
                call()
            assert raised.value.code == "invalid-doc-id"

    @pytest.mark.parametrize("bad_id", ["../../../etc/passwd", "01arz3ndektsv4rrffq69g5fav"], ids=repr)
    def test_create_and_commit_reject_a_meta_without_a_canonical_doc_id(
        self, store: DocumentStore, bad_id: str
    ) -> None:
        now = utc_now()
        for version in (1, 2):
            meta = DocumentMeta(bad_id, version, SCHEMA_URI, now, now, 2)
            entry = JournalEntry(version, "create", [{"op": "add", "path": "", "value": {}}], now)
            with pytest.raises(SchemaDocError) as raised:
                (store.create if version == 1 else store.commit)(meta, entry, b"{}")
            assert raised.value.code == "invalid-doc-id"
        assert store.list_metas() == []
