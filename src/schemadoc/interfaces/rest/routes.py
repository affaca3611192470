"""The REST door: ``/api/v1`` routes built by walking the operation catalogue.

Every operation of :data:`~schemadoc.operations.catalogue.CATALOGUE` gets its routes here: the
request becomes the operation's arguments (path parameters, query parameters, the JSON body and
``If-Match``), which go through the catalogue's one check (:func:`~schemadoc.operations.catalogue.prepare`),
exactly as an MCP tool call does; the result is the operation's result model, with ``ETag`` (the
version) and the route's status. The OpenAPI parameters and request bodies come from the same
arguments models. :class:`~schemadoc.interfaces.rest.lane.RestLane` answers the same requests
through the same :func:`answer` without FastAPI's routing; :mod:`schemadoc.interfaces.rest.feeds`
adds the routes that are not operations (the event stream, raw past versions, the error catalog).

Over REST, ``node_path`` is spelt ``path``; on a method with a body, ``path`` and ``dry_run`` are
query parameters (``dry_run`` also a body member) and the other arguments members of the JSON body;
the version may come as ``If-Match: "5"`` (a body ``version`` wins; ``*`` is the current version).
A request that carries a body must declare it as JSON (``application/json`` or a ``+json`` type), or
it is ``unsupported-media-type`` (415) and nothing happens; a request without a body needs no type.
Integers (query parameters, ``If-Match``, body members) are at most a signed 64-bit integer.
Query strings spell numbers and booleans as text: they are read as the JSON values they spell, and
parameters no operation declares are ignored. Writes, and reads that may wait for a disk or a
database, run in a worker thread; reads of what the service holds in memory on the event loop.
"""

from __future__ import annotations

import functools
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import Response
from pydantic import BaseModel

from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.http.actors import REST_DOOR, actor_of
from schemadoc.interfaces.http.request_context import CURRENT, MAX_REQUEST_ID, note_result
from schemadoc.interfaces.rest.feeds import add_feed_routes
from schemadoc.interfaces.rest.verdicts import add_verdict_routes
from schemadoc.interfaces.rest.wire import (
    READ_BODY,
    REST_STATE,
    ErrorBody,
    ErrorObject,
    JSONBody,
    RestState,
    check_depth,
    dump_body,
    error_response,
    errors,
    parse_json,
    rest_state,
    state_of,
)
from schemadoc.operations.catalogue import CATALOGUE
from schemadoc.operations.operation import Call, Operation, Route, prepare, run
from schemadoc.ops.limits import ArgumentScan
from schemadoc.pointer import json_type
from schemadoc.service import DocumentService
from schemadoc.service.checks import LARGEST_INTEGER

__all__ = [
    "BINDINGS",
    "REST_STATE",
    "Binding",
    "ErrorBody",
    "ErrorObject",
    "JSONBody",
    "RestState",
    "answer",
    "check_depth",
    "check_media_type",
    "dump_body",
    "error_response",
    "parse_json",
    "rest_router",
    "rest_state",
]

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
_INTEGER = re.compile(r"[+-]?[0-9]{1,4000}")  # int() refuses more than 4,300 digits; the check refuses beyond 64 bits
_LARGEST_DIGITS = len(str(LARGEST_INTEGER))


def _kind(annotation: Any) -> str:
    """How a query string spells a field's value: ``int``, ``bool``, ``list`` or ``str``."""
    choices = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    for choice in choices:
        if choice is bool:
            return "bool"
        if choice is int:
            return "int"
        if typing.get_origin(choice) is list:
            return "list"
    return "str"


def _query_value(kind: str, values: list[str]) -> Any:
    """The JSON value a query parameter spells; a value it cannot be is passed on as text, for the check to refuse."""
    if kind == "list":
        return values
    value = values[-1]
    if kind == "int" and _INTEGER.fullmatch(value):
        return int(value)
    if kind == "bool" and value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    return value


_JSON_MEDIA = re.compile(r"application/json|[a-z0-9!#$%&'*^_`|~.+-]+/[a-z0-9!#$%&'*^_`|~.+-]+\+json")


def check_media_type(header: str | None) -> None:
    """``unsupported-media-type`` unless a request body is declared as JSON: ``application/json`` or a ``+json``
    type, with or without parameters. Browsers send ``text/plain``, forms and multipart bodies across origins
    without asking first (no CORS preflight); such a body is never parsed as JSON."""
    media = (header or "").split(";", 1)[0].strip().lower()
    if _JSON_MEDIA.fullmatch(media):
        return
    shown = (header or "")[:100]
    raise SchemaDocError(
        "unsupported-media-type",
        f"The request body is declared as {shown!r}, not as JSON; nothing was changed." if shown else
        "The request body has no Content-Type; nothing was changed.",
        {"argument": "Content-Type", "value": shown or None, "accepted": ["application/json", "*/*+json"]})


