"""Each bound of the HTTP protocol on its own, against a real ``schemadoc serve`` over raw sockets.

Before any token is checked, a request whose line and headers pass ``max_header_bytes`` is
answered ``431 headers-too-large``; headers not complete within ``header_timeout_seconds`` (a
silent connection too) ``408 request-timeout``; a body that stops coming for
``body_timeout_seconds`` ``408``; a connection beyond ``max_connections_per_client`` or
``max_connections`` ``503 too-many-connections`` while other addresses are served. Every refusal
is the catalog's error object, and the server closes the connection after it. Event streams and MCP
subscriptions from one address share ``max_subscribers_per_client``.

The timeouts are small here (settings from a config file); the waits below are liveness bounds,
not measurements.
"""

from __future__ import annotations

import contextlib
import json
import time
import warnings
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from http_server import Server, connect, read_until_closed
from mcp import Client, MCPError

from schemadoc.errors import CATALOG

pytestmark = [pytest.mark.timeout(120)]

HEADER_TIMEOUT = 1
BODY_TIMEOUT = 2
PER_CLIENT = 8
TOTAL = 10
SUBSCRIBERS_PER_CLIENT = 2
SETTINGS = {"header_timeout_seconds": HEADER_TIMEOUT, "body_timeout_seconds": BODY_TIMEOUT,
            "max_connections_per_client": PER_CLIENT, "max_connections": TOTAL,
            "max_subscribers_per_client": SUBSCRIBERS_PER_CLIENT}
WAIT_SECONDS = 15.0
"""The longest any answer below may take to come (a timeout of a few seconds, the sweep, a busy machine)."""


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("transport")
    config = root / "config.json"
    config.write_text(json.dumps(SETTINGS))
    with Server(root / "data", root, extra_args=("--config", str(config))) as server:
        yield server


def refusal(data: bytes, status: int, code: str) -> dict[str, Any]:
    """The error object of a whole response ``data`` with ``status`` and ``code`` that closes the connection."""
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    assert lines[0].startswith(f"HTTP/1.1 {status} "), data[:200]
    headers = {name.lower(): value.strip() for name, _, value in (line.partition(":") for line in lines[1:])}
    assert headers["content-type"] == "application/json"
    assert headers["connection"] == "close"
    assert int(headers["content-length"]) == len(body)
    error: dict[str, Any] = json.loads(body)["error"]
    assert (error["code"], error["category"]) == (code, str(status))
    assert CATALOG[code].status == status
    return error


def get(path: str) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode()


def wait_until_served(server: Server) -> None:
    """Until the server has noticed every closed connection of a test and serves this address again."""
    deadline = time.monotonic() + WAIT_SECONDS
    while httpx.get(f"{server.url}/health", timeout=WAIT_SECONDS).status_code != 200:
        assert time.monotonic() < deadline, "the server still refuses this address"
        time.sleep(0.05)


def test_headers_beyond_the_limit_are_refused_with_431_before_any_token_is_read(server: Server) -> None:
    with connect(server) as sock:
        sock.sendall(get("/api/v1/documents") + b"X-Padding: " + b"a" * 30_000 + b"\r\n\r\n")
        within = sock.recv(65536)
    with connect(server) as sock:  # one complete request of 40 KB in one piece
        sock.sendall(get("/api/v1/documents") + b"X-Padding: " + b"a" * 40_000 + b"\r\n\r\n")
        complete = read_until_closed(sock)
    with connect(server) as sock:  # 50 MB of one header that never ends, sent in pieces
        sock.sendall(get("/health") + b"X-Big: ")
        sent = 0
        with contextlib.suppress(ConnectionResetError, BrokenPipeError):
            while sent < 50 << 20:
                sock.sendall(b"a" * (1 << 20))
                sent += 1 << 20
        unfinished = read_until_closed(sock)

    assert within.startswith(b"HTTP/1.1 200 ")
    for data in (complete, unfinished):
        error = refusal(data, 431, "headers-too-large")
        assert error["details"]["limit"] == "max_header_bytes"
        assert error["details"]["max_header_bytes"] == 32 << 10
    assert sent < 50 << 20  # the server stopped reading long before the end


def test_bytes_that_are_not_http_get_400_as_the_catalog_error_object(server: Server) -> None:
    with connect(server) as sock:
        sock.sendall(b"NOT HTTP AT ALL\r\n\r\n")
        data = read_until_closed(sock)

    error = refusal(data, 400, "invalid-request")
    assert error["details"]["reason"]


