"""The REST door: ``/api/v1`` routes onto :class:`~schemadoc.service.DocumentService`.

Routes that write are plain ``def`` functions, so FastAPI runs them in its thread pool: the
service is synchronous and fsyncs. Reads of a document held in memory (and of the schema) are
``async`` and call the service on the event loop: a hop to a worker thread and back costs more
than the read itself. Reads that may wait for a disk or a database (loading a document, past
versions, listings, feeds, a shared store) still go to a thread.

Request bodies are read as bytes and parsed with orjson here (not by pydantic models), so a
wrongly typed argument gives the catalogued ``invalid-request`` naming the argument, exactly as
the MCP door does; the OpenAPI document still describes every body.
Responses are the bodies of :mod:`schemadoc.operations.results`, serialised with orjson
without copying the (possibly 100 MB) document content.

Versions travel in the body (``"version": 5``) or as ``If-Match: "5"`` (the body wins); reads
answer with ``ETag: "<version>"``, and so do committed writes (the new version).

History comes from the journal: ``/history``, point-in-time reads (``?at_version=``,
``/versions/{n}``), ``/diff``, ``/revert``; documents are soft-deleted, undeleted and purged;
``PATCH`` takes an RFC 7396 merge patch. ``/documents/{doc_id}/events`` streams every version as
Server-Sent Events (see :mod:`schemadoc.interfaces.feeds`), ``/changes`` is the polling feed
across all documents.
"""

from __future__ import annotations

import functools
import json
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Annotated, Any

import anyio
import orjson
from fastapi import APIRouter, Depends, Header, Path, Query, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.types import Receive, Scope, Send

from schemadoc.config import Settings
from schemadoc.errors import CATALOG, SchemaDocError
from schemadoc.interfaces import feeds
from schemadoc.interfaces.subscribers import SubscriberSlots
from schemadoc.operations import results
from schemadoc.ops.limits import ArgumentScan, deeper_than
from schemadoc.pointer import json_type
from schemadoc.service import MIN_MAX_BYTES, DocumentService
from schemadoc.storage.base import check_doc_id

__all__ = [
    "REST_STATE",
    "ErrorBody",
    "ErrorObject",
    "JSONBody",
    "RestState",
    "check_depth",
    "dump_body",
    "error_response",
    "parse_json",
    "refine_openapi",
    "rest_router",
    "rest_state",
]


# -- responses -------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A result model as plain JSON data, sharing (not copying) the document content it holds."""
    if isinstance(value, BaseModel):
        out = {name: _plain(getattr(value, name)) for name in type(value).model_fields}
        if value.model_extra:
            out.update(value.model_extra)
        return out
    if isinstance(value, list) and value and isinstance(value[0], BaseModel):
        return [_plain(item) for item in value]
    return value


def dump_body(content: Any) -> bytes:
    """JSON bytes of a result model or plain data (orjson; the stdlib for integers beyond 64 bits)."""
    data = _plain(content)
    try:
        return orjson.dumps(data)
    except TypeError:
        try:
            return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        except UnicodeEncodeError:  # a lone surrogate: escaped, as JSON allows
            return json.dumps(data, separators=(",", ":"), allow_nan=False).encode()


class JSONBody(JSONResponse):
    """``application/json`` rendered with :func:`dump_body`.

    A :class:`JSONResponse` so that the OpenAPI document describes a route's success body with
    its ``response_model`` (FastAPI documents any other response class as a string).
    """

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dump_body(content)


def error_response(error: SchemaDocError, headers: dict[str, str] | None = None) -> JSONBody:
    """The error object with the catalog's HTTP status."""
    return JSONBody(error.to_dict(), status_code=error.status, headers=headers)


class ErrorObject(BaseModel):
    code: str = Field(description="Stable kebab-case code from the error catalog (GET /api/v1/errors, schema://errors).")
    category: str = Field(description="The HTTP status as a string, e.g. '409'.")
    message: str = Field(description="What went wrong, for a person or an agent.")
    details: dict[str, Any] = Field(description="Data to act on: the path, the current version, every violation, …")
    remediation: str = Field(description="How to fix it.")


class ErrorBody(BaseModel):
    """Every failure, on every endpoint, has this shape (the same as an MCP tool error's text)."""

    error: ErrorObject


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    text = {
        400: "invalid-request, invalid-doc-id, path-invalid, patch-invalid, root-not-deletable, request-too-deep",
        404: "document-not-found (details.deleted for a deleted document), path-not-found, version-not-found",
        408: "lock-timeout",
        409: "version-conflict, conflict, patch-test-failed",
        413: "request-too-large",
        422: "validation-failed (details.violations lists every violation), document-too-deep",
        500: "internal-error, storage-read-failed, storage-write-failed",
        503: "too-many-subscribers (details.limit: max_subscribers_per_document or max_subscribers_total)",
    }
    return {status: {"model": ErrorBody, "description": text[status]} for status in statuses}


