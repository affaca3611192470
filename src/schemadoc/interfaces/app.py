"""One ASGI application: REST under ``/api/v1``, MCP (streamable HTTP) at ``/mcp``, docs and health.

- ``/api/v1/...``: :func:`schemadoc.interfaces.rest.rest_router`;
- ``/mcp``: the MCP server of :func:`schemadoc.interfaces.mcp.build_mcp_server`, both protocol
  eras on one URL. Its route is added to the FastAPI router itself (not ``Mount("/")``), so that
  unknown URLs and wrong methods still get the catalogued ``route-not-found`` and
  ``method-not-allowed``; the session manager runs in this application's lifespan;
- ``/health``, ``/openapi.json`` (OpenAPI 3.1), and ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc) with
  their assets served by this application (:mod:`schemadoc.interfaces.apidocs`: no CDN, so they
  render offline).

The most frequent REST requests (reading a node, the node writes, a patch) are answered by
:class:`~schemadoc.interfaces.rest_lane.RestLane` calling their endpoints directly, without
FastAPI's per-request routing and parameter machinery; everything else goes through FastAPI.

Every error leaves as the catalog's error object with the catalog's status: SchemaDocError,
FastAPI's request validation (``invalid-request``), unknown routes and methods, bodies over
``max_body_bytes`` (``request-too-large``, checked from Content-Length and by counting the bytes
actually received), and anything unexpected (``internal-error``, logged with its traceback,
which never reaches the client). On ``/mcp`` the two size/depth limits answer with a JSON-RPC
error whose ``data`` is the error object, and so does the session limit (``too-many-sessions``,
503: an ``initialize`` beyond ``max_mcp_sessions`` open handshake-era sessions).

REST event streams and MCP resource subscriptions take their slots from one
:class:`~schemadoc.interfaces.subscribers.SubscriberSlots` (``max_subscribers_per_document``,
``max_subscribers_total``).
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.utils import get_openapi
from mcp.server.transport_security import TransportSecuritySettings
from mcp.types import INTERNAL_ERROR
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

import schemadoc
from schemadoc.config import Settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.apidocs import add_api_docs
from schemadoc.interfaces.feeds import HEARTBEAT_SECONDS
from schemadoc.interfaces.mcp import SchemaDocMCPServer, build_mcp_server
from schemadoc.interfaces.rest import (
    BINDINGS,
    REST_STATE,
    JSONBody,
    check_depth,
    dump_body,
    error_response,
    refine_openapi,
    rest_router,
    rest_state,
)
from schemadoc.interfaces.rest_lane import RestLane
from schemadoc.interfaces.subscribers import SubscriberSlots
from schemadoc.service import DocumentService

__all__ = ["API_PREFIX", "MCP_PATH", "build_app", "create_service"]

log = logging.getLogger("schemadoc.http")

API_PREFIX = "/api/v1"
MCP_PATH = "/mcp"
_OPENAPI_URL = "/openapi.json"
_MCP_ENVELOPE_DEPTH = 3  # message -> params -> arguments -> the argument value
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

_DESCRIPTION = """\
A document server that keeps JSON documents valid against one JSON Schema (Draft 2020-12)
while agents (MCP at `/mcp`) and applications (this REST API) edit them piece by piece by
RFC 6901 JSON Pointer.

