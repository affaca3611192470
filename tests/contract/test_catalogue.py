"""The operation catalogue: both doors are built from it and refuse the same bad request in the same words.

For every operation, requests are derived from its catalogue entry (its example, its arguments
model's bounds and types) and sent through the MCP door (an in-memory client) and the REST door
(over HTTP, arguments placed where the route takes them); the error code, message and named argument
must be the same (REST spells ``node_path`` as ``path``).
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from mcp import Client

from schemadoc.config import Settings
from schemadoc.interfaces.app import build_app, create_service
from schemadoc.interfaces.mcp_door.server import build_mcp_server
from schemadoc.interfaces.rest.routes import BINDINGS, Binding
from schemadoc.operations.arguments import EXAMPLE_ID
from schemadoc.operations.catalogue import CATALOGUE
from schemadoc.operations.operation import Operation
from schemadoc.operations.reference import reference
from schemadoc.service import DocumentService

ROOT = Path(__file__).resolve().parents[2]
API = "/api/v1"


def test_docs_tools_md_is_generated_from_the_catalogue() -> None:
    assert (ROOT / "docs" / "tools.md").read_text(encoding="utf-8") == reference(), \
        "run `make docs` to regenerate docs/tools.md"


def test_every_operation_is_one_tool_and_its_routes() -> None:
    assert len({operation.name for operation in CATALOGUE}) == len(CATALOGUE) == 24
    assert {binding.operation.name for binding in BINDINGS} == {operation.name for operation in CATALOGUE}
    for operation in CATALOGUE:
        assert operation.examples, operation.name
        for example in operation.examples:  # every documented example is a valid call
            operation.args.model_validate(example)


@pytest.fixture
def doors(tmp_path: Path) -> Iterator[tuple[DocumentService, TestClient]]:
    settings = Settings(schema_path=ROOT / "schemas" / "book.schema.json", storage_dir=tmp_path)
    service = create_service(settings)
    with TestClient(build_app(service, settings), base_url="http://127.0.0.1") as client:
        yield service, client


def _rest(client: TestClient, binding: Binding, arguments: dict[str, Any]) -> dict[str, Any]:
    """The error the REST route answers for ``arguments``, placed where the route takes each one."""
    path = binding.route.path
    params: list[tuple[str, str]] = []
    body: dict[str, Any] = {}
    spelt = {argument: name for name, (argument, _kind) in binding.query.items()}
    for name, value in arguments.items():
        if "{" + name + "}" in path:
            path = path.replace("{" + name + "}", str(value))
        elif name in spelt:
            values = value if isinstance(value, list) else [value]
            params += [(spelt[name], orjson.dumps(v).decode() if not isinstance(v, str) else v) for v in values]
        else:
            body[name] = value
    content = orjson.dumps(body) if binding.reads_body else None
    response = client.request(binding.route.method, API + path, params=params, content=content,
                              headers={"content-type": "application/json"})
    assert response.status_code >= 400, (binding.operation_id, arguments, response.text)
    error: dict[str, Any] = response.json()["error"]
    return error


def _bad_requests(operation: Operation, doc_id: str) -> Iterator[tuple[str, dict[str, Any]]]:
    base = {name: doc_id if value == EXAMPLE_ID else value for name, value in operation.examples[0].items()}
    schema = operation.args.model_json_schema()
    for name, field in schema.get("properties", {}).items():
        choices = field.get("anyOf", [field])
        kinds = {choice.get("type") for choice in choices}
        if "integer" in kinds:
            yield f"{name} not a number", {**base, name: "many"}
            bounds = next(choice for choice in choices if choice.get("type") == "integer")
            if "maximum" in bounds:
                yield f"{name} above its maximum", {**base, name: bounds["maximum"] + 1}
            if "minimum" in bounds:
                yield f"{name} below its minimum", {**base, name: bounds["minimum"] - 1}
        if "boolean" in kinds:
            yield f"{name} not a boolean", {**base, name: "perhaps"}
    if "version" in schema.get("required", ()):
        yield "no version", {key: value for key, value in base.items() if key != "version"}
    if operation.routes[0].method != "GET" and any(name != "doc_id" for name in base):
        yield "an unknown argument", {**base, "colour": "blue"}


@pytest.mark.anyio
async def test_the_same_bad_request_gets_the_same_error_at_both_doors(
        doors: tuple[DocumentService, TestClient]) -> None:
    service, rest = doors
    doc_id = rest.post(f"{API}/documents").json()["doc_id"]
    compared = 0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(build_mcp_server(service)) as mcp:
            for operation in CATALOGUE:
                binding = next(b for b in BINDINGS if b.operation is operation and b.route.whole is None)
                for case, arguments in _bad_requests(operation, doc_id):
                    result = await mcp.call_tool(operation.name, arguments)
                    assert result.is_error, (operation.name, case)
                    by_mcp = orjson.loads(result.content[0].text)["error"]  # type: ignore[union-attr]
                    by_rest = _rest(rest, binding, arguments)
                    where = (operation.name, case, by_mcp, by_rest)
                    assert by_rest["code"] == by_mcp["code"] == "invalid-request", where
                    assert by_rest["message"] == by_mcp["message"].replace("'node_path'", "'path'"), where
                    named = by_mcp["details"]["argument"]
                    assert by_rest["details"]["argument"] == ("path" if named == "node_path" else named), where
                    compared += 1
    assert compared > 60


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_a_candidate_value_is_checked_as_its_write_would_be_and_nothing_changes(
        doors: tuple[DocumentService, TestClient]) -> None:
    service, rest = doors
    doc_id = rest.post(f"{API}/documents").json()["doc_id"]
    url = f"{API}/documents/{doc_id}/validate"
    good = rest.post(url, params={"path": "/title"}, json={"node_data": "Dune"}).json()
    assert (good["valid"], good["write"], good["version"]) == (True, "document_update_node", 1)
    bad = rest.post(url, params={"path": "/title"}, json={"node_data": 5}).json()
    assert bad["valid"] is False and bad["validation_report"]["errors"][0]["path"] == "/title"
    new = rest.post(url, params={"path": "/tags/-"}, json={"node_data": "sf"}).json()
    assert (new["valid"], new["write"], new["node_path"]) == (True, "document_create_node", "/tags/0")
    missing = rest.post(url, params={"path": "/nope/deeper"}, json={"node_data": 1}).json()["error"]
    assert missing["code"] == "path-not-found"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(build_mcp_server(service)) as mcp:
            result = await mcp.call_tool("document_validate_node",
                                         {"doc_id": doc_id, "node_path": "/title", "node_data": 5})
    assert result.structured_content is not None
    assert {key: result.structured_content[key] for key in ("valid", "write", "validation_report")} == \
        {key: bad[key] for key in ("valid", "write", "validation_report")}
    assert service.version_of(doc_id) == 1 and service.read_node(doc_id, "/title").node == "Untitled"