def _errors_of_a_stream(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """:func:`_errors` for a route whose success is not JSON (a model would be filed under its media type)."""
    body = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    return {status: {"description": response["description"], "content": body}
            for status, response in _errors(*statuses).items()}


# -- requests --------------------------------------------------------------------------------


async def _raw_body(request: Request) -> bytes:
    return await request.body()


RawBody = Annotated[bytes, Depends(_raw_body)]


def parse_json(raw: bytes, argument: str = "body") -> Any:
    """The JSON value of ``raw``: ``invalid-request`` when it is not JSON, ``request-too-deep`` past orjson's limit."""
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        if "depth" in str(error) or "recursion" in str(error):
            raise SchemaDocError("request-too-deep", f"The request {argument} is nested too deeply to parse.",
                                 {"argument": argument}) from None
        raise SchemaDocError("invalid-request", f"The request {argument} is not valid JSON: {error}.",
                             {"argument": argument, "reason": str(error)}) from None
    if _DIGIT_RUN in raw.translate(_DIGITS):
        # orjson reads integers beyond 64 bits as floats; the stdlib keeps them exact, as MCP does
        try:
            value = json.loads(raw, parse_constant=_no_constant)
        except RecursionError:
            raise SchemaDocError("request-too-deep", f"The request {argument} is nested too deeply to parse.",
                                 {"argument": argument}) from None
    return value


_DIGITS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_DIGIT_RUN = b"0" * 20
"""Twenty digits in a row (a number orjson may have read approximately): every digit mapped to ``0``
and looked for as one substring, 9 ms on 10 MiB where the regular expression ``[0-9]{20,}`` took 84 ms."""


def _no_constant(name: str) -> Any:  # pragma: no cover - orjson already refused NaN and Infinity
    raise ValueError(f"{name} is not JSON")


def check_depth(value: Any, limit: int, argument: str, raw: bytes | None = None) -> None:
    """``request-too-deep`` when ``value`` nests containers more than ``limit`` levels deep.

    ``raw`` (the JSON text ``value`` came from) allows a fast pass: fewer brackets than the limit
    cannot nest deeper than it.
    """
    if raw is not None and raw.count(b"[") + raw.count(b"{") <= limit:
        return
    if deeper_than(value, limit):
        raise SchemaDocError("request-too-deep", f"The {argument} is nested more than {limit} levels deep.",
                             {"argument": argument, "max_json_depth": limit})


def _invalid(argument: str, message: str) -> SchemaDocError:
    return SchemaDocError("invalid-request", message, {"argument": argument})


class _Body:
    """A write's JSON body: an object (or, for a patch, a bare array) with the arguments.

    ``members`` are the members the route accepts: any other is refused with ``invalid-request``
    naming it, as the MCP door refuses unknown arguments (``None``: the body is content, e.g. a
    merge patch).
    """

    def __init__(self, raw: bytes, max_depth: int, *, required: bool,
                 members: tuple[str, ...] | None = (), array_allowed: bool = False) -> None:
        self.raw = raw
        self.array_allowed = array_allowed
        self.max_depth = max_depth
        self.value: Any = None
        self.present = bool(raw.strip())
        if self.present:
            self.value = parse_json(raw)
        elif required:
            raise _invalid("body", "The request needs a JSON body.")
        if members is not None and isinstance(self.value, dict):
            unknown = sorted(name for name in self.value if name not in members)
            if unknown:
                raise SchemaDocError(
                    "invalid-request", f"Unknown body member(s): {', '.join(unknown)}.",
                    {"argument": unknown[0], "location": "body", "unknown": unknown, "accepted": sorted(members)},
                    remediation="Send only the members the endpoint's request body declares (see /openapi.json).")

    def fields(self) -> dict[str, Any]:
        if not self.present:
            return {}
        if not isinstance(self.value, dict):
            raise _invalid("body", f"The request body must be a JSON object, got {json_type(self.value)}.")
        return self.value

    def argument(self, name: str, *, depth: bool = True) -> Any:
        fields = self.fields()
        if name not in fields:
            raise _invalid(name, f"The request body lacks the required member {name!r}.")
        value = fields[name]
        if depth:
            check_depth(value, self.max_depth, name, self.raw)
        return value

    def written(self, name: str, service: DocumentService, *, whole: bool = False) -> tuple[Any, ArgumentScan]:
        """The written argument ``name`` (``node_data``, ``patch``, ``merge_patch``; ``whole``: the body is
        it) with the one walk of it that every limit reads: ``request-too-deep`` here, the others in the
        write it is passed to."""
        value = self.value if whole else self.argument(name, depth=False)
        scan = service.scan_argument(value, text=self.raw)
        scan.check_depth(self.max_depth, name)
        return value, scan

    def dry_run(self, query: bool) -> bool:
        value = self.fields().get("dry_run", False) if isinstance(self.value, dict) else False
        if not isinstance(value, bool):
            raise _invalid("dry_run", f"dry_run must be a boolean, got {json_type(value)}.")
        return query or value


def _if_match_version(header: str) -> int | str:
    """The version an If-Match header names (``"5"``, ``W/"5"`` or ``5``), or ``"*"``."""
    text = header.strip()
    if text == "*":
        return "*"
    if text.startswith("W/"):
        text = text[2:]
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    if not (text.isascii() and text.isdigit()) or int(text) < 1:
        raise SchemaDocError("invalid-request",
                             f'If-Match must be the quoted version of the document, e.g. "5", got {header!r}.',
                             {"argument": "If-Match", "value": header})
    return int(text)


class _Versions:
    def __init__(self, service: DocumentService) -> None:
        self.service = service

    def resolve(self, doc_id: str, body: _Body, if_match: str | None) -> Any:
        """The version to write against: the body's, else If-Match's; the service checks its type."""
        fields = {} if isinstance(body.value, list) and body.array_allowed else body.fields()
        if "version" in fields:
            return fields["version"]
        if if_match is not None:
            version = _if_match_version(if_match)
            return self.service.version_of(doc_id) if version == "*" else version
        raise _invalid("version", "The version is required: send it as \"version\" in the body "
                                  "or as an If-Match header (the ETag of your last read).")

    def from_if_match(self, doc_id: str, if_match: str | None) -> Any:
        """The version of a write whose body is all content (a merge patch): If-Match only."""
        if if_match is None:
            raise _invalid("version", "The version is required as an If-Match header (the ETag of your last "
                                      "read), e.g. If-Match: \"5\".")
        version = _if_match_version(if_match)
        return self.service.version_of(doc_id) if version == "*" else version


def _etag(version: int) -> dict[str, str]:
    return {"ETag": f'"{version}"'}


_WriteBody = (results.UpdateNodeResult | results.CreateNodeResult | results.DeleteNodeResult
              | results.ApplyPatchResult | results.RevertResult | results.MergePatchResult | results.MoveNodeResult)


def _write_response(body: _WriteBody, status: int = 200) -> JSONBody:
    headers = None if body.dry_run else _etag(body.version)
    return JSONBody(body, status_code=status, headers=headers)


# -- OpenAPI descriptions of the request bodies ----------------------------------------------

_TOKEN = "([^~/]|~[01])"  # a reference token: '~' only as '~0' or '~1'
_POINTER = {"pattern": f"^(/{_TOKEN}*)*$"}
"""An RFC 6901 JSON Pointer ('' and '/' name the whole document)."""
_NODE_POINTER = {"pattern": f"^/({_TOKEN}+(/{_TOKEN}*)*|(/{_TOKEN}*)+)$"}
"""A pointer below the root (neither '' nor '/'): what a delete accepts."""
_IF_MATCH_VALUE = {"pattern": '^(\\*|(W/)?"0*[1-9][0-9]*"|0*[1-9][0-9]*)$'}
"""An If-Match header: the quoted version (ETag), W/ and unquoted tolerated, or '*' (the current version)."""
_ANY_JSON = {"description": "Any JSON value."}
_VERSION = {"type": "integer", "minimum": 1,
            "description": "The version you read (ETag). Optional when an If-Match header carries it."}
_DRY_RUN = {"type": "boolean", "default": False, "description": "Same as the dry_run query parameter."}
_OPERATION_MEMBERS = {"add": ("path", "value"), "remove": ("path",), "replace": ("path", "value"),
                      "move": ("from", "path"), "copy": ("from", "path"), "test": ("path", "value")}
_MEMBER_SCHEMAS = {"path": {"type": "string", **_POINTER}, "from": {"type": "string", **_POINTER}, "value": _ANY_JSON}
_PATCH = {"type": "array", "description": "RFC 6902 operations, applied atomically. Members an operation does not "
                                          "define are ignored, as RFC 6902 says.",
          "items": {"oneOf": [{"type": "object", "required": ["op", *members],
                               "properties": {"op": {"const": op},
                                              **{name: _MEMBER_SCHEMAS[name] for name in members}}}
                              for op, members in _OPERATION_MEMBERS.items()]}}


def _request_body(schema: dict[str, Any], *, required: bool = True, example: Any = None) -> dict[str, Any]:
    content: dict[str, Any] = {"schema": schema}
    if example is not None:
        content["example"] = example
    return {"requestBody": {"required": required, "content": {"application/json": content}}}


_NODE_BODY = _request_body(
    {"type": "object", "required": ["node_data"], "additionalProperties": False,
     "properties": {"node_data": {**_ANY_JSON, "description": "The new content of the node."},
                    "version": _VERSION, "dry_run": _DRY_RUN}},
    example={"node_data": "Updated Title", "version": 5})
_DELETE_BODY = _request_body(
    {"type": "object", "additionalProperties": False, "properties": {"version": _VERSION, "dry_run": _DRY_RUN}},
    required=False, example={"version": 5})
_PATCH_BODY = _request_body(
    {"oneOf": [{"type": "object", "required": ["patch"], "additionalProperties": False,
                "properties": {"patch": _PATCH, "version": _VERSION, "dry_run": _DRY_RUN}},
               {**_PATCH, "description": "A bare RFC 6902 array; the version then comes from If-Match."}]},
    example={"patch": [{"op": "replace", "path": "/title", "value": "New"}], "version": 5})

_MERGE_PATCH = {"description": "An RFC 7396 JSON Merge Patch: objects merge member by member, null deletes "
                               "a member, anything else replaces the node."}
_MERGE_EXAMPLE = {"title": "Dune", "metadata": {"status": "review", "isbn": None}}
_REVERT_BODY = _request_body(
    {"type": "object", "required": ["to_version"], "additionalProperties": False,
     "properties": {"to_version": {"type": "integer", "minimum": 1,
                                   "description": "The past version whose content the document gets back."},
                    "version": _VERSION, "dry_run": _DRY_RUN}},
    example={"to_version": 3, "version": 7})
_MERGE_BODY = _request_body(
    {"type": "object", "required": ["merge_patch"], "additionalProperties": False,
     "properties": {"merge_patch": _MERGE_PATCH, "version": _VERSION, "dry_run": _DRY_RUN}},
    example={"merge_patch": _MERGE_EXAMPLE, "version": 5})
_MERGE_PATCH_BODY = {"requestBody": {"required": True, "content": {
    "application/merge-patch+json": {"schema": _MERGE_PATCH, "example": _MERGE_EXAMPLE}}}}
_MOVE_BODY = _request_body(
    {"type": "object", "required": ["from_path", "to_path"], "additionalProperties": False,
     "properties": {"from_path": {"type": "string", **_NODE_POINTER,
                                  "description": "JSON Pointer of the node to move (not the root)."},
                    "to_path": {"type": "string", **_POINTER,
                                "description": "Where it goes ('/-' at the end appends)."},
                    "version": _VERSION, "dry_run": _DRY_RUN}},
    example={"from_path": "/chapters/3", "to_path": "/chapters/0", "version": 5})
_DOCUMENT_DELETE_BODY = _request_body(
    {"type": "object", "additionalProperties": False,
     "properties": {"version": _VERSION, "dry_run": {"type": "boolean", "enum": [False],
                                                    "description": "Refused when true: use undelete to undo."}}},
    required=False, example={"version": 5})
_SSE_EXAMPLE = ('id: 6\nevent: version\ndata: {"version":6,"op":"update_node",'
                '"patch":[{"op":"replace","path":"/title","value":"Dune"}],'
                '"at":"2025-01-01T12:00:00.000Z","info":{"node_path":"/title"}}\n\n: keepalive\n\n')
_SSE_EVENT = {
    "description": "One event of the stream (keep-alive comments are not events).",
    "type": "object", "required": ["event", "data"],
    "properties": {
        "event": {"enum": ["version", "purged", "error"]},
        "id": {"type": "string", "pattern": "^[1-9][0-9]*$", "description": "The version (version events)."},
        "data": {"type": "string", "contentMediaType": "application/json",
                 "description": "version: the journal entry (JournalEntryBody); purged: the purge result "
                                "(PurgeResult); error: the error object (ErrorBody)."},
    },
}
_EVENTS_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "A text/event-stream: one `version` event per committed version (id = the version, "
                         "data = the journal entry as in /history), a `: keepalive` comment every 15 s when idle, "
                         "a final `purged` event when the document is purged, or a final `error` event "
                         "(data = the error object).",
          "content": {"text/event-stream": {"schema": _SSE_EVENT, "example": _SSE_EXAMPLE}}},
    **_errors_of_a_stream(400, 404, 503),
}
_RAW_DOCUMENT_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "The whole document as it was at that version (the ETag is the version).",
          "content": {"application/json": {"schema": _ANY_JSON}}},
    **_errors(400, 404),
}

