"""One rule for node paths, proved for every catalogue operation that takes one, through REST and MCP.

A negative array index in a node-path argument counts from the end (``-k`` is the item at ``len - k``;
where a node is inserted, the position ``len - k``, as ``list.insert``). Every operation that takes a
node path accepts it alike: the call answers exactly what the same call with the concrete index answers
(results report, and the journal keeps, the concrete path), an index beyond the array is what the
concrete index beyond it is, and an index beyond 2^63 - 1 is ``path-invalid``. The table below has a row
for every node-path argument of the catalogue; an operation added later without one fails
:func:`test_every_node_path_argument_of_the_catalogue_has_a_row`, and one that forgets the rule fails the
others. The paths inside an RFC 6902 patch (``document_apply_patch``) stay strict RFC 6901.
"""

from __future__ import annotations

import warnings
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from mcp import Client

from schemadoc.config import Settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.app import build_app, create_service
from schemadoc.interfaces.mcp_door.server import build_mcp_server
from schemadoc.interfaces.rest.routes import BINDINGS, Binding
from schemadoc.operations.catalogue import CATALOGUE
from schemadoc.service import DocumentService

ROOT = Path(__file__).resolve().parents[2]
API = "/api/v1"
P = "<path>"
"""Stands for the node path under test in a row's arguments."""
DOC = "<doc>"
"""Stands for the document's id."""

CHAPTERS = [{"id": f"ch-{n}", "title": f"Chapter {n}", "sections": [
    {"title": title, "paragraphs": [{"text": f"Text {n}."}]} for title in ("Start", "End")]} for n in (1, 2, 3)]
BOOK = {"title": "Negative", "chapters": CHAPTERS, "tags": ["a", "b", "c"]}
HUGE = "9" * 5000
"""An index far beyond 2^63 - 1 (and beyond the 4,300 digits Python's int() reads)."""


@dataclass(frozen=True)
class Row:
    """A call of ``operation`` whose ``argument`` is ``negative``, which means ``concrete`` in :data:`BOOK`;
    ``past``: the index that lies beyond the array (the concrete twin of ``beyond``)."""

    operation: str
    argument: str
    arguments: dict[str, Any]
    negative: str
    concrete: str
    beyond: str
    past: str


def _row(operation: str, argument: str, negative: str, concrete: str, beyond: str, past: str,
         **arguments: Any) -> Row:
    document = {} if "doc_ids" in arguments else {"doc_id": DOC}
    return Row(operation, argument, {**document, argument: P, **arguments}, negative, concrete, beyond, past)


ROWS = (
    _row("document_read_node", "node_path", "/chapters/-1/title", "/chapters/2/title", "/chapters/-4",
         "/chapters/4"),
    _row("document_read_node", "node_path", "/chapters/-2", "/chapters/1", "/chapters/-4", "/chapters/4",
         max_depth=1),
    _row("document_read_node", "node_path", "/tags/-1", "/tags/2", "/tags/-4", "/tags/4", at_version=1),
    _row("schema_get_node", "node_path", "/chapters/-1/sections/-1", "/chapters/2/sections/1",
         "/chapters/-9/title", "/chapters/9/title"),
    _row("document_update_node", "node_path", "/chapters/-1/title", "/chapters/2/title", "/chapters/-4/title",
         "/chapters/4/title", node_data="The End", version=1),
    _row("document_create_node", "node_path", "/tags/-1", "/tags/2", "/tags/-4", "/tags/4", node_data="z",
         version=1),
    _row("document_create_node", "node_path", "/chapters/-3/sections/-1", "/chapters/0/sections/1",
         "/chapters/-4/sections/0", "/chapters/4/sections/0", node_data={"title": "Before", "paragraphs": []},
         version=1),
    _row("document_delete_node", "node_path", "/tags/-2", "/tags/1", "/tags/-4", "/tags/4", version=1),
    _row("document_merge_patch", "node_path", "/chapters/-1", "/chapters/2", "/chapters/-4", "/chapters/4",
         merge_patch={"title": "Merged"}, version=1),
    _row("document_move_node", "from_path", "/tags/-1", "/tags/2", "/tags/-4", "/tags/4", to_path="/tags/0",
         version=1),
    # the target counts in the array as the add half of the move sees it (the node already gone): -1 is before c
    _row("document_move_node", "to_path", "/tags/-1", "/tags/1", "/tags/-9", "/tags/9", from_path="/tags/0",
         version=1),
    _row("document_move_node", "to_path", "/chapters/-1/sections/-", "/chapters/2/sections/-",
         "/chapters/-4/sections/-", "/chapters/4/sections/-", from_path="/chapters/0/sections/0", version=1),
    _row("document_outline", "node_path", "/chapters/-1", "/chapters/2", "/chapters/-4", "/chapters/4", depth=1),
    _row("document_next_incomplete", "node_path", "/chapters/-1", "/chapters/2", "/chapters/-4", "/chapters/4"),
    _row("document_search", "node_path", "/chapters/-1", "/chapters/2", "/chapters/-4", "/chapters/4",
         query="text", doc_ids=[DOC]),
    _row("document_render", "node_path", "/chapters/-2", "/chapters/1", "/chapters/-4", "/chapters/4"),
    _row("document_validate_node", "node_path", "/chapters/-1/title", "/chapters/2/title",
         "/chapters/-4/title", "/chapters/4/title", node_data="Checked"),
)