Every write names the version it was made against (`version` in the body or `If-Match`);
reads return it as `ETag`. Every edit accepts `dry_run=true`. Every version stays in the
document's journal: read its history, any past version, diffs between versions, revert to one,
or follow new versions live as Server-Sent Events (`/documents/{doc_id}/events`, resumable
with `Last-Event-ID`); `/changes` is a polling feed across all documents. Every error has the shape
`{"error": {"code", "category", "message", "details", "remediation"}}` with a stable `code`
from the error catalog (`GET /api/v1/errors`, or the MCP resource `schema://errors`).
"""


def create_service(settings: Settings) -> DocumentService:
    """Load the schema, open the store (PostgreSQL at ``settings.storage_url``, else files in
    ``settings.storage_dir``) and return the ready service.

    Raises the catalogued start-up errors: ``schema-load-failed``, ``schema-resolution-failed``,
    ``storage-write-failed`` (a storage directory that cannot be created or written).
    """
    from schemadoc.schema import load_schema
    from schemadoc.snapshotter import SnapshotPolicy
    from schemadoc.storage import store_for

    if settings.schema_path is None:
        raise SchemaDocError("schema-load-failed", "No schema is configured.", {"setting": "schema_path"},
                             remediation="Give one with --schema PATH, the SCHEMA_PATH environment variable, "
                                         "or \"schema_path\" in the config file.")
    schema = load_schema(settings.schema_path)
    service = DocumentService(schema, store_for(settings.storage_dir, settings.storage_url),
                              snapshot_policy=SnapshotPolicy.from_settings(settings),
                              max_json_depth=settings.max_json_depth, max_string_length=settings.max_string_length,
                              max_patch_operations=settings.max_patch_operations,
                              memory_budget=settings.memory_budget)
    service.open()
    return service


# -- error mapping ---------------------------------------------------------------------------


class HealthResult(BaseModel):
    status: Literal["healthy"]


def _log_error(error: SchemaDocError, request: Request) -> None:
    if error.status >= 500:
        log.error("%s %s -> %s: %s", request.method, request.url.path, error.code, error.message)
    else:
        log.debug("%s %s -> %s: %s", request.method, request.url.path, error.code, error.message)


async def _on_schemadoc_error(request: Request, exc: Exception) -> JSONBody:
    assert isinstance(exc, SchemaDocError)
    _log_error(exc, request)
    return error_response(exc)


async def _on_validation_error(request: Request, exc: Exception) -> JSONBody:
    assert isinstance(exc, RequestValidationError)
    problems = []
    for item in exc.errors():
        location = [str(part) for part in item.get("loc", ())]
        problems.append({"location": location[0] if location else "request",
                         "argument": location[-1] if location else "request",
                         "message": str(item.get("msg", "invalid")),
                         "type": str(item.get("type", "invalid"))})
    first = problems[0] if problems else {"location": "request", "argument": "request", "message": "invalid"}
    where = {"query": "query parameter", "path": "path parameter", "header": "header", "body": "body member"}
    kind = where.get(first["location"], first["location"])
    error = SchemaDocError(
        "invalid-request", f"Invalid {kind} {first['argument']!r}: {first['message']}.",
        {"argument": first["argument"], "location": first["location"], "problems": problems})
    _log_error(error, request)
    return error_response(error)


def _allowed_methods(request: Request) -> list[str]:
    """Every method some route accepts at this URL (Starlette's Allow names only the first route's)."""
    allowed: list[str] = []
    for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"):
        probe = {**request.scope, "method": method}
        if any(route.matches(probe)[0] == Match.FULL for route in request.app.router.routes):
            allowed.append(method)
    return allowed


async def _on_http_error(request: Request, exc: Exception) -> JSONBody:
    assert isinstance(exc, StarletteHTTPException)
    details: dict[str, Any] = {"method": request.method, "path": request.url.path}
    headers = dict(exc.headers or {})
    if exc.status_code == 404:
        error = SchemaDocError("route-not-found", f"No endpoint at {request.method} {request.url.path}.", details)
    elif exc.status_code == 405:
        allowed = _allowed_methods(request) or [
            method.strip() for method in headers.get("Allow", "").split(",") if method.strip()]
        headers["Allow"] = ", ".join(allowed)
        details["allowed"] = allowed
        error = SchemaDocError(
            "method-not-allowed",
            f"{request.method} is not allowed on {request.url.path}"
            + (f"; use {', '.join(allowed)}." if allowed else "."), details)
    elif exc.status_code == 413:
        error = SchemaDocError("request-too-large", "The request body is too large.", details)
    elif exc.status_code < 500:
        error = SchemaDocError("invalid-request", f"The request is invalid: {exc.detail}.", details)
    else:
        error = SchemaDocError("internal-error", "An unexpected error happened in the server.", details)
    _log_error(error, request)
    return error_response(error, headers={k: v for k, v in headers.items() if k.lower() == "allow"} or None)


# -- ASGI middleware -------------------------------------------------------------------------


async def _send_json(send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None) -> None:
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"),
                            (b"content-length", str(len(body)).encode()), *(headers or [])]})
    await send({"type": "http.response.body", "body": body})


def _error_bytes(error: SchemaDocError, path: str, message_id: Any = None) -> bytes:
    if path == MCP_PATH:
        return orjson.dumps({"jsonrpc": "2.0", "id": message_id,
                             "error": {"code": -32600, "message": error.message, "data": error.to_dict()}})
    return dump_body(error.to_dict())


class _ErrorGuard:
    """The last line: an unexpected exception becomes ``internal-error`` 500, logged, without a traceback."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, guarded_send)
        except Exception:
            log.exception("unexpected error in %s %s", scope.get("method"), scope.get("path"))
            if not started:
                error = SchemaDocError("internal-error", "An unexpected error happened in the server.",
                                       {"method": scope.get("method"), "path": scope.get("path")})
                await _send_json(send, 500, _error_bytes(error, scope.get("path", "")))


