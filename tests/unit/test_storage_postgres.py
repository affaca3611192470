"""What the PostgreSQL store does beyond the contract: migrations, a feed that never skips a late
commit, locks and notifications shared by every process on the database.

Two store instances on one PostgreSQL schema stand for two server processes: each has its own
connections (so its own advisory-lock sessions) and its own origin for notifications.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import orjson
import psycopg
import pytest
from contract.storage import commit_patch, create_document, delete_document, new_doc_id
from pg_support import URL, empty_tables, throwaway_schema, url_with_schema
from psycopg import sql

from schemadoc.errors import SchemaDocError
from schemadoc.storage.base import DocumentMeta
from schemadoc.storage.postgres import MIGRATIONS, PostgresDocumentStore
from schemadoc.storage.shared import SharedStore, StoreNotice

pytestmark = pytest.mark.postgres

NOTICE_TIMEOUT_SECONDS = 10.0


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str]:
    with throwaway_schema() as url:
        yield url


def _migration_versions(store: PostgresDocumentStore) -> list[int]:
    """The migration versions applied to the store's schema, in order."""
    with store.connections.connect() as conn:
        rows = conn.execute(sql.SQL("SELECT version FROM {}.schema_migrations ORDER BY version").format(
            sql.Identifier(store.schema))).fetchall()
    return [row[0] for row in rows]


def _open(url: str) -> PostgresDocumentStore:
    store = PostgresDocumentStore(url)
    store.open()
    return store


@pytest.fixture
def stores(postgres_url: str) -> Iterator[tuple[PostgresDocumentStore, PostgresDocumentStore]]:
    """Two stores on one (emptied) schema: two processes' worth of connections."""
    first = _open(postgres_url)
    empty_tables(postgres_url)
    second = _open(postgres_url)
    try:
        yield first, second
    finally:
        first.close()
        second.close()


def _schema_of(store: PostgresDocumentStore) -> str:
    return store.schema


# -- migrations ----------------------------------------------------------------------------------


def test_the_store_creates_its_tables_and_records_each_migration_once() -> None:
    with throwaway_schema() as url:
        stores = [PostgresDocumentStore(url) for _ in range(3)]
        raised: list[BaseException] = []

        def open_one(store: PostgresDocumentStore) -> None:
            try:
                store.open()
            except BaseException as error:
                raised.append(error)

        threads = [threading.Thread(target=open_one, args=(store,)) for store in stores]  # servers starting at once
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
        try:
            assert raised == []
            expected = [version for version, _, _ in MIGRATIONS]
            assert all(_migration_versions(store) == expected for store in stores)
            meta = create_document(stores[0], {"a": 1})
            assert stores[2].read_meta(meta.doc_id) == meta
            stores[0].close()
            assert _migration_versions(_open(url)) == expected  # a restart migrates nothing again
        finally:
            for store in stores:
                store.close()


def test_a_database_at_an_older_migration_is_brought_forward_keeping_its_documents() -> None:
    with throwaway_schema() as url:
        schema = url.rsplit("schema=", 1)[1]
        name = sql.Identifier(schema)
        line = (b'{"version":1,"op":"create","patch":[{"op":"add","path":"","value":{"a":1}}],'
                b'"at":"2025-01-01T00:00:00.000Z"}\n')
        with psycopg.connect(URL, autocommit=True) as conn:  # the tables as the first release made them
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(name))
            conn.execute(sql.SQL("CREATE TABLE {}.schema_migrations (version integer PRIMARY KEY, "
                                 "description text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())")
                         .format(name))
            conn.execute(sql.SQL(MIGRATIONS[0][2]).format(schema=name))  # type: ignore[arg-type]
            conn.execute(sql.SQL("INSERT INTO {}.schema_migrations (version, description) VALUES (1, 'v1')")
                         .format(name))
            doc_id = new_doc_id()
            conn.execute(sql.SQL("INSERT INTO {}.documents VALUES (%s, 1, 'urn:s', 'a', 'a', 7, NULL, %s, 1)")
                         .format(name), (doc_id, b'{"a":1}'))
            conn.execute(sql.SQL("INSERT INTO {}.journal (doc_id, version, op, at, entry) "
                                 "VALUES (%s, 1, 'create', 'a', %s)").format(name), (doc_id, line))
        store = _open(url)
        try:
            assert _migration_versions(store) == [version for version, _, _ in MIGRATIONS]
            stored = store.load(doc_id)
            assert (stored.content, stored.meta.version, stored.meta.snapshot_version) == (b'{"a":1}', 1, 1)
            assert commit_patch(store, stored.meta, [{"op": "add", "path": "/b", "value": 2}]).version == 2
            assert orjson.loads(store.load(doc_id).content) == {"a": 1, "b": 2}
        finally:
            store.close()


