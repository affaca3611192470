"""Back-pressure on change subscribers, driven in process.

A feed (the REST event stream's source) queues what its reader has not taken, charged in bytes the
service measured for each change, and cuts the reader off beyond ``subscriber_buffer_bytes``: the
queue is dropped at once and the feed ends with ``subscriber-too-slow`` naming the last version sent,
from which a new feed resumes without a gap. Catch-up pages are sized in bytes. Subscriber slots are
also counted per client address, and the MCP notifier keeps one small notice per document however
slowly its subscribers take them.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from mcp import Client
from test_rest_history import write

from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.http import feeds
from schemadoc.interfaces.http.subscribers import SubscriberSlots
from schemadoc.interfaces.mcp_door.notify import ChangeNotifier
from schemadoc.interfaces.mcp_door.server import build_mcp_server
from schemadoc.interfaces.rest.wire import dump_body
from schemadoc.schema import load_schema
from schemadoc.service import ChangeEvent, DocumentService
from schemadoc.storage.files import FileDocumentStore
from schemadoc.storage.memory import MemoryDocumentStore

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
BIG = "x" * 290
"""A long title (the schema allows 300 characters): a journal entry of about 400 bytes."""
BUFFER = 1500


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def service() -> DocumentService:
    service = DocumentService(load_schema(BOOK_SCHEMA), MemoryDocumentStore())
    service.open()
    return service


async def take(events: AsyncIterator[feeds.FeedEvent], count: int) -> list[feeds.FeedEvent]:
    taken: list[feeds.FeedEvent] = []
    with anyio.fail_after(5):
        while len(taken) < count:
            item = await events.__anext__()
            if item.kind != "heartbeat":
                taken.append(item)
    return taken


def feed(service: DocumentService, doc_id: str, since: int, buffer_bytes: int) -> Any:
    return feeds.document_events(service, doc_id, since, buffer_bytes=buffer_bytes, encode=dump_body)


@pytest.mark.anyio
async def test_a_reader_that_leaves_more_than_its_buffer_unread_is_cut_off_and_resumes_without_a_gap(
        service: DocumentService) -> None:
    doc_id, *_ = service.create_document()
    async with contextlib.aclosing(feed(service, doc_id, 1, BUFFER)) as events:
        await write(service, doc_id, "v2")
        assert [e.version for e in await take(events, 1)] == [2]  # from the journal
        await write(service, doc_id, "v3")
        assert [e.version for e in await take(events, 1)] == [3]  # live: the feed follows
        await write(service, doc_id, *(f"{n}{BIG}" for n in range(4, 14)))  # about 4 KB nobody reads
        await anyio.sleep(0.05)  # the events reach the loop
        inbox = events.ag_frame.f_locals["inbox"]
        queued_before_reading = len(inbox.pending)
        (final,) = await take(events, 1)
        with pytest.raises(StopAsyncIteration):
            await events.__anext__()
    async with contextlib.aclosing(feed(service, doc_id, 3, BUFFER)) as again:
        resumed = await take(again, 10)

    assert queued_before_reading == 0  # dropped when the buffer overflowed, not when the reader came back
    assert final.kind == "error"
    error = final.body["error"]
    assert error["code"] == "subscriber-too-slow"
    assert error["details"] == {"doc_id": doc_id, "last_version": 3, "limit": "subscriber_buffer_bytes",
                                "subscriber_buffer_bytes": BUFFER}
    assert [e.version for e in resumed] == list(range(4, 14))
    assert [e.body.patch[0]["value"] for e in resumed] == [f"{n}{BIG}" for n in range(4, 14)]


@pytest.mark.parametrize("store", ["memory", "files"])
@pytest.mark.anyio
async def test_catch_up_pages_are_bounded_in_bytes_and_a_reader_that_keeps_up_is_never_cut_off(
        store: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    service = DocumentService(load_schema(BOOK_SCHEMA),
                              MemoryDocumentStore() if store == "memory" else FileDocumentStore(tmp_path))
    service.open()
    doc_id, *_ = service.create_document()
    await write(service, doc_id, *(f"{n}{BIG}" for n in range(2, 32)))
    pages: list[list[int]] = []  # the JSON sizes of each page's entries (their journal lines are longer)
    history = service.history

    def recorded(*args: Any, **kwargs: Any) -> Any:
        page = history(*args, **kwargs)
        pages.append([len(orjson.dumps(entry.to_dict())) for entry in page.entries])
        return page

    monkeypatch.setattr(service, "history", recorded)
    async with contextlib.aclosing(feed(service, doc_id, 1, BUFFER)) as events:
        caught_up = await take(events, 30)
        for n in range(32, 52):  # a reader that keeps up with writes far beyond its buffer in total
            await write(service, doc_id, f"{n}{BIG}")
            caught_up += await take(events, 1)

    assert [e.version for e in caught_up] == list(range(2, 52))
    assert len([page for page in pages if page]) >= 30 * 400 // BUFFER
    assert all(sum(page[:-1]) < BUFFER for page in pages)  # a page ends with the entry that reaches the bound


def test_subscriber_slots_are_counted_per_client_address() -> None:
    slots = SubscriberSlots(per_document=10, total=10, per_client=2)
    first = slots.acquire("A", "10.0.0.1")
    slots.acquire("B", "10.0.0.1")
    with pytest.raises(SchemaDocError) as refused:
        slots.acquire("C", "10.0.0.1")
    other = slots.acquire("A", "10.0.0.2")
    stdio = [slots.acquire("D") for _ in range(3)]  # no address: not a client of anyone else's count
    first()
    again = slots.acquire("C", "10.0.0.1")

    assert refused.value.code == "too-many-subscribers"
    assert refused.value.status == 503
    assert refused.value.details == {"limit": "max_subscribers_per_client", "max_subscribers_per_client": 2,
                                     "actual": 2, "doc_id": "C"}
    assert slots.held_by("10.0.0.1") == 2 and slots.held_by("10.0.0.2") == 1
    assert callable(other) and callable(again) and len(stdio) == 3


class _Bus:
    def __init__(self) -> None:
        self.events: list[Any] = []

    async def publish(self, event: Any) -> None:
        self.events.append(event)

    def subscribe(self, listener: Any) -> Any:
        return lambda: None


@pytest.mark.anyio
async def test_the_mcp_notifier_holds_no_journal_entry_and_merges_changes_past_its_bound(
        service: DocumentService) -> None:
    doc_id, *_ = service.create_document()
    await write(service, doc_id, *(f"{n}{BIG}" for n in range(2, 11)))
    entries = service.history(doc_id, 0, 10).entries
    bus = _Bus()
    notifier = ChangeNotifier(bus, max_waiting=3)  # type: ignore[arg-type]
    notifier.attach_loop()
    notifier._enqueue(ChangeEvent(doc_id, 1, "created", entries[0], 100))
    for entry in entries[1:]:  # nine changes while the worker has not run yet
        notifier._enqueue(ChangeEvent(doc_id, entry.version, "updated", entry, 400))
    waiting = [(notice.version, notice.kind) for notice in notifier._queue]
    await notifier.drain()

    assert waiting == [(1, "created"), (2, "updated"), (10, "updated")]
    assert [type(e).__name__ for e in bus.events] == ["ResourceUpdated", "ResourcesListChanged",
                                                      "ResourceUpdated", "ResourceUpdated"]


@pytest.mark.anyio
async def test_a_legacy_subscription_to_a_resource_that_never_changes_is_acknowledged_not_kept(
        service: DocumentService) -> None:
    server = build_mcp_server(service)
    doc_id, *_ = service.create_document()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the handshake era and resources/subscribe are deprecated
        async with Client(server, mode="legacy") as client:
            await client.subscribe_resource("schema://errors?" + "x" * 100_000)  # any size the body allows
            await client.subscribe_resource(f"schema://{doc_id}")
            kept = [list(peer.uris) for peer in server.notifier._peers.values()]

    assert kept == [[f"schema://{doc_id}"]]
