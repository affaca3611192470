"""Story 5: create new content at a path."""

from __future__ import annotations

import pytest

from .doors import Door, book_doc, chapter, failed, offers, ok, sample_book

pytestmark = pytest.mark.anyio


async def test_appending_with_dash_creates_the_item_at_a_concrete_index(door: Door) -> None:
    doc = await book_doc(door)
    before = doc.version
    outcome = await doc.create("/chapters/-", chapter(4))
    body = ok(outcome)
    assert outcome.status == 201
    assert body["created_node_path"] == "/chapters/3"
    assert body["created_node"] == chapter(4)
    assert body["version"] == before + 1
    assert body["validation_report"]["valid"] is True
    if offers(body, "patch"):
        assert body["patch"] == [{"op": "add", "path": "/chapters/3", "value": chapter(4)}]
    assert await doc.content("/chapters/3") == chapter(4)


async def test_creating_at_an_index_inserts_and_shifts_the_rest(door: Door) -> None:
    doc = await book_doc(door)
    body = ok(await doc.create("/chapters/0", chapter(9)))
    assert body["created_node_path"] == "/chapters/0"
    expected = sample_book()
    expected["chapters"].insert(0, chapter(9))
    assert await doc.content() == expected


async def test_creating_at_a_negative_index_inserts_before_that_item_at_a_concrete_index(door: Door) -> None:
    """-k is the position len - k, as Python's list.insert counts it: -1 inserts before the last item."""
    doc = await book_doc(door)
    body = ok(await doc.create("/chapters/-1", chapter(9)))
    assert body["created_node_path"] == "/chapters/2"
    if offers(body, "patch"):
        assert body["patch"] == [{"op": "add", "path": "/chapters/2", "value": chapter(9)}]
    expected = sample_book()
    expected["chapters"].insert(-1, chapter(9))
    assert await doc.content() == expected
    failed(await doc.create("/chapters/-9", chapter(8)), "path-not-found")


async def test_creating_an_optional_member_adds_it(door: Door) -> None:
    doc = await book_doc(door)
    body = ok(await doc.create("/metadata/homepage", "https://example.org/book"))
    assert body["created_node_path"] == "/metadata/homepage"
    assert await doc.content("/metadata/homepage") == "https://example.org/book"


async def test_creating_where_a_member_exists_is_a_conflict(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    outcome = await doc.create("/title", "Another Title")
    error = failed(outcome, "conflict")
    assert outcome.status == 409
    assert error["details"]["path"] == "/title"
    assert error["remediation"]
    assert await doc.snapshot() == before


async def test_an_invalid_new_item_reports_every_violation_and_changes_nothing(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    bad = {"id": "chapter four", "title": 4, "sections": []}
    error = failed(await doc.create("/chapters/-", bad), "validation-failed")
    codes = {(v["path"], v["code"]) for v in error["details"]["violations"]}
    assert ("/chapters/3/id", "pattern-failed") in codes
    assert ("/chapters/3/title", "type-mismatch") in codes
    assert ("/chapters/3/sections", "min-items") in codes
    assert await doc.snapshot() == before


async def test_a_member_the_schema_does_not_allow_is_a_validation_failure(door: Door) -> None:
    doc = await book_doc(door)
    error = failed(await doc.create("/metadata/publisher", "ACME"), "validation-failed")
    assert [v["code"] for v in error["details"]["violations"]] == ["additional-properties-forbidden"]


async def test_creating_below_a_missing_intermediate_names_what_to_create_first(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    error = failed(await doc.create("/chapters/7/sections/-", {"title": "x", "paragraphs": []}),
                   "path-not-found")
    assert error["details"]["deepest_ancestor"] == "/chapters"
    assert error["details"]["create_first"] == "/chapters/7"
    assert await doc.snapshot() == before


async def test_inserting_past_the_end_of_an_array_is_path_not_found_with_its_length(door: Door) -> None:
    doc = await book_doc(door)
    error = failed(await doc.create("/chapters/5", chapter(5)), "path-not-found")
    assert error["details"]["array_length"] == 3
