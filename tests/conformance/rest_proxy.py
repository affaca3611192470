"""A black-box REST server: ``python rest_proxy.py VARIANT UPSTREAM PORT`` serves on 127.0.0.1:PORT what the
schemadoc at ``UPSTREAM`` serves, with one behaviour changed on the wire (``blackbox.REST_VARIANTS``).

JSON answers pass through the variant; anything else (pages, event streams, MCP over streamable HTTP) is relayed
as it comes, so the proxy's base URL is a whole server: ``--url`` gives the suite its REST API and its MCP endpoint.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx
import uvicorn
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

sys.path.insert(0, str(Path(__file__).resolve().parent))

from blackbox import REST_VARIANTS

_HOP = {"content-length", "transfer-encoding", "connection", "content-encoding"}


def build(variant_name: str, upstream: str) -> Any:
    variant = REST_VARIANTS[variant_name]()
    client = httpx.AsyncClient(base_url=upstream, timeout=60)

    async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        request = Request(scope, receive)
        query = dict(request.query_params)
        asked = dict(query)
        answered = variant.request(request.method, request.url.path, query)
        if answered is not None:
            await JSONResponse(answered[1], status_code=answered[0])(scope, receive, send)
            return
        upstream_request = client.build_request(
            request.method, request.url.path, content=await request.body(),
            params=request.query_params.multi_items() if query == asked else query,  # a repeated parameter kept
            headers={key: value for key, value in request.headers.items() if key.lower() not in _HOP | {"host"}})
        upstream_response = await client.send(upstream_request, stream=True)
        headers = {key: value for key, value in upstream_response.headers.items() if key.lower() not in _HOP}
        status = upstream_response.status_code
        response: Response
        if (upstream_response.headers.get("content-type", "").startswith("application/json")
                and not request.url.path.startswith("/mcp")):
            body = json.loads(await upstream_response.aread())
            await upstream_response.aclose()
            status, body = variant.response(request.method, request.url.path, query, status, body)
            response = Response(json.dumps(body), status_code=status, headers=headers, media_type="application/json")
        else:  # a page, an event stream, MCP: relayed as it comes
            response = StreamingResponse(upstream_response.aiter_bytes(), status_code=status, headers=headers,
                                         background=BackgroundTask(upstream_response.aclose))
        await response(scope, receive, send)

    return app


if __name__ == "__main__":
    name, upstream, port = sys.argv[1], sys.argv[2], int(sys.argv[3])
    uvicorn.run(build(name, upstream), host="127.0.0.1", port=port, log_level="warning")
