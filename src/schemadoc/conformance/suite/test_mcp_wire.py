"""What only the MCP door has: tool declarations, result shapes, resources."""

from __future__ import annotations

import json

import pytest
from mcp import MCPError

from schemadoc.errors import CATALOG

from ..readings import category_matches, ids_in
from ..spec import ARGUMENTS
from .doors import CORE_TOOLS, DOOR_NAMES, TARGET, UNKNOWN_DOC_ID, Door, McpDoor, book_doc, ok, text_of

pytestmark = pytest.mark.anyio


@pytest.fixture(params=[name for name in DOOR_NAMES if "mcp" in name])
def door_name(request: pytest.FixtureRequest) -> str:
    """Only the MCP doors (overrides the suite's ``door_name``)."""
    return str(request.param)


@pytest.fixture
def mcp(door: Door) -> McpDoor:
    assert isinstance(door, McpDoor)
    return door


_SPEC_REQUIRED = {
    "document_read_node": {"doc_id", "node_path"},
    "document_update_node": {"doc_id", "node_path", "node_data", "version"},
    "document_create_node": {"doc_id", "node_path", "node_data", "version"},
    "document_delete_node": {"doc_id", "node_path", "version"},
    "schema_get_node": {"node_path"},  # the spec also requires doc_id; a server may let it be left out
}
_EXTENSION_REQUIRED = {
    "document_apply_patch": {"doc_id", "patch", "version"},
    "document_history": {"doc_id"},
    "document_diff": {"doc_id", "from_version", "to_version"},
    "document_revert": {"doc_id", "to_version", "version"},
    "document_merge_patch": {"doc_id", "node_path", "merge_patch", "version"},
    "document_delete": {"doc_id", "version"},
    "document_undelete": {"doc_id"},
    "document_purge": {"doc_id"},
}


async def test_every_tool_is_declared_with_input_and_output_schemas(mcp: McpDoor) -> None:
    """The spec's eight tools, each with its arguments; every declared tool with input and output schemas."""
    tools = {tool.name: tool for tool in (await mcp.client.list_tools()).tools}
    assert set(tools) >= CORE_TOOLS, f"the spec's tools {sorted(CORE_TOOLS - set(tools))} are not declared"
    for name, tool in tools.items():
        if name not in CORE_TOOLS and TARGET.spec_only:
            continue
        assert tool.description, name
        assert tool.input_schema["type"] == "object", name
        assert tool.output_schema is not None, name
    for name in CORE_TOOLS:
        declared = set(tools[name].input_schema.get("properties", {}))
        assert ARGUMENTS[name] <= declared, f"{name} lacks the spec's arguments {sorted(ARGUMENTS[name] - declared)}"
        required = set(tools[name].input_schema.get("required", []))
        assert _SPEC_REQUIRED.get(name, set()) <= required <= ARGUMENTS[name], f"{name} requires {sorted(required)}"
    if TARGET.spec_only:
        return
    for name, names in _EXTENSION_REQUIRED.items():
        if name in tools:
            assert set(tools[name].input_schema.get("required", [])) == names, name
    assert not tools["document_create"].input_schema.get("required")
    if "document_changes" in tools:
        assert not tools["document_changes"].input_schema.get("required")
    if "document_history" in tools:
        assert "at_version" in tools["document_read_node"].input_schema["properties"]


async def test_a_success_carries_the_body_as_structured_content_and_as_text(mcp: McpDoor) -> None:
    doc = await book_doc(mcp)
    result = await mcp.client.call_tool("document_read_node", {"doc_id": doc.doc_id, "node_path": "/title"})
    assert result.is_error is False
    assert result.structured_content["node_content"] == "The Conformance Book"
    assert json.loads(text_of(result.content)) == result.structured_content


async def test_a_failure_is_an_error_result_with_the_error_object_as_text_only(mcp: McpDoor) -> None:
    result = await mcp.client.call_tool("document_read_node", {"doc_id": UNKNOWN_DOC_ID, "node_path": "/"})
    assert result.is_error is True
    assert result.structured_content is None
    error = json.loads(text_of(result.content))["error"]
    assert error["code"] == "document-not-found"
    assert category_matches(error["category"], 404)
    assert set(error) >= {"code", "category", "message", "details", "remediation"}


async def test_every_document_is_a_listed_json_resource(mcp: McpDoor) -> None:
    doc = await book_doc(mcp)
    resources = {ids_in(str(resource.uri), doc.doc_id): resource
                 for resource in (await mcp.client.list_resources()).resources}
    uri = f"schema://{doc.doc_id}"
    assert uri in resources
    assert resources[uri].mime_type == "application/json"


async def test_the_schema_and_the_error_catalog_are_resources(mcp: McpDoor, book_schema: dict[str, object]) -> None:
    schema = await mcp.client.read_resource("schema://schema")
    assert json.loads(text_of(schema.contents)) == book_schema
    catalog = await mcp.client.read_resource("schema://errors")
    listed = json.loads(text_of(catalog.contents))
    codes = {entry["code"] for entry in (listed if isinstance(listed, list) else listed.values())}
    assert set(CATALOG) <= codes


async def test_an_unknown_resource_is_invalid_params_naming_the_uri(mcp: McpDoor) -> None:
    for uri in (f"schema://{UNKNOWN_DOC_ID}", "schema://not-a-document", "nothing://here"):
        with pytest.raises(MCPError) as raised:
            await mcp.client.read_resource(uri)
        assert raised.value.code == -32602, uri
        assert ids_in(raised.value.data["uri"], UNKNOWN_DOC_ID) == uri


async def test_the_exported_resource_matches_the_root_node(mcp: McpDoor) -> None:
    doc = await book_doc(mcp)
    assert ok(await mcp.read_document(doc.doc_id))["document"] == await doc.content()


async def test_every_version_of_a_document_is_a_json_resource(mcp: McpDoor) -> None:
    templates = {template.uri_template for template in (await mcp.client.list_resource_templates()).resource_templates}
    assert "schema://{doc_id}/versions/{n}" in templates
    doc = await book_doc(mcp)
    ok(await doc.update("/title", "Later"))
    first = ok(await mcp.read_version(doc.doc_id, 1))["document"]
    assert first["chapters"] == []
    assert ok(await mcp.read_version(doc.doc_id, 2))["document"]["title"] == "The Conformance Book"
    assert ok(await mcp.read_version(doc.doc_id, 3))["document"] == ok(await mcp.read_document(doc.doc_id))["document"]
    for n in (4, "two"):
        uri = f"schema://{doc.doc_id}/versions/{n}"
        with pytest.raises(MCPError) as raised:
            await mcp.client.read_resource(uri)
        assert raised.value.code == -32602, uri
        assert ids_in(raised.value.data["uri"], UNKNOWN_DOC_ID) == uri
        assert raised.value.data["error"]["code"] == "version-not-found"


async def test_a_deleted_document_leaves_the_resource_list_and_an_undelete_brings_it_back(mcp: McpDoor) -> None:
    doc = await book_doc(mcp)
    uri = f"schema://{doc.doc_id}"
    ok(await doc.delete_document())
    assert uri not in {resource.uri for resource in (await mcp.client.list_resources()).resources}
    with pytest.raises(MCPError) as raised:
        await mcp.client.read_resource(uri)
    assert raised.value.code == -32602
    assert raised.value.data["error"]["details"]["deleted"] is True
    ok(await mcp.call("document_undelete", {"doc_id": doc.doc_id}))
    assert uri in {resource.uri for resource in (await mcp.client.list_resources()).resources}
