"""The server's stop in process: the gate, the feeds' final event and the deadline of the grace."""

from __future__ import annotations

import threading
import time
from collections.abc import AsyncIterator
from pathlib import Path

import anyio
import httpx
import pytest
from test_rest_history import write

from schemadoc.config import Settings
from schemadoc.interfaces.app import build_app
from schemadoc.interfaces.http import feeds
from schemadoc.interfaces.http.shutdown import STOPPING, Stopping
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def service() -> DocumentService:
    service = DocumentService(load_schema(BOOK_SCHEMA), MemoryDocumentStore())
    service.open()
    return service


async def versions_until_the_end(events: AsyncIterator[feeds.FeedEvent], stopping: Stopping,
                                 stop_after: int) -> tuple[list[int], feeds.FeedEvent]:
    seen: list[int] = []
    with anyio.fail_after(5):
        async for item in events:
            if item.kind == "version":
                assert item.version is not None
                seen.append(item.version)
                if len(seen) == stop_after:
                    stopping.begin()
            elif item.kind == "error":
                return seen, item
    raise AssertionError("the feed ended without a final event")


@pytest.mark.anyio
@pytest.mark.parametrize("stop_after", [2, 6])
async def test_a_feed_ends_with_shutting_down_naming_the_last_version_sent(service: DocumentService,
                                                                           stop_after: int) -> None:
    """Stopped while it catches up from the journal (after 2 of 6 versions) or while it follows (after 6)."""
    doc_id, *_ = service.create_document()
    await write(service, doc_id, "v2", "v3", "v4", "v5", "v6")
    stopping = Stopping(10, exit_now=lambda code: None)
    stopping.attach_loop()
    events = feeds.document_events(service, doc_id, 0, stopping=stopping, retry_ms=1500, page_size=1)
    seen, final = await versions_until_the_end(events, stopping, stop_after)
    assert seen == list(range(1, stop_after + 1))
    assert final.body["error"]["code"] == "shutting-down"
    assert final.body["error"]["details"]["last_version"] == stop_after
    assert final.retry_ms == 1500
    stopping.finish()


def test_the_stop_ends_the_process_when_it_outlasts_the_grace() -> None:
    exits: list[int] = []
    done = threading.Event()

    def exit_now(code: int) -> None:
        exits.append(code)
        done.set()

    stopping = Stopping(0.2, exit_now=exit_now)
    stopping.begin()
    assert done.wait(5)
    assert exits == [0]


def test_the_stop_ends_the_process_even_when_a_log_handler_cannot_flush() -> None:
    """The deadline flushes the log handlers before it exits; one whose stream is closed (a handler left behind by
    whoever configured logging before) must not keep the process alive."""
    import logging

    class Closed(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            pass

        def flush(self) -> None:
            raise ValueError("I/O operation on closed file.")  # what a handler on a closed stream raises

    broken = Closed()
    logging.getLogger().addHandler(broken)
    exits: list[int] = []
    done = threading.Event()

    def exit_now(code: int) -> None:
        exits.append(code)
        done.set()

    try:
        stopping = Stopping(0.2, exit_now=exit_now)
        stopping.begin()
        assert done.wait(5)
    finally:
        logging.getLogger().removeHandler(broken)
    assert exits == [0]


def test_a_stop_that_ends_within_the_grace_is_not_cut() -> None:
    exits: list[int] = []
    stopping = Stopping(0.3, exit_now=exits.append)
    stopping.begin()
    stopping.finish()
    time.sleep(0.6)
    assert exits == []


@pytest.mark.parametrize(("grace", "wait"), [(1, 1), (2, 1), (3, 2), (10, 8), (60, 58)])
def test_uvicorn_waits_for_requests_less_than_the_grace(grace: int, wait: int) -> None:
    assert Stopping(grace).connections_timeout() == wait


@pytest.mark.anyio
async def test_once_the_stop_began_every_request_gets_503_shutting_down(service: DocumentService) -> None:
    app = build_app(service, Settings(schema_path=BOOK_SCHEMA))
    stopping: Stopping = getattr(app.state, STOPPING)
    stopping._exit_now = lambda code: None  # the test process must not exit
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
        before = await http.post("/api/v1/documents", json={})
        assert before.status_code == 201
        stopping.begin()
        for method, path in (("POST", "/api/v1/documents"), ("GET", "/health"), ("POST", "/mcp")):
            answer = await http.request(method, path, json={})
            assert answer.status_code == 503
            assert answer.json()["error"]["code"] == "shutting-down"
            assert answer.headers["connection"] == "close"
            assert int(answer.headers["retry-after"]) >= 1
            # the request log still gives the refusal its id, in the header and the body alike
            assert answer.json()["error"]["request_id"] == answer.headers["x-request-id"]
    stopping.finish()
    assert stopping.refused == 3
    assert len(service.list_documents().documents) == 1