def _node_path_arguments() -> set[tuple[str, str]]:
    """Every (operation, argument) of the catalogue that is a JSON Pointer into a document."""
    found = set()
    for operation in CATALOGUE:
        for name, field in operation.args.model_json_schema().get("properties", {}).items():
            choices = field.get("anyOf", [field])
            if name.endswith("_path") or any(str(choice.get("pattern", "")).startswith("^/(") for choice in choices):
                found.add((operation.name, name))
    return found


def test_every_node_path_argument_of_the_catalogue_has_a_row() -> None:
    covered = {(row.operation, row.argument) for row in ROWS}
    assert covered == _node_path_arguments(), "add a row for each new node-path argument (and honour the rule)"
    assert ("document_apply_patch", "patch") not in covered  # its paths are RFC 6902's: strict, see below


# -- the doors -----------------------------------------------------------------------------------------

@dataclass
class Doors:
    service: DocumentService
    rest: TestClient
    mcp: Client


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def doors(tmp_path: Path) -> AsyncIterator[Doors]:
    settings = Settings(schema_path=ROOT / "schemas" / "book.schema.json", storage_dir=tmp_path)
    service = create_service(settings)
    with TestClient(build_app(service, settings), base_url="http://127.0.0.1") as rest, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(build_mcp_server(service)) as mcp:
            yield Doors(service, rest, mcp)