def _invalid(argument: str, message: str) -> SchemaDocError:
    return SchemaDocError("invalid-request", message, {"argument": argument})


def _if_match_version(header: str) -> int | str:
    """The version an If-Match header names (``"5"``, ``W/"5"`` or ``5``), or ``"*"``."""
    text = header.strip()
    if text == "*":
        return "*"
    if text.startswith("W/"):
        text = text[2:]
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    digits = text.lstrip("0")
    if not (text.isascii() and text.isdigit()) or not digits or len(digits) > _LARGEST_DIGITS \
            or int(digits) > LARGEST_INTEGER:  # int() of more than 4,300 digits fails: the length is checked first
        shown = header if len(header) <= 100 else header[:100] + "…"
        raise SchemaDocError("invalid-request",
                             f'If-Match must be the quoted version of the document, e.g. "5" (1 to {LARGEST_INTEGER}), '
                             f"got {shown!r}.", {"argument": "If-Match", "value": shown})
    return int(digits)


# -- an operation's route, as this door serves it ---------------------------------------------------


@dataclass(frozen=True)
class Binding:
    """One route of an operation: where each argument comes from."""

    operation: Operation
    route: Route
    path_params: tuple[str, ...]
    query: dict[str, tuple[str, str]]  # query parameter -> (argument, kind)
    body_members: frozenset[str]
    reads_body: bool
    needs_body: bool  # a member other than the version is required
    takes_version: bool

    @property
    def operation_id(self) -> str:
        return self.route.operation_id or self.operation.name


def _binding(operation: Operation, route: Route) -> Binding:
    fields = operation.args.model_fields
    path_params = tuple(re.findall(r"{(\w+)}", route.path))
    has_body = route.method != "GET"
    query: dict[str, tuple[str, str]] = {}
    for name, info in fields.items():
        if route.carries(name) == "query":
            query["path" if name == "node_path" else name] = (name, _kind(info.annotation))
    if has_body and "dry_run" not in query:
        query["dry_run"] = ("dry_run", "bool")  # refused when true: the operation has no dry run
    # dry_run may also be a body member
    body = frozenset(name for name in fields if route.carries(name) == "body" or (has_body and name == "dry_run"))
    reads_body = has_body and (bool(body) or not path_params)
    needs_body = any(fields[name].is_required() for name in body if name != "version")
    return Binding(operation, route, path_params, query, body, reads_body, needs_body,
                   has_body and "version" in fields)


BINDINGS: tuple[Binding, ...] = tuple(_binding(operation, route) for operation in CATALOGUE
                                      for route in operation.routes)


# -- a request's arguments -----------------------------------------------------------------------------


def arguments(binding: Binding, request: Request, body: bytes,
              service: DocumentService) -> tuple[dict[str, Any], dict[str, ArgumentScan]]:
    """The operation's arguments as the request gives them, and the walks of its written ones."""
    route = binding.route
    raw: dict[str, Any] = dict(route.defaults)
    raw.update(request.path_params)
    query_string = request.scope.get("query_string", b"")
    if query_string:  # as Starlette's QueryParams reads it, without building the multi-dict
        given: dict[str, list[str]] = {}
        for name, value in _query_pairs(query_string.decode("latin-1")):
            if name in binding.query:
                given.setdefault(name, []).append(value)
        for name, values in given.items():
            argument, kind = binding.query[name]
            raw[argument] = _query_value(kind, values)
    scans: dict[str, ArgumentScan] = {}
    if binding.reads_body:
        _body_arguments(binding, request, body, service, raw, scans)
    if binding.takes_version and "version" not in raw:
        header = request.headers.get("if-match")
        if header is not None:
            version = _if_match_version(header)
            raw["version"] = service.version_of(raw.get("doc_id", "")) if version == "*" else version
        elif route.version_only_from_header:
            raise _invalid("version", "The version is required as an If-Match header (the ETag of your last read), "
                                      'e.g. If-Match: "5".')
    return raw, scans


def _query_pairs(query: str) -> list[tuple[str, str]]:
    """``parse_qsl(query, keep_blank_values=True)``; a query with nothing to decode (no ``%`` or ``+``, as most are)
    split without it."""
    if "%" in query or "+" in query:
        return parse_qsl(query, keep_blank_values=True)
    return [(name, value) for name, _, value in (piece.partition("=") for piece in query.split("&") if piece)]


