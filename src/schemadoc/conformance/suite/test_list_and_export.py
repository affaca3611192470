"""Stories 7 and 8: list the documents, export a whole document."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from ..readings import id_key, ids_in
from .doors import BOOK_SCHEMA, UNKNOWN_DOC_ID, Door, book_doc, chapter, door_on_schema, offers, ok, sample_book

pytestmark = pytest.mark.anyio


async def _all_pages(door: Door, limit: int) -> list[dict[str, Any]]:
    documents: list[dict[str, Any]] = []
    offset = 0
    while True:
        body = ok(await door.call("document_list", {"limit": limit, "offset": offset}))
        if offers(body, "limit"):
            assert body["limit"] == limit and body["offset"] == offset
        assert len(body["documents"]) <= limit
        documents += body["documents"]
        if offers(body, "next_offset") and body.get("truncated"):
            # an MCP result cut to its size budget says where the next page starts
            assert body["next_offset"] == offset + len(body["documents"]) and body["has_more"]
        offset += len(body["documents"])
        if not body["has_more"]:
            assert offset >= body["total_documents"]
            return documents
        assert body["documents"], f"has_more with an empty page at offset {offset}"


# -- story 7: list -----------------------------------------------------------------------------------


async def test_a_server_without_documents_lists_none(door_name: str, tmp_path: Path) -> None:
    """On a server of its own (in process, or started by the command on an empty storage; a server reached by
    URL may already hold documents)."""
    async with door_on_schema(door_name, BOOK_SCHEMA.name, tmp_path / "empty") as door:
        body = ok(await door.call("document_list", {}))
        assert body["documents"] == []
        assert body["total_documents"] == 0
        assert body["has_more"] is False
        assert body["schema_uri"] == ok(await door.call("schema_get_root", {}))["schema_uri"]


async def test_the_list_shows_every_document_with_its_summary(door: Door, fresh_server: bool) -> None:
    created = [ok(await door.call("document_create", {})) for _ in range(4)]
    edited = await book_doc(door)
    listed = {id_key(summary["doc_id"]): summary for summary in await _all_pages(door, limit=1000)}
    ids = [id_key(c["doc_id"]) for c in created] + [id_key(edited.doc_id)]
    assert set(ids) <= set(listed)
    if fresh_server:
        body = ok(await door.call("document_list", {}))
        assert body["total_documents"] == 5 and body["has_more"] is False
    for doc_id in ids:
        summary = listed[doc_id]
        created_at = datetime.fromisoformat(summary["created_at"].replace("Z", "+00:00"))
        modified_at = datetime.fromisoformat(summary["modified_at"].replace("Z", "+00:00"))
        assert created_at <= modified_at
        assert summary["tree_size_bytes"] > 0
        if offers(summary, "snapshot_version"):
            assert 1 <= summary["snapshot_version"] <= summary["version"]
    mine = listed[id_key(edited.doc_id)]
    if offers(mine, "version"):
        assert mine["version"] == edited.version
    assert mine["tree_size_bytes"] > listed[ids[0]]["tree_size_bytes"]


async def test_the_list_is_fresh_after_every_create_and_write(door: Door) -> None:
    """The same list request, asked again after a create and after a write, shows both."""
    before = {id_key(summary["doc_id"]) for summary in await _all_pages(door, limit=1000)}
    created = id_key(ok(await door.call("document_create", {}))["doc_id"])
    after_create = {id_key(summary["doc_id"]): summary for summary in await _all_pages(door, limit=1000)}
    assert created in after_create and created not in before, "the list does not show a new document"
    doc = await book_doc(door)
    small = {id_key(summary["doc_id"]): summary for summary in await _all_pages(door, limit=1000)}[id_key(doc.doc_id)]
    ok(await doc.create("/chapters/-", chapter(4, sections=3)))
    grown = {id_key(summary["doc_id"]): summary for summary in await _all_pages(door, limit=1000)}[id_key(doc.doc_id)]
    assert grown["tree_size_bytes"] > small["tree_size_bytes"], "the list's size did not follow a write"
    assert grown["modified_at"] >= small["modified_at"]


async def test_pages_cover_every_document_once(door: Door, fresh_server: bool) -> None:
    ids = {id_key(ok(await door.call("document_create", {}))["doc_id"]) for _ in range(5)}
    first = ok(await door.call("document_list", {"limit": 2}))
    assert len(first["documents"]) == 2
    assert first["has_more"] is True
    pages = await _all_pages(door, limit=2 if fresh_server else 500)
    listed = [id_key(summary["doc_id"]) for summary in pages]
    assert len(listed) == len(set(listed)), "a document appeared on two pages"
    assert ids <= set(listed)
    three = [summary["doc_id"] for summary in ok(await door.call("document_list", {"limit": 3}))["documents"]]
    shifted = ok(await door.call("document_list", {"limit": 2, "offset": 1}))["documents"]
    assert [summary["doc_id"] for summary in shifted] == three[1:], "offset 1 does not start at the second document"
    if fresh_server:
        assert first["total_documents"] == 5
        last = ok(await door.call("document_list", {"limit": 2, "offset": 4}))
        assert len(last["documents"]) == 1 and last["has_more"] is False
        beyond = ok(await door.call("document_list", {"limit": 2, "offset": 10}))
        assert beyond["documents"] == [] and beyond["has_more"] is False


# -- story 8: export ---------------------------------------------------------------------------------


async def test_the_export_is_the_result_of_every_edit(door: Door) -> None:
    doc = await book_doc(door)
    expected = sample_book()
    assert ok(await door.read_document(doc.doc_id))["document"] == expected  # read once before the edits

    async def edited(change: Any) -> None:
        change()
        assert ok(await door.read_document(doc.doc_id))["document"] == expected, "the export missed an edit"
        assert await doc.content() == expected

    ok(await doc.update("/title", "Edited"))
    await edited(lambda: expected.update(title="Edited"))
    ok(await doc.create("/chapters/-", chapter(4)))
    await edited(lambda: expected["chapters"].append(chapter(4)))
    ok(await doc.delete("/chapters/0"))
    await edited(lambda: expected["chapters"].pop(0))
    ok(await doc.create("/metadata/homepage", "https://example.org"))
    await edited(lambda: expected["metadata"].update(homepage="https://example.org"))


async def test_the_export_of_a_new_document_is_its_initial_tree(door: Door) -> None:
    created = ok(await door.call("document_create", {}))
    assert ok(await door.read_document(created["doc_id"]))["document"] == created["initial_tree"]


async def test_exporting_an_unknown_document_fails_as_not_found(door: Door) -> None:
    outcome = await door.read_document(UNKNOWN_DOC_ID)
    assert not outcome.ok
    if door.kind == "mcp":  # the MCP way: JSON-RPC "invalid params" naming the URI
        assert outcome.rpc_error == -32602, outcome
        assert ids_in(outcome.rpc_data["uri"], UNKNOWN_DOC_ID) == f"schema://{UNKNOWN_DOC_ID}"
        assert outcome.code in {"resource-not-found", "document-not-found"}
    else:
        assert outcome.code == "document-not-found"
        assert outcome.status == 404
