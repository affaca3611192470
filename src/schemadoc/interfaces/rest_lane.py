"""The most frequent REST requests, answered without FastAPI's routing and parameter machinery.

For a read of a leaf held in memory, FastAPI's per-request work (matching the URL against every
route, solving dependencies, converting parameters with pydantic, two more middleware layers)
costs several times the read itself. :class:`RestLane` is a pure ASGI middleware that sits
inside the application's own (error guard, body limits, CORS) and answers the requests of
:data:`LANE` by calling the very endpoint functions FastAPI would call, with the arguments
FastAPI would pass them, and turns a :class:`~schemadoc.errors.SchemaDocError` into a response
through the same handler. Every other request, and these ones too when they carry a query
parameter outside the table or a value FastAPI would have to convert or refuse, goes on to
FastAPI unchanged: the behaviour is the same by construction, the OpenAPI document is FastAPI's.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any

import anyio
from fastapi.routing import APIRoute
from starlette.datastructures import Headers, QueryParams
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from schemadoc.errors import SchemaDocError

__all__ = ["LANE", "RestLane"]

LANE: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    # method, route path under the API prefix, operation_id, query parameters the lane passes on
    ("GET", "/documents/{doc_id}", "document_read_node", ("path",)),
    ("PUT", "/documents/{doc_id}", "document_update_node", ("path", "dry_run")),
    ("POST", "/documents/{doc_id}/nodes", "document_create_node", ("path", "dry_run")),
    ("DELETE", "/documents/{doc_id}/nodes", "document_delete_node", ("path", "dry_run")),
    ("POST", "/documents/{doc_id}/patch", "document_apply_patch", ("dry_run",)),
)
"""The requests the lane answers itself (``dry_run`` only as ``true`` or ``false``)."""

_BOOLEAN = {"true": True, "false": False}
_FROM_REQUEST = frozenset({"doc_id", "raw", "if_match", "rest"})
# the path parameter, the body, the If-Match header, the application's state (``rest.RestState``)

ErrorHandler = Callable[[Request, Exception], Awaitable[Response]]


@dataclass(frozen=True)
class _Endpoint:
    call: Callable[..., Any]
    is_async: bool
    query: frozenset[str]     # query parameters it takes
    required: frozenset[str]  # those of them without a default: absent, FastAPI answers
    takes_body: bool
    takes_if_match: bool
    takes_rest: bool


def _endpoint(route: APIRoute, query: tuple[str, ...]) -> _Endpoint | None:
    """The endpoint of ``route`` if the lane can supply every argument it needs, else ``None``."""
    if route.dependencies:  # a dependency of the route or its router (a check, a guard): FastAPI runs it
        return None
    parameters = inspect.signature(route.endpoint).parameters
    suppliable = _FROM_REQUEST | set(query)
    if any(p.default is p.empty and name not in suppliable for name, p in parameters.items()):
        return None
    if "doc_id" not in parameters:
        return None
    taken = frozenset(name for name in query if name in parameters)
    return _Endpoint(route.endpoint, inspect.iscoroutinefunction(route.endpoint), taken,
                     frozenset(name for name in taken if parameters[name].default is parameters[name].empty),
                     "raw" in parameters, "if_match" in parameters, "rest" in parameters)


class RestLane:
    """Answers the requests of :data:`LANE` by calling their endpoints directly (module docstring).

    ``routes``: the REST router's routes (their paths under ``prefix``, or as declared without it);
    ``on_error``: the application's handler for :class:`SchemaDocError`; ``state``: the application's
    ``RestState``, passed to the endpoints that take it (``rest``), as FastAPI does.
    """

    def __init__(self, app: ASGIApp, *, routes: Iterable[Any], prefix: str, on_error: ErrorHandler,
                 state: Any = None) -> None:
        self.app = app
        self.state = state
        self.documents = prefix + "/documents/"
        self.on_error = on_error
        self.endpoints: dict[tuple[str, str], _Endpoint] = {}  # (method, "" | "/nodes" | "/patch")
        wanted = {(method, path, operation): query for method, path, operation, query in LANE}
        for route in routes:
            if not isinstance(route, APIRoute):
                continue
            path = route.path[len(prefix):] if route.path.startswith(prefix + "/") else route.path
            for method in route.methods or ():
                query = wanted.get((method, path, route.operation_id or ""))
                endpoint = None if query is None else _endpoint(route, query)
                if endpoint is not None:
                    self.endpoints[(method, path.removeprefix("/documents/{doc_id}"))] = endpoint

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path"):
            answered = await self._answer(scope, receive, send)
            if answered:
                return
        await self.app(scope, receive, send)

    def _match(self, scope: Scope) -> tuple[_Endpoint, dict[str, Any]] | None:
        """The endpoint and its arguments, when the lane can call it exactly as FastAPI would."""
        path: str = scope["path"]
        if not path.startswith(self.documents):
            return None
        doc_id, slash, rest = path[len(self.documents):].partition("/")
        endpoint = self.endpoints.get((scope["method"], slash + rest))
        if endpoint is None or not doc_id:
            return None
        arguments: dict[str, Any] = {"doc_id": doc_id}
        if scope["query_string"]:
            query = QueryParams(scope["query_string"])
            items = query.multi_items()
            if len(items) != len(query) or not endpoint.query.issuperset(query):
                return None  # a repeated or unknown parameter: FastAPI decides
            for name, value in items:
                if name == "dry_run":
                    if value not in _BOOLEAN:
                        return None
                    arguments[name] = _BOOLEAN[value]
                else:
                    arguments[name] = value
        if not endpoint.required.issubset(arguments):
            return None
        if endpoint.takes_if_match:
            arguments["if_match"] = Headers(scope=scope).get("if-match")
        if endpoint.takes_rest:
            if self.state is None:
                return None
            arguments["rest"] = self.state
        return endpoint, arguments

    async def _answer(self, scope: Scope, receive: Receive, send: Send) -> bool:
        matched = self._match(scope)
        if matched is None:
            return False
        endpoint, arguments = matched
        if endpoint.takes_body:
            chunks: list[bytes] = []
            while True:
                message = await receive()
                if message["type"] != "http.request":
                    return True  # the client went away: nobody to answer
                chunks.append(message.get("body", b""))
                if not message.get("more_body", False):
                    break
            arguments["raw"] = b"".join(chunks)
        try:
            if endpoint.is_async:
                response = await endpoint.call(**arguments)
            else:  # writes fsync: in a worker thread, as FastAPI runs a plain ``def`` endpoint
                response = await anyio.to_thread.run_sync(functools.partial(endpoint.call, **arguments))
        except SchemaDocError as error:
            response = await self.on_error(Request(scope), error)
        await response(scope, receive, send)
        return True
