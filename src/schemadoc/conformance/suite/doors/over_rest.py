"""The REST door: a tool call as the REST request of the wire contract (:class:`RestDoor`), and event streams."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

import anyio
import httpx

from .base import (
    CALL_TIMEOUT,
    OBSERVED,
    OPTIONAL_TOOLS,
    TRANSCRIPT,
    NotRepresentable,
    Outcome,
    _beyond_the_spec,
    _no_route,
    _text,
    not_applicable,
)


def _query_value(name: str, value: Any) -> str:
    if name in ("node_path", "doc_id") and not isinstance(value, str):
        raise NotRepresentable(f"{name}={value!r} is not a string")
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return str(value)
    raise NotRepresentable(f"{name}={value!r} cannot be a query parameter")


def _segment(args: dict[str, Any]) -> str:
    doc_id = args.get("doc_id")
    if not isinstance(doc_id, str):
        raise NotRepresentable(f"doc_id={doc_id!r} cannot be a path segment")
    return quote(doc_id, safe="")


def _rest_request(tool: str, args: dict[str, Any]) -> tuple[str, str, dict[str, str], dict[str, Any] | None]:
    """(method, path below the API prefix, query, JSON body) of one tool call."""
    query: dict[str, str] = {}
    body: dict[str, Any] | None = None

    def take(*names: str, into: dict[str, Any]) -> None:
        for name in names:
            if name in args:
                into[name] = args[name]

    def query_from(*pairs: tuple[str, str]) -> None:
        for arg, param in pairs:
            if arg in args and args[arg] is not None:
                query[param] = _query_value(arg, args[arg])

    if tool == "document_create":
        return "POST", "/documents", query, None
    if tool == "document_list":
        query_from(("limit", "limit"), ("offset", "offset"), ("valid", "valid"), ("sort", "sort"), ("cursor", "cursor"))
        where = args.get("where")
        if where is not None:  # each filter spelt "key op value" (the value as JSON), a repeated parameter
            if not isinstance(where, list):
                raise NotRepresentable(f"where={where!r} cannot be repeated query parameters")
            query["where"] = [item if isinstance(item, str) else  # type: ignore[assignment]
                              " ".join([*map(str, item[:2]), *(json.dumps(v) for v in item[2:])])
                              if isinstance(item, list) else str(item) for item in where]
        return "GET", "/documents", query, None
    if tool == "schema_get_root":
        query_from(("dereferenced", "dereferenced"))
        return "GET", "/schema", query, None
    if tool == "schema_get_node":
        query_from(("node_path", "path"), ("doc_id", "doc_id"), ("dereferenced", "dereferenced"))
        return "GET", "/schema/node", query, None
    if tool == "document_changes":
        query_from(("since", "since"), ("limit", "limit"))
        return "GET", "/changes", query, None
    if tool == "document_search":
        query_from(("query", "query"), ("node_path", "path"), ("limit", "limit"), ("cursor", "cursor"),
                   ("ranking", "ranking"))
        doc_ids = args.get("doc_ids")
        if doc_ids is not None:
            if not isinstance(doc_ids, list) or not all(isinstance(d, str) for d in doc_ids):
                raise NotRepresentable(f"doc_ids={doc_ids!r} cannot be repeated query parameters")
            query["doc_ids"] = doc_ids  # type: ignore[assignment]  # httpx repeats a list parameter
        return "GET", "/search", query, None
    doc = _segment(args)
    if tool == "document_read_node":
        query_from(("node_path", "path"), ("at_version", "at_version"), ("max_depth", "max_depth"),
                   ("offset", "offset"), ("limit", "limit"), ("max_bytes", "max_bytes"))
        return "GET", f"/documents/{doc}", query, None
    if tool == "document_outline":
        query_from(("node_path", "path"), ("depth", "depth"), ("offset", "offset"), ("limit", "limit"),
                   ("max_bytes", "max_bytes"))
        return "GET", f"/documents/{doc}/outline", query, None
    if tool == "document_next_incomplete":
        query_from(("node_path", "path"), ("limit", "limit"), ("include_defaults", "include_defaults"))
        return "GET", f"/documents/{doc}/incomplete", query, None
    if tool == "document_stats":
        return "GET", f"/documents/{doc}/stats", query, None
    if tool == "document_render":
        query_from(("node_path", "path"), ("format", "format"), ("offset", "offset"), ("limit", "limit"),
                   ("max_bytes", "max_bytes"))
        return "GET", f"/documents/{doc}/render", query, None
    if tool == "document_history":
        query_from(("since_version", "since_version"), ("limit", "limit"), ("summary", "summary"))
        return "GET", f"/documents/{doc}/history", query, None
    if tool == "document_diff":
        query_from(("from_version", "from_version"), ("to_version", "to_version"))
        return "GET", f"/documents/{doc}/diff", query, None
    query_from(("dry_run", "dry_run"))
    if tool == "document_undelete":
        return "POST", f"/documents/{doc}/undelete", query, None
    if tool == "document_purge":
        return "POST", f"/documents/{doc}/purge", query, None
    body = {}
    if tool == "document_update_node":
        query_from(("node_path", "path"))
        take("node_data", "version", into=body)
        return "PUT", f"/documents/{doc}", query, body
    if tool == "document_create_node":
        query_from(("node_path", "path"))
        take("node_data", "version", into=body)
        return "POST", f"/documents/{doc}/nodes", query, body
    if tool == "document_delete_node":
        query_from(("node_path", "path"))
        take("version", into=body)
        return "DELETE", f"/documents/{doc}/nodes", query, body
    if tool == "document_apply_patch":
        take("patch", "version", into=body)
        return "POST", f"/documents/{doc}/patch", query, body
    if tool == "document_revert":
        take("to_version", "version", into=body)
        return "POST", f"/documents/{doc}/revert", query, body
    if tool == "document_merge_patch":
        query_from(("node_path", "path"))
        take("merge_patch", "version", into=body)
        return "POST", f"/documents/{doc}/merge", query, body
    if tool == "document_delete":
        take("version", into=body)
        return "DELETE", f"/documents/{doc}", query, body
    if tool == "document_move_node":
        take("from_path", "to_path", "version", into=body)
        return "POST", f"/documents/{doc}/move", query, body
    raise NotRepresentable(f"no REST route for tool {tool!r}")


@dataclass
class RestDoor:
    """The REST API under ``prefix`` (``/api/v1``), through an httpx client (in process or over TCP)."""

    name: str
    http: httpx.AsyncClient
    prefix: str = "/api/v1"
    kind: str = "rest"
    app: Any = None
    """The in-process ASGI app (``None`` for a remote server): streams bypass httpx's buffering ASGI transport."""

    async def call(self, tool: str, args: dict[str, Any]) -> Outcome:
        _beyond_the_spec(tool, args)
        method, path, query, body = _rest_request(tool, args)
        return await self.request(method, self.prefix + path, params=query, json_body=body, tool=tool)

    async def read_document(self, doc_id: str) -> Outcome:
        outcome = await self.request("GET", f"{self.prefix}/documents/{quote(doc_id, safe='')}",
                                     params={"path": "/"}, tool="read_document")
        if outcome.ok:
            return Outcome(True, {"document": outcome.body.get("node_content")}, outcome.status, outcome.headers)
        return outcome

    async def read_version(self, doc_id: str, version: int | str) -> Outcome:
        """``GET /documents/{doc_id}/versions/{version}``: the raw document, wrapped as ``{"document": ...}``."""
        url = f"{self.prefix}/documents/{quote(doc_id, safe='')}/versions/{quote(str(version), safe='')}"
        with anyio.fail_after(CALL_TIMEOUT):
            response = await self.http.request("GET", url)
        headers = {key.lower(): value for key, value in response.headers.items()}
        parsed = response.json() if response.content else None
        if 200 <= response.status_code < 300:
            outcome = Outcome(True, {"document": parsed}, response.status_code, headers)
        elif isinstance(parsed, dict) and isinstance(parsed.get("error"), dict):
            outcome = Outcome(False, parsed, response.status_code, headers)
        else:
            OBSERVED.anomaly(self.name, "read_version", f"status {response.status_code}: {response.text[:300]!r}")
            outcome = Outcome(False, {"error": {"code": None, "message": response.text[:300]}},
                              response.status_code, headers)
        OBSERVED.record(self.name, "read_version", outcome)
        return outcome

    @asynccontextmanager
    async def events(self, doc_id: str, *, params: dict[str, str] | None = None,
                     headers: dict[str, str] | None = None) -> AsyncIterator[EventStream]:
        """``GET /documents/{doc_id}/events`` as an open :class:`EventStream` (closed on leaving the block)."""
        url = f"{self.prefix}/documents/{quote(doc_id, safe='')}/events"
        if self.app is not None:
            async with _asgi_stream(self.app, url, params or {}, headers or {}) as (status, answer, chunks):
                yield EventStream(status, answer, chunks)
            return
        async with self.http.stream("GET", url, params=params, headers=headers) as response:
            answer = {key.lower(): value for key, value in response.headers.items()}
            yield EventStream(response.status_code, answer, response.aiter_bytes())

    async def request(self, method: str, url: str, *, params: dict[str, str] | None = None,
                      json_body: Any = None, headers: dict[str, str] | None = None,
                      content: bytes | None = None, tool: str | None = None) -> Outcome:
        """One HTTP request, its answer as an :class:`Outcome` (recorded in :data:`OBSERVED`)."""
        kwargs: dict[str, Any] = {"params": params or {}, "headers": headers or {}}
        if content is not None:
            kwargs["content"] = content
        elif json_body is not None:
            kwargs["json"] = json_body
        with anyio.fail_after(CALL_TIMEOUT):
            response = await self.http.request(method, url, **kwargs)
        try:
            parsed = response.json()
        except ValueError:
            parsed = None
        ok = 200 <= response.status_code < 300
        answer_headers = {key.lower(): value for key, value in response.headers.items()}
        if not isinstance(parsed, dict):
            OBSERVED.anomaly(self.name, f"{method} {url}", f"status {response.status_code}, body is not a JSON "
                                                             f"object: {response.text[:300]!r}")
            parsed = {} if ok else {"error": {"code": None, "message": response.text[:300]}}
        outcome = Outcome(ok, parsed, response.status_code, answer_headers)
        TRANSCRIPT.add(self.name, {"method": method, "url": str(response.request.url),
                                   "body": kwargs.get("json", _text(kwargs.get("content")))},
                       {"status": response.status_code, "body": parsed})
        if tool in OPTIONAL_TOOLS and _no_route(response.status_code, parsed):
            not_applicable(f"{method} {url} answers {response.status_code} without a catalogued error: "
                                f"the server has no route for {tool}")
        OBSERVED.record(self.name, tool or f"{method} {url}", outcome)
        return outcome


