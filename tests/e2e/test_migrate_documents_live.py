"""``schemadoc migrate-documents`` on 1,000 documents beside a real ``schemadoc serve`` on the same storage (files
store and PostgreSQL), which a thread keeps writing to over REST: the command is killed with ``kill -9`` in the
middle, run again, and then every document was migrated exactly once (one journal entry with the migration's
name), from the version it had, and no acknowledged write was lost."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_server import Server
from pg_support import throwaway_schema

from schemadoc.config import ENVIRONMENT
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage import store_for

pytestmark = pytest.mark.timeout(900)

DOCUMENTS = 1000
NAME = "2026-11-isbn-per-chapter"
SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "additionalProperties": False,
          "required": ["title"],
          "properties": {"title": {"type": "string"}, "n": {"type": "integer"},
                         "chapters": {"type": "array", "items": {
                             "type": "object", "additionalProperties": False, "required": ["title"],
                             "properties": {"title": {"type": "string"}, "isbn": {"type": "string"}}}}}}
MIGRATION = {"name": NAME, "patch": [{"op": "add", "path": "/chapters/*/isbn", "value": "0-000"},
                                     {"op": "add", "path": "/chapters/-", "value": {"title": "Index"}}]}


@pytest.fixture(params=["files", "postgres"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str | None]]:
    if request.param == "files":
        yield tmp_path / "data", None
        return
    with throwaway_schema() as url:
        yield tmp_path / "unused", url


class Writer(threading.Thread):
    """Sets ``/n`` of random documents over REST until stopped; keeps every acknowledged (doc_id, version, n). A
    ``version-conflict`` (the version ``If-Match: "*"`` named was overtaken by the migration's commit in the other
    process) is an unacknowledged write, counted apart."""

    def __init__(self, url: str, doc_ids: list[str]) -> None:
        super().__init__(daemon=True)
        self.url, self.doc_ids = url, doc_ids
        self.acknowledged: list[tuple[str, int, int]] = []
        self.stopping = threading.Event()
        self.errors: list[str] = []
        self.conflicts = 0

    def run(self) -> None:
        chance = random.Random(28)
        counter = 0
        with httpx.Client(base_url=f"{self.url}/api/v1", timeout=30) as http:
            while not self.stopping.is_set():
                doc_id = chance.choice(self.doc_ids)
                counter += 1
                response = http.put(f"/documents/{doc_id}", params={"path": "/n"}, json={"node_data": counter},
                                    headers={"If-Match": "*"})
                if response.status_code == 200:
                    self.acknowledged.append((doc_id, response.json()["version"], counter))
                elif response.status_code == 409:  # If-Match "*" met the migration's commit: nothing written
                    self.conflicts += 1
                else:
                    self.errors.append(response.text)

    def stop(self) -> None:
        self.stopping.set()
        self.join(60)


def _command(schema: Path, storage_dir: Path, storage_url: str | None, migration: Path) -> list[str]:
    command = [sys.executable, "-m", "schemadoc", "migrate-documents", str(migration), "--schema", str(schema),
               "--storage-dir", str(storage_dir), "--json"]
    return command + (["--storage-url", storage_url] if storage_url else [])


def _environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}


def _migrated_so_far(store: Any, doc_ids: list[str]) -> int:
    return sum(1 for doc_id in doc_ids
               if any(entry.info.get("migration") == NAME for entry in store.read_journal(doc_id, 1)))


def test_a_migration_killed_in_the_middle_and_run_again_beside_a_live_writer_migrates_each_document_once(
        tmp_path: Path, storage: tuple[Path, str | None]) -> None:
    storage_dir, storage_url = storage
    schema = tmp_path / "schema.json"
    schema.write_text(json.dumps(SCHEMA))
    migration = tmp_path / "migration.json"
    migration.write_text(json.dumps(MIGRATION))
    service = DocumentService(load_schema(schema), store_for(storage_dir, storage_url))
    service.open()
    try:
        doc_ids = [service.create_document({"title": f"book {i}", "n": 0,
                                            "chapters": [{"title": f"c{j}"} for j in range(i % 4)]})[0]
                   for i in range(DOCUMENTS)]
    finally:
        service.close()
    before = {doc_id: i % 4 for i, doc_id in enumerate(doc_ids)}

    store = store_for(storage_dir, storage_url)
    store.open()
    with Server(storage_dir, tmp_path / "logs", storage_url=storage_url, schema=schema) as server:
        writer = Writer(server.url, doc_ids)
        writer.start()
        try:
            first = subprocess.Popen(_command(schema, storage_dir, storage_url, migration), env=_environment(),
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            deadline = time.monotonic() + 300
            reached = 0
            while time.monotonic() < deadline and first.poll() is None:
                reached = _migrated_so_far(store, doc_ids[::10])
                if reached >= 20:  # about 200 of 1,000 migrated
                    break
                time.sleep(0.2)
            assert first.poll() is None, "the first run ended before it could be killed"
            first.send_signal(signal.SIGKILL)
            first.wait(30)
            killed_at = _migrated_so_far(store, doc_ids)
            assert 0 < killed_at < DOCUMENTS
            second = subprocess.run(_command(schema, storage_dir, storage_url, migration), env=_environment(),
                                    capture_output=True, text=True, timeout=600)
        finally:
            writer.stop()
        assert second.returncode == 0, second.stderr
        summary = json.loads(second.stdout)
        assert summary["counts"]["already_migrated"] >= killed_at
        assert summary["counts"]["valid"] + summary["counts"]["already_migrated"] == DOCUMENTS
        assert summary["failures"] == []
        assert len(writer.acknowledged) > 50 and writer.errors == []

        last: dict[str, int] = {}
        for doc_id, version, value in writer.acknowledged:
            last[doc_id] = value
            [entry] = store.read_journal(doc_id, version - 1, version)
            assert entry.patch == [{"op": "replace", "path": "/n", "value": value}]  # no acknowledged write lost
        with httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as http:
            for doc_id in doc_ids:
                journal = store.read_journal(doc_id)
                [migrated] = [entry for entry in journal if entry.info.get("migration") == NAME]  # exactly once
                assert migrated.info["actor"] == "cli:migrate-documents"
                content = http.get(f"/documents/{doc_id}").json()["node_content"]
                assert content["n"] == last.get(doc_id, 0)
                chapters = content["chapters"]
                assert len(chapters) == before[doc_id] + 1 and chapters[-1] == {"title": "Index"}
                assert all(chapter.get("isbn") == "0-000" for chapter in chapters[:-1])
    close = getattr(store, "close", None)
    if callable(close):
        close()
