"""A PostgreSQL outage under load, answered honestly: two real servers on a private cluster that the test
stops and starts while writers and readers keep going.

While the database is down every answer that is not a success is ``503`` with ``Retry-After``
(``storage-unavailable``, or ``commit-outcome-unknown`` for a write cut off in its commit), never
``408 lock-timeout`` or a ``500``, readiness (``/health/ready``) is ``503`` with the cause and ``/metrics``
says so (``schemadoc_postgres_available`` 0);
after the database is back the servers serve again and report ready, and no acknowledged write
is lost. The figures (answers during the outage, seconds until each server served again) are
printed; the recovery bound asserted is far above the 2 s the servers aim for and far below the
pool's doubling reconnect delay (17-28 s after a 40 s outage) that it guards against.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from http_server import Server
from pg_cluster import PrivateCluster

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(600)]

COUNTER_SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "counter.schema.json"
SERVERS = 2
WRITERS_PER_SERVER = 3
RECOVERY_BOUND_SECONDS = 8.0
"""Asserted: well below a backing-off pool's delay, well above the aim (2 s) on a loaded 2-core machine."""
OUTAGE_CODES = frozenset({"storage-unavailable", "commit-outcome-unknown"})


@pytest.fixture(scope="module")
def cluster() -> Iterator[PrivateCluster]:
    with PrivateCluster() as private:
        yield private


