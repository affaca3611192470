"""The contract suite every document store passes (Kinto-style: shipped with the package).

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

Needs ``pytest`` (a development dependency); nothing else imports this module.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import jsonpatch
import orjson
import pytest
from ulid import ULID

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry, replay, utc_now
from schemadoc.storage.base import DocumentMeta, DocumentStore, RecoveryReport, keep_checkpoints

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

SCHEMA_URI = "https://example.com/schemas/book.schema.json"

BAD_DOC_IDS: list[Any] = [
    "",
    "not-a-ulid",
    "../../../etc/passwd",
    "01ARZ3NDEKTSV4RRFFQ69G5FA",  # 25 characters
    "01ARZ3NDEKTSV4RRFFQ69G5FAVX",  # 27 characters
    "01ARZ3NDEKTSV4RRFFQ69G5F/V",  # a separator inside
    "01ARZ3NDEKTSV4RRFFQ69G5FAU",  # U is not Crockford base32
    "80000000000000000000000000",  # overflows 128 bits
    None,
    12345,
]

_SHORT = 0.2  # seconds: lock timeouts in tests


def new_doc_id() -> str:
    """A fresh doc_id (ULID, canonical form)."""
    return str(ULID())


def create_document(store: DocumentStore, content: Any = None, *, doc_id: str | None = None) -> DocumentMeta:
    """Create a document at version 1 (the default content is a small book) and return its meta."""
    if content is None:
        content = {"title": "A book", "chapters": [{"title": "One", "paragraphs": ["It begins."]}]}
    data = orjson.dumps(content)
    now = utc_now()
    meta = DocumentMeta(doc_id=doc_id or new_doc_id(), version=1, schema_uri=SCHEMA_URI, created_at=now,
                        modified_at=now, content_size_bytes=len(data))
    store.create(meta, JournalEntry(1, "create", [{"op": "add", "path": "", "value": content}], now), data)
    return meta


def current_content(store: DocumentStore, doc_id: str) -> Any:
    """The current version's content: the loaded snapshot with the journal entries after it replayed."""
    stored = store.load(doc_id)
    assert [entry.version for entry in stored.entries] == list(
        range(stored.meta.snapshot_version + 1, stored.meta.version + 1))
    return replay(stored.entries, start=orjson.loads(stored.content), start_version=stored.meta.snapshot_version,
                  copy=False)


def commit_patch(store: DocumentStore, meta: DocumentMeta, patch: list[dict[str, Any]], *,
                 op: str = "patch", info: dict[str, Any] | None = None, inline: bool = True) -> DocumentMeta:
    """Apply ``patch`` to the current content, commit it as the next version, return the new meta.

    ``inline`` passes the new content along (the snapshot becomes current); otherwise the
    snapshot lags and the returned meta keeps the previous ``snapshot_version``.
    """
    content = jsonpatch.apply_patch(current_content(store, meta.doc_id), patch)
    data = orjson.dumps(content)
    now = utc_now()
    new_meta = replace(meta, version=meta.version + 1, modified_at=now, content_size_bytes=len(data))
    if inline:
        new_meta = replace(new_meta, snapshot_version=new_meta.version)
    else:
        new_meta = replace(new_meta, snapshot_version=store.read_meta(meta.doc_id).snapshot_version)
    entry = JournalEntry(new_meta.version, op, patch, now, info or {})
    store.commit(new_meta, entry, data if inline else None)
    return new_meta


def delete_document(store: DocumentStore, meta: DocumentMeta, *, undelete: bool = False,
                    inline: bool = True) -> DocumentMeta:
    """Commit a whole-document delete (or restore): empty patch, same content, ``deleted_at`` set/cleared."""
    now = utc_now()
    new_meta = replace(meta, version=meta.version + 1, modified_at=now, deleted_at=None if undelete else now)
    data = orjson.dumps(current_content(store, meta.doc_id)) if inline else None
    snapshot_version = new_meta.version if inline else store.read_meta(meta.doc_id).snapshot_version
    new_meta = replace(new_meta, snapshot_version=snapshot_version)
    op = "undelete_document" if undelete else "delete_document"
    store.commit(new_meta, JournalEntry(new_meta.version, op, [], now), data)
    return new_meta


