"""Helpers shared by the in-process MCP door tests (fixtures are in conftest.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from mcp import Client
from mcp.types import CallToolResult

from schemadoc.errors import CATALOG

BOOK_SCHEMA = Path(__file__).resolve().parents[3] / "schemas" / "book.schema.json"
UNKNOWN_DOC = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
CHAPTER = {"id": "ch-1", "title": "Intro", "sections": [{"title": "Start", "paragraphs": [{"text": "Hi."}]}]}


async def call(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """A successful call's structured content (which must equal its text content)."""
    result = await client.call_tool(tool, arguments or {})
    assert result.is_error is False, result.content
    content: dict[str, Any] | None = result.structured_content
    assert content is not None and content["success"] is True
    assert orjson.loads(result.content[0].text) == content  # type: ignore[union-attr]
    return content


async def fail(client: Client, tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    """A failed call's error object: the only content, as JSON, with no structured content."""
    return error_of(await client.call_tool(tool, arguments or {}))


def error_of(result: CallToolResult) -> dict[str, Any]:
    assert result.is_error is True
    assert result.structured_content is None
    assert len(result.content) == 1
    body = orjson.loads(result.content[0].text)  # type: ignore[union-attr]
    assert set(body) == {"error"}
    error: dict[str, Any] = body["error"]
    assert set(error) == {"code", "category", "message", "details", "remediation", "request_id"}
    assert error["category"] == str(CATALOG[error["code"]].status)
    return error
