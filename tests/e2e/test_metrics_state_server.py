"""The gauges and counters ``/metrics`` reads from the server's state at scrape time, on a real ``schemadoc serve``:
the memory budget's evictions and cold loads, snapshots and their lag, event streams and MCP sessions, and the
PostgreSQL pool."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from http_server import Server
from pg_support import URL, require_postgres
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.timeout(180)

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _samples(server: Server) -> Samples:
    answer = httpx.get(f"{server.url}/metrics", timeout=30)
    assert answer.status_code == 200, answer.text
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(answer.text) for sample in family.samples}


def _value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, tuple(sorted(labels.items()))))


def _until(server: Server, holds: Callable[[Samples], bool], timeout: float = 20.0) -> Samples:
    """The first scrape on which ``holds`` is true (the state changes in the background)."""
    deadline = time.monotonic() + timeout
    while True:
        samples = _samples(server)
        if holds(samples):
            return samples
        assert time.monotonic() < deadline, samples
        time.sleep(0.1)


def _create(api: str) -> tuple[str, int]:
    created = httpx.post(f"{api}/documents", timeout=30)
    assert created.status_code == 201, created.text
    return created.json()["doc_id"], created.json()["version"]


def test_evictions_and_cold_loads_under_a_small_memory_budget(tmp_path: Path) -> None:
    with Server(tmp_path / "data", tmp_path / "logs", extra_args=("--memory-budget", "1MiB")) as server:
        api = f"{server.url}/api/v1"
        first = None
        for index in range(3):  # each about 0.9 MiB charged: at most one stays
            doc_id, version = _create(api)
            tags = [f"tag-{index}-{number:06d}" for number in range(30_000)]
            written = httpx.put(f"{api}/documents/{doc_id}", params={"path": "/tags"},
                                json={"node_data": tags, "version": version}, timeout=60)
            assert written.status_code == 200, written.text
            first = first or doc_id
        assert httpx.get(f"{api}/documents/{first}", params={"path": "/title"}, timeout=30).status_code == 200
        samples = _samples(server)
        evictions = _value(samples, "schemadoc_memory_evictions_total")
        loads = _value(samples, "schemadoc_cold_loads_total")
        assert evictions is not None and evictions >= 2
        assert loads is not None and loads >= 1
        assert _value(samples, "schemadoc_cold_load_duration_seconds_count") == loads  # each load timed once
        assert _value(samples, "schemadoc_memory_budget_bytes") == 1 << 20
        used = _value(samples, "schemadoc_memory_used_bytes")
        assert used is not None and used > 0
        assert _value(samples, "schemadoc_documents") == 3
        assert (_value(samples, "schemadoc_memory_documents") or 0) < 3


def test_snapshots_are_timed_and_the_lag_returns_to_zero(tmp_path: Path) -> None:
    with Server(tmp_path / "data", tmp_path / "logs", settings={"SNAPSHOT_INTERVAL_SECONDS": "1"}) as server:
        api = f"{server.url}/api/v1"
        doc_id, version = _create(api)
        for title in ("One", "Two"):
            written = httpx.put(f"{api}/documents/{doc_id}", params={"path": "/title"},
                                json={"node_data": title, "version": version}, timeout=30)
            assert written.status_code == 200
            version = written.json()["version"]
        samples = _until(server, lambda s: (_value(s, "schemadoc_snapshot_duration_seconds_count") or 0) >= 1
                         and _value(s, "schemadoc_snapshot_lag_versions") == 0)
        assert _value(samples, "schemadoc_snapshot_lag_bytes") == 0
        assert _value(samples, "schemadoc_snapshot_lag_seconds") == 0
        assert _value(samples, "schemadoc_journal_bytes") == 0


def test_event_streams_and_mcp_sessions_are_counted_while_open(tmp_path: Path) -> None:
    with Server(tmp_path / "data", tmp_path / "logs") as server:
        doc_id, _ = _create(f"{server.url}/api/v1")
        before = _samples(server)
        assert _value(before, "schemadoc_subscribers") == 0 and _value(before, "schemadoc_mcp_sessions") == 0
        headers = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
        opened = httpx.post(f"{server.url}/mcp", headers=headers, timeout=30, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "count", "version": "1"}}})
        assert opened.status_code == 200, opened.text
        with httpx.stream("GET", f"{server.url}/api/v1/documents/{doc_id}/events", timeout=30) as stream:
            assert stream.status_code == 200
            samples = _until(server, lambda s: _value(s, "schemadoc_subscribers") == 1)
            assert _value(samples, "schemadoc_mcp_sessions") == 1
        assert httpx.delete(f"{server.url}/mcp", headers={"mcp-session-id": opened.headers["mcp-session-id"],
                                                          "mcp-protocol-version": "2025-06-18"},
                            timeout=30).status_code in (200, 204)
        after = _until(server, lambda s: _value(s, "schemadoc_subscribers") == 0
                       and _value(s, "schemadoc_mcp_sessions") == 0)
        assert _value(after, "schemadoc_requests_total", door="rest", operation="events", status="200",
                      code="") == 1
        # counted, but not a latency: how long a reader stays open would swamp the histogram's upper buckets
        assert _value(after, "schemadoc_request_duration_seconds_count", door="rest", operation="events") in (None, 0)


@pytest.mark.postgres
def test_the_postgresql_pool_is_shown_on_postgresql(tmp_path: Path) -> None:
    require_postgres()
    from pg_support import drop_schema, fresh_schema_name, url_with_schema

    schema = fresh_schema_name()
    try:
        with Server(tmp_path / "data", tmp_path / "logs", storage_url=url_with_schema(schema)) as server:
            _create(f"{server.url}/api/v1")
            samples = _samples(server)
            assert _value(samples, "schemadoc_postgres_available") == 1
            size = _value(samples, "schemadoc_postgres_pool_size_max")
            idle = _value(samples, "schemadoc_postgres_pool_connections", state="idle")
            used = _value(samples, "schemadoc_postgres_pool_connections", state="used")
            assert size is not None and size >= 2 and idle is not None and used is not None
            assert 1 <= idle + used <= size
            assert _value(samples, "schemadoc_postgres_pool_waits_total") is not None
            assert _value(samples, "schemadoc_documents") == 1
    finally:
        drop_schema(schema)


def test_a_files_server_shows_no_postgresql_pool(tmp_path: Path) -> None:
    with Server(tmp_path / "data", tmp_path / "logs") as server:
        assert not any(name.startswith("schemadoc_postgres_") for name, _ in _samples(server))


assert URL  # the PostgreSQL test reads it through pg_support
