"""One parse decides at /mcp: the access layer's reading of a posted message and the MCP SDK's agree.

Generated JSON-RPC messages (``tools/call`` of read and write tools, other methods, batches,
notifications, replies, ``_meta`` members anywhere) are written as near-JSON: ``NaN`` and
``Infinity`` literals, repeated member names (a second ``method`` or ``name``), integers beyond 64
bits, lone surrogate escapes, invalid UTF-8, a byte order mark, whitespace JSON does not allow,
deep nesting, trailing bytes. Each is posted, in process, through the access layer
(:class:`~schemadoc.interfaces.access.AccessGuard` with its :class:`~schemadoc.interfaces.http_guards.McpReader`)
with a read-only and with a read-write token, to an application that records what it is handed.

Whatever is let through reads, by both of the SDK's parsers (``pydantic_core.from_json`` and its
JSON-RPC message adapter for the handshake era, the stdlib's ``json.loads`` for the modern one),
as exactly the value the access layer judged: the same methods, tool names and arguments; with
a read-only token, only reads. Whatever is not is answered with a catalogued JSON-RPC error, and
nothing is handed on.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pydantic_core
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from mcp_types import JSONRPCNotification, JSONRPCRequest, jsonrpc_message_adapter
from pydantic import ValidationError

from schemadoc.errors import CATALOG
from schemadoc.interfaces.access import AccessGuard, HostPolicy, TokensFile, mcp_message_writes
from schemadoc.interfaces.http_guards import MCP_MESSAGE, McpReader
from schemadoc.operations.catalogue import CATALOGUE

READER = "reader-token-0123456789abcdef"
WRITER = "writer-token-0123456789abcdef"
READ_TOOLS = frozenset(operation.name for operation in CATALOGUE if not operation.writes)
WRITE_TOOLS = sorted(operation.name for operation in CATALOGUE if operation.writes)
METHODS = ["initialize", "ping", "tools/list", "resources/read", "prompts/get", "logging/setLevel", "server/discover",
           "tools/call", "resources/write", "documents/delete", "", "TOOLS/CALL", "notifications/cancelled"]
MAX_DEPTH = 16


# -- near-JSON: a tree written token by token -------------------------------------------------------


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
def messages(draw: st.DrawFn, values: st.SearchStrategy[Any]) -> Any:
    """One JSON-RPC message as a tree: a request, notification or reply, with extra and repeated members."""
    kind = draw(st.sampled_from(["read call", "write call", "method", "notification", "reply"]))
    members: list[tuple[str, Any]] = [("jsonrpc", draw(st.sampled_from(["2.0", "2.0", "1.0"])))]
    if kind != "notification":
        members.append(("id", draw(st.integers(-5, 2**70) | st.text(max_size=4) | st.none())))
    if kind == "reply":
        members.append((draw(st.sampled_from(["result", "error"])), draw(values)))
    elif kind.endswith("call"):
        tool = draw(st.sampled_from(sorted(READ_TOOLS) if kind == "read call" else WRITE_TOOLS))
        params = [("name", tool), ("arguments", draw(values))]
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
def bodies(draw: st.DrawFn) -> bytes:
    """A posted body: a message or a batch, written with chosen whitespace, maybe wrapped or followed by bytes."""
    # JSON however odd, or one flaw alone (so that each is met where nothing else gives the body away), or many
    flaw = draw(st.sampled_from(["none", "none", "none", "leaf", "leaf", "space", "prefix", "suffix", "deep", "all"]))
    spaces = st.sampled_from(SPACE + ODD_SPACE if flaw in ("space", "all") else SPACE)
    values = NEAR_JSON_VALUES if flaw == "all" else JSON_VALUES
    tree: Any = (draw(st.lists(messages(values), max_size=3)) if draw(st.integers(0, 4)) == 0
                 else draw(messages(values)))
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


# -- the access layer, in process ---------------------------------------------------------------------


@dataclass
class Outcome:
    status: int
    answer: bytes
    handed: bytes | None  # what the application behind the access layer read
    judged: Any


@pytest.fixture(scope="module")
def guard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AccessGuard]:
    path = tmp_path_factory.mktemp("one-parse") / "tokens.json"
    path.write_text(json.dumps({"tokens": [{"name": "dash", "token": READER, "access": "read-only"},
                                           {"name": "ci", "token": WRITER, "access": "read-write"}]}))

    async def application(scope: Any, receive: Any, send: Any) -> None:
        handed = b""
        while True:
            message = await receive()
            handed += message.get("body", b"")
            if not message.get("more_body"):
                break
        scope["test.handed"] = handed
        await send({"type": "http.response.start", "status": 299, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    yield AccessGuard(application, hosts=HostPolicy(None, "127.0.0.1"), tokens=TokensFile(path),
                      read_only_tools=READ_TOOLS, mcp_reader=McpReader(1 << 20, MAX_DEPTH))


def post(guard: AccessGuard, body: bytes, token: str) -> Outcome:
    scope: dict[str, Any] = {
        "type": "http", "method": "POST", "path": "/mcp", "client": ("127.0.0.1", 5000),
        "headers": [(b"host", b"127.0.0.1:8080"), (b"authorization", f"Bearer {token}".encode()),
                    (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]}
    half = len(body) // 2
    chunks = [{"type": "http.request", "body": body[:half], "more_body": True},
              {"type": "http.request", "body": body[half:], "more_body": False}]
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return chunks.pop(0) if chunks else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    asyncio.run(guard(scope, receive, send))
    return Outcome(sent[0]["status"], b"".join(message.get("body", b"") for message in sent[1:]),
                   scope.get("test.handed"), scope.get(MCP_MESSAGE))


def same(a: Any, b: Any) -> bool:
    """Equal as JSON values, and of the same JSON types throughout (1 and 1.0 and True differ)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b and not (isinstance(a, float) and math.copysign(1, a) != math.copysign(1, b))


