"""The scripted agent of tests/guidance_agent.py through the MCP door (in process): it sends next_incomplete's
example calls and the refusals' suggested calls exactly as given, and never sees ``complete`` while a value the
server made up is still in the document; it stops within its rounds. The same agent runs over REST in
tests/unit/test_scripted_agent_rest.py."""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from guidance_agent import build, made_up_values
from mcp import Client
from mcp_support import BOOK_SCHEMA

from schemadoc.interfaces.mcp_door.server import build_mcp_server
from schemadoc.schema import LoadedSchema, load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore

WORKSHOP = Path(__file__).resolve().parents[2] / "schemas" / "workshop.schema.json"

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def _client(schema: LoadedSchema) -> AsyncIterator[Client]:
    service = DocumentService(schema, MemoryDocumentStore())
    service.open()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(build_mcp_server(service)) as client:
            yield client


def _sender(client: Client) -> Any:
    async def send(tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        result = await client.call_tool(tool, arguments)
        body = orjson.loads(result.content[0].text)  # type: ignore[union-attr]
        return (False, body["error"]) if result.is_error else (True, body)
    return send


@pytest.fixture
async def workshop() -> AsyncIterator[Client]:
    async for client in _client(load_schema(WORKSHOP)):
        yield client


@pytest.fixture
async def book() -> AsyncIterator[Client]:
    async for client in _client(load_schema(BOOK_SCHEMA)):
        yield client


async def _new_workshop(send: Any) -> str:
    """As an agent would: create without content is refused (required fields without defaults); create with an
    empty object is refused with a suggested call, sent as given."""
    ok, refused = await send("document_create", {})
    assert not ok and refused["code"] == "required-field-without-default"
    ok, refused = await send("document_create", {"content": {}})
    assert not ok and refused["code"] == "validation-failed"
    call = refused["details"]["suggested_call"]
    assert call["tool"] == "document_create" and call["resolves"] is True
    assert sorted(call["arguments"]["placeholders"]) == [  # integers made up from their bounds are marked too
        "/capacity", "/name", *(f"/sessions/{i}/{member}" for i in (0, 1)
                                for member in ("minutes", "speakers/0", "title"))]
    ok, created = await send(call["tool"], call["arguments"])
    assert ok, created
    return str(created["doc_id"])


@pytest.mark.parametrize("write_real", [False, True])
async def test_an_agent_sending_suggestions_as_given_never_ends_complete_with_made_up_values(
        workshop: Client, write_real: bool) -> None:
    send = _sender(workshop)
    doc_id = await _new_workshop(send)
    outcome = await build(send, doc_id, schema=load_schema(WORKSHOP), write_real=write_real, rounds=30)
    assert outcome.rounds < 30 and outcome.placeholders_listed > 0
    if write_real:  # it wrote real content where told to: finished, nothing made up is left
        assert outcome.complete and outcome.written > 0
        assert {"placeholder", "absent"} <= outcome.reasons
    else:  # only the server's calls: it stops with the made-up values listed, never complete
        assert not outcome.complete
        assert {item["reason"] for item in outcome.last["items"]} == {"placeholder"}


@pytest.mark.parametrize("write_real", [False, True])
async def test_the_agent_on_the_book_never_sees_complete_with_made_up_values(book: Client, write_real: bool) -> None:
    send = _sender(book)
    ok, created = await send("document_create", {})
    assert ok
    outcome = await build(send, created["doc_id"], schema=load_schema(BOOK_SCHEMA), write_real=write_real,
                          rounds=12)
    assert not outcome.complete and outcome.placeholders_listed > 0  # the book's sections nest without end
    ok, read = await send("document_read_node", {"doc_id": created["doc_id"], "node_path": "/"})
    if not write_real:
        assert made_up_values(read["node_content"], load_schema(BOOK_SCHEMA))


async def _listed(send: Any, doc_id: str, **extra: Any) -> dict[str, Any]:
    ok, found = await send("document_next_incomplete", {"doc_id": doc_id, "limit": 100, **extra})
    assert ok, found
    return found


async def test_placeholders_are_listed_until_written_over(workshop: Client) -> None:
    send = _sender(workshop)
    doc_id = await _new_workshop(send)
    listed = [item for item in (await _listed(send, doc_id))["items"] if item["reason"] == "placeholder"]
    assert {item["pointer"] for item in listed} >= {"/name", "/capacity"}
    assert all(item["example_call"] is None for item in listed)
    ok, _ = await send("document_update_node", {"doc_id": doc_id, "node_path": "/name", "version": 1,
                                                "node_data": "Example text"})  # the same text, written on purpose
    assert ok
    listed = [item["pointer"] for item in (await _listed(send, doc_id))["items"] if item["reason"] == "placeholder"]
    assert "/name" not in listed and "/capacity" in listed


async def test_example_calls_follow_each_other_and_propose_arrays_with_an_item(workshop: Client) -> None:
    send = _sender(workshop)
    doc_id = await _new_workshop(send)
    items = [item for item in (await _listed(send, doc_id))["items"] if item["example_call"]]
    assert [item["example_call"]["arguments"]["version"] for item in items] == list(range(1, len(items) + 1))
    assert next(item for item in items if item["pointer"] == "/tags")["example_call"]["arguments"]["node_data"] \
        == ["Example text"]
    for item in items:
        ok, body = await send(item["example_call"]["tool"], item["example_call"]["arguments"])
        assert ok, body
    assert "empty-array" not in {item["reason"] for item in (await _listed(send, doc_id))["items"]}


async def test_include_defaults_does_not_hold_back_complete(book: Client) -> None:
    send = _sender(book)
    _ok, created = await send("document_create", {})
    found = await _listed(send, created["doc_id"], node_path="/metadata/status")
    assert found["complete"] is True
    found = await _listed(send, created["doc_id"], node_path="/", include_defaults=True)
    assert "default-value" in {item["reason"] for item in found["items"]}
    found = await _listed(send, created["doc_id"], node_path="/title", include_defaults=True)
    assert found["complete"] is True


async def test_a_version_conflict_carries_a_suggested_call(book: Client) -> None:
    send = _sender(book)
    ok, created = await send("document_create", {})
    doc_id = created["doc_id"]
    ok, _ = await send("document_update_node", {"doc_id": doc_id, "node_path": "/title", "version": 1,
                                                "node_data": "Theirs"})
    ok, stale = await send("document_create_node", {"doc_id": doc_id, "node_path": "/tags/-", "version": 1,
                                                    "node_data": "mine"})
    assert not ok and stale["code"] == "version-conflict"
    call = stale["details"]["suggested_call"]
    assert call["tool"] == "document_create_node" and call["arguments"]["version"] == 2
    ok, _ = await send(call["tool"], call["arguments"])
    assert ok
    ok, stale = await send("document_update_node", {"doc_id": doc_id, "node_path": "/title", "version": 1,
                                                    "node_data": "Mine"})
    call = stale["details"]["suggested_call"]  # /title itself changed since version 1: read it first
    assert call["tool"] == "document_read_node" and call["arguments"]["node_path"] == "/title"


async def test_a_big_suggested_call_omits_the_value_sent_and_fixes_it_relative_to_it(book: Client) -> None:
    send = _sender(book)
    ok, created = await send("document_create", {})
    chapter = {"title": "Long", "sections": [{"title": "S", "paragraphs": [{"text": "x" * 20_000}]}]}
    ok, refused = await send("document_create_node", {"doc_id": created["doc_id"], "node_path": "/chapters/-",
                                                      "version": 1, "node_data": chapter})
    call = refused["details"]["suggested_call"]
    assert call["omitted"] == "node_data" and call["omitted_fix"] == [{"op": "add", "path": "/id", "value": "ch-0"}]
    ok, _written = await send(call["tool"], {**call["arguments"], "node_data": {**chapter, "id": "ch-0"}})
    assert ok


async def test_the_fix_prompt_proposes_a_value_of_the_right_type(book: Client) -> None:
    send = _sender(book)
    ok, created = await send("document_create", {})
    ok, refused = await send("document_update_node", {"doc_id": created["doc_id"], "node_path": "/metadata/edition",
                                                      "version": 1, "node_data": 500})
    assert not ok
    prompt = await book.get_prompt("fix-validation-errors", {"doc_id": created["doc_id"],
                                                             "violations": orjson.dumps(refused).decode()})
    text = prompt.messages[0].content.text  # type: ignore[union-attr]
    assert '"node_path":"/metadata/edition","version":1,"node_data":1}' in text  # the schema's default, an integer
    assert "<a corrected value>" not in text
