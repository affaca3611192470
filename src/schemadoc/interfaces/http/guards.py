"""The ASGI layers around the application's routes: the last-line error guard, the request body and depth
limits (for REST and ``/mcp`` alike), the one reading of a message posted to MCP (:class:`McpReader`), and the
MCP session limit made catalogued.

Each answers with the catalog's error object: a REST error body, or at ``/mcp`` a JSON-RPC error whose
``data`` is the error object.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi.telemetry import TelemetryConfig
from mcp.types import INTERNAL_ERROR, INVALID_REQUEST, PARSE_ERROR
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.http.bodies import READ_BODY, check_depth, dump_body, parse_json
from schemadoc.interfaces.http.logs import client_gone
from schemadoc.interfaces.http.request_context import error_object

__all__ = ["MCP_MESSAGE_ID", "MCP_PATH", "ErrorGuard", "McpPost", "McpReader", "RequestLimits", "SessionLimit",
           "error_bytes", "message_id", "read_body", "replaying", "route_path", "send_json",
           "telemetry"]

log = logging.getLogger("schemadoc.http")

MCP_PATH = "/mcp"
MCP_MESSAGE_ID = "schemadoc.mcp_message_id"
"""The scope key under which :class:`McpReader` leaves the id of the message it read (``None`` for a
notification, a batch or an id that is neither a string nor an integer): present once the message was read,
and what the answers of later layers carry."""
_MCP_ENVELOPE_DEPTH = 3  # message -> params -> arguments -> the argument value
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


async def send_json(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


def error_bytes(error: SchemaDocError, path: str, message_id: Any = None, mcp_path: str = MCP_PATH,
                rpc_code: int = INVALID_REQUEST) -> bytes:
    """The error object as a REST body, or at ``mcp_path`` as a JSON-RPC error (``rpc_code``) carrying it."""
    if path == mcp_path:
        # dump_body: an id may be an integer beyond 64 bits (read exactly, so echoed exactly) or hold a lone
        # surrogate, which orjson refuses
        return dump_body({"jsonrpc": "2.0", "id": message_id,
                          "error": {"code": rpc_code, "message": error.message, "data": error_object(error)}})
    return dump_body(error_object(error))


def route_path(scope: Scope) -> str:
    """The path the application routes by: the request's, less the ``root_path`` it is served under (a proxy
    prefix, a mount), as Starlette's router reads it; so that ``/mcp`` is recognised wherever it is served."""
    path: str = scope.get("path", "")
    root: str = scope.get("root_path", "")
    if root and path.startswith(root) and (len(path) == len(root) or path[len(root)] == "/"):
        return path[len(root):]
    return path


def message_id(message: Any) -> str | int | None:
    """The id a JSON-RPC answer to ``message`` carries: its own when it is a string or an integer, else null."""
    found = message.get("id") if isinstance(message, dict) else None
    return found if isinstance(found, str | int) and not isinstance(found, bool) else None


def replaying(body: bytes, receive: Receive, disconnect: Message | None = None) -> Receive:
    """A ``receive`` that hands on a body already read (or the disconnect that ended it), then the rest."""
    replayed = False

    async def replay() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return disconnect if disconnect is not None else {"type": "http.request", "body": body,
                                                              "more_body": False}
        return await receive()

    return replay


def telemetry() -> TelemetryConfig:
    """FastAPI's own OpenTelemetry, switched off where nothing would record it.

    Left on, FastAPI asks the three OpenTelemetry providers on every request whether one was set
    (three environment lookups, about 5 µs: a tenth of a small read). It stays on when a provider
    is set before the application is built (``opentelemetry-instrument``, or an SDK set up by the
    program that embeds the application) or when FastAPI is asked to set one up itself
    (``FASTAPI_OTEL_AUTO_CONFIGURE=true``).
    """
    if os.environ.get("FASTAPI_OTEL_AUTO_CONFIGURE", "").lower() == "true" or _otel_configured():
        return {}
    return {"tracing": False, "metrics": False, "logs": False}


def _otel_configured() -> bool:
    from opentelemetry import _logs, metrics, trace

    providers = (trace.get_tracer_provider(), metrics.get_meter_provider(), _logs.get_logger_provider())
    # the API's placeholders (proxies, no-ops) live in its own modules; an SDK's or a vendor's elsewhere
    return any(not type(provider).__module__.startswith(_OTEL_PLACEHOLDERS) for provider in providers)


_OTEL_PLACEHOLDERS = ("opentelemetry.trace", "opentelemetry.metrics", "opentelemetry._logs")