class EventStream:
    """An open Server-Sent Events response: its status, headers, and its events one by one."""

    def __init__(self, status: int, headers: dict[str, str], chunks: AsyncIterator[bytes]) -> None:
        self.status = status
        self.headers = headers
        self._chunks = chunks
        self._buffer = ""
        self.ended = False

    async def body(self) -> Any:
        """The whole body as JSON (an error answer, which is not a stream)."""
        data = b"".join([chunk async for chunk in self._chunks])
        return json.loads(data)

    async def next_event(self, timeout: float = CALL_TIMEOUT) -> dict[str, str] | None:
        """The next event (``id``, ``event``, ``data``; comments skipped), or ``None`` when the stream ended."""
        with anyio.fail_after(timeout):
            while True:
                while "\n\n" in self._buffer:
                    block, self._buffer = self._buffer.split("\n\n", 1)
                    event: dict[str, str] = {}
                    for line in block.split("\n"):
                        if not line or line.startswith(":"):
                            continue
                        name, _, value = line.partition(":")
                        value = value.removeprefix(" ")
                        event[name] = event[name] + "\n" + value if name == "data" and name in event else value
                    if event:
                        return event
                try:
                    chunk = await self._chunks.__anext__()
                except StopAsyncIteration:
                    self.ended = True
                    return None
                self._buffer += chunk.decode().replace("\r\n", "\n")