def _body_arguments(binding: Binding, request: Request, body: bytes, service: DocumentService,
                    raw: dict[str, Any], scans: dict[str, ArgumentScan]) -> None:
    route = binding.route
    present = bool(body.strip())
    if route.whole is not None:
        media = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if media not in ("", "application/json", *route.media_types):
            raise SchemaDocError(
                "invalid-request", f"{route.method} takes {route.whole} as {' or '.join(route.media_types)}, "
                                   f"not {media}.", {"argument": "Content-Type", "value": media},
                remediation="Send the merge patch as application/merge-patch+json, or an RFC 6902 patch to "
                            "POST /documents/{doc_id}/patch.")
        if not present:
            raise _invalid("body", "The request needs a JSON body.")
        raw[route.whole] = value = parse_json(body)
        scans[route.whole] = service.scan_argument(value, text=body)
        return
    if not present and binding.needs_body:
        raise _invalid("body", "The request needs a JSON body.")
    value = parse_json(body) if present else {}
    if route.bare is not None and isinstance(value, list):
        raw[route.bare] = value
        scans[route.bare] = service.scan_argument(value, text=body)
        return
    if not isinstance(value, dict):
        raise _invalid("body", f"The request body must be a JSON object, got {json_type(value)}.")
    misplaced = sorted(name for name in value if name not in binding.body_members
                       and name in binding.operation.args.model_fields)
    if misplaced:
        raise SchemaDocError(
            "invalid-request", f"{', '.join(misplaced)} belong(s) in the URL of {binding.operation_id}, not in the "
                               "body.", {"argument": misplaced[0], "location": "body", "unknown": misplaced,
                                         "accepted": sorted(binding.body_members)})
    for name, member in value.items():
        if name == "dry_run" and raw.get("dry_run") is True:
            continue  # ?dry_run=true wins
        raw[name] = member
        if name in binding.operation.written:
            scans[name] = service.scan_argument(member, text=body)


# -- answering -----------------------------------------------------------------------------------------


def _response(binding: Binding, result: BaseModel) -> JSONBody:
    """The result with the route's status, ``ETag`` (the version; not for a dry run) and, for a new document,
    ``Location``."""
    dry_run, version_field, uri_field = _traits(type(result))
    headers: dict[str, str] = {}
    if binding.operation.etag and version_field and not (dry_run and result.__dict__["dry_run"]):
        version = result.__dict__[version_field]
        if isinstance(version, int):
            headers["ETag"] = f'"{version}"'
    if uri_field and binding.route.status == 201:
        headers["Location"] = result.__dict__["document_uri"]
    return JSONBody(result, status_code=binding.route.status, headers=headers or None)


@functools.cache
def _traits(result: type[BaseModel]) -> tuple[bool, str | None, bool]:
    """Of a result model: whether it has ``dry_run``, which member is the version its ETag carries
    (``current_version`` of a history page, else ``version``), whether it has ``document_uri``. Looked up
    once per model: asking an instance for a member it lacks goes through pydantic's slow path."""
    fields = result.model_fields
    version = "current_version" if "current_version" in fields else "version" if "version" in fields else None
    return "dry_run" in fields, version, "document_uri" in fields


def _call(binding: Binding, request: Request, rest: RestState, scans: dict[str, ArgumentScan]) -> Call:
    def document_uri(doc_id: str) -> str:
        return str(request.url_for("document_read_node", doc_id=doc_id))

    return Call(rest.service, rest.max_depth, None, scans, document_uri, actor_of(request.scope, REST_DOOR))


def _prepare(binding: Binding, request: Request, body: bytes, rest: RestState) -> tuple[Call, Any]:
    """The checked arguments; a refused ``node_path`` is named ``path``, as REST spells it."""
    raw, scans = arguments(binding, request, body, rest.service)
    try:
        call, args = prepare(_call(binding, request, rest, scans), binding.operation, raw)
        # the arguments' own members (a model without dry_run: no trip through pydantic's missing-attribute path)
        if args.__dict__.get("dry_run") is True and (record := CURRENT.get()) is not None:
            record.dry_run = True
        return call, args
    except SchemaDocError as error:
        if error.code == "invalid-request" and error.details.get("argument") == "node_path":
            error.details["argument"] = "path"
            for problem in error.details.get("problems", ()):
                if problem.get("argument") == "node_path":
                    problem["argument"] = "path"
            error.message = error.message.replace("'node_path'", "'path'")
        raise


def _run(binding: Binding, request: Request, body: bytes, rest: RestState) -> BaseModel:
    call, args = _prepare(binding, request, body, rest)
    return run(call, binding.operation, args)


