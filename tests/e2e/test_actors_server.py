"""Who changed what, on real servers: the actor of every version is the name of the token it was written with,
at both doors (REST, MCP over streamable HTTP in both protocol eras), else the door (``rest``, ``mcp``,
``stdio``); history shows it and filters by it, the change feed, the event stream and a diff name it, it survives a
restart (files store and PostgreSQL), and no header or argument sets it."""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import httpx2
import pytest
from http_server import BOOK_SCHEMA, Server, tokens_file
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from pg_support import throwaway_schema

from schemadoc.config import ENVIRONMENT

ALICE = "alice-secret-0123456789abcdef"
BOB = "bob-secret-0123456789abcdef!!"
CAROL = "carol-secret-0123456789abcdef"  # read-only
SPOOF = {"x-actor": "mallory", "x-schemadoc-actor": "mallory", "x-forwarded-user": "mallory",
         "x-remote-user": "mallory", "from": "mallory@example.com"}
TIMEOUT_SECONDS = 60


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _tokens(directory: Path) -> Path:
    return tokens_file(directory, {"name": "alice", "token": ALICE, "access": "read-write"},
                       {"name": "bob", "token": BOB, "access": "read-write"},
                       {"name": "carol", "token": CAROL, "access": "read-only"})


def _as(secret: str) -> dict[str, str]:
    return {"authorization": f"Bearer {secret}", **SPOOF}


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("actors")


@pytest.fixture(scope="module")
def token_server(root: Path) -> Iterator[Server]:
    with Server(root / "data", root / "logs", extra_args=("--tokens-file", str(_tokens(root)))) as server:
        yield server


@asynccontextmanager
async def mcp_client(url: str, mode: str, headers: dict[str, str] | None = None) -> AsyncIterator[Client]:
    """The official client over streamable HTTP (``auto``: the modern era; ``legacy``: sessions), sending
    ``headers`` with every request."""
    with anyio.fail_after(TIMEOUT_SECONDS), warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        async with httpx2.AsyncClient(headers=headers or {}, timeout=30) as http, \
                Client(streamable_http_client(f"{url}/mcp", http_client=http), mode=mode) as client:
            yield client


def structured(result: Any) -> dict[str, Any]:
    assert result.is_error is False, result.content
    return dict(result.structured_content)


def rest_update(http: httpx.Client, doc_id: str, title: str, version: int, headers: dict[str, str]) -> None:
    written = http.put(f"/documents/{doc_id}", params={"path": "/title"}, headers=headers,
                       json={"node_data": title, "version": version})
    assert written.status_code == 200, written.text


def history(http: httpx.Client, doc_id: str, headers: dict[str, str], **params: Any) -> list[tuple[int, Any]]:
    page = http.get(f"/documents/{doc_id}/history", headers=headers, params=params)
    assert page.status_code == 200, page.text
    return [(entry["version"], entry["actor"]) for entry in page.json()["entries"]]


def stream_actors(http: httpx.Client, doc_id: str, headers: dict[str, str], count: int) -> list[tuple[int, Any]]:
    """The first ``count`` version events of the document's event stream, from the start."""
    found: list[tuple[int, Any]] = []
    with http.stream("GET", f"/documents/{doc_id}/events", params={"since": 0}, headers=headers) as response:
        assert response.status_code == 200
        event = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                event = line[len("event: "):]
            elif line.startswith("data: ") and event == "version":
                body = json.loads(line[len("data: "):])
                found.append((body["version"], body["actor"]))
                if len(found) == count:
                    break
    return found


@pytest.mark.anyio
async def test_two_tokens_at_both_doors_are_told_apart_filtered_streamed_and_kept_over_a_restart(
        root: Path, token_server: Server) -> None:
    with httpx.Client(base_url=f"{token_server.url}/api/v1", timeout=30) as http:
        doc_id = http.post("/documents", headers=_as(ALICE)).json()["doc_id"]  # v1 alice (REST)
        rest_update(http, doc_id, "by bob over REST", 1, _as(BOB))  # v2 bob (REST)
    async with mcp_client(token_server.url, "legacy", _as(ALICE)) as alice:  # v3 alice (MCP, sessions)
        structured(await alice.call_tool("document_update_node", {
            "doc_id": doc_id, "node_path": "/title", "node_data": "by alice over MCP", "version": 2}))
    async with mcp_client(token_server.url, "auto", _as(BOB)) as bob:  # v4 bob (MCP, modern era)
        structured(await bob.call_tool("document_update_node", {
            "doc_id": doc_id, "node_path": "/title", "node_data": "by bob over MCP", "version": 3}))
        only_alice = structured(await bob.call_tool("document_history", {"doc_id": doc_id, "actor": "alice"}))
        mcp_diffs = [structured(await bob.call_tool("document_diff", {"doc_id": doc_id, "from_version": a,
                                                                      "to_version": b}))
                     for a, b in ((1, 4), (4, 2), (3, 4))]
        summary = structured(await bob.call_tool("document_history",
                                                 {"doc_id": doc_id, "actor": "bob", "summary": True}))
    expected = [(1, "alice"), (2, "bob"), (3, "alice"), (4, "bob")]
    assert [(entry["version"], entry["actor"]) for entry in only_alice["entries"]] == [(1, "alice"), (3, "alice")]
    assert [(entry["version"], entry["actor"]) for entry in summary["entries"]] == [(2, "bob"), (4, "bob")]

    reader = {"authorization": f"Bearer {CAROL}"}
    with httpx.Client(base_url=f"{token_server.url}/api/v1", timeout=30) as http:
        assert history(http, doc_id, reader) == expected
        assert history(http, doc_id, reader, actor="bob") == [(2, "bob"), (4, "bob")]
        assert history(http, doc_id, reader, actor="mallory") == []
        changes = http.get("/changes", headers=reader).json()["changes"]
        assert [(change["version"], change["actor"]) for change in changes if change["doc_id"] == doc_id] == expected
        assert stream_actors(http, doc_id, reader, 4) == expected
        rest_diffs = [http.get(f"/documents/{doc_id}/diff", headers=reader,
                               params={"from_version": a, "to_version": b}).json() for a, b in ((1, 4), (4, 2), (3, 4))]
    assert rest_diffs == mcp_diffs  # the diff names who made the versions it spans, the same at both doors
    assert [diff["actors"] for diff in rest_diffs] == [
        {"names": ["bob", "alice"], "complete": True, "through_version": 4},  # versions 2 to 4
        {"names": ["alice", "bob"], "complete": True, "through_version": 4},  # 3 and 4, undone
        {"names": ["bob"], "complete": True, "through_version": 4}]

    token_server.stop()  # the same storage directory, a new process
    with Server(root / "data", root / "logs", extra_args=("--tokens-file", str(_tokens(root)))) as again, \
            httpx.Client(base_url=f"{again.url}/api/v1", timeout=30) as http:
        assert history(http, doc_id, reader) == expected
        assert history(http, doc_id, reader, actor="alice", summary="true") == [(1, "alice"), (3, "alice")]
        changes = http.get("/changes", headers=reader).json()["changes"]
        assert [(change["version"], change["actor"]) for change in changes if change["doc_id"] == doc_id] == expected


