"""Drivers: one interface onto every door of a schemadoc server, tool names as the lingua franca.

A test says ``await door.call("document_update_node", {"doc_id": ..., "node_path": ..., ...})``
and gets an :class:`Outcome`. :class:`RestDoor` turns the call into the REST request of the wire
contract (``PUT /api/v1/documents/{doc_id}?path=...``), :class:`McpDoor` into an MCP
``tools/call``. Both answer with the same shape, so a behaviour test is written once and runs
through REST, MCP in both protocol eras, in process or against a running server.

Every outcome passes through :data:`OBSERVED`: the error codes each door returned (the catalog
test checks them) and the wire-shape anomalies it saw (an error result carrying structured
content, a status that is not the catalog's, …), which a final test reports.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn, Protocol
from urllib.parse import quote, urlencode

import anyio
import httpx
import pytest
from mcp import Client, MCPError

from schemadoc.errors import CATALOG

from ..readings import category_matches, status_of
from ..spec import ARGUMENTS, code_status
from ..target import BOOK_SCHEMA, IN_PROCESS_DOORS, current

__all__ = [
    "BOOK_SCHEMA",
    "CALL_TIMEOUT",
    "CORE_TOOLS",
    "DOOR_NAMES",
    "NA_PREFIX",
    "OBSERVED",
    "OPTIONAL_TOOLS",
    "REMOTE_URL",
    "TARGET",
    "TOOLS",
    "TRANSCRIPT",
    "ULID_PATTERN",
    "UNKNOWN_DOC_ID",
    "Doc",
    "Door",
    "EventStream",
    "McpDoor",
    "NotRepresentable",
    "Observations",
    "Outcome",
    "RestDoor",
    "book_doc",
    "chapter",
    "door_on_schema",
    "extension_arguments",
    "failed",
    "in_process",
    "in_process_service",
    "mcp_door",
    "new_doc",
    "not_applicable",
    "offers",
    "ok",
    "open_door",
    "rest_door",
    "sample_book",
    "stdio_server",
    "supports",
    "text_of",
    "unsupported",
]

CALL_TIMEOUT = 30.0
"""Seconds one call may take before the test fails (keeps a hung door from hanging the suite)."""

TOOLS = (
    "document_create",
    "document_read_node",
    "document_update_node",
    "document_create_node",
    "document_delete_node",
    "document_apply_patch",
    "document_list",
    "schema_get_root",
    "schema_get_node",
    "document_history",
    "document_diff",
    "document_revert",
    "document_merge_patch",
    "document_delete",
    "document_undelete",
    "document_purge",
    "document_changes",
    "document_outline",
    "document_next_incomplete",
    "document_move_node",
    "document_search",
    "document_stats",
    "document_render",
)

CORE_TOOLS = frozenset(ARGUMENTS)
"""The spec's operations: every implementation must offer them through every door it has."""
OPTIONAL_TOOLS = frozenset(TOOLS) - CORE_TOOLS
"""Beyond the spec: a server without one of these makes its tests not applicable (detected per call: MCP
``tools/list`` does not declare it, or the REST route answers 404/405 without a catalogued error)."""
NA_PREFIX = "not applicable: "

_CREATED = frozenset({"document_create", "document_create_node"})
_ERROR_MEMBERS = ("code", "category", "message", "details", "remediation")


def not_applicable(reason: str) -> NoReturn:
    """End the test as not applicable: the server does not offer what it tests (reported as such)."""
    pytest.skip(NA_PREFIX + reason)


def offers(body: dict[str, Any], member: str) -> bool:
    """Whether to judge ``member``, a result member beyond the spec: the server returned it, and the profile
    judges extensions. A spec clause never fails for an extension member the server leaves out."""
    return not TARGET.spec_only and member in body


async def supports(door: Door, tool: str, *arguments: str) -> bool:
    """Whether a test may call ``tool`` with ``arguments`` through ``door``: the spec's, or an extension the
    profile judges and (MCP) the server declares. Property-based tests ask first, outside Hypothesis."""
    extension = tool not in CORE_TOOLS or bool(set(arguments) - ARGUMENTS[tool])
    if not extension:
        return True
    if TARGET.spec_only:
        return False
    if isinstance(door, McpDoor):
        declared = await door.tool_arguments(tool)
        return declared is not None and set(arguments) <= declared
    return True


