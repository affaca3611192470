"""The change feed across documents, and history seen through one door of writes made through another.

The feed tests start from the feed's tail (the cursor after everything already on the server),
so they also hold against a shared remote server; there they keep only the test's documents.
"""

from __future__ import annotations

from typing import Any

import pytest

from ..readings import id_key, same_id
from .doors import Doc, Door, book_doc, chapter, failed, new_doc, ok

pytestmark = pytest.mark.anyio

Change = tuple[str, int, str]
"""(doc_id, version, op)"""


async def _tail(door: Door) -> int:
    """The cursor after every change already committed."""
    cursor = 0
    while True:
        body = ok(await door.call("document_changes", {"since": cursor, "limit": 1000}))
        if not body["changes"]:
            assert body["next_cursor"] == cursor
            return cursor
        cursor = body["next_cursor"]


async def _feed(door: Door, since: int, limit: int) -> list[dict[str, Any]]:
    """Every change after ``since``, page by page, each page checked: cursors rise, next_cursor is the last."""
    changes: list[dict[str, Any]] = []
    cursor = since
    while True:
        body = ok(await door.call("document_changes", {"since": cursor, "limit": limit}))
        page = body["changes"]
        assert len(page) <= limit
        if not page:
            assert body["next_cursor"] == cursor, "an empty page keeps the cursor"
            return changes
        cursors = [change["cursor"] for change in page]
        assert cursors == sorted(set(cursors)) and cursors[0] > cursor, f"cursors {cursors} after {cursor}"
        assert body["next_cursor"] == cursors[-1]
        changes += page
        cursor = body["next_cursor"]


def _ours(changes: list[dict[str, Any]], *docs: Doc) -> list[Change]:
    """The changes of ``docs``, each as (doc_id as the test knows it, version, op): ids compared in either case."""
    ids = {id_key(doc.doc_id): doc.doc_id for doc in docs}
    return [(ids[id_key(change["doc_id"])], change["version"], change["op"]) for change in changes
            if id_key(change["doc_id"]) in ids]


async def test_the_feed_lists_the_commits_of_every_document_in_commit_order(door: Door, fresh_server: bool) -> None:
    start = await _tail(door)
    first = await new_doc(door)
    second = await new_doc(door)
    ok(await first.update("/title", "One"))
    ok(await second.merge("/", {"title": "Two"}))
    ok(await first.revert(1))
    ok(await second.create("/tags/-", "x"))
    ok(await second.delete_document())
    ok(await door.call("document_undelete", {"doc_id": second.doc_id}))
    ok(await first.patch([{"op": "add", "path": "/chapters/-", "value": chapter(1)}]))
    ok(await first.delete("/chapters/0"))
    expected: list[Change] = [
        (first.doc_id, 1, "create"), (second.doc_id, 1, "create"), (first.doc_id, 2, "update_node"),
        (second.doc_id, 2, "merge_patch"), (first.doc_id, 3, "revert"), (second.doc_id, 3, "create_node"),
        (second.doc_id, 4, "delete_document"), (second.doc_id, 5, "undelete_document"),
        (first.doc_id, 4, "patch"), (first.doc_id, 5, "delete_node"),
    ]
    changes = await _feed(door, start, 1000)
    assert _ours(changes, first, second) == expected
    if fresh_server:
        assert len(changes) == len(expected)
    for doc in (first, second):
        entries = {entry["version"]: entry for entry in await doc.history()}
        for change in changes:
            if same_id(change["doc_id"], doc.doc_id):
                entry = entries[change["version"]]
                assert (change["op"], change["at"]) == (entry["op"], entry["at"]), change


async def test_paging_the_feed_never_skips_nor_repeats_a_change(door: Door) -> None:
    start = await _tail(door)
    docs = [await new_doc(door) for _ in range(3)]
    for round_ in range(3):
        for doc in docs:
            ok(await doc.update("/title", f"Round {round_}"))
    whole = await _feed(door, start, 1000)
    assert len(_ours(whole, *docs)) == 12
    for limit in (1, 2, 5):
        paged = await _feed(door, start, limit)
        assert paged == whole, f"pages of {limit}"
    middle = whole[4]["cursor"]
    assert await _feed(door, middle, 3) == whole[5:], "resuming from any cursor gives exactly what follows it"