def _rest(client: TestClient, binding: Binding, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """The route's answer to ``arguments``, each placed where the route takes it: (success, body)."""
    route = binding.route
    path = route.path
    params: list[tuple[str, str]] = []
    body: dict[str, Any] = {}
    headers = {"content-type": route.media_types[0] if route.whole else "application/json"}
    spelt = {argument: name for name, (argument, _kind) in binding.query.items()}
    for name, value in arguments.items():
        if "{" + name + "}" in path:
            path = path.replace("{" + name + "}", str(value))
        elif name in spelt:
            for each in value if isinstance(value, list) else [value]:
                params.append((spelt[name], each if isinstance(each, str) else orjson.dumps(each).decode()))
        elif name == "version" and route.version_only_from_header:
            headers["if-match"] = f'"{value}"'
        else:
            body[name] = value
    sent = body.get(route.whole) if route.whole else body
    response = client.request(route.method, API + path, params=params, headers=headers,
                              content=orjson.dumps(sent) if binding.reads_body else None)
    answer: dict[str, Any] = response.json()
    assert response.status_code < 500, (binding.operation_id, arguments, answer)
    return response.status_code < 400, answer


async def _mcp(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        error: dict[str, Any] = orjson.loads(result.content[0].text)  # type: ignore[union-attr]
        assert int(error["error"]["category"]) < 500, (tool, arguments, error)
        return False, error
    assert result.structured_content is not None
    return True, dict(result.structured_content)


def _callers(doors: Doors, operation: str) -> list[tuple[str, Any]]:
    """One way to call ``operation`` per REST route, and the MCP tool."""
    callers: list[tuple[str, Any]] = []
    for binding in BINDINGS:
        if binding.operation.name == operation:
            async def by_rest(arguments: dict[str, Any], binding: Binding = binding) -> tuple[bool, dict[str, Any]]:
                return _rest(doors.rest, binding, arguments)
            callers.append((f"REST {binding.route.method} {binding.route.path}", by_rest))

    async def by_mcp(arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        return await _mcp(doors.mcp, operation, arguments)
    callers.append(("MCP", by_mcp))
    return callers


def _book(doors: Doors) -> str:
    doc_id, _content, meta, _report = doors.service.create_document(BOOK)
    assert meta.version == 1
    return doc_id


def _arguments(row: Row, doc_id: str, path: str) -> dict[str, Any]:
    def fill(value: Any) -> Any:
        if value == P:
            return path
        if value == DOC:
            return doc_id
        if isinstance(value, list):
            return [fill(item) for item in value]
        return value
    return {name: fill(value) for name, value in row.arguments.items()}


def _same(doc_id: str, twin: str, answer: dict[str, Any]) -> Any:
    """``answer`` as if it were about ``twin`` (the documents differ by their ids alone)."""
    return orjson.loads(orjson.dumps(answer).decode().replace(doc_id, twin))


def _journaled(service: DocumentService, doc_id: str) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    page = service.history(doc_id, since_version=1, limit=1)
    if not page.entries:
        return [], {}
    entry = page.entries[0]
    return entry.patch, {key: value for key, value in entry.info.items() if key != "seq"}


# -- the rule ------------------------------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("row", ROWS, ids=[f"{row.operation}.{row.argument}:{row.negative}" for row in ROWS])
async def test_a_negative_index_means_the_concrete_one_at_every_door(doors: Doors, row: Row) -> None:
    for door, send in _callers(doors, row.operation):
        by_negative, by_concrete = _book(doors), _book(doors)
        done, answer = await send(_arguments(row, by_negative, row.negative))
        assert done, (door, row, answer)
        done, expected = await send(_arguments(row, by_concrete, row.concrete))
        assert done, (door, row, expected)
        assert _same(by_negative, by_concrete, answer) == expected, (door, row)
        assert row.negative not in orjson.dumps(answer).decode(), (door, "the concrete path is reported", answer)
        patch, info = _journaled(doors.service, by_negative)
        assert (patch, info) == _journaled(doors.service, by_concrete), (door, "journaled concrete", patch, info)
        assert "/-" not in orjson.dumps([patch, info]).decode(), (door, patch, info)  # strict RFC 6902


@pytest.mark.anyio
@pytest.mark.parametrize("row", ROWS, ids=[f"{row.operation}.{row.argument}:{row.beyond}" for row in ROWS])
async def test_a_negative_index_beyond_the_array_is_what_the_index_past_its_end_is(doors: Doors, row: Row) -> None:
    for door, send in _callers(doors, row.operation):
        doc_id = _book(doors)
        done, answer = await send(_arguments(row, doc_id, row.beyond))
        past_done, past = await send(_arguments(row, doc_id, row.past))
        assert done == past_done, (door, row, answer, past)
        if not done:
            assert answer["error"]["code"] == past["error"]["code"] == "path-not-found", (door, row, answer, past)
        assert doors.service.version_of(doc_id) == 1, (door, row)


@pytest.mark.anyio
@pytest.mark.parametrize("row", ROWS, ids=[f"{row.operation}.{row.argument}" for row in ROWS])
@pytest.mark.parametrize("sign", ["", "-"], ids=["huge", "minus-huge"])
async def test_an_index_beyond_64_bits_is_path_invalid_at_every_door(doors: Doors, row: Row, sign: str) -> None:
    tokens = row.negative.split("/")
    huge = "/".join([*tokens[:2], sign + HUGE, *tokens[3:]])  # the first index of the path, 5,000 digits long
    for door, send in _callers(doors, row.operation):
        doc_id = _book(doors)
        done, answer = await send(_arguments(row, doc_id, huge))
        assert not done and answer["error"]["code"] == "path-invalid", (door, row, answer)
        assert doors.service.version_of(doc_id) == 1


@pytest.mark.anyio
async def test_the_paths_of_an_rfc_6902_patch_stay_strict(doors: Doors) -> None:
    for door, send in _callers(doors, "document_apply_patch"):
        doc_id = _book(doors)
        for path in ("/tags/-1", f"/tags/{HUGE}"):
            done, answer = await send({"doc_id": doc_id, "version": 1,
                                       "patch": [{"op": "replace", "path": path, "value": "x"}]})
            assert not done and answer["error"]["code"] == "path-invalid", (door, path, answer)
        done, answer = await send({"doc_id": doc_id, "version": 1,
                                   "patch": [{"op": "copy", "from": "/tags/-1", "path": "/tags/-"}]})
        assert not done and answer["error"]["code"] == "path-invalid", (door, answer)
        assert doors.service.version_of(doc_id) == 1


@pytest.mark.anyio
async def test_a_negative_index_in_a_search_is_resolved_in_each_document(doors: Doors) -> None:
    """The search index holds concrete pointers: ``-1`` is resolved in each document of ``doc_ids``; documents
    where it names different nodes are refused (not searched at one of them), and it needs ``doc_ids``."""
    first, second = _book(doors), _book(doors)
    hits = doors.service.search("text", "/chapters/-1", [first, second]).hits
    assert hits and {hit.doc_id for hit in hits} == {first, second}
    assert all(hit.pointer.startswith("/chapters/2/") for hit in hits)
    shorter = dict(BOOK, chapters=CHAPTERS[:2])
    third = doors.service.create_document(shorter)[0]
    with pytest.raises(SchemaDocError) as refused:
        doors.service.search("text", "/chapters/-1", [first, third])
    assert refused.value.code == "invalid-request" and "/chapters/1" in refused.value.message
    with pytest.raises(SchemaDocError) as refused:
        doors.service.search("text", "/chapters/-1")
    assert refused.value.code == "invalid-request" and "doc_ids" in refused.value.message
    assert doors.service.search("text", "/chapters/-9", [first]).hits == []
