"""One log line per request, with its request id, and the request's figures for ``/metrics``.

:class:`RequestObserver` is the outermost ASGI layer: it takes the request id (:func:`request_id_of`: the client's
``X-Request-ID`` when it is 1 to 128 printable ASCII characters, else the trace id of its ``traceparent``, else a
generated one), returns it as ``X-Request-ID``, keeps the request's :class:`RequestRecord` in the context while the
request is answered (every error body carries its id, every record logged meanwhile may carry it), and when the
answer is over writes one line (:func:`log_request`) and counts the request (``on_request``, the metrics). Over stdio
the MCP door writes the line of each tool call itself.

The line is logged by ``schemadoc.request`` at INFO, or at WARNING when the request took longer than
``slow_request_ms``; its members (``request``) are what the JSON log format writes (docs/operations.md).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Final

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schemadoc.interfaces.http.request_context import CURRENT, REQUEST_FIELDS, RequestRecord, request_id_of

if TYPE_CHECKING:
    from schemadoc.interfaces.http.tracing import Tracing

__all__ = ["RequestObserver", "log_request", "operation_of_path"]

log = logging.getLogger("schemadoc.request")


_TOKEN_SCOPE: Final = "schemadoc.token"  # access.CREDENTIAL (access imports what imports this module)


def operation_of_path(path: str, mcp_path: str = "/mcp") -> str:
    """The ``operation`` label of a request no catalogue operation answered, from its path (a closed set)."""
    if path == mcp_path:
        return "mcp-protocol"
    if path.startswith("/api/v1/documents/") and path.endswith("/events"):
        return "events"
    if path.startswith("/api/v1/changes"):
        return "changes"
    if path.startswith("/health"):
        return "health"
    if path == "/metrics":
        return "metrics"
    if path == "/ui" or path.startswith("/ui/"):
        return "ui"
    if path in ("/docs", "/redoc", "/openapi.json") or path.startswith(("/docs/", "/redoc/", "/api/v1/errors")):
        return "docs"
    return "other"


def _status_text(record: RequestRecord) -> str:
    if record.status is not None:
        return str(record.status)
    return "error" if record.error is not None else "ok"


def log_request(record: RequestRecord, seconds: float, slow_request_ms: int) -> None:
    """Write the request's one line: INFO, or WARNING when slower than ``slow_request_ms`` (0: never)."""
    milliseconds = seconds * 1000
    slow = 0 < slow_request_ms < milliseconds
    level = logging.WARNING if slow else logging.INFO
    if not log.isEnabledFor(level):
        return
    fields: dict[str, Any] = {
        "request_id": record.request_id, "door": record.door, "method": record.method, "path": record.path,
        "operation": record.operation, "tool": record.tool, "doc_id": record.doc_id, "version": record.version,
        "dry_run": record.dry_run or None, "status": _status_text(record), "code": record.code or None,
        "duration_ms": round(milliseconds, 3), "token": record.token,
        "slow": True if slow else None}
    fields = {name: value for name, value in fields.items() if value is not None and value != ""}
    what = record.operation or record.tool or ""
    text = [f"{record.method} {record.path}" if record.path else record.method, _status_text(record)]
    if record.code:
        text.append(record.code)
    text.append(f"{record.door} {what}".rstrip())
    if record.doc_id:
        text.append(f"doc {record.doc_id}")
    if record.version is not None:
        text.append(f"v{record.version}")
    text.append(f"{milliseconds:.1f} ms")
    if record.token:
        text.append(f"token {record.token}")
    text.append(f"id {record.request_id}")
    prefix = f"slow request (over {slow_request_ms} ms): " if slow else ""
    log.log(level, "%s%s", prefix, " ".join(text), extra={REQUEST_FIELDS: fields})


class RequestObserver:
    """The outermost ASGI layer (module docstring). ``on_request(record, seconds)``: called once per answered
    request (the metrics); ``clock``: where durations are read (tests pass their own)."""

    def __init__(self, app: ASGIApp, *, slow_request_ms: int, mcp_path: str = "/mcp",
                 on_request: Callable[[RequestRecord, float], None] | None = None,
                 clock: Callable[[], float] = time.perf_counter, tracing: Tracing | None = None) -> None:
        self.app = app
        self.slow_request_ms = slow_request_ms
        self.mcp_path = mcp_path
        self.on_request = on_request
        self.clock = clock
        self.tracing = tracing

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = self.clock()
        path: str = scope.get("path", "")
        root: str = scope.get("root_path", "")
        routed = path[len(root):] if root and path.startswith(root) else path
        query: bytes = scope.get("query_string", b"")
        record = RequestRecord(request_id_of(scope.get("headers", ())), "mcp" if routed == self.mcp_path else "rest",
                               scope.get("method", ""), f"{path}?{query.decode('latin-1')}" if query else path)
        header = (b"x-request-id", record.request_id.encode("ascii"))

        async def observed_send(message: Message) -> None:
            if message["type"] == "http.response.start":
                record.status = message["status"]
                headers = message.get("headers", ())
                record.streamed = any(name.lower() == b"content-type" and value.startswith(b"text/event-stream")
                                      for name, value in headers)
                message["headers"] = [*headers, header]
            await send(message)

        reset = CURRENT.set(record)
        try:
            if self.tracing is None:
                await self._answer(scope, receive, observed_send, record, routed)
            else:
                with self.tracing.request(record, scope.get("headers", ())):
                    await self._answer(scope, receive, observed_send, record, routed)
        finally:
            CURRENT.reset(reset)
            seconds = self.clock() - started
            log_request(record, seconds, self.slow_request_ms)
            if self.on_request is not None:
                self.on_request(record, seconds)

    async def _answer(self, scope: Scope, receive: Receive, send: Send, record: RequestRecord, routed: str) -> None:
        """Let the application answer, then complete the record with what only the end tells."""
        try:
            await self.app(scope, receive, send)
        finally:
            token = scope.get(_TOKEN_SCOPE)
            if token is not None:
                record.token = getattr(token, "name", None)
            if record.operation is None:
                record.operation = operation_of_path(routed, self.mcp_path)
            if record.status is None:
                record.status = 499  # nothing was answered: the client went away first (nginx's "client closed")
