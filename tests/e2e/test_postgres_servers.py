"""Three real ``schemadoc serve`` processes on one PostgreSQL database, as behind a load balancer.

Writers increment one counter through all three servers at once (read, then write with the
version read, retry on ``version-conflict``): no update is lost, versions are contiguous, every
server serves the final value and lists every version exactly once in its ``/changes`` feed, and a
server that makes no write streams every version to its SSE client. Then one server is killed
with SIGKILL in the middle of the writes: the other two keep serving and no acknowledged write
is lost.
"""

from __future__ import annotations

import contextlib
import os
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
import pytest
from http_server import Server
from mcp import Client
from mcp.shared.subscriptions import ResourceUpdated
from pg_support import throwaway_schema

from schemadoc.config import ENVIRONMENT

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"

COUNTER_SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "counter.schema.json"
SERVERS = 3
WRITERS_PER_SERVER = 8
INCREMENTS_PER_WRITER = 2
START_TIMEOUT_SECONDS = 120.0
"""Three servers importing at once on a busy 2-core machine can take a while."""


@pytest.fixture(scope="module")
def database_url() -> Iterator[str]:
    with throwaway_schema() as url:
        yield url


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory, database_url: str) -> Iterator[list[Server]]:
    """Three servers on one throwaway PostgreSQL schema, started at once (the last test kills one)."""
    root = tmp_path_factory.mktemp("postgres-servers")
    started: list[Server | BaseException] = [RuntimeError("not started")] * SERVERS

    def start(index: int) -> None:
        try:
            started[index] = Server(root / f"unused-{index}", root / f"server-{index}",
                                    storage_url=database_url, schema=COUNTER_SCHEMA,
                                    start_timeout=START_TIMEOUT_SECONDS)
        except BaseException as error:
            started[index] = error

    threads = [threading.Thread(target=start, args=(index,)) for index in range(SERVERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    running = [server for server in started if isinstance(server, Server)]
    try:
        assert len(running) == SERVERS, started
        yield running
    finally:
        for server in running:
            server.kill()
        for server in running:
            assert "Traceback" not in server.stderr, server.stderr


def _api(server: Server) -> str:
    return f"{server.url}/api/v1"


def _create(server: Server) -> str:
    response = httpx.post(f"{_api(server)}/documents", timeout=30)
    assert response.status_code == 201, response.text
    return str(response.json()["doc_id"])


def _read_count(http: httpx.Client, server: Server, doc_id: str) -> tuple[int, int]:
    response = http.get(f"{_api(server)}/documents/{doc_id}", params={"path": "/count"})
    assert response.status_code == 200, response.text
    body = response.json()
    return int(body["node_content"]), int(body["version"])


class Acknowledged:
    """The writes a server acknowledged: (version, value written), from every writer thread."""

    def __init__(self) -> None:
        self.writes: list[tuple[int, int]] = []
        self.lock = threading.Lock()

    def add(self, version: int, value: int) -> None:
        with self.lock:
            self.writes.append((version, value))


def _increment(http: httpx.Client, server: Server, doc_id: str, acked: Acknowledged) -> None:
    """One increment through ``server``, retried until it commits."""
    while True:
        value, version = _read_count(http, server, doc_id)
        response = http.put(f"{_api(server)}/documents/{doc_id}", params={"path": "/count"},
                            content=orjson.dumps({"node_data": value + 1, "version": version}),
                            headers={"content-type": "application/json"})
        if response.status_code == 200:
            assert response.json()["version"] == version + 1
            acked.add(version + 1, value + 1)
            return
        code = response.json()["error"]["code"]
        assert code in ("version-conflict", "lock-timeout"), response.text


def _all_changes(server: Server, doc_id: str) -> list[tuple[int, str]]:
    """Every (version, op) of ``doc_id`` in the server's ``/changes`` feed, read page by page."""
    found: list[tuple[int, str]] = []
    cursor = 0
    while True:
        response = httpx.get(f"{_api(server)}/changes", params={"since": cursor, "limit": 100}, timeout=30)
        assert response.status_code == 200, response.text
        body = response.json()
        found += [(change["version"], change["op"]) for change in body["changes"] if change["doc_id"] == doc_id]
        if not body["changes"]:
            return found
        cursor = body["next_cursor"]


def _history(server: Server, doc_id: str) -> list[dict[str, Any]]:
    response = httpx.get(f"{_api(server)}/documents/{doc_id}/history", params={"limit": 1000}, timeout=30)
    assert response.status_code == 200, response.text
    return list(response.json()["entries"])


class SseFollower:
    """An SSE client of one server, in a thread, collecting the versions it is sent until ``last``."""

    def __init__(self, server: Server, doc_id: str, last: int) -> None:
        self.versions: list[int] = []
        self.last = last
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(server, doc_id), daemon=True)
        self.thread.start()
        assert self.ready.wait(30), "the event stream did not open"

    def _run(self, server: Server, doc_id: str) -> None:
        url = f"{_api(server)}/documents/{doc_id}/events"
        with contextlib.suppress(httpx.HTTPError), httpx.stream("GET", url, timeout=60) as response:
            self.ready.set()
            for line in response.iter_lines():
                if line.startswith("id:"):
                    self.versions.append(int(line.removeprefix("id:").strip()))
                    if self.versions[-1] >= self.last:
                        return
        self.ready.set()


def test_three_servers_on_one_database_lose_no_update_and_each_lists_every_version_once(
    servers: list[Server],
) -> None:
    doc_id = _create(servers[0])
    total = SERVERS * WRITERS_PER_SERVER * INCREMENTS_PER_WRITER
    follower = SseFollower(servers[1], doc_id, last=1 + total)  # from now on; server 1 hears the others' writes
    acked = Acknowledged()
    failures: list[BaseException] = []

    def writer(server: Server) -> None:
        try:
            with httpx.Client(timeout=60) as http:
                for _ in range(INCREMENTS_PER_WRITER):
                    _increment(http, server, doc_id, acked)
        except BaseException as error:
            failures.append(error)

    threads = [threading.Thread(target=writer, args=(server,)) for server in servers
               for _ in range(WRITERS_PER_SERVER)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(240)
    assert failures == []
    assert sorted(version for version, _ in acked.writes) == list(range(2, 2 + total))  # contiguous, none twice
    assert all(value == version - 1 for version, value in acked.writes)  # each increment saw the one before
    for server in servers:
        with httpx.Client(timeout=30) as http:
            assert _read_count(http, server, doc_id) == (total, 1 + total)
        assert [entry["version"] for entry in _history(server, doc_id)] == list(range(1, 2 + total))
        assert _all_changes(server, doc_id) == [(1, "create")] + [(v, "update_node") for v in range(2, 2 + total)]
    follower.thread.join(30)
    assert follower.versions == list(range(2, 2 + total))


@pytest.mark.anyio
async def test_sse_and_mcp_subscribers_of_a_server_hear_the_writes_made_through_another(
    servers: list[Server],
) -> None:
    writer, listener = servers[0], servers[2]
    doc_id = _create(writer)
    uri = f"schema://{doc_id}"
    follower = SseFollower(listener, doc_id, last=4)
    async with (Client(f"{listener.url}/mcp") as client, client.listen(resource_subscriptions=[uri]) as listening,
                httpx.AsyncClient(timeout=30) as http):
        for value in (1, 2, 3):
            response = await http.put(f"{_api(writer)}/documents/{doc_id}", params={"path": "/count"},
                                      json={"node_data": value, "version": value})
            assert response.status_code == 200, response.text
            with anyio.fail_after(10):
                assert await listening.__anext__() == ResourceUpdated(uri=uri)
    await anyio.to_thread.run_sync(follower.thread.join, 10)
    assert follower.versions == [2, 3, 4]


def _schemadoc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}
    return subprocess.run([sys.executable, "-m", "schemadoc", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=60, check=False)


def test_replay_reads_a_document_from_the_database(servers: list[Server], database_url: str, tmp_path: Path) -> None:
    doc_id = _create(servers[0])
    with httpx.Client(timeout=30) as http:
        for version in (1, 2):
            response = http.put(f"{_api(servers[version])}/documents/{doc_id}", params={"path": "/count"},
                                json={"node_data": version * 10, "version": version})
            assert response.status_code == 200, response.text
    done = _schemadoc("replay", doc_id, "--storage-url", database_url, "--schema", str(COUNTER_SCHEMA), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "versions 1..3" in done.stdout
    assert done.stdout.strip().endswith("equal")


def test_a_database_that_does_not_answer_stops_the_server_with_one_line(tmp_path: Path) -> None:
    done = _schemadoc("serve", "--schema", str(COUNTER_SCHEMA), "--port", "0", "--storage-url",
                      "postgresql://someone:s3cret@127.0.0.1:1/nothing", cwd=tmp_path)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("schemadoc: storage-unavailable: "), lines[0]
    assert "s3cret" not in done.stderr


def test_a_server_killed_mid_write_loses_no_acknowledged_write_and_the_others_keep_serving(
    servers: list[Server],
) -> None:
    doc_id = _create(servers[0])
    acked = Acknowledged()
    stop = threading.Event()
    failures: list[BaseException] = []
    after_kill: list[int] = []
    killed = threading.Event()

    def writer(server: Server) -> None:
        with httpx.Client(timeout=30) as http:
            while not stop.is_set():
                try:
                    _increment(http, server, doc_id, acked)
                except httpx.TransportError:
                    if server is servers[1]:
                        return  # the killed server: this write was never acknowledged
                    failures.append(AssertionError(f"server {server.url} stopped answering"))
                    return
                except BaseException as error:
                    failures.append(error)
                    return
                if killed.is_set() and server is not servers[1]:
                    after_kill.append(1)

    threads = [threading.Thread(target=writer, args=(server,)) for server in servers for _ in range(3)]
    for thread in threads:
        thread.start()
    deadline = time.monotonic() + 60
    while len(acked.writes) < 15 and time.monotonic() < deadline:
        time.sleep(0.05)
    servers[1].kill()  # SIGKILL, while its writers are reading and writing
    killed.set()
    while len(after_kill) < 10 and time.monotonic() < deadline:
        time.sleep(0.05)
    stop.set()
    for thread in threads:
        thread.join(60)
    assert failures == []
    assert len(after_kill) >= 10  # the two others went on committing
    survivors = [servers[0], servers[2]]
    entries = _history(survivors[0], doc_id)
    assert [entry["version"] for entry in entries] == list(range(1, len(entries) + 1))
    written = {entry["version"]: entry["patch"][0]["value"] for entry in entries[1:]}
    for version, value in acked.writes:  # every acknowledged write is there, as acknowledged
        assert written[version] == value
    assert all(value == version - 1 for version, value in written.items())
    with httpx.Client(timeout=30) as http:
        for server in survivors:
            assert _read_count(http, server, doc_id) == (len(entries) - 1, len(entries))
    assert _all_changes(survivors[1], doc_id) == [(1, "create")] + [(v, "update_node") for v in written]