async def unsupported(door: Door, *needs: tuple[str, ...]) -> str | None:
    """Why a test needing every (tool, *arguments) of ``needs`` is not applicable through ``door``, or ``None``."""
    for tool, *arguments in needs:
        if not await supports(door, tool, *arguments):
            with_arguments = f" with {', '.join(arguments)}" if arguments else ""
            return (f"needs {tool}{with_arguments}, which the server does not offer"
                    + (" (--profile spec)" if TARGET.spec_only else ""))
    return None


def extension_arguments(tool: str, args: dict[str, Any]) -> list[str]:
    """The arguments of a call that the spec does not give ``tool`` (all of them for a tool beyond the spec)."""
    spec = ARGUMENTS.get(tool)
    return sorted(args) if spec is None else sorted(set(args) - spec)


def _beyond_the_spec(tool: str, args: dict[str, Any], declared: frozenset[str] | None = None) -> None:
    """Not applicable: a call that needs a tool or an argument beyond the spec, under ``--profile spec`` or
    when the server does not declare it (``declared``: the tool's declared arguments, if known)."""
    if tool not in CORE_TOOLS and TARGET.spec_only:
        not_applicable(f"{tool} is beyond the spec (--profile spec)")
    extra = extension_arguments(tool, args) if tool in CORE_TOOLS else []
    if extra and TARGET.spec_only:
        not_applicable(f"{tool} with {', '.join(extra)}: beyond the spec (--profile spec)")
    missing = [name for name in extra if declared is not None and name not in declared]
    if missing:
        not_applicable(f"the server's {tool} declares no argument {', '.join(missing)}")


def _no_route(status: int, body: Any) -> bool:
    """A 404/405 that is not one of the catalog's own answers: the route does not exist on this server."""
    if status not in (404, 405):
        return False
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code not in CATALOG or code in ("route-not-found", "method-not-allowed")


def _text(content: Any) -> Any:
    if isinstance(content, bytes):
        return content[:2000].decode("utf-8", errors="replace")
    return content


@dataclass
class Transcript:
    """The exchanges of the current test, newest last: a failure reports the one that failed."""

    exchanges: list[dict[str, Any]] = field(default_factory=list)
    keep: int = 8

    def add(self, door: str, request: dict[str, Any], response: dict[str, Any]) -> None:
        self.exchanges.append({"door": door, "request": request, "response": response})
        del self.exchanges[:-self.keep]

    def clear(self) -> None:
        self.exchanges.clear()


TRANSCRIPT = Transcript()


class NotRepresentable(Exception):
    """The arguments cannot be expressed through this door (e.g. a list as a REST path segment)."""


@dataclass
class Outcome:
    """What one call through a door produced."""

    ok: bool
    body: dict[str, Any]
    """Success: the result body. Failure: the error object ``{"error": {...}}``."""
    status: int
    """REST: the HTTP status. MCP: 200 (201 for creations) on success, else the error's catalog status."""
    headers: dict[str, str] = field(default_factory=dict)
    """REST response headers (lower-case names); ``{}`` for MCP."""
    rpc_error: int | None = None
    """MCP only: the JSON-RPC error code when the server answered with a protocol error."""
    rpc_data: Any = None
    """MCP only: the ``data`` of that JSON-RPC error."""

    @property
    def error(self) -> dict[str, Any]:
        error = self.body.get("error") if not self.ok else None
        return error if isinstance(error, dict) else {}

    @property
    def code(self) -> str | None:
        code = self.error.get("code")
        return code if isinstance(code, str) else None

    @property
    def details(self) -> dict[str, Any]:
        details = self.error.get("details")
        return details if isinstance(details, dict) else {}

    def __repr__(self) -> str:
        text = json.dumps(self.body, default=str)
        if len(text) > 1500:
            text = text[:1500] + "…"
        return f"Outcome(ok={self.ok}, status={self.status}, body={text})"


