"""What the REST door reads and writes on the wire: JSON bodies in, result bodies and error objects out.

Request bodies are read as bytes and parsed with orjson (not by FastAPI), so that every argument
goes through the operation catalogue's one check; responses are the result models serialised with
orjson without copying the (possibly 100 MB) document content. The JSON reading and writing itself is
:mod:`schemadoc.interfaces.http.bodies` (re-exported here), which the guards in front of ``/mcp`` share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from schemadoc.config import Settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.http import feeds
from schemadoc.interfaces.http.bodies import READ_BODY, check_depth, dump_body, parse_json
from schemadoc.interfaces.http.request_context import error_object
from schemadoc.interfaces.http.subscribers import SubscriberSlots
from schemadoc.service import DocumentService

__all__ = ["READ_BODY", "REST_STATE", "ErrorBody", "ErrorObject", "JSONBody", "Rest", "RestState", "check_depth",
           "dump_body", "error_response", "errors", "errors_of_a_stream", "parse_json", "rest_state", "state_of"]


# -- responses -------------------------------------------------------------------------------


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
    return JSONBody(error_object(error), status_code=error.status, headers=headers)


class ErrorObject(BaseModel):
    code: str = Field(description="Stable kebab-case code from the error catalog (GET /api/v1/errors, schema://errors).")
    category: str = Field(description="The HTTP status as a string, e.g. '409'.")
    message: str = Field(description="What went wrong, for a person or an agent.")
    details: dict[str, Any] = Field(description="Data to act on: the path, the current version, every violation, …")
    remediation: str = Field(description="How to fix it.")
    request_id: str | None = Field(None, description="The request's id (its X-Request-ID header), as the server "
                                                     "log names it.")


class ErrorBody(BaseModel):
    """Every failure, on every endpoint, has this shape (the same as an MCP tool error's text)."""

    error: ErrorObject


def errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
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


def errors_of_a_stream(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """:func:`_errors` for a route whose success is not JSON (a model would be filed under its media type)."""
    body = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    return {status: {"description": response["description"], "content": body}
            for status, response in errors(*statuses).items()}


# -- what the endpoints of one application work on ---------------------------------------------


@dataclass(frozen=True)
class RestState:
    """What the REST endpoints of one application work on: its service, limits and subscriber slots.

    Kept in ``app.state.schemadoc_rest``; the endpoints receive it as their ``rest`` argument.
    """

    service: DocumentService
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
    return RestState(service, settings.max_json_depth, slots, heartbeat_seconds)


REST_STATE = "schemadoc_rest"
"""The ``app.state`` attribute holding the application's :class:`RestState`."""

def state_of(request: Request) -> RestState:
    state: RestState = getattr(request.app.state, REST_STATE)
    return state


Rest = Annotated[RestState, Depends(state_of)]
