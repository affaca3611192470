"""The OpenAPI request examples come from the served schema: on two unrelated schemas, every documented
example, sent as written to a freshly created document (only its doc_id filled in), succeeds."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from schemadoc.config import Settings
from schemadoc.examples import example_path
from schemadoc.interfaces.app import build_app, create_service
from schemadoc.reading.request_examples import EXAMPLE_DOC_ID, request_examples, tool_examples
from schemadoc.schema import load_schema

# the parameters every operation shares: their example is not the schema's
SHARED = {"doc_id", "if-match", "dry_run"}
SCHEMAS = ["book", "recipe"]


@pytest.fixture(params=SCHEMAS, scope="module")
def client(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[TestClient]:
    settings = Settings(schema_path=example_path(request.param), storage_dir=tmp_path_factory.mktemp("data"))
    service = create_service(settings)
    with TestClient(build_app(service, settings), base_url="http://127.0.0.1") as client:
        yield client
    service.close()


def documented(spec: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(method, path, operation) of every operation with an example of its own (a body, or a parameter)."""
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            own = [p for p in operation.get("parameters", []) if "example" in p and p["name"] not in SHARED]
            bodies = [c for c in operation.get("requestBody", {}).get("content", {}).values() if "example" in c]
            streams = "text/event-stream" in operation["responses"].get("200", {}).get("content", {})
            if (own or bodies) and not streams:
                yield method, path, operation


def test_every_documented_example_succeeds_as_written_on_a_new_document(client: TestClient) -> None:
    spec = client.get("/openapi.json").json()
    operations = list(documented(spec))
    names = {operation["operationId"] for _, _, operation in operations}
    assert {"document_update_node", "document_create_node", "document_delete_node", "document_apply_patch",
            "document_merge_patch", "document_merge_patch_post", "document_move_node", "document_revert",
            "document_read_node", "document_search"} <= names
    for method, path, operation in operations:
        created = client.post("/api/v1/documents", json={})
        assert created.status_code == 201
        doc_id = created.json()["doc_id"]
        query: dict[str, Any] = {}
        headers: dict[str, str] = {}
        for parameter in operation.get("parameters", []):
            if "example" not in parameter or parameter["name"] == "dry_run":
                continue
            value = doc_id if parameter["name"] == "doc_id" else parameter["example"]
            if parameter["in"] == "path":
                path = path.replace("{" + parameter["name"] + "}", str(value))
            elif parameter["in"] == "header":
                headers[parameter["name"]] = str(value)
            else:
                query[parameter["name"]] = value if not isinstance(value, bool) else str(value).lower()
        content = operation.get("requestBody", {}).get("content", {})
        kwargs: dict[str, Any] = {}
        for media, body in content.items():
            if "example" in body:
                headers["content-type"] = media
                kwargs["json"] = body["example"]
                break
        answer = client.request(method.upper(), path, params=query, headers=headers, **kwargs)
        assert 200 <= answer.status_code < 300, (operation["operationId"], query, kwargs, answer.text)
        assert EXAMPLE_DOC_ID not in answer.text


def test_the_examples_are_the_served_schemas_own() -> None:
    book = request_examples(load_schema(example_path("book")))
    recipe = request_examples(load_schema(example_path("recipe")))
    assert book["document_update_node"]["parameters"]["path"] == "/title"
    assert recipe["document_update_node"] == {"parameters": {"path": "/name"},
                                              "body": {"node_data": "Lentil soup", "version": 1}}  # its `examples`
    assert recipe["document_create_node"]["body"]["node_data"] == "french"  # the first of its enum
    assert "/chapters" not in str(recipe) and "/ingredients" not in str(book)


def test_a_schema_whose_create_fails_documents_no_write(tmp_path: Path) -> None:
    schema = tmp_path / "nocreate.schema.json"
    schema.write_text('{"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}}')
    examples = request_examples(load_schema(schema))
    assert "document_update_node" not in examples and "document_create" in examples


def test_mcp_tool_examples_are_the_same_writes_with_tool_argument_names() -> None:
    tools = tool_examples(load_schema(example_path("recipe")), doc_id="X")
    assert tools["document_update_node"] == {"doc_id": "X", "node_path": "/name", "node_data": "Lentil soup",
                                             "version": 1}
    assert tools["document_merge_patch"] == {"doc_id": "X", "node_path": "/", "merge_patch": {"name": "Lentil soup"},
                                             "version": 1}
    assert tools["document_validate_node"] == {"doc_id": "X", "node_path": "/name", "node_data": "Lentil soup"}
    assert tools["document_create"] == {}
    assert "document_merge_patch_post" not in tools