_PATH_READ = "RFC 6901 JSON Pointer of the node ('/' or '' is the whole document; negative indices count from the end)."
_PATH_WRITE = "RFC 6901 JSON Pointer of the node."
_DRY = "Validate and return the patch and preview without writing anything."
_IF_MATCH = 'The version to write against as an ETag, e.g. "5" (a "version" in the body wins).'
_AT_VERSION = "Read the document as it was at this past version (default: the current version)."
_MAX_DEPTH = ("Show this many container levels below the node; deeper containers become stubs "
              '{"$stub": true, "type", "count", "size_bytes", "pointer"} (0 to 255).')
_OFFSET = "Skip this many of the node's members or items (characters of a string)."
_LIMIT = "Show at most this many of the node's members or items (characters of a string)."
_MAX_BYTES = "Keep the result's node within this many bytes of JSON (512 or more)."
_NO_DRY_RUN = "Not supported here: true is refused with invalid-request rather than ignored."
_LAST_EVENT_ID = "Sent by EventSource clients when they reconnect: resume after this version (wins over since)."


def _refuse_dry_run(query: bool, body: _Body | None, what: str, undo: str) -> None:
    """``invalid-request`` for a dry run of a write that has none (rather than silently doing it)."""
    if query or (body is not None and body.dry_run(False)):
        raise _invalid("dry_run", f"{what} has no dry run; {undo}")