class Door(Protocol):
    """One way into a server."""

    name: str
    """The pytest id: ``rest``, ``mcp-auto``, ``mcp-legacy``, ``remote-rest``, …"""
    kind: str
    """``rest`` or ``mcp``."""

    async def call(self, tool: str, args: dict[str, Any]) -> Outcome:
        """Call one tool (by its MCP name) with its MCP arguments."""
        ...

    async def read_document(self, doc_id: str) -> Outcome:
        """The whole document (export): success body ``{"document": <content>}``."""
        ...

    async def read_version(self, doc_id: str, version: int | str) -> Outcome:
        """The whole document at a past version: success body ``{"document": <content>}``."""
        ...


@dataclass
class Observations:
    """What every door saw during the session (one pytest process)."""

    codes: dict[str, set[str]] = field(default_factory=dict)
    anomalies: list[str] = field(default_factory=list)
    calls: dict[str, int] = field(default_factory=dict)
    succeeded: dict[str, set[str]] = field(default_factory=dict)
    """The tools (and reads) each door called with success at least once."""

    def record(self, door: str, tool: str, outcome: Outcome) -> None:
        self.calls[door] = self.calls.get(door, 0) + 1
        if outcome.ok:
            self.succeeded.setdefault(door, set()).add(tool)
            return
        code = outcome.code
        if outcome.rpc_error is not None and code is None:
            return  # a protocol error (invalid params): no error object to judge
        self.codes.setdefault(door, set()).add(code if code is not None else "<no code>")
        error = outcome.error
        missing = [member for member in _ERROR_MEMBERS if member not in error]
        if missing:
            self.anomaly(door, tool, f"error object lacks {missing}: {outcome!r}")
        entry = CATALOG.get(code or "")
        status = code_status(code) or (entry.status if entry is not None else None)
        if status is not None and not category_matches(error.get("category"), status):
            self.anomaly(door, tool, f"{code}: category {error.get('category')!r}, catalog says {status}")
        if status is not None and outcome.status != status and outcome.rpc_error is None:
            self.anomaly(door, tool, f"{code}: status {outcome.status}, catalog says {status}")

    def anomaly(self, door: str, tool: str, text: str) -> None:
        self.anomalies.append(f"[{door}] {tool}: {text}")


OBSERVED = Observations()


# -- REST ----------------------------------------------------------------------------------------


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
        query_from(("limit", "limit"), ("offset", "offset"))
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
        query_from(("query", "query"), ("node_path", "path"), ("limit", "limit"), ("cursor", "cursor"))
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


# -- MCP -----------------------------------------------------------------------------------------


def text_of(content: Sequence[Any]) -> str:
    """The text of an MCP result's content blocks (tool results, resource contents)."""
    return "".join(str(getattr(block, "text", "")) for block in content)