class ErrorGuard:
    """The last line: an unexpected exception becomes ``internal-error`` 500, logged, without a traceback.

    A client that went away (:func:`~schemadoc.interfaces.http.logs.client_gone`: it hung up in the middle of its
    body, reset the connection, left a stream) is no error: one INFO line says so, and nothing is answered.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = disconnected = False

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        async def watched_receive() -> Message:
            nonlocal disconnected
            message = await receive()
            if message["type"] == "http.disconnect":
                disconnected = True
            return message

        try:
            await self.app(scope, watched_receive, guarded_send)
        except Exception as failure:
            if client_gone(failure, disconnected=disconnected):
                log.info("%s %s: the client went away (%s)", scope.get("method"), scope.get("path"),
                         type(failure).__name__)
                return
            log.exception("unexpected error in %s %s", scope.get("method"), scope.get("path"))
            if not started:
                error = SchemaDocError("internal-error", "An unexpected error happened in the server.",
                                       {"method": scope.get("method"), "path": scope.get("path")})
                await send_json(send, 500, error_bytes(error, scope.get("path", "")))


def _too_large(max_bytes: int, size: int | None) -> SchemaDocError:
    seen = f"{size} bytes" if size is not None else "more"
    return SchemaDocError("request-too-large",
                          f"The request body ({seen}) is larger than the limit of {max_bytes} bytes.",
                          {"limit": "max_body_bytes", "max_body_bytes": max_bytes,
                           **({"actual": size, "content_length": size} if size else {})})


async def read_body(scope: Scope, receive: Receive, send: Send, max_bytes: int) -> tuple[bytes, Message | None] | None:
    """The request body, read whole but never beyond ``max_bytes``, and the disconnect that cut it short if any.

    ``None`` when it was refused (``request-too-large``, 413, answered here): by its Content-Length
    first, then by counting what arrives (a client may lie or stream chunked).
    """
    path = route_path(scope)
    length: int | None = None
    for name, value in scope.get("headers", ()):
        if name == b"content-length":
            try:
                length = int(value)
            except ValueError:
                length = None
    if length is not None and length > max_bytes:
        await send_json(send, 413, error_bytes(_too_large(max_bytes, length), path))
        return None
    chunks: list[bytes] = []
    total = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), message
        chunk = message.get("body", b"")
        total += len(chunk)
        if total > max_bytes:
            await send_json(send, 413, error_bytes(_too_large(max_bytes, None), path))
            return None
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), None


@dataclass(frozen=True)
class McpPost:
    """A message posted to MCP as :class:`McpReader` read it: the value judged, and a ``receive`` handing on its
    canonical serialisation. Drop it once judged: the value of a big write is many times its bytes."""

    message: Any
    receive: Receive


class McpReader:
    """The one reading of a message posted to MCP, which every later judge and the MCP transport share.

    A body not declared as ``application/json`` is refused unread (``unsupported-media-type``, 415: the
    transport takes nothing else, and browsers send other types across origins without a preflight).
    The body is read once, never beyond ``max_bytes`` (``request-too-large``, 413), parsed once by
    the strict parser both doors share (:func:`~schemadoc.interfaces.http.bodies.parse_json`: orjson, which
    refuses NaN, Infinity, invalid UTF-8, lone surrogates and trailing bytes; integers beyond 64 bits
    read exactly), and checked against ``max_depth`` (``request-too-deep``). What it refuses is
    answered with HTTP 400 and a JSON-RPC error (``-32700`` for a body that is not JSON) whose
    ``data`` is the error object, as REST answers the same body: never handed to the SDK, whose own
    parsers read ``NaN`` as a number and would run the message.

    What it admits is handed on as its canonical serialisation, so both of the SDK's parsers (one
    per protocol era) read exactly the value that was judged, whatever duplicate keys, escapes or
    whitespace the client sent; its id is left in the scope (:data:`MCP_MESSAGE_ID`), which also
    tells later layers that the message was read. The first layer to see a request reads it (the
    access layer); later ones find it done.
    """

    def __init__(self, max_bytes: int, max_depth: int, path: str = MCP_PATH) -> None:
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.path = path

    async def read(self, scope: Scope, receive: Receive, send: Send) -> McpPost | None:
        """The message and a ``receive`` handing on its canonical bytes, or ``None`` when the request was answered
        here or its client left before the end of its body."""
        media = next((bytes(value).decode("latin-1") for name, value in scope.get("headers", ())
                      if name == b"content-type"), None)
        if (media or "").split(";", 1)[0].strip().lower() != "application/json":
            error = SchemaDocError(
                "unsupported-media-type", f"An MCP message must be sent as application/json, not {media[:100]!r}; "
                "nothing was run." if media else "An MCP message must be sent as application/json; the request has "
                "no Content-Type, and nothing was run.",
                {"argument": "Content-Type", "value": media[:100] if media else None, "accepted": ["application/json"]})
            await send_json(send, error.status, error_bytes(error, self.path, None, self.path, INVALID_REQUEST))
            return None
        read = await read_body(scope, receive, send, self.max_bytes)
        if read is None or read[1] is not None:
            return None  # refused, or cut short: nothing to run and nobody to answer
        body = read[0]
        del read
        try:
            message = parse_json(body)
        except SchemaDocError as error:
            deep = error.code == "request-too-deep"
            if deep:
                error.details["max_json_depth"] = self.max_depth
            await send_json(send, error.status, error_bytes(error, self.path, None, self.path,
                                                            INVALID_REQUEST if deep else PARSE_ERROR))
            return None
        try:
            check_depth(message, self.max_depth + _MCP_ENVELOPE_DEPTH, "MCP message", body)
        except SchemaDocError as error:
            error.details["max_json_depth"] = self.max_depth
            await send_json(send, error.status, error_bytes(error, self.path, message_id(message), self.path))
            return None
        del body
        canonical = dump_body(message)
        scope[MCP_MESSAGE_ID] = message_id(message)
        scope["headers"] = [(name, value) for name, value in scope.get("headers", ()) if name != b"content-length"]
        scope["headers"].append((b"content-length", str(len(canonical)).encode()))
        return McpPost(message, replaying(canonical, receive))


class RequestLimits:
    """``request-too-large`` (413) for bodies over ``max_bytes``; a message posted to MCP is read by
    :class:`McpReader` (unless an outer layer did), which also refuses deep ones.

    Other bodies are read whole (:func:`read_body`) and handed on unchanged, and left in the scope
    for the REST door.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, max_depth: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self.mcp = McpReader(max_bytes, max_depth)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        if scope["method"] == "POST" and route_path(scope) == MCP_PATH:
            if MCP_MESSAGE_ID not in scope:  # not read by an outer layer
                post = await self.mcp.read(scope, receive, send)
                if post is None:
                    return
                receive = post.receive
                del post  # the parsed value: the SDK parses the canonical bytes itself
            await self.app(scope, receive, send)
            return
        read = await read_body(scope, receive, send, self.max_bytes)
        if read is None:
            return
        body, disconnect = read
        if disconnect is None:
            scope[READ_BODY] = body
        await self.app(scope, replaying(body, receive, disconnect), send)


