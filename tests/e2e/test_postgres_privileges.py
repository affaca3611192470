"""The README's least-privilege setup, role by role, on a private cluster with real ``schemadoc`` processes.

- the owning role owns the schema but may not create anything in the database: ``schemadoc
  migrate`` creates and migrates the tables (and says "up to date" the second time);
- the server's role may only read and write rows (through the default privileges the owner
  grants): ``schemadoc serve`` starts and serves every kind of write, and cannot create a table;
- that role on a schema not migrated yet, or a role without access to the schema, does not
  start, with one clean line naming the remedy.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import psycopg
import pytest
from http_server import Server, free_port
from pg_cluster import PrivateCluster

from schemadoc.config import ENVIRONMENT

pytestmark = [pytest.mark.postgres, pytest.mark.timeout(300)]

COUNTER_SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "counter.schema.json"

# The README's "Least privilege" SQL, run as a superuser (database schemadoc already created).
SETUP = """
CREATE ROLE schemadoc_owner LOGIN PASSWORD 'owner-secret';
CREATE ROLE schemadoc_app LOGIN PASSWORD 'app-secret';
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
CREATE SCHEMA schemadoc AUTHORIZATION schemadoc_owner;
GRANT USAGE ON SCHEMA schemadoc TO schemadoc_app;
ALTER DEFAULT PRIVILEGES FOR ROLE schemadoc_owner IN SCHEMA schemadoc
    GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO schemadoc_app;
ALTER DEFAULT PRIVILEGES FOR ROLE schemadoc_owner IN SCHEMA schemadoc
    GRANT USAGE, SELECT ON SEQUENCES TO schemadoc_app;
"""


@pytest.fixture(scope="module")
def cluster() -> Iterator[PrivateCluster]:
    private = PrivateCluster()
    try:
        private.sql("CREATE DATABASE schemadoc")
        private.sql(SETUP, database="schemadoc")
        private.sql("CREATE ROLE stranger LOGIN", database="schemadoc")
        yield private
    finally:
        private.destroy()


def _schemadoc(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}
    return subprocess.run([sys.executable, "-m", "schemadoc", *args], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=120)


def _serve_once(cluster: PrivateCluster, url: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """A ``serve`` expected to stop at start-up."""
    return _schemadoc("serve", "--schema", str(COUNTER_SCHEMA), "--storage-url", url, "--port", str(free_port()),
                      cwd=cwd)


def test_the_owner_migrates_and_the_row_only_role_serves(cluster: PrivateCluster, tmp_path: Path) -> None:
    owner = cluster.url("schemadoc_owner", "schemadoc")
    app = cluster.url("schemadoc_app", "schemadoc")

    early = _serve_once(cluster, app, tmp_path)  # before the migration: a clean refusal naming the remedy
    assert early.returncode == 4  # storage: the exit code of a storage failure (README)
    assert early.stderr.startswith("schemadoc: storage-write-failed:")
    assert "schemadoc migrate" in early.stderr and "app-secret" not in early.stderr

    first = _schemadoc("migrate", "--storage-url", owner, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert "applied migration(s) 1, 2, 3, 4" in first.stdout
    again = _schemadoc("migrate", "--storage-url", owner, cwd=tmp_path)
    assert (again.returncode, again.stdout.strip()) == (0, "schema schemadoc: up to date")

    server = Server(tmp_path / "unused", tmp_path / "logs", storage_url=app, schema=COUNTER_SCHEMA, start_timeout=120)
    try:
        api = f"{server.url}/api/v1"
        created = httpx.post(f"{api}/documents", timeout=30)
        assert created.status_code == 201, created.text
        doc_id = created.json()["doc_id"]
        updated = httpx.put(f"{api}/documents/{doc_id}", params={"path": "/count"}, timeout=30,
                            json={"node_data": 1, "version": 1})
        assert updated.status_code == 200, updated.text
        assert httpx.get(f"{api}/changes", params={"since": 0}, timeout=30).status_code == 200
        deleted = httpx.delete(f"{api}/documents/{doc_id}", headers={"if-match": '"2"'}, timeout=30)
        assert deleted.status_code == 200, deleted.text
        purged = httpx.post(f"{api}/documents/{doc_id}/purge", headers={"if-match": '"3"'}, timeout=30)
        assert purged.status_code == 200, purged.text
        assert httpx.get(f"{server.url}/health/ready", timeout=30).status_code == 200
    finally:
        server.stop()
    assert "app-secret" not in server.stderr

    with psycopg.connect(app) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("CREATE TABLE schemadoc.intruder (x int)")  # the server's role really is row-only


def test_a_role_without_access_to_the_schema_does_not_start(cluster: PrivateCluster, tmp_path: Path) -> None:
    refused = _serve_once(cluster, cluster.url("stranger", "schemadoc"), tmp_path)
    assert refused.returncode == 4  # storage
    assert refused.stderr.startswith("schemadoc: storage-write-failed:")
    assert "Traceback" not in refused.stderr
