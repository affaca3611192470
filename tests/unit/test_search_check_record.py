"""Verdicts recorded outside a server reach the shared search index (docs/search.md, docs/schema-changes.md).

A service runs on a store whose documents were written under the book schema; it serves a tightened one, so
its ``valid`` filters select nothing (every document is unchecked under it). ``schemadoc check --record``, in
another process, records the verdicts in the store and writes them into the shared index: the running
service's ``valid=false`` list shows the invalid documents at once, without a restart. On the files store
(the SQLite index file in the storage directory) and PostgreSQL (tables shared by every server; skipped with
the reason when absent).

Then the races underneath, on the index alone: a change applied at run time reads its document's meta again
under the document's index lock, so a verdict recorded (and indexed) by another process is never written over
with an older meta of the same version, and ``index_verdicts`` writes only over the very version indexed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from pg_support import throwaway_schema

from schemadoc.config import ENVIRONMENT, Settings
from schemadoc.interfaces.startup import create_service
from schemadoc.search.backends import SqliteBackend
from schemadoc.search.fields import parse_query
from schemadoc.search.index import SearchIndex
from schemadoc.search.verdicts import index_verdicts, served_digest
from schemadoc.storage.base import DocumentMeta
from schemadoc.storage.verdict import Verdict

BOOK = Path(__file__).resolve().parents[2] / "src" / "schemadoc" / "examples" / "book.schema.json"
COMMAND_TIMEOUT_SECONDS = 300


def tightened(directory: Path) -> Path:
    """The book schema with a title of at most 5 characters."""
    schema = json.loads(BOOK.read_text())
    schema["properties"]["title"]["maxLength"] = 5
    path = directory / "tightened.schema.json"
    path.write_text(json.dumps(schema))
    return path


def check(cwd: Path, *args: str) -> tuple[int, dict[str, Any], str]:
    env = {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}
    done = subprocess.run([sys.executable, "-m", "schemadoc", "check", *args, "--json"], cwd=cwd, env=env,
                          capture_output=True, timeout=COMMAND_TIMEOUT_SECONDS, check=False)
    return done.returncode, orjson.loads(done.stdout) if done.stdout else {}, done.stderr.decode()


@pytest.fixture(params=["files", "postgres"])
def storage(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[Path, str | None]]:
    if request.param == "postgres":
        with throwaway_schema() as url:
            yield tmp_path / "unused", url
        return
    yield tmp_path / "data", None


def listed(service: Any, valid: bool) -> set[str]:
    return {meta.doc_id for meta in service.list_documents(valid=valid).documents}


def test_check_record_in_another_process_shows_in_the_running_servers_valid_filter(
        storage: tuple[Path, str | None], tmp_path: Path) -> None:
    storage_dir, url = storage
    location = ["--storage-dir", str(storage_dir)] + (["--storage-url", url] if url else [])
    writer = create_service(Settings(schema_path=BOOK, storage_dir=storage_dir, storage_url=url))
    try:
        long = [writer.create_document({"title": f"A long title {i}"})[0] for i in range(3)]
        short = [writer.create_document({"title": f"T{i}"})[0] for i in range(2)]
    finally:
        writer.close()
    strict = tightened(tmp_path)
    server = create_service(Settings(schema_path=strict, storage_dir=storage_dir, storage_url=url))
    try:
        assert listed(server, False) == set() == listed(server, True)  # unchecked under the served schema
        # a schema the server does not serve: refused, nothing recorded
        code, _, stderr = check(tmp_path, "--schema", str(BOOK), *location, "--record")
        assert code == 2 and "config-invalid" in stderr, stderr
        code, report, stderr = check(tmp_path, "--schema", str(strict), *location)  # without --record: no write
        assert code == 1 and "recorded" not in report, stderr
        assert listed(server, False) == set()
        code, report, stderr = check(tmp_path, "--schema", str(strict), *location, "--record")
        assert code == 1, stderr
        assert (report["recorded"], report["indexed"], report["invalid"]) == (5, 5, 3)
        # the running server answers from the shared index: no restart, no write, no inventory
        assert listed(server, False) == set(long)
        assert listed(server, True) == set(short)
        counts = server.verdict_counts()
        assert (counts["valid"], counts["invalid"], counts["unchecked"]) == (2, 3, 0)
        # the verdicts are the store's too: a second run finds them known and records nothing
        code, report, _ = check(tmp_path, "--schema", str(strict), *location, "--record")
        assert (report["recorded"], report["already_recorded"], report["indexed"]) == (0, 5, 0)
        # a repair written by the server replaces the check's verdict, in the store and in the index
        fixed = server.update_node(long[0], "/title", "Short", 1)
        assert fixed.report.valid
        assert listed(server, False) == set(long[1:])
        assert listed(server, True) == {*short, long[0]}
    finally:
        server.close()
    # the next start agrees with what the index holds (nothing to catch up, nothing lost)
    again = create_service(Settings(schema_path=strict, storage_dir=storage_dir, storage_url=url))
    try:
        assert listed(again, False) == set(long[1:])
    finally:
        again.close()


# -- the races, on the index alone ----------------------------------------------------------------------------------

DIGEST = "served-schema"
DOC_ID = "01ARZ3NDEKTSV4RRFFQ69G5FA0"


def _status(meta: DocumentMeta) -> bool | None:
    verdict = meta.verdict
    return None if verdict is None or verdict.digest != DIGEST or verdict.version != meta.version else verdict.valid


def _meta(version: int, valid: bool | None) -> DocumentMeta:
    verdict = None if valid is None else Verdict.of(version, DIGEST, [] if valid else [
        {"code": "max-length", "path": "/title", "message": "too long"}], 0 if valid else 1)
    return DocumentMeta(DOC_ID, version, "urn:test", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", 20,
                        verdict=verdict)


def _invalid_listed(index: SearchIndex) -> bool:
    return DOC_ID in index.find(parse_query([["valid", "eq", False]], None, []), limit=10).doc_ids


@pytest.mark.parametrize("change", ["meta_changed", "committed"])
def test_a_change_applied_later_never_writes_an_older_verdict_over_a_newer_one(tmp_path: Path, change: str) -> None:
    """The change carries the meta as it was when queued; the store has since recorded a check's verdict of the
    same version (and another process indexed it): the change applies the store's meta, read under the lock."""
    stored = {DOC_ID: _meta(1, None)}
    content = {"title": "A long title"}
    index = SearchIndex(SqliteBackend(tmp_path / "index.sqlite3"), [], _status, schema_digest=DIGEST)
    index.open(list(stored.values()), lambda doc_id: (stored[doc_id], content), lambda *_: [],
               lambda doc_ids: {d: stored[d] for d in doc_ids if d in stored})
    try:
        with index._apply_lock:  # the change waits in the queue
            if change == "meta_changed":  # this server recorded "valid"; a later check recorded "invalid"
                index.meta_changed(_meta(1, True))
            else:  # a write's own verdict, "valid"; a check of that version recorded "invalid" since
                stored[DOC_ID] = _meta(2, True)
                patch = [{"op": "replace", "path": "/title", "value": "A long title"}]
                index.committed(DOC_ID, stored[DOC_ID], content, patch)
            stored[DOC_ID] = _meta(stored[DOC_ID].version, False)
        index.sync()
        assert _invalid_listed(index)
    finally:
        index.close()


