"""Live change feeds from a real ``schemadoc serve --transport http``: SSE readers and MCP subscribers.

Writes come from a REST client; an SSE client (httpx streaming) follows
``/api/v1/documents/{doc_id}/events`` and MCP clients of both protocol eras follow
``schema://{doc_id}`` at ``/mcp``. Every committed version must arrive once and in order, a
reconnect with ``Last-Event-ID`` must resume without a gap, and failed writes must stay silent.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
import pytest
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from http_server import Server
from mcp import Client
from mcp.shared.subscriptions import ResourceUpdated
from mcp.types import ServerNotification

EVENT_TIMEOUT_SECONDS = 10.0
QUIET_SECONDS = 0.5
"""How long a feed must stay silent after a write that failed."""

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

Event = dict[str, str]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def serve(root: Path) -> Server:
    """A server whose documents live in ``root/data`` and whose logs go to ``root``."""
    return Server(root / "data", root)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    server = serve(tmp_path_factory.mktemp("feeds"))
    try:
        yield server
    finally:
        assert server.stop() == 0
        assert "Traceback" not in server.stderr


# -- an SSE client ---------------------------------------------------------------------------


async def _read_events(response: httpx.Response, events: MemoryObjectSendStream[Event]) -> None:
    """Parse the stream into events ({id, event, data}); comments (keep-alives) are skipped.

    The stream ends when the server ends it (or drops the connection, as a stopping server may).
    """
    fields: Event = {}
    async with events:
        with contextlib.suppress(httpx.TransportError):
            async for line in response.aiter_lines():
                if not line:
                    if fields:
                        await events.send(fields)
                    fields = {}
                elif not line.startswith(":"):
                    name, _, value = line.partition(":")
                    fields[name] = value.removeprefix(" ")


@contextlib.asynccontextmanager
async def following(http: httpx.AsyncClient, doc_id: str, *, since: int | None = None,
                    last_event_id: str | None = None) -> AsyncIterator[MemoryObjectReceiveStream[Event]]:
    """Follow a document's event stream; leaving the block disconnects."""
    params = {} if since is None else {"since": since}
    headers = {} if last_event_id is None else {"Last-Event-ID": last_event_id}
    send, receive = anyio.create_memory_object_stream[Event](1000)
    async with http.stream("GET", f"/documents/{doc_id}/events", params=params, headers=headers,
                           timeout=httpx.Timeout(10, read=None)) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        async with anyio.create_task_group() as group:
            group.start_soon(_read_events, response, send)
            try:
                yield receive
            finally:
                group.cancel_scope.cancel()


async def next_events(stream: MemoryObjectReceiveStream[Event], count: int) -> list[Event]:
    with anyio.fail_after(EVENT_TIMEOUT_SECONDS):
        return [await stream.receive() for _ in range(count)]


async def assert_quiet(stream: MemoryObjectReceiveStream[Event]) -> None:
    with anyio.move_on_after(QUIET_SECONDS):
        extra = await stream.receive()
        raise AssertionError(f"unexpected event {extra}")


async def current_version(http: httpx.AsyncClient, doc_id: str) -> int:
    return int((await http.get(f"/documents/{doc_id}")).headers["etag"].strip('"'))


async def failed_writes(http: httpx.AsyncClient, doc_id: str) -> None:
    """A stale write, an invalid one, a dry run and a merge patch that does not fit: none commits."""
    version = await current_version(http, doc_id)
    url = f"/documents/{doc_id}"
    stale = await http.put(url, params={"path": "/title"}, json={"node_data": "stale", "version": version - 1})
    invalid = await http.put(url, params={"path": "/title"}, json={"node_data": "", "version": version})
    dry = await http.put(url, params={"path": "/title", "dry_run": "true"}, json={"node_data": "d", "version": version})
    misfit = await http.patch(url, content=b'{"colour": "red"}',
                              headers={"Content-Type": "application/merge-patch+json", "If-Match": f'"{version}"'})
    assert [stale.status_code, invalid.status_code, dry.status_code, misfit.status_code] == [409, 422, 200, 422]
    assert await current_version(http, doc_id) == version