@pytest.fixture(scope="module")
def servers(cluster: PrivateCluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[list[Server]]:
    root = tmp_path_factory.mktemp("outage")
    url = f"{cluster.url()}?schema=outage"
    running: list[Server] = []
    try:
        for index in range(SERVERS):
            running.append(Server(root / f"unused-{index}", root / f"server-{index}", storage_url=url,
                                  schema=COUNTER_SCHEMA, start_timeout=120))
        yield running
    finally:
        for server in running:
            server.kill()
        for server in running:
            assert "Traceback" not in server.stderr, server.stderr


@dataclass
class Answer:
    sent: float
    at: float
    server: int
    what: str
    status: int
    code: str | None
    retry_after: str | None
    remediation: str


@dataclass
class Load:
    """Writers incrementing one counter and readers of it and of /changes, through every server, until stopped."""

    servers: list[Server]
    doc_id: str
    stop: threading.Event = field(default_factory=threading.Event)
    answers: list[Answer] = field(default_factory=list)
    acked: list[tuple[int, int]] = field(default_factory=list)
    guard: threading.Lock = field(default_factory=threading.Lock)
    threads: list[threading.Thread] = field(default_factory=list)

    def note(self, server: int, what: str, response: httpx.Response, sent: float) -> Answer:
        code = remediation = None
        if response.status_code >= 400:
            error = response.json()["error"]
            code, remediation = error["code"], error["remediation"]
        answer = Answer(sent, time.monotonic(), server, what, response.status_code, code,
                        response.headers.get("retry-after"), remediation or "")
        with self.guard:
            self.answers.append(answer)
        return answer

    def start(self) -> None:
        for index in range(len(self.servers)):
            self.threads += [threading.Thread(target=self._writer, args=(index,), daemon=True)
                             for _ in range(WRITERS_PER_SERVER)]
            self.threads.append(threading.Thread(target=self._reader, args=(index,), daemon=True))
        for thread in self.threads:
            thread.start()

    def finish(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)

    def _writer(self, index: int) -> None:
        api = f"{self.servers[index].url}/api/v1/documents/{self.doc_id}"
        with httpx.Client(timeout=60) as http:
            while not self.stop.is_set():
                sent = time.monotonic()
                read = http.get(api, params={"path": "/count"})
                if self.note(index, "read", read, sent).status != 200:
                    time.sleep(0.05)
                    continue
                value, version = read.json()["node_content"], read.json()["version"]
                sent = time.monotonic()
                write = http.put(api, params={"path": "/count"}, headers={"content-type": "application/json"},
                                 content=orjson.dumps({"node_data": value + 1, "version": version}))
                if self.note(index, "write", write, sent).status == 200:
                    with self.guard:
                        self.acked.append((version + 1, value + 1))
                elif write.status_code != 409:
                    time.sleep(0.05)

    def _reader(self, index: int) -> None:
        base = f"{self.servers[index].url}/api/v1"
        with httpx.Client(timeout=60) as http:
            while not self.stop.is_set():
                sent = time.monotonic()
                self.note(index, "changes", http.get(f"{base}/changes", params={"since": 0, "limit": 5}), sent)
                sent = time.monotonic()
                self.note(index, "ready", http.get(f"{self.servers[index].url}/health/ready"), sent)
                time.sleep(0.05)


def _create(server: Server) -> str:
    response = httpx.post(f"{server.url}/api/v1/documents", timeout=60)
    assert response.status_code == 201, response.text
    return str(response.json()["doc_id"])


def _journal_values(server: Server, doc_id: str) -> dict[int, Any]:
    """version -> the count written by that version, from the journal."""
    values: dict[int, Any] = {}
    start = 0
    while True:
        response = httpx.get(f"{server.url}/api/v1/documents/{doc_id}/history",
                             params={"limit": 1000, "offset": start}, timeout=60)
        assert response.status_code == 200, response.text
        entries = response.json()["entries"]
        for entry in entries:
            if entry["version"] > 1:
                values[entry["version"]] = entry["patch"][0]["value"]
        if len(entries) < 1000:
            return values
        start += len(entries)


def _outage(cluster: PrivateCluster, servers: list[Server], seconds: float) -> None:
    doc_id = _create(servers[0])
    load = Load(servers, doc_id)
    load.start()
    time.sleep(2)
    cluster.stop()
    down = time.monotonic()
    time.sleep(seconds)
    restarting = time.monotonic()  # the database may accept connections before start() returns
    cluster.start()
    up = time.monotonic()
    deadline = up + 60
    back: dict[int, float] = {}
    while time.monotonic() < deadline and len(back) < len(servers):
        with load.guard:
            for answer in load.answers:
                if answer.sent > up and answer.status == 200 and answer.what in ("read", "write"):
                    back.setdefault(answer.server, answer.at - up)
        time.sleep(0.05)
    time.sleep(1)
    load.finish()

    during = [answer for answer in load.answers if down + 0.5 < answer.sent and answer.at < restarting]
    failures = [answer for answer in load.answers if answer.status >= 400 and answer.status != 409]
    print(f"\noutage of {seconds:g} s: {len(during)} answers while down "
          f"({sum(a.status == 503 for a in during)} x 503), {len(failures)} refusals in all "
          f"({', '.join(sorted({a.code or '' for a in failures}))}); served again after "
          + ", ".join(f"server {index}: {back[index]:.2f} s" for index in sorted(back))
          + f"; {len(load.acked)} writes acknowledged")

    assert during, "nothing was asked while the database was down"
    assert [answer for answer in during if answer.status != 503] == []
    for answer in failures:
        assert (answer.status, answer.code in OUTAGE_CODES) == (503, True), answer
        assert answer.retry_after is not None and 1 <= int(answer.retry_after) <= 5, answer
        assert "replay" not in answer.remediation and "director" not in answer.remediation, answer
    readiness = [answer for answer in during if answer.what == "ready"]
    assert readiness and all(answer.status == 503 and answer.code == "storage-unavailable" for answer in readiness)
    assert sorted(back) == list(range(len(servers))), f"not every server served again: {back}"
    assert max(back.values()) < RECOVERY_BOUND_SECONDS, back
    for server in servers:
        ready = httpx.get(f"{server.url}/health/ready", timeout=30)
        assert (ready.status_code, ready.json()["status"]) == (200, "ready")

    journal = _journal_values(servers[0], doc_id)
    assert [journal.get(version) for version, _ in load.acked] == [value for _, value in load.acked]  # none lost
    assert sorted(journal) == list(range(2, 2 + len(journal)))  # contiguous versions


def test_a_five_second_outage_under_load_is_503_with_retry_after_and_loses_no_acknowledged_write(
        cluster: PrivateCluster, servers: list[Server]) -> None:
    _outage(cluster, servers, 5)


def test_after_an_outage_without_traffic_the_first_request_to_each_server_is_served(
        cluster: PrivateCluster, servers: list[Server]) -> None:
    doc_id = _create(servers[0])
    cluster.stop()
    time.sleep(1)
    cluster.start()
    for index, server in enumerate(servers):
        started = time.monotonic()
        response = httpx.put(f"{server.url}/api/v1/documents/{doc_id}", params={"path": "/count"}, timeout=60,
                             json={"node_data": index + 1, "version": index + 1})
        assert response.status_code == 200, response.text
        print(f"\nfirst write through server {index} after an unseen outage: {time.monotonic() - started:.2f} s")
    for server in servers:
        assert httpx.get(f"{server.url}/health/ready", timeout=30).status_code == 200


def _available(server: Server) -> float | None:
    """``schemadoc_postgres_available`` as the server's ``/metrics`` gives it (parsed by prometheus-client)."""
    from prometheus_client.parser import text_string_to_metric_families

    answer = httpx.get(f"{server.url}/metrics", timeout=60)
    assert answer.status_code == 200, answer.text
    found = [sample.value for family in text_string_to_metric_families(answer.text) for sample in family.samples
             if sample.name == "schemadoc_postgres_available"]
    return found[0] if found else None


def test_the_outage_is_shown_by_metrics_while_it_lasts(cluster: PrivateCluster, servers: list[Server]) -> None:
    server = servers[0]
    doc_id = _create(server)
    assert _available(server) == 1
    cluster.stop()
    try:
        refused = httpx.get(f"{server.url}/api/v1/documents/{doc_id}/history", timeout=60)  # the store is asked
        assert refused.status_code == 503, refused.text
        assert _available(server) == 0  # the scrape itself is answered during the outage
    finally:
        cluster.start()
    deadline = time.monotonic() + 60
    while httpx.get(f"{server.url}/health/ready", timeout=60).status_code != 200:
        assert time.monotonic() < deadline, "the server did not report ready again"
        time.sleep(0.1)
    assert _available(server) == 1


@pytest.mark.slow
def test_a_forty_second_outage_recovers_as_fast_as_a_short_one(cluster: PrivateCluster,
                                                                servers: list[Server]) -> None:
    _outage(cluster, servers, 40)
