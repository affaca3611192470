"""``schemadoc serve --workers 2`` on PostgreSQL: real processes on 127.0.0.1 and a throwaway schema.

Clients append through both workers at once (each client on fresh connections now and then, which the kernel
gives to either worker): nothing acknowledged is lost, versions are contiguous, and the change feed, read page
by page on fresh connections (so through either worker), lists every version once, in order. SIGTERM to the
supervisor stops both workers with exit code 0.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import psutil
import pytest
from http_server import Server
from pg_support import throwaway_schema

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]

START_TIMEOUT_SECONDS = 120.0


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    with throwaway_schema() as url:
        server = Server(tmp_path / "data", tmp_path, storage_url=url, extra_args=("--workers", "2"),
                        start_timeout=START_TIMEOUT_SECONDS)
        try:
            deadline = time.monotonic() + START_TIMEOUT_SECONDS
            while server.stderr.count(" of 2, pid ") < 2:
                assert time.monotonic() < deadline and server.process.poll() is None, server.stderr
                time.sleep(0.1)
            yield server
        finally:
            server.kill()


def test_writes_through_two_workers_on_postgres_lose_nothing_and_the_feed_lists_each_once(server: Server) -> None:
    api = f"{server.url}/api/v1"
    doc_id = httpx.post(f"{api}/documents", timeout=60).json()["doc_id"]
    acknowledged: list[tuple[int, str]] = []
    failures: list[str] = []
    guard = threading.Lock()

    def writer(n: int) -> None:
        for i in range(8):
            if i % 4 == 0:
                client = httpx.Client(timeout=60)
            tag = f"w{n}-{i}"
            for _ in range(100):
                response = client.post(f"{api}/documents/{doc_id}/nodes", params={"path": "/tags/-"},
                                       json={"node_data": tag}, headers={"If-Match": "*"})
                if response.status_code not in (409, 423):
                    break
            with guard:
                if response.status_code == 201:
                    acknowledged.append((int(response.headers["etag"].strip('"')), tag))
                else:
                    failures.append(f"{response.status_code} {response.text[:200]}")
            if i % 4 == 3:
                client.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == []
    acknowledged.sort()
    assert [version for version, _ in acknowledged] == list(range(2, len(acknowledged) + 2))
    content = httpx.get(f"{api}/documents/{doc_id}", timeout=60).json()["node_content"]
    assert content["tags"] == [tag for _, tag in acknowledged]

    found: list[tuple[int, str]] = []
    cursor = 0
    while True:
        with httpx.Client(timeout=60) as fresh:  # a new connection: either worker answers
            body = fresh.get(f"{api}/changes", params={"since": cursor, "limit": 10}).json()
        found += [(change["version"], change["op"]) for change in body["changes"] if change["doc_id"] == doc_id]
        if not body["changes"]:
            break
        cursor = body["next_cursor"]
    assert found == [(1, "create")] + [(version, "create_node") for version, _ in acknowledged]

    workers = [child.pid for child in psutil.Process(server.process.pid).children()]
    assert len(workers) == 2
    assert server.stop() == 0
    assert server.stderr.count("stopped after") == 2
    assert "Traceback" not in server.stderr
