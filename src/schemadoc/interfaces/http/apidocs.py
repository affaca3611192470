"""The API documentation pages, ``/docs`` (Swagger UI) and ``/redoc`` (ReDoc), served without any CDN.

FastAPI's own pages load Swagger UI, ReDoc and a favicon from public hosts, so a browser without
internet access (an air-gapped site, a strict firewall) shows a blank page. Here the pages load
them from this server, under :data:`ASSETS_PATH`: the files are those of the ``fastapi-offline``
package (a Swagger UI 5 bundle and its CSS, ReDoc 2's standalone bundle, FastAPI's favicon).
The pages name no other host: Swagger UI's online validator badge is turned off and ReDoc is
served without Google Fonts.

The assets are one GET route for a fixed set of file names (not a mount), so every other method
is ``method-not-allowed`` naming GET and HEAD, and an unknown name is ``route-not-found``; the
files are answered by Starlette's :class:`~starlette.staticfiles.StaticFiles` (content type,
``ETag``, ``Last-Modified``, ``304 Not Modified``).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_redoc_html, get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from starlette.exceptions import HTTPException
from starlette.responses import HTMLResponse, Response
from starlette.routing import Route
from starlette.staticfiles import StaticFiles

__all__ = ["ASSETS", "ASSETS_PATH", "DOCS_PATH", "OAUTH2_REDIRECT_PATH", "REDOC_PATH", "add_api_docs",
           "assets_directory"]

DOCS_PATH = "/docs"
REDOC_PATH = "/redoc"
OAUTH2_REDIRECT_PATH = "/docs/oauth2-redirect"
ASSETS_PATH = "/static/docs"

SWAGGER_JS = "swagger-ui-bundle.js"
SWAGGER_CSS = "swagger-ui.css"
REDOC_JS = "redoc.standalone.js"
FAVICON = "favicon.png"
ASSETS = (SWAGGER_JS, SWAGGER_CSS, REDOC_JS, FAVICON)
"""Every file the pages load from :data:`ASSETS_PATH`."""

_ASSETS_PACKAGE = "fastapi_offline"
_INSTALL = "pip install 'fastapi-offline>=1.7,<2'"

# Swagger UI asks validator.swagger.io for a badge unless validatorUrl is null
_SWAGGER_UI_PARAMETERS: dict[str, Any] = {"validatorUrl": None}


def assets_directory() -> Path:
    """The directory holding :data:`ASSETS`; ``RuntimeError`` naming what is missing if the package lacks one."""
    try:
        directory = Path(str(resources.files(_ASSETS_PACKAGE) / "static"))
    except ModuleNotFoundError:
        raise RuntimeError(f"the API documentation pages need the {_ASSETS_PACKAGE} package: "
                           f"{_INSTALL}, or reinstall schemadoc") from None
    missing = [name for name in ASSETS if not (directory / name).is_file()]
    if missing:
        raise RuntimeError(f"the {_ASSETS_PACKAGE} package at {directory} lacks {', '.join(missing)}: "
                           f"reinstall it ({_INSTALL})")
    return directory


def add_api_docs(app: FastAPI, *, title: str, openapi_url: str) -> None:
    """Add ``/docs``, its OAuth2 redirect page, ``/redoc`` and their assets to ``app``.

    ``app`` is built with ``docs_url=None, redoc_url=None`` (FastAPI's CDN pages off). The URLs in
    the pages are prefixed with the request's ``root_path``, as FastAPI does, so the pages also
    work behind a proxy that mounts the application under a prefix.
    """
    files = StaticFiles(directory=assets_directory())
    known = frozenset(ASSETS)

    def root(request: Request) -> str:
        return str(request.scope.get("root_path", "")).rstrip("/")

    async def asset(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in known:
            raise HTTPException(status_code=404)
        return await files.get_response(name, request.scope)

    async def swagger_ui(request: Request) -> HTMLResponse:
        prefix = root(request)
        return get_swagger_ui_html(
            openapi_url=prefix + openapi_url, title=f"{title} - Swagger UI",
            swagger_js_url=f"{prefix}{ASSETS_PATH}/{SWAGGER_JS}",
            swagger_css_url=f"{prefix}{ASSETS_PATH}/{SWAGGER_CSS}",
            swagger_favicon_url=f"{prefix}{ASSETS_PATH}/{FAVICON}",
            oauth2_redirect_url=prefix + OAUTH2_REDIRECT_PATH,
            swagger_ui_parameters=_SWAGGER_UI_PARAMETERS)

    async def oauth2_redirect(request: Request) -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    async def redoc(request: Request) -> HTMLResponse:
        prefix = root(request)
        return get_redoc_html(
            openapi_url=prefix + openapi_url, title=f"{title} - ReDoc",
            redoc_js_url=f"{prefix}{ASSETS_PATH}/{REDOC_JS}",
            redoc_favicon_url=f"{prefix}{ASSETS_PATH}/{FAVICON}",
            with_google_fonts=False)

    app.router.routes.extend([
        Route(DOCS_PATH, swagger_ui, methods=["GET"], include_in_schema=False, name="swagger_ui"),
        Route(OAUTH2_REDIRECT_PATH, oauth2_redirect, methods=["GET"], include_in_schema=False,
              name="swagger_ui_oauth2_redirect"),
        Route(REDOC_PATH, redoc, methods=["GET"], include_in_schema=False, name="redoc"),
        Route(ASSETS_PATH + "/{name}", asset, methods=["GET"], include_in_schema=False, name="api_docs_assets"),
    ])