def test_an_unreachable_database_is_storage_unavailable_without_the_password() -> None:
    store = PostgresDocumentStore("postgresql://someone:s3cret@127.0.0.1:1/nothing?connect_timeout=1")
    with pytest.raises(SchemaDocError) as raised:
        store.open()
    assert raised.value.code == "storage-unavailable"
    assert raised.value.status == 503
    assert "s3cret" not in str(raised.value.to_dict())
    assert raised.value.details["storage_url"] == "postgresql://someone:***@127.0.0.1:1/nothing?connect_timeout=1"


def test_the_postgres_store_is_a_shared_store_and_the_others_are_not(stores: Any) -> None:
    from schemadoc.storage import FileDocumentStore, MemoryDocumentStore

    assert isinstance(stores[0], SharedStore)
    assert not isinstance(MemoryDocumentStore(), SharedStore)
    assert not isinstance(FileDocumentStore("documents"), SharedStore)


# -- several processes -------------------------------------------------------------------------------


def test_a_write_lock_held_by_one_process_keeps_the_other_out_until_released(stores: Any) -> None:
    first, second = stores
    doc_id = new_doc_id()
    with first.write_lock(doc_id):
        started = time.monotonic()
        with pytest.raises(SchemaDocError) as raised, second.write_lock(doc_id, timeout=0.3):
            pass
        assert raised.value.code == "lock-timeout"
        assert time.monotonic() - started >= 0.25
        with pytest.raises(SchemaDocError), second.write_lock(doc_id, timeout=0):
            pass
    with second.write_lock(doc_id, timeout=0):
        pass


def test_two_processes_committing_from_one_version_cannot_both_succeed(stores: Any) -> None:
    first, second = stores
    meta = create_document(first, {"n": 0})
    commit_patch(first, meta, [{"op": "replace", "path": "/n", "value": 1}])
    with pytest.raises(SchemaDocError) as raised:
        commit_patch(second, meta, [{"op": "replace", "path": "/n", "value": 2}])  # from version 1 again
    assert raised.value.code == "version-conflict"
    assert raised.value.details == {"doc_id": meta.doc_id, "expected_version": 1, "actual_version": 2}
    assert [entry.version for entry in second.read_journal(meta.doc_id)] == [1, 2]
    assert orjson.loads(second.load(meta.doc_id).content) == {"n": 1}


# -- the change feed -----------------------------------------------------------------------------------


def test_the_feed_lists_every_commit_of_every_process_once_in_version_order(stores: Any) -> None:
    first, second = stores
    metas = [create_document(first, {"n": 0}), create_document(second, {"n": 0})]
    for n in range(1, 6):
        for index, store in enumerate((first, second, first)):
            meta = metas[index % 2]
            metas[index % 2] = commit_patch(store, meta, [{"op": "replace", "path": "/n", "value": n * 10 + index}])
    metas[0] = delete_document(second, metas[0])
    seen: list[tuple[str, int, str]] = []
    cursor = 0
    while page := first.read_changes(cursor, 4):  # small pages: paging neither skips nor repeats
        assert [change.cursor for change in page] == sorted({change.cursor for change in page})
        assert all(change.cursor > cursor for change in page)
        seen += [(change.doc_id, change.version, change.op) for change in page]
        cursor = page[-1].cursor
    for meta in metas:
        versions = [version for doc_id, version, _ in seen if doc_id == meta.doc_id]
        assert versions == list(range(1, meta.version + 1))
    assert len(seen) == sum(meta.version for meta in metas)
    assert seen[-1] == (metas[0].doc_id, metas[0].version, "delete_document")
    assert [(c.doc_id, c.version) for c in second.read_changes(0, 1000)] == [(d, v) for d, v, _ in seen]


