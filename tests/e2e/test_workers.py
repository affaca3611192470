"""``schemadoc serve --workers 2``: real processes on 127.0.0.1, the files store.

Connections are spread over the workers by the kernel; each test that needs a request on a given worker opens
connections until it has one on each, finding which worker accepted a connection from the worker processes'
own sockets (psutil). Writes from many clients through both workers lose nothing and each document's versions
stay contiguous; an event stream and an MCP listen stream on one worker hear the writes made through the
other (the supervisor passes the files store's commits on); MCP over HTTP is stateless, so a handshake-era
client's requests may land on either worker; ``/metrics`` gives the figures of the worker that answers, not a
sum, and names that worker; a worker killed with SIGKILL is replaced while the other serves (its scrapes name
the number of the worker it replaced); SIGTERM to the supervisor stops every
worker; a worker that cannot start stops the server with its exit code; and the stdio transport refuses
``--workers``.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import psutil
import pytest
from http_server import BOOK_SCHEMA, Server
from mcp import Client
from mcp.shared.subscriptions import ResourceUpdated

from schemadoc.config import ENVIRONMENT

pytestmark = pytest.mark.timeout(300)

WORKERS = 2
START_TIMEOUT_SECONDS = 120.0  # two workers importing at once on a busy 2-core machine


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def start(root: Path, *extra: str) -> Server:
    """A ``--workers 2`` server on ``root/data`` whose every worker serves."""
    server = Server(root / "data", root, extra_args=("--workers", str(WORKERS), *extra),
                    start_timeout=START_TIMEOUT_SECONDS)
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while server.stderr.count(f" of {WORKERS}, pid ") < WORKERS:
        assert time.monotonic() < deadline, server.stderr
        assert server.process.poll() is None, server.stderr
        time.sleep(0.1)
    return server


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = start(tmp_path_factory.mktemp("workers"))
    try:
        yield server
    finally:
        assert server.stop() == 0
        assert "Traceback" not in server.stderr


def workers_of(server: Server) -> list[int]:
    return sorted(child.pid for child in psutil.Process(server.process.pid).children())


def worker_of(server: Server, sock: Any) -> int | None:
    """The worker that accepted the connection ``sock`` (the pid whose socket's peer is ``sock``'s address)."""
    local = sock.getsockname()[1]
    for pid in workers_of(server):
        for connection in psutil.Process(pid).net_connections("tcp"):
            if connection.raddr and connection.raddr.port == local and connection.status == "ESTABLISHED":
                return pid
    return None


def connection_on_each_worker(server: Server) -> dict[int, http.client.HTTPConnection]:
    """One keep-alive connection accepted by each worker."""
    found: dict[int, http.client.HTTPConnection] = {}
    for _ in range(64):
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        connection.request("GET", "/health")
        assert connection.getresponse().read() == b'{"status":"healthy"}'
        pid = worker_of(server, connection.sock)
        if pid is not None and pid not in found:
            found[pid] = connection
        else:
            connection.close()
        if len(found) == WORKERS:
            return found
    raise AssertionError(f"64 connections did not reach {WORKERS} workers: {sorted(found)}")


def call(connection: http.client.HTTPConnection, method: str, url: str, body: Any = None,
         headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    connection.request(method, url, body=None if body is None else orjson.dumps(body),
                       headers={"Content-Type": "application/json", **(headers or {})})
    response = connection.getresponse()
    return response.status, {name.lower(): value for name, value in response.getheaders()}, response.read()


def test_connections_reach_both_workers(server: Server) -> None:
    assert len(workers_of(server)) == WORKERS
    connections = connection_on_each_worker(server)
    assert sorted(connections) == workers_of(server)
    for connection in connections.values():
        connection.close()


def test_writes_from_many_clients_through_both_workers_lose_nothing(server: Server) -> None:
    """Twelve clients append to three shared documents through both workers at once (If-Match: *, again after a
    ``version-conflict``): every acknowledged append is in the document once, in the order of its version, and
    the versions are contiguous."""
    api = f"{server.url}/api/v1"
    with httpx.Client(timeout=60) as http:
        docs = [http.post(f"{api}/documents").json()["doc_id"] for _ in range(3)]
    acknowledged: dict[str, list[tuple[int, str]]] = {doc_id: [] for doc_id in docs}
    failures: list[str] = []
    guard = threading.Lock()

    def writer(n: int) -> None:
        for i in range(12):
            if i % 4 == 0:  # a new connection now and then: the kernel picks a worker for each
                client = httpx.Client(timeout=60)
            doc_id = docs[(n + i) % len(docs)]
            tag = f"w{n}-{i}"
            for _ in range(100):  # a conflict (another write landed between its read and its lock) is refused
                response = client.post(f"{api}/documents/{doc_id}/nodes", params={"path": "/tags/-"},
                                       json={"node_data": tag}, headers={"If-Match": "*"})
                if response.status_code != 409:
                    break
            with guard:
                if response.status_code == 201:
                    acknowledged[doc_id].append((int(response.headers["etag"].strip('"')), tag))
                else:
                    failures.append(f"{response.status_code} {response.text[:200]}")
            if i % 4 == 3:
                client.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == []
    with httpx.Client(timeout=60) as http:
        for doc_id in docs:
            response = http.get(f"{api}/documents/{doc_id}")
            acked = sorted(acknowledged[doc_id])
            assert [version for version, _ in acked] == list(range(2, len(acked) + 2))
            assert int(response.headers["etag"].strip('"')) == len(acked) + 1
            assert response.json()["node_content"]["tags"] == [tag for _, tag in acked]
            history = http.get(f"{api}/documents/{doc_id}/history", params={"since_version": 0}).json()["entries"]
            assert [entry["version"] for entry in history] == list(range(1, len(acked) + 2))


def test_the_change_feed_read_through_either_worker_lists_every_commit_once_while_both_write(
        server: Server) -> None:
    """A reader follows ``/changes`` on a fresh connection for every page (so through either worker) while eight
    clients write through both: every acknowledged version of every document is listed once, each document's
    in order, none skipped by a cursor that moved past it."""
    api = f"{server.url}/api/v1"
    with httpx.Client(timeout=60) as http:
        docs = [http.post(f"{api}/documents").json()["doc_id"] for _ in range(8)]
        cursor = http.get(f"{api}/changes", params={"limit": 1000}).json()["next_cursor"]
        while page := http.get(f"{api}/changes", params={"since": cursor, "limit": 1000}).json()["changes"]:
            cursor = page[-1]["cursor"]
    written: set[tuple[str, int]] = set()
    listed: list[tuple[str, int]] = []
    done = threading.Event()
    guard = threading.Lock()

    def writer(doc_id: str) -> None:
        version = 1
        for i in range(10):
            with httpx.Client(timeout=60) as client:  # a connection each: either worker
                response = client.put(f"{api}/documents/{doc_id}", params={"path": "/title"},
                                      json={"node_data": f"Title {i}", "version": version})
            assert response.status_code == 200, response.text
            version = int(response.headers["etag"].strip('"'))
            with guard:
                written.add((doc_id, version))

    def reader() -> None:
        nonlocal cursor
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            with httpx.Client(timeout=60) as fresh:
                body = fresh.get(f"{api}/changes", params={"since": cursor, "limit": 7}).json()
            listed.extend((change["doc_id"], change["version"]) for change in body["changes"])
            cursor = body["next_cursor"]
            with guard:
                if done.is_set() and written <= set(listed):
                    return
            if not body["changes"]:
                time.sleep(0.05)

    following = threading.Thread(target=reader)
    following.start()
    threads = [threading.Thread(target=writer, args=(doc_id,)) for doc_id in docs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    done.set()
    following.join(150)
    assert len(written) == 80
    assert len(listed) == len(set(listed))  # each once
    # the creations may be listed too: another worker's commit is shown a little later than it was acknowledged
    assert {(doc_id, version) for doc_id, version in listed if version > 1} == written  # none skipped or made up
    listed = [(doc_id, version) for doc_id, version in listed if version > 1]
    for doc_id in docs:
        assert [version for one, version in listed if one == doc_id] == list(range(2, 12))


class Follower:
    """A document's event stream on one connection (on whichever worker accepted it), read in a thread."""

    def __init__(self, connection: http.client.HTTPConnection, doc_id: str, until: int) -> None:
        self.versions: list[int] = []
        self.connection = connection
        connection.request("GET", f"/api/v1/documents/{doc_id}/events", headers={"Accept": "text/event-stream"})
        self.response = connection.getresponse()
        assert self.response.status == 200
        self.until = until
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self) -> None:
        while (line := self.response.readline()) and (not self.versions or self.versions[-1] < self.until):
            if line.startswith(b"id:"):
                self.versions.append(int(line[3:].strip()))


