"""schemadoc.client (sync and async) against a real server on 127.0.0.1: every REST operation with typed
results, errors as exceptions carrying the error object, If-Match, the retry-on-conflict helper, the
/changes feed and the event stream with resume (also across a server restart)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from http_server import Server

from schemadoc.client import AsyncClient, Client, ClientError, VersionConflictError
from schemadoc.client import models as m
from schemadoc.operations.results import JournalSummaryBody


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    base = tmp_path_factory.mktemp("client")
    running = Server(base / "data", base / "logs")
    yield running
    running.stop()


@pytest.fixture
def client(server: Server) -> Iterator[Client]:
    with Client(server.url) as client:
        yield client


def test_every_operation_has_a_typed_result(client: Client) -> None:
    assert client.health() == {"status": "healthy"}
    created = client.create_document()
    assert isinstance(created, m.CreateDocumentResult) and created.version == 1
    doc = created.doc_id
    read = client.read_node(doc, "/title")
    assert isinstance(read, m.ReadNodeResult) and (read.node_content, read.version) == ("Untitled", 1)
    assert isinstance(client.read_node(doc, max_depth=1), m.BoundedReadNodeResult)
    assert client.update_node(doc, "/title", "Dune", 1).version == 2
    assert client.create_node(doc, "/tags/-", "sf", 2).created_node_path == "/tags/0"
    assert client.apply_patch(doc, [{"op": "add", "path": "/tags/-", "value": "classic"}], 3).version == 4
    assert client.delete_node(doc, "/tags/1", 4).deleted_node == "classic"
    merged = client.merge_patch(doc, {"status": "review"}, 5, path="/metadata")
    assert isinstance(merged, m.MergePatchResult) and merged.updated_node["status"] == "review"
    chapter = {"id": "ch-1", "title": "One", "sections": [{"title": "S", "paragraphs": []}]}
    client.create_node(doc, "/chapters/-", chapter, 6)
    client.create_node(doc, "/chapters/-", {**chapter, "id": "ch-2"}, 7)
    assert client.move_node(doc, "/chapters/1", "/chapters/0", 8).node_path == "/chapters/0"
    dry = client.update_node(doc, "/title", "Dry", 9, dry_run=True)
    assert dry.dry_run and client.read_node(doc, "/title").node_content == "Dune"
    checked = client.validate_node(doc, "/title", 7)
    assert isinstance(checked, m.ValidateNodeResult) and not checked.valid and checked.version == 9

    assert client.outline(doc).outline["type"] == "object"
    assert isinstance(client.next_incomplete(doc, limit=3), m.NextIncompleteResult)
    assert [hit.doc_id for hit in client.search("Dune", doc_ids=[doc]).hits] == [doc]
    assert client.stats(doc).journal_length == 9
    assert "Dune" in client.render(doc).text
    assert client.get_schema().root_schema["title"] == "Book"
    assert client.get_node_schema("/title").node_schema["type"] == "string"
    assert any(entry.code == "version-conflict" for entry in client.error_catalog().errors)
    assert doc in [d.doc_id for d in client.list_documents(limit=1000).documents]

    history = client.history(doc)
    assert [entry.version for entry in history.entries] == list(range(1, 10))
    assert {entry.actor for entry in history.entries} == {"rest"}  # no tokens: the door
    assert client.history(doc, actor="someone else").entries == []
    assert client.read_version(doc, 1)["title"] == "Untitled"
    assert client.diff(doc, 1, 2).patch == [{"op": "replace", "path": "/title", "value": "Dune"}]
    assert client.revert(doc, 1, 9).version == 10
    assert client.delete_document(doc, 10).deleted is True
    assert client.undelete_document(doc).deleted is False


def test_the_arguments_beyond_the_spec_reach_the_server(client: Client) -> None:
    """content, valid, fill_defaults, summary, include_defaults and format: each sent where the server reads it."""
    doc = client.create_document(content={"title": "Given"}).doc_id
    assert client.read_node(doc, "/title").node_content == "Given"
    assert client.read_node(doc, "/tags").node_content == []  # the schema's default filled in
    assert not client.validate_node(doc, "/", {"title": "Bare"}).valid
    assert client.validate_node(doc, "/", {"title": "Bare"}, fill_defaults=True).valid
    with pytest.raises(ClientError) as refused:
        client.update_node(doc, "/", {"title": "Bare"}, 1)
    assert refused.value.code == "validation-failed"
    assert client.update_node(doc, "/", {"title": "Bare"}, 1, fill_defaults=True).version == 2
    chapter = {"id": "ch-1", "title": "One", "sections": [{"title": "S", "paragraphs": []}]}
    assert client.create_node(doc, "/chapters/-", chapter, 2, fill_defaults=True).version == 3
    assert all(isinstance(entry, JournalSummaryBody) for entry in client.history(doc, summary=True).entries)
    assert all(isinstance(entry, m.JournalEntryBody) for entry in client.history(doc).entries)
    plain = client.next_incomplete(doc, limit=50)
    with_defaults = client.next_incomplete(doc, limit=50, include_defaults=True)
    assert len(with_defaults.items) > len(plain.items)
    assert "Bare" in client.render(doc, format="markdown").text
    assert doc not in [d.doc_id for d in client.list_documents(limit=1000, valid=False).documents]
    assert doc in [d.doc_id for d in client.list_documents(limit=1000).documents]
    assert client.get_node_schema().node_schema["title"] == "Book"


def test_errors_are_raised_with_the_error_object(client: Client) -> None:
    doc = client.create_document().doc_id
    with pytest.raises(ClientError) as missing:
        client.read_node(doc, "/nowhere")
    assert missing.value.status == 404 and missing.value.code == "path-not-found"
    assert missing.value.error["code"] == "path-not-found" and missing.value.remediation
    with pytest.raises(ClientError) as invalid:
        client.update_node(doc, "/title", "", 1)
    assert invalid.value.code == "validation-failed"
    assert [v["path"] for v in invalid.value.violations] == ["/title"]
    with pytest.raises(VersionConflictError) as stale:
        client.update_node(doc, "/title", "Late", 7)  # If-Match: "7"
    assert stale.value.status == 409 and stale.value.details


def test_retry_on_conflict_reads_again_and_writes_against_the_new_version(server: Server, client: Client) -> None:
    doc = client.create_document().doc_id
    attempts: list[int] = []

    def add_tag(read: m.ReadNodeResult) -> m.CreateNodeResult:
        attempts.append(read.version)
        if len(attempts) == 1:  # another writer gets in between the read and the write
            with Client(server.url) as other:
                other.create_node(doc, "/tags/-", "theirs", read.version)
        return client.create_node(doc, "/tags/-", "mine", read.version)

    result = client.retry_on_conflict(doc, add_tag, path="/tags")
    assert attempts == [1, 2] and result.version == 3
    assert client.read_node(doc, "/tags").node_content == ["theirs", "mine"]

    def always_stale(read: m.ReadNodeResult) -> m.UpdateNodeResult:
        return client.update_node(doc, "/title", "x", read.version - 1)

    with pytest.raises(VersionConflictError):
        client.retry_on_conflict(doc, always_stale, attempts=2)


def test_the_changes_feed_is_walked_page_by_page_and_resumed(client: Client) -> None:
    start = client.changes(limit=1000).next_cursor
    for _ in range(1000):  # follow to the end of the feed
        page = client.changes(since=start, limit=1000)
        if not page.changes:
            break
        start = page.next_cursor
    doc = client.create_document().doc_id
    for version, tag in enumerate(["a", "b", "c", "d"], start=1):
        client.create_node(doc, "/tags/-", tag, version)
    seen = [c for c in client.iter_changes(since=start, limit=2) if c.doc_id == doc]
    assert [c.version for c in seen] == [1, 2, 3, 4, 5]
    resumed = [c.version for c in client.iter_changes(since=seen[2].cursor) if c.doc_id == doc]
    assert resumed == [4, 5]


def test_the_event_stream_resumes_from_the_last_event_id(client: Client) -> None:
    doc = client.create_document().doc_id
    for version, tag in enumerate(["a", "b", "c"], start=1):
        client.create_node(doc, "/tags/-", tag, version)
    first = []
    for event in client.events(doc, since=0):
        first.append(event)
        if event.version == 2:
            break
    assert [(e.event, e.version) for e in first] == [("version", 1), ("version", 2)]
    assert first[1].entry is not None and first[1].entry.op == "create_node"
    rest = []
    for event in client.events(doc, last_event_id=first[-1].id):
        rest.append(event.version)
        if event.version == 4:
            break
    assert rest == [3, 4]
    ended = []
    for event in client.events(doc, since=3):  # ends by itself with the purge
        ended.append(event.event)
        if event.version == 4:
            client.delete_document(doc, 4)
            assert client.purge_document(doc).purged is True
    assert ended == ["version", "version", "purged"]  # 4, the deletion (5), the purge


def test_a_dropped_stream_reconnects_with_last_event_id_across_a_restart(tmp_path: Path) -> None:
    storage, logs = tmp_path / "data", tmp_path / "logs"
    first = Server(storage, logs)
    seen: list[Any] = []
    with Client(first.url) as client:
        doc = client.create_document().doc_id
        client.update_node(doc, "/title", "Before", 1)

        def follow() -> None:
            with Client(first.url) as listener:
                for event in listener.events(doc, since=0, retry_seconds=0.2, max_retries=100):
                    seen.append(event.version)
                    if event.version == 4:
                        return

        thread = threading.Thread(target=follow, daemon=True)
        thread.start()
        for _ in range(200):
            if seen == [1, 2]:
                break
            threading.Event().wait(0.05)
        assert seen == [1, 2]
        assert first.stop() == 0  # the stream drops
        second = Server(storage, logs, port=first.port)
        try:
            with Client(second.url) as again:
                again.update_node(doc, "/title", "After", 2)
                again.update_node(doc, "/title", "Later", 3)
            thread.join(timeout=60)
            assert not thread.is_alive()
        finally:
            second.stop()
    assert seen == [1, 2, 3, 4]  # nothing missed, nothing twice


def test_the_async_client_does_the_same(server: Server) -> None:
    async def session() -> None:
        async with AsyncClient(server.url) as client:
            doc = (await client.create_document()).doc_id
            assert (await client.update_node(doc, "/title", "Async", 1)).version == 2
            with pytest.raises(VersionConflictError):
                await client.update_node(doc, "/title", "Stale", 1)

            async def retitle(read: m.ReadNodeResult) -> m.UpdateNodeResult:
                return await client.update_node(doc, "/title", read.node_content + "!", read.version)

            assert (await client.retry_on_conflict(doc, retitle, path="/title")).updated_node == "Async!"
            versions = [c.version async for c in client.iter_changes(since=0, limit=500) if c.doc_id == doc]
            assert versions == [1, 2, 3]
            events = []
            async for event in client.events(doc, since=1):
                events.append(event.version)
                if event.version == 3:
                    break
            assert events == [2, 3]

    anyio.run(session)
