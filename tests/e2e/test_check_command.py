"""``schemadoc check`` as a real process: a store written by a real server under the book schema, checked against
a tightened one. Every verdict is python-jsonschema's on the document at its current version (snapshots made to
lag their journals on purpose, so that judging the snapshot would give other verdicts); the summary's counts by
code and by path pattern; ``--json``; the exit codes; beside a running server that keeps writing (its writes all
land, and the check changes no file of the store); on PostgreSQL too (docs/schema-changes.md)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema
import orjson
import pytest
from http_server import BOOK_SCHEMA, Server
from pg_support import throwaway_schema

from schemadoc.config import ENVIRONMENT

COMMAND_TIMEOUT_SECONDS = 300
LAGGING = {"SNAPSHOT_LAG_VERSIONS": "1000000", "SNAPSHOT_LAG_BYTES": "1000000000",
           "SNAPSHOT_INTERVAL_SECONDS": "86400"}
"""Settings under which a server writes no snapshot while it runs: they lag their journals until it stops."""


def schemadoc(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    env = {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}
    return subprocess.run([sys.executable, "-m", "schemadoc", *args], cwd=cwd, env=env, capture_output=True,
                          timeout=COMMAND_TIMEOUT_SECONDS, check=False)


def tightened_schema(directory: Path) -> Path:
    """The book schema with a title of at most 5 characters and a required ``isbn`` in every chapter."""
    schema = json.loads(BOOK_SCHEMA.read_text())
    schema["properties"]["title"]["maxLength"] = 5
    chapter = schema["$defs"]["chapter"]
    chapter["properties"]["isbn"] = {"type": "string", "pattern": "^[0-9]{13}$"}
    chapter["required"] = [*chapter["required"], "isbn"]
    path = directory / "tightened.schema.json"
    path.write_text(json.dumps(schema))
    return path


def oracle(schema_path: Path) -> jsonschema.Draft202012Validator:
    schema = json.loads(schema_path.read_text())
    return jsonschema.Draft202012Validator(schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER)


def pointer(parts: Any) -> str:
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in parts)


def chapter(number: int) -> dict[str, Any]:
    return {"id": f"ch-{number}", "title": f"Chapter {number}",
            "sections": [{"title": "One", "paragraphs": [{"text": "Some text."}]}]}


def put(http: httpx.Client, doc_id: str, path: str, value: Any) -> None:
    answer = http.put(f"/documents/{doc_id}", params={"path": path}, json={"node_data": value},
                      headers={"If-Match": "*"})
    assert answer.status_code == 200, answer.text


def write_books(http: httpx.Client, count: int, seed: int) -> dict[str, int]:
    """``count`` books valid under the book schema, written in three versions: created ("Untitled", too long
    for the tightened schema), 0 to 3 chapters (none with an isbn: the book schema allows none), a title short
    or long. Books with a short title and no chapter become valid under the tightened schema only at their
    last version. Returns doc_id -> the number of chapters (each missing its isbn when tightened)."""
    rng = random.Random(seed)
    missing: dict[str, int] = {}
    for _ in range(count):
        doc_id = http.post("/documents").json()["doc_id"]  # version 1: title "Untitled" (too long when tightened)
        chapters = rng.randrange(0, 4)
        if chapters:
            put(http, doc_id, "/chapters", [chapter(n) for n in range(chapters)])
        put(http, doc_id, "/title", rng.choice(["Abc", "Dune", "A much longer title", "Emma"]))
        missing[doc_id] = chapters
    return missing


def store_files(storage: Path) -> dict[str, tuple[int, int]]:
    """Every file under the storage directory but the search index (derived, kept by the server as it writes):
    (size, mtime in ns)."""
    return {str(path.relative_to(storage)): (path.stat().st_size, path.stat().st_mtime_ns)
            for path in sorted(storage.rglob("*")) if path.is_file() and not path.name.startswith("search-index.")}


def expected_verdicts(http: httpx.Client, validator: jsonschema.Draft202012Validator) -> dict[str, Any]:
    """doc_id -> (version, sorted violation paths) of every live document as the server serves it now."""
    found = {}
    for item in http.get("/documents", params={"limit": 1000}).json()["documents"]:
        answer = http.get(f"/documents/{item['doc_id']}").json()
        paths = sorted(pointer(error.absolute_path) for error in validator.iter_errors(answer["node_content"]))
        found[item["doc_id"]] = (answer["version"], paths)
    return found


def check_json(cwd: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = schemadoc(cwd, "check", *args, "--json")
    assert result.stdout, result.stderr.decode()
    return result.returncode, orjson.loads(result.stdout)  # nothing but one JSON object on stdout


def verdicts_of(report: dict[str, Any]) -> dict[str, int]:
    return {item["doc_id"]: item["violation_count"] for item in report["invalid_documents"]}


def test_every_verdict_is_python_jsonschemas_at_the_journals_version(tmp_path: Path) -> None:
    storage = tmp_path / "data"
    tightened = tightened_schema(tmp_path)
    with Server(storage, tmp_path / "logs", settings=LAGGING) as server, \
            httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as http:
        missing = write_books(http, 16, seed=28)
        deleted = next(iter(missing))
        assert http.delete(f"/documents/{deleted}", headers={"If-Match": "*"}).status_code == 200
        expected = expected_verdicts(http, oracle(tightened))
        server.kill()  # kill -9: no snapshot written at the stop, so every snapshot lags its journal
    lagging = [doc_id for doc_id in expected
               if json.loads((storage / f"{doc_id}.meta.json").read_bytes())["version"] < expected[doc_id][0]]
    assert len(lagging) == len(expected)
    # judging the snapshots alone would give other verdicts: the test can tell the journal's version was judged
    snapshot_verdicts = {doc_id: not list(oracle(tightened).iter_errors(json.loads((storage / f"{doc_id}.json")
                                                                                  .read_bytes())))
                         for doc_id in expected}
    assert any(snapshot_verdicts[doc_id] != (not paths) for doc_id, (_, paths) in expected.items())
    (storage / f"{deleted}.lock").unlink()  # a lock file the check must not make again
    before = store_files(storage)

    code, report = check_json(tmp_path, "--schema", str(tightened), "--storage-dir", str(storage))

    assert store_files(storage) == before
    invalid = {doc_id: paths for doc_id, (_, paths) in expected.items() if paths}
    assert code == 1 and invalid
    assert verdicts_of(report) == {doc_id: len(paths) for doc_id, paths in invalid.items()}
    assert {item["doc_id"]: item["version"] for item in report["invalid_documents"]} == {
        doc_id: expected[doc_id][0] for doc_id in invalid}
    for item in report["invalid_documents"]:
        assert [violation["path"] for violation in item["violations"]] == invalid[item["doc_id"]][:3]
    assert (report["documents"], report["checked"], report["valid"], report["invalid"]) == (
        len(expected), len(expected), len(expected) - len(invalid), len(invalid))
    assert report["deleted"] == 1 and report["deleted_checked"] is False and report["unreadable"] == 0
    assert report["schema_digest"].startswith("sha256:")
    # by path pattern: every chapter without an isbn is one violation of /chapters/*/isbn
    live_missing = {doc_id: count for doc_id, count in missing.items() if doc_id in expected and count}
    isbn = report["by_path"]["/chapters/*/isbn"]
    assert isbn["violations"] == sum(live_missing.values()) and isbn["documents"] == len(live_missing)
    assert set(isbn["examples"]) <= set(live_missing) and len(isbn["examples"]) == min(3, len(live_missing))
    long_titles = [doc_id for doc_id, (_, paths) in expected.items() if "/title" in paths]
    assert report["by_path"].get("/title", {"violations": 0})["violations"] == len(long_titles)
    assert report["by_code"]["required-missing"]["violations"] == sum(live_missing.values())
    assert report["by_code"].get("max-length", {"documents": 0})["documents"] == len(long_titles)

    # deleted documents are checked on request, and counted with the others
    code, with_deleted = check_json(tmp_path, "--schema", str(tightened), "--storage-dir", str(storage),
                                    "--include-deleted")
    assert with_deleted["checked"] == len(expected) + 1 and with_deleted["deleted_checked"] is True
    assert store_files(storage) == before

    # the text summary names the patterns and the counts
    text = schemadoc(tmp_path, "check", "--schema", str(tightened), "--storage-dir", str(storage))
    assert text.returncode == 1 and text.stderr == b""  # no progress bar when stderr is not a terminal
    out = text.stdout.decode()
    assert f"{len(expected) - len(invalid)} valid, {len(invalid)} invalid" in out
    assert "/chapters/*/isbn" in out and "1 deleted document not checked" in out

    # under the schema the documents were written with, every one is valid
    code, report = check_json(tmp_path, "--schema", str(BOOK_SCHEMA), "--storage-dir", str(storage))
    assert code == 0 and report["valid"] == len(expected) and report["invalid_documents"] == []
    assert store_files(storage) == before


def test_exit_codes(tmp_path: Path) -> None:
    storage = tmp_path / "data"
    with Server(storage, tmp_path / "logs") as server, httpx.Client(base_url=f"{server.url}/api/v1") as http:
        doc_id = http.post("/documents").json()["doc_id"]
    ok = schemadoc(tmp_path, "check", "--example", "book", "--storage-dir", str(storage))
    assert ok.returncode == 0, ok.stderr.decode()
    assert "1 valid, 0 invalid" in ok.stdout.decode()
    assert schemadoc(tmp_path, "check", "--schema", str(tightened_schema(tmp_path)), "--storage-dir",
                     str(storage)).returncode == 1
    usage = schemadoc(tmp_path, "check", "--schema", str(BOOK_SCHEMA), "--example", "book", "--storage-dir",
                      str(storage))
    assert usage.returncode == 2 and b"config-invalid" in usage.stderr
    assert schemadoc(tmp_path, "check", "--no-such-flag").returncode == 2
    broken = tmp_path / "broken.schema.json"
    broken.write_text('{"type": "nothing-like-a-type"}')
    unusable = schemadoc(tmp_path, "check", "--schema", str(broken), "--storage-dir", str(storage))
    assert unusable.returncode == 3 and b"schema-load-failed" in unusable.stderr
    missing = schemadoc(tmp_path, "check", "--example", "book", "--storage-dir", str(tmp_path / "nowhere"))
    assert missing.returncode == 4 and b"storage-read-failed" in missing.stderr
    assert not (tmp_path / "nowhere").exists()
    # a document that cannot be read is named, and makes it a storage failure
    (storage / f"{doc_id}.journal.jsonl").write_bytes(b"not a journal\n")
    damaged = schemadoc(tmp_path, "check", "--example", "book", "--storage-dir", str(storage), "--json")
    assert damaged.returncode == 4
    assert [item["doc_id"] for item in orjson.loads(damaged.stdout)["unreadable_documents"]] == [doc_id]


class Writer(threading.Thread):
    """Sets titles of the documents until stopped; remembers the last title acknowledged for each."""

    def __init__(self, url: str, doc_ids: list[str]) -> None:
        super().__init__(daemon=True)
        self.url, self.doc_ids = url, doc_ids
        self.last: dict[str, str] = {}
        self.stopping = threading.Event()
        self.errors: list[str] = []

    def run(self) -> None:
        number = 0
        with httpx.Client(base_url=f"{self.url}/api/v1", timeout=30) as http:
            while not self.stopping.is_set():
                doc_id = self.doc_ids[number % len(self.doc_ids)]
                title = f"T{number}"
                answer = http.put(f"/documents/{doc_id}", params={"path": "/title"}, json={"node_data": title},
                                  headers={"If-Match": "*"})
                if answer.status_code == 200:
                    self.last[doc_id] = title
                else:
                    self.errors.append(answer.text)
                number += 1


def test_beside_a_running_server_that_keeps_writing(tmp_path: Path) -> None:
    storage = tmp_path / "data"
    tightened = tightened_schema(tmp_path)
    with Server(storage, tmp_path / "logs", settings=LAGGING) as server, \
            httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as http:
        write_books(http, 12, seed=7)
        # idle server: the check changes no file of the store (listing, sizes and mtimes)
        before = store_files(storage)
        code, report = check_json(tmp_path, "--schema", str(tightened), "--storage-dir", str(storage))
        assert code == 1 and report["checked"] == 12
        assert store_files(storage) == before
        # a writer keeps writing while checks run: every check completes, every write is acknowledged and kept
        doc_ids = [item["doc_id"] for item in http.get("/documents").json()["documents"]]
        writer = Writer(server.url, doc_ids)
        writer.start()
        try:
            for _ in range(3):
                code, report = check_json(tmp_path, "--schema", str(BOOK_SCHEMA), "--storage-dir", str(storage))
                assert code == 0 and report["checked"] == 12 and report["unreadable"] == 0
        finally:
            writer.stopping.set()
            writer.join(timeout=60)
        assert writer.errors == [] and len(writer.last) == 12
        for doc_id, title in writer.last.items():
            assert http.get(f"/documents/{doc_id}").json()["node_content"]["title"] == title
        # what the check judged is what the server serves: titles T... are valid under the tightened schema
        # when short enough (python-jsonschema says which)
        expected = expected_verdicts(http, oracle(tightened))
        code, report = check_json(tmp_path, "--schema", str(tightened), "--storage-dir", str(storage))
        assert verdicts_of(report) == {doc_id: len(paths) for doc_id, (_, paths) in expected.items() if paths}


@pytest.fixture
def postgres_url() -> Iterator[str]:
    with throwaway_schema() as url:
        yield url


@pytest.mark.postgres
def test_postgresql_store(tmp_path: Path, postgres_url: str) -> None:
    tightened = tightened_schema(tmp_path)
    with Server(tmp_path / "unused", tmp_path / "logs", storage_url=postgres_url, settings=LAGGING) as server, \
            httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as http:
        missing = write_books(http, 10, seed=5)
        expected = expected_verdicts(http, oracle(tightened))
        server.kill()  # the snapshots lag their journals
    import psycopg

    from schemadoc.storage.postgres.connections import split_schema

    plain, schema = split_schema(postgres_url)
    with psycopg.connect(plain) as conn:
        lag = conn.execute(f'SELECT count(*) FROM "{schema}".documents WHERE snapshot_version < version').fetchone()
    assert lag is not None and lag[0] == len(expected)
    code, report = check_json(tmp_path, "--schema", str(tightened), "--storage-url", postgres_url)
    invalid = {doc_id: paths for doc_id, (_, paths) in expected.items() if paths}
    assert code == 1 and verdicts_of(report) == {doc_id: len(paths) for doc_id, paths in invalid.items()}
    assert report["by_path"]["/chapters/*/isbn"]["violations"] == sum(missing.values())
    # beside a server that keeps writing: every check completes, every write lands
    with Server(tmp_path / "unused", tmp_path / "logs", storage_url=postgres_url) as server, \
            httpx.Client(base_url=f"{server.url}/api/v1", timeout=30) as http:
        writer = Writer(server.url, list(expected))
        writer.start()
        try:
            for _ in range(2):
                code, report = check_json(tmp_path, "--schema", str(BOOK_SCHEMA), "--storage-url", postgres_url)
                assert code == 0 and report["checked"] == len(expected) and report["unreadable"] == 0
        finally:
            writer.stopping.set()
            writer.join(timeout=60)
        assert writer.errors == [] and writer.last
        for doc_id, title in writer.last.items():
            assert http.get(f"/documents/{doc_id}").json()["node_content"]["title"] == title
    # a PostgreSQL schema without schemadoc's tables is a storage failure, and is not created
    separator = "&" if "?" in plain else "?"
    absent = f"{plain}{separator}schema={schema}_absent"
    result = schemadoc(tmp_path, "check", "--schema", str(tightened), "--storage-url", absent)
    assert result.returncode == 4 and b"storage-read-failed" in result.stderr
    with psycopg.connect(plain) as conn:
        assert conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (f"{schema}_absent",)).fetchone() is None


def test_a_progress_bar_on_a_terminal_and_only_there(tmp_path: Path) -> None:
    import pty

    storage = tmp_path / "data"
    with Server(storage, tmp_path / "logs") as server, httpx.Client(base_url=f"{server.url}/api/v1") as http:
        for _ in range(3):
            http.post("/documents")
    master, slave = pty.openpty()
    env = {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}
    process = subprocess.Popen([sys.executable, "-m", "schemadoc", "check", "--example", "book", "--storage-dir",
                                str(storage), "--json"], cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=slave)
    os.close(slave)
    shown = bytearray()
    reader = threading.Thread(target=lambda: _drain(master, shown), daemon=True)
    reader.start()
    out, _ = process.communicate(timeout=COMMAND_TIMEOUT_SECONDS)
    reader.join(timeout=10)
    os.close(master)
    assert process.returncode == 0
    assert orjson.loads(out)["checked"] == 3  # stdout holds the JSON alone
    assert b"checking:" in shown and b"/3 [" in shown


def _drain(fd: int, into: bytearray) -> None:
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # the other end closed
            return
        if not chunk:
            return
        into.extend(chunk)