def test_index_verdicts_writes_only_over_the_version_indexed(tmp_path: Path) -> None:
    path = tmp_path / "index.sqlite3"
    stored = {DOC_ID: _meta(1, None)}
    content = {"title": "A long title"}
    unserved = SearchIndex(SqliteBackend(path), [], _status)  # an index no server recorded a schema in
    unserved.open(list(stored.values()), lambda doc_id: (stored[doc_id], content), lambda *_: [])
    unserved.close()
    backend = SqliteBackend(path)
    try:
        stored[DOC_ID] = _meta(1, False)
        assert served_digest(backend) is None
        assert index_verdicts(backend, [DOC_ID], lambda ids: {d: stored[d] for d in ids}) == 0
    finally:
        backend.close()
    index = SearchIndex(SqliteBackend(path), [], _status, schema_digest=DIGEST)
    index.open([_meta(1, None)], lambda doc_id: (stored[doc_id], content), lambda *_: [])  # as read before
    backend = SqliteBackend(path)
    try:
        assert served_digest(backend) == DIGEST
        # the store is at version 2 (a write another process has not indexed yet): that change will read the meta
        stored[DOC_ID] = _meta(2, False)
        assert index_verdicts(backend, [DOC_ID], lambda ids: {d: stored[d] for d in ids}) == 0
        stored[DOC_ID] = _meta(1, False)
        assert not _invalid_listed(index)
        assert index_verdicts(backend, [DOC_ID], lambda ids: {d: stored[d] for d in ids}) == 1
        assert _invalid_listed(index)
        assert index_verdicts(backend, [DOC_ID], lambda ids: {d: stored[d] for d in ids}) == 0  # already so
    finally:
        backend.close()
        index.close()
