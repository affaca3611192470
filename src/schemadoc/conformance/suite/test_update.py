"""Story 4: update content at a path, with whole-document validation and optimistic locking."""

from __future__ import annotations

import anyio
import pytest

from ..readings import expected_matches, value_matches
from .doors import Door, Outcome, book_doc, failed, offers, ok, sample_book

pytestmark = pytest.mark.anyio


async def test_an_update_replaces_the_node_and_moves_the_version_on_by_one(door: Door) -> None:
    doc = await book_doc(door)
    before = doc.version
    assert await doc.content("/title") == "The Conformance Book"  # read before the write: reads stay fresh
    outcome = await doc.update("/title", "A Better Title")
    body = ok(outcome)
    assert outcome.status == 200
    assert body["version"] == before + 1
    assert body["updated_node"] == "A Better Title"
    assert body["validation_report"]["valid"] is True
    if offers(body, "node_path"):
        assert body["node_path"] == "/title"
    if offers(body, "patch"):
        assert body["patch"] == [{"op": "replace", "path": "/title", "value": "A Better Title"}]
    assert await doc.content("/title") == "A Better Title"


async def test_an_update_at_an_array_index_changes_only_that_item(door: Door) -> None:
    doc = await book_doc(door)
    ok(await doc.update("/chapters/1/title", "The Middle"))
    expected = sample_book()
    expected["chapters"][1]["title"] = "The Middle"
    assert await doc.content() == expected


async def test_an_update_through_a_negative_index_writes_the_concrete_path(door: Door) -> None:
    doc = await book_doc(door)
    body = ok(await doc.update("/chapters/-1/title", "The End"))
    if offers(body, "node_path"):
        assert body["node_path"] == "/chapters/2/title"
    if offers(body, "patch"):
        assert body["patch"] == [{"op": "replace", "path": "/chapters/2/title", "value": "The End"}]
    assert [c["title"] for c in await doc.content("/chapters")] == ["Chapter 1", "Chapter 2", "The End"]


async def test_an_update_of_the_root_replaces_the_whole_document(door: Door) -> None:
    doc = await book_doc(door)
    book = sample_book()
    book["chapters"] = book["chapters"][:1]
    ok(await doc.update("/", book))
    assert await doc.content() == book


async def test_an_invalid_update_lists_every_violation_and_changes_nothing(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    metadata = {**sample_book()["metadata"], "status": "bogus", "edition": 0, "isbn": "not an isbn",
                "created": "yesterday"}
    outcome = await doc.update("/metadata", metadata)
    error = failed(outcome, "validation-failed")
    assert outcome.status == 422
    violations = error["details"]["violations"]
    by_path = {violation["path"]: violation for violation in violations}
    assert {"/metadata/status", "/metadata/edition", "/metadata/isbn", "/metadata/created"} <= set(by_path)
    assert by_path["/metadata/status"]["code"] == "enum-mismatch"
    assert by_path["/metadata/edition"]["code"] == "minimum"
    assert by_path["/metadata/isbn"]["code"] == "pattern-failed"
    assert by_path["/metadata/created"]["code"] == "format-invalid"
    for violation in violations:
        for member in ("code", "message", "path", "constraint", "expected", "actual"):
            assert member in violation, f"{member} missing from {violation}"
        assert violation["message"]
    assert by_path["/metadata/edition"]["constraint"] == "minimum"
    assert expected_matches(by_path["/metadata/edition"]["expected"], 1)
    assert value_matches(by_path["/metadata/edition"]["actual"], 0)
    assert value_matches(by_path["/metadata/status"]["actual"], "bogus")
    assert await doc.snapshot() == before


async def test_setting_a_required_field_to_null_is_rejected_with_a_report(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    error = failed(await doc.update("/title", None), "validation-failed")
    violations = error["details"]["violations"]
    assert any(v["path"] == "/title" and v["code"] == "type-mismatch" and value_matches(v["actual"], None)
               for v in violations), violations
    assert await doc.snapshot() == before


async def test_an_update_below_a_missing_intermediate_is_path_not_found(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    error = failed(await doc.update("/chapters/9/sections/0/title", "Nowhere"), "path-not-found")
    assert error["details"]["deepest_ancestor"] == "/chapters"
    assert error["details"]["create_first"] == "/chapters/9"
    assert error["details"]["array_length"] == 3
    assert error["remediation"]
    error = failed(await doc.update("/metadata/homepage", "https://example.org"), "path-not-found")
    assert error["details"]["deepest_ancestor"] == "/metadata"
    assert await doc.snapshot() == before


async def test_a_stale_version_is_a_version_conflict_naming_both_versions(door: Door) -> None:
    doc = await book_doc(door)
    stale = doc.version
    ok(await doc.update("/title", "First"))
    before = await doc.snapshot()
    outcome = await doc.update("/title", "Second", version=stale)
    error = failed(outcome, "version-conflict")
    assert outcome.status == 409
    assert error["details"]["expected_version"] == stale
    assert error["details"]["actual_version"] == stale + 1
    assert await doc.snapshot() == before


async def test_a_version_from_the_future_is_a_version_conflict(door: Door) -> None:
    doc = await book_doc(door)
    error = failed(await doc.update("/title", "Later", version=doc.version + 5), "version-conflict")
    assert error["details"]["actual_version"] == doc.version


async def test_of_two_concurrent_writers_from_one_version_exactly_one_wins(door: Door) -> None:
    doc = await book_doc(door)
    version = doc.version
    outcomes: list[Outcome] = []

    async def write(title: str) -> None:
        outcomes.append(await door.call("document_update_node", {
            "doc_id": doc.doc_id, "node_path": "/title", "node_data": title, "version": version}))

    async with anyio.create_task_group() as group:
        for title in ("Writer A", "Writer B", "Writer C"):
            group.start_soon(write, title)
    winners = [outcome for outcome in outcomes if outcome.ok]
    losers = [outcome for outcome in outcomes if not outcome.ok]
    assert len(winners) == 1, outcomes
    assert {loser.code for loser in losers} == {"version-conflict"}
    doc.version = version + 1
    assert await doc.content("/title") == winners[0].body["updated_node"]
