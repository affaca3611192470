"""The REST door: ``/api/v1`` routes onto :class:`~schemadoc.service.DocumentService`.

Routes are plain ``def`` functions, so FastAPI runs them in its thread pool: the service is
synchronous and fsyncs. Request bodies are read as bytes and parsed with orjson here (not by
pydantic models), so a wrongly typed argument gives the catalogued ``invalid-request`` naming
the argument, exactly as the MCP door does; the OpenAPI document still describes every body.
Responses are the bodies of :mod:`schemadoc.interfaces.results`, serialised with orjson
without copying the (possibly 100 MB) document content.

Versions travel in the body (``"version": 5``) or as ``If-Match: "5"`` (the body wins); reads
answer with ``ETag: "<version>"``, and so do committed writes (the new version).
"""

from __future__ import annotations

import json
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import Response
from pydantic import BaseModel, Field

from schemadoc.config import Settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces import results
from schemadoc.service import DocumentService

__all__ = [
    "ErrorBody",
    "ErrorObject",
    "JSONBody",
    "build_rest_router",
    "check_depth",
    "dump_body",
    "error_response",
    "parse_json",
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
        return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()


class JSONBody(Response):
    """``application/json`` rendered with :func:`dump_body`."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return dump_body(content)


def error_response(error: SchemaDocError, headers: dict[str, str] | None = None) -> JSONBody:
    """The error object with the catalog's HTTP status."""
    return JSONBody(error.to_dict(), status_code=error.status, headers=headers)


class ErrorObject(BaseModel):
    code: str = Field(description="Stable kebab-case code from the error catalog (docs/errors.md, schema://errors).")
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
        404: "document-not-found, path-not-found, schema-path-not-found",
        408: "lock-timeout",
        409: "version-conflict, conflict, patch-test-failed",
        413: "request-too-large",
        422: "validation-failed (details.violations lists every violation)",
        500: "internal-error, storage-read-failed, storage-write-failed",
    }
    return {status: {"model": ErrorBody, "description": text[status]} for status in statuses}


# -- requests --------------------------------------------------------------------------------


async def _raw_body(request: Request) -> bytes:
    return await request.body()


RawBody = Annotated[bytes, Depends(_raw_body)]


def parse_json(raw: bytes, argument: str = "body") -> Any:
    """The JSON value of ``raw``: ``invalid-request`` when it is not JSON, ``request-too-deep`` past orjson's limit."""
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        if "depth" in str(error) or "recursion" in str(error):
            raise SchemaDocError("request-too-deep", f"The request {argument} is nested too deeply to parse.",
                                 {"argument": argument}) from None
        raise SchemaDocError("invalid-request", f"The request {argument} is not valid JSON: {error}.",
                             {"argument": argument, "reason": str(error)}) from None


def check_depth(value: Any, limit: int, argument: str, raw: bytes | None = None) -> None:
    """``request-too-deep`` when ``value`` nests containers more than ``limit`` levels deep.

    ``raw`` (the JSON text ``value`` came from) allows a fast pass: fewer brackets than the limit
    cannot nest deeper than it.
    """
    if raw is not None and raw.count(b"[") + raw.count(b"{") <= limit:
        return
    if not isinstance(value, dict | list):
        return
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise SchemaDocError("request-too-deep",
                                 f"The {argument} is nested more than {limit} levels deep.",
                                 {"argument": argument, "max_json_depth": limit})
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, dict | list):
                stack.append((child, depth + 1))


def _invalid(argument: str, message: str) -> SchemaDocError:
    return SchemaDocError("invalid-request", message, {"argument": argument})


class _Body:
    """A write's JSON body: an object (or, for a patch, a bare array) with the arguments."""

    def __init__(self, raw: bytes, max_depth: int, *, required: bool) -> None:
        self.raw = raw
        self.max_depth = max_depth
        self.value: Any = None
        self.present = bool(raw.strip())
        if self.present:
            self.value = parse_json(raw)
        elif required:
            raise _invalid("body", "The request needs a JSON body.")

    def fields(self) -> dict[str, Any]:
        if not self.present:
            return {}
        if not isinstance(self.value, dict):
            raise _invalid("body", f"The request body must be a JSON object, got {_type_name(self.value)}.")
        return self.value

    def argument(self, name: str) -> Any:
        fields = self.fields()
        if name not in fields:
            raise _invalid(name, f"The request body lacks the required member {name!r}.")
        value = fields[name]
        check_depth(value, self.max_depth, name, self.raw)
        return value

    def dry_run(self, query: bool) -> bool:
        value = self.fields().get("dry_run", False) if isinstance(self.value, dict) else False
        if not isinstance(value, bool):
            raise _invalid("dry_run", f"dry_run must be a boolean, got {_type_name(value)}.")
        return query or value


def _type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list) else "object"


def _if_match_version(header: str) -> int | str:
    """The version an If-Match header names (``"5"``, ``W/"5"`` or ``5``), or ``"*"``."""
    text = header.strip()
    if text == "*":
        return "*"
    if text.startswith("W/"):
        text = text[2:]
    if len(text) >= 2 and text[0] == text[-1] == '"':
        text = text[1:-1]
    if not text.isdigit() or int(text) < 1:
        raise SchemaDocError("invalid-request",
                             f'If-Match must be the quoted version of the document, e.g. "5", got {header!r}.',
                             {"argument": "If-Match", "value": header})
    return int(text)


