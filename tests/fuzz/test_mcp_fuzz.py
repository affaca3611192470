"""Hypothesis-generated arguments for every MCP tool, through the MCP door (an in-process client session).

Each example is a sequence of tool calls whose arguments mix plausible values (a document that
exists, its version) with wrong types, huge and deeply nested values, odd JSON Pointers (``~``,
``~2``, a trailing ``/``, ``-``, leading zeros, empty segments) and odd Unicode (U+0085, U+2028,
U+2029, lone surrogates, NUL) in keys and values. Every failure must be an ``isError`` result
carrying a catalogued error object other than ``internal-error``, and the server must answer a
normal call afterwards.

The default run is short (20 sequences of up to 20 calls); ``SCHEMADOC_FUZZ_MCP_EXAMPLES`` raises it
(``make fuzz``).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path
from typing import Any

import anyio
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.types import CallToolResult

from schemadoc.errors import CATALOG, SchemaDocError
from schemadoc.interfaces.mcp_door.server import build_mcp_server
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
EXAMPLES = int(os.environ.get("SCHEMADOC_FUZZ_MCP_EXAMPLES", "20"))
CALLS_PER_EXAMPLE = 20

_service = DocumentService(load_schema(BOOK_SCHEMA), MemoryDocumentStore())
_service.open()
_server = build_mcp_server(_service)


class _Current:
    """Stands for the example's document (``DOC``) or its version then, plus ``shift`` (``VERSION``)."""

    def __init__(self, what: str, shift: int = 0) -> None:
        self.what, self.shift = what, shift

    def __repr__(self) -> str:
        return f"<{self.what}{self.shift:+d}>" if self.what == "version" else f"<{self.what}>"


DOC = _Current("doc")


def _tools() -> dict[str, dict[str, Any]]:
    async def listing() -> dict[str, dict[str, Any]]:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with Client(_server, mode="legacy") as client:
                return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}

    return anyio.run(listing)


TOOLS = _tools()

# -- values ----------------------------------------------------------------------------------

ODD_CHARACTERS = ["\x85", "\u2028", "\u2029", "\x00", "\ud800", "\udfff", "\ufeff", "\U0010ffff", "~", "/",
                  "\\", '"', "\u00e9", "\u0301", "\u202e", "\x7f", "\t"]
odd_text = st.one_of(
    # joined by hand: st.text() would drop the lone surrogates
    st.lists(st.sampled_from(ODD_CHARACTERS) | st.characters(), max_size=12).map("".join),
    st.sampled_from(["", " ", "null", "0", "-1", "1e999", "NaN", "/", "//", "~", "~2", "-", "01"]),
)
segments = st.one_of(st.sampled_from(["", "~", "~0", "~1", "~2", "-", "0", "00", "01", "-1", "99999999999999999999",
                                      "title", "metadata", "chapters", "tags", "sections", "\x85", "\u2028"]),
                     odd_text)
pointers = st.builds(
    lambda parts, lead, trail: ("/" if lead else "") + "/".join(parts) + ("/" if trail else ""),
    st.lists(segments, max_size=5), st.booleans(), st.booleans())
integers = st.one_of(st.integers(-3, 5), st.sampled_from([2**31, 2**63 - 1, 2**63, 2**64, 2**70, -(2**64), 10**40]))
scalars = st.one_of(st.none(), st.booleans(), integers, st.floats(allow_nan=False), odd_text)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(odd_text, inner, max_size=4), max_leaves=12)


def _nested(depth: int) -> Any:
    value: Any = "leaf"
    for level in range(depth):
        value = [value] if level % 2 else {"\u2028": value}
    return value


big_values = st.one_of(
    st.integers(100, 230).map(_nested),  # the client itself refuses to send much deeper
    st.integers(10_000, 200_000).map(lambda size: "x\u2029" * size),
    st.integers(1_000, 20_000).map(lambda size: list(range(size))),
)
patches = st.lists(st.one_of(
    st.fixed_dictionaries({"op": st.sampled_from(["add", "remove", "replace", "move", "copy", "test", "nope"]),
                           "path": pointers}, optional={"from": pointers | json_values, "value": json_values}),
    json_values), max_size=4)
anything = st.one_of(json_values, pointers, big_values)