@dataclass
class McpDoor:
    """MCP tools and resources through an ``mcp.Client`` (in process or streamable HTTP)."""

    name: str
    client: Any
    """An ``mcp.Client`` (or, for a server on stdio, an object with its methods)."""
    status_from_category: bool = False
    """Remote servers: take the status from the error's ``category`` instead of the local catalog."""
    kind: str = "mcp"
    _tools: frozenset[str] | None = None
    _arguments: dict[str, frozenset[str]] = field(default_factory=dict)

    def _error_status(self, error: dict[str, Any]) -> int:
        code = error.get("code")
        known = code_status(code) or (CATALOG[code].status if isinstance(code, str) and code in CATALOG else None)
        if not self.status_from_category and known is not None:
            return known
        return status_of(error.get("category"), known)

    async def call(self, tool: str, args: dict[str, Any]) -> Outcome:
        # through JSON, as over a real wire: an in-process server must not share the test's objects
        args = json.loads(json.dumps(args))
        if tool in OPTIONAL_TOOLS and tool not in await self.tool_names():
            not_applicable(f"the server declares no tool {tool}")
        _beyond_the_spec(tool, args, await self.tool_arguments(tool))
        try:
            with anyio.fail_after(CALL_TIMEOUT):
                result = await self.client.call_tool(tool, args)
        except MCPError as failure:
            outcome = self._protocol_error(failure, resource=False)
            TRANSCRIPT.add(self.name, {"tool": tool, "arguments": args},
                           {"jsonrpc_error": {"code": failure.code, "message": failure.message, "data": failure.data}})
            if failure.code != -32602:  # invalid params: a protocol answer the spec's MCP allows for bad arguments
                OBSERVED.anomaly(self.name, tool, f"JSON-RPC error {failure.code} instead of an isError result: "
                                                  f"{failure.message}")
            OBSERVED.record(self.name, tool, outcome)
            return outcome
        text = text_of(result.content)
        if result.is_error:
            if result.structured_content is not None:
                OBSERVED.anomaly(self.name, tool, "an isError result carries structuredContent")
            try:
                parsed = json.loads(text)
            except ValueError:
                parsed = None
            if not (isinstance(parsed, dict) and isinstance(parsed.get("error"), dict)):
                OBSERVED.anomaly(self.name, tool, f"isError text is not a JSON error object: {text[:300]!r}")
                parsed = {"error": {"code": None, "message": text}}
            outcome = Outcome(False, parsed, self._error_status(parsed["error"]))
        else:
            body = json.loads(json.dumps(result.structured_content))
            if not isinstance(body, dict):
                OBSERVED.anomaly(self.name, tool, f"success without a structuredContent object: {text[:300]!r}")
                body = {}
            else:
                try:
                    same = json.loads(text) == body
                except ValueError:
                    same = False
                if not same:
                    OBSERVED.anomaly(self.name, tool, "the text content is not the JSON of structuredContent")
            outcome = Outcome(True, body, 201 if tool in _CREATED else 200)
        TRANSCRIPT.add(self.name, {"tool": tool, "arguments": args},
                       {"isError": bool(result.is_error), "structuredContent": result.structured_content,
                        "text": text if result.is_error or result.structured_content is None else None})
        OBSERVED.record(self.name, tool, outcome)
        return outcome

    async def tool_names(self) -> frozenset[str]:
        """The tools the server declares (asked once per door)."""
        if self._tools is None:
            with anyio.fail_after(CALL_TIMEOUT):
                listed = await self.client.list_tools()
            self._tools = frozenset(tool.name for tool in listed.tools)
            self._arguments = {tool.name: frozenset((tool.input_schema or {}).get("properties", {}) or {})
                               for tool in listed.tools}
        return self._tools

    async def tool_arguments(self, tool: str) -> frozenset[str] | None:
        """The arguments the server declares for ``tool`` (``None`` if it does not declare the tool)."""
        await self.tool_names()
        return self._arguments.get(tool)

    async def read_document(self, doc_id: str) -> Outcome:
        return await self._read_json_resource(f"schema://{doc_id}", "read_document")

    async def read_version(self, doc_id: str, version: int | str) -> Outcome:
        return await self._read_json_resource(f"schema://{doc_id}/versions/{version}", "read_version")

    async def _read_json_resource(self, uri: str, what: str) -> Outcome:
        """``resources/read`` of a JSON resource: ``{"document": <its JSON>}``, or the protocol error."""
        try:
            with anyio.fail_after(CALL_TIMEOUT):
                result = await self.client.read_resource(uri)
        except MCPError as failure:
            outcome = self._protocol_error(failure)
            TRANSCRIPT.add(self.name, {"resources/read": uri},
                           {"jsonrpc_error": {"code": failure.code, "message": failure.message, "data": failure.data}})
            OBSERVED.record(self.name, what, outcome)
            return outcome
        TRANSCRIPT.add(self.name, {"resources/read": uri},
                       {"contents": [getattr(block, "text", None) for block in result.contents]})
        texts = [block for block in result.contents if hasattr(block, "text")]
        if len(texts) != 1:
            OBSERVED.anomaly(self.name, what, f"{uri}: {len(result.contents)} contents, not one text")
        block = texts[0]
        if block.mime_type != "application/json":
            OBSERVED.anomaly(self.name, what, f"{uri}: mime type {block.mime_type!r}")
        outcome = Outcome(True, {"document": json.loads(block.text)}, 200)
        OBSERVED.record(self.name, what, outcome)
        return outcome

    def _protocol_error(self, failure: MCPError, *, resource: bool = True) -> Outcome:
        """A JSON-RPC error as an outcome: its data's error object if it has one, else a synthesised one."""
        data = failure.data
        if isinstance(data, dict) and isinstance(data.get("error"), dict):
            body = {"error": data["error"]}
        else:
            # The contract: a resource that does not exist is -32602 with data.uri; a tool call's -32602 is
            # invalid params (no catalogued code).
            code = "resource-not-found" if failure.code == -32602 and resource else None
            category = "404" if code else "400" if failure.code == -32602 else None
            body = {"error": {"code": code, "category": category, "message": failure.message,
                              "details": data if isinstance(data, dict) else {"data": data},
                              "remediation": ""}}
        return Outcome(False, body, self._error_status(body["error"]), rpc_error=failure.code, rpc_data=data)


