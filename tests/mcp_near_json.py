"""Near-JSON JSON-RPC messages for MCP, generated with Hypothesis: what a hostile client posts to ``/mcp``.

A message is built as a tree (objects as member lists, so a name may come twice; :class:`Raw` bytes where a
value goes) and written token by token with chosen whitespace: as JSON however odd (repeated members, integers
beyond 64 bits, escapes, ``_meta`` members anywhere), or with one flaw alone (a value that is not JSON such as
``NaN``, whitespace JSON does not allow, a byte order mark or other bytes before, bytes after, nesting about the
depth limit), or with many. Shared by the differential property (``tests/property/test_mcp_one_parse.py``) and
the read-only fuzz run against a real server (``tests/fuzz/test_mcp_read_only_fuzz.py``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from schemadoc.operations.catalogue import CATALOGUE

Arguments = Callable[[str], st.SearchStrategy[Any]]
"""The arguments of a call of the tool of this name."""

__all__ = ["HOSTILE", "MAX_DEPTH", "METHODS", "READ_TOOLS", "WRITE_TOOLS", "Arguments", "Obj", "Raw", "bodies",
           "messages"]

READ_TOOLS = frozenset(operation.name for operation in CATALOGUE if not operation.writes)
WRITE_TOOLS = sorted(operation.name for operation in CATALOGUE if operation.writes)
METHODS = ["initialize", "ping", "tools/list", "resources/read", "prompts/get", "logging/setLevel", "server/discover",
           "tools/call", "resources/write", "documents/delete", "", "TOOLS/CALL", "notifications/cancelled"]
MAX_DEPTH = 16


@dataclass(frozen=True)
class Raw:
    """Bytes written as they are where a value goes: what a parser may or may not take for a value."""

    text: bytes


@dataclass(frozen=True)
class Obj:
    """An object as its members in order; a name may come twice."""

    members: tuple[tuple[str, Any], ...]


VALID = [b"1e5", b"-0", b"-0.0", b"5e-324", b"1.7976931348623157e308", b"1E2", b"0.1e1", b'"\\u0000"', b'"\\/"',
         b'"\xe2\x80\xa8"', b'"\\ud83d\\ude00"', b"123456789012345678901234567890", b"-18446744073709551617",
         b"18446744073709551616", b"-9223372036854775808", b"18446744073709551615"]
"""Odd but valid JSON values."""
HOSTILE = [b"NaN", b"Infinity", b"-Infinity", b"nan", b"1e999", b"-1e999", b'"\\ud800"', b'"a\\udfffb"', b'"\xff\xfe"',
           b'"\xed\xa0\x80"', b'"\xc0\xaf"', b"01", b"1.", b".5", b"+1", b"0x10", b"'x'", b"undefined", b"True",
           b'"\t"', b"[1,]", b'{"a":1,}', b"//x\n1"]
"""Values that are not JSON, though some parser or other reads them."""
SPACE = [b"", b" ", b"\n", b"\t", b"\r\n"]
ODD_SPACE = [b"\x0b", b"\x0c", b"\xc2\xa0", b"\xe2\x80\xa8", b"\xef\xbb\xbf", b"\x00"]

scalars = (st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.integers()
           | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=12)
           | st.sampled_from(VALID).map(Raw))
keys = st.sampled_from(["_meta", "x", "name", "method", "arguments", "id", "", "é"]) | st.text(max_size=6)


def _values(leaves: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=4)
        | st.lists(st.tuples(keys, inner), max_size=4).map(lambda members: Obj(tuple(members))),
        max_leaves=10)


JSON_VALUES = _values(scalars)
NEAR_JSON_VALUES = _values(scalars | st.sampled_from(HOSTILE).map(Raw))


@st.composite
def messages(draw: st.DrawFn, values: st.SearchStrategy[Any], arguments: Arguments | None = None) -> Any:
    """One JSON-RPC message as a tree: a request, notification or reply, with extra and repeated members.

    ``arguments``: what a call of a tool's arguments are drawn from (default: ``values``)."""
    kind = draw(st.sampled_from(["read call", "write call", "method", "notification", "reply"]))
    members: list[tuple[str, Any]] = [("jsonrpc", draw(st.sampled_from(["2.0", "2.0", "1.0"])))]
    if kind != "notification":
        members.append(("id", draw(st.integers(-5, 2**70) | st.text(max_size=4) | st.none())))
    if kind == "reply":
        members.append((draw(st.sampled_from(["result", "error"])), draw(values)))
    elif kind.endswith("call"):
        tool = draw(st.sampled_from(sorted(READ_TOOLS) if kind == "read call" else WRITE_TOOLS))
        params = [("name", tool), ("arguments", draw(arguments(tool) if arguments is not None else values))]
        if draw(st.booleans()):  # a second name: which one counts?
            second = draw(st.sampled_from([*WRITE_TOOLS, *sorted(READ_TOOLS)]))
            params.insert(draw(st.integers(0, len(params))), ("name", second))
        members.append(("method", "tools/call"))
        members.append(("params", Obj(tuple(params))))
    else:
        method = draw(st.sampled_from(METHODS))
        members.append(("method", method if kind == "method" else f"notifications/{method}"))
        if draw(st.booleans()):
            members.append(("params", draw(values)))
    if draw(st.booleans()):  # a second method: which one counts?
        members.insert(draw(st.integers(0, len(members))), ("method", draw(st.sampled_from(METHODS))))
    for _ in range(draw(st.integers(0, 2))):  # _meta, or anything, anywhere at this level
        members.insert(draw(st.integers(0, len(members))), (draw(keys), draw(values)))
    return Obj(tuple(members))