@asynccontextmanager
async def _asgi_stream(app: Any, path: str, params: dict[str, str],
                       headers: dict[str, str]) -> AsyncIterator[tuple[int, dict[str, str], AsyncIterator[bytes]]]:
    """A GET straight into an ASGI app, its body read as it is sent (httpx's ASGITransport waits for the end)."""
    sender, receiver = anyio.create_memory_object_stream[dict[str, Any]](1000)
    disconnected = anyio.Event()
    requested = False

    async def receive() -> dict[str, Any]:
        nonlocal requested
        if not requested:
            requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await disconnected.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        await sender.send(message)

    async def run() -> None:
        async with sender:
            await app(scope, receive, send)

    scope: dict[str, Any] = {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
        "path": path, "raw_path": path.encode(), "root_path": "", "query_string": urlencode(params).encode(),
        "headers": [(b"host", b"127.0.0.1")] + [(key.lower().encode(), value.encode())
                                                 for key, value in headers.items()],
        "server": ("127.0.0.1", 80), "client": ("127.0.0.1", 50000),
    }

    async def chunks() -> AsyncIterator[bytes]:
        async for message in receiver:
            if message["type"] == "http.response.body":
                if message.get("body"):
                    yield bytes(message["body"])
                if not message.get("more_body", False):
                    return

    async with anyio.create_task_group() as group:
        group.start_soon(run)
        with anyio.fail_after(CALL_TIMEOUT):
            start = await receiver.receive()
        assert start["type"] == "http.response.start", start
        answer = {key.decode().lower(): value.decode() for key, value in start.get("headers", [])}
        try:
            yield int(start["status"]), answer, chunks()
        finally:
            disconnected.set()
            group.cancel_scope.cancel()


@asynccontextmanager
async def rest_door(name: str, *, app: Any = None, base_url: str | None = None,
                    prefix: str = "/api/v1") -> AsyncIterator[RestDoor]:
    """A REST door onto an ASGI ``app`` (in process, its lifespan run) or a server at ``base_url``."""
    if app is not None:
        transport = httpx.ASGITransport(app=app)
        async with app.router.lifespan_context(app), \
                httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            yield RestDoor(name, http, prefix, app=app)
    else:
        async with httpx.AsyncClient(base_url=str(base_url), timeout=CALL_TIMEOUT) as http:
            yield RestDoor(name, http, prefix)