def calls(message: Any) -> list[tuple[str, Any, Any]]:
    """(method, tool name, arguments) of each request or notification in a message, as a parsed value says."""
    items = message if isinstance(message, list) else [message]
    found = []
    for item in items:
        if isinstance(item, dict) and "method" in item:
            params = item.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            arguments = params.get("arguments") if isinstance(params, dict) else None
            found.append((item["method"], name, arguments))
    return found


def sdk_handshake_reading(handed: bytes) -> list[tuple[str, Any, Any]] | None:
    """What the handshake-era transport runs: its parse and its message adapter (``None``: it refuses)."""
    try:
        value = pydantic_core.from_json(handed)
        message = jsonrpc_message_adapter.validate_python(value, by_name=False)
    except (ValueError, ValidationError):
        return None
    if isinstance(message, JSONRPCRequest | JSONRPCNotification):
        params = message.params or {}
        return [(message.method, params.get("name"), params.get("arguments"))]
    return []


# -- the property -----------------------------------------------------------------------------------


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                    HealthCheck.too_slow])
@given(body=bodies(), token=st.sampled_from([READER, WRITER]))
def test_what_the_access_layer_lets_through_the_sdk_reads_as_judged(guard: AccessGuard, body: bytes,
                                                                    token: str) -> None:
    outcome = post(guard, body, token)
    event(f"status {outcome.status}")
    if outcome.status != 299:  # refused: a catalogued JSON-RPC error, nothing handed on
        assert outcome.handed is None
        answer = json.loads(outcome.answer)
        assert answer["error"]["data"]["error"]["code"] in CATALOG
        assert (outcome.status, answer["error"]["code"]) in {
            (400, -32700), (400, -32600), (403, -32600), (413, -32600)}, outcome
        return
    assert outcome.handed is not None
    judged = outcome.judged
    for reading in (pydantic_core.from_json(outcome.handed), json.loads(outcome.handed)):
        assert same(reading, judged), (body, outcome.handed)
    handshake = sdk_handshake_reading(outcome.handed)
    if handshake is not None:
        assert all(same(list(run), list(call)) for run, call in zip(handshake, calls(judged), strict=True))
    if token == READER:
        assert not mcp_message_writes(judged, READ_TOOLS)
        for method, name, _ in [*(handshake or []), *calls(json.loads(outcome.handed))]:
            assert method.startswith("notifications/") or method != "tools/call" or name in READ_TOOLS
    # a body every SDK parser would have read alike is read alike here: re-writing it changed no value
    try:
        original = pydantic_core.from_json(body)
    except ValueError:
        return
    if not any(isinstance(x, float) and not math.isfinite(x) for x in _leaves(original)):
        assert same(original, judged)


def _leaves(value: Any) -> Iterator[Any]:
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        else:
            yield node


def test_the_nan_trick_is_what_this_property_would_catch(guard: AccessGuard) -> None:
    """The control: the SDK's own parser reads NaN, so a read-only token's NaN message must never be handed on."""
    body = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"document_delete","arguments":{},' \
           b'"_meta":{"x":NaN}}}'
    assert calls(pydantic_core.from_json(body)) == [("tools/call", "document_delete", {})]
    outcome = post(guard, body, READER)
    assert (outcome.status, outcome.handed) == (400, None)
    assert json.loads(outcome.answer)["error"]["code"] == -32700
