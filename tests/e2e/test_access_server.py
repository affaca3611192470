"""A real ``schemadoc serve`` process with access tokens: every door (REST, its event streams, MCP over HTTP)
refuses a foreign Host or Origin, a missing, wrong or revoked token, and a read-only token's writes, alike;
a server on a non-loopback address without tokens does not start."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from http_server import BOOK_SCHEMA, Server, free_port

from schemadoc.config import ENVIRONMENT

WRITER = "writer-token-0123456789abcdef"
READER = "reader-token-0123456789abcdef"
REVOKED = "revoked-token-0123456789abcdef"
MODERN = {"mcp-protocol-version": "2026-07-28", "accept": "application/json, text/event-stream",
          "content-type": "application/json"}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


def _write_tokens(path: Path, *names: str) -> None:
    known = {"ci": (WRITER, "read-write"), "dash": (READER, "read-only"), "old": (REVOKED, "read-write")}
    entries = [{"name": name, "token": known[name][0], "access": known[name][1]} for name in names]
    path.write_text(json.dumps({"tokens": entries}), encoding="utf-8")


@pytest.fixture(scope="module")
def tokens_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("access") / "tokens.json"
    _write_tokens(path, "ci", "dash", "old")
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, tokens_path: Path) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("access-server")
    running = Server(root / "data", root / "logs", extra_args=("--tokens-file", str(tokens_path)))
    try:
        yield running
    finally:
        running.stop()
        for secret in (WRITER, READER, REVOKED):
            assert secret not in running.stderr + running.stdout  # tokens are never logged


@pytest.fixture(scope="module")
def doc_id(server: Server) -> str:
    response = httpx.post(f"{server.url}/api/v1/documents", headers=_bearer(WRITER), timeout=30)
    assert response.status_code == 201, response.text
    return str(response.json()["doc_id"])


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def _mcp(server: Server, method: str, params: dict[str, Any], headers: dict[str, str]) -> httpx.Response:
    extra = {"mcp-method": method, **({"mcp-name": str(params["name"])} if "name" in params else {})}
    body = orjson.dumps({"jsonrpc": "2.0", "id": 3, "method": method, "params": {**params, "_meta": META}})
    return httpx.post(f"{server.url}/mcp", content=body, headers={**MODERN, **extra, **headers}, timeout=30)


def _doors(server: Server, doc_id: str, headers: dict[str, str]) -> dict[str, httpx.Response]:
    """One request through each door: a REST read, a REST write, the event stream, an MCP call."""
    api = f"{server.url}/api/v1"
    with httpx.Client(timeout=30) as http:
        answers = {
            "rest read": http.get(f"{api}/documents/{doc_id}", headers=headers),
            "rest write": http.post(f"{api}/documents", headers=headers),
        }
        with http.stream("GET", f"{api}/documents/{doc_id}/events", headers=headers) as stream:
            stream.read()  # a refusal is a whole answer; nothing here ever opens the stream
            answers["events"] = stream
    answers["mcp"] = _mcp(server, "tools/list", {}, headers)
    return answers


def _code(answer: httpx.Response) -> str:
    body = answer.json()
    error = body["error"]
    return str(error["data"]["error"]["code"] if "data" in error else error["code"])


@pytest.mark.parametrize(("headers", "status", "code"), [
    ({"host": "evil.example"}, 421, "host-not-allowed"),
    ({"origin": "http://evil.example"}, 403, "origin-not-allowed"),
    ({}, 401, "token-missing"),
    (_bearer("not-a-token-of-this-server"), 401, "token-invalid"),
], ids=["foreign host", "foreign origin", "no token", "wrong token"])
def test_every_door_refuses_alike(server: Server, doc_id: str, headers: dict[str, str], status: int,
                                  code: str) -> None:
    if code.startswith("host") or code.startswith("origin"):
        headers = {**headers, **_bearer(WRITER)}  # a valid token does not help a foreign page
    answers = _doors(server, doc_id, headers)
    assert {door: (answer.status_code, _code(answer)) for door, answer in answers.items()} == {
        door: (status, code) for door in answers}
    if status == 401:
        assert all(answer.headers["www-authenticate"].startswith('Bearer realm="schemadoc"')
                   for answer in answers.values())


def test_a_read_only_token_reads_every_door_and_writes_none(server: Server, doc_id: str) -> None:
    api = f"{server.url}/api/v1"
    reader = _bearer(READER)
    assert httpx.get(f"{api}/documents/{doc_id}", headers=reader, timeout=30).status_code == 200
    with httpx.stream("GET", f"{api}/documents/{doc_id}/events", headers=reader, timeout=30) as stream:
        assert stream.status_code == 200
        assert stream.headers["content-type"].startswith("text/event-stream")
    assert _mcp(server, "tools/list", {}, reader).status_code == 200
    writes = [
        httpx.put(f"{api}/documents/{doc_id}", params={"path": "/title"}, headers=reader, timeout=30,
                  json={"node_data": "by a reader", "version": 1}),
        httpx.post(f"{api}/documents", headers=reader, timeout=30),
        httpx.delete(f"{api}/documents/{doc_id}", headers=reader, timeout=30),
        _mcp(server, "tools/call", {"name": "document_update_node", "arguments": {
            "doc_id": doc_id, "node_path": "/title", "node_data": "by a reader", "version": 1}}, reader),
        _mcp(server, "tools/call", {"name": "document_create", "arguments": {}}, reader),
    ]
    assert [(answer.status_code, _code(answer)) for answer in writes] == [(403, "token-read-only")] * len(writes)
    assert all('error="insufficient_scope"' in answer.headers["www-authenticate"] for answer in writes)
    read = httpx.get(f"{api}/documents/{doc_id}", headers=reader, timeout=30).json()
    assert read["version"] == 1  # nothing was written


def test_a_token_removed_from_the_file_is_refused_without_a_restart(server: Server, doc_id: str,
                                                                     tokens_path: Path) -> None:
    url = f"{server.url}/api/v1/documents/{doc_id}"
    assert httpx.get(url, headers=_bearer(REVOKED), timeout=30).status_code == 200
    _write_tokens(tokens_path, "ci", "dash")
    os.utime(tokens_path, ns=(time.time_ns(), time.time_ns() + 1))
    refused = httpx.get(url, headers=_bearer(REVOKED), timeout=30)
    assert (refused.status_code, refused.json()["error"]["code"]) == (401, "token-invalid")
    assert httpx.get(url, headers=_bearer(WRITER), timeout=30).status_code == 200


def _start(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}
    command = [sys.executable, "-m", "schemadoc", "serve", "--schema", str(BOOK_SCHEMA), "--storage-dir",
               str(tmp_path / "data"), "--port", str(free_port()), *args]
    return subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)


def test_a_non_loopback_address_without_tokens_does_not_start(tmp_path: Path) -> None:
    finished = _start(tmp_path, "--host", "0.0.0.0")
    assert finished.returncode == 2  # config-invalid: the usage exit code (README)
    assert finished.stderr.startswith("schemadoc: config-invalid:")
    assert "--tokens-file" in finished.stderr and "--unsafe-no-auth" in finished.stderr
    assert "Traceback" not in finished.stderr


def test_a_bad_tokens_file_stops_the_start_without_showing_a_secret(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"tokens": [{"name": "ci", "token": WRITER, "access": "admin"}]}), encoding="utf-8")
    finished = _start(tmp_path, "--tokens-file", str(path))
    assert finished.returncode == 2  # config-invalid
    assert finished.stderr.startswith("schemadoc: config-invalid: The tokens file")
    assert WRITER not in finished.stderr
