"""Who changed what: every journal entry records its actor, history shows it and filters by it, the change feed
names it, and nothing a client sends beside its token decides it.

In process; real servers on the wire: tests/e2e/test_actors_server.py.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from pg_support import throwaway_schema

from schemadoc.config import Settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.app import build_app, create_service
from schemadoc.interfaces.http.access import parse_tokens
from schemadoc.ops.journal import JournalEntry
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.service import history as service_history
from schemadoc.storage.files import FileDocumentStore
from schemadoc.storage.memory import MemoryDocumentStore

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
API = "/api/v1"
ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-0123456789abcdef!!"
CHAPTER = {"id": "ch-1", "title": "One", "sections": [{"title": "Start", "paragraphs": [{"text": "Hi."}]}]}


def memory_service() -> DocumentService:
    service = DocumentService(load_schema(BOOK_SCHEMA), MemoryDocumentStore())
    service.open()
    return service


def actors(service: DocumentService, doc_id: str, **filters: Any) -> list[tuple[int, str, str | None]]:
    page = service.history(doc_id, limit=1000, include_deleted=True, **filters)
    return [(entry.version, entry.op, entry.actor) for entry in page.entries]


# -- the service records what it is given -------------------------------------------------------


def test_every_kind_of_write_records_its_actor_in_the_journal_entry() -> None:
    service = memory_service()
    doc_id, *_ = service.create_document(actor="alice")
    service.update_node(doc_id, "/title", "Dune", 1, actor="bob")
    service.create_node(doc_id, "/chapters/0", CHAPTER, 2, actor="carol")
    service.merge_patch(doc_id, "/chapters/0", {"title": "Uno"}, 3, actor="dave")
    service.apply_patch(doc_id, [{"op": "replace", "path": "/title", "value": "Arrakis"}], 4, actor="erin")
    service.create_node(doc_id, "/chapters/1", {**CHAPTER, "id": "ch-2"}, 5, actor="frank")
    service.move_node(doc_id, "/chapters/1", "/chapters/0", 6, actor="grace")
    service.delete_node(doc_id, "/chapters/1", 7, actor="heidi")
    service.revert(doc_id, 2, 8, actor="ivan")
    service.delete_document(doc_id, 9, actor="judy")
    service.undelete_document(doc_id, actor="mallory")
    service.update_node(doc_id, "/title", "unnamed", 11)

    assert actors(service, doc_id) == [
        (1, "create", "alice"), (2, "update_node", "bob"), (3, "create_node", "carol"), (4, "merge_patch", "dave"),
        (5, "patch", "erin"), (6, "create_node", "frank"), (7, "move_node", "grace"), (8, "delete_node", "heidi"),
        (9, "revert", "ivan"), (10, "delete_document", "judy"), (11, "undelete_document", "mallory"),
        (12, "update_node", None)]
    entry = service.history(doc_id, since_version=8, limit=1).entries[0]
    assert entry.info == {"to_version": 2, "actor": "ivan", "seq": entry.info["seq"]}  # beside what was there


def test_a_dry_run_or_a_refused_write_records_nothing() -> None:
    service = memory_service()
    doc_id, *_ = service.create_document(actor="alice")
    service.update_node(doc_id, "/title", "Preview", 1, dry_run=True, actor="bob")
    with pytest.raises(SchemaDocError):
        service.update_node(doc_id, "/title", 42, 1, actor="bob")
    assert actors(service, doc_id) == [(1, "create", "alice")]


def test_a_purge_leaves_no_journal_so_the_log_names_its_actor(caplog: pytest.LogCaptureFixture) -> None:
    service = memory_service()
    doc_id, *_ = service.create_document(actor="alice")
    service.delete_document(doc_id, 1, actor="alice")
    with caplog.at_level(logging.INFO, logger="schemadoc.service"):
        service.purge_document(doc_id, actor="bob")
    assert any(record.getMessage() == f"document {doc_id} purged at version 2 by bob" for record in caplog.records)


def test_the_change_feed_names_the_actor_of_each_version() -> None:
    service = memory_service()
    doc_id, *_ = service.create_document(actor="alice")
    service.update_node(doc_id, "/title", "Dune", 1, actor="bob")
    service.update_node(doc_id, "/title", "Dune II", 2)
    page = service.changes()
    assert [(change.version, change.actor) for change in page.changes] == [(1, "alice"), (2, "bob"), (3, None)]


def test_the_actor_survives_a_restart_of_the_files_store_and_the_change_feed_rebuilt_from_the_journals(
        tmp_path: Path) -> None:
    first = DocumentService(load_schema(BOOK_SCHEMA), FileDocumentStore(tmp_path))
    first.open()
    doc_id, *_ = first.create_document(actor="alice")
    first.update_node(doc_id, "/title", "Dune", 1, actor="bob")
    first.close()

    second = DocumentService(load_schema(BOOK_SCHEMA), FileDocumentStore(tmp_path))
    second.open()
    assert actors(second, doc_id) == [(1, "create", "alice"), (2, "update_node", "bob")]
    assert [change.actor for change in second.changes().changes] == ["alice", "bob"]
    second.close()


def test_a_journal_written_before_actors_were_recorded_still_reads_with_no_actor(tmp_path: Path) -> None:
    """Lines exactly as earlier servers wrote them: no ``actor`` anywhere."""
    first = DocumentService(load_schema(BOOK_SCHEMA), FileDocumentStore(tmp_path))
    first.open()
    doc_id, *_ = first.create_document(actor="alice")
    first.update_node(doc_id, "/title", "Dune", 1, actor="bob")
    first.close()
    journal = tmp_path / f"{doc_id}.journal.jsonl"
    lines = [json.loads(line) for line in journal.read_bytes().splitlines()]
    for line in lines:
        del line["info"]["actor"]
    journal.write_bytes(b"".join(JournalEntry.from_dict(line).to_line() for line in lines))
    assert b"actor" not in journal.read_bytes()

    second = DocumentService(load_schema(BOOK_SCHEMA), FileDocumentStore(tmp_path))
    second.open()
    assert actors(second, doc_id) == [(1, "create", None), (2, "update_node", None)]
    assert actors(second, doc_id, actor="alice") == []
    second.update_node(doc_id, "/title", "Dune II", 2, actor="carol")
    assert actors(second, doc_id)[-1] == (3, "update_node", "carol")
    assert [change.actor for change in second.changes().changes] == [None, None, "carol"]
    second.close()


# -- the history filter ---------------------------------------------------------------------------


@settings(max_examples=40, deadline=None)
@given(writers=st.lists(st.sampled_from(["alice", "bob", None]), min_size=0, max_size=30),
       wanted=st.sampled_from(["alice", "bob", "nobody"]), limit=st.integers(1, 7))
def test_paging_a_filtered_history_gives_exactly_the_entries_of_that_actor(
        writers: list[str | None], wanted: str, limit: int) -> None:
    service = memory_service()
    doc_id, *_ = service.create_document(actor="alice")
    for version, writer in enumerate(writers, start=1):
        service.update_node(doc_id, "/title", f"t{version}", version, actor=writer)
    expected = [version for version, writer in enumerate(["alice", *writers], start=1) if writer == wanted]

    seen: list[int] = []
    since = 0
    for _ in range(100):
        page = service.history(doc_id, since_version=since, limit=limit, actor=wanted)
        assert len(page.entries) <= limit
        assert all(entry.actor == wanted for entry in page.entries)
        seen += [entry.version for entry in page.entries]
        assert page.next_since_version >= since
        since = page.next_since_version
        if not page.has_more:
            break
    assert seen == expected
    assert since == len(writers) + 1


def test_a_filtered_page_looks_at_a_bounded_number_of_versions_and_says_where_to_go_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    service = memory_service()
    doc_id, *_ = service.create_document(actor="alice")
    for version in range(1, 12):
        service.update_node(doc_id, "/title", f"t{version}", version, actor="bob" if version < 11 else "alice")
    monkeypatch.setattr(service_history, "ACTOR_SCAN_VERSIONS", 4)

    page = service.history(doc_id, since_version=1, actor="alice")
    assert (page.entries, page.next_since_version, page.has_more) == ([], 5, True)
    page = service.history(doc_id, since_version=9, actor="alice")
    assert ([entry.version for entry in page.entries], page.next_since_version, page.has_more) == ([12], 12, False)


def test_a_filtered_page_keeps_within_max_bytes_with_at_least_one_entry() -> None:
    service = memory_service()
    doc_id, *_ = service.create_document(actor="alice")
    for version in range(1, 7):
        service.update_node(doc_id, "/title", str(version) * 300, version, actor="alice" if version % 2 else "bob")

    line = len(service.history(doc_id, since_version=1, limit=1).entries[0].to_line())
    page = service.history(doc_id, since_version=1, actor="alice", max_bytes=2 * line + 10)
    assert [entry.version for entry in page.entries] == [2, 4]
    assert page.next_since_version == 5 and page.has_more  # version 6 would not have fit
    rest = service.history(doc_id, since_version=5, actor="alice", max_bytes=2 * line + 10)
    assert ([entry.version for entry in rest.entries], rest.has_more) == ([6], False)
    tiny = service.history(doc_id, since_version=1, actor="alice", max_bytes=1)
    assert [entry.version for entry in tiny.entries] == [2]


@pytest.mark.parametrize("actor", ["", "x" * 201, 7])
def test_an_actor_filter_that_cannot_name_anyone_is_refused(actor: Any) -> None:
    service = memory_service()
    doc_id, *_ = service.create_document()
    with pytest.raises(SchemaDocError) as refused:
        service.history(doc_id, actor=actor)
    assert (refused.value.code, refused.value.details["argument"]) == ("invalid-request", "actor")


# -- a diff names who made the versions it spans ---------------------------------------------------


def diff_actors(service: DocumentService, doc_id: str, a: int, b: int) -> tuple[list[str], bool, int]:
    who = service.diff_actors(doc_id, a, b)
    return who.actors, who.complete, who.through_version


def test_a_diff_names_the_actors_of_the_versions_it_spans_in_the_order_they_first_wrote() -> None:
    service = memory_service()
    doc_id, *_ = service.create_document(actor="alice")  # v1
    for version, writer in enumerate(["bob", None, "alice", "carol", "bob"], start=1):  # v2 to v6
        service.update_node(doc_id, "/title", f"t{version}", version, actor=writer)
    assert diff_actors(service, doc_id, 1, 6) == (["bob", "alice", "carol"], True, 6)
    assert diff_actors(service, doc_id, 6, 1) == (["bob", "alice", "carol"], True, 6)  # undone: the same versions
    assert diff_actors(service, doc_id, 1, 2) == (["bob"], True, 2)  # not the creator of version 1
    assert diff_actors(service, doc_id, 2, 3) == ([], True, 3)  # version 3 has no recorded actor
    assert diff_actors(service, doc_id, 4, 4) == ([], True, 4)
    assert diff_actors(service, doc_id, 5, 4) == (["carol"], True, 5)


def test_a_diff_lists_at_most_20_actors_and_says_up_to_which_version_the_list_is_whole() -> None:
    assert service_history.DIFF_ACTORS_LISTED == 20
    service = memory_service()
    doc_id, *_ = service.create_document(actor="w0")
    for version in range(1, 27):  # v2 to v26 by w1 to w25, v27 by w1 again
        service.update_node(doc_id, "/title", f"t{version}", version, actor=f"w{version if version < 26 else 1}")
    first_twenty = [f"w{n}" for n in range(1, 21)]
    assert diff_actors(service, doc_id, 1, 21) == (first_twenty, True, 21)
    assert diff_actors(service, doc_id, 1, 27) == (first_twenty, False, 21)  # w21 wrote version 22
    assert diff_actors(service, doc_id, 27, 1) == (first_twenty, False, 21)
    assert diff_actors(service, doc_id, 2, 27) == ([f"w{n}" for n in range(2, 22)], False, 22)
    assert diff_actors(service, doc_id, 7, 27) == ([f"w{n}" for n in range(7, 26)] + ["w1"], True, 27)


def test_a_diff_reads_the_actors_of_a_bounded_number_of_versions_and_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    service = memory_service()
    doc_id, *_ = service.create_document(actor="w0")
    for version in range(1, 11):
        service.update_node(doc_id, "/title", f"t{version}" * 100, version, actor=f"w{version}")
    read: list[tuple[int, int | None]] = []
    reading = service.store.read_journal

    def counted(doc: str, since_version: int = 0, until_version: int | None = None, **kwargs: Any) -> Any:
        entries = reading(doc, since_version, until_version, **kwargs)
        read.append((len(entries), kwargs.get("max_bytes")))
        return entries

    monkeypatch.setattr(service.store, "read_journal", counted)
    monkeypatch.setattr(service_history, "DIFF_ACTOR_VERSIONS", 4)
    assert diff_actors(service, doc_id, 1, 11) == (["w1", "w2", "w3", "w4"], False, 5)
    assert diff_actors(service, doc_id, 7, 11) == (["w7", "w8", "w9", "w10"], True, 11)
    assert read == [(4, service_history.DIFF_ACTOR_BYTES)] * 2  # one read each, never more than 4 versions
    monkeypatch.setattr(service_history, "DIFF_ACTOR_BYTES", 1)  # the entry that reaches the bound is read
    assert diff_actors(service, doc_id, 1, 11) == (["w1"], False, 2)
    assert diff_actors(service, doc_id, 10, 11) == (["w10"], True, 11)


@settings(max_examples=60, deadline=None)
@given(writers=st.lists(st.sampled_from([None, *(f"w{n}" for n in range(24))]), min_size=0, max_size=40),
       data=st.data())
def test_a_diffs_actors_are_the_first_writers_of_its_span_until_the_twenty_first(
        writers: list[str | None], data: st.DataObject) -> None:
    service = memory_service()
    doc_id, *_ = service.create_document(actor="creator")
    for version, writer in enumerate(writers, start=1):
        service.update_node(doc_id, "/title", f"t{version}", version, actor=writer)
    last = len(writers) + 1
    a = data.draw(st.integers(1, last))
    b = data.draw(st.integers(1, last))
    low, high = sorted((a, b))
    names: list[str] = []
    through = high
    for version in range(low + 1, high + 1):
        writer = writers[version - 2]
        if writer is None or writer in names:
            continue
        if len(names) == 20:
            through = version - 1
            break
        names.append(writer)
    assert diff_actors(service, doc_id, a, b) == (names, through == high, through)


# -- the REST door in process: without tokens "rest", with tokens the token's name -----------------


@pytest.fixture
def open_client(tmp_path: Path) -> Iterator[TestClient]:
    service = create_service(Settings(schema_path=BOOK_SCHEMA, storage_dir=tmp_path / "data"))
    with TestClient(build_app(service, Settings(schema_path=BOOK_SCHEMA)), base_url="http://127.0.0.1") as client:
        yield client


@pytest.fixture
def token_client(tmp_path: Path) -> Iterator[TestClient]:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [{"name": "alice", "token": ALICE, "access": "read-write"},
                                             {"name": "bob", "token": BOB, "access": "read-write"}]}))
    configured = Settings(schema_path=BOOK_SCHEMA, storage_dir=tmp_path / "data", tokens_file=tokens)
    with TestClient(build_app(create_service(configured), configured), base_url="http://127.0.0.1") as client:
        yield client


def test_rest_writes_without_tokens_are_made_by_rest_whatever_the_headers_say(open_client: TestClient) -> None:
    spoof = {"x-actor": "mallory", "x-schemadoc-actor": "mallory", "x-forwarded-user": "mallory",
             "x-remote-user": "mallory"}
    doc_id = open_client.post(f"{API}/documents", headers=spoof).json()["doc_id"]
    written = open_client.put(f"{API}/documents/{doc_id}", params={"path": "/title"}, headers=spoof,
                              json={"node_data": "Dune", "version": 1})
    assert written.status_code == 200, written.text
    history = open_client.get(f"{API}/documents/{doc_id}/history").json()
    assert [entry["actor"] for entry in history["entries"]] == ["rest", "rest"]
    assert all("actor" not in entry["info"] for entry in history["entries"])  # shown once, at the top


def test_an_actor_member_in_a_write_body_is_refused_and_changes_nothing(open_client: TestClient) -> None:
    doc_id = open_client.post(f"{API}/documents").json()["doc_id"]
    refused = open_client.put(f"{API}/documents/{doc_id}", params={"path": "/title"},
                              json={"node_data": "Dune", "version": 1, "actor": "mallory"})
    assert refused.status_code == 400
    assert refused.json()["error"]["code"] == "invalid-request"
    assert "actor" in json.dumps(refused.json()["error"]["details"])
    history = open_client.get(f"{API}/documents/{doc_id}/history").json()
    assert [(entry["version"], entry["actor"]) for entry in history["entries"]] == [(1, "rest")]


def test_rest_writes_with_tokens_are_made_by_the_tokens_name_and_history_filters_by_it(
        token_client: TestClient) -> None:
    alice, bob = ({"authorization": f"Bearer {secret}", "x-actor": "mallory"} for secret in (ALICE, BOB))
    doc_id = token_client.post(f"{API}/documents", headers=alice).json()["doc_id"]
    for version, who in enumerate((bob, alice, bob), start=1):
        written = token_client.put(f"{API}/documents/{doc_id}", params={"path": "/title"}, headers=who,
                                   json={"node_data": f"t{version}", "version": version})
        assert written.status_code == 200, written.text
    history = token_client.get(f"{API}/documents/{doc_id}/history", headers=alice).json()
    assert [entry["actor"] for entry in history["entries"]] == ["alice", "bob", "alice", "bob"]
    only_bob = token_client.get(f"{API}/documents/{doc_id}/history", headers=alice,
                                params={"actor": "bob", "summary": "true"}).json()
    assert [(entry["version"], entry["actor"]) for entry in only_bob["entries"]] == [(2, "bob"), (4, "bob")]
    assert (only_bob["next_since_version"], only_bob["has_more"]) == (4, False)
    changes = token_client.get(f"{API}/changes", headers=alice).json()["changes"]
    assert [change["actor"] for change in changes if change["doc_id"] == doc_id] == ["alice", "bob", "alice", "bob"]


# -- token names: the actor, so bounded ------------------------------------------------------------


@pytest.mark.parametrize("name", ["x" * 201, "line\nbreak", "tab\there"])
def test_a_token_name_that_cannot_be_journaled_as_an_actor_is_refused(name: str) -> None:
    raw = json.dumps({"tokens": [{"name": name, "token": ALICE, "access": "read-write"}]}).encode()
    with pytest.raises(SchemaDocError) as refused:
        parse_tokens(Path("tokens.json"), raw)
    assert refused.value.code == "config-invalid"
    assert "printable" in refused.value.message


def test_a_token_name_of_200_printable_characters_is_accepted() -> None:
    raw = json.dumps({"tokens": [{"name": "é" * 200, "token": ALICE, "access": "read-write"}]}).encode()
    assert parse_tokens(Path("tokens.json"), raw)[0].name == "é" * 200


# -- PostgreSQL: the actor in the entry and in its own column, for the feed -------------------------


def postgres_service(url: str) -> DocumentService:
    from schemadoc.storage.postgres import PostgresDocumentStore

    service = DocumentService(load_schema(BOOK_SCHEMA), PostgresDocumentStore(url))
    service.open()
    return service


@pytest.mark.postgres
def test_on_postgresql_a_diff_names_its_actors_within_the_same_bounds(monkeypatch: pytest.MonkeyPatch) -> None:
    with throwaway_schema() as url:
        service = postgres_service(url)
        try:
            doc_id, *_ = service.create_document(actor="w0")
            for version in range(1, 8):  # v2 w1, v3 w2, v4 w0, v5 w1, v6 w2, v7 w0, v8 w1
                service.update_node(doc_id, "/title", f"t{version}" * 100, version, actor=f"w{version % 3}")
            assert diff_actors(service, doc_id, 1, 8) == (["w1", "w2", "w0"], True, 8)
            assert diff_actors(service, doc_id, 8, 5) == (["w2", "w0", "w1"], True, 8)
            monkeypatch.setattr(service_history, "DIFF_ACTOR_VERSIONS", 2)
            assert diff_actors(service, doc_id, 1, 8) == (["w1", "w2"], False, 3)
            monkeypatch.setattr(service_history, "DIFF_ACTOR_BYTES", 1)
            assert diff_actors(service, doc_id, 1, 8) == (["w1"], False, 2)
        finally:
            service.close()


@pytest.mark.postgres
def test_on_postgresql_the_actor_survives_a_restart_and_the_shared_change_feed_names_it() -> None:
    with throwaway_schema() as url:
        first = postgres_service(url)
        doc_id, *_ = first.create_document(actor="alice")
        first.update_node(doc_id, "/title", "Dune", 1, actor="bob")
        first.update_node(doc_id, "/title", "Dune II", 2)
        first.close()

        second = postgres_service(url)
        try:
            assert actors(second, doc_id) == [(1, "create", "alice"), (2, "update_node", "bob"),
                                              (3, "update_node", None)]
            assert actors(second, doc_id, actor="bob") == [(2, "update_node", "bob")]
            assert [(change.version, change.actor) for change in second.changes().changes] == [
                (1, "alice"), (2, "bob"), (3, None)]
        finally:
            second.close()


@pytest.mark.postgres
def test_on_postgresql_a_journal_from_before_the_actor_column_is_migrated_and_reads_with_no_actor() -> None:
    import psycopg
    from psycopg import sql

    from schemadoc.storage.postgres.connections import split_schema

    with throwaway_schema() as url:
        first = postgres_service(url)
        doc_id, *_ = first.create_document()
        first.update_node(doc_id, "/title", "Dune", 1)
        first.close()
        plain, schema = split_schema(url)
        assert schema is not None
        with psycopg.connect(plain, autocommit=True) as conn:  # back to the tables of migration 4
            conn.execute(sql.SQL("ALTER TABLE {}.journal DROP COLUMN actor").format(sql.Identifier(schema)))
            for column in ("schema_digest", "verdict"):  # and what later migrations added
                conn.execute(sql.SQL("ALTER TABLE {}.documents DROP COLUMN {}").format(sql.Identifier(schema),
                                                                                   sql.Identifier(column)))
            conn.execute(sql.SQL("DELETE FROM {}.schema_migrations WHERE version >= 5").format(sql.Identifier(schema)))

        second = postgres_service(url)  # migrates to 5 and on
        try:
            assert actors(second, doc_id) == [(1, "create", None), (2, "update_node", None)]
            second.update_node(doc_id, "/title", "Dune II", 2, actor="carol")
            assert [change.actor for change in second.changes().changes] == [None, None, "carol"]
            assert actors(second, doc_id, actor="carol") == [(3, "update_node", "carol")]
        finally:
            second.close()


@pytest.mark.parametrize("actor", ["", "x" * 201])
def test_a_rest_history_filter_outside_its_bounds_is_a_catalogued_error(open_client: TestClient, actor: str) -> None:
    doc_id = open_client.post(f"{API}/documents").json()["doc_id"]
    refused = open_client.get(f"{API}/documents/{doc_id}/history", params={"actor": actor})
    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["details"]["argument"]) == ("invalid-request", "actor")