def _version_argument(body: _Body, name: str) -> int:
    """A version named in the body: an integer >= 1 (as the MCP door's argument validation requires)."""
    value = body.argument(name)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise SchemaDocError("invalid-request", f"{name} must be an integer >= 1, got {value!r}.",
                             {"argument": name, "value": repr(value)})
    return int(value)


class _EventStream(EventSourceResponse):
    """An SSE response; the class attribute tells OpenAPI its media type.

    ``release`` runs when the response ends, however it ends (the client disconnected, the feed
    ended, the server stops): it gives the subscriber's slot back.
    """

    media_type = "text/event-stream"
    release: Callable[[], None] | None = None  # set after construction: FastAPI reads __init__'s signature

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            if self.release is not None:
                self.release()


async def _server_sent(events: AsyncIterator[feeds.FeedEvent]) -> AsyncIterator[ServerSentEvent]:
    """A feed as Server-Sent Events (id = version, event = version | purged | error)."""
    async for item in events:
        if item.kind == "heartbeat":
            yield ServerSentEvent(comment="keepalive", sep="\n")
        else:
            event_id = None if item.version is None else str(item.version)
            yield ServerSentEvent(dump_body(item.body).decode(), event=item.kind, id=event_id, sep="\n")


# -- parameters: documented exactly, checked by the service ---------------------------------------
# The constraints are in the OpenAPI document only (json_schema_extra): FastAPI does not enforce
# them, so a value outside them reaches the service and gets its catalogued code (invalid-doc-id,
# invalid-request, version-not-found) instead of a framework message.

_ULID = "^[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}$"  # as storage.base.check_doc_id accepts
DocIdPath = Annotated[str, Path(description="The document's id (a ULID returned by document_create).",
                                json_schema_extra={"pattern": _ULID})]


def _bounded(low: int, high: int | None = None) -> dict[str, Any]:
    return {"minimum": low, **({"maximum": high} if high is not None else {})}


_NO_DRY_RUN_VALUE = {"enum": [False]}

IfMatch = Annotated[str | None, Header(description=_IF_MATCH, json_schema_extra=_IF_MATCH_VALUE)]
NoDryRun = Annotated[bool, Query(description=_NO_DRY_RUN, json_schema_extra=_NO_DRY_RUN_VALUE)]


# -- the OpenAPI document, made exact ----------------------------------------------------------

_BODY_METHODS = ("post", "put", "patch", "delete")
_EVERYWHERE = {
    413: "request-too-large: a body over max_body_bytes (any request that may carry a body)",
    500: "internal-error, storage-read-failed, storage-write-failed",
}


def refine_openapi(spec: dict[str, Any]) -> None:
    """Make the generated OpenAPI document say exactly what the routes accept and answer.

    - An optional query or header parameter is absent or a string, never JSON ``null``: FastAPI
      writes ``anyOf: [T, {"type": "null"}]`` for ``T | None``, which a client generator reads as
      "send null" (and a fuzzer sends the text ``null``).
    - ``PATCH /documents/{doc_id}`` takes its version only from If-Match: the header is required.
    - Every operation may answer 500 (a storage failure), every one that may carry a body 413
      (the body limit is checked before routing).
    - ``POST /documents`` links to every operation on the new document: its ``doc_id``, and its
      ETag as If-Match where the operation takes one (stateful clients and fuzzers follow them).
    """
    error_body = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    links: dict[str, Any] = {}
    created: dict[str, Any] | None = None
    for operations in spec.get("paths", {}).values():
        for operation in operations.values():
            if operation.get("operationId") == "document_create":
                created = operation.get("responses", {}).get("201")
            names = {(parameter.get("in"), parameter.get("name")) for parameter in operation.get("parameters", ())}
            if ("path", "doc_id") in names and len([n for n in names if n[0] == "path"]) == 1:
                link: dict[str, Any] = {"operationId": operation["operationId"],
                                        "parameters": {"path.doc_id": "$response.body#/doc_id"}}
                if ("header", "if-match") in names:
                    link["parameters"]["header.if-match"] = "$response.header.ETag"
                links[operation["operationId"]] = link
    if created is not None:  # the new document's id (and version, as its ETag) for every operation on it
        created["links"] = links
        created["headers"] = {
            "ETag": {"description": 'The version, quoted: "1".', "required": True,
                     "schema": {"type": "string", "pattern": '^"[1-9][0-9]*"$'}},
            "Location": {"description": "The new document's URL.", "required": True,
                         "schema": {"type": "string"}}}
    for operations in spec.get("paths", {}).values():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", ()):
                schema = parameter.get("schema", {})
                choices = schema.get("anyOf")
                if isinstance(choices, list) and {"type": "null"} in choices:
                    rest = [choice for choice in choices if choice != {"type": "null"}]
                    del schema["anyOf"]
                    if len(rest) == 1:
                        parameter["schema"] = {**rest[0], **schema}
                    else:
                        schema["anyOf"] = rest
                if operation.get("operationId") == "document_merge_patch" and parameter.get("name") == "if-match":
                    parameter["required"] = True
            responses = operation.setdefault("responses", {})
            for status, text in _EVERYWHERE.items():
                if status == 413 and method not in _BODY_METHODS:
                    continue
                responses.setdefault(str(status), {"description": text, "content": error_body})


# -- the router ------------------------------------------------------------------------------


@dataclass(frozen=True)
class RestState:
    """What the REST endpoints of one application work on: its service, limits and subscriber slots.

    Kept in ``app.state.schemadoc_rest``; the endpoints receive it as their ``rest`` argument.
    """

    service: DocumentService
    versions: _Versions
    max_depth: int
    slots: SubscriberSlots
    heartbeat_seconds: float


def rest_state(service: DocumentService, settings: Settings, *, heartbeat_seconds: float = feeds.HEARTBEAT_SECONDS,
               subscribers: SubscriberSlots | None = None) -> RestState:
    """The state of the REST endpoints of an application on ``service``.

    ``heartbeat_seconds``: how often an idle event stream sends a keep-alive comment.
    ``subscribers``: the slots event streams take (shared with the MCP door; default: the
    settings' limits for these endpoints alone).
    """
    slots = subscribers if subscribers is not None else SubscriberSlots(settings.max_subscribers_per_document,
                                                                         settings.max_subscribers_total)
    return RestState(service, _Versions(service), settings.max_json_depth, slots, heartbeat_seconds)


REST_STATE = "schemadoc_rest"
"""The ``app.state`` attribute holding the application's :class:`RestState`."""


def _rest_state(request: Request) -> RestState:
    state: RestState = getattr(request.app.state, REST_STATE)
    return state


