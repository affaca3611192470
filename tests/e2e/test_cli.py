"""The ``schemadoc`` command as a real subprocess: start-up failures, ``validate`` and ``replay``."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from schemadoc.config import ENVIRONMENT, Settings
from schemadoc.interfaces.app import create_service

ROOT = Path(__file__).resolve().parents[2]
BOOK_SCHEMA = ROOT / "schemas" / "book.schema.json"
TEST_SCHEMAS = ROOT / "tests" / "schemas"
STARTUP_LIMIT_SECONDS = 30.0
"""A failed start gives up at once instead of waiting (retrying, listening, hanging on a lock): it usually takes
2 s, but beside a loaded test worker it took over 5 s. How fast the command starts is measured by make
bench-startup, not asserted here."""
# the README's table: one exit code per kind of failure, whatever the command
EXIT_CODES = {"config-invalid": 2, "invalid-request": 2, "document-not-found": 2, "schema-load-failed": 3,
              "schema-resolution-failed": 3, "storage": 4, "store-format-unsupported": 4, "internal-error": 5}


def run(*args: str, cwd: Path, stdin: str | None = None) -> tuple[subprocess.CompletedProcess[str], float]:
    """``python -m schemadoc ARGS`` in ``cwd`` with none of schemadoc's variables in its environment but PORT=0."""
    env = {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}
    env["PORT"] = "0"  # any free port: the failures under test must not depend on what holds 8080
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "schemadoc", *args], cwd=cwd, env=env, input=stdin,
                          capture_output=True, text=True, timeout=60, check=False)
    return done, time.monotonic() - started


def assert_one_line_failure(done: subprocess.CompletedProcess[str], elapsed: float, code: str) -> str:
    """One line naming the error (a schema's problems follow it, one indented line each)."""
    assert done.returncode == EXIT_CODES[code.split("-")[0] if code.startswith("storage-") else code]
    assert elapsed < STARTUP_LIMIT_SECONDS, f"took {elapsed:.1f} s"
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 or (code.startswith("schema-") and all(line.startswith("  ") for line in lines[1:])), \
        done.stderr
    assert lines[0].startswith(f"schemadoc: {code}: "), lines[0]
    assert " — " in lines[0]  # the remediation follows the message
    assert done.stdout == ""
    return lines[0]


# -- start-up failures -----------------------------------------------------------------------


def test_serving_without_a_schema_says_how_to_give_one(tmp_path: Path) -> None:
    done, elapsed = run("serve", "--storage-dir", str(tmp_path / "data"), cwd=tmp_path)
    line = assert_one_line_failure(done, elapsed, "schema-load-failed")
    assert "--schema" in line and "SCHEMA_PATH" in line


@pytest.mark.parametrize(("schema", "code"), [
    ("missing.schema.json", "schema-load-failed"),
    (str(TEST_SCHEMAS / "not_a_schema.schema.json"), "schema-load-failed"),
    (str(TEST_SCHEMAS / "ref_cycle.schema.json"), "schema-resolution-failed"),
    (str(TEST_SCHEMAS / "unresolvable_ref.schema.json"), "schema-resolution-failed"),
])
def test_a_bad_schema_stops_the_server_at_once_with_one_line(tmp_path: Path, schema: str, code: str) -> None:
    done, elapsed = run("serve", "--schema", schema, "--storage-dir", str(tmp_path / "data"), cwd=tmp_path)
    assert_one_line_failure(done, elapsed, code)
    assert not (tmp_path / "data").exists()