@st.composite
def bodies(draw: st.DrawFn, arguments: Arguments | None = None) -> bytes:
    """A posted body: a message or a batch, written with chosen whitespace, maybe with bytes before or after.

    ``arguments``: what a call of a tool's arguments are drawn from (default: any value)."""
    # JSON however odd, or one flaw alone (so that each is met where nothing else gives the body away), or many
    flaw = draw(st.sampled_from(["none", "none", "none", "leaf", "leaf", "space", "prefix", "suffix", "deep", "all"]))
    spaces = st.sampled_from(SPACE + ODD_SPACE if flaw in ("space", "all") else SPACE)
    values = NEAR_JSON_VALUES if flaw == "all" else JSON_VALUES
    tree: Any = (draw(st.lists(messages(values, arguments), max_size=3)) if draw(st.integers(0, 4)) == 0
                 else draw(messages(values, arguments)))
    if flaw == "leaf":  # one value that is not JSON, in some object of the message (its _meta, its arguments, ...)
        tree = _with_member(tree, draw(st.integers(0, 1000)), (draw(keys), Raw(draw(st.sampled_from(HOSTILE)))))
    if flaw == "deep" or (flaw == "all" and draw(st.booleans())):  # deeper than the limit, or about as deep
        deep: Any = 1
        for _ in range(MAX_DEPTH + draw(st.integers(-2, 4))):
            deep = [deep]
        tree = Obj((("jsonrpc", "2.0"), ("id", 1), ("method", "tools/call"),
                    ("params", Obj((("name", "document_list"), ("arguments", Obj((("x", deep),))))))))
    out: list[bytes] = []

    def gap() -> None:
        out.append(draw(spaces))

    def write(node: Any) -> None:
        gap()
        if isinstance(node, Raw):
            out.append(node.text)
        elif isinstance(node, Obj):
            out.append(b"{")
            for index, (key, value) in enumerate(node.members):
                if index:
                    out.append(b",")
                gap()
                out.append(json.dumps(key).encode())
                gap()
                out.append(b":")
                write(value)
            gap()
            out.append(b"}")
        elif isinstance(node, list):
            out.append(b"[")
            for index, item in enumerate(node):
                if index:
                    out.append(b",")
                write(item)
            gap()
            out.append(b"]")
        else:
            out.append(json.dumps(node, ensure_ascii=draw(st.booleans())).encode("utf-8", "surrogatepass"))
        gap()

    write(tree)
    prefix = draw(st.sampled_from([b"\xef\xbb\xbf", b"\xfe\xff", b"\x00"])) if flaw in ("prefix", "all") else b""
    suffix = draw(st.sampled_from([b"x", b"}", b"\x00", b"{}", b"\n\n", b"]"])) if flaw in ("suffix", "all") else b""
    return prefix + b"".join(out) + suffix


def _with_member(tree: Any, where: int, member: tuple[str, Any]) -> Any:
    """``tree`` with ``member`` added to one of its objects (the ``where``-th, counted round the ones there are)."""
    objects: list[Obj] = []

    def collect(node: Any) -> None:
        if isinstance(node, Obj):
            objects.append(node)
            for _, value in node.members:
                collect(value)
        elif isinstance(node, list):
            for item in node:
                collect(item)

    collect(tree)
    if not objects:
        return tree
    chosen = objects[where % len(objects)]

    def rebuild(node: Any) -> Any:
        if node is chosen:
            return Obj((*node.members, member))
        if isinstance(node, Obj):
            return Obj(tuple((key, rebuild(value)) for key, value in node.members))
        if isinstance(node, list):
            return [rebuild(item) for item in node]
        return node

    return rebuild(tree)
