"""The PostgreSQL store's metas known current: reads without a round trip that never go stale behind a
commit this process heard of, and writes in two round trips (a service's write in one: its commit is conditional).

``CurrentMetas`` alone is checked against a model (Hypothesis); then two stores on one schema stand for
two server processes, as in ``test_storage_postgres.py``.
"""

from __future__ import annotations

import collections
import contextlib
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psycopg
import pytest
from contract.storage import commit_patch, create_document, delete_document
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pg_support import empty_tables, throwaway_schema

from schemadoc.errors import SchemaDocError
from schemadoc.storage.base import DocumentMeta
from schemadoc.storage.postgres import PostgresDocumentStore
from schemadoc.storage.postgres.current import CurrentMetas

NOTICE_TIMEOUT_SECONDS = 10.0


# -- CurrentMetas against a model ------------------------------------------------------------------

_DOCS = ("a", "b", "c")
_step = st.one_of(
    st.tuples(st.just("read"), st.sampled_from(_DOCS), st.integers(0, 1)),  # a read from the database: put later
    st.tuples(st.just("finish"), st.integers(0, 3)),  # the n-th read in flight is put now
    st.tuples(st.just("commit_other"), st.sampled_from(_DOCS)),  # another process commits and we hear it
    st.tuples(st.just("commit_own"), st.sampled_from(_DOCS)),
    st.tuples(st.just("meta_other"), st.sampled_from(_DOCS)),  # another process records a verdict
    st.tuples(st.just("lost"),), st.tuples(st.just("listening"),),
)


def _meta(doc_id: str, version: int, verdict_mark: int) -> DocumentMeta:
    return DocumentMeta(doc_id, version, "urn:s", "t", "t", 1, None, 1, f"digest-{verdict_mark}")


@settings(max_examples=300, deadline=None)
@given(st.lists(_step, max_size=40), st.sampled_from([1, 2, 100]))
@example([("listening",), ("read", "a", 0), ("commit_other", "a"), ("commit_other", "b"), ("finish", 0)], 1)
def test_a_meta_known_current_is_never_behind_the_database_once_a_change_was_heard(steps: list[Any],
                                                                                   kept: int) -> None:
    """The database's state is the model: whenever ``get`` answers, it answers what the database holds now
    (a change by another process counts once it was heard; trust needs ``listening``), however few metas and
    versions heard of are kept (``kept``: past it the oldest metas go, and what was heard is forgotten)."""
    current = CurrentMetas(kept)
    database = {doc_id: (1, 0) for doc_id in _DOCS}  # version, verdict mark
    in_flight: list[tuple[DocumentMeta, int]] = []
    for step in steps:
        kind = step[0]
        if kind == "read":
            version, mark = database[step[1]]
            in_flight.append((_meta(step[1], version, mark), current.epoch))
        elif kind == "finish" and in_flight:
            meta, epoch = in_flight.pop(step[1] % len(in_flight))
            current.put(meta, epoch)
        elif kind == "commit_other":
            version, mark = database[step[1]]
            database[step[1]] = (version + 1, mark)
            current.heard(step[1], version + 1, "updated")
        elif kind == "commit_own":
            version, mark = database[step[1]]
            database[step[1]] = (version + 1, mark)
            current.put(_meta(step[1], version + 1, mark), current.epoch)
        elif kind == "meta_other":
            version, mark = database[step[1]]
            database[step[1]] = (version, mark + 1)
            current.heard(step[1], version, "meta")
        elif kind == "lost":
            current.lost()
        else:
            current.listening()
        for doc_id in _DOCS:
            known = current.get(doc_id)
            if known is not None:
                assert (known.version, known.schema_digest) == (database[doc_id][0], f"digest-{database[doc_id][1]}")
        assert len(current) <= kept


def test_nothing_is_known_current_before_listening_or_after_the_connection_was_lost() -> None:
    current = CurrentMetas()
    current.put(_meta("a", 1, 0), current.epoch)
    assert current.get("a") is None  # not listening yet
    current.listening()
    current.put(_meta("a", 1, 0), current.epoch)
    assert current.get("a") == _meta("a", 1, 0)
    current.lost()
    assert current.get("a") is None
    current.listening()
    assert current.get("a") is None  # forgotten, not merely hidden


# -- two processes on one database ---------------------------------------------------------------------

pytestmark = pytest.mark.postgres


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    with throwaway_schema() as url:
        yield url