class _RequestLimits:
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
            await _send_json(send, 413, _error_bytes(self._too_large(length), path))
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
                await _send_json(send, 413, _error_bytes(self._too_large(None), path))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = b"".join(chunks)
        del chunks
        if path == MCP_PATH and scope["method"] == "POST" and body:
            problem = self._mcp_depth_problem(body)
            if problem is not None:
                await _send_json(send, problem[0].status, _error_bytes(problem[0], path, problem[1]))
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                if disconnect is not None:
                    return disconnect
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

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


class _SessionLimit:
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
                    await _send_json(send, 503, self._refusal(b"".join(body)))
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


def _open_sessions(server: SchemaDocMCPServer) -> Callable[[], int]:
    """How many handshake-era sessions the server's session manager holds (the SDK keeps them private)."""
    def count() -> int:
        instances = getattr(server.session_manager, "_server_instances", None)
        return len(instances) if isinstance(instances, dict) else server.session_manager.max_sessions or 0
    return count


# -- the application -------------------------------------------------------------------------


_FASTAPI_VALIDATION_SCHEMAS = ("HTTPValidationError", "ValidationError")


def _openapi_without_fastapi_422(app: FastAPI) -> Callable[[], dict[str, Any]]:
    """``app.openapi`` minus FastAPI's generated 422 ``HTTPValidationError`` responses.

    This application never sends them: request validation failures are ``invalid-request`` (400),
    which every operation documents with the error body.
    """

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            spec = get_openapi(title=app.title, version=app.version, openapi_version=app.openapi_version,
                               description=app.description, routes=app.routes)
            generated = "#/components/schemas/HTTPValidationError"
            for operations in spec.get("paths", {}).values():
                for operation in operations.values():
                    responses = operation.get("responses", {})
                    validation = responses.get("422", {}).get("content", {}).get("application/json", {})
                    if validation.get("schema", {}).get("$ref") == generated:
                        del responses["422"]
            schemas = spec.get("components", {}).get("schemas", {})
            for name in _FASTAPI_VALIDATION_SCHEMAS:
                schemas.pop(name, None)
            refine_openapi(spec)
            app.openapi_schema = spec
        return app.openapi_schema

    return openapi


_LOOPBACK = ("127.0.0.1", "localhost", "[::1]")


