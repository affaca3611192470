"""The doors agree: one scenario through every door of ONE server gives the same bodies and statuses.

The other tests check each door against the contract; this one compares the doors with each
other, call by call, so that a difference the contract does not pin down (an extra member, a
different message, another detail) still shows. Each door works on its own document; its
doc_id is replaced by ``<doc>``, commit times and feed cursors (``at``, ``deleted_at``,
``seq``, ``cursor``) by ``<time>`` and a history entry's ``actor`` (an extension naming who wrote
it: without tokens, the door itself) by ``<actor>``; an error's ``request_id`` (an extension naming
the request, different for every one) is left out before comparing. ``invalid-request`` is compared by code and
status only: its message names the argument the way the door received it (a body member, a
query parameter, a tool argument). The step ``read_version`` reads a whole past version
(``schema://{doc_id}/versions/{n}``, ``GET /documents/{doc_id}/versions/{n}``).
"""

from __future__ import annotations

from typing import Any

import pytest

from ..readings import ids_in, same_id
from .doors import CORE_TOOLS, TARGET, UNKNOWN_DOC_ID, Door, Outcome, chapter, extension_arguments, sample_book

pytestmark = pytest.mark.anyio

# (tool, arguments); "<doc>" is the door's document, "<v>" its current version
SCENARIO: list[tuple[str, dict[str, Any]]] = [
    ("document_update_node", {"node_path": "/", "node_data": sample_book(), "version": "<v>"}),
    ("document_read_node", {"node_path": "/chapters/-1"}),
    ("document_read_node", {"node_path": "/chapters/7/title"}),
    ("document_read_node", {"node_path": "chapters"}),
    ("document_update_node", {"node_path": "/metadata", "version": "<v>",
                              "node_data": {"language": "english", "status": "lost", "edition": 101}}),
    ("document_update_node", {"node_path": "/title", "node_data": None, "version": "<v>"}),
    ("document_update_node", {"node_path": "/title", "node_data": "Stale", "version": 1}),
    ("document_update_node", {"node_path": "/title", "node_data": "x", "version": "five"}),
    ("document_create_node", {"node_path": "/title", "node_data": "Again", "version": "<v>"}),
    ("document_create_node", {"node_path": "/chapters/-", "node_data": chapter(4), "version": "<v>",
                              "dry_run": True}),
    ("document_create_node", {"node_path": "/chapters/-", "node_data": chapter(4), "version": "<v>"}),
    ("document_create_node", {"node_path": "/chapters/9/sections/-", "node_data": {}, "version": "<v>"}),
    ("document_delete_node", {"node_path": "/title", "version": "<v>"}),
    ("document_delete_node", {"node_path": "/", "version": "<v>"}),
    ("document_delete_node", {"node_path": "/chapters/0/sections/1", "version": "<v>"}),
    ("document_apply_patch", {"version": "<v>", "patch": [
        {"op": "replace", "path": "/title", "value": "Patched"},
        {"op": "test", "path": "/metadata/edition", "value": 7}]}),
    ("document_apply_patch", {"version": "<v>", "patch": [{"op": "jump", "path": "/title"}]}),
    ("document_apply_patch", {"version": "<v>", "patch": [
        {"op": "move", "from": "/chapters/0", "path": "/chapters/-"},
        {"op": "copy", "from": "/metadata/keywords", "path": "/tags"}]}),
    ("document_update_node", {"node_path": "/metadata/edition", "node_data": 500, "version": "<v>",
                              "dry_run": True}),
    ("document_read_node", {"node_path": "/"}),
    ("document_read_node", {"doc_id": UNKNOWN_DOC_ID, "node_path": "/"}),
    ("document_read_node", {"doc_id": "not-a-ulid", "node_path": "/"}),
    ("schema_get_node", {"node_path": "/metadata/author", "doc_id": "<doc>"}),
    ("schema_get_node", {"node_path": "/chapters/0/summary"}),
    ("schema_get_node", {"node_path": "/tags/-"}),
    ("document_read_node", {"node_path": ""}),
    ("schema_get_root", {"dereferenced": False}),
    # history, time travel, undo, merge patch, deletion
    ("document_history", {"since_version": 1, "limit": 3}),
    ("document_read_node", {"node_path": "/chapters/-1", "at_version": 2}),
    ("document_read_node", {"node_path": "/chapters/5/title", "at_version": 2}),
    ("document_read_node", {"node_path": "/", "at_version": 99}),
    ("document_read_node", {"node_path": "/", "at_version": 0}),
    ("read_version", {"version": 2}),
    ("read_version", {"version": 99}),
    ("document_diff", {"from_version": "<v>", "to_version": 2}),
    ("document_diff", {"from_version": 1, "to_version": 99}),
    ("document_revert", {"to_version": 2, "version": "<v>", "dry_run": True}),
    ("document_revert", {"to_version": 3, "version": "<v>"}),
    ("document_revert", {"to_version": 2, "version": 1}),
    ("document_merge_patch", {"node_path": "/metadata", "version": "<v>",
                              "merge_patch": {"status": "review", "isbn": None, "author": {"email": "a@b.org"}}}),
    ("document_merge_patch", {"node_path": "/", "version": "<v>",
                              "merge_patch": {"bogus": 1, "metadata": {"edition": "two"}}}),
    ("document_merge_patch", {"node_path": "/", "version": "<v>", "merge_patch": {"title": None}}),
    ("document_merge_patch", {"node_path": "/tags", "version": "<v>", "merge_patch": ["b", "a"], "dry_run": True}),
    ("document_undelete", {}),
    ("document_purge", {}),
    ("document_delete", {"version": 1}),
    ("document_delete", {"version": "<v>"}),
    ("document_read_node", {"node_path": "/"}),
    ("document_history", {}),
    ("read_version", {"version": 2}),
    ("document_undelete", {}),
    ("document_history", {"since_version": 6}),
    ("document_delete", {"version": "<v>"}),
    ("document_purge", {}),
    ("document_read_node", {"node_path": "/"}),
    ("document_purge", {}),
]