async def test_failed_and_dry_run_writes_add_nothing_to_the_feed(door: Door) -> None:
    doc = await book_doc(door)
    start = await _tail(door)
    ok(await doc.update("/title", "Dry", dry_run=True))
    ok(await doc.merge("/", {"title": "Dry"}, dry_run=True))
    ok(await doc.revert(1, dry_run=True))
    failed(await doc.update("/title", 5), "validation-failed")
    failed(await doc.update("/title", "Stale", version=1), "version-conflict")
    failed(await doc.merge("/", {"bogus": True}), "validation-failed")
    failed(await doc.patch([{"op": "test", "path": "/title", "value": "Other"}]), "patch-test-failed")
    failed(await doc.delete_document(version=1), "version-conflict")
    failed(await door.call("document_undelete", {"doc_id": doc.doc_id}), "conflict")
    failed(await door.call("document_purge", {"doc_id": doc.doc_id}), "conflict")
    assert _ours(await _feed(door, start, 1000), doc) == []
    ok(await doc.update("/title", "Real"))
    assert _ours(await _feed(door, start, 1000), doc) == [(doc.doc_id, 3, "update_node")]


async def test_feed_arguments_out_of_range_are_invalid_request(door: Door) -> None:
    cases: list[tuple[dict[str, Any], str]] = [({"since": -1}, "since"), ({"limit": 0}, "limit"),
                                               ({"limit": 1001}, "limit"), ({"limit": "ten"}, "limit")]
    for args, argument in cases:
        error = failed(await door.call("document_changes", args), "invalid-request")
        assert error["details"]["argument"] == argument, args


# -- one server, every door ----------------------------------------------------------------------------


async def test_writes_through_each_door_show_in_the_history_and_feed_of_every_door(doors: list[Door]) -> None:
    start = await _tail(doors[0])
    created = ok(await doors[0].call("document_create", {}))
    doc_id = created["doc_id"]
    version = 1
    written: list[Change] = [(doc_id, 1, "create")]
    for door in doors:
        body = ok(await door.call("document_update_node", {"doc_id": doc_id, "node_path": "/title",
                                                           "node_data": f"By {door.name}", "version": version}))
        version = body["version"]
        written.append((doc_id, version, "update_node"))
    ok(await doors[-1].call("document_merge_patch", {"doc_id": doc_id, "node_path": "/metadata",
                                                     "merge_patch": {"status": "review"}, "version": version}))
    version += 1
    written.append((doc_id, version, "merge_patch"))
    ok(await doors[1 % len(doors)].call("document_revert", {"doc_id": doc_id, "to_version": 2,
                                                            "version": version}))
    version += 1
    written.append((doc_id, version, "revert"))
    ok(await doors[-1].call("document_delete", {"doc_id": doc_id, "version": version}))
    failed(await doors[0].call("document_read_node", {"doc_id": doc_id, "node_path": "/"}), "document-not-found")
    ok(await doors[0].call("document_undelete", {"doc_id": doc_id}))
    written += [(doc_id, version + 1, "delete_document"), (doc_id, version + 2, "undelete_document")]

    histories: dict[str, list[dict[str, Any]]] = {}
    for door in doors:
        doc = Doc(door, doc_id, version + 2)
        entries = await doc.history(page_size=3)
        assert [(doc_id, entry["version"], entry["op"]) for entry in entries] == written, door.name
        histories[door.name] = entries
        assert await doc.at(2, "/title") == f"By {doors[0].name}"
        assert await doc.at(len(doors) + 1, "/title") == f"By {doors[-1].name}"
        assert await doc.content("/title") == f"By {doors[0].name}", "the revert to version 2, then undelete"
        assert _ours(await _feed(door, start, 2), doc) == written, door.name
    first, *others = doors
    for other in others:
        assert histories[other.name] == histories[first.name], f"{other.name} and {first.name} differ"
