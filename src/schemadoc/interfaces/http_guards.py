"""The ASGI layers around the application's routes: the last-line error guard, the request body and depth
limits (for REST and ``/mcp`` alike), and the MCP session limit made catalogued.

Each answers with the catalog's error object: a REST error body, or at ``/mcp`` a JSON-RPC error whose
``data`` is the error object.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import orjson
from fastapi.telemetry import TelemetryConfig
from mcp.types import INTERNAL_ERROR
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.logs import client_gone
from schemadoc.interfaces.mcp import SchemaDocMCPServer
from schemadoc.interfaces.rest import check_depth, dump_body
from schemadoc.interfaces.rest_wire import READ_BODY

__all__ = ["MCP_PATH", "ErrorGuard", "RequestLimits", "SessionLimit", "error_bytes", "open_sessions", "replaying",
           "send_json", "telemetry"]

log = logging.getLogger("schemadoc.http")

MCP_PATH = "/mcp"
_MCP_ENVELOPE_DEPTH = 3  # message -> params -> arguments -> the argument value
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


async def send_json(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


def error_bytes(error: SchemaDocError, path: str, message_id: Any = None, mcp_path: str = MCP_PATH) -> bytes:
    """The error object as a REST body, or at ``mcp_path`` as a JSON-RPC error carrying it."""
    if path == mcp_path:
        return orjson.dumps({"jsonrpc": "2.0", "id": message_id,
                             "error": {"code": -32600, "message": error.message, "data": error.to_dict()}})
    return dump_body(error.to_dict())


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

    A client that went away (:func:`~schemadoc.interfaces.logs.client_gone`: it hung up in the middle of its
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


class RequestLimits:
    """``request-too-large`` (413) for bodies over ``max_bytes``; ``request-too-deep`` for deep MCP messages.

    The Content-Length header is checked first; the body is then read and counted (a client may
    lie or stream chunked), and handed on unchanged.
    """

    def __init__(self, app: ASGIApp, max_bytes: int, max_depth: int) -> None:
        self.app = app
        self.max_bytes = max_bytes
        self.max_depth = max_depth

    def _too_large(self, size: int | None) -> SchemaDocError:
        seen = f"{size} bytes" if size is not None else "more"
        return SchemaDocError("request-too-large",
                              f"The request body ({seen}) is larger than the limit of {self.max_bytes} bytes.",
                              {"limit": "max_body_bytes", "max_body_bytes": self.max_bytes,
                               **({"actual": size, "content_length": size} if size else {})})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] not in _BODY_METHODS:
            await self.app(scope, receive, send)
            return
        path = scope.get("path", "")
        length: int | None = None
        for name, value in scope.get("headers", ()):
            if name == b"content-length":
                try:
                    length = int(value)
                except ValueError:
                    length = None
        if length is not None and length > self.max_bytes:
            await send_json(send, 413, error_bytes(self._too_large(length), path))
            return
        chunks: list[bytes] = []
        total = 0
        disconnect: Message | None = None
        while True:
            message = await receive()
            if message["type"] != "http.request":
                disconnect = message
                break
            chunk = message.get("body", b"")
            total += len(chunk)
            if total > self.max_bytes:
                await send_json(send, 413, error_bytes(self._too_large(None), path))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        del chunks
        if path == MCP_PATH and scope["method"] == "POST" and body:
            problem = self._mcp_depth_problem(body)
            if problem is not None:
                await send_json(send, problem[0].status, error_bytes(problem[0], path, problem[1]))
                return
        if disconnect is None:
            scope[READ_BODY] = body
        await self.app(scope, replaying(body, receive, disconnect), send)

    def _mcp_depth_problem(self, body: bytes) -> tuple[SchemaDocError, Any] | None:
        limit = self.max_depth + _MCP_ENVELOPE_DEPTH
        if body.count(b"[") + body.count(b"{") <= limit:
            return None
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError as error:
            if "depth" in str(error) or "recursion" in str(error):
                return SchemaDocError("request-too-deep", "The MCP message is nested too deeply to parse.",
                                      {"max_json_depth": self.max_depth}), None
            return None  # not JSON: the MCP transport answers with its own parse error
        message_id = message.get("id") if isinstance(message, dict) else None
        try:
            check_depth(message, limit, "MCP message")
        except SchemaDocError as error:
            error.details["max_json_depth"] = self.max_depth
            return error, message_id
        return None


_SDK_SESSION_REFUSAL = b"Too many open sessions"


class SessionLimit:
    """The MCP endpoint, with the SDK's refusal of a session beyond ``max_sessions`` made catalogued.

    The SDK's session manager admits sessions under its own lock and refuses one more with a bare
    503 JSON-RPC error; that answer (only ever sent to a request without ``Mcp-Session-Id``) is
    replaced by the same status and JSON-RPC code with ``too-many-sessions`` in ``data``, and the
    request's id.
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
        body: list[bytes] = []
        held: Message | None = None  # a 503's start, until its body says whether it is the session limit
        answer_body: list[bytes] = []

        async def seen() -> Message:
            message = await receive()
            if message["type"] == "http.request":
                body.append(message.get("body", b""))
            return message

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
                    await send_json(send, 503, self._refusal(b"".join(body)))
                else:
                    await send(held)
                    await send({"type": "http.response.body", "body": sent})
                return
            await send(message)

        await self.app(scope, seen, answer)

    def _refusal(self, request: bytes) -> bytes:
        try:
            message = orjson.loads(request)
        except orjson.JSONDecodeError:
            message = None
        message_id = message.get("id") if isinstance(message, dict) else None
        open_now = self.sessions()
        error = SchemaDocError(
            "too-many-sessions",
            f"The server already has {open_now} MCP sessions open, the most it serves (max_mcp_sessions).",
            {"limit": "max_mcp_sessions", "max_mcp_sessions": self.max_sessions, "actual": open_now})
        return orjson.dumps({"jsonrpc": "2.0", "id": message_id,
                             "error": {"code": INTERNAL_ERROR, "message": error.message, "data": error.to_dict()}})


def open_sessions(server: SchemaDocMCPServer) -> Callable[[], int]:
    """How many handshake-era sessions the server's session manager holds (the SDK keeps them private)."""
    def count() -> int:
        instances = getattr(server.session_manager, "_server_instances", None)
        return len(instances) if isinstance(instances, dict) else server.session_manager.max_sessions or 0
    return count
