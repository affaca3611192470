"""``python token_server.py SCHEMA STORAGE_DIR PORT TOKEN``: the real application behind a bearer token.

For the page's tests: every ``/api/v1`` request without ``Authorization: Bearer TOKEN`` is answered
401 with an error object (as a server that requires access tokens answers), while the page and its
files under ``/ui`` are served to anyone. The page has to ask for the token, keep it, and send it
on every request, its event stream included.
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import uvicorn
from starlette.types import ASGIApp, Receive, Scope, Send

from schemadoc.config import Settings
from schemadoc.interfaces.app import build_app, create_service


class BearerGuard:
    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/api/v1"):
            given = dict(scope.get("headers", ())).get(b"authorization")
            if given != self.expected:
                body = orjson.dumps({"error": {
                    "code": "unauthorized", "category": "401", "details": {},
                    "message": "This server needs an access token (Authorization: Bearer).",
                    "remediation": "Send the token as Authorization: Bearer <token>."}})
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b"Bearer"),
                                        (b"content-length", str(len(body)).encode())]})
                await send({"type": "http.response.body", "body": body})
                return
        await self.app(scope, receive, send)


def main() -> None:
    schema, storage, port, token = sys.argv[1:5]
    settings = Settings(schema_path=Path(schema), storage_dir=Path(storage), port=int(port))
    service = create_service(settings)
    try:
        uvicorn.run(BearerGuard(build_app(service, settings), token), host="127.0.0.1", port=int(port),
                    log_level="warning", lifespan="on")
    finally:
        service.close()


if __name__ == "__main__":
    main()
