"""A real ``schemadoc serve`` with a tokens file, against what httpx would never send: repeated or malformed
``Host`` and ``Origin`` headers over raw sockets; the API docs' scripts and styles without a token; a tokens
file listing one secret twice, which stops the start."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_server import BOOK_SCHEMA, Server, free_port, tokens_file

from schemadoc.config import ENVIRONMENT

WRITER = "writer-token-0123456789abcdef"
READER = "reader-token-0123456789abcdef"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("strict")
    tokens = tokens_file(root, {"name": "ci", "token": WRITER, "access": "read-write"},
                         {"name": "dash", "token": READER, "access": "read-only"})
    with Server(root / "data", root / "logs", extra_args=("--tokens-file", str(tokens))) as up:
        yield up
        assert "Traceback" not in up.stderr


def raw_get(server: Server, headers: list[tuple[str, str]], path: str = "/api/v1/documents") -> tuple[int, Any]:
    """Status and JSON body of a GET sent as written: header lines in this order, repeated ones too."""
    lines = [f"GET {path} HTTP/1.1", *(f"{name}: {value}" for name, value in headers),
             f"Authorization: Bearer {WRITER}", "Connection: close", "", ""]
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as raw:
        raw.sendall("\r\n".join(lines).encode("latin-1"))
        answer = b""
        while chunk := raw.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    if b"transfer-encoding: chunked" in head.lower():
        body = _unchunk(body)
    return status, json.loads(body)


def _unchunk(body: bytes) -> bytes:
    out = b""
    while body:
        size_line, _, body = body.partition(b"\r\n")
        size = int(size_line, 16)
        if size == 0:
            break
        out, body = out + body[:size], body[size + 2:]
    return out


def code(answer: tuple[int, Any]) -> tuple[int, str]:
    return answer[0], answer[1]["error"]["code"] if isinstance(answer[1], dict) and "error" in answer[1] else "-"


def test_repeated_or_malformed_host_and_origin_headers_are_refused(server: Server) -> None:
    own = f"127.0.0.1:{server.port}"
    answers = {
        "one host": raw_get(server, [("Host", own)]),
        "foreign host first": raw_get(server, [("Host", "evil.example"), ("Host", own)]),
        "foreign host last": raw_get(server, [("Host", own), ("Host", "evil.example")]),
        "same host twice": raw_get(server, [("Host", own), ("Host", own)]),
        "ipv6 and a name": raw_get(server, [("Host", f"[::1]evil.example:{server.port}")]),
        "two ports": raw_get(server, [("Host", f"localhost:{server.port}:80")]),
        "a list": raw_get(server, [("Host", f"evil.example,localhost:{server.port}")]),
        "foreign origin first": raw_get(server, [("Host", own), ("Origin", "http://evil.example"),
                                                 ("Origin", f"http://{own}")]),
        "own origin twice": raw_get(server, [("Host", own), ("Origin", f"http://{own}"), ("Origin", f"http://{own}")]),
        "ipv6 and a name in the origin": raw_get(server, [("Host", own),
                                                          ("Origin", f"http://[::1]evil.example:{server.port}")]),
    }
    assert {what: code(answer) for what, answer in answers.items()} == {
        "one host": (200, "-"),
        "foreign host first": (400, "invalid-request"),
        "foreign host last": (400, "invalid-request"),
        "same host twice": (400, "invalid-request"),
        "ipv6 and a name": (400, "invalid-request"),
        "two ports": (400, "invalid-request"),
        "a list": (400, "invalid-request"),
        "foreign origin first": (400, "invalid-request"),
        "own origin twice": (400, "invalid-request"),
        "ipv6 and a name in the origin": (403, "origin-not-allowed"),
    }
    assert answers["foreign host first"][1]["error"]["details"] == {"header": "Host", "reason": "repeated"}
    assert answers["foreign origin first"][1]["error"]["details"] == {"header": "Origin", "reason": "repeated"}
    assert answers["ipv6 and a name"][1]["error"]["details"]["reason"] == "malformed"


def test_the_api_docs_pages_load_their_scripts_and_styles_without_a_token(server: Server) -> None:
    pages = {path: httpx.get(f"{server.url}{path}", timeout=30) for path in ("/docs", "/redoc")}
    assets = sorted({part.split('"')[0] for page in pages.values() for part in page.text.split('="')[1:]
                     if part.startswith("/static/docs/")})
    assert len(assets) >= 4, assets  # Swagger UI's script and styles, ReDoc's script, the favicon
    answers = {asset: httpx.get(f"{server.url}{asset}", timeout=30) for asset in assets}
    assert {asset: answer.status_code for asset, answer in answers.items()} == {asset: 200 for asset in assets}
    written = httpx.put(f"{server.url}/static/docs/swagger-ui.css", timeout=30)
    assert (written.status_code, written.json()["error"]["code"]) == (401, "token-missing")


def test_a_tokens_file_listing_one_secret_twice_stops_the_start(tmp_path: Path) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"tokens": [{"name": "dash", "token": WRITER, "access": "read-only"},
                                           {"name": "ci", "token": WRITER, "access": "read-write"}]}))
    env = {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}
    finished = subprocess.run(
        [sys.executable, "-m", "schemadoc", "serve", "--schema", str(BOOK_SCHEMA), "--storage-dir",
         str(tmp_path / "data"), "--port", str(free_port()), "--tokens-file", str(path)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert finished.returncode == 2  # config-invalid
    assert finished.stderr.startswith("schemadoc: config-invalid: The tokens file")
    assert "'ci'" in finished.stderr and "'dash'" in finished.stderr
    assert WRITER not in finished.stderr + finished.stdout
    assert "Traceback" not in finished.stderr