def test_an_event_stream_on_one_worker_hears_the_writes_made_through_the_other(server: Server) -> None:
    with httpx.Client(timeout=60) as http:
        doc_id = http.post(f"{server.url}/api/v1/documents").json()["doc_id"]
    writers = connection_on_each_worker(server)
    followers = [Follower(connection, doc_id, until=9) for connection in connection_on_each_worker(server).values()]
    time.sleep(0.5)  # both streams follow live now (they start from the current version)
    version = 1
    for n in range(8):  # alternately through each worker
        connection = list(writers.values())[n % WORKERS]
        status, headers, body = call(connection, "PUT", f"/api/v1/documents/{doc_id}?path=/title",
                                     {"node_data": f"Title {n}", "version": version})
        assert status == 200, body
        version = int(headers["etag"].strip('"'))
    for follower in followers:
        follower.thread.join(30)
        assert follower.versions == list(range(1, 10)) or follower.versions == list(range(2, 10))
    for connection in [*writers.values(), *(follower.connection for follower in followers)]:
        connection.close()


def _health_answered(connection: http.client.HTTPConnection) -> float:
    """The ``/health`` requests the worker behind ``connection`` counted, read from its ``/metrics``
    (prometheus-client's parser)."""
    from prometheus_client.parser import text_string_to_metric_families

    status, _, body = call(connection, "GET", "/metrics")
    assert status == 200, body
    health = {"door": "rest", "operation": "health", "status": "200", "code": ""}
    return sum(sample.value for family in text_string_to_metric_families(body.decode()) for sample in family.samples
               if sample.name == "schemadoc_requests_total" and sample.labels == health)


