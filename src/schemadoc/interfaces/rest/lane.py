"""The catalogue's REST requests, answered without FastAPI's routing and parameter machinery.

For a read of a leaf held in memory, FastAPI's per-request work (matching the URL against every
route, solving dependencies, two more middleware layers) costs several times the read itself.
:class:`RestLane` is a pure ASGI middleware inside the application's own (error guard, body
limits, CORS): it matches the URL against the routes of the operation catalogue
(:data:`~schemadoc.interfaces.rest.routes.BINDINGS`) and answers with the very function the FastAPI
route calls (:func:`~schemadoc.interfaces.rest.routes.answer`), turning a
:class:`~schemadoc.errors.SchemaDocError` into a response through the application's handler.
Every other request goes on to FastAPI unchanged. The behaviour is the same by construction;
the OpenAPI document is FastAPI's.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from starlette.requests import Request
from starlette.responses import Response
from starlette.types import ASGIApp, Receive, Scope, Send

from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.rest.routes import Binding, RestState, answer

__all__ = ["RestLane", "route_pattern"]

ErrorHandler = Callable[[Request, Exception], Awaitable[Response]]


def route_pattern(prefix: str, path: str) -> re.Pattern[str]:
    """A regular expression matching the URLs of a route under ``prefix``; its path parameters are named groups."""
    parts = re.split(r"({\w+})", path)
    return re.compile("".join(f"(?P<{part[1:-1]}>[^/]+)" if part.startswith("{") else re.escape(part)
                              for part in [prefix, *parts]) + "$")


class RestLane:
    """Answers the catalogue's routes by calling :func:`answer` directly (module docstring).

    ``bindings``: the routes to answer; ``on_error``: the application's handler for
    :class:`SchemaDocError`; ``state``: the application's ``RestState``.
    """

    def __init__(self, app: ASGIApp, *, bindings: Iterable[Binding], prefix: str, on_error: ErrorHandler,
                 state: RestState) -> None:
        self.app = app
        self.state = state
        self.prefix = prefix + "/"
        self.on_error = on_error
        self.routes: dict[str, list[tuple[re.Pattern[str], Binding]]] = {}
        for binding in bindings:
            pattern = route_pattern(prefix, binding.route.path)
            self.routes.setdefault(binding.route.method, []).append((pattern, binding))

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope.get("root_path") and scope["path"].startswith(self.prefix):
            for pattern, binding in self.routes.get(scope["method"], ()):
                matched = pattern.match(scope["path"])
                if matched is not None:
                    await self._answer(binding, matched.groupdict(), scope, receive, send)
                    return
        await self.app(scope, receive, send)

    async def _answer(self, binding: Binding, path_params: dict[str, Any], scope: Scope, receive: Receive,
                      send: Send) -> None:
        scope["path_params"] = path_params  # in place, as Starlette's router does
        if "router" not in scope and "app" in scope:
            scope["router"] = scope["app"].router  # for url_for (the Location of a new document)
        request = Request(scope, receive)
        try:
            response = await answer(binding, request, self.state)
        except SchemaDocError as error:
            response = await self.on_error(request, error)
        await response(scope, receive, send)
