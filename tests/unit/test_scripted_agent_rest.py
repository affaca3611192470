"""The scripted agent of tests/guidance_agent.py through the REST door (in process, a files store), and the
agent guidance at that door: placeholders listed until written over (also after a restart), version-conflict
suggestions, big suggested calls, in-order example calls, arrays proposed with an item, include_defaults."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi.testclient import TestClient
from guidance_agent import build, made_up_values
from pg_support import throwaway_schema

from schemadoc.client._operations import request
from schemadoc.config import Settings
from schemadoc.interfaces.app import build_app, create_service
from schemadoc.ops.apply import apply_patch
from schemadoc.schema import load_schema

ROOT = Path(__file__).resolve().parents[2]
WORKSHOP = ROOT / "tests" / "schemas" / "workshop.schema.json"
BOOK = ROOT / "schemas" / "book.schema.json"
Make = Callable[[Path], TestClient]


@pytest.fixture
def make(tmp_path: Path) -> Iterator[Make]:
    opened: list[TestClient] = []

    def start(schema: Path) -> TestClient:
        settings = Settings(schema_path=schema, storage_dir=tmp_path / "data")
        client = TestClient(build_app(create_service(settings), settings), base_url="http://127.0.0.1")
        client.__enter__()
        opened.append(client)
        return client

    yield start
    for client in reversed(opened):
        client.__exit__(None, None, None)


def send_rest(client: TestClient, tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """A tool call (name and arguments as MCP has them) over REST, by the catalogue's route."""
    given = {("path" if name == "node_path" else name): value for name, value in arguments.items()}
    call = request(tool, **given)
    response = client.request(call.method, call.path, params=call.query, headers=call.headers, json=call.json)
    body = response.json()
    return (response.status_code < 400, body["error"] if response.status_code >= 400 else body)