def test_unfinished_headers_and_a_silent_connection_get_408_after_the_header_timeout(server: Server) -> None:
    with connect(server) as silent, connect(server) as partial:
        partial.sendall(get("/health") + b"X-Slow: 1")
        answers = [read_until_closed(sock) for sock in (silent, partial)]
    with connect(server) as kept_alive:  # a later request on a kept-alive connection: timed from its first byte
        kept_alive.sendall(get("/health") + b"\r\n")
        first = b""
        while not first.endswith(b'{"status":"healthy"}'):
            first += kept_alive.recv(65536)
        kept_alive.sendall(get("/health"))
        second = read_until_closed(kept_alive)

    for data in [*answers, second]:
        error = refusal(data, 408, "request-timeout")
        assert error["details"] == {"limit": "header_timeout_seconds", "header_timeout_seconds": HEADER_TIMEOUT}
    assert first.startswith(b"HTTP/1.1 200 ")


def documents(server: Server) -> int:
    count: int = httpx.get(f"{server.url}/api/v1/documents", timeout=WAIT_SECONDS).json()["total_documents"]
    return count


def test_a_body_that_stops_coming_gets_408_after_the_body_timeout(server: Server) -> None:
    before = documents(server)
    with connect(server) as sock:
        sock.sendall(b"POST /api/v1/documents HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 100\r\n\r\n{")
        data = read_until_closed(sock)

    error = refusal(data, 408, "request-timeout")
    assert error["details"] == {"limit": "body_timeout_seconds", "body_timeout_seconds": BODY_TIMEOUT}
    assert documents(server) == before  # nothing was created


def test_a_body_left_unfinished_after_the_answer_ends_the_connection_without_a_second_answer(
        server: Server) -> None:
    with connect(server) as sock:  # refused for its Host before its body is read
        sock.sendall(b"POST /api/v1/documents HTTP/1.1\r\nHost: elsewhere.example\r\n"
                     b"Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{")
        data = read_until_closed(sock)

    assert data.startswith(b"HTTP/1.1 4")
    assert data.count(b"HTTP/1.1 ") == 1 and b"request-timeout" not in data


def test_connections_beyond_the_caps_get_503_and_other_addresses_are_served(server: Server) -> None:
    wait_until_served(server)
    with contextlib.ExitStack() as held:
        for _ in range(PER_CLIENT):
            held.enter_context(connect(server)).sendall(get("/health") + b"\r\n")
        time.sleep(0.2)  # the server has taken them
        with connect(server) as beyond:
            per_client = read_until_closed(beyond)
        other = held.enter_context(connect(server, "127.0.0.2"))
        other.sendall(get("/health") + b"\r\n")
        served = other.recv(65536)
        held.enter_context(connect(server, "127.0.0.3"))
        time.sleep(0.2)
        with connect(server, "127.0.0.4") as beyond_total:
            total = read_until_closed(beyond_total)
    wait_until_served(server)  # the slots come back when the connections close

    error = refusal(per_client, 503, "too-many-connections")
    assert error["details"] == {"limit": "max_connections_per_client", "max_connections_per_client": PER_CLIENT,
                                "actual": PER_CLIENT}
    assert served.startswith(b"HTTP/1.1 200 ")
    error = refusal(total, 503, "too-many-connections")
    assert error["details"] == {"limit": "max_connections", "max_connections": TOTAL, "actual": TOTAL}


@pytest.mark.anyio
async def test_event_streams_and_mcp_subscriptions_of_one_address_share_its_subscriber_slots(
        server: Server) -> None:
    wait_until_served(server)
    doc_id = httpx.post(f"{server.url}/api/v1/documents", timeout=WAIT_SECONDS).json()["doc_id"]
    events = f"/api/v1/documents/{doc_id}/events"
    timeout = httpx.Timeout(WAIT_SECONDS, read=None)
    async with contextlib.AsyncExitStack() as streams:
        http = await streams.enter_async_context(httpx.AsyncClient(base_url=server.url, timeout=timeout))
        for _ in range(SUBSCRIBERS_PER_CLIENT):
            opened = await streams.enter_async_context(http.stream("GET", events))
            assert opened.status_code == 200
        async with http.stream("GET", events) as refused_stream:
            refused = json.loads(await refused_stream.aread())["error"]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the handshake era and resources/subscribe are deprecated
            async with Client(f"{server.url}/mcp", mode="legacy") as mcp:
                with pytest.raises(MCPError) as refused_subscribe:
                    await mcp.subscribe_resource(f"schema://{doc_id}")
        transport = httpx.AsyncHTTPTransport(local_address="127.0.0.2")
        elsewhere = await streams.enter_async_context(
            httpx.AsyncClient(base_url=server.url, timeout=timeout, transport=transport))
        admitted = await streams.enter_async_context(elsewhere.stream("GET", events))

    assert refused_stream.status_code == 503
    assert refused["code"] == "too-many-subscribers"
    assert refused["details"] == {"limit": "max_subscribers_per_client",
                                  "max_subscribers_per_client": SUBSCRIBERS_PER_CLIENT,
                                  "actual": SUBSCRIBERS_PER_CLIENT, "doc_id": doc_id}
    data = refused_subscribe.value.error.data
    assert isinstance(data, dict) and data["error"]["details"]["limit"] == "max_subscribers_per_client"
    assert admitted.status_code == 200