Rest = Annotated[RestState, Depends(_rest_state)]


@functools.cache
def rest_router(prefix: str) -> APIRouter:
    """The ``/documents``, ``/changes`` and ``/schema`` endpoints under ``prefix``, built once per process.

    Each endpoint takes its application's :class:`RestState` (the ``rest`` argument, from ``app.state``),
    so the same routes serve every application and FastAPI analyses the endpoints (their parameters,
    the response models) once instead of for every application. Add ``rest_router(prefix).routes`` to an
    application's routes as they are: ``include_router`` would analyse every endpoint again for each
    application (on its first request).
    """
    router = APIRouter(prefix=prefix, default_response_class=JSONBody)

    @router.post("/documents", status_code=201, response_model=results.CreateDocumentResult,
                 tags=["documents"], summary="Create a document from the schema's defaults",
                 responses=_errors(400, 422, 500), operation_id="document_create",
                 openapi_extra=_request_body({"type": "object", "additionalProperties": False}, required=False,
                                               example={}))
    def create_document(rest: Rest, request: Request, raw: RawBody) -> JSONBody:
        _Body(raw, rest.max_depth, required=False).fields()  # an object without members, or nothing
        doc_id, content, meta, report = rest.service.create_document()
        uri = str(request.url_for("document_read_node", doc_id=doc_id))
        body = results.create_document_result(doc_id, content, meta, report, uri)
        return JSONBody(body, status_code=201, headers={**_etag(meta.version), "Location": uri})

    @router.get("/documents", response_model=results.ListDocumentsResult, tags=["documents"],
                summary="List documents", responses=_errors(400), operation_id="document_list")
    def list_documents(rest: Rest,
        limit: Annotated[int, Query(description="At most this many documents (1 to 1000).",
                                           json_schema_extra=_bounded(1, 1000))] = 100,
        offset: Annotated[int, Query(description="Skip this many documents.", json_schema_extra=_bounded(0))] = 0,
    ) -> JSONBody:
        listing = rest.service.list_documents(limit=limit, offset=offset)
        return JSONBody(results.list_documents_result(listing, rest.service.schema_uri))

    @router.get("/documents/{doc_id}", response_model=results.ReadNodeResult | results.BoundedReadNodeResult,
                tags=["documents"], summary="Read a node, now or at a past version (bounded when asked)",
                responses=_errors(400, 404),
                operation_id="document_read_node", name="document_read_node")
    async def read_node(rest: Rest, doc_id: DocIdPath,
                        path: Annotated[str, Query(description=_PATH_READ, json_schema_extra=_POINTER)] = "/",
                        at_version: Annotated[int | None, Query(ge=1, description=_AT_VERSION)] = None,
                        max_depth: Annotated[int | None, Query(description=_MAX_DEPTH,
                                                               json_schema_extra=_bounded(0, 255))] = None,
                        offset: Annotated[int, Query(description=_OFFSET, json_schema_extra=_bounded(0))] = 0,
                        limit: Annotated[int | None, Query(description=_LIMIT, json_schema_extra=_bounded(1))] = None,
                        max_bytes: Annotated[int | None, Query(description=_MAX_BYTES,
                                                               json_schema_extra=_bounded(MIN_MAX_BYTES))] = None,
                        ) -> JSONBody:
        bounded = max_depth is not None or offset != 0 or limit is not None or max_bytes is not None
        if bounded:  # a walk of the node (sizes measured once per container): in the thread pool
            view = await anyio.to_thread.run_sync(functools.partial(
                rest.service.read_view, doc_id, path, at_version=at_version, max_depth=max_depth, offset=offset,
                limit=limit, max_bytes=max_bytes))
            return JSONBody(results.read_view_result(view, True), headers=_etag(view.version))
        if at_version is None and rest.service.reads_locally(doc_id):
            read = rest.service.read_node(doc_id, path)
        else:  # it may load a document, replay its journal or ask a database: not on the event loop
            read = await anyio.to_thread.run_sync(
                functools.partial(rest.service.read_node, doc_id, path, at_version=at_version))
        return JSONBody(results.read_node_result(read), headers=_etag(read.version))

    @router.put("/documents/{doc_id}", response_model=results.UpdateNodeResult, tags=["documents"],
                summary="Replace a node", responses=_errors(400, 404, 408, 409, 413, 422),
                operation_id="document_update_node", openapi_extra=_NODE_BODY)
    def update_node(rest: Rest, doc_id: DocIdPath, raw: RawBody,
                    path: Annotated[str, Query(description=_PATH_WRITE, json_schema_extra=_POINTER)],
                    dry_run: Annotated[bool, Query(description=_DRY)] = False,
                    if_match: IfMatch = None) -> JSONBody:
        body = _Body(raw, rest.max_depth, required=True, members=("node_data", "version", "dry_run"))
        node_data, scanned = body.written("node_data", rest.service)
        version = rest.versions.resolve(doc_id, body, if_match)
        result = rest.service.update_node(doc_id, path, node_data, version, dry_run=body.dry_run(dry_run),
                                          scanned=scanned)
        return _write_response(results.update_node_result(result))

    @router.post("/documents/{doc_id}/nodes", status_code=201, response_model=results.CreateNodeResult,
                 tags=["documents"], summary="Create a node (a path ending in /- appends to an array)",
                 responses=_errors(400, 404, 408, 409, 413, 422), operation_id="document_create_node",
                 openapi_extra=_NODE_BODY)
    def create_node(rest: Rest, doc_id: DocIdPath, raw: RawBody,
                    path: Annotated[str, Query(description=_PATH_WRITE + " End it in /- to append.",
                                               json_schema_extra=_POINTER)],
                    dry_run: Annotated[bool, Query(description=_DRY)] = False,
                    if_match: IfMatch = None) -> JSONBody:
        body = _Body(raw, rest.max_depth, required=True, members=("node_data", "version", "dry_run"))
        node_data, scanned = body.written("node_data", rest.service)
        version = rest.versions.resolve(doc_id, body, if_match)
        result = rest.service.create_node(doc_id, path, node_data, version, dry_run=body.dry_run(dry_run),
                                          scanned=scanned)
        return _write_response(results.create_node_result(result), 201)

    @router.delete("/documents/{doc_id}/nodes", response_model=results.DeleteNodeResult, tags=["documents"],
                   summary="Delete a node", responses=_errors(400, 404, 408, 409, 422),
                   operation_id="document_delete_node", openapi_extra=_DELETE_BODY)
    def delete_node(rest: Rest, doc_id: DocIdPath, raw: RawBody,
                    path: Annotated[str, Query(description=_PATH_WRITE + " Not the root.",
                                               json_schema_extra=_NODE_POINTER)],
                    dry_run: Annotated[bool, Query(description=_DRY)] = False,
                    if_match: IfMatch = None) -> JSONBody:
        body = _Body(raw, rest.max_depth, required=False, members=("version", "dry_run"))
        version = rest.versions.resolve(doc_id, body, if_match)
        result = rest.service.delete_node(doc_id, path, version, dry_run=body.dry_run(dry_run))
        return _write_response(results.delete_node_result(result))

    @router.post("/documents/{doc_id}/patch", response_model=results.ApplyPatchResult, tags=["documents"],
                 summary="Apply an RFC 6902 JSON Patch atomically",
                 responses=_errors(400, 404, 408, 409, 413, 422), operation_id="document_apply_patch",
                 openapi_extra=_PATCH_BODY)
    def apply_patch(rest: Rest, doc_id: DocIdPath, raw: RawBody,
                    dry_run: Annotated[bool, Query(description=_DRY)] = False,
                    if_match: IfMatch = None) -> JSONBody:
        body = _Body(raw, rest.max_depth, required=True, members=("patch", "version", "dry_run"), array_allowed=True)
        patch, scanned = body.written("patch", rest.service, whole=isinstance(body.value, list))
        version = rest.versions.resolve(doc_id, body, if_match)
        result = rest.service.apply_patch(doc_id, patch, version, dry_run=body.dry_run(dry_run), scanned=scanned)
        return _write_response(results.patch_result(result))

    # -- deletion --------------------------------------------------------------------------

    @router.delete("/documents/{doc_id}", response_model=results.DocumentStateResult, tags=["documents"],
                   summary="Delete a document (restorable with undelete until purged)",
                   responses=_errors(400, 404, 408, 409), operation_id="document_delete",
                   openapi_extra=_DOCUMENT_DELETE_BODY)
    def delete_document(rest: Rest, doc_id: DocIdPath, raw: RawBody,
                        dry_run: NoDryRun = False,
                        if_match: IfMatch = None) -> JSONBody:
        body = _Body(raw, rest.max_depth, required=False, members=("version", "dry_run"))
        _refuse_dry_run(dry_run, body, "Deleting a document", "it can be undone with POST .../undelete.")
        version = rest.versions.resolve(doc_id, body, if_match)
        meta = rest.service.delete_document(doc_id, version)
        return JSONBody(results.document_state_result(meta), headers=_etag(meta.version))

    @router.post("/documents/{doc_id}/undelete", response_model=results.DocumentStateResult, tags=["documents"],
                 summary="Restore a deleted document with its whole history",
                 responses=_errors(400, 404, 408, 409), operation_id="document_undelete")
    def undelete_document(rest: Rest, doc_id: DocIdPath,
                          dry_run: NoDryRun = False) -> JSONBody:
        _refuse_dry_run(dry_run, None, "Restoring a document", "it can be undone with DELETE.")
        meta = rest.service.undelete_document(doc_id)
        return JSONBody(results.document_state_result(meta), headers=_etag(meta.version))

    @router.post("/documents/{doc_id}/purge", response_model=results.PurgeResult, tags=["documents"],
                 summary="Remove a deleted document for good (content, history and all)",
                 description="Only a deleted document can be purged (otherwise `conflict`). This cannot be undone.",
                 responses=_errors(400, 404, 408, 409), operation_id="document_purge")
    def purge_document(rest: Rest, doc_id: DocIdPath,
                       dry_run: NoDryRun = False) -> JSONBody:
        _refuse_dry_run(dry_run, None, "Purging a document", "it cannot be undone, so it is never done by accident.")
        rest.service.purge_document(doc_id)
        return JSONBody(results.purge_result(doc_id))

    # -- merge patch -------------------------------------------------------------------------

    @router.patch("/documents/{doc_id}", response_model=results.MergePatchResult, tags=["documents"],
                  summary="Apply an RFC 7396 JSON Merge Patch to a node",
                  description="The body is the merge patch itself (`Content-Type: application/merge-patch+json`); "
                              "the version comes from `If-Match`. The merge patch is checked against the node's "
                              "schema and the result validated (`validation-failed` lists every violation "
                              "either finds), then journaled as an RFC 6902 patch.",
                  responses=_errors(400, 404, 408, 409, 413, 422), operation_id="document_merge_patch",
                  openapi_extra=_MERGE_PATCH_BODY)
    def merge_patch(rest: Rest, request: Request, doc_id: DocIdPath, raw: RawBody,
                    path: Annotated[str, Query(description=_PATH_READ, json_schema_extra=_POINTER)] = "/",
                    dry_run: Annotated[bool, Query(description=_DRY)] = False,
                    if_match: Annotated[str | None, Header(description="The version to write against, e.g. "
                                                                       '"5" (required).',
                                                           json_schema_extra=_IF_MATCH_VALUE)] = None) -> JSONBody:
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media not in ("", "application/merge-patch+json", "application/json"):
            raise SchemaDocError(
                "invalid-request",
                f"PATCH takes an RFC 7396 merge patch as application/merge-patch+json, not {media}.",
                {"argument": "Content-Type", "value": media},
                remediation="Send the merge patch as application/merge-patch+json, or an RFC 6902 patch "
                            "to POST /documents/{doc_id}/patch.")
        body = _Body(raw, rest.max_depth, required=True, members=None)
        patch, scanned = body.written("merge_patch", rest.service, whole=True)
        version = rest.versions.from_if_match(doc_id, if_match)
        result = rest.service.merge_patch(doc_id, path, patch, version, dry_run=dry_run, scanned=scanned)
        return _write_response(results.merge_patch_result(result))

    @router.post("/documents/{doc_id}/merge", response_model=results.MergePatchResult, tags=["documents"],
                 summary="Apply an RFC 7396 JSON Merge Patch to a node (JSON body with the version)",
                 description="Like PATCH /documents/{doc_id}, for clients that cannot send PATCH or "
                             "application/merge-patch+json.",
                 responses=_errors(400, 404, 408, 409, 413, 422), operation_id="document_merge_patch_post",
                 openapi_extra=_MERGE_BODY)
    def merge_patch_post(rest: Rest, doc_id: DocIdPath, raw: RawBody,
                         path: Annotated[str, Query(description=_PATH_READ, json_schema_extra=_POINTER)] = "/",
                         dry_run: Annotated[bool, Query(description=_DRY)] = False,
                         if_match: IfMatch = None) -> JSONBody:
        body = _Body(raw, rest.max_depth, required=True, members=("merge_patch", "version", "dry_run"))
        patch, scanned = body.written("merge_patch", rest.service)
        version = rest.versions.resolve(doc_id, body, if_match)
        result = rest.service.merge_patch(doc_id, path, patch, version, dry_run=body.dry_run(dry_run), scanned=scanned)
        return _write_response(results.merge_patch_result(result))

    # -- history -----------------------------------------------------------------------------

    @router.get("/documents/{doc_id}/history", response_model=results.HistoryResult, tags=["history"],
                summary="The journal: one entry per version, oldest first", responses=_errors(400, 404),
                operation_id="document_history")
    def history(rest: Rest, doc_id: DocIdPath,
                since_version: Annotated[int, Query(description="Entries after this version (0: from the start); "
                                                                "pass next_since_version to page on.",
                                                    json_schema_extra=_bounded(0))] = 0,
                limit: Annotated[int, Query(description="At most this many entries (1 to 1000).",
                                         json_schema_extra=_bounded(1, 1000))] = 100) -> JSONBody:
        page = rest.service.history(doc_id, since_version=since_version, limit=limit)
        return JSONBody(results.history_result(page), headers=_etag(page.current_version))

    @router.get("/documents/{doc_id}/versions/{version}", response_model=None, tags=["history"],
                summary="The whole document at a past version", responses=_RAW_DOCUMENT_RESPONSES,
                operation_id="document_read_version")
    def read_version(rest: Rest, doc_id: DocIdPath,
                     version: Annotated[int, Path(description="The version, from 1 to the current one.",
                                                             json_schema_extra=_bounded(1))]) -> JSONBody:
        content = rest.service.read_version(doc_id, version)
        return JSONBody(content, headers=_etag(version))

    @router.get("/documents/{doc_id}/diff", response_model=results.DiffResult, tags=["history"],
                summary="An RFC 6902 patch from one version to another (either direction)",
                responses=_errors(400, 404), operation_id="document_diff")
    def diff(rest: Rest, doc_id: DocIdPath,
             from_version: Annotated[int, Query(ge=1, description="The version the patch applies to.")],
             to_version: Annotated[int, Query(ge=1, description="The version the patch produces.")]) -> JSONBody:
        patch = rest.service.diff(doc_id, from_version, to_version)
        return JSONBody(results.diff_result(doc_id, from_version, to_version, patch))

    @router.post("/documents/{doc_id}/revert", response_model=results.RevertResult, tags=["history"],
                 summary="Undo: a new version whose content equals a past version",
                 description="Nothing in the history is rewritten: the revert is journaled as a new version.",
                 responses=_errors(400, 404, 408, 409, 422), operation_id="document_revert",
                 openapi_extra=_REVERT_BODY)
    def revert(rest: Rest, doc_id: DocIdPath, raw: RawBody,
               dry_run: Annotated[bool, Query(description=_DRY)] = False,
               if_match: IfMatch = None) -> JSONBody:
        body = _Body(raw, rest.max_depth, required=True, members=("to_version", "version", "dry_run"))
        to_version = _version_argument(body, "to_version")
        version = rest.versions.resolve(doc_id, body, if_match)
        result = rest.service.revert(doc_id, to_version, version, dry_run=body.dry_run(dry_run))
        return _write_response(results.revert_result(result, to_version))

    # -- feeds -------------------------------------------------------------------------------

    @router.get("/documents/{doc_id}/events", response_model=None, response_class=_EventStream, tags=["feeds"],
                summary="Server-Sent Events: every version from the journal, then each new one as it commits",
                description="Starts after `since` (default: the current version, i.e. only what commits from "
                            "now on; 0 for the whole history). A client reconnecting with `Last-Event-ID` "
                            "resumes right after that version: nothing is missed, nothing is sent twice. "
                            "A deleted document's stream stays open (an undelete arrives as a version); "
                            "a purge ends it.",
                responses=_EVENTS_RESPONSES, operation_id="document_events")
    async def document_events(rest: Rest,
        doc_id: DocIdPath,
        since: Annotated[int | None, Query(description="Send the versions after this one first.",
                                           json_schema_extra=_bounded(0))] = None,
        last_event_id: Annotated[str | None, Header(alias="Last-Event-ID", description=_LAST_EVENT_ID,
                                                    json_schema_extra={"pattern": "^[0-9]*$"})] = None,
    ) -> Response:
        start = await anyio.to_thread.run_sync(
            functools.partial(feeds.start_version, rest.service, doc_id, since, last_event_id))
        release = rest.slots.acquire(check_doc_id(doc_id))  # too-many-subscribers: an ordinary error response
        try:
            events = feeds.document_events(rest.service, doc_id, start, heartbeat_seconds=rest.heartbeat_seconds)
            stream = _EventStream(_server_sent(events), ping=0, sep="\n")
            stream.release = release
            return stream
        except BaseException:
            release()
            raise

    @router.get("/changes", response_model=results.ChangesResult, tags=["feeds"],
                summary="Committed versions of every document, in commit order (a polling feed)",
                description="Pass `next_cursor` as `since` to get what was committed after the page: the "
                            "cursor never skips nor repeats a change, also across restarts.",
                responses=_errors(400), operation_id="document_changes")
    def changes(rest: Rest,
        since: Annotated[int, Query(description="The cursor of the last change seen (0: from the start).",
                                    json_schema_extra=_bounded(0))] = 0,
        limit: Annotated[int, Query(description="At most this many changes (1 to 1000).",
                                    json_schema_extra=_bounded(1, 1000))] = 100,
    ) -> JSONBody:
        return JSONBody(results.changes_result(rest.service.changes(since=since, limit=limit)))

    @router.get("/schema", response_model=results.RootSchemaResult, tags=["schema"],
                summary="The root schema", operation_id="schema_get_root", responses=_errors(400))
    async def root_schema(rest: Rest,
        dereferenced: Annotated[bool, Query(description="Resolve every $ref (cycles stay as $ref).")] = True,
    ) -> JSONBody:
        root = rest.service.root_schema(dereferenced=dereferenced)
        return JSONBody(results.root_schema_result(rest.service.schema_uri, root, rest.service.schema.schema_version))

    @router.get("/errors", response_model=results.ErrorCatalogResult, tags=["schema"],
                summary="The error catalog", operation_id="errors_catalog",
                description="Every error code a route or MCP tool can return, with its HTTP status, typical "
                            "causes and remediation: the list the MCP resource schema://errors holds.")
    async def error_catalog() -> JSONBody:
        return JSONBody({"success": True, "errors": [entry.as_dict() for entry in CATALOG.values()]})

    @router.get("/schema/node", response_model=results.NodeSchemaResult, tags=["schema"],
                summary="The schema of a node", operation_id="schema_get_node", responses=_errors(400, 404))
    async def node_schema(rest: Rest,
        path: Annotated[str, Query(description=_PATH_READ, json_schema_extra=_POINTER)] = "/",
        doc_id: Annotated[str | None, Query(description="Also tell whether the node exists in this document.",
                                            json_schema_extra={"pattern": _ULID})] = None,
        dereferenced: Annotated[bool, Query(description="Resolve every $ref (cycles stay as $ref).")] = True,
    ) -> JSONBody:
        look_up = functools.partial(rest.service.node_schema, path, doc_id, dereferenced=dereferenced)
        local = doc_id is None or rest.service.reads_locally(doc_id)
        node = look_up() if local else await anyio.to_thread.run_sync(look_up)
        return JSONBody(results.node_schema_result(node))

    # -- agents on large documents ---------------------------------------------------------------

    @router.get("/documents/{doc_id}/outline", response_model=results.OutlineResult, tags=["navigation"],
                summary="The table of contents of a node: members and items with type, count, size and title",
                responses=_errors(400, 404), operation_id="document_outline")
    def outline(rest: Rest, doc_id: DocIdPath,
                path: Annotated[str, Query(description=_PATH_READ, json_schema_extra=_POINTER)] = "/",
                depth: Annotated[int, Query(description="Levels of members and items to list (0 to 32).",
                                            json_schema_extra=_bounded(0, 32))] = 2,
                offset: Annotated[int, Query(description=_OFFSET, json_schema_extra=_bounded(0))] = 0,
                limit: Annotated[int | None, Query(description=_LIMIT, json_schema_extra=_bounded(1))] = None,
                max_bytes: Annotated[int | None, Query(description="Keep the outline within this many bytes "
                                                                   "(512 or more).",
                                                       json_schema_extra=_bounded(MIN_MAX_BYTES))]
                = None) -> JSONBody:
        read, found = rest.service.outline(doc_id, path, depth, offset=offset, limit=limit, max_bytes=max_bytes)
        return JSONBody(results.outline_result(read, found), headers=_etag(read.version))

    @router.get("/documents/{doc_id}/incomplete", response_model=results.NextIncompleteResult, tags=["navigation"],
                summary="Where the document is valid but not finished by the schema, breadth first",
                responses=_errors(400, 404), operation_id="document_next_incomplete")
    def next_incomplete(rest: Rest, doc_id: DocIdPath,
                        path: Annotated[str, Query(description=_PATH_READ, json_schema_extra=_POINTER)] = "/",
                        limit: Annotated[int, Query(description="At most this many places (1 to 100).",
                                                    json_schema_extra=_bounded(1, 100))] = 10,
                        ) -> JSONBody:
        read, items, more = rest.service.next_incomplete(doc_id, path, limit)
        return JSONBody(results.next_incomplete_result(read, items, more), headers=_etag(read.version))

    @router.get("/search", response_model=results.SearchResult, tags=["navigation"],
                summary="Text search over the string values of documents", responses=_errors(400, 404),
                operation_id="document_search")
    def search(rest: Rest, query: Annotated[str, Query(description="Text to find (case-insensitive).",
                                           json_schema_extra={"minLength": 1})],
               path: Annotated[str | None, Query(description="Only below this JSON Pointer.",
                                                 json_schema_extra=_POINTER)] = None,
               doc_ids: Annotated[list[str] | None, Query(description="Only these documents (repeat the "
                                                                      "parameter).",
                                                          json_schema_extra={"items": {"type": "string",
                                                                                       "pattern": _ULID}})] = None,
               limit: Annotated[int, Query(description="At most this many hits (1 to 100).",
                                           json_schema_extra=_bounded(1, 100))] = 20,
               cursor: Annotated[int, Query(description="0, else the next_cursor of the previous page.",
                                            json_schema_extra=_bounded(0))] = 0,
               ) -> JSONBody:
        page = rest.service.search(query, path, doc_ids, limit=limit, cursor=cursor)
        return JSONBody(results.search_result(query, page))

    @router.get("/documents/{doc_id}/stats", response_model=results.StatsResult, tags=["navigation"],
                summary="Size, node counts by type, depth, version and journal length",
                responses=_errors(400, 404), operation_id="document_stats")
    def stats(rest: Rest, doc_id: DocIdPath) -> JSONBody:
        found = rest.service.stats(doc_id)
        return JSONBody(results.stats_result(found), headers=_etag(found.version))

    @router.get("/documents/{doc_id}/render", response_model=results.RenderResult, tags=["navigation"],
                summary="A readable Markdown rendering of a node, driven by the schema",
                responses=_errors(400, 404), operation_id="document_render")
    def render(rest: Rest, doc_id: DocIdPath,
               path: Annotated[str, Query(description=_PATH_READ, json_schema_extra=_POINTER)] = "/",
               format: Annotated[str, Query(description="Only markdown.", json_schema_extra={"enum": ["markdown"]})]
               = "markdown",
               offset: Annotated[int, Query(description="Render from this child of the node.",
                                            json_schema_extra=_bounded(0))] = 0,
               limit: Annotated[int | None, Query(description="At most this many children of the node.",
                                                  json_schema_extra=_bounded(1))] = None,
               max_bytes: Annotated[int | None, Query(description="Stop before this many bytes of text (512 or "
                                                                  "more).",
                                                      json_schema_extra=_bounded(MIN_MAX_BYTES))] = None,
               ) -> JSONBody:
        read, rendered = rest.service.render(doc_id, path, format, offset=offset, limit=limit, max_bytes=max_bytes)
        return JSONBody(results.render_result(read, rendered, format), headers=_etag(read.version))

    @router.post("/documents/{doc_id}/move", response_model=results.MoveNodeResult, tags=["documents"],
                 summary="Move a node (RFC 6902 move; also reorders inside an array)",
                 responses=_errors(400, 404, 408, 409, 413, 422), operation_id="document_move_node",
                 openapi_extra=_MOVE_BODY)
    def move_node(rest: Rest, doc_id: DocIdPath, raw: RawBody,
                  dry_run: Annotated[bool, Query(description=_DRY)] = False,
                  if_match: IfMatch = None) -> JSONBody:
        body = _Body(raw, rest.max_depth, required=True, members=("from_path", "to_path", "version", "dry_run"))
        from_path, to_path = body.argument("from_path"), body.argument("to_path")
        version = rest.versions.resolve(doc_id, body, if_match)
        result = rest.service.move_node(doc_id, from_path, to_path, version, dry_run=body.dry_run(dry_run))
        return _write_response(results.move_node_result(result, from_path))

    return router
