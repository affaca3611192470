"""The inventory on PostgreSQL: two real servers started together on one database with a changed schema check
every document once between them (each check holds the document's lock and reads its verdict again first),
and both serve the same, exact verdicts."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_server import Server
from pg_support import throwaway_schema
from test_inventory_server import _schemas

from schemadoc.schema import load_schema

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]

DOCUMENTS = 120
START_TIMEOUT_SECONDS = 120.0


@pytest.fixture
def database_url() -> Iterator[str]:
    with throwaway_schema() as url:
        yield url


def _api(server: Server) -> str:
    return f"{server.url}/api/v1"


def _inventory_done(server: Server, timeout: float = 120) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    status: dict[str, Any] = {}
    while time.monotonic() < deadline:
        status = httpx.get(f"{_api(server)}/status", timeout=30).json()
        if status["inventory"]["state"] == "done":
            return status
        time.sleep(0.2)
    raise AssertionError(f"the inventory did not finish: {status}")


def test_two_servers_on_one_database_check_each_document_once(tmp_path: Path, database_url: str) -> None:
    before, after = _schemas(tmp_path / "schemas")
    doc_ids: list[str] = []
    with Server(tmp_path / "unused", tmp_path / "logs-before", schema=before, storage_url=database_url,
                start_timeout=START_TIMEOUT_SECONDS) as first, httpx.Client(timeout=30) as http:
        for index in range(DOCUMENTS):
            content: dict[str, Any] = {"title": "Abc" if index % 2 else "A longer title"}
            if index % 3 == 0:
                content["isbn"] = "978-3-16-148410-0"
            answer = http.post(f"{_api(first)}/documents", json={"content": content})
            assert answer.status_code == 201, answer.text
            doc_ids.append(answer.json()["doc_id"])

    started: list[Server | BaseException] = [RuntimeError("not started")] * 2

    def start(index: int) -> None:
        try:
            started[index] = Server(tmp_path / f"unused-{index}", tmp_path / f"logs-after-{index}", schema=after,
                                    storage_url=database_url, start_timeout=START_TIMEOUT_SECONDS)
        except BaseException as error:
            started[index] = error

    threads = [threading.Thread(target=start, args=(index,)) for index in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(150)
    servers = [server for server in started if isinstance(server, Server)]
    try:
        assert len(servers) == 2, started
        statuses = [_inventory_done(server) for server in servers]
        progress = [status["inventory"] for status in statuses]
        assert sum(done["checked"] for done in progress) == DOCUMENTS, progress  # once each, between them
        # each found what was unchecked when it started; what the other checked meanwhile it skipped
        assert all(done["checked"] + done["skipped"] == done["to_check"] and done["failed"] == 0
                   for done in progress), progress
        print("inventory of each server:", progress)
        reference = load_schema(after).make_reference_validator()
        with httpx.Client(timeout=30) as http:
            invalid = set()
            for doc_id in doc_ids:
                content = http.get(f"{_api(servers[0])}/documents/{doc_id}").json()["node_content"]
                count = sum(1 for _ in reference.iter_errors(content))
                if count:
                    invalid.add(doc_id)
                for server in servers:
                    verdict = http.get(f"{_api(server)}/documents/{doc_id}/verdict").json()["verdict"]
                    assert verdict["violation_count"] == count, (doc_id, verdict)
            for server, status in zip(servers, statuses, strict=True):
                assert (status["valid"], status["invalid"], status["unchecked"]) == (
                    DOCUMENTS - len(invalid), len(invalid), 0)
                # the list reads the shared search index, which the server that recorded a verdict updates from
                # its own thread: another server sees it a moment later
                deadline = time.monotonic() + 15
                while True:
                    listed = http.get(f"{_api(server)}/documents", params={"valid": "false", "limit": 1000}).json()
                    found = {item["doc_id"] for item in listed["documents"]}
                    if found == invalid or time.monotonic() > deadline:
                        break
                    time.sleep(0.1)
                assert found == invalid
    finally:
        for server in servers:
            server.stop()
        for server in servers:
            assert "Traceback" not in server.stderr, server.stderr