def _plausible(name: str) -> st.SearchStrategy[Any]:
    if name in ("doc_id",):
        return st.just(DOC)
    if name in ("doc_ids",):
        return st.just([DOC])
    if name in ("node_path", "from_path", "to_path", "path"):
        return st.one_of(st.sampled_from(["/", "", "/title", "/tags", "/tags/-", "/tags/0", "/metadata",
                                          "/metadata/keywords/-", "/chapters/-", "/chapters/0/title"]), pointers)
    if name in ("version", "to_version", "from_version", "at_version"):
        return st.builds(lambda shift: _Current("version", shift), st.integers(-1, 0))
    if name == "patch":
        return patches
    if name in ("node_data", "merge_patch"):
        return st.one_of(json_values, big_values)
    if name == "query":
        return st.one_of(st.just("Untitled"), odd_text)
    if name in ("dry_run", "dereferenced"):
        return st.booleans()
    if name == "format":
        return st.just("markdown")
    if name == "max_bytes":
        return st.integers(512, 4096)
    if name in ("limit",):
        return st.integers(1, 5)
    return st.integers(0, 3)  # offset, max_depth, depth, since, since_version, cursor


@st.composite
def tool_calls(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    name = draw(st.sampled_from(sorted(TOOLS)))
    schema = TOOLS[name]
    arguments: dict[str, Any] = {}
    for member in schema.get("properties", {}):
        # mostly plausible, so that calls get past argument validation and into the engine
        choice = draw(st.sampled_from(["plausible"] * 6 + ["odd", "absent"]))
        if choice == "plausible":
            arguments[member] = draw(_plausible(member))
        elif choice == "odd":
            arguments[member] = draw(anything)
    if draw(st.integers(0, 9)) == 0:
        arguments[draw(odd_text)] = draw(json_values)
    return name, arguments


# -- the test --------------------------------------------------------------------------------


def _check(name: str, arguments: dict[str, Any], result: CallToolResult) -> None:
    if not result.is_error:
        return
    assert len(result.content) == 1, (name, arguments, result)
    body = orjson.loads(result.content[0].text)  # type: ignore[union-attr]
    error = body["error"]
    assert error["code"] in CATALOG, (name, arguments, error)
    assert error["category"] == str(CATALOG[error["code"]].status), (name, arguments, error)
    assert error["code"] != "internal-error", (name, arguments, error)


def _concrete(value: Any, doc_id: str) -> Any:
    if isinstance(value, _Current):
        if value.what == "doc":
            return doc_id
        try:
            return max(1, _service.version_of(doc_id) + value.shift)
        except SchemaDocError:  # deleted or purged by an earlier call
            return 1
    if isinstance(value, list):
        return [_concrete(item, doc_id) for item in value]
    return value


async def _run(calls: list[tuple[str, dict[str, Any]]]) -> None:
    doc_id = _service.create_document()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(_server, mode="legacy") as client:
            for name, symbolic in calls:
                arguments = {key: _concrete(value, doc_id) for key, value in symbolic.items()}
                try:
                    result = await client.call_tool(name, arguments)
                except UnicodeEncodeError:  # the client itself cannot write a lone surrogate there
                    continue
                _check(name, arguments, result)
            # still answering: a new document, written and read back
            created = await client.call_tool("document_create", {})
            assert created.is_error is False, created.content
            new = (created.structured_content or {})["doc_id"]
            written = await client.call_tool("document_update_node", {
                "doc_id": new, "node_path": "/title", "node_data": "Still here", "version": 1})
            assert written.is_error is False, written.content
            read = await client.call_tool("document_read_node", {"doc_id": new, "node_path": "/title"})
            assert (read.structured_content or {}).get("node_content") == "Still here", read.content


@settings(max_examples=EXAMPLES, deadline=None, derandomize=EXAMPLES <= 20, suppress_health_check=list(HealthCheck))
@given(st.lists(tool_calls(), min_size=1, max_size=CALLS_PER_EXAMPLE))
def test_fuzzed_tool_arguments_get_catalogued_errors_and_the_server_keeps_answering(
        calls: list[tuple[str, dict[str, Any]]]) -> None:
    anyio.run(_run, calls)
