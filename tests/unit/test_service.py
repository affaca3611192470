"""DocumentService use cases: writes, reports, locking, history, deletion and the change feed."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from schemadoc.errors import SchemaDocError
from schemadoc.schema import load_schema
from schemadoc.service import MAX_JSON_DEPTH, ChangeEvent, DocumentService
from schemadoc.storage.files import FileDocumentStore
from schemadoc.storage.memory import MemoryDocumentStore

BOOK = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
SCHEMA = load_schema(BOOK)
ANY_OBJECT_SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "any_object.schema.json"

CHAPTER = {"id": "ch-1", "title": "One", "sections": [{"title": "S", "paragraphs": [{"text": "p"}], "sections": []}]}


@pytest.fixture
def service(tmp_path: Path) -> DocumentService:
    svc = DocumentService(SCHEMA, FileDocumentStore(tmp_path))
    svc.open()
    return svc


def code_of(call: Any) -> tuple[str, dict[str, Any]]:
    with pytest.raises(SchemaDocError) as caught:
        call()
    return caught.value.code, caught.value.details


def test_a_write_that_breaks_several_rules_reports_every_violation(service: DocumentService) -> None:
    doc_id, *_ = service.create_document()
    bad = {"language": "english", "status": "done", "edition": 0, "contact": "no-at-sign",
           "homepage": "not a uri", "keywords": ["a", "a"], "extra": True}
    code, details = code_of(lambda: service.update_node(doc_id, "/metadata", bad, 1))
    assert code == "validation-failed"
    found = {(v["code"], v["path"]) for v in details["violations"]}
    assert {("pattern-failed", "/metadata/language"), ("enum-mismatch", "/metadata/status"),
            ("minimum", "/metadata/edition"), ("format-invalid", "/metadata/contact"),
            ("unique-items", "/metadata/keywords"),
            ("additional-properties-forbidden", "/metadata")} <= found
    for violation in details["violations"]:
        assert {"code", "message", "path", "constraint", "expected", "actual", "schema_path"} <= set(violation)
    assert service.version_of(doc_id) == 1


def test_a_oneof_violation_explains_every_alternative(service: DocumentService) -> None:
    doc_id, *_ = service.create_document()
    code, details = code_of(lambda: service.create_node(doc_id, "/metadata/author", {"name": ""}, 1))
    assert code == "validation-failed"
    (violation,) = [v for v in details["violations"] if v["constraint"] == "oneOf"]
    assert violation["code"] == "one-of-failed"
    assert len(violation["alternatives"]) == 2


def test_dry_run_previews_the_patch_node_and_report_and_changes_nothing(service: DocumentService) -> None:
    doc_id, content, *_ = service.create_document()
    preview = service.update_node(doc_id, "/title", "Preview", 1, dry_run=True)
    assert preview.dry_run and preview.report.valid
    assert preview.patch == [{"op": "replace", "path": "/title", "value": "Preview"}]
    assert preview.node == "Preview"
    code, details = code_of(lambda: service.update_node(doc_id, "/title", "", 1, dry_run=True))
    assert code == "validation-failed" and details["dry_run"] is True, "an invalid dry run fails like its write"
    assert details["patch"] == [{"op": "replace", "path": "/title", "value": ""}]
    code, details = code_of(lambda: service.update_node(doc_id, "/nowhere/x", "", 1, dry_run=True))
    assert code == "path-not-found" and details["dry_run"] is True
    assert service.read_node(doc_id, "/title").node == content["title"]
    assert service.version_of(doc_id) == 1


def test_two_services_on_one_directory_never_lose_an_update(tmp_path: Path) -> None:
    first = DocumentService(SCHEMA, FileDocumentStore(tmp_path))
    first.open()
    second = DocumentService(SCHEMA, FileDocumentStore(tmp_path))
    second.open()
    doc_id, *_ = first.create_document()
    assert second.read_node(doc_id, "/title").version == 1
    first.update_node(doc_id, "/title", "from first", 1)
    code, details = code_of(lambda: second.update_node(doc_id, "/title", "from second", 1))
    assert code == "version-conflict" and details["actual_version"] == 2
    assert second.read_node(doc_id, "/title").node == "from first"
    second.update_node(doc_id, "/title", "from second", 2)
    assert first.read_node(doc_id, "/title").node == "from second"
    assert first.version_of(doc_id) == 3


def test_concurrent_writers_with_the_same_version_have_exactly_one_winner(service: DocumentService) -> None:
    doc_id, *_ = service.create_document()
    outcomes: list[str] = []
    barrier = threading.Barrier(8)

    def writer(n: int) -> None:
        barrier.wait()
        try:
            service.update_node(doc_id, "/title", f"writer {n}", 1)
            outcomes.append("ok")
        except SchemaDocError as error:
            outcomes.append(error.code)

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["ok"] + ["version-conflict"] * 7
    assert service.version_of(doc_id) == 2


def test_a_held_lock_makes_writers_time_out_with_lock_timeout(tmp_path: Path) -> None:
    store = FileDocumentStore(tmp_path)
    service = DocumentService(SCHEMA, store, lock_timeout=0.2)
    service.open()
    doc_id, *_ = service.create_document()
    with store.write_lock(doc_id, 1.0):
        result: list[str] = []
        thread = threading.Thread(target=lambda: result.append(
            code_of(lambda: service.update_node(doc_id, "/title", "x", 1))[0]))
        thread.start()
        thread.join()
        # reads never wait for writes
        assert service.read_node(doc_id, "/title").version == 1
    assert result == ["lock-timeout"]


def test_listeners_see_committed_versions_in_order(service: DocumentService) -> None:
    seen: list[ChangeEvent] = []
    service.subscribe(seen.append)
    doc_id, *_ = service.create_document()
    service.update_node(doc_id, "/title", "a", 1)
    code_of(lambda: service.update_node(doc_id, "/title", "", 2))
    service.update_node(doc_id, "/title", "b", 2, dry_run=True)
    service.update_node(doc_id, "/title", "c", 2)
    assert [(e.kind, e.version) for e in seen] == [("created", 1), ("updated", 2), ("updated", 3)]


# -- history ---------------------------------------------------------------------------------


def test_history_pages_and_past_versions_read_like_the_present(service: DocumentService) -> None:
    doc_id, *_ = service.create_document()
    for n in range(2, 6):
        service.update_node(doc_id, "/title", f"v{n}", n - 1)
    page = service.history(doc_id, since_version=1, limit=2)
    assert [e.version for e in page.entries] == [2, 3] and page.has_more
    assert [e.op for e in page.entries] == ["update_node", "update_node"]
    assert service.read_node(doc_id, "/title", at_version=3).node == "v3"
    code, details = code_of(lambda: service.read_node(doc_id, "/nope/deeper", at_version=3))
    assert code == "path-not-found" and details["deepest_ancestor"] == "/"
    assert code_of(lambda: service.read_node(doc_id, "/title", at_version=9))[0] == "version-not-found"


def test_revert_makes_a_new_version_equal_to_the_old_one(service: DocumentService) -> None:
    doc_id, first, *_ = service.create_document()
    service.update_node(doc_id, "/title", "changed", 1)
    service.create_node(doc_id, "/chapters/-", CHAPTER, 2)
    result = service.revert(doc_id, 1, 3)
    assert result.version == 4
    assert service.read_document(doc_id)[0] == first
    assert service.read_version(doc_id, 3)["chapters"] == [CHAPTER]


def test_deleted_documents_disappear_and_come_back_with_their_history(service: DocumentService) -> None:
    doc_id, *_ = service.create_document()
    service.update_node(doc_id, "/title", "kept", 1)
    service.delete_document(doc_id, 2)
    code, details = code_of(lambda: service.read_node(doc_id, "/title"))
    assert code == "document-not-found" and details["deleted"] is True
    assert doc_id not in [m.doc_id for m in service.list_documents().documents]
    meta = service.undelete_document(doc_id)
    assert meta.version == 4
    assert service.read_node(doc_id, "/title").node == "kept"
    assert [e.op for e in service.history(doc_id).entries][-2:] == ["delete_document", "undelete_document"]


def test_purge_needs_a_deleted_document_and_removes_it_for_good(service: DocumentService, tmp_path: Path) -> None:
    doc_id, *_ = service.create_document()
    assert code_of(lambda: service.purge_document(doc_id))[0] == "conflict"
    service.delete_document(doc_id, 1)
    service.purge_document(doc_id)
    assert code_of(lambda: service.undelete_document(doc_id))[0] == "document-not-found"
    assert not list(tmp_path.glob(f"{doc_id}*.json*"))


def test_merge_patch_deletes_with_null_and_rejects_unknown_properties_before_applying(
        service: DocumentService) -> None:
    doc_id, *_ = service.create_document()
    service.create_node(doc_id, "/metadata/isbn", "9780000000001", 1)
    result = service.merge_patch(doc_id, "/metadata", {"isbn": None, "status": "review"}, 2)
    assert {"op": "remove", "path": "/metadata/isbn"} in result.patch
    assert service.read_node(doc_id, "/metadata/status").node == "review"
    code, details = code_of(lambda: service.merge_patch(doc_id, "/metadata", {"colour": "red", "edition": "x"}, 3))
    assert code == "validation-failed"
    assert len(details["violations"]) >= 2
    assert service.version_of(doc_id) == 3


def test_the_change_feed_neither_skips_nor_repeats_across_restarts(tmp_path: Path) -> None:
    service = DocumentService(SCHEMA, FileDocumentStore(tmp_path))
    service.open()
    a, *_ = service.create_document()
    b, *_ = service.create_document()
    service.update_node(a, "/title", "x", 1)
    first = service.changes(since=0, limit=2)
    assert [(c.doc_id, c.version) for c in first.changes] == [(a, 1), (b, 1)]
    restarted = DocumentService(SCHEMA, FileDocumentStore(tmp_path))
    restarted.open()
    restarted.update_node(b, "/title", "y", 1)
    rest = restarted.changes(since=first.next_cursor)
    assert [(c.doc_id, c.version) for c in rest.changes] == [(a, 2), (b, 2)]
    assert restarted.changes(since=rest.next_cursor).changes == []


def test_memory_store_behaves_like_files_for_the_service() -> None:
    service = DocumentService(SCHEMA, MemoryDocumentStore())
    service.open()
    doc_id, *_ = service.create_document()
    service.create_node(doc_id, "/chapters/-", CHAPTER, 1)
    assert service.read_node(doc_id, "/chapters/-1/id").node == "ch-1"
    assert service.diff(doc_id, 2, 1) == [{"op": "remove", "path": "/chapters/0"}]


def test_values_json_cannot_store_exactly_are_refused_and_change_nothing(service: DocumentService) -> None:
    doc_id, *_ = service.create_document()
    deep: Any = {"title": "Deep", "paragraphs": [], "sections": []}
    for _ in range(140):
        deep = {"title": "Deep", "paragraphs": [], "sections": [deep]}
    chapter = {"id": "ch-1", "title": "One", "sections": [deep]}
    code, details = code_of(lambda: service.create_node(doc_id, "/chapters/-", chapter, 1))
    assert code == "document-too-deep" and details["max_json_depth"] == MAX_JSON_DEPTH
    code, _ = code_of(lambda: service.apply_patch(doc_id, [{"op": "replace", "path": "/title", "value": "x"},
                                                           {"op": "add", "path": "/metadata/n", "value": 2**70}], 1))
    assert code == "validation-failed"  # the schema speaks first: metadata allows no member "n"
    assert service.version_of(doc_id) == 1


def test_an_integer_beyond_64_bits_is_refused_where_the_schema_allows_it(tmp_path: Path) -> None:
    schema_file = tmp_path / "numbers.schema.json"
    schema_file.write_text('{"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",'
                           ' "properties": {"n": {"type": "integer"}}}')
    service = DocumentService(load_schema(schema_file), MemoryDocumentStore())
    service.open()
    doc_id, *_ = service.create_document()
    code, _ = code_of(lambda: service.create_node(doc_id, "/n", 2**70, 1))
    assert code == "number-out-of-range"
    assert code_of(lambda: service.create_node(doc_id, "/n", 2**70, 1, dry_run=True))[0] == "number-out-of-range"
    assert service.create_node(doc_id, "/n", 2**63 - 1, 1).version == 2


class CountingStore(MemoryDocumentStore):
    """Counts the journal entries the service reads back."""

    def __init__(self) -> None:
        super().__init__()
        self.entries_read = 0

    def read_journal(self, doc_id: str, since_version: int = 0, until_version: int | None = None) -> Any:
        entries = super().read_journal(doc_id, since_version, until_version)
        self.entries_read += len(entries)
        return entries


def test_past_versions_are_rebuilt_from_persisted_checkpoints_not_from_version_one() -> None:
    store = CountingStore()
    writer = DocumentService(SCHEMA, store)
    doc_id, *_ = writer.create_document()
    for version in range(1, 600):
        writer.update_node(doc_id, "/title", f"t{version + 1}", version)
    assert writer.snapshots.wait_idle()  # history checkpoints are written in the background
    assert store.read_checkpoint(doc_id, 599) is not None and store.read_checkpoint(doc_id, 599)[0] == 512
    reader = DocumentService(SCHEMA, store)  # a restart: nothing in memory
    for version in (2, 300, 511, 512, 599):
        store.entries_read = 0
        title = reader.read_version(doc_id, version)["title"]
        assert title == (f"t{version}" if version > 1 else "Untitled")
        assert store.entries_read < 256, (version, store.entries_read)
    assert reader.diff(doc_id, 300, 301) == [{"op": "replace", "path": "/title", "value": "t301"}]


def test_a_checkpoint_torn_by_a_crash_is_ignored_and_the_journal_replayed(tmp_path: Path) -> None:
    service = DocumentService(SCHEMA, FileDocumentStore(tmp_path))
    service.open()
    doc_id, *_ = service.create_document()
    for version in range(1, 300):
        service.update_node(doc_id, "/title", f"t{version + 1}", version)
    assert service.snapshots.wait_idle()  # history checkpoints are written in the background
    checkpoint = tmp_path / "checkpoints" / doc_id / "256.json"
    assert checkpoint.exists()
    checkpoint.write_bytes(b"")  # what a crash before the data reached the disk can leave
    restarted = DocumentService(SCHEMA, FileDocumentStore(tmp_path))
    restarted.open()
    assert restarted.read_version(doc_id, 280)["title"] == "t280"


def _nested(levels: int) -> Any:
    value: Any = "leaf"
    for _ in range(levels):
        value = [value]
    return value


@pytest.mark.parametrize("limit", [5, MAX_JSON_DEPTH])
def test_a_write_may_nest_the_document_up_to_the_depth_limit_and_not_one_level_more(tmp_path: Path,
                                                                                    limit: int) -> None:
    service = DocumentService(load_schema(ANY_OBJECT_SCHEMA), MemoryDocumentStore(), max_json_depth=limit)
    service.open()
    doc_id, *_ = service.create_document()
    service.create_node(doc_id, "/a", {"b": _nested(limit - 2)}, 1)  # root, /a, then limit - 2 arrays
    assert service.version_of(doc_id) == 2
    for write in (lambda: service.create_node(doc_id, "/c", {"b": _nested(limit - 1)}, 2),
                  lambda: service.create_node(doc_id, "/c", {"b": _nested(limit - 1)}, 2, dry_run=True),
                  # a shallow value written deep down: the path counts too
                  lambda: service.create_node(doc_id, "/a/b" + "/0" * (limit - 3) + "/0", [], 2),
                  lambda: service.apply_patch(doc_id, [{"op": "copy", "from": "/a", "path": "/a/b/0"}], 2)):
        code, details = code_of(write)
        assert (code, details["max_json_depth"]) == ("document-too-deep", limit)
    assert service.version_of(doc_id) == 2