@pytest.mark.anyio
async def test_an_actor_argument_on_an_mcp_write_is_refused_and_writes_nothing(tmp_path: Path) -> None:
    with Server(tmp_path / "data", tmp_path / "logs") as server:
        async with mcp_client(server.url, "auto", SPOOF) as client:
            created = structured(await client.call_tool("document_create", {}))
            refused = await client.call_tool("document_update_node", {
                "doc_id": created["doc_id"], "node_path": "/title", "node_data": "x", "version": 1,
                "actor": "mallory"})
            assert refused.is_error is True
            assert '"invalid-request"' in refused.content[0].text and "actor" in refused.content[0].text
            written = structured(await client.call_tool("document_update_node", {
                "doc_id": created["doc_id"], "node_path": "/title", "node_data": "y", "version": 1}))
            assert written["version"] == 2
            page = structured(await client.call_tool("document_history", {"doc_id": created["doc_id"]}))
        assert [(entry["version"], entry["actor"]) for entry in page["entries"]] == [(1, "mcp"), (2, "mcp")]


@pytest.mark.anyio
async def test_without_tokens_each_write_names_its_door_rest_mcp_or_stdio(tmp_path: Path) -> None:
    with Server(tmp_path / "data", tmp_path / "logs") as server:
        with httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as http:
            doc_id = http.post("/documents", headers=SPOOF).json()["doc_id"]
        async with mcp_client(server.url, "legacy", SPOOF) as client:
            structured(await client.call_tool("document_update_node", {
                "doc_id": doc_id, "node_path": "/title", "node_data": "over MCP", "version": 1}))
        with httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as http:
            assert history(http, doc_id, {}) == [(1, "rest"), (2, "mcp")]
            assert history(http, doc_id, {}, actor="mcp") == [(2, "mcp")]

    environment = {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}  # PYTHONPATH kept
    params = StdioServerParameters(command=sys.executable, cwd=tmp_path, env=environment, args=[
        "-m", "schemadoc", "serve", "--transport", "stdio", "--schema", str(BOOK_SCHEMA),
        "--storage-dir", str(tmp_path / "stdio-data")])
    with (tmp_path / "stdio.log").open("w") as errlog, anyio.fail_after(TIMEOUT_SECONDS):
        async with Client(stdio_client(params, errlog=errlog), mode="legacy") as stdio:
            created = structured(await stdio.call_tool("document_create", {}))
            structured(await stdio.call_tool("document_update_node", {
                "doc_id": created["doc_id"], "node_path": "/title", "node_data": "over stdio", "version": 1}))
            page = structured(await stdio.call_tool("document_history", {"doc_id": created["doc_id"],
                                                                         "summary": True}))
    assert [(entry["version"], entry["actor"]) for entry in page["entries"]] == [(1, "stdio"), (2, "stdio")]


@pytest.mark.postgres
def test_on_postgresql_the_actor_survives_a_restart_and_reaches_another_servers_change_feed(tmp_path: Path) -> None:
    reader = {"authorization": f"Bearer {CAROL}"}
    tokens = ("--tokens-file", str(_tokens(tmp_path)))
    with throwaway_schema() as url:
        with Server(tmp_path / "one", tmp_path / "logs", storage_url=url, extra_args=tokens) as first, \
                httpx.Client(base_url=f"{first.url}/api/v1", timeout=30) as http:
            doc_id = http.post("/documents", headers=_as(BOB)).json()["doc_id"]
            rest_update(http, doc_id, "by alice", 1, _as(ALICE))
        with Server(tmp_path / "two", tmp_path / "logs", storage_url=url, extra_args=tokens) as second, \
                httpx.Client(base_url=f"{second.url}/api/v1", timeout=30) as http:
            assert history(http, doc_id, reader) == [(1, "bob"), (2, "alice")]
            assert history(http, doc_id, reader, actor="alice") == [(2, "alice")]
            changes = http.get("/changes", headers=reader).json()["changes"]
            assert [(change["version"], change["actor"]) for change in changes] == [(1, "bob"), (2, "alice")]
