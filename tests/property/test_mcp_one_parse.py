"""One parse decides at /mcp: the access layer's reading of a posted message and the MCP SDK's agree.

Generated JSON-RPC messages (``tools/call`` of read and write tools, other methods, batches,
notifications, replies, ``_meta`` members anywhere; ``tests/mcp_near_json.py``) are written as near-JSON: ``NaN`` and
``Infinity`` literals, repeated member names (a second ``method`` or ``name``), integers beyond 64
bits, lone surrogate escapes, invalid UTF-8, a byte order mark, whitespace JSON does not allow,
deep nesting, trailing bytes. Each is posted, in process, through the access layer
(:class:`~schemadoc.interfaces.http.access.AccessGuard` with its :class:`~schemadoc.interfaces.http.guards.McpReader`)
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
from mcp_near_json import MAX_DEPTH, READ_TOOLS, bodies
from mcp_types import JSONRPCNotification, JSONRPCRequest, jsonrpc_message_adapter
from pydantic import ValidationError

from schemadoc.errors import CATALOG
from schemadoc.interfaces.http.access import AccessGuard, HostPolicy, TokensFile, mcp_message_writes
from schemadoc.interfaces.http.guards import McpPost, McpReader

READER = "reader-token-0123456789abcdef"
WRITER = "writer-token-0123456789abcdef"


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
                      read_only_tools=READ_TOOLS, mcp_reader=Recording(1 << 20, MAX_DEPTH))


class Recording(McpReader):
    """The reader, also leaving the value it judged in the scope for the test to compare."""

    async def read(self, scope: Any, receive: Any, send: Any) -> McpPost | None:
        post = await super().read(scope, receive, send)
        if post is not None:
            scope["test.judged"] = post.message
        return post


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
                   scope.get("test.handed"), scope.get("test.judged"))


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


@pytest.mark.parametrize("raw_id, expected", [(b"18446744073709551616", 1 << 64), (b"-" + b"9" * 40, -int("9" * 40))])
def test_a_refusal_echoes_any_id_the_sdk_would_read(guard: AccessGuard, raw_id: bytes, expected: Any) -> None:
    """An id beyond 64 bits is read exactly, so a refusal carries it back exactly (it once answered 500: the writer
    of refusals could not write it)."""
    body = b'{"jsonrpc":"2.0","id":' + raw_id + b',"method":"tools/call","params":{"name":"document_create",' \
           b'"arguments":{}}}'
    outcome = post(guard, body, READER)
    assert (outcome.status, outcome.handed) == (403, None)
    answer = json.loads(outcome.answer)
    assert answer["id"] == expected
    assert answer["error"]["data"]["error"]["code"] == "token-read-only"
