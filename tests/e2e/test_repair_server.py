"""The repair rule over the wire: documents stored under one schema, a real server restarted with a tightened one,
and the same writes through REST and MCP (streamable HTTP): a write that fixes one of three violations is accepted
and reports two, one that adds a violation is refused, a write to a valid document is judged as always, and
``--validation-level strict`` refuses the repairing write."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from http_server import Server
from mcp import Client

pytestmark = pytest.mark.anyio

LOOSE: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "title": {"type": "string", "default": "Untitled"},
        "isbn": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}, "default": []},
        "chapters": {"type": "array", "default": [], "items": {
            "type": "object", "properties": {"title": {"type": "string"}, "isbn": {"type": "string"}}}},
    },
}
TIGHT: dict[str, Any] = json.loads(json.dumps(LOOSE))
TIGHT["required"] = ["title", "isbn"]
TIGHT["properties"]["title"]["maxLength"] = 3
TIGHT["properties"]["chapters"]["items"]["required"] = ["title", "isbn"]

THREE_WRONG = {"title": "Hello", "tags": [], "chapters": [{"title": "One"}]}
VALID = {"title": "Hi", "isbn": "1", "tags": [], "chapters": [{"title": "One", "isbn": "2"}]}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def stored(tmp_path: Path) -> tuple[Path, Path, dict[str, str]]:
    """Three documents written under the loose schema by a real server, then stopped: two with three violations
    under the tight one (one per door), one valid under both. Returns the storage, the tight schema and the ids."""
    loose, tight = tmp_path / "loose.schema.json", tmp_path / "tight.schema.json"
    loose.write_text(json.dumps(LOOSE))
    tight.write_text(json.dumps(TIGHT))
    storage = tmp_path / "data"
    ids = {}
    with Server(storage, tmp_path / "logs-loose", schema=loose) as server, \
            httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as http:
        for name, content in (("rest", THREE_WRONG), ("mcp", THREE_WRONG), ("valid", VALID)):
            created = http.post("/documents", json={"content": content})
            assert created.status_code == 201, created.text
            ids[name] = created.json()["doc_id"]
    return storage, tight, ids


def codes(violations: list[dict[str, Any]]) -> list[tuple[str, str]]:
    return sorted((violation["code"], violation["path"]) for violation in violations)


async def rest_write(http: httpx.AsyncClient, tool: str, doc_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One write through the REST door: the answer's body, an error object on refusal."""
    if tool == "document_update_node":
        answer = await http.put(f"/documents/{doc_id}", params={"path": arguments["node_path"]},
                                json={"node_data": arguments["node_data"], "version": arguments["version"]})
    else:
        answer = await http.post(f"/documents/{doc_id}/nodes", params={"path": arguments["node_path"]},
                                 json={"node_data": arguments["node_data"], "version": arguments["version"]})
    body: dict[str, Any] = answer.json()
    assert answer.status_code in (200, 201, 409, 422), answer.text
    return body


async def mcp_write(client: Client, tool: str, doc_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One write through the MCP door: the structured result, or the error object of an isError result."""
    result: Any = await client.call_tool(tool, {"doc_id": doc_id, **arguments})
    if result.is_error:
        return dict(json.loads(result.content[0].text))
    return dict(result.structured_content)


def error_of(body: dict[str, Any]) -> dict[str, Any]:
    error = body.get("error", body)
    assert isinstance(error, dict)
    return error


async def both_doors(server: Server, ids: dict[str, str]) -> dict[str, list[dict[str, Any]]]:
    """The same three writes through each door, to that door's own invalid document and to the valid one."""
    writes = [
        ("document_update_node", "doc", {"node_path": "/title", "node_data": "Hi", "version": 1}),
        ("document_create_node", "doc", {"node_path": "/chapters/-", "node_data": {"title": 7, "isbn": "3"},
                                         "version": 2}),
        ("document_update_node", "valid", {"node_path": "/title", "node_data": "Too long", "version": 1}),
    ]
    answers: dict[str, list[dict[str, Any]]] = {"rest": [], "mcp": []}
    async with httpx.AsyncClient(base_url=f"{server.url}/api/v1", timeout=30) as http:
        for tool, which, arguments in writes:
            answers["rest"].append(await rest_write(http, tool, ids["rest" if which == "doc" else which], arguments))
    with anyio.fail_after(60), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        async with Client(f"{server.url}/mcp") as client:
            for tool, which, arguments in writes:
                answers["mcp"].append(await mcp_write(client, tool, ids["mcp" if which == "doc" else which],
                                                      arguments))
    return answers


async def test_restarted_with_a_tighter_schema_both_doors_repair_a_step_at_a_time(
        stored: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    storage, tight, ids = stored
    with Server(storage, tmp_path / "logs-tight", schema=tight) as server:
        answers = await both_doors(server, ids)
        async with httpx.AsyncClient(base_url=f"{server.url}/api/v1", timeout=30) as http:
            incomplete = (await http.get(f"/documents/{ids['rest']}/incomplete")).json()
    for door, (fixed, worse, valid) in answers.items():
        assert fixed["success"] is True and fixed["version"] == 2, (door, fixed)
        report = fixed["validation_report"]
        assert report["valid"] is False and report["error_count"] == 2 and report["resolved_count"] == 1, door
        assert codes(report["errors"]) == [("required-missing", ""), ("required-missing", "/chapters/0")], door
        refused = error_of(worse)
        assert refused["code"] == "validation-failed", (door, worse)
        assert codes(refused["details"]["violations"]) == [("type-mismatch", "/chapters/1/title")], door
        assert refused["details"]["already_invalid"]["still_there_count"] == 2, door
        assert refused["details"]["suggested_call"]["resolves"] is True, door  # accepted under the repair rule
        judged = error_of(valid)  # a valid document: refused as always, every violation, no word of repair
        assert judged["code"] == "validation-failed", door
        assert codes(judged["details"]["violations"]) == [("max-length", "/title")], door
        assert "already_invalid" not in judged["details"], door
    # the doors agree, but for the document ids they name
    rest_text = json.dumps(answers["rest"]).replace(ids["rest"], "DOC")
    mcp_text = json.dumps(answers["mcp"]).replace(ids["mcp"], "DOC")
    assert json.loads(rest_text)[0]["validation_report"] == json.loads(mcp_text)[0]["validation_report"]
    assert incomplete["complete"] is False and incomplete["violation_count"] == 2
    assert [(item["pointer"], item["code"]) for item in incomplete["items"] if item["reason"] == "violation"] == \
        [("/", "required-missing"), ("/chapters/0", "required-missing")]


async def test_strict_refuses_the_repairing_write_at_both_doors(
        stored: tuple[Path, Path, dict[str, str]], tmp_path: Path) -> None:
    storage, tight, ids = stored
    with Server(storage, tmp_path / "logs-strict", schema=tight, extra_args=("--validation-level", "strict")) \
            as server:
        answers = await both_doors(server, ids)
    for door, (fixed, _, _) in answers.items():
        refused = error_of(fixed)
        assert refused["code"] == "validation-failed", (door, fixed)
        assert codes(refused["details"]["violations"]) == [("required-missing", ""),
                                                          ("required-missing", "/chapters/0")], door
