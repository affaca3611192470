"""Each document's verdict under the served schema: the digest every write records, checks that record a verdict
without a new version, the background inventory, and the ``valid`` filter of the list."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from schemadoc.schema import LoadedSchema, load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.base import DocumentMeta, DocumentStore, Verdict
from schemadoc.storage.files import FileDocumentStore
from schemadoc.storage.memory import MemoryDocumentStore

BOOK = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"


def tightened_book(folder: Path) -> Path:
    """The book schema with a new required ``isbn`` (no default) and titles of at most 3 characters."""
    schema = json.loads(BOOK.read_text(encoding="utf-8"))
    schema["properties"]["isbn"] = {"type": "string", "pattern": "^[0-9-]{10,17}$"}
    schema["required"] = [*schema["required"], "isbn"]
    schema["properties"]["title"]["maxLength"] = 3
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "book.schema.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    return path


def reference_errors(schema: LoadedSchema, content: Any) -> int:
    """How many errors python-jsonschema (the reference validator) finds in ``content``."""
    return sum(1 for _ in schema.make_reference_validator().iter_errors(content))


StoreFactory = Callable[[], DocumentStore]


@pytest.fixture(params=["files", "memory"])
def reopen(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[LoadedSchema], DocumentService]:
    """A service on the same store each call (files: the same directory; memory: the same store object)."""
    memory = MemoryDocumentStore()

    def make(schema: LoadedSchema) -> DocumentService:
        store: DocumentStore = FileDocumentStore(tmp_path / "store") if request.param == "files" else memory
        service = DocumentService(schema, store)
        service.open()
        return service

    return make


def _some_books(service: DocumentService) -> dict[str, str]:
    """Three books: one with a 3-character title (it only lacks isbn later), one longer, one with an isbn."""
    titles = {"Abc": None, "A longer title": None, "Xyz": "978-3-16-148410-0"}
    made: dict[str, str] = {}
    for title, isbn in titles.items():
        doc_id, *_ = service.create_document({"title": title, **({"tags": [isbn]} if isbn else {})})
        service.update_node(doc_id, "/title", title, 1)
        made[title] = doc_id
    return made


def test_every_write_records_the_served_digest_and_a_valid_verdict(reopen: Any) -> None:
    schema = load_schema(BOOK)
    service = reopen(schema)
    doc_id, *_ = service.create_document({"title": "One"})
    service.update_node(doc_id, "/title", "Two", 1)
    meta = service.store.read_meta(doc_id)
    assert meta.version == 2 and meta.schema_digest == schema.digest
    assert meta.verdict == Verdict(2, schema.digest)
    service.close()
    stored = reopen(schema).store.read_meta(doc_id)  # persisted (files: journal line and meta file)
    assert (stored.schema_digest, stored.verdict) == (schema.digest, Verdict(2, schema.digest))
    assert reopen(schema).document_status(stored) == "valid"


def test_a_document_written_under_another_schema_is_unchecked_until_a_check_records_its_exact_verdict(
        reopen: Any, tmp_path: Path) -> None:
    old = load_schema(BOOK)
    service = reopen(old)
    books = _some_books(service)
    service.close()
    new = load_schema(tightened_book(tmp_path / "new"))
    served = reopen(new)
    for doc_id in books.values():
        meta = served.store.read_meta(doc_id)
        assert served.document_status(meta) == "unchecked" and meta.schema_digest == old.digest
    journal_before = {doc_id: served.store.read_journal(doc_id) for doc_id in books.values()}
    for title, doc_id in books.items():
        meta, ran = served.check_document(doc_id)
        assert ran and meta.version == 2  # no new version, nothing journaled
        content = served.read_node(doc_id, "").node
        expected = reference_errors(new, content)
        assert meta.verdict is not None and meta.verdict.digest == new.digest
        assert meta.verdict.violation_count == expected and meta.verdict.valid == (expected == 0), title
        codes = {(violation["code"], violation["path"]) for violation in meta.verdict.violations}
        assert ("required-missing", "") in codes  # the root, as validation reports name it
        assert (("max-length", "/title") in codes) == (len(title) > 3)
        assert served.check_document(doc_id) == (meta, False)  # known: not checked twice
        assert served.store.read_journal(doc_id) == journal_before[doc_id]
    served.close()
    again = reopen(new)  # the verdicts are kept: nothing is unchecked after a restart
    assert again.verdict_counts() == {"documents": 3, "valid": 0, "invalid": 3, "unchecked": 0}


def test_the_background_inventory_checks_each_unchecked_document_once_and_logs_its_progress(
        reopen: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    service = reopen(load_schema(BOOK))
    books = _some_books(service)
    service.close()
    loosened = json.loads(BOOK.read_text(encoding="utf-8"))
    loosened["description"] = "the same rules, another digest"
    (tmp_path / "loose").mkdir()
    (tmp_path / "loose" / "book.schema.json").write_text(json.dumps(loosened), encoding="utf-8")
    new = load_schema(tightened_book(tmp_path / "new"))
    served = reopen(new)
    written, *_ = served.create_document({"title": "New", "isbn": "0-306-40615-2"})  # its write records valid
    caplog.set_level(logging.INFO, logger="schemadoc.inventory")
    served.start_inventory().join(30)
    progress = served.inventory.to_dict()
    assert progress["state"] == "done" and progress["to_check"] == 3 and progress["checked"] == 3
    assert progress["invalid"] == 3 and progress["valid"] == 0
    assert served.verdict_counts() == {"documents": 4, "valid": 1, "invalid": 3, "unchecked": 0}
    messages = [record.getMessage() for record in caplog.records if record.name == "schemadoc.inventory"]
    assert messages[0].startswith("inventory: 3 document(s) to check") and "3 checked" in messages[-1]
    assert [meta.doc_id for meta in served.list_documents(valid=True).documents] == [written]
    assert {meta.doc_id for meta in served.list_documents(valid=False).documents} == set(books.values())
    assert served.list_documents(valid=False, limit=1).has_more
    served.close()
    # a schema with the same rules but another digest: every document unchecked again, and all valid once checked
    loose = reopen(load_schema(tmp_path / "loose" / "book.schema.json"))
    assert loose.list_documents(valid=True).total == 0 and loose.list_documents(valid=False).total == 0
    loose.start_inventory().join(30)
    assert loose.verdict_counts() == {"documents": 4, "valid": 3, "invalid": 1, "unchecked": 0}
    loose.close()


def test_the_inventory_keeps_nothing_it_checked_and_evicts_no_document_in_use(tmp_path: Path) -> None:
    """Each document is checked beside the memory budget: under a budget that holds one document, the one a reader
    holds stays held (no eviction, no reload) and none of those checked is kept; the verdicts are still exact."""
    old = load_schema(BOOK)
    service = DocumentService(old, FileDocumentStore(tmp_path / "store"))
    service.open()
    doc_ids = []
    for number in range(5):
        doc_id, *_ = service.create_document({"title": "Abc" if number % 2 else f"Book number {number}"})
        service.update_node(doc_id, "/tags", [f"t{number}"], 1)  # a journal entry to replay
        doc_ids.append(doc_id)
    service.close()
    new = load_schema(tightened_book(tmp_path / "new"))
    served = DocumentService(new, FileDocumentStore(tmp_path / "store"), memory_budget=1)
    served.open()
    in_use = doc_ids[0]
    served.read_document(in_use)  # a reader holds it: with this budget, any other document held would evict it
    loads, evictions = served._states.loads, served._states.evictions
    assert list(served._states._entries) == [in_use]
    served.start_inventory().join(30)
    progress = served.inventory.to_dict()
    assert progress["state"] == "done" and progress["checked"] == len(doc_ids) and progress["failed"] == 0
    assert list(served._states._entries) == [in_use]
    assert (served._states.loads, served._states.evictions) == (loads, evictions)
    for doc_id in doc_ids:
        meta = served.store.read_meta(doc_id)
        content = served.read_node(doc_id, "").node
        assert meta.verdict is not None and meta.verdict.violation_count == reference_errors(new, content)
    served.close()


def test_a_write_after_a_check_records_its_own_verdict_and_a_delete_keeps_it(reopen: Any, tmp_path: Path) -> None:
    schema = load_schema(BOOK)
    service = reopen(schema)
    doc_id, *_ = service.create_document({"title": "Long enough"})
    service.close()
    other = reopen(load_schema(tightened_book(tmp_path / "new")))
    meta, _ = other.check_document(doc_id)
    assert other.document_status(meta) == "invalid"
    other.close()
    back = reopen(schema)
    assert back.document_status(back.store.read_meta(doc_id)) == "unchecked"  # a verdict of another schema
    back.update_node(doc_id, "/title", "Shorter", 1)
    written = back.store.read_meta(doc_id)
    assert back.document_status(written) == "valid" and written.verdict == Verdict(2, schema.digest)
    deleted = back.delete_document(doc_id, 2)
    assert deleted.verdict == Verdict(3, schema.digest) and deleted.schema_digest == schema.digest
    restored = back.undelete_document(doc_id)
    assert back.document_status(restored) == "valid"


def test_a_check_records_nothing_for_a_version_that_moved_on(reopen: Any) -> None:
    schema = load_schema(BOOK)
    service = reopen(schema)
    doc_id, *_ = service.create_document({"title": "One"})
    stale = Verdict.of(1, "sha256:" + "0" * 64, [{"code": "x", "path": "/", "message": "m"}], 1)
    service.update_node(doc_id, "/title", "Two", 1)
    assert service.store.record_verdict(doc_id, stale) is False
    assert service.store.read_meta(doc_id).verdict == Verdict(2, schema.digest)


def test_a_verdict_is_bounded_whatever_the_report() -> None:
    many = [{"code": "c" * 1000, "path": "/" + "p" * 5000, "message": "m" * 10_000} for _ in range(500)]
    verdict = Verdict.of(7, "sha256:x", many, 500)
    assert verdict.violation_count == 500 and len(verdict.violations) == 5
    assert len(json.dumps(verdict.to_dict())) < 5_000
    assert Verdict.from_dict(verdict.to_dict()) == verdict
    assert Verdict.from_dict({"version": "7"}) is None
    meta = DocumentMeta("01ARZ3NDEKTSV4RRFFQ69G5FAV", 7, "u", "t", "t", 1, schema_digest="sha256:x", verdict=verdict)
    assert DocumentMeta.from_dict(meta.to_dict()) == meta


def test_a_whole_document_read_returns_a_document_a_schema_change_made_invalid_but_not_one_edited_behind_its_back(
        reopen: Any, tmp_path: Path) -> None:
    from dataclasses import replace

    from schemadoc.errors import SchemaDocError
    from schemadoc.ops.journal import JournalEntry, utc_now

    schema = load_schema(BOOK)
    service = reopen(schema)
    changed, *_ = service.create_document({"title": "Long enough"})
    edited, *_ = service.create_document({"title": "Fine"})
    meta = service.store.read_meta(edited)
    # a version the server never judged, committed straight into the store with the verdict "valid"
    bad = JournalEntry(2, "patch", [{"op": "replace", "path": "/title", "value": ""}], utc_now())
    service.store.commit(replace(meta, version=2, verdict=Verdict(2, schema.digest)), bad)
    service.close()
    served = reopen(schema)
    with pytest.raises(SchemaDocError) as caught:
        served.read_document(edited)
    assert caught.value.code == "storage-read-failed"
    served.close()
    tightened = reopen(load_schema(tightened_book(tmp_path / "new")))
    content, read_meta = tightened.read_document(changed)
    assert content["title"] == "Long enough" and tightened.document_status(read_meta) == "unchecked"