def _wait_until_blocked(application_name: str) -> None:
    """Until the session named ``application_name`` waits for a lock."""
    deadline = time.monotonic() + 10
    with psycopg.connect(URL, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute("SELECT wait_event_type FROM pg_stat_activity WHERE application_name = %s",
                               (application_name,)).fetchone()
            if row is not None and row[0] == "Lock":
                return
            time.sleep(0.02)
    raise AssertionError("the commit never started waiting")


@contextmanager
def _stalled_commit(slow: PostgresDocumentStore, slow_name: str, late: DocumentMeta) -> Iterator[Callable[[], None]]:
    """A commit of ``late`` by ``slow`` (its session named ``slow_name``) that has taken its
    transaction id and waits on a row lock for the whole block; the function it yields lets the
    commit land and waits for it."""
    schema = sql.Identifier(_schema_of(slow))
    raised: list[BaseException] = []
    with psycopg.connect(URL) as blocker:  # holds the row of `late`, so its commit stalls mid-transaction
        blocker.execute(sql.SQL("SELECT 1 FROM {}.documents WHERE doc_id = %s FOR UPDATE").format(schema),
                        (late.doc_id,))

        def commit_late() -> None:
            try:
                commit_patch(slow, late, [{"op": "replace", "path": "/n", "value": 1}])
            except BaseException as error:
                raised.append(error)

        # commit_patch loads first (no lock needed), then commits: the UPDATE takes a transaction id and waits
        writer = threading.Thread(target=commit_late)
        writer.start()
        _wait_until_blocked(slow_name)

        def land() -> None:
            blocker.rollback()
            writer.join(NOTICE_TIMEOUT_SECONDS)
            assert raised == []

        yield land


def test_a_commit_that_lands_late_holds_the_feed_back_and_is_never_skipped(postgres_url: str) -> None:
    """Commit A starts (its transaction id is taken) and stalls; commit B starts later and lands first.

    A reader polling meanwhile must not be shown B yet: a reader that moved its cursor past B
    would skip A forever. Once A lands, the feed shows A then B.
    """
    slow_name = f"late-commit-{new_doc_id()}"
    slow = _open(postgres_url + f"&application_name={slow_name}")
    fast = _open(postgres_url)
    empty_tables(postgres_url)
    try:
        late = create_document(fast, {"n": 0})
        early = create_document(fast, {"n": 0})
        start = fast.read_changes(0, 100)[-1].cursor
        with _stalled_commit(slow, slow_name, late) as land:
            commit_patch(fast, early, [{"op": "replace", "path": "/n", "value": 1}])  # a later id, landed first
            assert fast.read_meta(early.doc_id).version == 2
            assert fast.read_changes(start, 100) == []  # held back behind the stalled commit
            land()
        changes = fast.read_changes(start, 100)
        assert [(c.doc_id, c.version) for c in changes] == [(late.doc_id, 2), (early.doc_id, 2)]
        assert changes[0].cursor < changes[1].cursor
    finally:
        slow.close()
        fast.close()


def test_a_transaction_of_someone_else_left_open_does_not_hold_the_feed_back(postgres_url: str) -> None:
    store = _open(postgres_url)
    empty_tables(postgres_url)
    try:
        with psycopg.connect(URL) as other:  # another application: a write transaction left open
            other.execute("CREATE TEMPORARY TABLE scratch (n int)")
            other.execute("INSERT INTO scratch VALUES (1)")
            meta = create_document(store, {"n": 0})
            commit_patch(store, meta, [{"op": "replace", "path": "/n", "value": 1}])
            assert [(c.doc_id, c.version) for c in store.read_changes(0, 10)] == [(meta.doc_id, 1), (meta.doc_id, 2)]
            other.rollback()
    finally:
        store.close()


# -- notifications ---------------------------------------------------------------------------------------


class _Heard:
    """A listener that keeps what it hears (a store's notices, a service's events) and can wait for it."""

    def __init__(self) -> None:
        self.notices: list[Any] = []
        self.changed = threading.Condition()

    def __call__(self, notice: Any) -> None:
        with self.changed:
            self.notices.append(notice)
            self.changed.notify_all()

    def wait_for(self, count: int) -> list[Any]:
        with self.changed:
            self.changed.wait_for(lambda: len(self.notices) >= count, NOTICE_TIMEOUT_SECONDS)
            return list(self.notices)


def test_each_process_hears_the_commits_and_purges_of_the_others_but_not_its_own(stores: Any) -> None:
    first, second = stores
    heard_first, heard_second = _Heard(), _Heard()
    first.watch(heard_first)
    stop = second.watch(heard_second)
    meta = create_document(first, {"n": 0})
    meta = commit_patch(first, meta, [{"op": "replace", "path": "/n", "value": 1}])
    meta = delete_document(first, meta)
    meta = delete_document(first, meta, undelete=True)
    meta = delete_document(first, meta)
    first.purge(meta.doc_id)
    expected = [StoreNotice(meta.doc_id, 1, "created"), StoreNotice(meta.doc_id, 2, "updated"),
                StoreNotice(meta.doc_id, 3, "deleted"), StoreNotice(meta.doc_id, 4, "undeleted"),
                StoreNotice(meta.doc_id, 5, "deleted"), StoreNotice(meta.doc_id, 5, "purged")]
    assert heard_second.wait_for(len(expected)) == expected
    other = create_document(second, {})
    assert heard_first.wait_for(1) == [StoreNotice(other.doc_id, 1, "created")]
    probe = _Heard()  # another listener of the same process: notices reach its listeners in turn, in order
    second.watch(probe)
    stop()
    commit_patch(second, other, [{"op": "add", "path": "/x", "value": 1}])
    last = create_document(first, {})
    assert probe.wait_for(1) == [StoreNotice(last.doc_id, 1, "created")]
    assert list(heard_second.notices) == expected  # stopped: that notice went to the probe only
    assert heard_first.wait_for(2)[1] == StoreNotice(other.doc_id, 2, "updated")


class _HeldReconnect:
    """Kills a store's listening connection from the server side and holds its reconnect until released.

    Installed as the store's ``_listen_connection``: the first call after :meth:`cut` waits until
    :meth:`release`, so whatever the test commits meanwhile falls in the gap for sure.
    """

    def __init__(self, store: PostgresDocumentStore, monkeypatch: pytest.MonkeyPatch) -> None:
        self.store = store
        self.connect = store._listen_connection
        self.reconnecting = threading.Event()
        self.released = threading.Event()
        self.holding = False
        monkeypatch.setattr(store, "_listen_connection", self)

    def __call__(self) -> psycopg.Connection[Any]:
        if self.holding:
            self.holding = False
            self.reconnecting.set()
            assert self.released.wait(NOTICE_TIMEOUT_SECONDS)
        return self.connect()

    def cut(self) -> None:
        self.holding = True
        name = f"schemadoc-listen-{self.store.origin}"[:63]
        with psycopg.connect(URL, autocommit=True) as admin:
            rows = admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
                                 (name,)).fetchall()
        assert rows == [(True,)]  # exactly one listening session, and it was ended
        assert self.reconnecting.wait(NOTICE_TIMEOUT_SECONDS)  # the listener noticed, and waits

    def release(self) -> None:
        self.released.set()


