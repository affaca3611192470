"""Story 6: delete content at a path."""

from __future__ import annotations

import pytest

from ..readings import expected_matches, same_pointer, value_matches
from ..spec import is_kebab_code
from .doors import Door, book_doc, failed, offers, ok, sample_book

pytestmark = pytest.mark.anyio


async def test_deleting_an_optional_member_removes_it_and_returns_it(door: Door) -> None:
    doc = await book_doc(door)
    before = doc.version
    outcome = await doc.delete("/metadata/keywords")
    body = ok(outcome)
    assert outcome.status == 200
    assert body["deleted_node"] == ["json", "schema"]
    assert body["version"] == before + 1
    if offers(body, "node_path"):
        assert body["node_path"] == "/metadata/keywords"
    if offers(body, "patch"):
        assert body["patch"] == [{"op": "remove", "path": "/metadata/keywords"}]
    failed(await doc.read("/metadata/keywords"), "path-not-found")


async def test_deleting_a_required_member_is_rejected_as_required_missing(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    error = failed(await doc.delete("/title"), "validation-failed")
    violations = error["details"]["violations"]
    assert [v["code"] for v in violations] == ["required-missing"]
    assert same_pointer(violations[0]["path"], "")
    assert expected_matches(violations[0]["expected"], "title")
    assert await doc.snapshot() == before


async def test_deleting_an_array_item_reindexes_the_rest(door: Door) -> None:
    doc = await book_doc(door)
    body = ok(await doc.delete("/chapters/0"))
    assert body["deleted_node"]["id"] == "ch-1"
    chapters = await doc.content("/chapters")
    assert [c["id"] for c in chapters] == ["ch-2", "ch-3"]
    assert chapters == sample_book()["chapters"][1:]


async def test_deleting_through_a_negative_index_removes_the_last_item(door: Door) -> None:
    doc = await book_doc(door)
    body = ok(await doc.delete("/chapters/-1"))
    assert body["deleted_node"]["id"] == "ch-3"
    if offers(body, "patch"):
        assert body["patch"] == [{"op": "remove", "path": "/chapters/2"}]
    assert [c["id"] for c in await doc.content("/chapters")] == ["ch-1", "ch-2"]


async def test_deleting_a_missing_path_is_path_not_found(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    outcome = await doc.delete("/metadata/homepage")
    error = failed(outcome, "path-not-found")
    assert outcome.status == 404
    assert error["details"]["deepest_ancestor"] == "/metadata"
    failed(await doc.delete("/chapters/3"), "path-not-found")
    assert await doc.snapshot() == before


async def test_a_delete_that_would_break_min_items_is_rejected(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    error = failed(await doc.delete("/chapters/1/sections/0"), "validation-failed")
    violations = error["details"]["violations"]
    assert [(v["path"], v["code"]) for v in violations] == [("/chapters/1/sections", "min-items")]
    assert expected_matches(violations[0]["expected"], 1)
    assert value_matches(violations[0]["actual"], 0)
    assert await doc.snapshot() == before


@pytest.mark.parametrize("node_path", ["/", ""])
async def test_the_root_cannot_be_deleted(door: Door, node_path: str) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    outcome = await doc.delete(node_path)
    assert not outcome.ok and 400 <= outcome.status < 500, f"the root was not refused as a client error: {outcome!r}"
    assert is_kebab_code(outcome.code), outcome  # the spec names no code; schemadoc's is root-not-deletable
    assert await doc.snapshot() == before
