"""History and time travel: the journal page by page, reads at a past version, diffs between any two."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest

from ..readings import same_id
from .doors import UNKNOWN_DOC_ID, Doc, Door, book_doc, chapter, failed, ok, sample_book

pytestmark = pytest.mark.anyio


async def _story(door: Door) -> tuple[Doc, dict[int, Any], list[str]]:
    """A document taken through one write of every kind: (doc, content of each version, op of each version)."""
    doc = await book_doc(door)
    book = sample_book()
    versions: dict[int, Any] = {2: copy.deepcopy(book)}
    ops = ["create", "update_node"]

    ok(await doc.update("/title", "Second Title"))
    book["title"] = "Second Title"
    versions[doc.version] = copy.deepcopy(book)
    ops.append("update_node")

    ok(await doc.create("/chapters/-", chapter(4)))
    book["chapters"].append(chapter(4))
    versions[doc.version] = copy.deepcopy(book)
    ops.append("create_node")

    ok(await doc.delete("/chapters/0"))
    del book["chapters"][0]
    versions[doc.version] = copy.deepcopy(book)
    ops.append("delete_node")

    ok(await doc.patch([{"op": "replace", "path": "/metadata/edition", "value": 2}]))
    book["metadata"]["edition"] = 2
    versions[doc.version] = copy.deepcopy(book)
    ops.append("patch")

    ok(await doc.merge("/metadata", {"isbn": None, "status": "review"}))
    del book["metadata"]["isbn"]
    book["metadata"]["status"] = "review"
    versions[doc.version] = copy.deepcopy(book)
    ops.append("merge_patch")

    assert doc.version == 7
    return doc, versions, ops


# -- the journal ---------------------------------------------------------------------------------------


async def test_the_history_lists_every_version_oldest_first_with_its_operation(door: Door) -> None:
    doc, _versions, ops = await _story(door)
    entries = await doc.history()
    assert [entry["version"] for entry in entries] == list(range(1, 8))
    assert [entry["op"] for entry in entries] == ops
    for entry in entries:
        assert isinstance(entry["patch"], list)
        assert entry["at"]
    assert entries[2]["patch"] == [{"op": "replace", "path": "/title", "value": "Second Title"}]
    assert [entry["at"] for entry in entries] == sorted(entry["at"] for entry in entries)


async def test_the_history_pages_with_has_more_and_next_since_version(door: Door) -> None:
    doc, _versions, ops = await _story(door)
    first = ok(await door.call("document_history", {"doc_id": doc.doc_id, "limit": 3}))
    assert [entry["version"] for entry in first["entries"]] == [1, 2, 3]
    assert first["has_more"] is True
    assert first["next_since_version"] == 3
    assert first["current_version"] == 7
    last = ok(await door.call("document_history", {"doc_id": doc.doc_id, "since_version": 6, "limit": 3}))
    assert [entry["version"] for entry in last["entries"]] == [7]
    assert last["has_more"] is False
    assert last["next_since_version"] == 7
    paged = await doc.history(page_size=2)
    assert [entry["op"] for entry in paged] == ops
    assert paged == await doc.history()


async def test_replaying_the_journal_patches_rebuilds_the_document(door: Door) -> None:
    doc, versions, _ops = await _story(door)
    content: Any = {}
    for entry in await doc.history(page_size=4):
        content = jsonpatch.apply_patch(content, entry["patch"])
        if entry["version"] in versions:
            assert content == versions[entry["version"]], f"version {entry['version']}"
    assert content == await doc.content()


async def test_failed_and_dry_run_writes_leave_no_trace_in_the_history(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.history()
    ok(await doc.update("/title", "dry", dry_run=True))
    ok(await doc.merge("/", {"title": "dry"}, dry_run=True))
    ok(await doc.revert(1, dry_run=True))
    failed(await doc.update("/title", 5), "validation-failed")
    failed(await doc.update("/title", "stale", version=1), "version-conflict")
    failed(await doc.merge("/", {"bogus": 1}), "validation-failed")
    failed(await doc.revert(9), "version-not-found")
    assert await doc.history() == before


async def test_history_arguments_out_of_range_are_invalid_request(door: Door) -> None:
    doc = await book_doc(door)
    for args, argument in [({"limit": 0}, "limit"), ({"limit": 1001}, "limit"),
                           ({"since_version": -1}, "since_version")]:
        error = failed(await door.call("document_history", {"doc_id": doc.doc_id, **args}), "invalid-request")
        assert error["details"]["argument"] == argument, args


async def test_the_history_of_an_unknown_document_is_document_not_found(door: Door) -> None:
    failed(await door.call("document_history", {"doc_id": UNKNOWN_DOC_ID}), "document-not-found")
    failed(await door.call("document_history", {"doc_id": "not-a-ulid"}), "invalid-doc-id")


# -- reading a past version ----------------------------------------------------------------------------


async def test_a_read_at_a_past_version_returns_that_content_and_names_that_version(door: Door) -> None:
    doc, versions, _ops = await _story(door)
    for version, content in versions.items():
        assert await doc.at(version) == content
    assert await doc.at(2, "/title") == "The Conformance Book"
    assert await doc.at(3, "/title") == "Second Title"
    assert await doc.at(1) == ok(await door.call("document_history", {"doc_id": doc.doc_id, "limit": 1}))[
        "entries"][0]["patch"][0]["value"]
    assert await doc.at(doc.version) == await doc.content()
    assert ok(await doc.read("/title"))["version"] == doc.version, "a past read must not move the current version"


async def test_negative_indices_resolve_against_the_past_version(door: Door) -> None:
    doc, _versions, _ops = await _story(door)
    body = ok(await door.call("document_read_node",
                              {"doc_id": doc.doc_id, "node_path": "/chapters/-1/id", "at_version": 2}))
    assert (body["node_path"], body["node_content"]) == ("/chapters/2/id", "ch-3")
    body = ok(await door.call("document_read_node",
                              {"doc_id": doc.doc_id, "node_path": "/chapters/-1/id", "at_version": 4}))
    assert (body["node_path"], body["node_content"]) == ("/chapters/3/id", "ch-4")


async def test_a_path_missing_at_the_past_version_is_path_not_found_with_that_versions_ancestor(door: Door) -> None:
    doc, _versions, _ops = await _story(door)
    assert await doc.content("/chapters/0/id") == "ch-2"
    error = failed(await door.call("document_read_node",
                                   {"doc_id": doc.doc_id, "node_path": "/chapters/0/id", "at_version": 1}),
                   "path-not-found")
    assert error["details"]["deepest_ancestor"] == "/chapters"
    assert error["details"]["array_length"] == 0
    error = failed(await door.call("document_read_node",
                                   {"doc_id": doc.doc_id, "node_path": "/metadata/author/name", "at_version": 1}),
                   "path-not-found")
    assert error["details"]["deepest_ancestor"] == "/metadata"
    assert await doc.at(4, "/chapters/3/id") == "ch-4"
    error = failed(await doc.read("/chapters/3/id"), "path-not-found")
    assert error["details"]["array_length"] == 3


async def test_a_version_beyond_the_latest_is_version_not_found(door: Door) -> None:
    doc, _versions, _ops = await _story(door)
    outcome = await door.call("document_read_node", {"doc_id": doc.doc_id, "node_path": "/", "at_version": 8})
    error = failed(outcome, "version-not-found")
    assert outcome.status == 404
    assert error["details"]["version"] == 8
    assert error["details"]["latest_version"] == 7
    assert error["remediation"]


async def test_a_version_that_is_no_version_number_is_invalid_request(door: Door) -> None:
    doc = await book_doc(door)
    for at_version in (0, -1, 2.5, True):
        outcome = await door.call("document_read_node",
                                  {"doc_id": doc.doc_id, "node_path": "/", "at_version": at_version})
        error = failed(outcome, "invalid-request")
        assert error["details"]["argument"] == "at_version", at_version
    assert await doc.content() == sample_book(), "nothing was read wrongly, nothing changed"


async def test_every_version_can_be_read_whole(door: Door) -> None:
    doc, versions, _ops = await _story(door)
    for version, content in versions.items():
        assert ok(await door.read_version(doc.doc_id, version))["document"] == content
    failed(await door.read_version(doc.doc_id, 8), "version-not-found")
    failed(await door.read_version(UNKNOWN_DOC_ID, 1), "document-not-found")


async def test_version_zero_read_whole_is_version_not_found_naming_the_latest(door: Door) -> None:
    doc, _versions, _ops = await _story(door)
    error = failed(await door.read_version(doc.doc_id, 0), "version-not-found")
    assert error["details"]["latest_version"] == 7


# -- diffs ---------------------------------------------------------------------------------------------


async def test_a_diff_applied_to_the_from_version_gives_the_to_version_in_both_directions(door: Door) -> None:
    doc, versions, _ops = await _story(door)
    everything = {1: await doc.at(1), **versions}
    for source, target in [(2, 7), (7, 2), (1, 5), (5, 1), (3, 4), (6, 7), (7, 6)]:
        body = ok(await door.call("document_diff",
                                  {"doc_id": doc.doc_id, "from_version": source, "to_version": target}))
        assert same_id(body["doc_id"], doc.doc_id) and (body["from_version"], body["to_version"]) == (source, target)
        result = jsonpatch.apply_patch(copy.deepcopy(everything[source]), body["patch"])
        assert result == everything[target], f"diff {source} -> {target}"


async def test_the_diff_of_a_version_with_itself_is_empty(door: Door) -> None:
    doc, _versions, _ops = await _story(door)
    body = ok(await door.call("document_diff", {"doc_id": doc.doc_id, "from_version": 4, "to_version": 4}))
    assert body["patch"] == []


async def test_the_diff_of_a_single_write_is_that_writes_patch(door: Door) -> None:
    doc = await book_doc(door)
    written = ok(await doc.update("/metadata/edition", 3))
    body = ok(await door.call("document_diff",
                              {"doc_id": doc.doc_id, "from_version": doc.version - 1, "to_version": doc.version}))
    assert body["patch"] == written["patch"] == [{"op": "replace", "path": "/metadata/edition", "value": 3}]


async def test_a_diff_with_a_version_the_document_lacks_fails(door: Door) -> None:
    doc, _versions, _ops = await _story(door)
    error = failed(await door.call("document_diff", {"doc_id": doc.doc_id, "from_version": 2, "to_version": 9}),
                   "version-not-found")
    assert error["details"]["version"] == 9
    error = failed(await door.call("document_diff", {"doc_id": doc.doc_id, "from_version": 0, "to_version": 2}),
                   "invalid-request")
    assert error["details"]["argument"] == "from_version"
    failed(await door.call("document_diff", {"doc_id": UNKNOWN_DOC_ID, "from_version": 1, "to_version": 1}),
           "document-not-found")
