"""Agents on large documents: bounded reads, outline, next-incomplete, move, search, stats, render.

Every behaviour through every door, with the same arguments and the same answers.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from jsonschema import Draft202012Validator

from ..readings import id_key
from .doors import UNKNOWN_DOC_ID, Doc, Door, book_doc, chapter, failed, new_doc, ok

pytestmark = pytest.mark.anyio


def _size(value: Any) -> int:
    return len(orjson.dumps(value))


async def _read(doc: Doc, node_path: str = "/", **args: Any) -> dict[str, Any]:
    return ok(await doc.door.call("document_read_node", {"doc_id": doc.doc_id, "node_path": node_path, **args}))


async def _long_book(door: Door, chapters: int = 12) -> Doc:
    doc = await book_doc(door)
    content = await doc.content()
    content["chapters"] = [chapter(number, sections=3, text="Long text about the harbour. " * 20)
                           for number in range(1, chapters + 1)]
    ok(await doc.update("/", content))
    return doc


# -- bounded reads -----------------------------------------------------------------------------------


async def test_max_depth_replaces_deeper_containers_by_stubs_that_say_what_they_hold(door: Door) -> None:
    doc = await book_doc(door)
    whole = await doc.content()
    body = await _read(doc, "/", max_depth=1)
    assert body["truncated"] is True
    assert body["node_size_bytes"] == _size(whole)
    view = body["node_content"]
    assert view["title"] == whole["title"]
    stubbed = set()
    for name in ("metadata", "chapters", "tags"):
        stub = view[name]
        if stub == whole[name]:  # a container no bigger than its stub would be is shown as it is
            assert _size(stub) <= _size({"$stub": True, "type": "object", "count": 1, "size_bytes": 10,
                                         "pointer": f"/{name}"})
            continue
        assert stub["$stub"] is True
        assert stub["type"] == ("object" if name == "metadata" else "array")
        assert stub["count"] == len(whole[name])
        assert stub["size_bytes"] == _size(whole[name])
        assert stub["pointer"] == f"/{name}"
        stubbed.add(f"/{name}")
    assert "/chapters" in stubbed
    assert set(body["continue_at"]) == stubbed


async def test_a_stub_pointer_reads_the_part_it_stands_for(door: Door) -> None:
    doc = await book_doc(door)
    whole = await doc.content()
    view = (await _read(doc, "/chapters", max_depth=2))["node_content"]
    pointer = view[0]["sections"]["pointer"]
    assert pointer == "/chapters/0/sections"
    assert await doc.content(pointer) == whole["chapters"][0]["sections"]


async def test_offset_and_limit_choose_a_window_of_items_and_say_where_to_go_on(door: Door) -> None:
    doc = await _long_book(door, chapters=5)
    whole = await doc.content("/chapters")
    body = await _read(doc, "/chapters", offset=1, limit=2)
    assert body["node_content"] == whole[1:3]
    assert (body["total_count"], body["offset"], body["returned_count"], body["next_offset"]) == (5, 1, 2, 3)
    assert body["truncated"] is False
    last = await _read(doc, "/chapters", offset=3, limit=10)
    assert last["node_content"] == whole[3:] and last["next_offset"] is None


async def test_offset_and_limit_window_the_members_of_an_object(door: Door) -> None:
    doc = await book_doc(door)
    metadata = await doc.content("/metadata")
    body = await _read(doc, "/metadata", offset=2, limit=3)
    assert list(body["node_content"].items()) == list(metadata.items())[2:5]


async def test_max_bytes_keeps_the_view_within_it_and_nothing_is_lost(door: Door) -> None:
    doc = await _long_book(door, chapters=6)  # the whole (about 12 KB) fits one MCP result, for the comparison
    whole = await doc.content()
    body = await _read(doc, "/", max_bytes=4000)
    assert _size(body["node_content"]) <= 4000
    assert body["truncated"] is True
    # every stub's pointer reads what it stands for: the view with its stubs read back is the whole node
    assert await _filled(doc, body["node_content"]) == whole


async def _filled(doc: Doc, view: Any) -> Any:
    if isinstance(view, dict) and view.get("$stub") is True:
        part = await _filled(doc, await doc.content(view["pointer"]))  # a budgeted door may stub it in turn
        assert _size(part) == view["size_bytes"]
        return part
    if isinstance(view, dict):
        return {key: await _filled(doc, value) for key, value in view.items()}
    if isinstance(view, list):
        return [await _filled(doc, value) for value in view]
    return view


async def test_a_window_too_big_for_max_bytes_is_shortened_with_the_next_offset(door: Door) -> None:
    doc = await _long_book(door, chapters=30)
    body = await _read(doc, "/chapters", max_bytes=1024)
    assert _size(body["node_content"]) <= 1024
    assert 0 < body["returned_count"] < 30
    assert body["next_offset"] == body["returned_count"]
    follow = await _read(doc, "/chapters", offset=body["next_offset"], max_bytes=1024)
    assert follow["offset"] == body["next_offset"]


async def test_a_read_without_bounds_is_the_whole_node_through_rest(door: Door) -> None:
    if door.kind != "rest":
        pytest.skip("MCP reads are bounded by the result budget")
    doc = await _long_book(door, chapters=40)
    body = await _read(doc, "/")
    assert "truncated" not in body
    assert _size(body["node_content"]) > 40_000


async def test_bounded_read_arguments_out_of_range_are_refused(door: Door) -> None:
    doc = await book_doc(door)
    for args in ({"max_depth": -1}, {"offset": -1}, {"limit": 0}, {"max_bytes": 10}):
        failed(await door.call("document_read_node", {"doc_id": doc.doc_id, "node_path": "/", **args}),
               "invalid-request")


# -- outline -------------------------------------------------------------------------------------------


async def test_outline_lists_members_and_items_with_type_count_size_and_title_but_no_leaf_values(
        door: Door) -> None:
    doc = await book_doc(door)
    whole = await doc.content()
    body = ok(await door.call("document_outline", {"doc_id": doc.doc_id, "node_path": "/", "depth": 2}))
    root = body["outline"]
    assert (root["pointer"], root["type"], root["count"], root["title"]) == ("/", "object", 4, "Book")
    assert root["size_bytes"] == _size(whole)
    by_pointer = {entry["pointer"]: entry for entry in root["children"]}
    assert set(by_pointer) == {"/title", "/metadata", "/chapters", "/tags"}
    assert by_pointer["/title"] == {"pointer": "/title", "type": "string", "size_bytes": _size(whole["title"])}
    chapters = by_pointer["/chapters"]
    assert chapters["count"] == 3
    assert [item["label"] for item in chapters["children"]] == [c["title"] for c in whole["chapters"]]
    assert all("children" not in item for item in chapters["children"])  # depth 2 stops there
    assert whole["metadata"]["author"]["email"] not in orjson.dumps(body).decode()


async def test_outline_within_max_bytes_says_how_many_children_are_left(door: Door) -> None:
    doc = await _long_book(door, chapters=40)
    body = ok(await door.call("document_outline", {"doc_id": doc.doc_id, "node_path": "/chapters", "depth": 1,
                                                    "max_bytes": 2000}))
    assert _size(body["outline"]) <= 2000
    assert body["truncated"] is True
    shown = len(body["outline"]["children"])
    assert body["outline"]["more"] == {"count": 40 - shown, "next_offset": shown}
    assert body["next_offset"] == shown


# -- next incomplete --------------------------------------------------------------------------------------


async def test_next_incomplete_lists_absent_empty_and_default_places_breadth_first(door: Door) -> None:
    doc = await new_doc(door)
    body = ok(await door.call("document_next_incomplete", {"doc_id": doc.doc_id, "limit": 100,
                                                           "include_defaults": True}))
    places = [(item["pointer"], item["reason"]) for item in body["items"]]
    assert places[:3] == [("/title", "default-value"), ("/chapters", "empty-array"), ("/tags", "empty-array")]
    assert ("/metadata/author", "absent") in places and ("/metadata/status", "default-value") in places
    assert places.index(("/tags", "empty-array")) < places.index(("/metadata/author", "absent"))
    assert all(item["example_call"] is None for item in body["items"] if item["reason"] == "default-value"), \
        "no example call overwrites a value that is set"
    assert body["has_more"] is False
    again = ok(await door.call("document_next_incomplete", {"doc_id": doc.doc_id, "limit": 2}))
    assert [item["pointer"] for item in again["items"]] == ["/chapters", "/tags"] and again["has_more"] is True
    assert all(item["reason"] != "default-value" for item in again["items"]), \
        "a value equal to its default is not unfinished unless asked"


async def test_every_example_call_of_next_incomplete_succeeds(door: Door) -> None:
    doc = await new_doc(door)
    body = ok(await door.call("document_next_incomplete", {"doc_id": doc.doc_id, "limit": 100}))
    calls = [item["example_call"] for item in body["items"] if item["example_call"] is not None]
    assert len(calls) >= 5
    for call in calls:
        arguments = {**call["arguments"], "version": doc.version, "dry_run": True}
        ok(await door.call(call["tool"], arguments))


async def test_an_item_of_next_incomplete_carries_its_node_schema(door: Door, book_schema: dict[str, Any]) -> None:
    doc = await new_doc(door)
    body = ok(await door.call("document_next_incomplete", {"doc_id": doc.doc_id, "limit": 100}))
    chapters = next(item for item in body["items"] if item["pointer"] == "/chapters")
    assert chapters["node_schema"]["required"] == ["id", "title", "sections"]
    call = chapters["example_call"]
    assert call["tool"] == "document_create_node" and call["arguments"]["node_path"] == "/chapters/-"
    Draft202012Validator(chapters["node_schema"]).validate(call["arguments"]["node_data"])


# -- move ------------------------------------------------------------------------------------------------------


async def test_move_reorders_items_inside_an_array(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.content("/chapters")
    body = ok(await doc.write("document_move_node", from_path="/chapters/2", to_path="/chapters/0"))
    assert body["patch"] == [{"op": "move", "from": "/chapters/2", "path": "/chapters/0"}]
    assert body["node_path"] == "/chapters/0" and body["moved_node"] == before[2]
    assert await doc.content("/chapters") == [before[2], before[0], before[1]]


async def test_move_to_the_end_with_a_dash_gets_a_concrete_index(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.content("/chapters")
    body = ok(await doc.write("document_move_node", from_path="/chapters/0", to_path="/chapters/-"))
    assert body["node_path"] == "/chapters/2"
    assert await doc.content("/chapters") == [before[1], before[2], before[0]]


async def test_move_resolves_negative_indices_and_reports_and_journals_them_concrete(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.content("/chapters")
    body = ok(await doc.write("document_move_node", from_path="/chapters/-1", to_path="/chapters/0"))
    assert (body["from_path"], body["node_path"]) == ("/chapters/2", "/chapters/0")
    assert body["patch"] == [{"op": "move", "from": "/chapters/2", "path": "/chapters/0"}]
    # the target counts in the array as the add half of the move sees it (the item gone): -1 is before the last
    body = ok(await doc.write("document_move_node", from_path="/chapters/0", to_path="/chapters/-1"))
    assert body["patch"] == [{"op": "move", "from": "/chapters/0", "path": "/chapters/1"}]
    assert await doc.content("/chapters") == [before[0], before[2], before[1]]
    failed(await doc.write("document_move_node", from_path="/chapters/-4", to_path="/chapters/0"), "path-not-found")


async def test_a_move_that_breaks_the_schema_is_refused_and_changes_nothing(door: Door) -> None:
    doc = await book_doc(door)
    version = doc.version
    error = failed(await doc.write("document_move_node", from_path="/metadata/status", to_path="/status"),
                   "validation-failed")
    assert error["details"]["violations"]
    assert ok(await doc.read())["version"] == version


async def test_a_dry_run_move_changes_nothing(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.content()
    body = ok(await doc.write("document_move_node", from_path="/tags/0", to_path="/metadata/keywords/0",
                              dry_run=True))
    assert body["dry_run"] is True
    assert await doc.content() == before


async def test_moving_from_a_missing_path_is_path_not_found(door: Door) -> None:
    doc = await book_doc(door)
    failed(await doc.write("document_move_node", from_path="/chapters/9", to_path="/chapters/0"), "path-not-found")


# -- search -----------------------------------------------------------------------------------------------------


async def test_search_finds_string_leaves_across_documents_with_snippets_and_pages(door: Door) -> None:
    first, second = await book_doc(door), await book_doc(door)
    ok(await first.update("/chapters/1/title", "The Lighthouse Keeper"))
    ok(await second.update("/chapters/0/sections/0/paragraphs/0/text", "A lighthouse on the cliff."))
    ids = [first.doc_id, second.doc_id]
    body = ok(await door.call("document_search", {"query": "LIGHTHOUSE", "doc_ids": ids}))
    assert [(id_key(hit["doc_id"]), hit["pointer"]) for hit in body["hits"]] == [
        (id_key(first.doc_id), "/chapters/1/title"),
        (id_key(second.doc_id), "/chapters/0/sections/0/paragraphs/0/text")]
    assert "Lighthouse Keeper" in body["hits"][0]["snippet"]
    assert body["has_more"] is False and body["next_cursor"] is None
    page = ok(await door.call("document_search", {"query": "lighthouse", "doc_ids": ids, "limit": 1}))
    assert len(page["hits"]) == 1 and page["has_more"] is True
    rest = ok(await door.call("document_search", {"query": "lighthouse", "doc_ids": ids, "limit": 1,
                                                   "cursor": page["next_cursor"]}))
    assert rest["hits"] == body["hits"][1:]


async def test_search_below_a_node_path(door: Door) -> None:
    doc = await book_doc(door)
    body = ok(await door.call("document_search", {"query": "section", "node_path": "/chapters/1",
                                                   "doc_ids": [doc.doc_id]}))
    assert body["hits"] and all(hit["pointer"].startswith("/chapters/1/") for hit in body["hits"])


async def test_search_an_unknown_document_is_document_not_found(door: Door) -> None:
    failed(await door.call("document_search", {"query": "x", "doc_ids": [UNKNOWN_DOC_ID]}), "document-not-found")


# -- stats and render -------------------------------------------------------------------------------------------


async def test_stats_measure_size_node_counts_depth_and_journal(door: Door) -> None:
    doc = await book_doc(door)
    whole = await doc.content()
    body = ok(await door.call("document_stats", {"doc_id": doc.doc_id}))
    assert body["size_bytes"] == _size(whole)
    assert body["version"] == body["journal_length"] == doc.version
    assert body["node_counts"]["object"] == 1 + 2 + 3 + 5 + 5  # root, metadata+author, chapters, sections, paragraphs
    assert body["node_total"] == sum(body["node_counts"].values())
    # root > chapters > chapter > sections > section > sections > section > paragraphs > paragraph
    assert body["depth"] == 9


async def test_render_makes_titles_headings_and_arrays_lists(door: Door) -> None:
    doc = await book_doc(door)
    body = ok(await door.call("document_render", {"doc_id": doc.doc_id, "node_path": "/"}))
    text = body["text"]
    assert text.startswith("# The Conformance Book\n")
    assert "\n## Chapter 1\n" in text and "\n### Section 1.1\n" in text
    assert "- test\n" in text
    assert body["truncated"] is False and body["format"] == "markdown"


async def test_render_within_max_bytes_says_where_to_go_on(door: Door) -> None:
    doc = await _long_book(door, chapters=10)
    body = ok(await door.call("document_render", {"doc_id": doc.doc_id, "node_path": "/chapters",
                                                   "max_bytes": 3000}))
    assert len(body["text"].encode()) <= 3000
    assert body["truncated"] is True
    assert body["next_offset"] == body["returned_count"]


async def test_render_in_another_format_is_refused(door: Door) -> None:
    doc = await book_doc(door)
    failed(await door.call("document_render", {"doc_id": doc.doc_id, "node_path": "/", "format": "html"}),
           "invalid-request")