async def answer(binding: Binding, request: Request, rest: RestState) -> Response:
    """Answer ``request`` with ``binding``'s operation: on the event loop when the service holds what it needs."""
    body = b""
    if binding.route.method != "GET":
        read = request.scope.get(READ_BODY)  # read by the body limits already
        body = read if read is not None else await request.body()
        if body:  # a body not declared as JSON is never read, nor the request answered
            check_media_type(next((bytes(value).decode("latin-1") for name, value in request.scope["headers"]
                                   if name == b"content-type"), None))
    record = CURRENT.get()
    if record is not None:  # what the request log and the metrics tell of this request
        record.operation = binding.operation.name
        doc_id = request.scope["path_params"].get("doc_id")
        if isinstance(doc_id, str):
            record.doc_id = doc_id[:MAX_REQUEST_ID]
    local = binding.operation.local
    if local is None:
        result = await anyio.to_thread.run_sync(_run, binding, request, body, rest)
    else:
        call, args = _prepare(binding, request, body, rest)
        if local(rest.service, args):
            result = run(call, binding.operation, args)
        else:  # it may load a document, replay its journal or ask a database: not on the event loop
            result = await anyio.to_thread.run_sync(run, call, binding.operation, args)
    note_result(record, result)
    return _response(binding, result)


def _endpoint(binding: Binding) -> Callable[[Request], Any]:
    async def endpoint(request: Request) -> Response:
        return await answer(binding, request, state_of(request))

    endpoint.__name__ = binding.operation_id
    return endpoint


# -- the OpenAPI description of a route, from the arguments model ----------------------------------------

_IF_MATCH = {"type": "string", "pattern": '^(\\*|(W/)?"0*[1-9][0-9]*"|0*[1-9][0-9]*)$'}


def _parameter(name: str, where: str, schema: dict[str, Any], required: bool) -> dict[str, Any]:
    parameter: dict[str, Any] = {"name": name, "in": where, "required": required, "schema": schema}
    if "description" in schema:
        parameter["description"] = schema["description"]
    return parameter


def _openapi(binding: Binding) -> dict[str, Any]:
    operation, route = binding.operation, binding.route
    schema = operation.args.model_json_schema(ref_template="#/components/schemas/{model}")
    properties: dict[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", ())) - set(route.defaults)
    parameters = [_parameter(name, "path", properties[name], True) for name in binding.path_params]
    for name, (argument, _) in binding.query.items():
        if argument in properties:
            parameters.append(_parameter(name, "query", properties[argument], argument in required))
        else:
            parameters.append(_parameter(name, "query", {"type": "boolean", "enum": [False], "description": (
                f"Not supported here: true is refused with invalid-request ({operation.no_dry_run})")}, False))
    if binding.takes_version:
        parameters.append(_parameter("if-match", "header", {**_IF_MATCH, "description": (
            'The version to write against as an ETag, e.g. "5" (a "version" in the body wins).')},
            route.version_only_from_header))
    extra: dict[str, Any] = {"parameters": parameters}
    if not binding.reads_body:
        return extra
    example = {name: value for name, value in (operation.examples or ({},))[0].items() if name in binding.body_members}
    if route.whole is not None:
        whole = properties[route.whole]
        extra["requestBody"] = {"required": True, "content": {
            media: {"schema": whole, "example": (operation.examples or ({},))[0].get(route.whole)}
            for media in route.media_types}}
        return extra
    members = {name: properties[name] for name in properties if name in binding.body_members}
    body_required = sorted(name for name in members if name in required and name != "version")
    body: dict[str, Any] = {"type": "object", "additionalProperties": False, "properties": members}
    if body_required:
        body["required"] = body_required
    if route.bare is not None:
        body = {"oneOf": [body, {**properties[route.bare],
                                 "description": "A bare RFC 6902 array; the version then comes from If-Match."}]}
    extra["requestBody"] = {"required": bool(body_required), "content": {
        "application/json": {"schema": body, "example": example}}}
    return extra


# -- the router ------------------------------------------------------------------------------


@functools.cache
def rest_router(prefix: str) -> APIRouter:
    """Every route under ``prefix``, built once per process.

    The endpoints find their application's :class:`RestState` in ``app.state``, so the same routes
    serve every application. Add ``rest_router(prefix).routes`` to an application's routes as they are.
    """
    router = APIRouter(prefix=prefix, default_response_class=JSONBody)
    for binding in BINDINGS:
        operation, route = binding.operation, binding.route
        router.add_api_route(
            route.path, _endpoint(binding), methods=[route.method], operation_id=binding.operation_id,
            name=binding.operation_id, summary=route.summary or operation.title, description=route.description,
            tags=[operation.tag], status_code=route.status, response_model=operation.rest_result or operation.result,
            responses=errors(*operation.errors), openapi_extra=_openapi(binding))
    add_feed_routes(router)
    add_verdict_routes(router)
    return router
