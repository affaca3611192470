"""Building MCP servers: the tools are the operation catalogue's, and each server gets its own copies.

``tools/list`` says exactly what the catalogue declares (name, title, description with examples,
input schema = the arguments model, output schema = the result model, annotations from the
operation's kind), and two servers share no state: each tool calls its own server's service.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from schemadoc.interfaces.mcp_door.server import build_mcp_server
from schemadoc.interfaces.mcp_door.tools import _input_schema, _outline_schema
from schemadoc.operations.catalogue import CATALOGUE
from schemadoc.reading.request_examples import tool_examples
from schemadoc.schema import LoadedSchema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore


def _service(schema: LoadedSchema) -> DocumentService:
    service = DocumentService(schema, MemoryDocumentStore())
    service.open()
    return service


async def _tools_list(server: MCPServer[Any]) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(server) as client:
            listed = await client.list_tools()
    return "\n".join(tool.model_dump_json(by_alias=True, exclude_none=True) for tool in listed.tools)


@pytest.mark.anyio
async def test_tools_list_is_the_catalogue(schema: LoadedSchema) -> None:
    first, second = build_mcp_server(_service(schema)), build_mcp_server(_service(schema))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(first) as client:
            listed = (await client.list_tools()).tools
    assert [tool.name for tool in listed] == [operation.name for operation in CATALOGUE]
    assert len(listed) == 24
    for tool, operation in zip(listed, CATALOGUE, strict=True):
        assert tool.title == operation.title
        if operation.written:  # examples carrying document content are the served schema's
            assert tool.description == operation.agent_description((tool_examples(schema)[operation.name],))
        else:
            assert tool.description == operation.agent_description()
        examples = tool.description.splitlines()[-len(operation.examples):]
        assert all(line.startswith(f"Example: {operation.name} ") for line in examples)
        assert tool.input_schema == _input_schema(operation.args.model_json_schema())
        assert tool.input_schema.get("additionalProperties") is False
        assert tool.output_schema == _outline_schema(operation.result.model_json_schema())
        assert tool.annotations is not None
        assert tool.annotations.read_only_hint is (True if operation.kind == "read" else None)  # None: false
        assert tool.annotations.destructive_hint is (None if operation.kind == "read" else operation.kind == "replace")
    assert await _tools_list(second) == await _tools_list(first)


@pytest.mark.anyio
async def test_two_servers_share_no_tool_state(schema: LoadedSchema) -> None:
    one, other = _service(schema), _service(schema)
    first, second = build_mcp_server(one), build_mcp_server(other)
    for tool in first._tool_manager.list_tools():
        twin = second._tool_manager.get_tool(tool.name)
        assert twin is not None and twin is not tool
        assert tool.parameters == twin.parameters and tool.parameters is not twin.parameters
        assert tool.output_schema == twin.output_schema and tool.output_schema is not twin.output_schema

    created = await first.call_tool("document_create", {})
    assert not created.is_error
    assert one.list_documents().total == 1 and other.list_documents().total == 0
    listed = await second.call_tool("document_list", {})
    assert listed.structured_content is not None and listed.structured_content["documents"] == []
