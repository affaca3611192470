"""Slow and greedy clients all at once against a real ``schemadoc serve``: the server's memory stays within
its documented buffers and a client on another address is served throughout; the stream nobody reads is ended.

From 127.0.0.1: a stalled event-stream reader (a 4 KiB receive buffer, reads nothing) while 1 MB
writes land on its document, 50 connections with half a request's headers, a 50 MB header, and
more connections than ``max_connections_per_client``. From 127.0.0.2: a good client reading a
small leaf in a loop; every one of its reads must be answered (its p99 is printed, not asserted).

The server's RSS (sampled every 20 ms) must stay below the bound the documented buffers give:
the baseline (after warm-up writes of the same size), plus ``subscriber_buffer_bytes`` (what the
stalled reader may leave queued), plus ``max_header_bytes`` and one socket read for each unfinished
header, plus :data:`IN_FLIGHT_WRITES` times the write size (a write in flight: the request's parse,
about 7 times the body (docs/memory.md), the new version, the event in the stalled stream's socket
buffer and its encodings). Before these bounds the stalled reader alone held every write.

The good client reads another document than the one written: reads of a document between its
writes keep each version read in the service's size caches (not a client's doing; about 150 MB
over 300 writes of 1 MB, with or without any attack), which would hide what this test measures.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import statistics
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from http_server import Server, connect, read_until_closed

pytestmark = [pytest.mark.timeout(120)]

MIB = 1 << 20
WRITE_BYTES = MIB
WRITES = 60
HALF_OPEN = 50
HEADER_TIMEOUT = 2
BODY_TIMEOUT = 4
BUFFER = 8 * MIB  # subscriber_buffer_bytes, the default
MAX_HEADER = 32 << 10  # max_header_bytes, the default
PER_CLIENT = 64  # max_connections_per_client, the default
READ_BYTES = 256 << 10  # what one socket read may bring beyond the header limit
IN_FLIGHT_WRITES = 16
BOUND = BUFFER + HALF_OPEN * (MAX_HEADER + READ_BYTES) + IN_FLIGHT_WRITES * WRITE_BYTES
SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
          "properties": {"name": {"type": "string", "default": "hostile"}, "blob": {"type": "string", "default": ""}},
          "required": ["name", "blob"]}
WAIT_SECONDS = 20.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("hostile")
    (root / "blob.schema.json").write_text(json.dumps(SCHEMA))
    (root / "config.json").write_text(json.dumps({"header_timeout_seconds": HEADER_TIMEOUT,
                                                  "body_timeout_seconds": BODY_TIMEOUT}))
    with Server(root / "data", root, schema=root / "blob.schema.json",
                extra_args=("--config", str(root / "config.json"))) as server:
        yield server


def rss(server: Server) -> int:
    for line in Path(f"/proc/{server.process.pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


class PeakRSS(threading.Thread):
    def __init__(self, server: Server) -> None:
        super().__init__(daemon=True)
        self.server, self.peak, self.done = server, rss(server), threading.Event()

    def run(self) -> None:
        while not self.done.wait(0.02) and self.server.process.poll() is None:
            with contextlib.suppress(OSError, AssertionError):  # the process may have just ended
                self.peak = max(self.peak, rss(self.server))


class GoodClient(threading.Thread):
    """Small reads in a loop from 127.0.0.2 on one kept-alive connection; any failure is counted."""

    def __init__(self, server: Server, doc_id: str) -> None:
        super().__init__(daemon=True)
        self.port, self.path = server.port, f"/api/v1/documents/{doc_id}?path=/name"
        self.latencies: list[float] = []
        self.failures: list[str] = []
        self.done = threading.Event()

    def run(self) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=WAIT_SECONDS,
                                                source_address=("127.0.0.2", 0))
        while not self.done.is_set():
            start = time.perf_counter()
            try:
                connection.request("GET", self.path)
                response = connection.getresponse()
                body = response.read()
                if response.status != 200:
                    self.failures.append(f"{response.status} {body[:200]!r}")
                self.latencies.append(time.perf_counter() - start)
            except (OSError, http.client.HTTPException) as error:
                self.failures.append(repr(error))
                connection.close()
            time.sleep(0.01)
        connection.close()


def write(server: Server, doc_id: str, count: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=WAIT_SECONDS)
    connection.request("GET", f"/api/v1/documents/{doc_id}")
    version = orjson.loads(connection.getresponse().read())["version"]
    for n in range(count):
        body = orjson.dumps({"node_data": f"{n:08d}" + "x" * (WRITE_BYTES - 8), "version": version})
        connection.request("PUT", f"/api/v1/documents/{doc_id}?path=/blob", body=body,
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = orjson.loads(response.read())
        assert response.status == 200, answer
        version = answer["version"]
    connection.close()


def test_slow_and_greedy_clients_hold_no_more_than_the_buffers_and_others_are_served(server: Server) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=WAIT_SECONDS)
    connection.request("POST", "/api/v1/documents")
    doc_id = orjson.loads(connection.getresponse().read())["doc_id"]
    connection.request("POST", "/api/v1/documents")  # what the good client reads (see the module docstring)
    read_id = orjson.loads(connection.getresponse().read())["doc_id"]
    connection.close()
    write(server, doc_id, 5)  # warm up: the allocator has seen writes of this size
    time.sleep(0.5)
    baseline = rss(server)
    sampler, good = PeakRSS(server), GoodClient(server, read_id)
    sampler.start()
    good.start()
    with contextlib.ExitStack() as held:
        stalled = held.enter_context(socket.socket())
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.connect(("127.0.0.1", server.port))
        stalled.sendall(f"GET /api/v1/documents/{doc_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
        assert stalled.recv(15).startswith(b"HTTP/1.1 200")  # nothing more of it is ever read during the load
        half_open = [held.enter_context(connect(server)) for _ in range(HALF_OPEN)]
        for sock in half_open:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ")
        write(server, doc_id, WRITES)
        with connect(server) as big:
            with contextlib.suppress(ConnectionResetError, BrokenPipeError):
                big.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
                for _ in range(50):
                    big.sendall(b"a" * MIB)
            big_answer = read_until_closed(big)
        timed_out = [read_until_closed(sock) for sock in half_open]
        greedy = [held.enter_context(connect(server)) for _ in range(PER_CLIENT + 8)]
        time.sleep(0.5)
        refused = 0
        for sock in greedy:
            sock.setblocking(False)
            with contextlib.suppress(BlockingIOError):
                answer = sock.recv(65536)
                refused += answer.startswith(b"HTTP/1.1 503 ") and b'"too-many-connections"' in answer
        time.sleep(0.5)  # the good client reads while the greedy connections are held
        stalled.settimeout(WAIT_SECONDS)
        read_until_closed(stalled)  # a stream left unread is ended by the server (body_timeout_seconds)
    good.done.set()
    good.join()
    sampler.done.set()
    sampler.join()

    ordered = sorted(good.latencies)
    p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else float("nan")
    print(f"\nserver RSS: baseline {baseline / MIB:.0f} MiB, peak {sampler.peak / MIB:.0f} MiB, bound "
          f"{(baseline + BOUND) / MIB:.0f} MiB; good client: {len(ordered)} reads, p50 "
          f"{statistics.median(ordered) * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms")
    assert sampler.peak <= baseline + BOUND
    assert not good.failures and len(good.latencies) >= 10
    assert big_answer.startswith(b"HTTP/1.1 431 ") and b'"headers-too-large"' in big_answer
    assert all(answer.startswith(b"HTTP/1.1 408 ") and b'"request-timeout"' in answer for answer in timed_out)
    assert refused >= 8  # at least those beyond the cap; the stalled reader's connection counts too


def sse_events(data: bytes) -> list[dict[str, str]]:
    events = []
    for block in data.decode().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.split("\n") if line and not line.startswith(":"))
        if "event" in fields:
            events.append(fields)
    return events


def socket_send_buffer_max() -> int:
    """The most the kernel may buffer on the server's side of a connection (``tcp_wmem``'s maximum)."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        return int(Path("/proc/sys/net/ipv4/tcp_wmem").read_text().split()[2])
    return 4 * MIB


