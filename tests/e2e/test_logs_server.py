"""What a hostile client can make a real ``schemadoc serve`` write to its log: no secret it sends (in the query
string, a header or the path), no line of its own (control characters in the path), and no error or traceback
when it hangs up in the middle of a request."""

from __future__ import annotations

import hashlib
import re
import socket
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
from http_server import Server, tokens_file

WRITER = "logs-writer-0123456789abcdef"
HASHED = "logs-hashed-only-0123456789abcdef"  # in the tokens file as its digest only
RECORD = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("logs-server")
    tokens = tokens_file(root, {"name": "ci", "token": WRITER, "access": "read-write"},
                         {"name": "hashed", "sha256": hashlib.sha256(HASHED.encode()).hexdigest(),
                          "access": "read-write"})
    # at debug, so that every line any library logs is looked at
    running = Server(root / "data", root / "logs", extra_args=("--tokens-file", str(tokens), "--log-level", "debug"))
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def doc_id(server: Server) -> str:
    answer = httpx.post(f"{server.url}/api/v1/documents", headers=_bearer(WRITER), timeout=30)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["doc_id"])


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def _raw(server: Server, request: bytes) -> bytes:
    """``request`` sent as it is on a fresh connection; the answer's status line and headers (or b"")."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as connection:
        connection.sendall(request)
        answer = b""
        try:
            while b"\r\n\r\n" not in answer:
                chunk = connection.recv(65536)
                if not chunk:
                    break
                answer += chunk
        except OSError:
            pass
        return answer


def _log_after(server: Server, mark: int, settle: float = 0.5) -> str:
    """What the server logged after ``mark`` characters, once it has had time to write it."""
    time.sleep(settle)
    return server.stderr[mark:]


@pytest.mark.parametrize("token", [WRITER, HASHED], ids=["secret in the file", "digest in the file"])
def test_a_token_is_never_logged_wherever_the_client_puts_it(server: Server, doc_id: str, token: str) -> None:
    mark = len(server.stderr)
    api = f"{server.url}/api/v1"
    with httpx.Client(timeout=30) as http:
        answers = [
            http.get(f"{api}/documents", params={"access_token": token}),  # RFC 6750's query parameter
            http.get(f"{api}/documents", params={"t": token, "path": "/title"}),  # a name nobody can guess
            http.get(f"{api}/documents/{doc_id}", params={"path": "/title", "access_token": token},
                     headers=_bearer(token)),
            http.get(f"{api}/documents", headers={"x-api-key": token, "cookie": f"session={token}"}),
            http.get(f"{api}/documents/{token}"),
            http.get(f"{api}/documents/{token}", headers=_bearer(token)),
            http.get(f"{server.url}/{token}/api/v1/documents", headers=_bearer(token)),
            http.post(f"{server.url}/mcp/{token}", headers=_bearer(token), json={}),
        ]
    assert [answer.status_code for answer in answers][:5] == [401, 401, 200, 401, 401]
    assert all(400 <= answer.status_code < 500 for answer in answers[5:])
    # in the request line as it is, as an HTTP client that does not normalise it would send it
    for target in (f"/api/v1/documents/{token}?access_token={token}", f"*?access_token={token}",
                   f"http://127.0.0.1/?access_token={token}"):
        request = f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
        assert _raw(server, request.encode()).startswith(b"HTTP/1.1 401"), target
    logged = _log_after(server, mark)
    assert token not in logged
    assert token[:16] not in logged and token[-16:] not in logged
    # the requests are still logged, their query values replaced (the names kept)
    assert "GET /api/v1/documents?access_token=[redacted] 401 token-missing" in logged
    assert "GET /api/v1/documents?t=[redacted]&path=[redacted] 401 token-missing" in logged
    assert logged.count("[token]") >= 4  # the token in a path: replaced where it stood
    assert f"/api/v1/documents/{doc_id}?path=[redacted]&access_token=[redacted]" in logged


FORGED = "2026-01-01 00:00:00,000 INFO schemadoc.access: FORGED LINE"


@pytest.mark.parametrize("token", [None, WRITER], ids=["refused", "admitted"])
def test_control_characters_in_a_path_cannot_forge_a_log_line(server: Server, token: str | None) -> None:
    authorization = f"Authorization: Bearer {token}\r\n" if token else ""

    def request(target: str) -> bytes:
        return f"GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\n{authorization}Connection: close\r\n\r\n".encode(
            "latin-1")

    encoded = FORGED.replace(" ", "%20")
    baseline = "/api/v1/documents/plain-marker"
    hostile = {  # percent-encoded: the HTTP parser passes them, the path is decoded before the application sees it
        "crlf": f"/api/v1/documents/crlf-marker%0D%0A{encoded}%0A{encoded}",
        "escape": "/api/v1/documents/esc-marker%1B[31mred%1B[0m%1B]0;title%07%1B[2J",
        "c1 and del": "/api/v1/documents/c1-marker%C2%85%C2%9B31m%7F%E2%80%A8" + encoded,
        "query": f"/api/v1/documents/query-marker?x=%0D%0A{encoded}&y=%1B[31m",
    }
    raw = {  # as raw bytes: each is either refused by the parser (400) or logged escaped
        "raw escape": "/api/v1/documents/raw-esc-marker\x1b[31mred",
        "raw del": "/api/v1/documents/raw-del-marker\x7fx",
        "raw c1": "/api/v1/documents/raw-c1-marker\x85\x9bx",
    }
    mark = len(server.stderr)
    assert _raw(server, request(baseline)).startswith(b"HTTP/1.1 ")
    for target in [*hostile.values(), *raw.values()]:
        assert _raw(server, request(target)).startswith(b"HTTP/1.1 ")
    logged = _log_after(server, mark)
    lines = logged.splitlines()
    per_request = sum("plain-marker" in line for line in lines)
    assert per_request >= 1
    for name in hostile:
        marker = hostile[name].split("/")[4].split("%")[0].split("?")[0]
        assert sum(marker in line for line in lines) == per_request, (name, logged)
    for name in raw:
        marker = raw[name].split("/")[4].split("\x1b")[0].split("\x7f")[0].split("\x85")[0]
        assert sum(marker in line for line in lines) in (0, per_request), (name, logged)
    assert not any(line.startswith(FORGED[:10]) or "FORGED" in line.split(":", 3)[0] for line in lines)
    for line in lines:  # every line begins a record of its own, or is an indented continuation of one
        assert RECORD.match(line) or line.startswith(" "), line
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029]", line), line
    if token is None:  # the refusal names the path as the application saw it: decoded, then escaped
        assert "/api/v1/documents/esc-marker\\x1b[31mred\\x1b[0m\\x1b]0;title\\x07\\x1b[2J" in logged


def _write_title(server: Server, doc_id: str, title: str) -> httpx.Response:
    url = f"{server.url}/api/v1/documents/{doc_id}"
    version = httpx.get(url, headers=_bearer(WRITER), timeout=30).json()["version"]
    return httpx.put(url, params={"path": "/title"}, headers=_bearer(WRITER), timeout=30,
                     json={"node_data": title, "version": version})


def _mcp_session(server: Server) -> str:
    headers = {**_bearer(WRITER), "accept": "application/json, text/event-stream"}
    answer = httpx.post(f"{server.url}/mcp", headers=headers, timeout=30, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "hang-up", "version": "1"}}})
    assert answer.status_code == 200, answer.text
    session = answer.headers["mcp-session-id"]
    headers.update({"mcp-session-id": session, "mcp-protocol-version": "2025-06-18"})
    assert httpx.post(f"{server.url}/mcp", headers=headers, timeout=30,
                      json={"jsonrpc": "2.0", "method": "notifications/initialized"}).status_code == 202
    return str(session)


def _hang_up(server: Server, head: str, part: bytes) -> None:
    """Send ``head`` (announcing a 1 MB body, or asking for an event stream), ``part`` of the body, and hang up
    (a reset, as a killed client would)."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as connection:
        connection.sendall(head.encode() + part)
        time.sleep(0.05)
        connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")


