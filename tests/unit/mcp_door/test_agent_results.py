"""What an agent pays for and what it can rely on: tools/list within 25 KB, and one dry-run shape for every write
(a dry run answers what its write would: the same result, or the same error, marked as a dry run)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from mcp import Client
from mcp_support import call, fail

from schemadoc.operations.catalogue import CATALOGUE

pytestmark = pytest.mark.anyio

TOOLS_LIST_BUDGET_BYTES = 25_000


async def test_tools_list_is_at_most_25_kb_whole_and_repeats_no_definitions(client: Client) -> None:
    listed = await client.list_tools()
    whole = orjson.dumps(listed.model_dump(mode="json", by_alias=True, exclude_none=True))
    assert len(whole) <= TOOLS_LIST_BUDGET_BYTES, f"tools/list is {len(whole)} bytes"
    assert len(listed.tools) == len(CATALOGUE)
    for tool in listed.tools:
        assert tool.output_schema is not None and "$defs" not in tool.output_schema, tool.name
        assert b"ViolationBody" not in orjson.dumps(tool.output_schema)


# A refusal of each write that has a dry run, on a fresh book (version 1): the validation refusal where the write
# can make the document invalid, else a stale version. Arguments besides doc_id and version.
_REFUSED: dict[str, tuple[str, dict[str, Any]]] = {
    "document_update_node": ("validation-failed", {"node_path": "/title", "node_data": ""}),
    "document_create_node": ("validation-failed", {"node_path": "/chapters/-", "node_data": {"id": "bad id"}}),
    "document_delete_node": ("validation-failed", {"node_path": "/title"}),
    "document_apply_patch": ("validation-failed", {"patch": [{"op": "replace", "path": "/title", "value": ""}]}),
    "document_move_node": ("validation-failed", {"from_path": "/title", "to_path": "/tags/-"}),
    "document_merge_patch": ("validation-failed", {"node_path": "/", "merge_patch": {"title": ""}}),
    "document_revert": ("version-conflict", {"to_version": 1, "version": 7}),
}
_ACCEPTED: dict[str, dict[str, Any]] = {
    "document_update_node": {"node_path": "/title", "node_data": "Dry"},
    "document_create_node": {"node_path": "/tags/-", "node_data": "dry"},
    "document_delete_node": {"node_path": "/tags"},
    "document_apply_patch": {"patch": [{"op": "replace", "path": "/title", "value": "Dry"}]},
    "document_move_node": {"from_path": "/tags", "to_path": "/metadata/keywords"},
    "document_merge_patch": {"node_path": "/", "merge_patch": {"title": "Dry"}},
    "document_revert": {"to_version": 1},
}


def test_every_write_with_a_dry_run_is_covered() -> None:
    assert {operation.name for operation in CATALOGUE if operation.dry_run} == set(_REFUSED) == set(_ACCEPTED)


@pytest.mark.parametrize("tool", sorted(_REFUSED))
async def test_an_invalid_dry_run_answers_the_same_error_as_its_write(client: Client, tool: str) -> None:
    doc_id = (await call(client, "document_create"))["doc_id"]
    code, extra = _REFUSED[tool]
    arguments = {"doc_id": doc_id, "version": 1, **extra}
    dry = await fail(client, tool, {**arguments, "dry_run": True})
    real = await fail(client, tool, arguments)
    assert dry["code"] == real["code"] == code
    assert dry["details"]["dry_run"] is True and "dry_run" not in real["details"]
    same = {key: value for key, value in dry["details"].items() if key not in ("dry_run", "patch")}
    assert same == real["details"], "the same error, marked as a dry run"
    assert (dry["message"], dry["remediation"]) == (real["message"], real["remediation"])
    if code == "validation-failed" and tool != "document_merge_patch":
        assert dry["details"]["patch"], "a refused dry run shows the patch it compiled to"
    assert (await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/"}))["version"] == 1


@pytest.mark.parametrize("tool", sorted(_ACCEPTED))
async def test_a_valid_dry_run_answers_the_result_of_its_write(client: Client, tool: str) -> None:
    created = await call(client, "document_create")
    doc_id = created["doc_id"]
    if tool == "document_revert":  # something to revert
        await call(client, "document_update_node", {"doc_id": doc_id, "node_path": "/title", "node_data": "Two",
                                                    "version": 1})
    version = (await call(client, "document_read_node", {"doc_id": doc_id, "node_path": "/"}))["version"]
    arguments = {"doc_id": doc_id, "version": version, **_ACCEPTED[tool]}
    dry = await call(client, tool, {**arguments, "dry_run": True})
    real = await call(client, tool, arguments)
    assert dry["dry_run"] is True and real["dry_run"] is False
    assert set(dry) - {"would_be_version"} == set(real)
    assert dry["patch"] == real["patch"] and dry["would_be_version"] == real["version"] == version + 1