def test_commits_made_while_the_listening_connection_was_down_are_announced_after_it_reconnects(
        monkeypatch: pytest.MonkeyPatch, stores: Any) -> None:
    from schemadoc.storage.postgres import notifications as postgres

    monkeypatch.setattr(postgres, "_LISTEN_POLL_SECONDS", 0.05)  # closing waits for the poll to end
    first, second = stores
    heard = _Heard()
    first.watch(heard)
    held = _HeldReconnect(first, monkeypatch)
    edited = create_document(second, {"n": 0})
    gone = create_document(second, {"n": 0})
    purged = delete_document(second, create_document(second, {"n": 0}))
    mine = delete_document(first, create_document(first, {"n": 0}))
    before = [StoreNotice(edited.doc_id, 1, "created"), StoreNotice(gone.doc_id, 1, "created"),
              StoreNotice(purged.doc_id, 1, "created"), StoreNotice(purged.doc_id, 2, "deleted")]
    assert heard.wait_for(4) == before
    held.cut()
    edited = commit_patch(second, edited, [{"op": "replace", "path": "/n", "value": 1}])
    edited = commit_patch(second, edited, [{"op": "replace", "path": "/n", "value": 2}])
    added = create_document(second, {"n": 0})
    gone = delete_document(second, gone)
    second.purge(purged.doc_id)  # leaves no journal row behind
    create_document(first, {"n": 0})  # its own commit and purge: never announced to itself
    first.purge(mine.doc_id)
    assert heard.notices == before  # nobody listens meanwhile
    held.release()
    # one notice per document, its newest version and kind, and each purge, in commit order
    missed = [StoreNotice(edited.doc_id, 3, "updated"), StoreNotice(added.doc_id, 1, "created"),
              StoreNotice(gone.doc_id, 2, "deleted"), StoreNotice(purged.doc_id, 2, "purged")]
    assert heard.wait_for(8) == before + missed
    commit_patch(second, added, [{"op": "replace", "path": "/n", "value": 1}])  # and it listens again
    assert heard.wait_for(9) == [*before, *missed, StoreNotice(added.doc_id, 2, "updated")]


