"""Store format versions through the real command: an unmarked files store is upgraded by ``serve`` and reads as
before; a newer files store or PostgreSQL schema is refused by every command that opens it (exit 4, one line),
and left untouched."""

from __future__ import annotations

from pathlib import Path

import httpx
import orjson
import pytest
from http_server import Server
from pg_support import throwaway_schema
from test_cli import BOOK_SCHEMA, assert_one_line_failure, run

from schemadoc.storage.store_format import CURRENT_FORMAT, FORMAT_FILE


def files_of(directory: Path) -> dict[str, tuple[bytes, int]]:
    return {str(path.relative_to(directory)): (path.read_bytes(), path.stat().st_mtime_ns)
            for path in sorted(directory.rglob("*")) if path.is_file()}


def a_store_with_documents(root: Path) -> tuple[Path, dict[str, dict[str, object]]]:
    """A storage directory with two documents (one written twice), and each document's content."""
    storage = root / "data"
    contents: dict[str, dict[str, object]] = {}
    with Server(storage, root / "first") as server:
        for title in ("One", "Two"):
            created = httpx.post(f"{server.url}/api/v1/documents", json={}, timeout=30).json()
            doc_id = created["doc_id"]
            httpx.put(f"{server.url}/api/v1/documents/{doc_id}", params={"path": "/title"},
                      json={"node_data": title, "version": 1}, timeout=30).raise_for_status()
            contents[doc_id] = httpx.get(f"{server.url}/api/v1/documents/{doc_id}", timeout=30).json()
        assert server.stop() == 0
    return storage, contents


def test_an_unmarked_store_is_upgraded_and_reads_as_before(tmp_path: Path) -> None:
    storage, contents = a_store_with_documents(tmp_path)
    (storage / FORMAT_FILE).unlink()  # the directory as the releases before format versions left it
    for doc_id in contents:
        done, _ = run("replay", doc_id, "--storage-dir", str(storage), cwd=tmp_path)
        assert done.returncode == 0, done.stderr  # a read-only command reads it as it is
    assert not (storage / FORMAT_FILE).exists()
    with Server(storage, tmp_path / "second") as server:
        for doc_id, content in contents.items():
            assert httpx.get(f"{server.url}/api/v1/documents/{doc_id}", timeout=30).json() == content
        assert server.stop() == 0
        assert f"store format {CURRENT_FORMAT} recorded in {FORMAT_FILE} (found no marker)" in server.stderr
    assert orjson.loads((storage / FORMAT_FILE).read_bytes())["format"] == CURRENT_FORMAT


def test_a_newer_store_is_refused_by_every_command_and_left_untouched(tmp_path: Path) -> None:
    storage, contents = a_store_with_documents(tmp_path)
    newer = CURRENT_FORMAT + 1
    (storage / FORMAT_FILE).write_bytes(orjson.dumps({"format": newer, "written_by": "schemadoc 9"}))
    before = files_of(storage)
    doc_id = next(iter(contents))
    for command in (("serve", "--schema", str(BOOK_SCHEMA), "--storage-dir", str(storage)),
                    ("replay", doc_id, "--storage-dir", str(storage))):
        done, elapsed = run(*command, cwd=tmp_path)
        line = assert_one_line_failure(done, elapsed, "store-format-unsupported")
        assert f"has store format {newer}" in line and f"knows formats up to {CURRENT_FORMAT}" in line
        assert "restore the backup" in line
        assert done.returncode == 4
    assert files_of(storage) == before


@pytest.mark.postgres
def test_a_database_migrated_by_a_newer_server_is_refused(tmp_path: Path) -> None:
    import psycopg
    from psycopg import sql

    from schemadoc.storage.postgres.connections import split_schema
    from schemadoc.storage.postgres.migrations import MIGRATIONS

    with throwaway_schema() as url:
        done, _ = run("migrate", "--storage-url", url, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        plain, schema = split_schema(url)
        assert schema is not None
        newer = MIGRATIONS[-1][0] + 1
        with psycopg.connect(plain, autocommit=True) as conn:
            conn.execute(sql.SQL("INSERT INTO {}.schema_migrations (version, description) VALUES (%s, %s)").format(
                sql.Identifier(schema)), (newer, "a migration of a newer schemadoc"))
        for command in (("serve", "--schema", str(BOOK_SCHEMA), "--storage-url", url),
                        ("migrate", "--storage-url", url)):
            done, elapsed = run(*command, cwd=tmp_path)
            line = assert_one_line_failure(done, elapsed, "store-format-unsupported")
            assert f"is at migration {newer}" in line and f"knows migrations up to {newer - 1}" in line
        with psycopg.connect(plain, autocommit=True) as conn:
            versions = conn.execute(sql.SQL("SELECT version FROM {}.schema_migrations ORDER BY version").format(
                sql.Identifier(schema))).fetchall()
        assert [row[0] for row in versions] == [*(version for version, _, _ in MIGRATIONS), newer]