class _Versions:
    def __init__(self, service: DocumentService) -> None:
        self.service = service

    def resolve(self, doc_id: str, body: _Body, if_match: str | None) -> Any:
        """The version to write against: the body's, else If-Match's; the service checks its type."""
        fields = {} if isinstance(body.value, list) else body.fields()
        if "version" in fields:
            return fields["version"]
        if if_match is not None:
            version = _if_match_version(if_match)
            return self.service.version_of(doc_id) if version == "*" else version
        raise _invalid("version", "The version is required: send it as \"version\" in the body "
                                  "or as an If-Match header (the ETag of your last read).")


def _etag(version: int) -> dict[str, str]:
    return {"ETag": f'"{version}"'}


_WriteBody = (results.UpdateNodeResult | results.CreateNodeResult | results.DeleteNodeResult
              | results.ApplyPatchResult)


def _write_response(body: _WriteBody, status: int = 200) -> JSONBody:
    headers = None if body.dry_run else _etag(body.version)
    return JSONBody(body, status_code=status, headers=headers)


# -- OpenAPI descriptions of the request bodies ----------------------------------------------

_ANY_JSON = {"description": "Any JSON value."}
_VERSION = {"type": "integer", "minimum": 1,
            "description": "The version you read (ETag). Optional when an If-Match header carries it."}
_DRY_RUN = {"type": "boolean", "default": False, "description": "Same as the dry_run query parameter."}
_PATCH = {"type": "array", "description": "RFC 6902 operations, applied atomically.",
          "items": {"type": "object", "required": ["op", "path"],
                    "properties": {"op": {"enum": ["add", "remove", "replace", "move", "copy", "test"]},
                                   "path": {"type": "string"}, "from": {"type": "string"}, "value": _ANY_JSON}}}


def _request_body(schema: dict[str, Any], *, required: bool = True, example: Any = None) -> dict[str, Any]:
    content: dict[str, Any] = {"schema": schema}
    if example is not None:
        content["example"] = example
    return {"requestBody": {"required": required, "content": {"application/json": content}}}


_NODE_BODY = _request_body(
    {"type": "object", "required": ["node_data"],
     "properties": {"node_data": {**_ANY_JSON, "description": "The new content of the node."},
                    "version": _VERSION, "dry_run": _DRY_RUN}},
    example={"node_data": "Updated Title", "version": 5})
_DELETE_BODY = _request_body(
    {"type": "object", "properties": {"version": _VERSION, "dry_run": _DRY_RUN}},
    required=False, example={"version": 5})
_PATCH_BODY = _request_body(
    {"oneOf": [{"type": "object", "required": ["patch"],
                "properties": {"patch": _PATCH, "version": _VERSION, "dry_run": _DRY_RUN}},
               {**_PATCH, "description": "A bare RFC 6902 array; the version then comes from If-Match."}]},
    example={"patch": [{"op": "replace", "path": "/title", "value": "New"}], "version": 5})

_PATH_READ = "RFC 6901 JSON Pointer of the node ('/' or '' is the whole document; negative indices count from the end)."
_PATH_WRITE = "RFC 6901 JSON Pointer of the node."
_DRY = "Validate and return the patch and preview without writing anything."
_IF_MATCH = 'The version to write against as an ETag, e.g. "5" (a "version" in the body wins).'


# -- the router ------------------------------------------------------------------------------