# -- the tests -------------------------------------------------------------------------------


async def test_every_committed_version_arrives_once_in_order_and_a_reconnect_resumes_without_a_gap(
        server: Server) -> None:
    async with httpx.AsyncClient(base_url=f"{server.url}/api/v1", timeout=30) as http:
        doc_id = (await http.post("/documents")).json()["doc_id"]
        url = f"/documents/{doc_id}"
        async with following(http, doc_id, since=0) as stream:
            assert [e["id"] for e in await next_events(stream, 1)] == ["1"]
            await http.put(url, params={"path": "/title"}, json={"node_data": "Dune", "version": 1})
            await failed_writes(http, doc_id)
            await http.post(f"{url}/nodes", params={"path": "/tags/-"}, json={"node_data": "sf"},
                            headers={"If-Match": '"2"'})
            await http.patch(url, params={"path": "/metadata"}, content=b'{"status": "review"}',
                             headers={"Content-Type": "application/merge-patch+json", "If-Match": '"3"'})

            async def append(tag: str) -> int:  # concurrent writers: some win, the others conflict
                response = await http.post(f"{url}/nodes", params={"path": "/tags/-"}, json={"node_data": tag},
                                           headers={"If-Match": "*"})
                return response.status_code

            statuses = await asyncio.gather(*(append(f"t{n}") for n in range(8)))
            assert set(statuses) <= {201, 409}
            await http.post(f"{url}/revert", json={"to_version": 2}, headers={"If-Match": "*"})
            latest = await current_version(http, doc_id)
            assert latest == 5 + statuses.count(201)

            events = await next_events(stream, latest - 1)
            await assert_quiet(stream)
        assert [int(e["id"]) for e in events] == list(range(2, latest + 1))
        assert {e["event"] for e in events} == {"version"}
        journal = (await http.get(f"{url}/history", params={"since_version": 1})).json()["entries"]
        assert [orjson.loads(e["data"]) for e in events] == journal
        assert [entry["op"] for entry in journal][:3] == ["update_node", "create_node", "merge_patch"]

        # disconnected: two more versions commit; the reconnect names the last id it saw
        for title in ("Away 1", "Away 2"):
            await http.put(url, params={"path": "/title"}, json={"node_data": title}, headers={"If-Match": "*"})
        async with following(http, doc_id, since=0, last_event_id=events[-1]["id"]) as stream:
            resumed = await next_events(stream, 2)
            await http.put(url, params={"path": "/title"}, json={"node_data": "Back"}, headers={"If-Match": "*"})
            live = await next_events(stream, 1)
            await failed_writes(http, doc_id)
            await assert_quiet(stream)
        assert [int(e["id"]) for e in resumed + live] == [latest + 1, latest + 2, latest + 3]
        assert orjson.loads(live[0]["data"])["patch"] == [{"op": "replace", "path": "/title", "value": "Back"}]


async def test_deleting_keeps_the_stream_and_purging_ends_it(server: Server) -> None:
    async with httpx.AsyncClient(base_url=f"{server.url}/api/v1", timeout=30) as http:
        doc_id = (await http.post("/documents")).json()["doc_id"]
        url = f"/documents/{doc_id}"
        async with following(http, doc_id, since=0) as stream:
            assert [e["id"] for e in await next_events(stream, 1)] == ["1"]  # following from here on
            assert (await http.delete(url, headers={"If-Match": '"1"'})).status_code == 200
            assert (await http.post(f"{url}/undelete")).status_code == 200
            assert (await http.delete(url, headers={"If-Match": '"3"'})).status_code == 200
            assert (await http.post(f"{url}/purge")).status_code == 200
            events = await next_events(stream, 4)
            with anyio.fail_after(EVENT_TIMEOUT_SECONDS):  # the server ends the stream
                with pytest.raises(anyio.EndOfStream):
                    await stream.receive()
    assert [(e.get("id"), e["event"]) for e in events] == [
        ("2", "version"), ("3", "version"), ("4", "version"), (None, "purged")]
    assert [orjson.loads(e["data"]).get("op") for e in events[:3]] == [
        "delete_document", "undelete_document", "delete_document"]