@asynccontextmanager
async def mcp_door(name: str, server: Any, *, mode: str, status_from_category: bool = False) -> AsyncIterator[McpDoor]:
    """An MCP door: ``server`` is an in-process ``MCPServer`` or the URL of a streamable HTTP endpoint."""
    async with Client(server, mode=mode) as client:
        yield McpDoor(name, client, status_from_category)


# -- opening a door -------------------------------------------------------------------------------

TARGET = current()
"""What the suite runs against (:mod:`schemadoc.conformance.target`): fresh in-process servers by default."""
REMOTE_URL = TARGET.rest_url
"""A running server's REST base URL, if any (kept for tests that ask whether the server is shared)."""
DOOR_NAMES = TARGET.door_names
TEST_SCHEMAS = BOOK_SCHEMA.parent / "schemas"
"""Schemas some clauses need a server started on (defaults, required fields without defaults)."""


def in_process(door_name: str) -> bool:
    """True for the doors onto a fresh in-process schemadoc (each test's server is its own)."""
    return door_name in IN_PROCESS_DOORS


_STDIO: dict[str, Any] = {}


def stdio_server(mode: str = "auto") -> Any:
    """The :class:`~schemadoc.conformance.stdio.StdioServer` of the run for ``mode``, started on first use
    on a fresh storage directory (stopped when the run ends)."""
    server = _STDIO.get(mode)
    if server is None:
        import atexit
        import shutil
        import tempfile

        from ..stdio import StdioServer

        root = Path(tempfile.mkdtemp(prefix="schemadoc-conformance-"))
        server = StdioServer(TARGET.mcp_command, BOOK_SCHEMA, root / "storage", mode=mode,
                             stderr_path=root / "server.stderr.log")
        _STDIO[mode] = server

        def cleanup() -> None:
            server.stop()
            shutil.rmtree(root, ignore_errors=True)

        atexit.register(cleanup)
    if not server.running:
        server.start()
    return server


def _in_process_service(storage_dir: Path, schema: Path = BOOK_SCHEMA) -> Any:
    from schemadoc.config import Settings
    from schemadoc.interfaces.app import create_service

    return create_service(Settings(schema_path=schema, storage_dir=storage_dir))


def in_process_service(storage_dir: Path, schema: Path = BOOK_SCHEMA) -> Any:
    """A fresh in-process ``DocumentService`` on ``schema`` (the bundled book), storing in ``storage_dir``."""
    return _in_process_service(storage_dir, schema)


