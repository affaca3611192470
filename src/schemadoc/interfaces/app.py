"""One ASGI application: REST under ``/api/v1``, MCP (streamable HTTP) at ``/mcp``, docs and health.

- ``/api/v1/...``: :func:`schemadoc.interfaces.rest.routes.rest_router`; the most frequent requests are answered
  by :class:`~schemadoc.interfaces.rest.lane.RestLane` without FastAPI's per-request routing;
- ``/mcp``: the MCP server of :func:`schemadoc.interfaces.mcp_door.server.build_mcp_server`, both protocol
  eras on one URL. Its route is added to the FastAPI router itself (not ``Mount("/")``), so that
  unknown URLs and wrong methods still get the catalogued ``route-not-found`` and
  ``method-not-allowed``; the session manager runs in this application's lifespan;
- ``/health``, ``/openapi.json`` (OpenAPI 3.1), ``/docs`` and ``/redoc`` (:mod:`~schemadoc.interfaces.http.apidocs`).

Every error leaves as the catalog's error object with the catalog's status (the handlers here, the layers of
:mod:`~schemadoc.interfaces.http.guards` around them). REST event streams and MCP resource subscriptions take
their slots from one :class:`~schemadoc.interfaces.http.subscribers.SubscriberSlots`.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Literal

import anyio.to_thread
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.utils import get_openapi
from fastapi.responses import JSONResponse
from mcp.server.transport_security import TransportSecuritySettings
from pydantic import BaseModel
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.routing import Match, Route

import schemadoc
from schemadoc.config import Settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.http.access import AccessGuard, HostPolicy, TokensFile
from schemadoc.interfaces.http.apidocs import add_api_docs
from schemadoc.interfaces.http.feeds import HEARTBEAT_SECONDS
from schemadoc.interfaces.http.guards import (
    MCP_PATH,
    ErrorGuard,
    McpReader,
    RequestLimits,
    SessionLimit,
    telemetry,
)
from schemadoc.interfaces.http.metrics import CONTENT_TYPE_LATEST, Metrics
from schemadoc.interfaces.http.request_log import RequestObserver
from schemadoc.interfaces.http.shutdown import STOPPING, StopGate, Stopping
from schemadoc.interfaces.http.subscribers import SubscriberSlots, slots_of
from schemadoc.interfaces.http.tracing import tracing_from_environment
from schemadoc.interfaces.mcp_door.server import build_mcp_server
from schemadoc.interfaces.mcp_door.sessions import SessionOwners, live_sessions, open_sessions
from schemadoc.interfaces.rest.lane import RestLane, route_pattern
from schemadoc.interfaces.rest.openapi import refine_openapi
from schemadoc.interfaces.rest.routes import (
    BINDINGS,
    REST_STATE,
    JSONBody,
    error_response,
    rest_router,
    rest_state,
)
from schemadoc.interfaces.startup import create_service
from schemadoc.operations.catalogue import CATALOGUE
from schemadoc.reading.request_examples import with_request_examples
from schemadoc.service import DocumentService
from schemadoc.ui import mount_ui

__all__ = ["API_PREFIX", "MCP_PATH", "build_app", "create_service"]

log = logging.getLogger("schemadoc.http")

_background: set[asyncio.Future[Any]] = set()
"""Tasks started without an owner, held until they end."""

API_PREFIX = "/api/v1"
_OPENAPI_URL = "/openapi.json"

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


class HealthResult(BaseModel):
    status: Literal["healthy"]


class ReadyResult(BaseModel):
    status: Literal["ready", "unavailable"]
    schema_digest: str | None = None
    """The digest of the served schema (GET /api/v1/status has the documents' verdicts under it)."""
    error: dict[str, Any] | None = None


def _store_problem(service: DocumentService) -> SchemaDocError | None:
    """Why the service's store cannot serve now (``storage-unavailable``), or None; stores without a check are ready."""
    check = getattr(service.store, "problem", None)
    return check() if callable(check) else None


def retry_after(error: SchemaDocError) -> dict[str, str] | None:
    """The ``Retry-After`` header an error's details ask for (``retry_after_seconds``), if any."""
    seconds = error.details.get("retry_after_seconds")
    return {"Retry-After": str(seconds)} if isinstance(seconds, int) else None


def _log_error(error: SchemaDocError, request: Request) -> None:
    log.log(logging.ERROR if error.status >= 500 else logging.DEBUG, "%s %s -> %s: %s", request.method,
            request.url.path, error.code, error.message)


async def _on_schemadoc_error(request: Request, exc: Exception) -> JSONBody:
    assert isinstance(exc, SchemaDocError)
    _log_error(exc, request)
    return error_response(exc, retry_after(exc))


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
    return [method for method in ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE")
            if any(route.matches({**request.scope, "method": method})[0] == Match.FULL
                   for route in request.app.router.routes)]


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


_CANONICAL_GROWTH = 5
"""How much longer than the body it was read from an MCP message's canonical form can be, at most."""

_READ_ONLY_TOOLS = frozenset(operation.name for operation in CATALOGUE if not operation.writes)
"""The tools a read-only token may call: the operations of the catalogue that only read."""


def _reads(method: str, path: str) -> bool:
    """Whether a request that carries a body only reads: a catalogue route whose operation writes nothing."""
    return any(binding.route.method == method and pattern.match(path) for binding, pattern in _BODY_READS)


_BODY_READS = tuple((binding, route_pattern(API_PREFIX, binding.route.path)) for binding in BINDINGS
                    if binding.route.method not in ("GET", "HEAD") and not binding.operation.writes)


def _add_index(app: FastAPI, schema_uri: str, *, metrics: bool) -> None:
    """``GET /`` and ``GET /api/v1`` (and with a trailing slash): what this server is and where everything is, as
    links under the ASGI ``root_path`` when the application is mounted under a prefix (``metrics``: with
    ``/metrics`` and the status view)."""
    paths = {"docs": "/docs", "redoc": "/redoc", "openapi": "/openapi.json", "health": "/health", "api": API_PREFIX,
             "schema": f"{API_PREFIX}/schema", "documents": f"{API_PREFIX}/documents",
             "changes": f"{API_PREFIX}/changes", "errors": f"{API_PREFIX}/errors", "mcp": MCP_PATH, "ui": "/ui"}
    if metrics:
        paths |= {"metrics": "/metrics", "status": "/ui/status"}

    async def index(request: Request) -> JSONResponse:
        root = str(request.scope.get("root_path", "")).rstrip("/")
        return JSONResponse({
            "name": "schemadoc", "version": schemadoc.__version__, "schema_uri": schema_uri,
            "description": "JSON documents kept valid against one JSON Schema: REST under the api link, MCP at the "
                           "mcp link (streamable HTTP), the API described at docs, redoc and openapi.",
            "links": {name: root + path for name, path in paths.items()},
        })

    for path in ("/", API_PREFIX, f"{API_PREFIX}/"):
        app.add_api_route(path, index, methods=["GET"], include_in_schema=False, name=f"index {path}")


def build_app(service: DocumentService, settings: Settings, *,
              heartbeat_seconds: float = HEARTBEAT_SECONDS, worker: int | None = None) -> FastAPI:
    """The combined ASGI application for ``service`` (see the module docstring).

    ``heartbeat_seconds``: how often an idle event stream sends a keep-alive comment; ``worker``: the number of this
    worker of ``serve --workers N``, named by ``/metrics`` (``None``: the whole server).
    """
    subscribers = slots_of(settings)
    server = build_mcp_server(service, subscribers=subscribers, slow_request_ms=settings.slow_request_ms)
    # build before the lifespan touches server.session_manager
    # the SDK's own body limit sits above ours: what reaches it was read within max_body_bytes by McpReader and is
    # its canonical form, which may be longer (a float written 1e15 is re-written 1000000000000000.0: 4.5 times)
    mcp_app = server.streamable_http_app(streamable_http_path=MCP_PATH,
                                         max_request_body_size=_CANONICAL_GROWTH * settings.max_body_bytes,
                                         host=settings.host,
                                         # AccessGuard checks Host and Origin for every door, with catalogued errors
                                         transport_security=TransportSecuritySettings(
                                             enable_dns_rebinding_protection=False),
                                         max_sessions=settings.max_mcp_sessions,
                                         # several workers share the socket: a session would live in one only
                                         stateless_http=settings.workers > 1,
                                         session_idle_timeout=settings.mcp_session_idle_seconds)

    tracing = tracing_from_environment(tokens_file=settings.tokens_file)  # OTEL_* (docs/operations.md); None: none
    if tracing is not None:
        service.span = tracing.span
    stopping = Stopping(settings.shutdown_grace_seconds)

    def say_stopping() -> None:
        """Handshake-era MCP subscribers hear that the server stops before their streams are cut."""
        task = asyncio.ensure_future(server.notifier.say_stopping())
        _background.add(task)
        task.add_done_callback(_background.discard)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        stopping.attach_loop()
        server.notifier.attach_loop()  # REST writes reach MCP subscribers from the first request on
        stopping.listen(say_stopping, stream=False)
        try:
            async with server.session_manager.run():  # a routed sub-app's own lifespan never runs
                yield
        finally:
            server.notifier.close()
            if tracing is not None:
                tracing.close()  # the spans still waiting are exported

    app = FastAPI(title="schemadoc", version=schemadoc.__version__, description=_DESCRIPTION,
                  docs_url=None, redoc_url=None, openapi_url=_OPENAPI_URL, lifespan=lifespan,
                  default_response_class=JSONBody, telemetry=telemetry())
    app.openapi = _openapi_without_fastapi_422(app)  # type: ignore[method-assign]
    # request examples built from the served schema (operationIds are the MCP tool names)
    app.openapi = with_request_examples(app.openapi, service.schema)  # type: ignore[method-assign]
    add_api_docs(app, title=app.title, openapi_url=_OPENAPI_URL)  # /docs, /redoc: assets served here, no CDN
    app.add_exception_handler(SchemaDocError, _on_schemadoc_error)
    app.add_exception_handler(RequestValidationError, _on_validation_error)
    app.add_exception_handler(StarletteHTTPException, _on_http_error)

    # the endpoints are built once per process (rest_router); this application's state is theirs here
    state = rest_state(service, settings, heartbeat_seconds=heartbeat_seconds, subscribers=subscribers)
    setattr(app.state, REST_STATE, state)
    setattr(app.state, STOPPING, stopping)  # the server's stop: begun by the signal handler (cli), read by the feeds
    rest = rest_router(API_PREFIX)
    app.router.routes.extend(rest.routes)  # as they are: include_router would analyse them again (rest_router)
    _add_index(app, service.schema_uri, metrics=settings.metrics)

    async def health() -> JSONBody:
        return JSONBody({"status": "healthy"})

    for path, operation_id in (("/health", "health"), ("/health/live", "health_live")):
        app.get(path, tags=["health"], summary="Liveness (the process answers)", operation_id=operation_id,
                response_model=HealthResult)(health)

    @app.get("/health/ready", tags=["health"], summary="Readiness (the document store answers)",
             operation_id="health_ready", response_model=ReadyResult,
             responses={503: {"model": ReadyResult, "description": "The document store cannot be used now."}})
    async def health_ready() -> JSONBody:
        problem = await anyio.to_thread.run_sync(_store_problem, service)
        if problem is None:
            return JSONBody({"status": "ready", "schema_digest": service.schema.digest})
        return JSONBody({"status": "unavailable", "schema_digest": service.schema.digest,
                         "error": problem.to_dict()["error"]}, status_code=503,
                        headers=retry_after(problem))

    # the MCP endpoint, answering every method at /mcp (POST: messages, GET: stream, DELETE: end a session)
    # each session bound to the token that opened it, and counted per client, before the SDK's own total
    endpoint = SessionOwners(SessionLimit(mcp_app, open_sessions(server), settings.max_mcp_sessions),
                             live_sessions(server), settings.max_mcp_sessions_per_client)
    app.router.routes.append(Route(MCP_PATH, endpoint=endpoint, include_in_schema=False, name="mcp"))
    mount_ui(app)  # the browser page at /ui, over the public REST API (schemadoc.ui)
    metrics = _add_metrics(app, service, subscribers, open_sessions(server), worker) if settings.metrics else None

    # added inner to outer: the lane for the frequent REST requests innermost, then the error guard,
    # CORS outermost (so errors carry CORS headers)
    app.add_middleware(RestLane, bindings=BINDINGS, prefix=API_PREFIX, on_error=_on_schemadoc_error, state=state)
    app.add_middleware(ErrorGuard)
    app.add_middleware(RequestLimits, max_bytes=settings.max_body_bytes, max_depth=settings.max_json_depth)
    # Host/Origin and tokens before anything reads a body; inside CORS, so its refusals carry CORS headers
    app.add_middleware(AccessGuard, hosts=HostPolicy(settings.allowed_hosts, settings.host, settings.cors_origins),
                       tokens=TokensFile(settings.tokens_file) if settings.tokens_file is not None else None,
                       read_only_tools=_READ_ONLY_TOOLS, reads=_reads,
                       mcp_reader=McpReader(settings.max_body_bytes, settings.max_json_depth, MCP_PATH))
    if settings.cors_origins:
        app.add_middleware(
            CORSMiddleware, allow_origins=list(settings.cors_origins), allow_credentials=True,
            allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"], allow_headers=["*"],
            expose_headers=["ETag", "Location", "Mcp-Session-Id", "Mcp-Protocol-Version", "X-Request-ID"])
    app.add_middleware(StopGate, stopping=stopping)  # once the stop began, nothing new gets in (docs/deployment.md)
    # outermost: every request gets its id and its one log line, and is counted (docs/operations.md), a request
    # refused because the server stops included
    app.add_middleware(RequestObserver, slow_request_ms=settings.slow_request_ms, mcp_path=MCP_PATH,
                       on_request=metrics.observe if metrics is not None else None, tracing=tracing)
    return app


def _add_metrics(app: FastAPI, service: DocumentService, subscribers: SubscriberSlots,
                 sessions: Callable[[], int], worker: int | None) -> Metrics:
    """``GET /metrics``: the Prometheus text format of the application's :class:`Metrics` (any token may read it)."""
    metrics = Metrics(service, subscribers=subscribers, mcp_sessions=sessions, worker=worker)

    async def scrape() -> Response:
        body = await anyio.to_thread.run_sync(metrics.exposition)
        return Response(body, media_type=CONTENT_TYPE_LATEST)

    app.add_api_route("/metrics", scrape, methods=["GET"], include_in_schema=False, name="metrics")
    return metrics