def _worker_named(connection: http.client.HTTPConnection) -> list[tuple[dict[str, str], float]]:
    """The ``schemadoc_worker_info`` samples of a scrape through ``connection`` (prometheus-client's parser)."""
    from prometheus_client.parser import text_string_to_metric_families

    status, _, body = call(connection, "GET", "/metrics")
    assert status == 200, body
    return [(sample.labels, sample.value) for family in text_string_to_metric_families(body.decode())
            for sample in family.samples if sample.name == "schemadoc_worker_info"]


def _number(server: Server, pid: int) -> int:
    """The number of the worker ``pid``, from its start-up line."""
    found = re.findall(rf"\(worker (\d+) of {WORKERS}, pid {pid}\)", server.stderr)
    assert len(found) == 1, server.stderr
    return int(found[0])


def test_a_scrape_names_the_worker_that_answered_it(server: Server) -> None:
    connections = connection_on_each_worker(server)
    numbers = {pid: _number(server, pid) for pid in connections}
    assert sorted(numbers.values()) == list(range(1, WORKERS + 1))
    for pid, connection in connections.items():
        assert _worker_named(connection) == [({"worker": str(numbers[pid])}, 1.0)]
        connection.close()


def test_metrics_are_each_worker_s_own_figures(server: Server) -> None:
    (_, first), (_, second) = sorted(connection_on_each_worker(server).items())
    first_before, second_before = _health_answered(first), _health_answered(second)
    for _ in range(5):
        assert call(first, "GET", "/health")[0] == 200
    assert _health_answered(first) == first_before + 5
    assert _health_answered(second) == second_before  # not added up across workers (docs/deployment.md)
    first.close()
    second.close()


def _mcp(connection: http.client.HTTPConnection, message: dict[str, Any], version: str) -> tuple[int, dict[str, str],
                                                                                                  Any]:
    status, headers, body = call(connection, "POST", "/mcp", message,
                                 {"Accept": "application/json, text/event-stream", "MCP-Protocol-Version": version})
    if headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in body.splitlines() if line.startswith(b"data:")]
        return status, headers, orjson.loads(data[-1])
    return status, headers, orjson.loads(body) if body else None


def test_mcp_is_stateless_so_a_handshake_era_client_may_reach_either_worker(server: Server) -> None:
    first, second = connection_on_each_worker(server).values()
    version = "2025-06-18"
    status, headers, answer = _mcp(first, {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}, version)
    assert status == 200, answer
    assert "mcp-session-id" not in headers  # no session: nothing lives in one worker
    assert answer["result"]["serverInfo"]["name"]
    status, _, answer = _mcp(second, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                                      "params": {"name": "document_create", "arguments": {}}}, version)
    assert status == 200, answer
    doc_id = answer["result"]["structuredContent"]["doc_id"]
    status, _, answer = _mcp(first, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                                     "params": {"name": "document_read_node",
                                                "arguments": {"doc_id": doc_id, "node_path": "/title"}}}, version)
    assert status == 200, answer
    assert not answer["result"].get("isError"), answer
    assert answer["result"]["structuredContent"]["node_content"] == "Untitled"
    first.close()
    second.close()


@pytest.mark.anyio
async def test_mcp_clients_of_both_eras_call_tools_through_the_workers(server: Server) -> None:
    for mode in ("legacy", None):
        async with Client(f"{server.url}/mcp", **({"mode": mode} if mode else {})) as client:
            for _ in range(3):
                result = await client.call_tool("document_create", {})
                assert not result.is_error, result


