"""Undo and the life of a whole document: revert to a past version, delete, undelete, purge."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest

from ..readings import id_key, same_id
from .doors import UNKNOWN_DOC_ID, Doc, Door, book_doc, failed, ok, sample_book

pytestmark = pytest.mark.anyio


async def _listed(door: Door) -> set[str]:
    """The ids of every listed document, in upper case (compare them with :func:`id_key`)."""
    ids: set[str] = set()
    offset = 0
    while True:
        body = ok(await door.call("document_list", {"limit": 1000, "offset": offset}))
        ids |= {id_key(summary["doc_id"]) for summary in body["documents"]}
        if not body["has_more"]:
            return ids
        # an MCP result cut to its size budget says where the next page starts
        offset = body["next_offset"] if body.get("truncated") else offset + 1000


async def _edited(door: Door) -> Doc:
    """A book at version 4: title changed (3), then the first chapter deleted (4)."""
    doc = await book_doc(door)
    ok(await doc.update("/title", "Changed"))
    ok(await doc.delete("/chapters/0"))
    return doc


# -- revert --------------------------------------------------------------------------------------------


async def test_a_revert_makes_a_new_version_with_the_old_content(door: Door) -> None:
    doc = await _edited(door)
    before = await doc.content()
    outcome = await doc.revert(2)
    body = ok(outcome)
    assert outcome.status == 200
    assert body["version"] == 5
    assert body["to_version"] == 2
    assert body["dry_run"] is False
    assert body["validation_report"]["valid"] is True
    assert await doc.content() == sample_book()
    assert jsonpatch.apply_patch(copy.deepcopy(before), body["patch"]) == sample_book()
    entries = await doc.history()
    assert [entry["version"] for entry in entries] == [1, 2, 3, 4, 5], "nothing in the history is rewritten"
    assert entries[-1]["op"] == "revert"
    assert entries[-1]["patch"] == body["patch"]
    assert entries[-1]["info"]["to_version"] == 2
    assert await doc.at(4) == before


async def test_a_revert_can_itself_be_reverted(door: Door) -> None:
    doc = await _edited(door)
    edited = await doc.content()
    ok(await doc.revert(1))
    assert await doc.content() == await doc.at(1)
    ok(await doc.revert(4))
    assert doc.version == 6
    assert await doc.content() == edited


async def test_a_revert_to_the_current_content_is_an_empty_new_version(door: Door) -> None:
    doc = await _edited(door)
    body = ok(await doc.revert(4))
    assert body["patch"] == []
    assert doc.version == 5


async def test_a_dry_run_revert_returns_the_patch_and_changes_nothing(door: Door) -> None:
    doc = await _edited(door)
    before = await doc.snapshot()
    body = ok(await doc.revert(2, dry_run=True))
    assert body["dry_run"] is True
    assert body["version"] == 4
    assert body.get("would_be_version", 5) == 5
    assert jsonpatch.apply_patch(copy.deepcopy(before[1]), body["patch"]) == sample_book()
    assert await doc.snapshot() == before
    assert len(await doc.history()) == 4


async def test_a_revert_with_a_stale_version_is_a_version_conflict(door: Door) -> None:
    doc = await _edited(door)
    before = await doc.snapshot()
    error = failed(await doc.revert(2, version=3), "version-conflict")
    assert error["details"]["actual_version"] == 4
    failed(await doc.revert(2, version=3, dry_run=True), "version-conflict")
    assert await doc.snapshot() == before


async def test_a_revert_to_a_version_the_document_lacks_fails_and_changes_nothing(door: Door) -> None:
    doc = await _edited(door)
    before = await doc.snapshot()
    error = failed(await doc.revert(5), "version-not-found")
    assert error["details"]["latest_version"] == 4
    error = failed(await doc.revert(0), "invalid-request")
    assert error["details"]["argument"] == "to_version"
    failed(await door.call("document_revert", {"doc_id": doc.doc_id, "version": doc.version}), "invalid-request")
    assert await doc.snapshot() == before


# -- delete, undelete, purge ---------------------------------------------------------------------------


async def test_a_deleted_document_is_gone_from_reads_writes_and_the_list(door: Door) -> None:
    doc = await _edited(door)
    outcome = await doc.delete_document()
    body = ok(outcome)
    assert outcome.status == 200
    assert same_id(body["doc_id"], doc.doc_id) and (body["version"], body["deleted"]) == (5, True)
    assert body["deleted_at"]
    gone = [
        await doc.read("/"),
        await doc.read("/title"),
        await door.call("document_read_node", {"doc_id": doc.doc_id, "node_path": "/", "at_version": 2}),
        await door.call("document_history", {"doc_id": doc.doc_id}),
        await door.call("document_diff", {"doc_id": doc.doc_id, "from_version": 1, "to_version": 2}),
        await doc.update("/title", "Ghost"),
        await doc.merge("/", {"title": "Ghost"}),
        await doc.revert(2),
        await doc.delete_document(),
        await door.read_document(doc.doc_id),
        await door.read_version(doc.doc_id, 2),
    ]
    for outcome in gone:
        error = failed(outcome, "document-not-found")
        assert error["details"]["deleted"] is True, outcome
    assert id_key(doc.doc_id) not in await _listed(door)


async def test_a_delete_with_a_stale_version_is_a_version_conflict(door: Door) -> None:
    doc = await _edited(door)
    error = failed(await doc.delete_document(version=3), "version-conflict")
    assert error["details"]["actual_version"] == 4
    assert await doc.content("/title") == "Changed"


async def test_a_delete_has_no_dry_run(door: Door) -> None:
    doc = await _edited(door)
    error = failed(await doc.delete_document(dry_run=True), "invalid-request")
    assert error["details"]["argument"] == "dry_run"
    assert await doc.content("/title") == "Changed"
    assert id_key(doc.doc_id) in await _listed(door)


async def test_an_undelete_brings_the_document_back_with_its_history(door: Door) -> None:
    doc = await _edited(door)
    content = await doc.content()
    ok(await doc.delete_document())
    outcome = await door.call("document_undelete", {"doc_id": doc.doc_id})
    body = ok(outcome)
    assert same_id(body["doc_id"], doc.doc_id) and body == {**body, "version": 6, "deleted": False}
    assert body.get("deleted_at") is None
    doc.version = 6
    assert await doc.content() == content
    assert id_key(doc.doc_id) in await _listed(door)
    entries = await doc.history()
    assert [entry["op"] for entry in entries] == ["create", "update_node", "update_node", "delete_node",
                                                  "delete_document", "undelete_document"]
    assert await doc.at(2) == sample_book()
    ok(await doc.update("/title", "Back"))
    assert doc.version == 7, "versions continue after the undelete"


async def test_only_a_deleted_document_can_be_undeleted_or_purged(door: Door) -> None:
    doc = await _edited(door)
    for tool in ("document_undelete", "document_purge"):
        outcome = await door.call(tool, {"doc_id": doc.doc_id})
        failed(outcome, "conflict")
        assert outcome.status == 409
    assert await doc.content("/title") == "Changed"
    for tool in ("document_undelete", "document_purge"):
        failed(await door.call(tool, {"doc_id": UNKNOWN_DOC_ID}), "document-not-found")
        failed(await door.call(tool, {"doc_id": "not-a-ulid"}), "invalid-doc-id")


async def test_a_purged_document_is_gone_for_good(door: Door) -> None:
    doc = await _edited(door)
    ok(await doc.delete_document())
    body = ok(await door.call("document_purge", {"doc_id": doc.doc_id}))
    assert same_id(body["doc_id"], doc.doc_id) and body == {**body, "purged": True}
    after: list[Any] = [
        await doc.read("/"),
        await door.call("document_history", {"doc_id": doc.doc_id}),
        await door.call("document_undelete", {"doc_id": doc.doc_id}),
        await door.call("document_purge", {"doc_id": doc.doc_id}),
        await doc.update("/title", "Ghost"),
    ]
    for outcome in after:
        error = failed(outcome, "document-not-found")
        assert error["details"].get("deleted") is not True, "a purged document is not merely deleted"
    assert id_key(doc.doc_id) not in await _listed(door)