def test_a_storage_directory_that_cannot_be_created_stops_the_server(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("not a directory")
    done, elapsed = run("serve", "--schema", str(BOOK_SCHEMA), "--storage-dir", str(tmp_path / "a-file" / "data"),
                        cwd=tmp_path)
    assert_one_line_failure(done, elapsed, "storage-write-failed")


@pytest.mark.parametrize("args", [
    ("--port", "eighty"),
    ("--log-level", "chatty"),
    ("--config", "absent.json"),
])
def test_a_bad_setting_stops_the_server_with_config_invalid(tmp_path: Path, args: tuple[str, str]) -> None:
    done, elapsed = run("serve", "--schema", str(BOOK_SCHEMA), *args, cwd=tmp_path)
    line = assert_one_line_failure(done, elapsed, "config-invalid")
    assert args[1] in line


def test_a_config_file_that_is_not_json_stops_the_server(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text("{port: 1}")
    done, elapsed = run("serve", "--schema", str(BOOK_SCHEMA), cwd=tmp_path)
    assert_one_line_failure(done, elapsed, "config-invalid")


def test_a_port_in_use_stops_the_server_with_config_invalid(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done, elapsed = run("serve", "--schema", str(BOOK_SCHEMA), "--storage-dir", str(tmp_path / "data"),
                            "--port", str(port), cwd=tmp_path)
    line = assert_one_line_failure(done, elapsed, "config-invalid")
    assert str(port) in line


def test_version_and_help_work_and_an_unknown_command_is_a_usage_error(tmp_path: Path) -> None:
    version, _ = run("--version", cwd=tmp_path)
    assert version.returncode == 0 and version.stdout.startswith("schemadoc ")
    help_, _ = run("--help", cwd=tmp_path)
    assert help_.returncode == 0 and "serve" in help_.stdout and "replay" in help_.stdout
    unknown, _ = run("frobnicate", cwd=tmp_path)
    assert unknown.returncode == 2


# -- validate --------------------------------------------------------------------------------


VALID_BOOK: dict[str, Any] = {
    "title": "Dune",
    "metadata": {"language": "en", "status": "published", "edition": 1, "author": "Frank Herbert"},
    "chapters": [{"id": "ch-1", "title": "One", "sections": [{"title": "Arrakis", "paragraphs": [{"text": "Hi."}]}]}],
}


def test_validate_checks_the_bundled_schema(tmp_path: Path) -> None:
    done, _ = run("validate", "--schema", str(BOOK_SCHEMA), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "schema ok" in done.stdout


def test_validate_accepts_a_valid_document(tmp_path: Path) -> None:
    (tmp_path / "book.json").write_text(json.dumps(VALID_BOOK))
    done, _ = run("validate", "--schema", str(BOOK_SCHEMA), "book.json", cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "valid" in done.stdout


def test_validate_prints_every_violation_of_an_invalid_document(tmp_path: Path) -> None:
    bad = {**VALID_BOOK, "title": "", "metadata": {**VALID_BOOK["metadata"], "edition": 0}, "extra": True}
    (tmp_path / "bad.json").write_text(json.dumps(bad))
    done, _ = run("validate", "--schema", str(BOOK_SCHEMA), "bad.json", cwd=tmp_path)
    assert done.returncode == 1
    rows = [line.split("\t") for line in done.stdout.splitlines() if "\t" in line]
    assert sorted((path, code) for path, code, _ in rows) == [
        ("/", "additional-properties-forbidden"), ("/metadata/edition", "minimum"), ("/title", "min-length")]
    assert "3 violations" in done.stdout


def test_validate_reports_json_on_request_and_reads_stdin(tmp_path: Path) -> None:
    done, _ = run("validate", "--schema", str(BOOK_SCHEMA), "--json", "-", cwd=tmp_path,
                  stdin=json.dumps({**VALID_BOOK, "title": 5}))
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["valid"] is False
    assert [e["code"] for e in report["errors"]] == ["type-mismatch"]


@pytest.mark.parametrize(("content", "code"), [(None, "invalid-request"), ("{oops", "invalid-request")])
def test_validate_exits_2_when_the_document_cannot_be_read(tmp_path: Path, content: str | None, code: str) -> None:
    if content is not None:
        (tmp_path / "doc.json").write_text(content)
    done, elapsed = run("validate", "--schema", str(BOOK_SCHEMA), "doc.json", cwd=tmp_path)
    assert done.returncode == 2
    assert_one_line_failure(done, elapsed, code)


def test_validate_exits_3_as_serve_does_when_the_schema_cannot_be_loaded(tmp_path: Path) -> None:
    done, elapsed = run("validate", "--schema", str(TEST_SCHEMAS / "ref_cycle.schema.json"), cwd=tmp_path)
    assert done.returncode == 3
    assert_one_line_failure(done, elapsed, "schema-resolution-failed")


# -- replay ----------------------------------------------------------------------------------


def written_document(storage: Path) -> str:
    """A document with a few versions, written through the engine."""
    service = create_service(Settings(schema_path=BOOK_SCHEMA, storage_dir=storage))
    doc_id, *_ = service.create_document()
    service.update_node(doc_id, "/title", "Dune", 1)
    service.create_node(doc_id, "/tags/-", "sf", 2)
    service.apply_patch(doc_id, [{"op": "add", "path": "/tags/0", "value": "classic"}], 3)
    service.delete_node(doc_id, "/tags/1", 4)
    service.close()  # a clean shutdown: the snapshot is current
    return doc_id


def test_replay_rebuilds_a_document_equal_to_its_snapshot(tmp_path: Path) -> None:
    storage = tmp_path / "data"
    doc_id = written_document(storage)
    done, _ = run("replay", doc_id, "--storage-dir", str(storage), "--schema", str(BOOK_SCHEMA), cwd=tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "versions 1..5" in done.stdout
    assert done.stdout.strip().endswith("equal")


def test_replay_finds_a_snapshot_that_differs_from_the_journal(tmp_path: Path) -> None:
    storage = tmp_path / "data"
    doc_id = written_document(storage)
    snapshot = storage / f"{doc_id}.json"
    snapshot.write_bytes(snapshot.read_bytes().replace(b'"Dune"', b'"Dusk"'))  # same size: not repaired
    done, _ = run("replay", doc_id, "--storage-dir", str(storage), cwd=tmp_path)
    assert done.returncode == 1
    assert "/title" in done.stdout
    assert done.stdout.strip().endswith("different")


def test_replay_of_an_unknown_document_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    done, elapsed = run("replay", "01ARZ3NDEKTSV4RRFFQ69G5FAV", "--storage-dir", str(tmp_path / "data"), cwd=tmp_path)
    assert done.returncode == 2
    assert_one_line_failure(done, elapsed, "document-not-found")
