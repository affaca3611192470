"""The browser page at ``/ui``: static files shipped in this package, served by the server itself.

The page talks only to the public REST API (``/api/v1/...``) and its event streams, like any
client. Every address under ``/ui`` that is not a static file (``/ui``, ``/ui/documents/{doc_id}``,
with the pointer and version in the query) answers with the same page, whose script shows the view
the address names, so links and the browser's back button work. Its ``<base href>`` carries the
application's ``root_path``, so the page also works behind a proxy prefix.

Every answer under ``/ui`` carries a Content-Security-Policy that allows scripts, styles and
connections from this server only, and no inline script or style: document content, which the page
shows as text, could not run even if it tried. The front-end libraries are vendored under
``static/vendor/`` with their licences (see ``docs/ui.md``); nothing is fetched from elsewhere.
"""

from __future__ import annotations

import html
from functools import cache
from pathlib import Path

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Mount, Route, Router
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["CONTENT_SECURITY_POLICY", "UI_PATH", "mount_ui"]

UI_PATH = "/ui"
_HERE = Path(__file__).resolve().parent
STATIC_DIR = _HERE / "static"

CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
    "font-src 'self'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
)
_SECURITY_HEADERS = [
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
]


@cache
def _page_template() -> str:
    return (_HERE / "index.html").read_text(encoding="utf-8")


def _page(request: Request) -> Response:
    base = f"{request.scope.get('root_path', '')}/"  # inside the mount: the application's root_path + /ui
    body = _page_template().replace("__BASE__", html.escape(base, quote=True))
    return HTMLResponse(body, headers={"Cache-Control": "no-cache"})


def _to_slash(request: Request) -> Response:
    query = f"?{request.url.query}" if request.url.query else ""
    return RedirectResponse(f"{request.scope.get('root_path', '')}{UI_PATH}/{query}", status_code=307)


class _SecurityHeaders:
    """Adds the Content-Security-Policy and its companions to every response of the wrapped app."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, with_headers)


def ui_app() -> ASGIApp:
    """The page and its static files, as one ASGI application to mount at ``/ui``.

    A bare router, not an application: a missing file or a wrong method raises to the enclosing
    application, which answers with its catalogued ``route-not-found`` / ``method-not-allowed``.
    """
    routes = [
        Route("/", _page, methods=["GET", "HEAD"]),
        Mount("/static", StaticFiles(directory=STATIC_DIR, follow_symlink=False)),
        Route("/{address:path}", _page, methods=["GET", "HEAD"]),
    ]
    return _SecurityHeaders(Router(routes=routes))


def mount_ui(app: Starlette) -> None:
    """Serve the page at ``/ui`` (``/ui`` itself redirects to ``/ui/``); kept out of the OpenAPI document."""
    app.router.routes.append(Route(UI_PATH, _to_slash, methods=["GET", "HEAD"], include_in_schema=False))
    app.router.routes.append(Mount(UI_PATH, app=ui_app()))