@pytest.fixture
def stores(postgres_url: str) -> Iterator[tuple[PostgresDocumentStore, PostgresDocumentStore]]:
    first = PostgresDocumentStore(postgres_url)
    first.open()
    empty_tables(postgres_url)
    second = PostgresDocumentStore(postgres_url)
    second.open()
    for store in (first, second):
        store.watch(lambda notice: None)  # a server always listens (the service watches a shared store)
    try:
        yield first, second
    finally:
        first.close()
        second.close()


class _RoundTrips:
    """Counts the statements a store sends and the pipelines (each one round trip) it sends them in, and the
    ``probes``: a write's pooled connection found readable while idle is asked ``SELECT 1`` before its commit (the
    server may have ended it). What an idle connection hears is the server's doing, not the write's: seen in
    whole-suite runs (every write of one test probed), never in this file alone."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.thread = threading.get_ident()
        execute, pipeline = psycopg.Connection.execute, psycopg.Connection.pipeline
        counts = self.counts

        def counted_execute(conn: Any, *args: Any, **kwargs: Any) -> Any:
            if threading.get_ident() == self.thread:
                counts["pipelined" if conn._pipeline is not None else "round trips"] += 1
            return execute(conn, *args, **kwargs)

        @contextlib.contextmanager
        def counted_pipeline(conn: Any) -> Iterator[Any]:
            if threading.get_ident() == self.thread:
                counts["round trips"] += 1
            with pipeline(conn) as opened:
                yield opened

        from schemadoc.storage.postgres import locks

        ended_by_server = locks._ended_by_server

        def counted_probe(conn: Any) -> bool:
            ended = ended_by_server(conn)
            if ended and threading.get_ident() == self.thread:
                counts["probes"] += 1
            return ended

        monkeypatch.setattr(locks, "_ended_by_server", counted_probe)
        monkeypatch.setattr(psycopg.Connection, "execute", counted_execute)
        monkeypatch.setattr(psycopg.Connection, "pipeline", counted_pipeline)


def _wait_for_version(store: PostgresDocumentStore, doc_id: str, version: int) -> DocumentMeta:
    deadline = time.monotonic() + NOTICE_TIMEOUT_SECONDS
    while True:
        meta = store.read_meta(doc_id)
        if meta.version == version or time.monotonic() > deadline:
            return meta
        time.sleep(0.005)


def test_a_read_of_a_meta_known_current_needs_no_round_trip_and_a_write_two(
        monkeypatch: pytest.MonkeyPatch, stores: Any) -> None:
    first, _ = stores
    meta = create_document(first, {"n": 0})
    first.read_meta(meta.doc_id)  # read once from the database, then known
    trips = _RoundTrips(monkeypatch)
    for _ in range(5):
        assert first.read_meta(meta.doc_id).version == 1
    assert trips.counts["round trips"] == 0
    with first.write_lock(meta.doc_id):
        under_lock = first.read_meta(meta.doc_id)  # read with the lock, in its round trip
        assert under_lock.version == 1
        assert trips.counts["round trips"] == 1
        trips.counts.clear()
        meta = commit_patch(first, under_lock, [{"op": "replace", "path": "/n", "value": 1}], inline=False)
    assert trips.counts["round trips"] == 2  # the content read to build the patch (load), the commit
    trips.counts.clear()
    assert first.read_meta(meta.doc_id) == meta  # its own commit is known at once
    assert trips.counts["round trips"] == 0


def test_a_commit_of_another_process_reaches_the_reads_once_heard(stores: Any) -> None:
    first, second = stores
    meta = create_document(first, {"n": 0})
    assert first.read_meta(meta.doc_id).version == 1
    assert second.read_meta(meta.doc_id).version == 1
    moved = commit_patch(second, meta, [{"op": "replace", "path": "/n", "value": 1}])
    assert _wait_for_version(first, meta.doc_id, 2) == moved
    deleted = delete_document(second, moved)
    assert _wait_for_version(first, meta.doc_id, 3).deleted_at == deleted.deleted_at
    second.purge(meta.doc_id)
    deadline = time.monotonic() + NOTICE_TIMEOUT_SECONDS
    while time.monotonic() < deadline:
        try:
            first.read_meta(meta.doc_id)
        except SchemaDocError as error:
            assert error.code == "document-not-found"
            break
        time.sleep(0.005)
    else:
        pytest.fail("the purge was never heard")


def test_a_verdict_recorded_by_another_process_reaches_the_reads(stores: Any) -> None:
    from schemadoc.storage.verdict import Verdict

    first, second = stores
    meta = create_document(first, {"n": 0})
    assert first.read_meta(meta.doc_id).verdict is None
    assert second.record_verdict(meta.doc_id, Verdict(1, "sha256:x"))
    deadline = time.monotonic() + NOTICE_TIMEOUT_SECONDS
    while first.read_meta(meta.doc_id).verdict is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert first.read_meta(meta.doc_id).verdict == Verdict(1, "sha256:x")


def test_while_the_listening_connection_is_down_reads_ask_the_database(stores: Any) -> None:
    first, second = stores
    meta = create_document(first, {"n": 0})
    assert first.read_meta(meta.doc_id).version == 1
    name = f"schemadoc-listen-{first.origin}"[:63]
    with psycopg.connect(first.connections.url, autocommit=True) as admin:
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s", (name,))
    deadline = time.monotonic() + NOTICE_TIMEOUT_SECONDS
    while first.current.get(meta.doc_id) is not None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert first.current.get(meta.doc_id) is None  # the cut was noticed: nothing is known current
    # a commit made whatever the listener's state is read: from the database, or heard after the reconnect
    moved = commit_patch(second, meta, [{"op": "replace", "path": "/n", "value": 1}])
    assert _wait_for_version(first, meta.doc_id, 2) == moved
    assert first.read_meta(meta.doc_id) == moved


def test_a_write_under_the_lock_sees_a_commit_not_heard_yet(monkeypatch: pytest.MonkeyPatch, stores: Any) -> None:
    """The meta read with the lock comes from the database: a notification still on its way changes nothing."""
    first, second = stores
    meta = create_document(first, {"n": 0})
    first.read_meta(meta.doc_id)
    monkeypatch.setattr(first.current, "heard", lambda *args: None)  # deaf: nothing of the second is heard
    moved = commit_patch(second, meta, [{"op": "replace", "path": "/n", "value": 1}])
    assert first.read_meta(meta.doc_id).version == 1  # what the reads knew
    with first.write_lock(meta.doc_id):
        assert first.read_meta(meta.doc_id) == moved
    with pytest.raises(SchemaDocError) as raised:
        commit_patch(first, meta, [{"op": "replace", "path": "/n", "value": 2}])
    assert raised.value.code == "version-conflict"
    assert first.read_meta(meta.doc_id) == moved


def test_a_commit_lets_the_database_lock_go_with_it_and_a_refused_one_tells_nobody(stores: Any) -> None:
    first, second = stores
    heard: list[Any] = []
    second.watch(heard.append)
    meta = create_document(first, {"n": 0})
    with first.write_lock(meta.doc_id):
        moved = commit_patch(first, meta, [{"op": "replace", "path": "/n", "value": 1}])
        with second.write_lock(meta.doc_id, timeout=0):  # let go with the commit, before the block's end
            assert second.read_meta(meta.doc_id) == moved
        with pytest.raises(SchemaDocError) as raised:
            commit_patch(first, meta, [{"op": "replace", "path": "/n", "value": 2}])  # from version 1 again
        assert raised.value.code == "version-conflict"
    with second.write_lock(meta.doc_id, timeout=0):  # and the refused one let it go too
        pass
    deadline = time.monotonic() + NOTICE_TIMEOUT_SECONDS
    while len(heard) < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    time.sleep(0.2)  # a notice of the refused commit would have come by now
    assert [(notice.version, notice.kind) for notice in heard] == [(1, "created"), (2, "updated")]


# -- a service's writes: one round trip, judged again under the lock when the meta known is not the client's ------

COUNTER = Path(__file__).resolve().parents[1] / "schemas" / "counter.schema.json"


def _services(stores: Any) -> tuple[Any, Any]:
    from schemadoc.schema import load_schema
    from schemadoc.service import DocumentService

    schema = load_schema(COUNTER)
    return tuple(DocumentService(schema, store) for store in stores)  # type: ignore[return-value]


def _known_current(store: PostgresDocumentStore, doc_id: str) -> DocumentMeta | None:
    """The meta of ``doc_id`` once this store trusts what it knows (its listener in force: a moment after start)."""
    deadline = time.monotonic() + NOTICE_TIMEOUT_SECONDS
    while store.current.get(doc_id) is None and time.monotonic() < deadline:
        store.read_meta(doc_id)  # read from the database, kept once the listener is in force
        time.sleep(0.01)
    return store.current.get(doc_id)


def test_a_service_write_whose_version_is_known_current_is_one_round_trip(
        monkeypatch: pytest.MonkeyPatch, stores: Any) -> None:
    first, _ = _services(stores)
    doc_id = first.create_document({"count": 0})[0]
    version = first.update_node(doc_id, "/count", 1, 1).version  # the state and the meta known from here on
    assert _known_current(stores[0], doc_id) is not None
    trips = _RoundTrips(monkeypatch)
    for n in range(2, 6):
        version = first.update_node(doc_id, "/count", n, version).version
    assert version == 6
    assert trips.counts["probes"] <= 4
    # one a write: the commit's pipeline, no lock taken before it (and a probe's SELECT 1 when one was needed)
    assert trips.counts["round trips"] == 4 + trips.counts["probes"]
    assert stores[1].read_meta(doc_id).version == 6


def test_a_write_judged_on_a_meta_not_heard_yet_is_judged_again_and_a_stale_one_refused(
        monkeypatch: pytest.MonkeyPatch, stores: Any) -> None:
    """The first server has not heard the second's commit: a client that has (it sends the new version) is
    accepted, and one that sends the version the first server knew is refused, whatever the first knew."""
    first, second = _services(stores)
    doc_id = first.create_document({"count": 0})[0]
    assert first.read_node(doc_id, "").version == 1
    monkeypatch.setattr(stores[0].current, "heard", lambda *args: None)  # deaf: nothing of the second is heard
    assert second.update_node(doc_id, "/count", 10, 1).version == 2
    assert stores[0].read_meta(doc_id).version == 1  # what the first server's reads know
    with pytest.raises(SchemaDocError) as raised:  # committed conditionally on version 1: refused by the database
        first.update_node(doc_id, "/count", 11, 1)
    assert raised.value.code == "version-conflict"
    assert raised.value.details["actual_version"] == 2 and "Re-read" in (raised.value.remediation or "")
    assert first.update_node(doc_id, "/count", 12, 2).version == 3  # judged again with the database's meta
    assert _wait_for_version(stores[1], doc_id, 3).version == 3  # the second hears it
    assert second.read_node(doc_id, "/count").node == 12
    assert [entry.version for entry in stores[1].read_journal(doc_id)] == [1, 2, 3]


def test_concurrent_writers_on_two_servers_lose_no_update(stores: Any) -> None:
    """Increments through both servers at once, each retrying on version-conflict: every one lands once."""
    services = _services(stores)
    doc_id = services[0].create_document({"count": 0})[0]
    errors: list[BaseException] = []

    def increment(service: Any, times: int) -> None:
        try:
            for _ in range(times):
                while True:
                    read = service.read_node(doc_id, "/count")
                    try:
                        service.update_node(doc_id, "/count", read.node + 1, read.version)
                        break
                    except SchemaDocError as error:
                        if error.code != "version-conflict":
                            raise
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=increment, args=(services[i % 2], 15)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert errors == []
    deadline = time.monotonic() + NOTICE_TIMEOUT_SECONDS
    while services[0].read_node(doc_id, "/count").node != 60 and time.monotonic() < deadline:
        time.sleep(0.01)
    assert services[0].read_node(doc_id, "/count").node == 60
    assert [entry.version for entry in stores[0].read_journal(doc_id)] == list(range(1, 62))


def test_a_write_after_its_pooled_connections_were_ended_unseen_is_served(stores: Any) -> None:
    """The database ended every pooled session of a server (a restart it did not see) while its listener stayed
    and its metas stay known current: the next write finds the ended session before it sends its commit (where
    a failure could not tell whether the commit ran), and is served on a new connection."""
    first, _ = _services(stores)
    doc_id = first.create_document({"count": 0})[0]
    version = first.update_node(doc_id, "/count", 1, 1).version
    assert _known_current(stores[0], doc_id) is not None  # known current: no round trip before the commit
    idle = [conn.info.backend_pid for conn in list(stores[0].connections._pool._pool)]  # this server's pool only
    assert idle
    with psycopg.connect(stores[0].connections.url, autocommit=True) as admin:
        ended = admin.execute("SELECT count(pg_terminate_backend(pid)) FROM unnest(%s::int[]) AS pid",
                              (idle,)).fetchone()
    assert ended is not None and ended[0] == len(idle)
    time.sleep(0.2)  # the ended sessions' last words reach their sockets
    assert first.update_node(doc_id, "/count", 2, version).version == version + 1
    assert stores[1].read_meta(doc_id).version == version + 1