def _wait_until_probed_after(store: PostgresDocumentStore, moment: Any) -> None:
    """Until the listening session of ``store`` ran a query (its feed position) after server time ``moment``."""
    name = f"schemadoc-listen-{store.origin}"[:63]
    deadline = time.monotonic() + NOTICE_TIMEOUT_SECONDS
    with psycopg.connect(URL, autocommit=True) as conn:
        while time.monotonic() < deadline:
            row = conn.execute("SELECT query_start > %s FROM pg_stat_activity WHERE application_name = %s",
                               (moment, name)).fetchone()
            if row is not None and row[0]:
                return
            time.sleep(0.02)
    raise AssertionError("the listener never took the feed position again")


def test_a_commit_in_flight_when_the_listening_connection_drops_is_announced_after_it_reconnects(
        postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The commit's transaction starts, stalls, and lands while the listener is disconnected.

    Its notification is lost with the connection; the listener's mark moved on meanwhile (it
    probed the feed well after the commit started, so a mark taken as a time would be past
    it), but a feed cursor is held back by the stalled commit, so the catch-up finds it.
    """
    from schemadoc.storage.postgres import notifications as postgres

    monkeypatch.setattr(postgres, "_LISTEN_POLL_SECONDS", 0.02)
    monkeypatch.setattr(postgres, "_MARK_MARGIN_SECONDS", 0.05)
    slow_name = f"stalled-commit-{new_doc_id()}"
    slow = _open(postgres_url + f"&application_name={slow_name}")
    listening = _open(postgres_url)
    empty_tables(postgres_url)
    try:
        heard = _Heard()
        listening.watch(heard)
        held = _HeldReconnect(listening, monkeypatch)
        late = create_document(slow, {"n": 0})
        early = create_document(slow, {"n": 0})
        assert len(heard.wait_for(2)) == 2
        with _stalled_commit(slow, slow_name, late) as land:
            commit_patch(slow, early, [{"op": "replace", "path": "/n", "value": 1}])  # a later one, landed first
            assert heard.wait_for(3)[2] == StoreNotice(early.doc_id, 2, "updated")
            with psycopg.connect(URL, autocommit=True) as clock:
                row = clock.execute("SELECT clock_timestamp() + interval '0.2 seconds'").fetchone()
            assert row is not None
            _wait_until_probed_after(listening, row[0])
            held.cut()
            land()  # the stalled commit lands now, while nobody listens
        assert heard.notices[3:] == []
        held.release()
        # in feed order; the later commit is repeated (the catch-up starts behind the stalled one)
        assert heard.wait_for(5)[3:] == [StoreNotice(late.doc_id, 2, "updated"),
                                         StoreNotice(early.doc_id, 2, "updated")]
    finally:
        slow.close()
        listening.close()


def test_the_schema_in_the_url_keeps_stores_apart(stores: Any) -> None:
    first, _ = stores
    with throwaway_schema() as other_url:
        other = _open(other_url)
        try:
            heard = _Heard()
            other.watch(heard)
            create_document(first, {})
            assert other.list_metas() == []
            assert other.read_changes(0, 10) == []
            time.sleep(0.3)
            assert heard.notices == []
        finally:
            other.close()
    assert url_with_schema("x").endswith("schema=x")


# -- two services (two server processes' worth) on one database ----------------------------------------------


def _two_services(postgres_url: str) -> tuple[Any, Any]:
    """The services of two servers on one database, opened (the first listens first), tables emptied."""
    from pathlib import Path

    from schemadoc.schema import load_schema
    from schemadoc.service import DocumentService

    schema = load_schema(Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json")
    first, second = (DocumentService(schema, PostgresDocumentStore(postgres_url)) for _ in range(2))
    first.open()
    second.open()
    empty_tables(postgres_url)
    return first, second


def test_two_services_on_one_database_share_one_feed_and_hear_each_other(postgres_url: str) -> None:
    first, second = _two_services(postgres_url)
    heard = _Heard()
    second.subscribe(heard)
    try:
        doc_id = first.create_document()[0]
        first.update_node(doc_id, "/title", "Dune", 1)
        second.update_node(doc_id, "/title", "Dune Messiah", 2)  # the second sees the first's version at once
        first.delete_document(doc_id, 3)
        assert first.changes().changes == second.changes().changes
        assert [(c.doc_id, c.version, c.op) for c in second.changes().changes] == [
            (doc_id, 1, "create"), (doc_id, 2, "update_node"), (doc_id, 3, "update_node"),
            (doc_id, 4, "delete_document")]
        assert all("seq" not in entry.info for entry in second.store.read_journal(doc_id))  # no per-process clock
        # its own write comes with its journal entry; the other's without (feeds read the journal);
        # the other's arrive from the listening thread, so they may come after a later own one
        assert sorted((e.version, e.kind, e.entry is not None) for e in heard.wait_for(4)) == [
            (1, "created", False), (2, "updated", False), (3, "updated", True), (4, "deleted", False)]
    finally:
        first.close()
        second.close()


def test_a_service_whose_listener_reconnected_tells_its_subscribers_and_feeds_what_happened_meanwhile(
        postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio
    import queue

    from schemadoc.interfaces.http.feeds import FeedEvent, document_events
    from schemadoc.storage.postgres import notifications as postgres

    monkeypatch.setattr(postgres, "_LISTEN_POLL_SECONDS", 0.05)  # closing waits for the poll to end
    first, second = _two_services(postgres_url)  # the first starts listening
    assert isinstance(first.store, PostgresDocumentStore)
    held = _HeldReconnect(first.store, monkeypatch)
    heard = _Heard()

    fed: queue.Queue[FeedEvent] = queue.Queue()
    following, stop = threading.Event(), threading.Event()

    def follow(doc_id: str) -> None:  # the live feed an SSE stream of the first server sends
        async def run() -> None:
            async for event in document_events(first, doc_id, 1, heartbeat_seconds=0.02):
                if event.kind != "heartbeat":
                    fed.put(event)
                following.set()
                if stop.is_set():
                    return

        asyncio.run(run())

    first.subscribe(heard)
    feed = None
    try:
        doc_id = second.create_document()[0]
        assert [(e.doc_id, e.version, e.kind) for e in heard.wait_for(1)] == [(doc_id, 1, "created")]
        feed = threading.Thread(target=follow, args=(doc_id,), daemon=True)
        feed.start()
        assert following.wait(NOTICE_TIMEOUT_SECONDS)
        held.cut()
        second.update_node(doc_id, "/title", "Dune", 1)
        assert len(heard.notices) == 1
        held.release()
        assert [(e.doc_id, e.version, e.kind, e.entry) for e in heard.wait_for(2)[1:]] == [(doc_id, 2, "updated", None)]
        event = fed.get(timeout=NOTICE_TIMEOUT_SECONDS)
        assert (event.kind, event.version) == ("version", 2)
        assert event.body.patch == [{"op": "replace", "path": "/title", "value": "Dune"}]
    finally:
        stop.set()
        if feed is not None:
            feed.join(NOTICE_TIMEOUT_SECONDS)
        first.close()
        second.close()
