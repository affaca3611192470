"""MCP sessions over HTTP, in process: bound to the token that opened them, counted per client address, and
freed when they end or expire (``interfaces/mcp_door/sessions.py``; the real server's tests are in
``tests/e2e/test_mcp_hostile.py``)."""

from __future__ import annotations

import json
import time
from pathlib import Path

from fastapi.testclient import TestClient

from schemadoc.config import Settings
from schemadoc.interfaces.app import build_app, create_service

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
WRITER = "w" * 8 + "-read-write-token"
OTHER = "o" * 8 + "-read-write-token"
LEGACY = "2025-11-25"
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
              "params": {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
EXPIRY_TIMEOUT_SECONDS = 15.0


def _bearer(token: str) -> dict[str, str]:
    return {**HEADERS, "authorization": f"Bearer {token}"}


def test_an_expired_session_frees_its_clients_slot(tmp_path: Path) -> None:
    settings = Settings(schema_path=BOOK_SCHEMA, storage_dir=tmp_path, max_mcp_sessions_per_client=1,
                        mcp_session_idle_seconds=1)
    with TestClient(build_app(create_service(settings), settings), base_url="http://127.0.0.1") as client:
        first = client.post("/mcp", json=INITIALIZE, headers=HEADERS)
        refused = client.post("/mcp", json=INITIALIZE, headers=HEADERS)
        deadline = time.monotonic() + EXPIRY_TIMEOUT_SECONDS
        while (again := client.post("/mcp", json=INITIALIZE, headers=HEADERS)).status_code == 503:
            assert time.monotonic() < deadline, "the idle session never expired"
            time.sleep(0.2)
        expired = client.post("/mcp", json={"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
                              headers={**HEADERS, "mcp-session-id": first.headers["mcp-session-id"],
                                       "mcp-protocol-version": LEGACY})
    assert first.status_code == 200
    error = refused.json()["error"]["data"]["error"]
    assert (refused.status_code, error["code"], error["details"]["limit"]) == (
        503, "too-many-sessions", "max_mcp_sessions_per_client")
    assert again.status_code == 200
    assert (expired.status_code, expired.json()["error"]["data"]["error"]["code"]) == (404, "session-not-found")


def test_a_session_answers_its_own_token_and_not_another_of_the_same_access(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [{"name": "a", "token": WRITER, "access": "read-write"},
                                             {"name": "b", "token": OTHER, "access": "read-write"}]}))
    settings = Settings(schema_path=BOOK_SCHEMA, storage_dir=tmp_path / "data", tokens_file=tokens)
    with TestClient(build_app(create_service(settings), settings), base_url="http://127.0.0.1") as client:
        session = client.post("/mcp", json=INITIALIZE, headers=_bearer(WRITER)).headers["mcp-session-id"]
        named = {"mcp-session-id": session, "mcp-protocol-version": LEGACY}
        foreign = client.delete("/mcp", headers={**_bearer(OTHER), **named})
        own = client.delete("/mcp", headers={**_bearer(WRITER), **named})
    body = foreign.json()
    assert (foreign.status_code, body["error"]["code"], body["error"]["data"]["error"]["code"]) == (
        404, -32600, "session-not-found")
    assert own.status_code == 200