def test_clients_that_hang_up_mid_request_are_no_errors(server: Server, doc_id: str) -> None:
    common = (f"Host: 127.0.0.1\r\nAuthorization: Bearer {WRITER}\r\nContent-Type: application/json\r\n"
              "Content-Length: 1000000\r\n")
    mcp = ("Accept: application/json, text/event-stream\r\nMcp-Protocol-Version: 2026-07-28\r\n"
           "Mcp-Method: tools/call\r\nMcp-Name: document_update_node\r\n")
    requests = [
        (f"PUT /api/v1/documents/{doc_id}?path=/title HTTP/1.1\r\n{common}\r\n", b'{"node_data": "' + b"x" * 5000),
        (f"POST /api/v1/documents HTTP/1.1\r\n{common}\r\n", b'{"content": {"title": "' + b"x" * 5000),
        (f"PATCH /api/v1/documents/{doc_id} HTTP/1.1\r\n{common}\r\n", b"[" * 100),
        (f"POST /mcp HTTP/1.1\r\n{common}{mcp}\r\n", b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "'),
        (f"POST /mcp HTTP/1.1\r\n{common}{mcp}\r\n", b""),
    ]
    session = _mcp_session(server)  # a session of the protocol's earlier era: its transport reads the body itself
    requests += [(f"POST /mcp HTTP/1.1\r\n{common}Accept: application/json, text/event-stream\r\n"
                  f"Mcp-Session-Id: {session}\r\nMcp-Protocol-Version: 2025-06-18\r\n\r\n", b'{"jsonrpc": "2.0", ')]
    stream = (f"GET /api/v1/documents/{doc_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              f"Authorization: Bearer {WRITER}\r\nAccept: text/event-stream\r\n\r\n")
    mark = len(server.stderr)
    for _ in range(3):  # 90 clients, 30 at a time: under the connections one client address may hold
        threads = [threading.Thread(target=_hang_up, args=(server, head, part))
                   for _ in range(4) for head, part in requests]
        threads += [threading.Thread(target=_hang_up, args=(server, stream, b"")) for _ in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=30)
    logged = _log_after(server, mark, settle=1.0)
    lines = logged.splitlines()
    assert all(re.match(r"\S+ \S+ (DEBUG|INFO) ", line) for line in lines), logged  # no warning, error, traceback
    assert "Traceback" not in logged and "the client went away (ClientDisconnect)" in logged
    # the server still serves
    assert _write_title(server, doc_id, "after the hang-ups").status_code == 200
    assert httpx.get(f"{server.url}/health", timeout=30).status_code == 200