@asynccontextmanager
async def open_door(
    name: str, storage_dir: Path, service: Any = None, schema: Path = BOOK_SCHEMA
) -> AsyncIterator[Door]:
    """The door called ``name``: onto the remote server, or in process onto ``service`` (default: a fresh
    one on ``schema``, storing in ``storage_dir``)."""
    if name == "remote-rest":
        async with rest_door(name, base_url=TARGET.rest_url) as door:
            yield door
    elif name.startswith("remote-mcp-"):
        async with mcp_door(name, TARGET.mcp_url, mode=name.removeprefix("remote-mcp-"),
                            status_from_category=True) as door:
            yield door
    elif name.startswith("stdio-mcp-"):
        server = await anyio.to_thread.run_sync(stdio_server, name.removeprefix("stdio-mcp-"))
        yield McpDoor(name, server.client, status_from_category=True)
    elif name == "rest":
        from schemadoc.config import Settings
        from schemadoc.interfaces.app import build_app

        settings = Settings(schema_path=schema, storage_dir=storage_dir)
        service = service if service is not None else _in_process_service(storage_dir, schema)
        async with rest_door(name, app=build_app(service, settings)) as door:
            yield door
    elif name.startswith("mcp-"):
        from schemadoc.interfaces.mcp_door.server import build_mcp_server

        server = build_mcp_server(service if service is not None else _in_process_service(storage_dir, schema))
        async with mcp_door(name, server, mode=name.removeprefix("mcp-")) as door:
            yield door
    else:  # pragma: no cover - a typo in DOOR_NAMES
        raise ValueError(f"unknown door {name!r}")


@asynccontextmanager
async def door_on_schema(door_name: str, schema_name: str, storage_dir: Path) -> AsyncIterator[Door]:
    """A door onto a server of its own started on one of the shipped test schemas (``schemas/``): in process,
    or by the command given (``--mcp-command``); not applicable for a server reached by URL. ``book.schema.json``
    is the suite's own schema: a fresh server of the kind every other test uses, on an empty storage."""
    schema = BOOK_SCHEMA if schema_name == BOOK_SCHEMA.name else TEST_SCHEMAS / schema_name
    if in_process(door_name):
        async with open_door(door_name, storage_dir, schema=schema) as door:
            yield door
        return
    if not door_name.startswith("stdio-mcp-"):
        not_applicable("needs a server started on another schema: give the command that starts it (--mcp-command)")
    from ..stdio import StdioServer

    server = StdioServer(TARGET.mcp_command, schema, storage_dir, mode=door_name.removeprefix("stdio-mcp-"),
                         stderr_path=storage_dir.parent / f"{storage_dir.name}.stderr.log")
    await anyio.to_thread.run_sync(server.start)
    try:
        yield McpDoor(door_name, server.client, status_from_category=True)
    finally:
        await anyio.to_thread.run_sync(server.stop)


# -- helpers shared by the behaviour tests ---------------------------------------------------------

ULID_PATTERN = r"(?i)^[0-9A-HJKMNP-TV-Z]{26}$"
"""A ULID, in either case (Crockford base32 is case-insensitive)."""
UNKNOWN_DOC_ID = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
"""A well-formed ULID no server ever created (it dates from 2016)."""


def chapter(number: int, *, sections: int = 1, text: str = "Some text.") -> dict[str, Any]:
    """A valid chapter ``ch-{number}`` of the book schema."""
    return {
        "id": f"ch-{number}",
        "title": f"Chapter {number}",
        "sections": [
            {"title": f"Section {number}.{index + 1}",
             "paragraphs": [{"text": text, "style": "normal"}],
             "sections": []}
            for index in range(sections)
        ],
    }


def sample_book() -> dict[str, Any]:
    """A valid book using every part of the schema; optional members left out: ``homepage``, ``contact``."""
    first = chapter(1, sections=2)
    first["sections"][0]["sections"] = [
        {"title": "Section 1.1.1", "paragraphs": [{"text": "Deep.", "style": "quote"}], "sections": []},
    ]
    return {
        "title": "The Conformance Book",
        "metadata": {
            "language": "en",
            "status": "draft",
            "author": {"name": "Ada Lovelace", "email": "ada@example.org"},
            "created": "2025-11-29T10:00:00Z",
            "edition": 1,
            "isbn": "9783161484100",
            "keywords": ["json", "schema"],
        },
        "chapters": [first, chapter(2), chapter(3)],
        "tags": ["test"],
    }