@pytest.mark.anyio
async def test_an_mcp_listen_stream_hears_the_writes_made_through_each_worker(server: Server) -> None:
    """A 2026-era ``subscriptions/listen`` stream (on whichever worker its connection reached) is told of a write
    through each worker."""
    with httpx.Client(timeout=60) as http:
        doc_id = http.post(f"{server.url}/api/v1/documents").json()["doc_id"]
    uri = f"schema://{doc_id}"
    writers = list(connection_on_each_worker(server).values())
    async with Client(f"{server.url}/mcp") as client, client.listen(resource_subscriptions=[uri]) as listening:
        for n, connection in enumerate(writers):
            status, _, body = await anyio.to_thread.run_sync(
                call, connection, "PUT", f"/api/v1/documents/{doc_id}?path=/title",
                {"node_data": f"Title {n}", "version": n + 1})
            assert status == 200, body
            with anyio.fail_after(30):
                assert await listening.__anext__() == ResourceUpdated(uri=uri)
    for connection in writers:
        connection.close()


def test_a_killed_worker_is_replaced_and_sigterm_stops_every_worker(tmp_path: Path) -> None:
    server = start(tmp_path)
    try:
        before = workers_of(server)
        os.kill(before[0], signal.SIGKILL)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        answered = 0
        while server.stderr.count(f" of {WORKERS}, pid ") < WORKERS + 1:  # the new worker serves
            assert time.monotonic() < deadline, server.stderr
            # the other worker serves meanwhile (a connection the dead one had queued is reset)
            with contextlib.suppress(httpx.TransportError):
                answered += httpx.get(f"{server.url}/health", timeout=30).status_code == 200
            time.sleep(0.2)
        assert answered > 0
        after = workers_of(server)
        assert len(after) == WORKERS and before[0] not in after and before[1] in after
        assert f"(pid {before[0]}) ended unexpectedly (killed by SIGKILL); starting another" in server.stderr
        replacement = next(pid for pid in after if pid not in before)
        connections = connection_on_each_worker(server)  # the new worker's scrapes carry the number it took over
        assert _worker_named(connections[replacement]) == [({"worker": str(_number(server, before[0]))}, 1.0)]
        for connection in connections.values():
            connection.close()

        # SIGTERM to the supervisor stops every worker, each as one server stops
        with httpx.Client(timeout=60) as http:
            doc_id = http.post(f"{server.url}/api/v1/documents").json()["doc_id"]
        assert server.stop() == 0
        for pid in after:
            assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        assert server.stderr.count("stopped after") == WORKERS
        assert "schemadoc stopped (2 workers)" in server.stderr
        assert "Traceback" not in server.stderr
        with pytest.raises(httpx.ConnectError):
            httpx.get(f"{server.url}/health", timeout=5)
    finally:
        server.kill()
    # what was written is there for the next server
    again = Server(tmp_path / "data", tmp_path / "again", start_timeout=START_TIMEOUT_SECONDS)
    try:
        assert httpx.get(f"{again.url}/api/v1/documents/{doc_id}", timeout=30).status_code == 200
    finally:
        assert again.stop() == 0


def _schemadoc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}
    return subprocess.run([sys.executable, "-m", "schemadoc", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120, check=False)


def test_a_worker_that_cannot_start_stops_the_server_with_its_exit_code(tmp_path: Path) -> None:
    not_a_directory = tmp_path / "file"
    not_a_directory.write_text("")
    done = _schemadoc("serve", "--schema", str(BOOK_SCHEMA), "--storage-dir", str(not_a_directory), "--port", "0",
                      "--workers", "2", cwd=tmp_path)
    alone = _schemadoc("serve", "--schema", str(BOOK_SCHEMA), "--storage-dir", str(not_a_directory), "--port", "0",
                       cwd=tmp_path)
    assert done.returncode == alone.returncode != 0, done.stderr
    assert "ended before it served" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_stdio_transport_refuses_workers(tmp_path: Path) -> None:
    done = _schemadoc("serve", "--transport", "stdio", "--schema", str(BOOK_SCHEMA), "--storage-dir",
                      str(tmp_path / "data"), "--workers", "2", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.startswith("schemadoc: config-invalid: --workers 2 needs the HTTP transport"), done.stderr
    assert "Traceback" not in done.stderr
    assert done.stdout == ""
    assert not (tmp_path / "data").exists()  # refused before anything was opened


def test_workers_is_a_bounded_setting(tmp_path: Path) -> None:
    done = _schemadoc("serve", "--schema", str(BOOK_SCHEMA), "--workers", "0", cwd=tmp_path)
    assert done.returncode == 2
    assert "config-invalid" in done.stderr and "workers" in done.stderr
