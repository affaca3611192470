"""History, time travel, undo, merge patch, document deletion and change feeds through the MCP door.

Driven in-process by the official client in both protocol eras (``mode="auto"`` negotiates
2026-07-28, ``mode="legacy"`` runs the 2025-11-25 handshake), like ``test_mcp_door.py``.
"""

from __future__ import annotations

import copy
import threading
import warnings
from collections.abc import Callable
from typing import Any

import anyio
import jsonpatch
import orjson
import pytest
from mcp import Client, MCPError
from mcp.server.subscriptions import InMemorySubscriptionBus, ServerEvent
from mcp.shared.subscriptions import ResourcesListChanged, ResourceUpdated
from mcp.types import INVALID_PARAMS, ServerNotification
from mcp_support import CHAPTER, UNKNOWN_DOC, call, fail

from schemadoc.interfaces.mcp_door.server import SchemaDocMCPServer, build_mcp_server
from schemadoc.service import ChangeEvent, DocumentService

UPDATED = "notifications/resources/updated"
LIST_CHANGED = "notifications/resources/list_changed"

pytestmark = [pytest.mark.anyio, pytest.mark.filterwarnings("ignore::DeprecationWarning")]






async def new_document(client: Client) -> str:
    doc_id: str = (await call(client, "document_create"))["doc_id"]
    return doc_id


async def titled(client: Client, *titles: str) -> str:
    """A document whose versions 2, 3, ... carry ``titles`` in order."""
    doc_id = await new_document(client)
    for version, title in enumerate(titles, start=1):
        await call(client, "document_update_node",
                   {"doc_id": doc_id, "node_path": "/title", "node_data": title, "version": version})
    return doc_id


async def content_at(client: Client, doc_id: str, version: int) -> Any:
    return (await call(client, "document_read_node",
                       {"doc_id": doc_id, "node_path": "/", "at_version": version}))["node_content"]


def in_another_thread(action: Callable[[], Any]) -> None:
    """Run ``action`` in a thread of its own, as a REST route or another agent would, and wait for it."""
    errors: list[BaseException] = []

    def run() -> None:
        try:
            action()
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(timeout=10)
    assert not thread.is_alive() and not errors, errors


async def until(condition: Callable[[], bool], seconds: float = 5.0) -> None:
    with anyio.fail_after(seconds):
        while not condition():
            await anyio.sleep(0.01)