def build_rest_router(service: DocumentService, settings: Settings) -> APIRouter:
    """The ``/documents`` and ``/schema`` endpoints (include it under ``/api/v1``)."""
    router = APIRouter(default_response_class=JSONBody)
    versions = _Versions(service)
    max_depth = settings.max_json_depth

    @router.post("/documents", status_code=201, response_model=results.CreateDocumentResult,
                 tags=["documents"], summary="Create a document from the schema's defaults",
                 responses=_errors(422, 500), operation_id="document_create",
                 openapi_extra=_request_body({"type": "object"}, required=False, example={}))
    def create_document(request: Request) -> JSONBody:
        doc_id, content, meta, report = service.create_document()
        uri = str(request.url_for("document_read_node", doc_id=doc_id))
        body = results.create_document_result(doc_id, content, meta, report, uri)
        return JSONBody(body, status_code=201, headers={**_etag(meta.version), "Location": uri})

    @router.get("/documents", response_model=results.ListDocumentsResult, tags=["documents"],
                summary="List documents", responses=_errors(400), operation_id="document_list")
    def list_documents(
        limit: Annotated[int, Query(description="At most this many documents (1 to 1000).")] = 100,
        offset: Annotated[int, Query(description="Skip this many documents.")] = 0,
    ) -> JSONBody:
        listing = service.list_documents(limit=limit, offset=offset)
        return JSONBody(results.list_documents_result(listing, service.schema_uri))

    @router.get("/documents/{doc_id}", response_model=results.ReadNodeResult, tags=["documents"],
                summary="Read a node", responses=_errors(400, 404), operation_id="document_read_node",
                name="document_read_node")
    def read_node(doc_id: str,
                  path: Annotated[str, Query(description=_PATH_READ)] = "/") -> JSONBody:
        read = service.read_node(doc_id, path)
        return JSONBody(results.read_node_result(read), headers=_etag(read.version))

    @router.put("/documents/{doc_id}", response_model=results.UpdateNodeResult, tags=["documents"],
                summary="Replace a node", responses=_errors(400, 404, 408, 409, 413, 422),
                operation_id="document_update_node", openapi_extra=_NODE_BODY)
    def update_node(doc_id: str, raw: RawBody,
                    path: Annotated[str, Query(description=_PATH_WRITE)],
                    dry_run: Annotated[bool, Query(description=_DRY)] = False,
                    if_match: Annotated[str | None, Header(description=_IF_MATCH)] = None) -> JSONBody:
        body = _Body(raw, max_depth, required=True)
        node_data = body.argument("node_data")
        version = versions.resolve(doc_id, body, if_match)
        result = service.update_node(doc_id, path, node_data, version, dry_run=body.dry_run(dry_run))
        return _write_response(results.update_node_result(result))

    @router.post("/documents/{doc_id}/nodes", status_code=201, response_model=results.CreateNodeResult,
                 tags=["documents"], summary="Create a node (a path ending in /- appends to an array)",
                 responses=_errors(400, 404, 408, 409, 413, 422), operation_id="document_create_node",
                 openapi_extra=_NODE_BODY)
    def create_node(doc_id: str, raw: RawBody,
                    path: Annotated[str, Query(description=_PATH_WRITE + " End it in /- to append.")],
                    dry_run: Annotated[bool, Query(description=_DRY)] = False,
                    if_match: Annotated[str | None, Header(description=_IF_MATCH)] = None) -> JSONBody:
        body = _Body(raw, max_depth, required=True)
        node_data = body.argument("node_data")
        version = versions.resolve(doc_id, body, if_match)
        result = service.create_node(doc_id, path, node_data, version, dry_run=body.dry_run(dry_run))
        return _write_response(results.create_node_result(result), 201)

    @router.delete("/documents/{doc_id}/nodes", response_model=results.DeleteNodeResult, tags=["documents"],
                   summary="Delete a node", responses=_errors(400, 404, 408, 409, 422),
                   operation_id="document_delete_node", openapi_extra=_DELETE_BODY)
    def delete_node(doc_id: str, raw: RawBody,
                    path: Annotated[str, Query(description=_PATH_WRITE)],
                    dry_run: Annotated[bool, Query(description=_DRY)] = False,
                    if_match: Annotated[str | None, Header(description=_IF_MATCH)] = None) -> JSONBody:
        body = _Body(raw, max_depth, required=False)
        version = versions.resolve(doc_id, body, if_match)
        result = service.delete_node(doc_id, path, version, dry_run=body.dry_run(dry_run))
        return _write_response(results.delete_node_result(result))

    @router.post("/documents/{doc_id}/patch", response_model=results.ApplyPatchResult, tags=["documents"],
                 summary="Apply an RFC 6902 JSON Patch atomically",
                 responses=_errors(400, 404, 408, 409, 413, 422), operation_id="document_apply_patch",
                 openapi_extra=_PATCH_BODY)
    def apply_patch(doc_id: str, raw: RawBody,
                    dry_run: Annotated[bool, Query(description=_DRY)] = False,
                    if_match: Annotated[str | None, Header(description=_IF_MATCH)] = None) -> JSONBody:
        body = _Body(raw, max_depth, required=True)
        if isinstance(body.value, list):
            patch: Any = body.value
            check_depth(patch, max_depth, "patch", raw)
        else:
            patch = body.argument("patch")
        version = versions.resolve(doc_id, body, if_match)
        result = service.apply_patch(doc_id, patch, version, dry_run=body.dry_run(dry_run))
        return _write_response(results.patch_result(result))

    @router.get("/schema", response_model=results.RootSchemaResult, tags=["schema"],
                summary="The root schema", operation_id="schema_get_root", responses=_errors(400))
    def root_schema(
        dereferenced: Annotated[bool, Query(description="Resolve every $ref (cycles stay as $ref).")] = True,
    ) -> JSONBody:
        root = service.root_schema(dereferenced=dereferenced)
        return JSONBody(results.root_schema_result(service.schema_uri, root, service.schema.schema_version))

    @router.get("/schema/node", response_model=results.NodeSchemaResult, tags=["schema"],
                summary="The schema of a node", operation_id="schema_get_node", responses=_errors(400, 404))
    def node_schema(
        path: Annotated[str, Query(description=_PATH_READ)] = "/",
        doc_id: Annotated[str | None, Query(description="Also tell whether the node exists in this document.")]
        = None,
        dereferenced: Annotated[bool, Query(description="Resolve every $ref (cycles stay as $ref).")] = True,
    ) -> JSONBody:
        node = service.node_schema(path, doc_id, dereferenced=dereferenced)
        return JSONBody(results.node_schema_result(node))

    return router