def _agent(client: TestClient) -> Any:
    async def send(tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        return send_rest(client, tool, arguments)
    return send


def _workshop(client: TestClient) -> str:
    ok, refused = send_rest(client, "document_create", {"content": {}})
    assert not ok
    call = refused["details"]["suggested_call"]
    ok, created = send_rest(client, call["tool"], call["arguments"])
    assert ok
    return str(created["doc_id"])


@pytest.mark.parametrize("write_real", [False, True])
def test_the_scripted_agent_over_rest_never_ends_complete_with_made_up_values(make: Make, write_real: bool) -> None:
    client = make(WORKSHOP)
    doc_id = _workshop(client)
    outcome = anyio.run(lambda: build(_agent(client), doc_id, schema=load_schema(WORKSHOP), write_real=write_real,
                                      rounds=30))
    assert outcome.rounds < 30 and outcome.placeholders_listed > 0
    assert outcome.complete is write_real


def test_the_scripted_agent_over_rest_on_the_book(make: Make) -> None:
    client = make(BOOK)
    _ok, created = send_rest(client, "document_create", {})
    outcome = anyio.run(lambda: build(_agent(client), created["doc_id"], schema=load_schema(BOOK), write_real=True,
                                      rounds=8))
    assert not outcome.complete and outcome.placeholders_listed > 0 and outcome.written > 0


def _listed(client: TestClient, doc_id: str, **extra: Any) -> dict[str, Any]:
    ok, found = send_rest(client, "document_next_incomplete", {"doc_id": doc_id, "limit": 100, **extra})
    assert ok, found
    return found


def test_placeholders_are_listed_until_written_over_and_survive_a_restart(make: Make, tmp_path: Path) -> None:
    client = make(WORKSHOP)
    doc_id = _workshop(client)
    made_up = {item["pointer"] for item in _listed(client, doc_id)["items"] if item["reason"] == "placeholder"}
    assert made_up == {"/capacity", "/name", *(f"/sessions/{i}/{m}" for i in (0, 1)
                                               for m in ("minutes", "speakers/0", "title"))}
    # an insert before them shifts them along; a write over one (even of the same value) takes it off the list
    ok, _ = send_rest(client, "document_create_node", {"doc_id": doc_id, "node_path": "/sessions/0", "version": 1,
                                                       "node_data": {"title": "Opening", "minutes": 15,
                                                                     "speakers": ["Ada"]}})
    ok, _ = send_rest(client, "document_update_node", {"doc_id": doc_id, "node_path": "/capacity", "version": 2,
                                                       "node_data": 1})
    assert ok
    client.__exit__(None, None, None)
    client = make(WORKSHOP)  # a new process on the same storage: the journal says what was made up
    made_up = {item["pointer"] for item in _listed(client, doc_id)["items"] if item["reason"] == "placeholder"}
    assert made_up == {"/name", *(f"/sessions/{i}/{m}" for i in (1, 2) for m in ("minutes", "speakers/0", "title"))}
    ok, history = send_rest(client, "document_history", {"doc_id": doc_id})
    assert "/name" in history["entries"][-1]["info"]["placeholders"]
    ok, read = send_rest(client, "document_read_node", {"doc_id": doc_id, "node_path": "/"})
    assert set(made_up_values(read["node_content"], load_schema(WORKSHOP))) == made_up | {"/capacity"}


def test_a_value_written_by_the_agent_itself_is_never_a_placeholder(make: Make) -> None:
    client = make(WORKSHOP)
    content = {"name": "Example text", "capacity": 1,
               "sessions": [{"title": "A", "minutes": 5, "speakers": ["Bo"]}] * 2}
    ok, created = send_rest(client, "document_create", {"content": content})  # its own choice, however it reads
    assert ok
    assert not [item for item in _listed(client, created["doc_id"])["items"] if item["reason"] == "placeholder"]


def test_example_calls_follow_each_other_and_arrays_come_with_an_item(make: Make) -> None:
    client = make(WORKSHOP)
    doc_id = _workshop(client)
    items = [item for item in _listed(client, doc_id)["items"] if item["example_call"]]
    assert [item["example_call"]["arguments"]["version"] for item in items] == list(range(1, len(items) + 1))
    tags = next(item for item in items if item["pointer"] == "/tags")
    assert tags["example_call"]["arguments"]["node_data"] == ["Example text"]
    assert tags["example_call"]["arguments"]["placeholders"] == ["/0"]
    for item in items:  # sent in order, every one succeeds
        ok, body = send_rest(client, item["example_call"]["tool"], item["example_call"]["arguments"])
        assert ok, body
    after = _listed(client, doc_id)["items"]
    assert "empty-array" not in {item["reason"] for item in after}
    assert not {item["pointer"] for item in items} & {item["pointer"] for item in after if item["reason"] == "absent"}


def test_include_defaults_lists_default_values_without_holding_back_complete(make: Make) -> None:
    client = make(BOOK)
    metadata = {"author": "Ada", "created": "2024-06-01T09:30:00Z", "homepage": "https://lovelace.test/",
                "contact": "ada@lovelace.test", "isbn": "9780306406157", "keywords": ["engines"]}
    ok, created = send_rest(client, "document_create", {"content": {"title": "T", "metadata": metadata, "chapters": [{
        "id": "ch-1", "title": "One", "sections": [{"title": "S", "paragraphs": [{"text": "Hi."}]}]}]}})
    assert ok
    found = _listed(client, created["doc_id"], node_path="/metadata", include_defaults=False)
    assert found["complete"] is True and not found["items"]
    found = _listed(client, created["doc_id"], node_path="/metadata", include_defaults=True)
    assert {item["pointer"] for item in found["items"]} == {"/metadata/status", "/metadata/language",
                                                            "/metadata/edition"}
    assert {item["reason"] for item in found["items"]} == {"default-value"}
    assert found["complete"] is True  # a value equal to its default is accepted by leaving it


def test_a_version_conflict_suggests_the_same_call_when_nothing_near_changed_else_a_read(make: Make) -> None:
    client = make(BOOK)
    ok, created = send_rest(client, "document_create", {})
    doc_id = created["doc_id"]
    ok, _ = send_rest(client, "document_update_node", {"doc_id": doc_id, "node_path": "/title", "version": 1,
                                                       "node_data": "Theirs"})
    ok, stale = send_rest(client, "document_create_node", {"doc_id": doc_id, "node_path": "/tags/-", "version": 1,
                                                           "node_data": "mine"})
    assert not ok and stale["code"] == "version-conflict"
    call = stale["details"]["suggested_call"]
    assert call["tool"] == "document_create_node" and call["arguments"]["version"] == 2
    ok, written = send_rest(client, call["tool"], call["arguments"])
    assert ok and written["version"] == 3
    ok, stale = send_rest(client, "document_update_node", {"doc_id": doc_id, "node_path": "/title", "version": 2,
                                                           "node_data": "Mine"})
    call = stale["details"]["suggested_call"]  # /title changed since version 2? no: /tags did; /title is safe
    assert call["tool"] == "document_update_node" and call["arguments"]["version"] == 3
    ok, stale = send_rest(client, "document_update_node", {"doc_id": doc_id, "node_path": "/tags/0", "version": 2,
                                                           "node_data": "x"})
    call = stale["details"]["suggested_call"]  # the array changed: read it first
    assert call == {"tool": "document_read_node", "arguments": {"doc_id": doc_id, "node_path": "/tags",
                                                                "max_depth": 2}, "reason": call["reason"]}
    ok, read = send_rest(client, call["tool"], call["arguments"])
    assert ok and read["version"] == 3


def test_a_big_suggested_call_omits_the_agents_value_and_fixes_it_relative_to_it(make: Make) -> None:
    client = make(BOOK)
    ok, created = send_rest(client, "document_create", {})
    chapter = {"title": "Long", "sections": [{"title": "S", "paragraphs": [{"text": "x" * 20_000}]}]}
    ok, refused = send_rest(client, "document_create_node", {"doc_id": created["doc_id"], "node_path": "/chapters/-",
                                                             "version": 1, "node_data": chapter})
    call = refused["details"]["suggested_call"]
    assert call["omitted"] == "node_data" and "node_data" not in call["arguments"]
    assert call["arguments"]["placeholders"] == ["/id"]
    corrected = apply_patch(chapter, call["omitted_fix"]).document
    ok, written = send_rest(client, call["tool"], {**call["arguments"], "node_data": corrected})
    assert ok and written["created_node"]["id"] == "ch-0"
    found = _listed(client, created["doc_id"], node_path="/chapters/0")
    assert [item["pointer"] for item in found["items"] if item["reason"] == "placeholder"] == ["/chapters/0/id"]


@pytest.mark.postgres
def test_two_servers_on_one_postgresql_store_see_the_same_made_up_values(tmp_path: Path) -> None:
    with throwaway_schema() as url:
        clients = []
        for _ in range(2):
            settings = Settings(schema_path=WORKSHOP, storage_url=url)
            client = TestClient(build_app(create_service(settings), settings), base_url="http://127.0.0.1")
            client.__enter__()
            clients.append(client)
        try:
            first, second = clients
            doc_id = _workshop(first)
            listed = {item["pointer"] for item in _listed(second, doc_id)["items"] if item["reason"] == "placeholder"}
            assert {"/name", "/capacity"} <= listed
            ok, _ = send_rest(second, "document_update_node", {"doc_id": doc_id, "node_path": "/name", "version": 1,
                                                               "node_data": "Real name"})
            assert ok
            listed = {item["pointer"] for item in _listed(first, doc_id)["items"] if item["reason"] == "placeholder"}
            assert "/name" not in listed and "/capacity" in listed
        finally:
            for client in reversed(clients):
                client.__exit__(None, None, None)
