"""``schemadoc export`` and ``schemadoc import`` as real processes: a backup of a live server under write load, moved
into PostgreSQL and back with content and history identical, an import beside a running server, exit codes
and the stdin/stdout pipe (docs/backup.md)."""

from __future__ import annotations

import io
import os
import random
import subprocess
import sys
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import orjson
import pytest
from http_server import BOOK_SCHEMA, Server
from pg_support import throwaway_schema

from schemadoc.config import ENVIRONMENT

COMMAND_TIMEOUT_SECONDS = 300


def schemadoc(cwd: Path, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}
    return subprocess.run([sys.executable, "-m", "schemadoc", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, timeout=COMMAND_TIMEOUT_SECONDS, check=False)


def ok(result: subprocess.CompletedProcess[bytes]) -> str:
    assert result.returncode == 0, result.stderr.decode()
    return result.stdout.decode()


def members(archive: Path | bytes) -> dict[str, bytes]:
    data = archive.read_bytes() if isinstance(archive, Path) else archive
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        return {info.name: tar.extractfile(info).read() for info in tar.getmembers()}  # type: ignore[union-attr]


def same_archive(first: Path, second: Path) -> None:
    """Identical documents, journals and counts; the manifest differs only in its times and the store."""
    one, two = members(first), members(second)
    assert sorted(one) == sorted(two)
    for name in one:
        if name not in ("manifest.json", "SHA256SUMS"):
            assert one[name] == two[name], name
    differ = ("created_at", "completed_at", "store")
    manifest_one, manifest_two = orjson.loads(one["manifest.json"]), orjson.loads(two["manifest.json"])
    assert {key: value for key, value in manifest_one.items() if key not in differ} == {
        key: value for key, value in manifest_two.items() if key not in differ}
    assert manifest_one["documents"] > 0 and manifest_one["history"] is True


def rest(server: Server) -> httpx.Client:
    return httpx.Client(base_url=f"{server.url}/api/v1", timeout=30)


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with throwaway_schema() as url:
        yield url


def _books(http: httpx.Client, count: int) -> list[str]:
    doc_ids = []
    for number in range(count):
        doc_id = http.post("/documents").json()["doc_id"]
        for step in range(3):
            assert http.put(f"/documents/{doc_id}", params={"path": "/title"},
                            json={"node_data": f"Book {number}.{step}"}, headers={"If-Match": "*"}).status_code == 200
        doc_ids.append(doc_id)
    http.post(f"/documents/{doc_ids[-1]}/nodes", params={"path": "/tags/-"}, json={"node_data": "last"},
              headers={"If-Match": "*"})
    assert http.delete(f"/documents/{doc_ids[0]}", headers={"If-Match": "*"}).status_code == 200
    return doc_ids


class Writer(threading.Thread):
    """Writes titles to the live documents (and creates some) until stopped; counts what was acknowledged."""

    def __init__(self, url: str, doc_ids: list[str]) -> None:
        super().__init__(daemon=True)
        self.url, self.doc_ids, self.written = url, doc_ids, 0
        self.stopping = threading.Event()
        self.errors: list[str] = []

    def run(self) -> None:
        chance = random.Random(7)
        with httpx.Client(base_url=f"{self.url}/api/v1", timeout=30) as http:
            while not self.stopping.is_set():
                if chance.random() < 0.1:
                    response = http.post("/documents")
                    if response.status_code == 201:
                        self.doc_ids.append(response.json()["doc_id"])
                else:
                    doc_id = chance.choice(self.doc_ids)
                    response = http.put(f"/documents/{doc_id}", params={"path": "/title"},
                                        json={"node_data": f"live {self.written}"}, headers={"If-Match": "*"})
                if response.status_code in (200, 201):
                    self.written += 1
                else:
                    self.errors.append(response.text)

    def stop(self) -> None:
        self.stopping.set()
        self.join(60)


def _archived_versions_are_the_server_s(archive: Path, url: str) -> None:
    """Each archived document is one version the server had: its content is what the server gives for it."""
    found = members(archive)
    with httpx.Client(base_url=f"{url}/api/v1", timeout=30) as http:
        for name, data in found.items():
            if name.endswith("/meta.json"):
                meta = orjson.loads(data)
                content = orjson.loads(found[name.replace("meta.json", "content.json")])
                if meta["deleted_at"] is None:
                    response = http.get(f"/documents/{meta['doc_id']}/versions/{meta['version']}")
                    assert response.status_code == 200, response.text
                    assert orjson.loads(response.content) == content
                journal = found[name.replace("meta.json", "journal.jsonl")].splitlines()
                assert [orjson.loads(line)["version"] for line in journal] == list(range(1, meta["version"] + 1))


def test_a_live_server_s_export_under_write_load_moves_to_postgres_and_exports_again_identically(
        tmp_path: Path, postgres_url: str) -> None:
    with Server(tmp_path / "live", tmp_path / "logs") as server, rest(server) as http:
        doc_ids = _books(http, 6)
        writer = Writer(server.url, doc_ids[1:])
        writer.start()
        try:
            while writer.written < 20:  # the load is on before the export starts
                writer.join(0.05)
            before = writer.written
            ok(schemadoc(tmp_path, "export", "--storage-dir", "live", "--history", "--schema", str(BOOK_SCHEMA),
                         "live.tar"))
            during = writer.written - before
        finally:
            writer.stop()
        assert writer.errors == []
        assert during > 0, "no write landed while the export ran"
        _archived_versions_are_the_server_s(tmp_path / "live.tar", server.url)
    imported = ok(schemadoc(tmp_path, "import", "--schema", str(BOOK_SCHEMA), "--storage-url", postgres_url,
                            "live.tar"))
    count = orjson.loads(members(tmp_path / "live.tar")["manifest.json"])["documents"]
    assert f"imported {count} of {count} document(s)" in imported and "invalid 0" in imported
    ok(schemadoc(tmp_path, "export", "--storage-url", postgres_url, "--history", "--schema", str(BOOK_SCHEMA),
                 "again.tar"))
    same_archive(tmp_path / "live.tar", tmp_path / "again.tar")


def test_files_to_postgres_to_files_keeps_content_and_history_identical(tmp_path: Path, postgres_url: str) -> None:
    with Server(tmp_path / "first", tmp_path / "logs") as server, rest(server) as http:
        doc_ids = _books(http, 4)
        http.post(f"/documents/{doc_ids[1]}/revert", json={"to_version": 2}, headers={"If-Match": "*"})
    ok(schemadoc(tmp_path, "export", "--storage-dir", "first", "--history", "first.tar.gz"))
    ok(schemadoc(tmp_path, "import", "--schema", str(BOOK_SCHEMA), "--storage-url", postgres_url, "first.tar.gz"))
    ok(schemadoc(tmp_path, "export", "--storage-url", postgres_url, "--history", "postgres.tar"))
    ok(schemadoc(tmp_path, "import", "--schema", str(BOOK_SCHEMA), "--storage-dir", "second", "postgres.tar"))
    ok(schemadoc(tmp_path, "export", "--storage-dir", "second", "--history", "second.tar"))
    same_archive(tmp_path / "first.tar.gz", tmp_path / "postgres.tar")
    same_archive(tmp_path / "first.tar.gz", tmp_path / "second.tar")
    # served from the files store again: history, reverts and the deleted state work
    with Server(tmp_path / "second", tmp_path / "logs") as server, rest(server) as http:
        history = http.get(f"/documents/{doc_ids[1]}/history").json()
        assert [entry["version"] for entry in history["entries"]] == [1, 2, 3, 4, 5]
        reverted = http.post(f"/documents/{doc_ids[1]}/revert", json={"to_version": 3},
                             headers={"If-Match": '"5"'})
        assert reverted.status_code == 200, reverted.text
        assert http.get(f"/documents/{doc_ids[1]}").json()["node_content"]["title"] == "Book 1.1"
        assert http.get(f"/documents/{doc_ids[0]}").status_code == 404  # deleted, as it was


def test_an_import_beside_a_running_server_adds_documents_the_server_serves(tmp_path: Path) -> None:
    with Server(tmp_path / "elsewhere", tmp_path / "logs") as server, rest(server) as http:
        moved = _books(http, 3)
    ok(schemadoc(tmp_path, "export", "--storage-dir", "elsewhere", "--history", "moved.tar"))
    with Server(tmp_path / "running", tmp_path / "logs") as server, rest(server) as http:
        own = _books(http, 2)
        writer = Writer(server.url, own[1:])
        writer.start()
        try:
            result = schemadoc(tmp_path, "import", "--schema", str(BOOK_SCHEMA), "--storage-dir", "running",
                               "moved.tar")
        finally:
            writer.stop()
        assert "imported 3 of 3" in ok(result)
        assert writer.errors == [] and writer.written > 0
        listed = {item["doc_id"] for item in http.get("/documents", params={"limit": 100}).json()["documents"]}
        assert set(moved[1:]) <= listed and set(own[1:]) <= listed
        for doc_id in moved[1:]:
            response = http.get(f"/documents/{doc_id}")
            assert response.status_code == 200 and response.json()["node_content"]["title"].startswith("Book")
            version = int(response.headers["etag"].strip('"'))
            written = http.put(f"/documents/{doc_id}", params={"path": "/title"}, json={"node_data": "On"},
                               headers={"If-Match": f'"{version}"'})
            assert written.status_code == 200 and written.json()["version"] == version + 1
        assert http.post(f"/documents/{moved[0]}/undelete").status_code == 200


def _listing(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.iterdir()) if directory.exists() else []


def test_exit_codes_pipes_and_a_damaged_archive_refused_with_nothing_written(tmp_path: Path) -> None:
    with Server(tmp_path / "source", tmp_path / "logs") as server, rest(server) as http:
        _books(http, 3)
    piped = schemadoc(tmp_path, "export", "--storage-dir", "source", "--history", "--gzip", "-")
    assert piped.returncode == 0 and piped.stdout[:2] == b"\x1f\x8b"
    assert "exported 3 document(s) (1 deleted) with history to stdout" in piped.stderr.decode()
    damaged = bytearray(piped.stdout)
    damaged[len(damaged) // 2] ^= 0x10
    refused = schemadoc(tmp_path, "import", "--schema", str(BOOK_SCHEMA), "--storage-dir", "target", "-",
                        stdin=bytes(damaged))
    assert refused.returncode == 2 and "schemadoc: archive-invalid:" in refused.stderr.decode()
    assert "Traceback" not in refused.stderr.decode()
    # the store was opened (its format marker recorded, as any first use does); no document was written
    assert [name for name in _listing(tmp_path / "target")
            if not name.startswith(".") and name != "schemadoc-store.json"] == []
    imported = schemadoc(tmp_path, "import", "--schema", str(BOOK_SCHEMA), "--storage-dir", "target", "-",
                         stdin=piped.stdout)
    assert "imported 3 of 3" in ok(imported)
    again = schemadoc(tmp_path, "import", "--schema", str(BOOK_SCHEMA), "--storage-dir", "target", "-",
                      stdin=piped.stdout)
    assert again.returncode == 2 and "schemadoc: import-conflict:" in again.stderr.decode()
    strict = tmp_path / "strict.schema.json"
    strict.write_bytes(orjson.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema",
                                     "properties": {"tags": {"maxItems": 0}}}))
    some_refused = schemadoc(tmp_path, "import", "--schema", str(strict), "--storage-dir", "strict", "-",
                             stdin=piped.stdout)
    assert some_refused.returncode == 1
    assert "imported 2 of 3 document(s)" in some_refused.stdout.decode()
    assert "refused by the schema, not imported" in some_refused.stdout.decode()
    missing = schemadoc(tmp_path, "export", "--storage-dir", "nowhere", "out.tar")
    assert missing.returncode == 4 and not (tmp_path / "out.tar").exists()