def ok(outcome: Outcome) -> dict[str, Any]:
    """The body of a successful outcome (the assertion shows the error otherwise)."""
    assert outcome.ok, f"expected success, got {outcome!r}"
    return outcome.body


def failed(outcome: Outcome, code: str) -> dict[str, Any]:
    """The error object of a failed outcome with ``code`` (the assertion shows what came instead)."""
    assert not outcome.ok and outcome.code == code, f"expected {code}, got {outcome!r}"
    return outcome.error


@dataclass
class Doc:
    """A document created through a door, with the version the test last saw."""

    door: Door
    doc_id: str
    version: int

    async def read(self, node_path: str = "/") -> Outcome:
        return await self.door.call("document_read_node", {"doc_id": self.doc_id, "node_path": node_path})

    async def content(self, node_path: str = "/") -> Any:
        """The node's content and a check that the version is the one the test expects."""
        body = ok(await self.read(node_path))
        assert body["version"] == self.version, f"version {body['version']}, expected {self.version}"
        return body["node_content"]

    async def write(self, tool: str, **args: Any) -> Outcome:
        """A write at the current version (unless given); success moves the version on."""
        args = {"doc_id": self.doc_id, "version": self.version, **args}
        outcome = await self.door.call(tool, args)
        if outcome.ok and not outcome.body.get("dry_run"):
            self.version = outcome.body["version"]
        return outcome

    async def update(self, node_path: str, node_data: Any, **args: Any) -> Outcome:
        return await self.write("document_update_node", node_path=node_path, node_data=node_data, **args)

    async def create(self, node_path: str, node_data: Any, **args: Any) -> Outcome:
        return await self.write("document_create_node", node_path=node_path, node_data=node_data, **args)

    async def delete(self, node_path: str, **args: Any) -> Outcome:
        return await self.write("document_delete_node", node_path=node_path, **args)

    async def patch(self, patch: Any, **args: Any) -> Outcome:
        return await self.write("document_apply_patch", patch=patch, **args)

    async def merge(self, node_path: str, merge_patch: Any, **args: Any) -> Outcome:
        return await self.write("document_merge_patch", node_path=node_path, merge_patch=merge_patch, **args)

    async def revert(self, to_version: int, **args: Any) -> Outcome:
        return await self.write("document_revert", to_version=to_version, **args)

    async def delete_document(self, **args: Any) -> Outcome:
        """``document_delete`` at the current version (unless given); success moves the version on."""
        return await self.write("document_delete", **args)

    async def at(self, version: int, node_path: str = "/") -> Any:
        """The node's content as it was at ``version`` (and a check that the read names that version)."""
        body = ok(await self.door.call("document_read_node",
                                       {"doc_id": self.doc_id, "node_path": node_path, "at_version": version}))
        assert body["version"] == version, f"read at {version} says version {body['version']}"
        return body["node_content"]

    async def history(self, *, page_size: int = 1000) -> list[dict[str, Any]]:
        """Every journal entry, oldest first, gathered page by page (each page checked for consistency)."""
        entries: list[dict[str, Any]] = []
        since = 0
        while True:
            body = ok(await self.door.call("document_history",
                                           {"doc_id": self.doc_id, "since_version": since, "limit": page_size}))
            page = body["entries"]
            assert len(page) <= page_size
            assert [entry["version"] for entry in page] == list(range(since + 1, since + 1 + len(page))), page
            entries += page
            if not body["has_more"]:
                assert body["next_since_version"] == body["current_version"] == len(entries), body
                return entries
            assert len(page) == page_size and body["next_since_version"] == page[-1]["version"], body
            since = body["next_since_version"]

    async def snapshot(self) -> tuple[int, Any]:
        """(version, whole content) as the server has them now."""
        body = ok(await self.read("/"))
        return body["version"], body["node_content"]


async def new_doc(door: Door) -> Doc:
    body = ok(await door.call("document_create", {}))
    return Doc(door, body["doc_id"], body["version"])


async def book_doc(door: Door) -> Doc:
    """A new document holding :func:`sample_book` (version 2)."""
    doc = await new_doc(door)
    ok(await doc.update("/", sample_book()))
    return doc