_NO_DOC_ID = frozenset({"document_create", "document_list", "schema_get_root", "schema_get_node"})


_MOMENTS = frozenset({"at", "deleted_at", "seq", "cursor"})


def _normalised(value: Any, doc_id: str) -> Any:
    if isinstance(value, str):
        return ids_in(ids_in(value, UNKNOWN_DOC_ID), doc_id).replace(doc_id, "<doc>")
    if isinstance(value, dict):
        return {key: "<time>" if key in _MOMENTS and item is not None
                else "<actor>" if key == "actor" and isinstance(item, str)
                else _actors(item) if key == "actors" and isinstance(item, dict) else _normalised(item, doc_id)
                for key, item in value.items() if key != "request_id"}
    if isinstance(value, list):
        return [_normalised(item, doc_id) for item in value]
    return value


def _actors(value: dict[str, Any]) -> dict[str, Any]:
    """A diff's actors: each door writes under its own name (the door, or its token's)."""
    names = value.get("names")
    return {**value, "names": ["<actor>" for _ in names] if isinstance(names, list) else names}


def _steps() -> list[tuple[int, str, dict[str, Any]]]:
    """The steps this run takes: every one, or under ``--profile spec`` those of the spec's tools with the spec's
    arguments only (the doors must agree on those whatever else the server offers)."""
    return [(step, tool, args) for step, (tool, args) in enumerate(SCENARIO)
            if not TARGET.spec_only or (tool in CORE_TOOLS and not extension_arguments(tool, args))]


async def _run(door: Door) -> list[tuple[bool, int, Any]]:
    created = await door.call("document_create", {})
    assert created.ok, created
    doc_id, version = created.body["doc_id"], created.body["version"]
    trace: list[tuple[bool, int, Any]] = []
    for _step, tool, template in _steps():
        args: dict[str, Any] = {} if tool in _NO_DOC_ID else {"doc_id": doc_id}
        args.update({key: version if value == "<v>" else doc_id if value == "<doc>" else value
                     for key, value in template.items()})
        outcome: Outcome = (await door.read_version(doc_id, args["version"]) if tool == "read_version"
                            else await door.call(tool, args))
        if (outcome.ok and "version" in outcome.body and same_id(outcome.body.get("doc_id"), doc_id)
                and "at_version" not in args):
            version = outcome.body["version"]
        body = {"code": outcome.code} if outcome.code == "invalid-request" else outcome.body
        trace.append((outcome.ok, outcome.status, _normalised(body, doc_id)))
    return trace


async def test_every_door_answers_the_same_scenario_with_the_same_bodies(doors: list[Door]) -> None:
    traces = {door.name: await _run(door) for door in doors}
    first, *others = doors
    for other in others:
        for at, (step, tool, args) in enumerate(_steps()):
            assert traces[other.name][at] == traces[first.name][at], (
                f"step {step} ({tool} {args}): {other.name} and {first.name} differ")
