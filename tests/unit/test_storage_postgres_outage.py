"""The PostgreSQL store when the database is out, refuses the login or drops a commit; channel names; URLs.

Outages use a private cluster the tests stop and start (never the shared server).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace

import psycopg
import pytest
from contract.storage import create_document, current_content
from pg_cluster import PrivateCluster
from pg_support import drop_schema, require_postgres, url_with_schema

from schemadoc.config import load_settings
from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry
from schemadoc.storage.postgres import PostgresDocumentStore
from schemadoc.storage.postgres.connections import PROBE_INTERVAL_SECONDS
from schemadoc.storage.postgres.notifications import channel_name

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def cluster() -> Iterator[PrivateCluster]:
    with PrivateCluster() as private:
        yield private


@pytest.fixture
def store(cluster: PrivateCluster) -> Iterator[PostgresDocumentStore]:
    opened = PostgresDocumentStore(f"{cluster.url()}?schema=outage_unit")
    opened.open()
    try:
        yield opened
    finally:
        opened.close()


def _unavailable(error: SchemaDocError) -> None:
    assert (error.code, error.status) == ("storage-unavailable", 503)
    assert error.details["retry_after_seconds"] == 2
    assert error.details["reason"]


def test_while_the_database_is_down_reads_writes_and_readiness_are_storage_unavailable_and_back_after(
        cluster: PrivateCluster, store: PostgresDocumentStore) -> None:
    meta = create_document(store, {"n": 0})
    assert store.problem() is None
    cluster.stop()
    try:
        for attempt in (lambda: store.load(meta.doc_id), lambda: store.read_meta(meta.doc_id),
                        lambda: store.list_metas(), lambda: store.read_changes(0, 10),
                        lambda: create_document(store, {"n": 1})):
            with pytest.raises(SchemaDocError) as raised:
                attempt()
            _unavailable(raised.value)
        problem = store.problem()
        assert problem is not None
        _unavailable(problem)
    finally:
        cluster.start()
    time.sleep(PROBE_INTERVAL_SECONDS)
    assert current_content(store, meta.doc_id) == {"n": 0}  # the first request after reopens the pool
    assert store.problem() is None


def test_a_commit_whose_connection_breaks_says_its_outcome_is_unknown(cluster: PrivateCluster,
                                                                      store: PostgresDocumentStore) -> None:
    meta = create_document(store, {"n": 0})
    entry = JournalEntry(2, "patch", [{"op": "replace", "path": "/n", "value": 1}], meta.modified_at)
    with store.write_lock(meta.doc_id):
        held = store._held.locks[meta.doc_id]
        with psycopg.connect(cluster.url(), autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(%s)", (held.info.backend_pid,))
        with pytest.raises(SchemaDocError) as raised:
            store.commit(replace(meta, version=2), entry)
    error = raised.value
    assert (error.code, error.status) == ("commit-outcome-unknown", 503)
    assert (error.details["version"], error.details["expected_version"]) == (2, 1)
    assert "read" in (error.remediation or error.entry.remediation).lower()
    time.sleep(PROBE_INTERVAL_SECONDS)
    assert store.read_meta(meta.doc_id).version in (1, 2)  # the store serves again; reading tells


def test_a_refused_login_is_storage_unavailable_with_the_cause_and_without_the_password(
        cluster: PrivateCluster) -> None:
    cluster.sql("DO $$ BEGIN CREATE ROLE pw_user LOGIN PASSWORD 'right-password'; "
                "EXCEPTION WHEN duplicate_object THEN NULL; END $$")
    hba = cluster.data / "pg_hba.conf"
    if "pw_user" not in hba.read_text():
        hba.write_text("host all pw_user 127.0.0.1/32 scram-sha-256\n" + hba.read_text())
        cluster.sql("SELECT pg_reload_conf()")
    store = PostgresDocumentStore(cluster.url("pw_user", "postgres", "wr0ng-Secret"))
    with pytest.raises(SchemaDocError) as raised:
        store.open()
    _unavailable(raised.value)
    assert "password authentication failed" in raised.value.message
    assert "wr0ng-Secret" not in str(raised.value.to_dict())


def test_notify_channels_stay_within_63_bytes_and_long_names_stay_distinct() -> None:
    assert channel_name("schemadoc") == "schemadoc:schemadoc"
    long_names = ["é" * 27, "é" * 26 + "e", "s" * 63, "s" * 62 + "t"]
    channels = [channel_name(name) for name in long_names]
    assert all(len(channel.encode()) <= 63 for channel in channels)
    assert len(set(channels)) == len(long_names)  # a cut by characters or bytes would merge these


def test_a_store_on_a_schema_named_with_54_bytes_of_accents_commits_and_notifies() -> None:
    require_postgres()
    schema = "é" * 27
    try:
        writer, listener = (PostgresDocumentStore(url_with_schema(schema)) for _ in range(2))
        writer.open()
        listener.open()
        heard: list[object] = []
        listener.watch(heard.append)
        meta = create_document(writer, {"n": 0})
        deadline = time.monotonic() + 10
        while not heard and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [getattr(notice, "doc_id", None) for notice in heard] == [meta.doc_id]
        writer.close()
        listener.close()
    finally:
        drop_schema(schema)


@pytest.mark.parametrize("url", [
    "postgresql://user:p@ss@127.0.0.1:5432/db",
    "postgresql://user:pa#ss@127.0.0.1:5432/db",
    "postgresql://user:secret-pw@[127.0.0.1:5432/db",
    "postgresql://user:secret-pw@127.0.0.1:99999/db",
    "mysql://user:secret-pw@127.0.0.1/db",
])
def test_a_bad_storage_url_is_config_invalid_and_never_shows_the_password(url: str) -> None:
    with pytest.raises(SchemaDocError) as raised:
        load_settings({"storage_url": url}, {}, require_schema=False)
    assert raised.value.code == "config-invalid"
    shown = str(raised.value.to_dict()) + raised.value.message
    for secret in ("p@ss", "pa#ss", "secret-pw"):
        assert secret not in shown


def test_the_store_itself_refuses_an_unparsable_url_as_config_invalid() -> None:
    with pytest.raises(SchemaDocError) as raised:
        PostgresDocumentStore("postgresql://user:secret-pw@[127.0.0.1:5432/db")
    assert raised.value.code == "config-invalid"
    assert "secret-pw" not in str(raised.value.to_dict())


def test_after_an_outage_nobody_noticed_the_first_read_is_served(cluster: PrivateCluster,
                                                                  store: PostgresDocumentStore) -> None:
    """Light traffic: the pooled connections died with the database unseen; the first request still succeeds."""
    meta = create_document(store, {"n": 0})
    cluster.stop()
    cluster.start()
    assert store.read_meta(meta.doc_id).version == 1
    assert current_content(store, meta.doc_id) == {"n": 0}
    assert [change.version for change in store.read_changes(0, 10) if change.doc_id == meta.doc_id] == [1]