class Notifications:
    """What a legacy client heard: (method, uri) pairs in arrival order."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, str | None]] = []

    async def __call__(self, message: Any) -> None:
        if isinstance(message, ServerNotification) and message.method in (UPDATED, LIST_CHANGED):
            self.heard.append((message.method, getattr(message.params, "uri", None)))

    async def wait_for(self, count: int) -> list[tuple[str, str | None]]:
        await until(lambda: len(self.heard) >= count)
        return self.heard


def legacy_client(server: SchemaDocMCPServer, heard: Notifications) -> Client:
    return Client(server, mode="legacy", message_handler=heard)


# -- document_history ---------------------------------------------------------------------------


async def test_history_lists_every_version_oldest_first_with_the_patch_that_made_it(client: Client) -> None:
    doc_id = await titled(client, "A", "B")

    history = await call(client, "document_history", {"doc_id": doc_id})

    assert [(e["version"], e["op"]) for e in history["entries"]] == [
        (1, "create"), (2, "update_node"), (3, "update_node")]
    assert history["entries"][0]["patch"][0]["op"] == "add" and history["entries"][0]["patch"][0]["path"] == ""
    assert history["entries"][2]["patch"] == [{"op": "replace", "path": "/title", "value": "B"}]
    assert history["entries"][2]["info"]["node_path"] == "/title"
    assert all(entry["at"].endswith("Z") for entry in history["entries"])
    assert (history["doc_id"], history["current_version"], history["has_more"], history["next_since_version"]) == (
        doc_id, 3, False, 3)


async def test_history_pages_with_since_version_and_next_since_version(client: Client) -> None:
    doc_id = await titled(client, "A", "B", "C", "D")

    pages: list[list[int]] = []
    since = 0
    while True:
        page = await call(client, "document_history", {"doc_id": doc_id, "since_version": since, "limit": 2})
        pages.append([entry["version"] for entry in page["entries"]])
        since = page["next_since_version"]
        if not page["has_more"]:
            break

    assert pages == [[1, 2], [3, 4], [5]]
    caught_up = await call(client, "document_history", {"doc_id": doc_id, "since_version": 5})
    assert (caught_up["entries"], caught_up["has_more"], caught_up["current_version"]) == ([], False, 5)
    beyond = await fail(client, "document_history", {"doc_id": doc_id, "since_version": 9})
    assert beyond["code"] == "version-not-found" and beyond["details"]["latest_version"] == 5


async def test_history_of_an_unknown_document_is_document_not_found(client: Client) -> None:
    error = await fail(client, "document_history", {"doc_id": UNKNOWN_DOC})

    assert (error["code"], error["details"]["doc_id"]) == ("document-not-found", UNKNOWN_DOC)


# -- document_read_node with at_version ---------------------------------------------------------


async def test_read_node_at_a_past_version_returns_that_version(client: Client) -> None:
    doc_id = await titled(client, "A", "B")

    first = await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/title", "at_version": 1})
    second = await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/title", "at_version": 2})
    now = await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/title"})

    assert (first["node_content"], first["version"], first["node_type"]) == ("Untitled", 1, "string")
    assert (second["node_content"], second["version"]) == ("A", 2)
    assert (now["node_content"], now["version"]) == ("B", 3)


async def test_read_node_at_a_past_version_gives_the_path_diagnostics_of_that_version(client: Client) -> None:
    doc_id = await new_document(client)
    await call(client, "document_create_node",
               {"doc_id": doc_id, "node_path": "/chapters/-", "node_data": CHAPTER, "version": 1})

    then = await fail(client, "document_read_node",
                      {"doc_id": doc_id, "node_path": "/chapters/0/title", "at_version": 1})
    now = await call(client, "document_read_node",
                     {"doc_id": doc_id, "node_path": "/chapters/-1/title", "at_version": 2})

    assert then["code"] == "path-not-found"
    assert then["details"]["deepest_ancestor"] == "/chapters"
    assert (now["node_content"], now["node_path"]) == ("Intro", "/chapters/0/title")


async def test_read_node_at_a_version_the_document_does_not_have_is_version_not_found(client: Client) -> None:
    doc_id = await titled(client, "A")

    error = await fail(client, "document_read_node", {"doc_id": doc_id, "node_path": "/", "at_version": 3})

    assert error["code"] == "version-not-found"
    assert (error["details"]["version"], error["details"]["latest_version"]) == (3, 2)


# -- document_diff ------------------------------------------------------------------------------


async def test_a_diff_applied_to_one_version_gives_the_other_exactly_in_both_directions(client: Client) -> None:
    doc_id = await new_document(client)
    await call(client, "document_create_node",
               {"doc_id": doc_id, "node_path": "/chapters/-", "node_data": CHAPTER, "version": 1})
    await call(client, "document_apply_patch", {"doc_id": doc_id, "version": 2, "patch": [
        {"op": "replace", "path": "/title", "value": "Dune"}, {"op": "add", "path": "/tags/-", "value": "sf"},
        {"op": "remove", "path": "/metadata/keywords"}]})
    await call(client, "document_update_node", {"doc_id": doc_id, "node_path": "/chapters/0/title",
                                                "node_data": "Opening", "version": 3})
    old, new = await content_at(client, doc_id, 1), await content_at(client, doc_id, 4)

    forward = await call(client, "document_diff", {"doc_id": doc_id, "from_version": 1, "to_version": 4})
    backward = await call(client, "document_diff", {"doc_id": doc_id, "from_version": 4, "to_version": 1})
    same = await call(client, "document_diff", {"doc_id": doc_id, "from_version": 2, "to_version": 2})

    assert (forward["doc_id"], forward["from_version"], forward["to_version"]) == (doc_id, 1, 4)
    assert jsonpatch.apply_patch(copy.deepcopy(old), forward["patch"]) == new
    assert jsonpatch.apply_patch(copy.deepcopy(new), backward["patch"]) == old
    assert same["patch"] == []


async def test_a_diff_with_a_version_the_document_does_not_have_is_version_not_found(client: Client) -> None:
    doc_id = await titled(client, "A")

    error = await fail(client, "document_diff", {"doc_id": doc_id, "from_version": 1, "to_version": 5})

    assert (error["code"], error["details"]["latest_version"]) == ("version-not-found", 2)


# -- document_revert ----------------------------------------------------------------------------


async def test_revert_makes_a_new_version_whose_content_equals_the_old_one(client: Client) -> None:
    doc_id = await new_document(client)
    await call(client, "document_create_node",
               {"doc_id": doc_id, "node_path": "/chapters/-", "node_data": CHAPTER, "version": 1})
    await call(client, "document_update_node", {"doc_id": doc_id, "node_path": "/title", "node_data": "Oops",
                                                "version": 2})

    reverted = await call(client, "document_revert", {"doc_id": doc_id, "to_version": 1, "version": 3})

    assert (reverted["version"], reverted["to_version"], reverted["dry_run"]) == (4, 1, False)
    assert reverted["validation_report"]["valid"] is True
    assert await content_at(client, doc_id, 4) == await content_at(client, doc_id, 1)
    assert jsonpatch.apply_patch(await content_at(client, doc_id, 3), reverted["patch"]) == await content_at(
        client, doc_id, 1)
    last = (await call(client, "document_history", {"doc_id": doc_id, "since_version": 3}))["entries"]
    assert [(e["version"], e["op"], e["info"]["to_version"]) for e in last] == [(4, "revert", 1)]


async def test_a_dry_run_revert_reports_the_patch_and_changes_nothing(client: Client,
                                                                      service: DocumentService) -> None:
    doc_id = await titled(client, "A")

    preview = await call(client, "document_revert", {"doc_id": doc_id, "to_version": 1, "version": 2,
                                                     "dry_run": True})

    assert (preview["dry_run"], preview["version"], preview["would_be_version"]) == (True, 2, 3)
    assert preview["patch"] == [{"op": "replace", "path": "/title", "value": "Untitled"}]
    assert service.version_of(doc_id) == 2


async def test_revert_with_a_stale_version_is_version_conflict(client: Client) -> None:
    doc_id = await titled(client, "A", "B")

    error = await fail(client, "document_revert", {"doc_id": doc_id, "to_version": 1, "version": 2})

    assert error["code"] == "version-conflict"
    assert (error["details"]["expected_version"], error["details"]["actual_version"]) == (2, 3)


async def test_revert_to_a_version_the_document_does_not_have_is_version_not_found(client: Client) -> None:
    doc_id = await titled(client, "A")

    error = await fail(client, "document_revert", {"doc_id": doc_id, "to_version": 7, "version": 2})

    assert error["code"] == "version-not-found"


# -- document_delete, document_undelete, document_purge ----------------------------------------


async def test_a_deleted_document_is_gone_until_it_is_undeleted_with_its_history(client: Client) -> None:
    doc_id = await titled(client, "Kept")
    other = await new_document(client)

    deleted = await call(client, "document_delete", {"doc_id": doc_id, "version": 2})
    read = await fail(client, "document_read_node", {"doc_id": doc_id, "node_path": "/"})
    listed = await call(client, "document_list")
    resources = {str(r.uri) for r in (await client.list_resources()).resources}
    undeleted = await call(client, "document_undelete", {"doc_id": doc_id})

    assert (deleted["doc_id"], deleted["version"], deleted["deleted"]) == (doc_id, 3, True)
    assert deleted["deleted_at"].endswith("Z")
    assert read["code"] == "document-not-found"
    assert (read["details"]["deleted"], read["details"]["deleted_at"]) == (True, deleted["deleted_at"])
    assert [d["doc_id"] for d in listed["documents"]] == [other]
    assert f"schema://{doc_id}" not in resources and f"schema://{other}" in resources
    assert (undeleted["version"], undeleted["deleted"], undeleted["deleted_at"]) == (4, False, None)
    title = await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/title"})
    assert (title["node_content"], title["version"]) == ("Kept", 4)
    ops = [e["op"] for e in (await call(client, "document_history", {"doc_id": doc_id}))["entries"]]
    assert ops == ["create", "update_node", "delete_document", "undelete_document"]


async def test_writes_to_a_deleted_document_are_document_not_found(client: Client) -> None:
    doc_id = await new_document(client)
    await call(client, "document_delete", {"doc_id": doc_id, "version": 1})

    attempts: list[tuple[str, dict[str, Any]]] = [
        ("document_update_node", {"node_path": "/title", "node_data": "x", "version": 2}),
        ("document_merge_patch", {"node_path": "/", "merge_patch": {"title": "x"}, "version": 2}),
        ("document_revert", {"to_version": 1, "version": 2}),
        ("document_delete", {"version": 2}),
        ("document_history", {}),
    ]
    for tool, arguments in attempts:
        error = await fail(client, tool, {"doc_id": doc_id, **arguments})
        assert (error["code"], error["details"].get("deleted")) == ("document-not-found", True), tool


async def test_deleting_with_a_stale_version_is_version_conflict(client: Client) -> None:
    doc_id = await titled(client, "A")

    error = await fail(client, "document_delete", {"doc_id": doc_id, "version": 1})

    assert (error["code"], error["details"]["actual_version"]) == ("version-conflict", 2)
    assert (await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/title"}))["version"] == 2


async def test_undeleting_or_purging_a_live_document_is_conflict(client: Client) -> None:
    doc_id = await new_document(client)

    undelete = await fail(client, "document_undelete", {"doc_id": doc_id})
    purge = await fail(client, "document_purge", {"doc_id": doc_id})

    assert (undelete["code"], purge["code"]) == ("conflict", "conflict")
    assert (await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/"}))["version"] == 1


async def test_a_purged_document_is_gone_for_good(client: Client) -> None:
    doc_id = await new_document(client)
    await call(client, "document_delete", {"doc_id": doc_id, "version": 1})

    purged = await call(client, "document_purge", {"doc_id": doc_id.lower()})

    assert purged == {"success": True, "doc_id": doc_id, "purged": True}
    for tool in ("document_undelete", "document_purge", "document_history"):
        error = await fail(client, tool, {"doc_id": doc_id})
        assert error["code"] == "document-not-found" and "deleted" not in error["details"], tool
    with pytest.raises(MCPError):
        await client.read_resource(f"schema://{doc_id}/versions/1")


# -- document_merge_patch -----------------------------------------------------------------------


async def test_a_merge_patch_sets_members_removes_nulls_and_keeps_the_rest(client: Client) -> None:
    doc_id = await new_document(client)
    await call(client, "document_create_node", {"doc_id": doc_id, "node_path": "/metadata/isbn",
                                                "node_data": "9780441013593", "version": 1})

    merged = await call(client, "document_merge_patch", {
        "doc_id": doc_id, "node_path": "/metadata", "version": 2,
        "merge_patch": {"status": "review", "isbn": None, "author": {"name": "Frank Herbert"}}})

    assert (merged["version"], merged["node_path"], merged["dry_run"]) == (3, "/metadata", False)
    assert merged["updated_node"] == {"language": "en", "status": "review", "edition": 1, "keywords": [],
                                      "author": {"name": "Frank Herbert"}}
    assert sorted((op["op"], op["path"]) for op in merged["patch"]) == [
        ("add", "/metadata/author"), ("remove", "/metadata/isbn"), ("replace", "/metadata/status")]
    now = await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/metadata"})
    assert now["node_content"] == merged["updated_node"]
    assert (await call(client, "document_history", {"doc_id": doc_id, "since_version": 2}))["entries"][0][
        "op"] == "merge_patch"


async def test_a_merge_patch_that_is_not_an_object_replaces_the_node(client: Client) -> None:
    doc_id = await new_document(client)

    merged = await call(client, "document_merge_patch",
                        {"doc_id": doc_id, "node_path": "/title", "merge_patch": "Dune", "version": 1})

    assert (merged["updated_node"], merged["patch"]) == ("Dune", [{"op": "replace", "path": "/title",
                                                                    "value": "Dune"}])


async def test_a_merge_patch_that_does_not_fit_the_schema_is_validation_failed_listing_every_problem(
        client: Client, service: DocumentService) -> None:
    doc_id = await new_document(client)

    error = await fail(client, "document_merge_patch", {
        "doc_id": doc_id, "node_path": "/metadata", "version": 1,
        "merge_patch": {"status": "lost", "edition": "second", "colour": "red"}})

    assert error["code"] == "validation-failed"
    assert error["details"]["path"] == "/metadata"
    problems = {(v["path"], v["code"]) for v in error["details"]["violations"]}
    assert len(error["details"]["violations"]) == 3
    assert {path for path, _ in problems} == {"/metadata/status", "/metadata/edition", "/metadata"}
    assert ("/metadata", "additional-properties-forbidden") in problems
    assert service.version_of(doc_id) == 1


async def test_a_merge_patch_that_would_leave_the_document_invalid_is_validation_failed(client: Client) -> None:
    doc_id = await new_document(client)

    error = await fail(client, "document_merge_patch",
                       {"doc_id": doc_id, "node_path": "/metadata", "merge_patch": {"language": None}, "version": 1})

    assert error["code"] == "validation-failed"
    assert [(v["path"], v["code"]) for v in error["details"]["violations"]] == [("/metadata", "required-missing")]


async def test_a_dry_run_merge_patch_changes_nothing(client: Client, service: DocumentService) -> None:
    doc_id = await new_document(client)

    preview = await call(client, "document_merge_patch", {"doc_id": doc_id, "node_path": "/", "version": 1,
                                                          "merge_patch": {"title": "Dune"}, "dry_run": True})

    assert (preview["dry_run"], preview["version"], preview["would_be_version"]) == (True, 1, 2)
    assert preview["updated_node"]["title"] == "Dune"
    assert (service.version_of(doc_id), service.read_node(doc_id, "/title").node) == (1, "Untitled")


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_merge_patch_nested_too_deeply_is_request_too_deep(service: DocumentService, mode: str) -> None:
    server = build_mcp_server(service, max_json_depth=2)
    doc_id, _, _, _ = service.create_document()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(server, mode=mode) as client:
            error = await fail(client, "document_merge_patch", {"doc_id": doc_id, "node_path": "/", "version": 1,
                                                                "merge_patch": {"metadata": {"author": {}}}})
    server.notifier.close()

    assert (error["code"], error["details"]["argument"]) == ("request-too-deep", "merge_patch")


# -- document_changes ---------------------------------------------------------------------------


async def test_the_change_feed_lists_every_commit_of_every_document_in_order(client: Client) -> None:
    first = await new_document(client)
    second = await titled(client, "A")
    await call(client, "document_update_node", {"doc_id": first, "node_path": "/title", "node_data": "B",
                                                "version": 1})

    everything = await call(client, "document_changes")
    page = await call(client, "document_changes", {"since": 0, "limit": 2})
    rest = await call(client, "document_changes", {"since": page["next_cursor"]})
    nothing_new = await call(client, "document_changes", {"since": everything["next_cursor"]})

    assert [(c["doc_id"], c["version"], c["op"]) for c in everything["changes"]] == [
        (first, 1, "create"), (second, 1, "create"), (second, 2, "update_node"), (first, 2, "update_node")]
    cursors = [c["cursor"] for c in everything["changes"]]
    assert cursors == sorted(set(cursors)) and everything["next_cursor"] == cursors[-1]
    assert page["changes"] + rest["changes"] == everything["changes"]
    assert (nothing_new["changes"], nothing_new["next_cursor"]) == ([], everything["next_cursor"])


# -- wrong arguments ----------------------------------------------------------------------------


@pytest.mark.parametrize(("tool", "arguments", "argument"), [
    ("document_history", {"since_version": -1}, "since_version"),
    ("document_history", {"limit": 0}, "limit"),
    ("document_history", {"limit": "5"}, "limit"),
    ("document_read_node", {"node_path": "/", "at_version": 0}, "at_version"),
    ("document_read_node", {"node_path": "/", "at_version": "1"}, "at_version"),
    ("document_read_node", {"node_path": "/", "at_version": True}, "at_version"),
    ("document_diff", {"from_version": 1}, "to_version"),
    ("document_diff", {"from_version": 1.5, "to_version": 1}, "from_version"),
    ("document_revert", {"to_version": 1}, "version"),
    ("document_revert", {"to_version": "1", "version": 1}, "to_version"),
    ("document_revert", {"to_version": 1, "version": 1, "dry_run": "no"}, "dry_run"),
    ("document_merge_patch", {"node_path": "/", "version": 1}, "merge_patch"),
    ("document_merge_patch", {"node_path": 3, "merge_patch": {}, "version": 1}, "node_path"),
    ("document_delete", {}, "version"),
    ("document_delete", {"version": "1"}, "version"),
    ("document_delete", {"version": 1, "dry_run": True}, "dry_run"),
    ("document_undelete", {"version": 1}, "version"),
    ("document_purge", {"doc_id": 5}, "doc_id"),
    ("document_changes", {"since": -1}, "since"),
    ("document_changes", {"since": "0"}, "since"),
    ("document_changes", {"limit": 1001}, "limit"),
])
async def test_wrong_or_missing_arguments_are_invalid_request(client: Client, tool: str, arguments: dict[str, Any],
                                                              argument: str) -> None:
    if tool != "document_changes":
        arguments = {"doc_id": await new_document(client), **arguments}

    error = await fail(client, tool, arguments)

    assert error["code"] == "invalid-request"
    assert error["details"]["argument"] == argument
    assert "pydantic" not in error["message"]


async def test_the_new_tools_declare_their_arguments_for_agents(client: Client) -> None:
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}

    at_version = tools["document_read_node"].input_schema["properties"]["at_version"]
    assert at_version["type"] == "integer" and at_version["minimum"] == 1  # optional: leave it out for now
    assert "at_version" not in tools["document_read_node"].input_schema["required"]
    assert tools["document_history"].input_schema["properties"]["since_version"]["default"] == 0
    assert tools["document_changes"].input_schema["properties"]["limit"]["maximum"] == 1000
    assert "dry_run" not in tools["document_delete"].input_schema["properties"]
    hints = {name: tool.annotations for name, tool in tools.items()}
    for name in ("document_history", "document_diff", "document_changes"):
        annotations = hints[name]
        assert annotations is not None and annotations.read_only_hint is True
    for name in ("document_revert", "document_merge_patch", "document_delete", "document_purge"):
        annotations = hints[name]
        assert annotations is not None and annotations.destructive_hint is True


# -- the versions resource ----------------------------------------------------------------------


async def test_each_version_of_a_document_is_a_resource(client: Client, service: DocumentService) -> None:
    doc_id = await titled(client, "A", "B")

    versions = []
    for n in (1, 2, 3):
        contents = (await client.read_resource(f"schema://{doc_id}/versions/{n}")).contents
        assert len(contents) == 1 and contents[0].mime_type == "application/json"
        versions.append(orjson.loads(contents[0].text))  # type: ignore[union-attr]

    assert [v["title"] for v in versions] == ["Untitled", "A", "B"]
    assert versions[2] == service.read_document(doc_id)[0]


@pytest.mark.parametrize("tail", ["/versions/4", "/versions/0", "/versions/01", "/versions/x", "/versions/-1",
                                  "/versions/99999999999999999999999"])
async def test_a_version_that_does_not_exist_is_resource_not_found(client: Client, tail: str) -> None:
    doc_id = await titled(client, "A", "B")
    uri = f"schema://{doc_id}{tail}"

    with pytest.raises(MCPError) as raised:
        await client.read_resource(uri)

    assert raised.value.error.code == INVALID_PARAMS
    assert isinstance(raised.value.error.data, dict) and raised.value.error.data["uri"] == uri


@pytest.mark.parametrize("doc_id", [UNKNOWN_DOC, "not-a-ulid"])
async def test_a_version_of_an_unknown_document_is_resource_not_found(client: Client, doc_id: str) -> None:
    uri = f"schema://{doc_id}/versions/1"

    with pytest.raises(MCPError) as raised:
        await client.read_resource(uri)

    assert raised.value.error.code == INVALID_PARAMS
    assert isinstance(raised.value.error.data, dict) and raised.value.error.data["uri"] == uri
    assert raised.value.error.data["error"]["code"] in ("document-not-found", "invalid-doc-id")


async def test_a_version_of_a_deleted_document_is_resource_not_found(client: Client) -> None:
    doc_id = await new_document(client)
    await call(client, "document_delete", {"doc_id": doc_id, "version": 1})

    with pytest.raises(MCPError) as raised:
        await client.read_resource(f"schema://{doc_id}/versions/1")

    assert raised.value.error.code == INVALID_PARAMS
    data = raised.value.error.data
    assert isinstance(data, dict) and data["error"]["details"]["deleted"] is True


# -- change notifications -----------------------------------------------------------------------


async def test_a_legacy_subscriber_hears_of_every_kind_of_change_in_order(server: SchemaDocMCPServer,
                                                                          service: DocumentService) -> None:
    doc_id, _, _, _ = service.create_document()
    uri = f"schema://{doc_id}"
    heard = Notifications()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with legacy_client(server, heard) as client:
            await client.subscribe_resource(uri)
            in_another_thread(lambda: service.update_node(doc_id, "/title", "A", 1))
            in_another_thread(lambda: service.merge_patch(doc_id, "/", {"tags": ["x"]}, 2))
            in_another_thread(lambda: service.revert(doc_id, 1, 3))
            in_another_thread(lambda: service.delete_document(doc_id, 4))
            in_another_thread(lambda: service.undelete_document(doc_id))
            in_another_thread(lambda: service.delete_document(doc_id, 6))
            in_another_thread(lambda: service.purge_document(doc_id))

            received = await heard.wait_for(11)
            await server.notifier.drain()
            await anyio.sleep(0.05)

    updated, listed = (UPDATED, uri), (LIST_CHANGED, None)
    assert received == [updated, updated, updated, updated, listed, updated, listed, updated, listed,
                        updated, listed]
    assert server.notifier.subscribers(uri) == 0  # a purged document's subscriptions are dropped


async def test_a_modern_listener_hears_of_writes_deletions_and_restorations(server: SchemaDocMCPServer,
                                                                           service: DocumentService) -> None:
    kept, _, _, _ = service.create_document()
    dropped, _, _, _ = service.create_document()
    uris = [f"schema://{kept}", f"schema://{dropped}"]

    async with Client(server) as client, client.listen(resource_subscriptions=uris,
                                                       resources_list_changed=True) as listening:
        in_another_thread(lambda: service.revert(kept, 1, 1))
        in_another_thread(lambda: service.delete_document(dropped, 1))
        with anyio.fail_after(5):
            first = [await listening.__anext__() for _ in range(3)]
        in_another_thread(lambda: service.undelete_document(dropped))
        with anyio.fail_after(5):
            second = [await listening.__anext__() for _ in range(2)]

    assert first == [ResourceUpdated(uri=uris[0]), ResourceUpdated(uri=uris[1]), ResourcesListChanged()]
    assert second == [ResourceUpdated(uri=uris[1]), ResourcesListChanged()]


async def test_dry_runs_and_refused_writes_publish_nothing(server: SchemaDocMCPServer,
                                                           service: DocumentService) -> None:
    target, _, _, _ = service.create_document()
    sentinel, _, _, _ = service.create_document()
    events: list[ChangeEvent] = []
    service.subscribe(events.append)
    heard = Notifications()
    uris = [f"schema://{target}", f"schema://{sentinel}"]

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with legacy_client(server, heard) as legacy, Client(server) as modern, modern.listen(
                resource_subscriptions=uris, resources_list_changed=True) as listening:
            for uri in uris:
                await legacy.subscribe_resource(uri)
            refused = [
                await legacy.call_tool("document_update_node", {"doc_id": target, "node_path": "/title",
                                                                "node_data": "X", "version": 1, "dry_run": True}),
                await legacy.call_tool("document_merge_patch", {"doc_id": target, "node_path": "/", "version": 1,
                                                                "merge_patch": {"title": "X"}, "dry_run": True}),
                await legacy.call_tool("document_revert", {"doc_id": target, "to_version": 1, "version": 1,
                                                           "dry_run": True}),
                await legacy.call_tool("document_update_node", {"doc_id": target, "node_path": "/title",
                                                                "node_data": 7, "version": 1}),
                await legacy.call_tool("document_update_node", {"doc_id": target, "node_path": "/title",
                                                                "node_data": "X", "version": 5}),
                await legacy.call_tool("document_merge_patch", {"doc_id": target, "node_path": "/", "version": 1,
                                                                "merge_patch": {"colour": "red"}}),
                await legacy.call_tool("document_revert", {"doc_id": target, "to_version": 9, "version": 1}),
                await legacy.call_tool("document_delete", {"doc_id": target, "version": 2}),
                await legacy.call_tool("document_undelete", {"doc_id": target}),
                await legacy.call_tool("document_purge", {"doc_id": target}),
            ]
            await call(modern, "document_update_node", {"doc_id": sentinel, "node_path": "/title",
                                                        "node_data": "Committed", "version": 1})
            with anyio.fail_after(5):
                first_event = await listening.__anext__()
            received = await heard.wait_for(1)
            await server.notifier.drain()
            await anyio.sleep(0.05)

    assert [r.is_error for r in refused] == [False] * 3 + [True] * 7
    assert [(e.doc_id, e.version, e.kind) for e in events] == [(sentinel, 2, "updated")]
    assert first_event == ResourceUpdated(uri=uris[1])
    assert received == [(UPDATED, uris[1])]
    assert service.version_of(target) == 1


async def test_notifications_arrive_in_commit_order_for_both_eras(server: SchemaDocMCPServer,
                                                                  service: DocumentService) -> None:
    ids = [service.create_document()[0] for _ in range(6)]
    uris = [f"schema://{doc_id}" for doc_id in ids]
    order = [3, 0, 5, 1, 4, 2]
    heard = Notifications()

    def write_all() -> None:  # each update followed by a new document (a list change)
        for index in order:
            service.update_node(ids[index], "/title", f"T{index}", 1)
            service.create_document()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with legacy_client(server, heard) as legacy, Client(server) as modern, modern.listen(
                resource_subscriptions=uris) as listening:
            for uri in uris:
                await legacy.subscribe_resource(uri)
            in_another_thread(write_all)
            with anyio.fail_after(5):
                events: list[ServerEvent] = [await listening.__anext__() for _ in order]
            received = await heard.wait_for(2 * len(order))

    assert events == [ResourceUpdated(uri=uris[index]) for index in order]
    assert received == [item for index in order for item in ((UPDATED, uris[index]), (LIST_CHANGED, None))]


class CountingBus(InMemorySubscriptionBus):
    """The SDK's in-memory bus, counting the listen streams subscribed to it."""

    def __init__(self) -> None:
        super().__init__()
        self.active = 0

    def subscribe(self, listener: Callable[[ServerEvent], None]) -> Callable[[], None]:
        unsubscribe = super().subscribe(listener)
        self.active += 1
        done = False

        def counted() -> None:
            nonlocal done
            if not done:
                done = True
                self.active -= 1
            unsubscribe()

        return counted


async def test_subscribers_that_went_away_are_pruned_and_the_others_still_hear(service: DocumentService) -> None:
    bus = CountingBus()
    server = build_mcp_server(service, bus=bus)
    doc_id, _, _, _ = service.create_document()
    uri = f"schema://{doc_id}"
    heard = Notifications()

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(server) as staying, staying.listen(resource_subscriptions=[uri]) as listening:
            async with Client(server) as leaving, leaving.listen(resource_subscriptions=[uri]):
                async with legacy_client(server, Notifications()) as gone:
                    await gone.subscribe_resource(uri)
                    assert server.notifier.subscribers(uri) == 1
                await until(lambda: bus.active == 2)
            await until(lambda: bus.active == 1)
            assert server.notifier.subscribers(uri) == 0
            async with legacy_client(server, heard) as legacy:
                await legacy.subscribe_resource(uri)
                in_another_thread(lambda: service.delete_document(doc_id, 1))
                with anyio.fail_after(5):
                    event = await listening.__anext__()
                received = await heard.wait_for(2)
    server.notifier.close()

    assert event == ResourceUpdated(uri=uri)
    assert received == [(UPDATED, uri), (LIST_CHANGED, None)]
