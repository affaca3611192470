"""``GET /`` and ``GET /api/v1``: what this server is and where everything is, as links.

A person or a client that opens the server's address (or the API's root) gets the name, the version, the
served schema and the URLs of the documentation, the health check, the schema, the documents, the MCP
endpoint and the page at ``/ui``, each under the ASGI ``root_path`` when the application is mounted under
a prefix.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

import schemadoc

__all__ = ["add_index"]


def _links(request: Request, api_prefix: str, mcp_path: str) -> dict[str, str]:
    root = str(request.scope.get("root_path", "")).rstrip("/")
    paths = {
        "docs": "/docs", "redoc": "/redoc", "openapi": "/openapi.json", "health": "/health",
        "api": api_prefix, "schema": f"{api_prefix}/schema", "documents": f"{api_prefix}/documents",
        "changes": f"{api_prefix}/changes", "errors": f"{api_prefix}/errors", "mcp": mcp_path, "ui": "/ui",
    }
    return {name: root + path for name, path in paths.items()}


def add_index(app: FastAPI, *, api_prefix: str, mcp_path: str, schema_uri: str) -> None:
    """Answer ``GET /`` and ``GET {api_prefix}`` (and with a trailing slash) with the index."""

    async def index(request: Request) -> JSONResponse:
        body: dict[str, Any] = {
            "name": "schemadoc", "version": schemadoc.__version__, "schema_uri": schema_uri,
            "description": "JSON documents kept valid against one JSON Schema: REST under the api link, MCP at the "
                           "mcp link (streamable HTTP), the API described at docs, redoc and openapi.",
            "links": _links(request, api_prefix, mcp_path),
        }
        return JSONResponse(body)

    for path in ("/", api_prefix, f"{api_prefix}/"):
        app.add_api_route(path, index, methods=["GET"], include_in_schema=False, name=f"index {path}")