def _transport_security(settings: Settings) -> TransportSecuritySettings | None:
    """DNS-rebinding protection for a loopback server (as the SDK does), admitting the CORS origins too.

    A server listening on another address gets the SDK's default for it (no Host/Origin checks).
    """
    if settings.host not in ("127.0.0.1", "localhost", "::1"):
        return None
    hosts = [*_LOOPBACK, *(f"{host}:*" for host in _LOOPBACK)]
    origins = [*(f"http://{host}" for host in _LOOPBACK), *(f"http://{host}:*" for host in _LOOPBACK),
               *settings.cors_origins]
    return TransportSecuritySettings(enable_dns_rebinding_protection=True, allowed_hosts=hosts,
                                     allowed_origins=origins)


def build_app(service: DocumentService, settings: Settings, *,
              heartbeat_seconds: float = HEARTBEAT_SECONDS) -> FastAPI:
    """The combined ASGI application for ``service`` (see the module docstring).

    ``heartbeat_seconds``: how often an idle event stream sends a keep-alive comment.
    """
    subscribers = SubscriberSlots(settings.max_subscribers_per_document, settings.max_subscribers_total)
    server = build_mcp_server(service, subscribers=subscribers)
    # build before the lifespan touches server.session_manager
    mcp_app = server.streamable_http_app(streamable_http_path=MCP_PATH, max_request_body_size=settings.max_body_bytes,
                                         host=settings.host, transport_security=_transport_security(settings),
                                         max_sessions=settings.max_mcp_sessions,
                                         session_idle_timeout=settings.mcp_session_idle_seconds)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        server.notifier.attach_loop()  # REST writes reach MCP subscribers from the first request on
        try:
            async with server.session_manager.run():  # a routed sub-app's own lifespan never runs
                yield
        finally:
            server.notifier.close()

    app = FastAPI(title="schemadoc", version=schemadoc.__version__, description=_DESCRIPTION,
                  docs_url=None, redoc_url=None, openapi_url=_OPENAPI_URL, lifespan=lifespan,
                  default_response_class=JSONBody)
    app.openapi = _openapi_without_fastapi_422(app)  # type: ignore[method-assign]
    add_api_docs(app, title=app.title, openapi_url=_OPENAPI_URL)  # /docs, /redoc: assets served here, no CDN
    app.add_exception_handler(SchemaDocError, _on_schemadoc_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)

    # the endpoints are built once per process (rest_router); this application's state is theirs here
    state = rest_state(service, settings, heartbeat_seconds=heartbeat_seconds, subscribers=subscribers)
    setattr(app.state, REST_STATE, state)
    rest = rest_router(API_PREFIX)
    app.router.routes.extend(rest.routes)  # as they are: include_router would analyse them again (rest_router)

    @app.get("/health", tags=["health"], summary="Health check", operation_id="health",
             response_model=HealthResult)
    async def health() -> JSONBody:
        return JSONBody({"status": "healthy"})

    # the MCP endpoint, answering every method at /mcp (POST: messages, GET: stream, DELETE: end a session)
    endpoint = _SessionLimit(mcp_app, _open_sessions(server), settings.max_mcp_sessions)
    app.router.routes.append(Route(MCP_PATH, endpoint=endpoint, include_in_schema=False, name="mcp"))

    # added inner to outer: the lane for the frequent REST requests innermost, then the error guard,
    # CORS outermost (so errors carry CORS headers)
    app.add_middleware(RestLane, bindings=BINDINGS, prefix=API_PREFIX, on_error=_on_schemadoc_error, state=state)
    app.add_middleware(_ErrorGuard)
    app.add_middleware(_RequestLimits, max_bytes=settings.max_body_bytes, max_depth=settings.max_json_depth)
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=list(settings.cors_origins), allow_credentials=True,
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"], allow_headers=["*"],
            expose_headers=["ETag", "Location", "Mcp-Session-Id", "Mcp-Protocol-Version"])
    return app
