"""A real ``schemadoc serve`` with a tokens file, against hostile MCP clients over HTTP.

- One parse decides: a message whose JSON holds ``NaN`` or ``Infinity`` (which the MCP SDK's own
  parsers read as numbers) is refused as not JSON (400, JSON-RPC ``-32700``, ``invalid-request`` in
  ``data``) whatever the token, in both protocol eras; a read-only token can no longer write that
  way, and NaN arguments are refused alike by both doors instead of turning into null.
- The body of a read-only token's MCP message is bounded by ``max_body_bytes`` like every other.
- A session is usable and deletable only with the token that opened it (``session-not-found``).
- One client address holds at most ``max_mcp_sessions_per_client`` sessions (``too-many-sessions``).
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from http_server import Server, tokens_file

pytestmark = pytest.mark.timeout(120)

WRITER = "writer-token-0123456789abcdef"
OTHER_WRITER = "other-writer-token-0123456789"
READER = "reader-token-0123456789abcdef"
MAX_BODY = 64 * 1024
PER_CLIENT = 3
LEGACY = "2025-11-25"
MODERN_VERSION = "2026-07-28"
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
META = {"io.modelcontextprotocol/protocolVersion": MODERN_VERSION, "io.modelcontextprotocol/clientCapabilities": {}}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": LEGACY, "capabilities": {},
                         "clientInfo": {"name": "hostile", "version": "1"}}}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("mcp-hostile")
    tokens = tokens_file(root, {"name": "ci", "token": WRITER, "access": "read-write"},
                         {"name": "ci2", "token": OTHER_WRITER, "access": "read-write"},
                         {"name": "dash", "token": READER, "access": "read-only"})
    config = root / "config.json"
    config.write_text(json.dumps({"max_body_bytes": MAX_BODY, "max_mcp_sessions_per_client": PER_CLIENT,
                                  "max_mcp_sessions": 50}), encoding="utf-8")
    with Server(root / "data", root / "logs", extra_args=("--tokens-file", str(tokens), "--config", str(config))) as up:
        yield up
        assert "Traceback" not in up.stderr


def bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


@pytest.fixture(scope="module")
def doc_id(server: Server) -> str:
    created = httpx.post(f"{server.url}/api/v1/documents", headers=bearer(WRITER), timeout=30)
    assert created.status_code == 201, created.text
    return str(created.json()["doc_id"])


def documents(server: Server) -> list[tuple[str, int]]:
    listed = httpx.get(f"{server.url}/api/v1/documents", headers=bearer(WRITER), timeout=30)
    assert listed.status_code == 200, listed.text
    return sorted((item["doc_id"], item["version"]) for item in listed.json()["documents"])


def rpc(response: httpx.Response) -> dict[str, Any]:
    """The JSON-RPC message of an answer, sent as JSON or as one server-sent event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        found: dict[str, Any] = json.loads(data[-1])
        return found
    body: dict[str, Any] = response.json()
    return body


def post(server: Server, body: bytes, headers: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{server.url}/mcp", content=body, headers={**ACCEPT, **headers}, timeout=30)


def open_session(server: Server, token: str, transport: httpx.HTTPTransport | None = None) -> str:
    with httpx.Client(transport=transport, timeout=30) as client:
        opened = client.post(f"{server.url}/mcp", json=INITIALIZE, headers={**ACCEPT, **bearer(token)})
        assert opened.status_code == 200, opened.text
        session = opened.headers["mcp-session-id"]
        initialized = client.post(f"{server.url}/mcp", json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                                  headers={**ACCEPT, **bearer(token), **in_session(session)})
        assert initialized.status_code == 202, initialized.text
    return str(session)


def in_session(session: str) -> dict[str, str]:
    return {"mcp-session-id": session, "mcp-protocol-version": LEGACY}


def end_session(server: Server, token: str, session: str) -> httpx.Response:
    return httpx.delete(f"{server.url}/mcp", headers={**ACCEPT, **bearer(token), **in_session(session)}, timeout=30)


def catalogued(response: httpx.Response) -> tuple[int, int, str]:
    """(HTTP status, JSON-RPC code, catalogued code in ``data``) of a JSON-RPC error answer."""
    error = rpc(response)["error"]
    return response.status_code, error["code"], error["data"]["error"]["code"]


# -- one parse decides -----------------------------------------------------------------------------


def _call(doc_id: str, literal: str, where: str, era: str) -> bytes:
    """A ``tools/call`` of ``document_delete`` with ``literal`` (not JSON) as a member ``x`` of ``where``."""
    meta: dict[str, Any] = dict(META) if era == "modern" else {}
    arguments: dict[str, Any] = {"doc_id": doc_id}
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                               "params": {"name": "document_delete", "arguments": arguments, "_meta": meta}}
    {"meta": meta, "arguments": arguments, "message": message}[where]["x"] = "HOLE"
    return orjson.dumps(message).replace(b'"HOLE"', literal.encode())


@pytest.mark.parametrize("era", ["modern", "legacy"])
def test_a_nan_or_infinity_literal_never_lets_a_read_only_token_write(server: Server, doc_id: str, era: str) -> None:
    before = documents(server)
    session = open_session(server, READER) if era == "legacy" else None
    answers = {}
    try:
        for literal in ("NaN", "Infinity", "-Infinity"):
            for where in ("meta", "arguments", "message"):
                body = _call(doc_id, literal, where, era)
                headers = ({"mcp-protocol-version": MODERN_VERSION, "mcp-method": "tools/call",
                            "mcp-name": "document_delete"} if session is None else in_session(session))
                answers[literal, where] = post(server, body, {**bearer(READER), **headers})
    finally:
        if session is not None:
            end_session(server, READER, session)
    assert {key: catalogued(answer) for key, answer in answers.items()} == {
        key: (400, -32700, "invalid-request") for key in answers}
    assert all(rpc(answer)["id"] is None for answer in answers.values())
    assert documents(server) == before  # nothing deleted, nothing written
    assert (server_data(server) / f"{doc_id}.json").exists()


