"""The MCP door: tools, resources and prompts over one :class:`DocumentService`.

``build_mcp_server(service)`` returns an ``MCPServer`` (mcp 2.x) that serves both protocol
eras, on stdio (``server.run("stdio")``) or mounted in the ASGI app
(``server.streamable_http_app()``).

Tools return the bodies of :mod:`schemadoc.operations.results` as structured content (and
the same JSON as text); their output schemas are those models. A failed call is an
``isError`` result whose only content is the JSON of the full error object
(``{"error": {...}}``) and which carries no structured content. Arguments are checked
strictly and without the SDK's JSON-string pre-parsing (which would turn the string
``"[1]"`` meant for a string field into a list), so the same request behaves the same way
through MCP and REST; a missing, unknown or wrongly typed argument is ``invalid-request``.

Resources: ``schema://{doc_id}`` (every document; listed by ``resources/list``),
``schema://{doc_id}/versions/{n}`` (version n of a document), ``schema://schema`` (the
configured schema) and ``schema://errors`` (the error catalog). Change notifications reach
both eras through :class:`ChangeNotifier` (``server.notifier``).
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

import anyio.to_thread
import orjson
from mcp import MCPError
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.context import Context
from mcp.server.mcpserver.exceptions import ResourceError
from mcp.server.mcpserver.tools import Tool
from mcp.server.subscriptions import InMemorySubscriptionBus, SubscriptionBus
from mcp.types import (
    INVALID_PARAMS,
    CallToolResult,
    GetPromptResult,
    InputRequiredResult,
    Resource,
    TextContent,
)
from pydantic import BaseModel

from schemadoc import __version__
from schemadoc.errors import CATALOG, SchemaDocError
from schemadoc.interfaces.http.actors import MCP_DOOR, STDIO_DOOR, actor_of
from schemadoc.interfaces.http.request_context import (
    CURRENT,
    MAX_REQUEST_ID,
    RequestRecord,
    error_object,
    new_request_id,
    note_result,
)
from schemadoc.interfaces.http.request_log import log_request
from schemadoc.interfaces.http.subscribers import SubscriberSlots, document_of_uri
from schemadoc.interfaces.mcp_door.notify import ChangeNotifier, document_uri
from schemadoc.interfaces.mcp_door.prompts import add_prompts
from schemadoc.interfaces.mcp_door.tools import bound_tools
from schemadoc.operations.budget import (
    MCP_RESULT_BUDGET_BYTES,
    body_budget,
    error_budget,
    fit_error,
    fit_model,
    fit_result,
    fit_write,
    result_size,
)
from schemadoc.operations.catalogue import BY_NAME
from schemadoc.operations.operation import Call, invoke
from schemadoc.ops.limits import ArgumentScan
from schemadoc.service import DocumentService

if TYPE_CHECKING:
    from schemadoc.interfaces.http.tracing import Tracing

__all__ = ["SchemaDocMCPServer", "build_mcp_server", "error_result", "success_result"]


def _actor(context: Context[Any, Any] | None) -> str:
    """The actor of a tool call's writes: over HTTP the name of the request's token, else ``mcp``; on stdio
    (no HTTP request) ``stdio`` (:mod:`~schemadoc.interfaces.http.actors`)."""
    try:
        request = context.request_context.request if context is not None else None
    except ValueError:  # outside a request
        request = None
    scope = getattr(request, "scope", None)
    return actor_of(scope, MCP_DOOR) if isinstance(scope, dict) else STDIO_DOOR

log = logging.getLogger("schemadoc.mcp")

SERVER_NAME = "schemadoc"
INSTRUCTIONS = (
    "schemadoc keeps JSON documents valid against one JSON Schema. Address nodes by RFC 6901 JSON "
    "Pointer in `node_path` ('/' is the whole document, '/chapters/0/title' a member of an item; '~1' escapes '/', "
    "'~0' '~'; '/chapters/-1' is the last item). `doc_id` is a document's ULID (document_create, document_list). "
    "Every write needs the document's current `version` (from the last read or write; a stale one fails with "
    "version-conflict) and is validated against the whole schema: an invalid write is refused, changes nothing "
    "and comes with details.suggested_call, a corrected call to send as it is. `dry_run: true` answers what a "
    "write would (its result or its error) without writing. `limit` and `offset` page through a list (how many, "
    "how many to skip). `placeholders` (in a suggested or example call): send it as given; it marks the values the "
    "server made up, which document_next_incomplete lists (reason placeholder) until you write real ones. "
    "Failed calls return an error object with `code`, "
    "`message`, `details` and "
    "`remediation`; the catalog is the resource schema://errors. Documents are resources at "
    "schema://{doc_id}; the schema is schema://schema. Every version is kept: document_history lists "
    "them, document_read_node with at_version and schema://{doc_id}/versions/{n} read them, document_diff "
    "compares two, and document_revert undoes changes by making a new version equal to an old one."
)


def _dumps(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # integers beyond 64 bits: the standard library writes them
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        if not text.isascii():
            try:
                text.encode()
            except UnicodeEncodeError:  # a lone surrogate: escaped, as JSON allows
                text = json.dumps(value, separators=(",", ":"))
        return text


def success_result(body: BaseModel) -> CallToolResult:
    """Structured content = the result body; the text content is the same JSON."""
    structured = body.model_dump(mode="json")
    return CallToolResult(content=[TextContent(type="text", text=_dumps(structured))],
                          structured_content=structured)


def error_result(error: SchemaDocError) -> CallToolResult:
    """``isError`` with the full error object as text and no structured content."""
    return CallToolResult(content=[TextContent(type="text", text=_dumps(error_object(error)))], is_error=True)


class SchemaDocMCPServer(MCPServer[Any]):
    """``MCPServer`` with schemadoc's tool-call, resource-list and prompt semantics.

    Attributes: ``service`` (the engine), ``notifier`` (:class:`ChangeNotifier`, whose
    ``bus`` feeds the modern era's listen streams).
    """

    def __init__(self, service: DocumentService, bus: SubscriptionBus, *, max_json_depth: int,
                 subscribers: SubscriberSlots | None = None, tools: list[Tool] | None = None,
                 slow_request_ms: int = 1000) -> None:
        self.service = service
        self.slow_request_ms = slow_request_ms
        self.tracing: Tracing | None = None
        """The spans of tool calls over stdio (over HTTP the request layer makes them), when tracing is on."""
        self.notifier = ChangeNotifier(bus, slots=subscribers)
        self.max_json_depth = max_json_depth
        super().__init__(SERVER_NAME, title="schemadoc", version=__version__, instructions=INSTRUCTIONS,
                         subscriptions=bus, lifespan=_lifespan, tools=tools)

    @property
    def bus(self) -> SubscriptionBus:
        return self.notifier.bus

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None) -> CallToolResult | InputRequiredResult:
        """Run a tool; every failure becomes an ``isError`` result carrying a catalogued error object.

        The call is noted on the record of the HTTP request that carried it (the request log's line names the tool,
        the document and the version it made); over stdio each call is a request of its own, with its own line.
        """
        record = CURRENT.get()
        if record is not None:
            return await self._call_tool(name, arguments, record, context)
        record = RequestRecord(new_request_id(), "stdio", "tools/call")
        reset = CURRENT.set(record)
        started = time.perf_counter()
        try:
            if self.tracing is None:
                return await self._call_tool(name, arguments, record, context)
            with self.tracing.request(record, ()):
                return await self._call_tool(name, arguments, record, context)
        finally:
            CURRENT.reset(reset)
            log_request(record, time.perf_counter() - started, self.slow_request_ms)

    async def _call_tool(self, name: str, arguments: dict[str, Any], record: RequestRecord,
                         context: Context[Any, Any] | None) -> CallToolResult:
        operation = BY_NAME.get(name)
        record.tool = name[:MAX_REQUEST_ID]
        record.operation = operation.name if operation is not None else "other"
        doc_id = arguments.get("doc_id") if isinstance(arguments, dict) else None
        if isinstance(doc_id, str):
            record.doc_id = doc_id[:MAX_REQUEST_ID]
        record.dry_run = isinstance(arguments, dict) and arguments.get("dry_run") is True
        if operation is None:
            return error_result(SchemaDocError(
                "invalid-request", f"Unknown tool {name!r}.", {"tool": name, "tools": sorted(BY_NAME)},
                remediation="Call one of the tools tools/list returns."))
        try:
            scans = check_unicode(arguments, self.service)
        except SchemaDocError as error:
            return error_result(error)
        actor = _actor(context)

        def run() -> BaseModel:
            """The body, fitted until the whole result (text and structured content) is within the budget:
            a read is made again with a smaller budget, a write's result is fitted again (never rerun)."""
            budget = body_budget()
            body = invoke(Call(self.service, self.max_json_depth, budget, scans, document_uri, actor), operation,
                          arguments)
            for attempt in range(5):
                body = self._within_budget(body, arguments, budget)
                if attempt == 4 or (whole := result_size(body.model_dump(mode="json"))) <= MCP_RESULT_BUDGET_BYTES:
                    break
                budget = max(budget * MCP_RESULT_BUDGET_BYTES // whole - 512, 1024)
                if operation.kind == "read":
                    body = invoke(Call(self.service, self.max_json_depth, budget, scans, document_uri, actor),
                                  operation, arguments)
            return body

        try:
            body: BaseModel = await anyio.to_thread.run_sync(run)
            note_result(record, body)
            return success_result(body)
        except SchemaDocError as error:
            log.debug("tool %s failed: %s", name, error)  # the request line has the code
            return error_result(SchemaDocError(error.code, error.message,
                                               fit_error(error.to_dict(), error_budget())["error"]["details"],
                                               error.remediation))
        except Exception:
            log.exception("tool %s raised an unexpected exception", name)
            return error_result(SchemaDocError(
                "internal-error", f"{name} failed unexpectedly; the server log has the details.", {"tool": name}))

    def _within_budget(self, body: BaseModel, arguments: dict[str, Any], budget: int) -> BaseModel:
        """The result's body, fitted to ``budget`` (see :mod:`schemadoc.operations.budget`)."""
        if "patch" in type(body).model_fields and "validation_report" in type(body).model_fields:
            body = fit_write(body, self.service.sizes, budget)
        else:
            body = fit_model(body, self.service.sizes, budget)
        structured = body.model_dump(mode="json")
        fitted = fit_result(structured, arguments, budget)
        if fitted is structured:
            return body
        return type(body).model_validate(fitted)

    async def read_resource(self, uri: Any, context: Context[Any, Any] | None = None) -> Any:
        """A document's resource carries its ``version`` (and ``modified_at``) in ``_meta``, read with the content
        in one step, so an agent can write after reading it, and the served schema's verdict on it (``valid``:
        ``null`` while unchecked, ``violation_count``) with the digest of its last write's schema; everything
        else as the SDK reads it."""
        doc_id = document_of_uri(str(uri))
        if doc_id is not None:
            try:
                content, meta = await anyio.to_thread.run_sync(self.service.read_document, doc_id)
            except SchemaDocError:
                pass  # the SDK's path answers with the catalogued not-found
            else:
                verdict = self.service.current_verdict(meta)
                return [ReadResourceContents(content=_dumps(content), mime_type="application/json",
                                             meta={"version": meta.version, "modified_at": meta.modified_at,
                                                   "schema_digest": meta.schema_digest,
                                                   "valid": None if verdict is None else verdict.valid,
                                                   "violation_count": None if verdict is None
                                                   else verdict.violation_count})]
        return await super().read_resource(uri, context)

    async def list_resources(self) -> list[Resource]:
        """The static resources, then one resource per document."""
        static = await super().list_resources()
        return static + await anyio.to_thread.run_sync(self._document_resources)

    def _document_resources(self) -> list[Resource]:
        resources: list[Resource] = []
        offset = 0
        while True:
            listing = self.service.list_documents(limit=1000, offset=offset)
            resources += [
                Resource(uri=document_uri(meta.doc_id), name=meta.doc_id,
                         title=self.service.document_label(meta.doc_id) or f"Document {meta.doc_id}",
                         description=f"Version {meta.version}, modified {meta.modified_at}.",
                         mime_type="application/json", size=meta.content_size_bytes)
                for meta in listing.documents]
            if not listing.has_more or not listing.documents:
                return resources
            offset += len(listing.documents)

    async def get_prompt(self, name: str, arguments: dict[str, Any] | None = None,
                         context: Context[Any, Any] | None = None) -> GetPromptResult | InputRequiredResult:
        """Unknown prompts, missing and unknown arguments are INVALID_PARAMS (the SDK would say -32603)."""
        prompt = self._prompt_manager.get_prompt(name)
        if prompt is None:
            raise MCPError(code=INVALID_PARAMS, message=f"Unknown prompt: {name}",
                           data={"prompts": sorted(p.name for p in self._prompt_manager.list_prompts())})
        given = arguments or {}
        declared = {arg.name: arg for arg in prompt.arguments or []}
        missing = sorted(arg.name for arg in declared.values() if arg.required and arg.name not in given)
        if missing:
            raise MCPError(code=INVALID_PARAMS, message=f"Prompt {name} is missing required argument(s): "
                                                        f"{', '.join(missing)}", data={"missing": missing})
        unknown = sorted(set(given) - set(declared))
        if unknown:
            raise MCPError(code=INVALID_PARAMS, message=f"Prompt {name} takes no argument(s) {', '.join(unknown)}",
                           data={"unknown": unknown, "accepted": sorted(declared)})
        return await super().get_prompt(name, arguments, context)


@asynccontextmanager
async def _lifespan(server: MCPServer[Any]) -> AsyncIterator[dict[str, Any]]:
    """Runs when the server starts serving (stdio, in-process, or the HTTP session manager)."""
    if isinstance(server, SchemaDocMCPServer):
        server.notifier.attach_loop()
    yield {}


_FREE_FORM_ARGUMENTS = frozenset({"node_data", "patch", "merge_patch"})


def check_unicode(arguments: dict[str, Any], service: DocumentService | None = None) -> dict[str, ArgumentScan]:
    """``invalid-request`` for an argument holding a lone surrogate (in a key or a string, at any depth).

    JSON text may spell one (``"\\ud800"``) but it is not Unicode: it cannot be stored, journaled
    or sent back as UTF-8 (RFC 8259 section 8.2), so it is refused here, naming the argument and
    where (never echoing the string). Over REST the JSON parser already refuses it.

    With ``service``, a written argument (``node_data``, ``patch``, ``merge_patch``) is looked at by
    the one walk every limit reads (:meth:`DocumentService.scan_argument`); those walks are returned.
    """
    scans: dict[str, ArgumentScan] = {}
    for name, value in arguments.items():
        if service is not None and name in _FREE_FORM_ARGUMENTS:
            scan = scans[name] = service.scan_argument(value, surrogates=True)
            if not scan.surrogate:
                continue
        elif isinstance(value, dict | list) and name.isascii():
            try:  # orjson refuses lone surrogates, and is ~7x faster than the walk below (4 MiB: 8 / 58 ms)
                orjson.dumps(value)
                continue
            except TypeError:  # a lone surrogate, or an integer beyond 64 bits: the walk tells
                pass
        stack: list[tuple[Any, str]] = [(name, ""), (value, "")]
        while stack:
            node, where = stack.pop()
            if isinstance(node, str):
                if node.isascii():
                    continue
                try:
                    node.encode()
                except UnicodeEncodeError as error:
                    raise SchemaDocError(
                        "invalid-request",
                        f"The argument {name!a} holds a lone surrogate (U+{ord(node[error.start]):04X}), "
                        "which is not Unicode text.",
                        {"argument": name.encode(errors="backslashreplace").decode(), "pointer": where,
                         "reason": "lone-surrogate"},
                        remediation="Send text as valid Unicode: a surrogate only as half of a pair.") from None
            elif isinstance(node, dict):
                for key, child in node.items():
                    token = str(key).encode(errors="backslashreplace").decode().replace("~", "~0").replace("/", "~1")
                    stack.append((key, where))
                    stack.append((child, f"{where}/{token}"))
            elif isinstance(node, list):
                stack.extend((child, f"{where}/{index}") for index, child in enumerate(node))
    return scans


def build_mcp_server(service: DocumentService, *, bus: SubscriptionBus | None = None,
                     max_json_depth: int | None = None,
                     subscribers: SubscriberSlots | None = None, slow_request_ms: int = 1000) -> SchemaDocMCPServer:
    """The MCP server for ``service``: one tool per operation of the catalogue, 4 resources (two templates), 2 prompts.

    The returned server listens to the service's changes (``server.notifier``) and publishes
    them to MCP subscribers of both eras; pass ``bus`` to share the modern-era subscription
    bus with other code (default: a fresh in-memory bus, ``server.bus``). ``node_data``,
    ``patch`` and ``merge_patch`` nested deeper than ``max_json_depth`` are refused with
    ``request-too-deep`` (default: the service's own limit). Resource subscriptions to documents
    take their slots from ``subscribers`` (shared with the REST event streams; default: slots
    with the default limits for this server alone). A tool call over stdio slower than ``slow_request_ms`` is
    logged at WARNING (0: never).
    """
    server = SchemaDocMCPServer(service, bus if bus is not None else InMemorySubscriptionBus(),
                                max_json_depth=service.max_json_depth if max_json_depth is None else max_json_depth,
                                subscribers=subscribers, tools=bound_tools(service.schema),
                                slow_request_ms=slow_request_ms)
    _add_resources(server, service)
    add_prompts(server, service)
    server.notifier.install(server)
    server.notifier.connect(service)
    return server


_USER_FIELDS = ("code", "status", "description", "causes", "remediation")
_ERROR_CATALOG = _dumps([{name: entry.as_dict()[name] for name in _USER_FIELDS} for entry in CATALOG.values()])
"""The error catalog for the agent calling the tools: what each code means and what to do (the notes on where a
code comes from, spec or extension, are in docs/errors.md and GET /api/v1/errors)."""
_VERSION_NUMBER = re.compile(r"0|[1-9][0-9]{0,17}")  # the service says which versions exist
_NOT_FOUND = frozenset({"invalid-doc-id", "document-not-found", "version-not-found"})


async def _read_json(uri: str, read: Callable[[], Any]) -> str:
    """The JSON of what ``read`` returns (in a worker thread); a missing resource is INVALID_PARAMS."""
    try:
        return _dumps(await anyio.to_thread.run_sync(read))
    except SchemaDocError as error:
        if error.code in _NOT_FOUND:
            raise MCPError(code=INVALID_PARAMS, message=f"Resource not found: {uri} ({error.message})",
                           data={"uri": uri, "error": error_object(error)["error"]}) from None
        raise ResourceError(f"{uri}: {error.message}") from error


def _add_resources(server: MCPServer[Any], service: DocumentService) -> None:
    def schema_text() -> str:
        return _dumps(service.root_schema(dereferenced=False))

    server.resource("schema://schema", name="schema", title="The document schema", mime_type="application/json",
                    description="The JSON Schema (Draft 2020-12) every document on this server satisfies, as "
                                "configured ($ref not resolved; schema_get_root can dereference it).")(schema_text)
    schema_id = service.root_schema(dereferenced=False).get("$id")
    if isinstance(schema_id, str) and "://" in schema_id and schema_id != "schema://schema":
        # results name the schema by its $id (schema_uri): that name is a resource too
        server.resource(schema_id, name="schema-by-id", title="The document schema (by its $id)",
                        mime_type="application/json",
                        description="The same schema as schema://schema, at the name results give as schema_uri."
                        )(schema_text)

    @server.resource("schema://errors", name="errors", title="The error catalog", mime_type="application/json",
                     description="Every error code a tool can return: what it means, its HTTP status over REST, "
                                 "typical causes and how to fix it.")
    def errors_resource() -> str:
        return _ERROR_CATALOG

    @server.resource("schema://{doc_id}", name="document", title="A document", mime_type="application/json",
                     description="The whole current document (validated) as JSON. resources/list lists every "
                                 "document; read nodes with document_read_node.")
    async def document_resource(doc_id: str) -> str:
        return await _read_json(document_uri(doc_id), lambda: service.read_document(doc_id)[0])

    @server.resource("schema://{doc_id}/versions/{n}", name="document-version", title="A version of a document",
                     mime_type="application/json",
                     description="The whole document as it was at version n (1 = as created), as JSON. "
                                 "document_history lists the versions; document_diff compares two.")
    async def document_version_resource(doc_id: str, n: str) -> str:
        def read() -> Any:
            if not _VERSION_NUMBER.fullmatch(n):
                raise SchemaDocError("version-not-found", f"{n!r} is not a version number (1, 2, ...).",
                                     {"doc_id": doc_id, "version": n})
            return service.read_version(doc_id, int(n))

        return await _read_json(f"{document_uri(doc_id)}/versions/{n}", read)