async def test_mcp_subscribers_of_both_eras_hear_of_each_rest_write_and_of_no_failed_one(server: Server) -> None:
    heard: list[str] = []
    arrived = anyio.Event()

    async def on_message(message: Any) -> None:
        nonlocal arrived
        if isinstance(message, ServerNotification) and message.method == "notifications/resources/updated":
            heard.append(str(message.params.uri))
            arrived.set()

    async def legacy_hears(count: int) -> None:
        nonlocal arrived
        with anyio.fail_after(EVENT_TIMEOUT_SECONDS):
            while len(heard) < count:
                await arrived.wait()
                arrived = anyio.Event()

    async with httpx.AsyncClient(base_url=f"{server.url}/api/v1", timeout=30) as http:
        doc_id = (await http.post("/documents")).json()["doc_id"]
        uri = f"schema://{doc_id}"
        url = f"/documents/{doc_id}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # resources/subscribe is deprecated on the client
            async with (Client(f"{server.url}/mcp", mode="legacy", message_handler=on_message) as legacy,
                        Client(f"{server.url}/mcp") as modern):
                await legacy.subscribe_resource(uri)
                async with modern.listen(resource_subscriptions=[uri]) as listening:
                    # the legacy notifications travel on a stream the client opens in the background:
                    # write until the first one arrives, then count from there
                    with anyio.fail_after(EVENT_TIMEOUT_SECONDS):
                        while not heard:
                            await http.put(url, params={"path": "/title"}, json={"node_data": "warm-up"},
                                           headers={"If-Match": "*"})
                            with anyio.move_on_after(0.2):
                                await arrived.wait()
                    with anyio.move_on_after(QUIET_SECONDS):  # drain the modern listener's backlog
                        while True:
                            await listening.__anext__()
                    await anyio.sleep(QUIET_SECONDS)
                    base = len(heard)

                    for n in range(3):
                        await http.put(url, params={"path": "/title"}, json={"node_data": f"Title {n}"},
                                       headers={"If-Match": "*"})
                        with anyio.fail_after(EVENT_TIMEOUT_SECONDS):
                            assert await listening.__anext__() == ResourceUpdated(uri=uri)
                        await legacy_hears(base + n + 1)

                    await failed_writes(http, doc_id)
                    with anyio.move_on_after(QUIET_SECONDS) as quiet:
                        extra = await listening.__anext__()
                        raise AssertionError(f"a failed write was announced: {extra}")
                    assert quiet.cancelled_caught
                    assert len(heard) == base + 3

                    await http.put(url, params={"path": "/title"}, json={"node_data": "Last"},
                                   headers={"If-Match": "*"})
                    with anyio.fail_after(EVENT_TIMEOUT_SECONDS):
                        assert await listening.__anext__() == ResourceUpdated(uri=uri)
                    await legacy_hears(base + 4)
                    await anyio.sleep(QUIET_SECONDS)
    assert heard == [uri] * (base + 4)


async def test_a_server_with_open_streams_still_stops_promptly(tmp_path: Path) -> None:
    server = serve(tmp_path)
    try:
        async with httpx.AsyncClient(base_url=f"{server.url}/api/v1", timeout=30) as http:
            doc_id = (await http.post("/documents")).json()["doc_id"]
            async with following(http, doc_id, since=0) as stream:
                await next_events(stream, 1)
                started = time.monotonic()
                code = await anyio.to_thread.run_sync(server.stop)
                elapsed = time.monotonic() - started
                with anyio.fail_after(EVENT_TIMEOUT_SECONDS):
                    final = await stream.receive()  # the stream ends with shutting-down (docs/deployment.md)
                assert final["event"] == "error"
                assert orjson.loads(final["data"])["error"]["details"]["last_version"] == 1
                with anyio.fail_after(EVENT_TIMEOUT_SECONDS), pytest.raises(anyio.EndOfStream):
                    await stream.receive()
    finally:
        server.kill()
    assert code == 0
    assert elapsed < 5, f"stopping took {elapsed:.1f} s with an open event stream"
