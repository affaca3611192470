"""Building MCP servers: the tools are described once per process, and each server still gets its own.

``tools/list`` must stay what the SDK's own registration gives (``MCPServer.add_tool`` on each
function), and two servers must share no state: each tool calls its own server's service.
"""

from __future__ import annotations

import warnings
from typing import Any

import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from schemadoc.interfaces.mcp import _TOOL_TABLE, DESCRIPTIONS, _tool_functions, build_mcp_server
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
async def test_tools_list_is_what_the_sdk_registers_from_the_functions(schema: LoadedSchema) -> None:
    """Byte for byte: the tools a server gets equal those ``add_tool`` generates afresh from each function."""
    service = _service(schema)
    reference: MCPServer[Any] = MCPServer("reference")
    for name, title, hints in _TOOL_TABLE:
        reference.add_tool(_tool_functions(service)[name], name=name, title=title, description=DESCRIPTIONS[name],
                           annotations=hints, structured_output=True)
        registered = reference._tool_manager.get_tool(name)
        assert registered is not None
        registered.parameters["additionalProperties"] = False

    first, second = build_mcp_server(service), build_mcp_server(_service(schema))
    expected = await _tools_list(reference)
    assert await _tools_list(first) == expected
    assert await _tools_list(second) == expected
    assert len(first._tool_manager.list_tools()) == len(_TOOL_TABLE) == 23


@pytest.mark.anyio
async def test_two_servers_share_no_tool_state(schema: LoadedSchema) -> None:
    one, other = _service(schema), _service(schema)
    first, second = build_mcp_server(one), build_mcp_server(other)
    for tool in first._tool_manager.list_tools():
        twin = second._tool_manager.get_tool(tool.name)
        assert twin is not None and twin is not tool
        assert tool.fn is not twin.fn
        assert tool.parameters == twin.parameters and tool.parameters is not twin.parameters
        assert tool.output_schema == twin.output_schema and tool.output_schema is not twin.output_schema

    created = await first.call_tool("document_create", {})
    assert not created.is_error
    assert one.list_documents().total == 1 and other.list_documents().total == 0
    listed = await second.call_tool("document_list", {})
    assert listed.structured_content is not None and listed.structured_content["documents"] == []