def _in_thread(target: Any) -> list[BaseException]:
    """Run ``target`` in another thread, wait for it, return what it raised."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as error:  # handed back to the test
            raised.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "the other thread is stuck"
    return raised


def _codes(errors: list[BaseException]) -> list[str]:
    return [error.code if isinstance(error, SchemaDocError) else repr(error) for error in errors]


class DocumentStoreContract:
    """What every :class:`~schemadoc.storage.base.DocumentStore` does. Override ``store``."""

    @pytest.fixture
    def store(self) -> DocumentStore:
        raise NotImplementedError("a store's test class overrides the `store` fixture")

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

    # -- write lock ------------------------------------------------------------------------------

    def test_write_lock_excludes_a_second_thread(self, store: DocumentStore) -> None:
        doc_id = new_doc_id()

        def take() -> None:
            with store.write_lock(doc_id, timeout=_SHORT):
                pass

        with store.write_lock(doc_id):
            started = time.monotonic()
            raised = _in_thread(take)
            waited = time.monotonic() - started
        assert _codes(raised) == ["lock-timeout"]
        assert isinstance(raised[0], SchemaDocError)
        assert raised[0].details == {"doc_id": doc_id, "timeout_seconds": _SHORT}
        assert waited >= _SHORT * 0.9

    def test_write_lock_is_released_after_the_block(self, store: DocumentStore) -> None:
        doc_id = new_doc_id()
        with store.write_lock(doc_id):
            pass

        def take() -> None:
            with store.write_lock(doc_id, timeout=_SHORT):
                pass

        assert _in_thread(take) == []

    def test_write_lock_is_released_after_an_exception(self, store: DocumentStore) -> None:
        doc_id = new_doc_id()
        with pytest.raises(RuntimeError), store.write_lock(doc_id):
            raise RuntimeError("the write failed")

        def take() -> None:
            with store.write_lock(doc_id, timeout=_SHORT):
                pass

        assert _in_thread(take) == []

    def test_a_waiting_writer_gets_the_lock_when_it_is_released(self, store: DocumentStore) -> None:
        doc_id = new_doc_id()
        holding = threading.Event()
        release = threading.Event()

        def hold() -> None:
            with store.write_lock(doc_id):
                holding.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        assert holding.wait(10)
        threading.Timer(0.1, release.set).start()
        with store.write_lock(doc_id, timeout=10):
            assert release.is_set()
        holder.join(10)

    def test_write_lock_is_reentrant_in_the_holding_thread(self, store: DocumentStore) -> None:
        meta = create_document(store, {"a": 1})
        with store.write_lock(meta.doc_id), store.write_lock(meta.doc_id, timeout=_SHORT):
            commit_patch(store, meta, [{"op": "replace", "path": "/a", "value": 2}])  # takes it once more
        assert store.read_meta(meta.doc_id).version == 2

    def test_write_locks_of_different_documents_are_independent(self, store: DocumentStore) -> None:
        first, second = new_doc_id(), new_doc_id()

        def take_second() -> None:
            with store.write_lock(second, timeout=_SHORT):
                pass

        with store.write_lock(first):
            assert _in_thread(take_second) == []

    def test_a_write_lock_alone_does_not_create_a_document(self, store: DocumentStore) -> None:
        doc_id = new_doc_id()
        with store.write_lock(doc_id):
            pass
        assert store.list_metas() == []
        with pytest.raises(SchemaDocError) as raised:
            store.load(doc_id)
        assert raised.value.code == "document-not-found"

    def test_writers_in_many_threads_never_lose_or_repeat_a_version(self, store: DocumentStore) -> None:
        meta = create_document(store, {"log": []})
        threads, rounds = 4, 8

        def write(name: str) -> None:
            for n in range(rounds):
                with store.write_lock(meta.doc_id):
                    current = store.read_meta(meta.doc_id)
                    commit_patch(store, current, [{"op": "add", "path": f"/log/{current.version - 1}",
                                                   "value": f"{name}{n}"}])

        workers = [threading.Thread(target=write, args=(f"t{i}-",)) for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        stored = store.load(meta.doc_id)
        assert stored.meta.version == 1 + threads * rounds
        entries = store.read_journal(meta.doc_id)
        assert [entry.version for entry in entries] == list(range(1, 2 + threads * rounds))
        assert replay(entries) == orjson.loads(stored.content)
        assert len(orjson.loads(stored.content)["log"]) == threads * rounds