_SDK_SESSION_REFUSAL = b"Too many open sessions"


class SessionLimit:
    """The MCP endpoint, with the SDK's refusal of a session beyond ``max_sessions`` made catalogued.

    The SDK's session manager admits sessions under its own lock and refuses one more with a bare
    503 JSON-RPC error; that answer (only ever sent to a request without ``Mcp-Session-Id``) is
    replaced by the same status and JSON-RPC code with ``too-many-sessions`` in ``data``, and the
    id of the request (as :class:`McpReader` read it).
    """

    def __init__(self, app: ASGIApp, sessions: Callable[[], int], max_sessions: int) -> None:
        self.app = app
        self.sessions = sessions
        self.max_sessions = max_sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or any(
                name == b"mcp-session-id" for name, _ in scope.get("headers", ())):
            await self.app(scope, receive, send)
            return
        held: Message | None = None  # a 503's start, until its body says whether it is the session limit
        answer_body: list[bytes] = []

        async def answer(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start" and message["status"] == 503:
                held = message
                return
            if held is not None and message["type"] == "http.response.body":
                answer_body.append(message.get("body", b""))
                if message.get("more_body", False):
                    return
                sent = b"".join(answer_body)
                if _SDK_SESSION_REFUSAL in sent:
                    await send_json(send, 503, self._refusal(scope))
                else:
                    await send(held)
                    await send({"type": "http.response.body", "body": sent})
                return
            await send(message)

        await self.app(scope, receive, answer)

    def _refusal(self, scope: Scope) -> bytes:
        open_now = self.sessions()
        error = SchemaDocError(
            "too-many-sessions",
            f"The server already has {open_now} MCP sessions open, the most it serves (max_mcp_sessions).",
            {"limit": "max_mcp_sessions", "max_mcp_sessions": self.max_sessions, "actual": open_now})
        return error_bytes(error, MCP_PATH, scope.get(MCP_MESSAGE_ID), MCP_PATH, INTERNAL_ERROR)
