"""Configurable limits over the wire: a uvicorn server on 127.0.0.1 (in a thread, set up from
environment variables as ``schemadoc serve`` is, without a second interpreter's start-up).

String length and patch operations are refused alike by both doors (REST and MCP over HTTP) with
``request-too-large`` and nothing changes; change subscribers (REST event streams and MCP resource
subscriptions share one count) beyond a limit get ``too-many-subscribers`` while those already
following keep hearing, and a slot comes back when a subscriber leaves; an MCP session beyond
``max_mcp_sessions`` gets ``too-many-sessions`` in a JSON-RPC error, and a session that ends or
expires frees its slot.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
import uvicorn
from anyio.streams.memory import MemoryObjectReceiveStream
from fastapi.testclient import TestClient
from http_server import BOOK_SCHEMA
from mcp import Client, MCPError
from test_feeds import following, next_events

from schemadoc.config import Settings, load_settings
from schemadoc.errors import CATALOG
from schemadoc.interfaces.app import build_app, create_service

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

MAX_STRING = 64
MAX_OPERATIONS = 5
PER_DOCUMENT = 2
TOTAL = 3
SESSIONS = 2
LIMITS = {"MAX_STRING_LENGTH": str(MAX_STRING), "MAX_PATCH_OPERATIONS": str(MAX_OPERATIONS),
          "MAX_SUBSCRIBERS_PER_DOCUMENT": str(PER_DOCUMENT), "MAX_SUBSCRIBERS_TOTAL": str(TOTAL),
          "MAX_MCP_SESSIONS": str(SESSIONS)}
SLOT_TIMEOUT_SECONDS = 10.0
LEGACY = "2025-11-25"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": LEGACY, "capabilities": {},
                         "clientInfo": {"name": "limits-test", "version": "1"}}}
MCP_HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class Server:
    """The application ``schemadoc serve`` builds, served by uvicorn on a free port in a thread."""

    def __init__(self, storage: Path) -> None:
        settings = load_settings({"schema_path": str(BOOK_SCHEMA), "storage_dir": str(storage)}, LIMITS)
        self.service = create_service(settings)
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.uvicorn = uvicorn.Server(uvicorn.Config(build_app(self.service, settings), log_config=None,
                                                     lifespan="on", timeout_graceful_shutdown=5))
        self.thread = threading.Thread(target=self.uvicorn.run, kwargs={"sockets": [self.listener]}, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + SLOT_TIMEOUT_SECONDS
        while not self.uvicorn.started:
            assert self.thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)

    def stop(self) -> None:
        self.uvicorn.should_exit = True
        self.thread.join(SLOT_TIMEOUT_SECONDS)
        self.service.close()
        self.listener.close()
        assert not self.thread.is_alive(), "the server did not stop"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = Server(tmp_path_factory.mktemp("limits"))
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
async def http(server: Server) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=f"{server.url}/api/v1", timeout=30) as client:
        yield client


@contextlib.asynccontextmanager
async def mcp(server: Server, mode: str = "auto") -> AsyncIterator[Client]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the handshake era and resources/subscribe are deprecated
        async with Client(f"{server.url}/mcp", mode=mode) as client:
            yield client


def rest_error(response: httpx.Response, status: int) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"code", "category", "message", "details", "remediation", "request_id"}
    assert error["category"] == str(status) == str(CATALOG[error["code"]].status)
    return error


async def tool_error(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.is_error is True
    error: dict[str, Any] = orjson.loads(result.content[0].text)["error"]  # type: ignore[union-attr]
    return error


async def tool_result(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert result.is_error is False, result.content
    assert result.structured_content is not None
    return result.structured_content


async def document(http: httpx.AsyncClient) -> tuple[str, Any]:
    """A new document and its content."""
    doc_id = str((await http.post("/documents")).json()["doc_id"])
    return doc_id, (await http.get(f"/documents/{doc_id}")).json()["node_content"]


async def unchanged(http: httpx.AsyncClient, doc_id: str, content: Any, version: int = 1) -> None:
    read = await http.get(f"/documents/{doc_id}")
    assert (read.headers["etag"], read.json()["node_content"]) == (f'"{version}"', content)


def same_refusal(rest: dict[str, Any], mcp_error: dict[str, Any]) -> None:
    assert (mcp_error["code"], mcp_error["details"], mcp_error["message"]) == (
        rest["code"], rest["details"], rest["message"])


# -- string length -------------------------------------------------------------------------------


async def test_strings_and_member_names_over_max_string_length_are_refused_alike_and_change_nothing(
        server: Server, http: httpx.AsyncClient) -> None:
    doc_id, content = await document(http)
    at_limit = "é" * MAX_STRING  # counted in characters: 128 bytes of UTF-8 still fit
    over = "x" * (MAX_STRING + 1)

    rest_value = rest_error(await http.put(f"/documents/{doc_id}", params={"path": "/title"},
                                           json={"node_data": over, "version": 1}), 413)
    rest_patch = rest_error(await http.post(f"/documents/{doc_id}/patch", json={"version": 1, "patch": [
        {"op": "add", "path": "/tags/-", "value": "fine"}, {"op": "add", "path": "/tags/-", "value": over}]}), 413)
    rest_key = rest_error(await http.patch(f"/documents/{doc_id}", params={"path": "/metadata"},
                                           content=orjson.dumps({"author": {over: "x"}}),
                                           headers={"Content-Type": "application/merge-patch+json",
                                                    "If-Match": '"1"'}), 413)
    await unchanged(http, doc_id, content)
    async with mcp(server) as client:
        mcp_value = await tool_error(client, "document_update_node",
                                     {"doc_id": doc_id, "node_path": "/title", "node_data": over, "version": 1})
        mcp_patch = await tool_error(client, "document_apply_patch", {"doc_id": doc_id, "version": 1, "patch": [
            {"op": "add", "path": "/tags/-", "value": "fine"}, {"op": "add", "path": "/tags/-", "value": over}]})
        mcp_key = await tool_error(client, "document_merge_patch", {"doc_id": doc_id, "node_path": "/metadata",
                                                                    "merge_patch": {"author": {over: "x"}},
                                                                    "version": 1})
        await unchanged(http, doc_id, content)
        written = await tool_result(client, "document_update_node", {"doc_id": doc_id, "node_path": "/title",
                                                                     "node_data": at_limit, "version": 1})

    assert rest_value["code"] == "request-too-large"
    assert rest_value["details"] == {"limit": "max_string_length", "max_string_length": MAX_STRING,
                                     "actual": MAX_STRING + 1, "argument": "node_data", "at": "", "kind": "string"}
    assert rest_patch["details"] == {**rest_value["details"], "argument": "patch", "at": "/1/value"}
    assert rest_key["details"] == {**rest_value["details"], "argument": "merge_patch", "at": "/author",
                                   "kind": "member name"}
    for rest, refused in ((rest_value, mcp_value), (rest_patch, mcp_patch), (rest_key, mcp_key)):
        same_refusal(rest, refused)
    assert written["version"] == 2
    assert (await http.get(f"/documents/{doc_id}", params={"path": "/title"})).json()["node_content"] == at_limit
    over_path = await http.post(f"/documents/{doc_id}/nodes", params={"path": "/metadata/" + over},
                                json={"node_data": 1, "version": 2})
    assert rest_error(over_path, 413)["details"]["kind"] == "path"


# -- patch operations ----------------------------------------------------------------------------


async def test_patches_over_max_patch_operations_are_refused_alike_and_change_nothing(
        server: Server, http: httpx.AsyncClient) -> None:
    doc_id, content = await document(http)

    def tags(count: int) -> list[dict[str, Any]]:
        return [{"op": "add", "path": "/tags/-", "value": f"t{n}"} for n in range(count)]

    members = {"language": "fr", "status": "review", "edition": 2, "author": "Ann", "isbn": "1234567890123",
               "homepage": "https://example.org/"}
    rest_patch = rest_error(await http.post(f"/documents/{doc_id}/patch",
                                            json={"version": 1, "patch": tags(MAX_OPERATIONS + 1)}), 413)
    rest_merge = rest_error(await http.patch(f"/documents/{doc_id}", params={"path": "/metadata"},
                                             content=orjson.dumps(members),
                                             headers={"Content-Type": "application/merge-patch+json",
                                                      "If-Match": '"1"'}), 413)
    await unchanged(http, doc_id, content)
    async with mcp(server) as client:
        mcp_patch = await tool_error(client, "document_apply_patch",
                                     {"doc_id": doc_id, "version": 1, "patch": tags(MAX_OPERATIONS + 1)})
        mcp_merge = await tool_error(client, "document_merge_patch", {"doc_id": doc_id, "node_path": "/metadata",
                                                                      "merge_patch": members, "version": 1})
        await unchanged(http, doc_id, content)
        fits = await tool_result(client, "document_apply_patch",
                                 {"doc_id": doc_id, "version": 1, "patch": tags(MAX_OPERATIONS)})
    del members["homepage"]
    merged = await http.patch(f"/documents/{doc_id}", params={"path": "/metadata"}, content=orjson.dumps(members),
                              headers={"Content-Type": "application/merge-patch+json", "If-Match": '"2"'})

    assert rest_patch["code"] == "request-too-large"
    assert rest_patch["details"] == {"limit": "max_patch_operations", "max_patch_operations": MAX_OPERATIONS,
                                     "actual": MAX_OPERATIONS + 1, "argument": "patch"}
    assert rest_merge["details"] == {**rest_patch["details"], "argument": "merge_patch"}
    same_refusal(rest_patch, mcp_patch)
    same_refusal(rest_merge, mcp_merge)
    assert (fits["version"], len(fits["patch"])) == (2, MAX_OPERATIONS)
    assert merged.status_code == 200, merged.text
    assert len(merged.json()["patch"]) == MAX_OPERATIONS


# -- change subscribers --------------------------------------------------------------------------


async def stream_status(http: httpx.AsyncClient, doc_id: str) -> httpx.Response:
    """Open an event stream and close it at once: a 200 (a slot was free) or the error response."""
    async with http.stream("GET", f"/documents/{doc_id}/events", timeout=httpx.Timeout(10, read=None)) as response:
        if response.status_code != 200:
            await response.aread()
        return response


async def until_admitted(http: httpx.AsyncClient, doc_id: str) -> None:
    """Wait until the server has noticed a disconnect and a stream of ``doc_id`` is admitted again."""
    with anyio.fail_after(SLOT_TIMEOUT_SECONDS):
        while (await stream_status(http, doc_id)).status_code != 200:
            await anyio.sleep(0.05)


async def test_event_streams_beyond_either_limit_are_refused_and_a_slot_comes_back(
        server: Server, http: httpx.AsyncClient) -> None:
    first, _ = await document(http)
    second, _ = await document(http)
    async with contextlib.AsyncExitStack() as streams:
        followers: list[MemoryObjectReceiveStream[dict[str, str]]] = [
            await streams.enter_async_context(following(http, first)) for _ in range(PER_DOCUMENT)]
        per_document = rest_error(await stream_status(http, first), 503)
        async with following(http, second):
            total = rest_error(await stream_status(http, second), 503)
            await http.put(f"/documents/{first}", params={"path": "/title"}, json={"node_data": "Heard", "version": 1})
            heard = [(await next_events(follower, 1))[0] for follower in followers]
        await until_admitted(http, second)  # the second document's stream left: the total has room again
    await until_admitted(http, first)

    assert per_document["code"] == "too-many-subscribers"
    assert per_document["details"] == {"limit": "max_subscribers_per_document",
                                       "max_subscribers_per_document": PER_DOCUMENT, "actual": PER_DOCUMENT,
                                       "doc_id": first}
    assert total["details"] == {"limit": "max_subscribers_total", "max_subscribers_total": TOTAL, "actual": TOTAL,
                                "doc_id": second}
    assert [(event["event"], event["id"]) for event in heard] == [("version", "2")] * PER_DOCUMENT


async def test_mcp_resource_subscriptions_share_the_count_with_event_streams(
        server: Server, http: httpx.AsyncClient) -> None:
    doc_id, _ = await document(http)
    uri = f"schema://{doc_id}"
    async with mcp(server, "legacy") as legacy, mcp(server) as modern:
        await legacy.subscribe_resource(uri)
        async with following(http, doc_id):
            refused_stream = rest_error(await stream_status(http, doc_id), 503)
            with pytest.raises(MCPError) as refused_listen:
                async with modern.listen(resource_subscriptions=[uri]) as listening:
                    await listening.__anext__()
        await legacy.unsubscribe_resource(uri)
        async with following(http, doc_id), modern.listen(resource_subscriptions=[uri]) as listening:
            with pytest.raises(MCPError) as refused_subscribe:
                await legacy.subscribe_resource(uri)
            await http.put(f"/documents/{doc_id}", params={"path": "/title"}, json={"node_data": "T", "version": 1})
            with anyio.fail_after(SLOT_TIMEOUT_SECONDS):
                assert str((await listening.__anext__()).uri) == uri

    assert refused_stream["details"]["limit"] == "max_subscribers_per_document"
    for refusal in (refused_listen.value, refused_subscribe.value):
        data = refusal.error.data
        assert isinstance(data, dict)
        assert data["error"]["code"] == "too-many-subscribers"
        assert data["error"]["details"] == refused_stream["details"]


# -- MCP sessions --------------------------------------------------------------------------------


async def initialize(client: httpx.AsyncClient, message_id: int = 1) -> httpx.Response:
    return await client.post("/mcp", json={**INITIALIZE, "id": message_id}, headers=MCP_HEADERS)


async def test_an_mcp_session_beyond_max_mcp_sessions_is_refused_and_an_ended_one_frees_its_slot(
        server: Server) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        opened = [await initialize(client, n) for n in range(SESSIONS)]
        sessions = [response.headers["mcp-session-id"] for response in opened]
        refused = await initialize(client, 42)
        async with mcp(server) as modern:  # the modern era has no sessions: unaffected
            listed = await tool_result(modern, "document_list", {})
        ended = await client.delete("/mcp", headers={**MCP_HEADERS, "Mcp-Session-Id": sessions[0],
                                                     "Mcp-Protocol-Version": LEGACY})
        again = await initialize(client, 43)
        for session in [*sessions[1:], again.headers.get("mcp-session-id", "")]:
            await client.delete("/mcp", headers={**MCP_HEADERS, "Mcp-Session-Id": session,
                                                 "Mcp-Protocol-Version": LEGACY})

    assert [response.status_code for response in opened] == [200] * SESSIONS
    assert refused.status_code == 503
    body = refused.json()
    assert (body["jsonrpc"], body["id"], body["error"]["code"]) == ("2.0", 42, -32603)
    error = body["error"]["data"]["error"]
    assert (error["code"], error["category"]) == ("too-many-sessions", "503")
    assert error["details"] == {"limit": "max_mcp_sessions", "max_mcp_sessions": SESSIONS, "actual": SESSIONS}
    assert body["error"]["message"] == error["message"]
    assert listed["success"] is True
    assert ended.status_code == 200
    assert again.status_code == 200 and again.headers.get("mcp-session-id")


def test_an_expired_mcp_session_frees_its_slot(tmp_path: Path) -> None:
    settings = Settings(schema_path=BOOK_SCHEMA, storage_dir=tmp_path, max_mcp_sessions=1,
                        mcp_session_idle_seconds=1)
    with TestClient(build_app(create_service(settings), settings), base_url="http://127.0.0.1") as client:
        first = client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        refused = client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)
        deadline = time.monotonic() + SLOT_TIMEOUT_SECONDS
        while (again := client.post("/mcp", json=INITIALIZE, headers=MCP_HEADERS)).status_code == 503:
            assert time.monotonic() < deadline, "the idle session never expired"
            time.sleep(0.2)
    assert first.status_code == 200 and refused.status_code == 503
    assert refused.json()["error"]["data"]["error"]["code"] == "too-many-sessions"
    assert again.status_code == 200
    assert again.headers["mcp-session-id"] != first.headers["mcp-session-id"]


async def test_the_openapi_document_declares_the_new_refusals(server: Server) -> None:
    async with httpx.AsyncClient(base_url=server.url, timeout=30) as client:
        paths = (await client.get("/openapi.json")).json()["paths"]
    events = paths["/api/v1/documents/{doc_id}/events"]["get"]["responses"]
    assert "too-many-subscribers" in events["503"]["description"]
    for path, method in (("/api/v1/documents/{doc_id}", "put"), ("/api/v1/documents/{doc_id}/patch", "post"),
                         ("/api/v1/documents/{doc_id}", "patch"), ("/api/v1/documents/{doc_id}/move", "post")):
        assert "413" in paths[path][method]["responses"], (path, method)