def server_data(server: Server) -> Path:
    return Path(server.stdout_path).parents[1] / "data"


def test_nan_arguments_are_refused_as_rest_refuses_them_never_turned_into_null(server: Server, doc_id: str) -> None:
    version = dict(documents(server))[doc_id]
    rest = httpx.put(f"{server.url}/api/v1/documents/{doc_id}", params={"path": "/title"}, timeout=30,
                     content=b'{"node_data": NaN, "version": %d}' % version,
                     headers={**bearer(WRITER), "content-type": "application/json"})
    call = (b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"document_update_node","arguments":'
            b'{"doc_id":"%s","node_path":"/title","node_data":NaN,"version":%d},"_meta":%s}}'
            % (doc_id.encode(), version, orjson.dumps(META)))
    mcp = post(server, call, {**bearer(WRITER), "mcp-protocol-version": MODERN_VERSION, "mcp-method": "tools/call",
                              "mcp-name": "document_update_node"})
    assert catalogued(mcp) == (400, -32700, "invalid-request")
    refused, error = mcp.json()["error"]["data"]["error"], rest.json()["error"]
    assert rest.status_code == 400
    assert (refused["code"], refused["category"], refused["remediation"]) == (
        error["code"], error["category"], error["remediation"])
    assert refused["message"].startswith("The request body is not valid JSON: ")
    assert error["message"].startswith("The request body is not valid JSON: ")
    assert set(refused["details"]) == set(error["details"]) and refused["details"]["argument"] == "body"
    assert mcp.json()["error"]["message"] == refused["message"]
    assert dict(documents(server))[doc_id] == version


def test_a_read_only_tokens_mcp_body_is_bounded_by_max_body_bytes(server: Server) -> None:
    """Announced far beyond the limit and never sent: refused at once, not read into memory first."""
    head = (f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\nAuthorization: Bearer {READER}\r\n"
            f"Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
            f"Content-Length: {100 * MAX_BODY}\r\n\r\n").encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as raw:
        raw.sendall(head + b'{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"pad":"')
        answer = b""
        while b"\r\n\r\n" not in answer or not answer.rstrip().endswith(b"}"):
            chunk = raw.recv(65536)
            if not chunk:
                break
            answer += chunk
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line.startswith(b"HTTP/1.1 413"), answer[:200]
    body = json.loads(rest.partition(b"\r\n\r\n")[2])
    assert body["error"]["data"]["error"]["code"] == "request-too-large"
    assert body["error"]["data"]["error"]["details"]["max_body_bytes"] == MAX_BODY


# -- sessions bound to their token, counted per client -----------------------------------------------


def test_a_session_is_usable_and_deletable_only_with_the_token_that_opened_it(server: Server) -> None:
    session = open_session(server, WRITER)
    listing = orjson.dumps({"jsonrpc": "2.0", "id": 5, "method": "tools/list"})
    try:
        foreign = {
            "reader deletes": end_session(server, READER, session),
            "other writer deletes": end_session(server, OTHER_WRITER, session),
            "reader calls": post(server, listing, {**bearer(READER), **in_session(session)}),
            "other writer calls": post(server, listing, {**bearer(OTHER_WRITER), **in_session(session)}),
        }
        with httpx.stream("GET", f"{server.url}/mcp", timeout=30,
                          headers={**ACCEPT, **bearer(READER), **in_session(session)}) as stream:
            stream.read()
            foreign["reader follows"] = stream
        own = post(server, listing, {**bearer(WRITER), **in_session(session)})
    finally:
        ended = end_session(server, WRITER, session)
    after = post(server, listing, {**bearer(WRITER), **in_session(session)})
    assert {what: catalogued(answer) for what, answer in foreign.items()} == {
        what: (404, -32600, "session-not-found") for what in foreign}
    assert rpc(foreign["reader calls"])["id"] == 5
    assert own.status_code == 200 and "document_list" in own.text  # still open for its owner
    assert ended.status_code == 200
    assert catalogued(after) == (404, -32600, "session-not-found")  # ended: the same answer as a foreign token's


def test_one_client_address_holds_at_most_max_mcp_sessions_per_client(server: Server) -> None:
    other_client = httpx.HTTPTransport(local_address="127.0.0.2")
    sessions = [open_session(server, WRITER) for _ in range(PER_CLIENT)]
    elsewhere: list[str] = []
    try:
        refused = post(server, orjson.dumps({**INITIALIZE, "id": 42}), bearer(READER))
        elsewhere.append(open_session(server, WRITER, other_client))  # another client is not held back
        assert end_session(server, WRITER, sessions.pop()).status_code == 200
        sessions.append(open_session(server, READER))  # the ended session's slot is free again
    finally:
        for session in sessions:
            end_session(server, READER, session)
            end_session(server, WRITER, session)
        for session in elsewhere:
            with httpx.Client(transport=httpx.HTTPTransport(local_address="127.0.0.2"), timeout=30) as client:
                client.delete(f"{server.url}/mcp", headers={**ACCEPT, **bearer(WRITER), **in_session(session)})
    assert catalogued(refused) == (503, -32603, "too-many-sessions")
    error = refused.json()["error"]["data"]["error"]
    assert error["details"] == {"limit": "max_mcp_sessions_per_client", "max_mcp_sessions_per_client": PER_CLIENT,
                                "actual": PER_CLIENT}
    assert refused.json()["id"] == 42
