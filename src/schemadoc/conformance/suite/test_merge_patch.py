"""RFC 7396 merge patches: checked against the node's schema first, journaled as an RFC 6902 patch."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import jsonpatch
import pytest

from .doors import Door, book_doc, failed, ok, sample_book

pytestmark = pytest.mark.anyio


def _problems(violations: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """(path, code) of every violation, including those nested in the alternatives of an any-of."""
    for violation in violations:
        yield violation["path"], violation["code"]
        for alternative in violation.get("alternatives") or []:
            yield from _problems(alternative)


async def test_members_are_set_and_null_deletes_a_member(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.content()
    outcome = await doc.merge("/metadata", {"status": "review", "isbn": None, "edition": 2})
    body = ok(outcome)
    assert outcome.status == 200
    assert body["version"] == 3
    assert body["node_path"] == "/metadata"
    expected = copy.deepcopy(before)
    expected["metadata"].update(status="review", edition=2)
    del expected["metadata"]["isbn"]
    assert body["updated_node"] == expected["metadata"]
    assert await doc.content() == expected
    assert sorted(body["patch"], key=lambda op: op["path"]) == [
        {"op": "replace", "path": "/metadata/edition", "value": 2},
        {"op": "remove", "path": "/metadata/isbn"},
        {"op": "replace", "path": "/metadata/status", "value": "review"},
    ]


async def test_nested_objects_merge_and_arrays_replace(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.content()
    body = ok(await doc.merge("/", {"metadata": {"author": {"email": "ada@lovelace.org"}}, "tags": ["b", "a"]}))
    expected = copy.deepcopy(before)
    expected["metadata"]["author"]["email"] = "ada@lovelace.org"
    expected["tags"] = ["b", "a"]
    assert await doc.content() == expected
    assert expected["metadata"]["author"]["name"] == "Ada Lovelace", "members left out stay as they are"
    assert body["node_path"] == "/"
    assert jsonpatch.apply_patch(copy.deepcopy(before), body["patch"]) == expected


async def test_a_merge_patch_that_is_no_object_replaces_the_node(door: Door) -> None:
    doc = await book_doc(door)
    body = ok(await doc.merge("/chapters/-1/title", "The Very End"))
    assert body["node_path"] == "/chapters/2/title"
    assert body["patch"] == [{"op": "replace", "path": "/chapters/2/title", "value": "The Very End"}]
    assert await doc.content("/chapters/2/title") == "The Very End"


async def test_the_result_patch_is_rfc_6902_and_the_history_records_a_merge_patch(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.content()
    body = ok(await doc.merge("/", {"title": "Merged", "metadata": {"keywords": None, "language": "fr"}}))
    for operation in body["patch"]:
        assert operation["op"] in ("add", "remove", "replace", "move", "copy", "test"), operation
        assert operation["path"].startswith("/")
    after = await doc.content()
    assert jsonpatch.apply_patch(copy.deepcopy(before), body["patch"]) == after
    last = (await doc.history())[-1]
    assert (last["version"], last["op"], last["patch"]) == (doc.version, "merge_patch", body["patch"])


async def test_a_merge_patch_that_does_not_fit_the_schema_lists_every_problem_and_changes_nothing(
        door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    outcome = await doc.merge("/", {"bogus": 1, "title": 5, "metadata": {"edition": "two", "nope": True}})
    error = failed(outcome, "validation-failed")
    assert outcome.status == 422
    assert error["remediation"]
    problems = set(_problems(error["details"]["violations"]))
    assert {"/title", "/metadata/edition", "/metadata"} <= {path for path, _code in problems}
    assert ("", "additional-properties-forbidden") in problems, "the unknown member bogus"
    assert ("/metadata", "additional-properties-forbidden") in problems, "the unknown member nope"
    assert ("/title", "type-mismatch") in problems
    assert ("/metadata/edition", "type-mismatch") in problems
    assert await doc.snapshot() == before
    assert len(await doc.history()) == before[0]


async def test_a_merge_patch_is_refused_with_every_violation_it_would_cause_at_once(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    outcome = await doc.merge("/metadata", {"language": None, "title": None, "isbn": "12"})
    error = failed(outcome, "validation-failed")
    assert outcome.status == 422
    found = [(violation["path"], violation["code"]) for violation in error["details"]["violations"]]
    assert sorted(found) == [("/metadata", "additional-properties-forbidden"),  # title: metadata has none
                             ("/metadata", "required-missing"),  # language deleted
                             ("/metadata/isbn", "pattern-failed")], "every violation, each once"
    assert await doc.snapshot() == before


async def test_a_merge_patch_whose_result_breaks_the_schema_is_validation_failed(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    error = failed(await doc.merge("/", {"title": None}), "validation-failed")
    assert any(violation["code"] == "required-missing" for violation in error["details"]["violations"])
    assert await doc.snapshot() == before


async def test_a_dry_run_merge_patch_returns_the_patch_and_changes_nothing(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    body = ok(await doc.merge("/metadata", {"status": "published"}, dry_run=True))
    assert body["dry_run"] is True
    assert body["version"] == before[0]
    assert body["patch"] == [{"op": "replace", "path": "/metadata/status", "value": "published"}]
    assert body["updated_node"]["status"] == "published"
    assert await doc.snapshot() == before


async def test_a_merge_patch_checks_the_version_and_the_path(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    error = failed(await doc.merge("/metadata", {"edition": 3}, version=1), "version-conflict")
    assert error["details"]["actual_version"] == before[0]
    error = failed(await doc.merge("/metadata/homepage", "https://example.org"), "path-not-found")
    assert error["details"]["deepest_ancestor"] == "/metadata"
    failed(await doc.merge("/", [1, 2]), "validation-failed")
    failed(await door.call("document_merge_patch", {"doc_id": doc.doc_id, "node_path": "/",
                                                     "version": doc.version}), "invalid-request")
    assert await doc.snapshot() == before
    assert sample_book() == before[1]
