"""The MCP door: a tool call as an MCP ``tools/call`` through ``mcp.Client`` (:class:`McpDoor`), and resources."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import Client, MCPError

from schemadoc.errors import CATALOG

from ...readings import status_of
from ...spec import ARGUMENTS, code_status
from .base import (
    _CREATED,
    CALL_TIMEOUT,
    CORE_TOOLS,
    OBSERVED,
    OPTIONAL_TOOLS,
    TARGET,
    TRANSCRIPT,
    Door,
    Outcome,
    _beyond_the_spec,
    not_applicable,
)


def text_of(content: Sequence[Any]) -> str:
    """The text of an MCP result's content blocks (tool results, resource contents)."""
    return "".join(str(getattr(block, "text", "")) for block in content)


@dataclass
class McpDoor:
    """MCP tools and resources through an ``mcp.Client`` (in process or streamable HTTP)."""

    name: str
    client: Any
    """An ``mcp.Client`` (or, for a server on stdio, an object with its methods)."""
    status_from_category: bool = False
    """Remote servers: take the status from the error's ``category`` instead of the local catalog."""
    kind: str = "mcp"
    _tools: frozenset[str] | None = None
    _arguments: dict[str, frozenset[str]] = field(default_factory=dict)

    def _error_status(self, error: dict[str, Any]) -> int:
        code = error.get("code")
        known = code_status(code) or (CATALOG[code].status if isinstance(code, str) and code in CATALOG else None)
        if not self.status_from_category and known is not None:
            return known
        return status_of(error.get("category"), known)

    async def call(self, tool: str, args: dict[str, Any]) -> Outcome:
        # through JSON, as over a real wire: an in-process server must not share the test's objects
        args = json.loads(json.dumps(args))
        if tool in OPTIONAL_TOOLS and tool not in await self.tool_names():
            not_applicable(f"the server declares no tool {tool}")
        _beyond_the_spec(tool, args, await self.tool_arguments(tool))
        try:
            with anyio.fail_after(CALL_TIMEOUT):
                result = await self.client.call_tool(tool, args)
        except MCPError as failure:
            outcome = self._protocol_error(failure, resource=False)
            TRANSCRIPT.add(self.name, {"tool": tool, "arguments": args},
                           {"jsonrpc_error": {"code": failure.code, "message": failure.message, "data": failure.data}})
            if failure.code != -32602:  # invalid params: a protocol answer the spec's MCP allows for bad arguments
                OBSERVED.anomaly(self.name, tool, f"JSON-RPC error {failure.code} instead of an isError result: "
                                                  f"{failure.message}")
            OBSERVED.record(self.name, tool, outcome)
            return outcome
        text = text_of(result.content)
        if result.is_error:
            if result.structured_content is not None:
                OBSERVED.anomaly(self.name, tool, "an isError result carries structuredContent")
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if not (isinstance(parsed, dict) and isinstance(parsed.get("error"), dict)):
                OBSERVED.anomaly(self.name, tool, f"isError text is not a JSON error object: {text[:300]!r}")
                parsed = {"error": {"code": None, "message": text}}
            outcome = Outcome(False, parsed, self._error_status(parsed["error"]))
        else:
            body = json.loads(json.dumps(result.structured_content))
            if not isinstance(body, dict):
                OBSERVED.anomaly(self.name, tool, f"success without a structuredContent object: {text[:300]!r}")
                body = {}
            else:
                try:
                    same = json.loads(text) == body
                except ValueError:
                    same = False
                if not same:
                    OBSERVED.anomaly(self.name, tool, "the text content is not the JSON of structuredContent")
            outcome = Outcome(True, body, 201 if tool in _CREATED else 200)
        TRANSCRIPT.add(self.name, {"tool": tool, "arguments": args},
                       {"isError": bool(result.is_error), "structuredContent": result.structured_content,
                        "text": text if result.is_error or result.structured_content is None else None})
        OBSERVED.record(self.name, tool, outcome)
        return outcome

    async def tool_names(self) -> frozenset[str]:
        """The tools the server declares (asked once per door)."""
        if self._tools is None:
            with anyio.fail_after(CALL_TIMEOUT):
                listed = await self.client.list_tools()
            self._tools = frozenset(tool.name for tool in listed.tools)
            self._arguments = {tool.name: frozenset((tool.input_schema or {}).get("properties", {}) or {})
                               for tool in listed.tools}
        return self._tools

    async def tool_arguments(self, tool: str) -> frozenset[str] | None:
        """The arguments the server declares for ``tool`` (``None`` if it does not declare the tool)."""
        await self.tool_names()
        return self._arguments.get(tool)

    async def read_document(self, doc_id: str) -> Outcome:
        return await self._read_json_resource(f"schema://{doc_id}", "read_document")

    async def read_version(self, doc_id: str, version: int | str) -> Outcome:
        return await self._read_json_resource(f"schema://{doc_id}/versions/{version}", "read_version")

    async def _read_json_resource(self, uri: str, what: str) -> Outcome:
        """``resources/read`` of a JSON resource: ``{"document": <its JSON>}``, or the protocol error."""
        try:
            with anyio.fail_after(CALL_TIMEOUT):
                result = await self.client.read_resource(uri)
        except MCPError as failure:
            outcome = self._protocol_error(failure)
            TRANSCRIPT.add(self.name, {"resources/read": uri},
                           {"jsonrpc_error": {"code": failure.code, "message": failure.message, "data": failure.data}})
            OBSERVED.record(self.name, what, outcome)
            return outcome
        TRANSCRIPT.add(self.name, {"resources/read": uri},
                       {"contents": [getattr(block, "text", None) for block in result.contents]})
        texts = [block for block in result.contents if hasattr(block, "text")]
        if len(texts) != 1:
            OBSERVED.anomaly(self.name, what, f"{uri}: {len(result.contents)} contents, not one text")
        block = texts[0]
        if block.mime_type != "application/json":
            OBSERVED.anomaly(self.name, what, f"{uri}: mime type {block.mime_type!r}")
        outcome = Outcome(True, {"document": json.loads(block.text)}, 200)
        OBSERVED.record(self.name, what, outcome)
        return outcome

    def _protocol_error(self, failure: MCPError, *, resource: bool = True) -> Outcome:
        """A JSON-RPC error as an outcome: its data's error object if it has one, else a synthesised one."""
        data = failure.data
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            body = {"error": data["error"]}
        else:
            # The contract: a resource that does not exist is -32602 with data.uri; a tool call's -32602 is
            # invalid params (no catalogued code).
            code = "resource-not-found" if failure.code == -32602 and resource else None
            category = "404" if code else "400" if failure.code == -32602 else None
            body = {"error": {"code": code, "category": category, "message": failure.message,
                              "details": data if isinstance(data, dict) else {"data": data},
                              "remediation": ""}}
        return Outcome(False, body, self._error_status(body["error"]), rpc_error=failure.code, rpc_data=data)