def test_a_reader_that_falls_behind_gets_a_final_resumable_event_and_resumes_without_a_gap(
        tmp_path: Path) -> None:
    # enough to fill the socket's buffers, the event in the stream's send and the subscriber buffer, and more
    writes = (socket_send_buffer_max() + BUFFER) // WRITE_BYTES + 8
    (tmp_path / "blob.schema.json").write_text(json.dumps(SCHEMA))
    with Server(tmp_path / "data", tmp_path, schema=tmp_path / "blob.schema.json") as server:  # default settings
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=WAIT_SECONDS)
        connection.request("POST", "/api/v1/documents")
        doc_id = orjson.loads(connection.getresponse().read())["doc_id"]
        connection.close()
        with socket.socket() as behind:
            behind.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            behind.connect(("127.0.0.1", server.port))
            behind.sendall(f"GET /api/v1/documents/{doc_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
            behind.settimeout(WAIT_SECONDS)
            assert behind.recv(15).startswith(b"HTTP/1.1 200")
            write(server, doc_id, writes)  # while it reads nothing
            streamed = b""
            while b"event: error" not in streamed or not streamed.endswith(b"\r\n\r\n"):
                chunk = behind.recv(1 << 20)
                assert chunk, "the stream ended without its final event"
                streamed += chunk
        body = streamed.partition(b"\r\n\r\n")[2]
        events = sse_events(b"".join(body.split(b"\r\n")[1::2]))  # the chunks of the chunked body
        final = json.loads(events[-1]["data"])["error"]
        last = final["details"]["last_version"]
        resumed = http.client.HTTPConnection("127.0.0.1", server.port, timeout=WAIT_SECONDS)
        resumed.request("GET", f"/api/v1/documents/{doc_id}/events", headers={"Last-Event-ID": str(last)})
        response = resumed.getresponse()
        ids: list[int] = []
        pending = b""
        while len(ids) < 1 + writes - last:
            pending += response.read1(1 << 20)
            *blocks, pending = pending.split(b"\n\n")
            ids += [int(event["id"]) for event in sse_events(b"\n\n".join(blocks) + b"\n\n") if "id" in event]
        resumed.close()

    sent = [int(event["id"]) for event in events[:-1]]
    assert [event["event"] for event in events] == ["version"] * len(sent) + ["error"]
    assert final["code"] == "subscriber-too-slow"
    assert final["details"]["limit"] == "subscriber_buffer_bytes"
    assert sent == list(range(2, last + 1))  # every version up to the last one delivered, in order
    assert ids == list(range(last + 1, 2 + writes))  # and from there, the rest
