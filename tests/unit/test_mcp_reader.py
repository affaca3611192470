"""The one reading of a message posted to MCP (``McpReader``), in process: what it hands on, what it refuses."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from schemadoc.interfaces.http.guards import MCP_MESSAGE_ID, McpReader

MAX_BYTES = 4096
MAX_DEPTH = 8


Read = tuple[list[dict[str, Any]], Any, bytes | None, dict[str, Any]]


def read(chunks: list[bytes], *, disconnect: bool = False) -> Read:
    """(messages sent, the message read, the bytes handed on, the scope) for a body sent in ``chunks``."""
    scope: dict[str, Any] = {"type": "http", "method": "POST", "path": "/mcp",
                             "headers": [(b"content-type", b"application/json")]}
    incoming = [{"type": "http.request", "body": chunk, "more_body": index < len(chunks) - 1 or disconnect}
                for index, chunk in enumerate(chunks)] + ([{"type": "http.disconnect"}] if disconnect else [])
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return incoming.pop(0) if incoming else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def run() -> tuple[Any, bytes | None]:
        post = await McpReader(MAX_BYTES, MAX_DEPTH).read(scope, receive, send)
        if post is None:
            return None, None
        handed = await post.receive()
        return post.message, handed["body"]

    message, handed = asyncio.run(run())
    return sent, message, handed, scope


def answer(sent: list[dict[str, Any]]) -> tuple[int, int, str, Any]:
    body = json.loads(sent[1]["body"])
    return sent[0]["status"], body["error"]["code"], body["error"]["data"]["error"]["code"], body["id"]


def test_the_canonical_message_is_handed_on_with_its_length_and_big_integers_stay_exact() -> None:
    body = (b'{ "jsonrpc" : "2.0", "id": 4, "method": "tools/call", "method": "tools/list",\n'
            b' "n": 1180591620717411303424 }')
    sent, message, handed, scope = read([body[:20], body[20:]])
    assert sent == []
    assert handed == b'{"jsonrpc":"2.0","id":4,"method":"tools/list","n":1180591620717411303424}'
    assert message == json.loads(handed) and message["n"] == 2**70
    assert scope[MCP_MESSAGE_ID] == 4
    assert dict(scope["headers"])[b"content-length"] == str(len(handed)).encode()


@pytest.mark.parametrize("body", [b"", b"NaN", b'{"id":1,"x":Infinity}', b'{"id":1}x', b'"\\ud800"', b'"\xff"',
                                  b"\xef\xbb\xbf{}"])
def test_what_is_not_json_is_a_parse_error_carrying_invalid_request(body: bytes) -> None:
    sent, message, handed, scope = read([body])
    assert (message, handed, MCP_MESSAGE_ID in scope) == (None, None, False)
    assert answer(sent) == (400, -32700, "invalid-request", None)


def test_too_deep_is_request_too_deep_with_the_id_when_it_could_be_read() -> None:
    nested = b"[" * 20 + b"]" * 20
    sent, *_ = read([b'{"jsonrpc":"2.0","id":"a","method":"x","params":' + nested + b"}"])
    assert answer(sent) == (400, -32600, "request-too-deep", "a")
    sent, *_ = read([b"[" * 2000 + b"]" * 2000])  # beyond what the parser nests
    assert answer(sent)[:3] == (400, -32600, "request-too-deep")


def test_a_body_over_the_limit_is_refused_as_it_streams_and_a_cut_one_is_dropped() -> None:
    sent, message, handed, _ = read([b"[" + b"1," * 1000, b"1," * 2000 + b"1]"])
    assert (answer(sent)[:3], handed) == ((413, -32600, "request-too-large"), None)
    sent, message, handed, _ = read([b'{"jsonrpc":"2.0",'], disconnect=True)
    assert (sent, message, handed) == ([], None, None)