@asynccontextmanager
async def mcp_door(name: str, server: Any, *, mode: str, status_from_category: bool = False) -> AsyncIterator[McpDoor]:
    """An MCP door: ``server`` is an in-process ``MCPServer`` or the URL of a streamable HTTP endpoint."""
    async with Client(server, mode=mode) as client:
        yield McpDoor(name, client, status_from_category)


async def supports(door: Door, tool: str, *arguments: str) -> bool:
    """Whether a test may call ``tool`` with ``arguments`` through ``door``: the spec's, or an extension the
    profile judges and (MCP) the server declares. Property-based tests ask first, outside Hypothesis."""
    extension = tool not in CORE_TOOLS or bool(set(arguments) - ARGUMENTS[tool])
    if not extension:
        return True
    if TARGET.spec_only:
        return False
    if isinstance(door, McpDoor):
        declared = await door.tool_arguments(tool)
        return declared is not None and set(arguments) <= declared
    return True


async def unsupported(door: Door, *needs: tuple[str, ...]) -> str | None:
    """Why a test needing every (tool, *arguments) of ``needs`` is not applicable through ``door``, or ``None``."""
    for tool, *arguments in needs:
        if not await supports(door, tool, *arguments):
            with_arguments = f" with {', '.join(arguments)}" if arguments else ""
            return (f"needs {tool}{with_arguments}, which the server does not offer"
                    + (" (--profile spec)" if TARGET.spec_only else ""))
    return None
