"""What the REST door reads and writes on the wire: JSON bodies in, result bodies and error objects out.

Request bodies are read as bytes and parsed with orjson here (not by FastAPI), so that every
argument goes through the operation catalogue's one check; responses are the result models
serialised with orjson without copying the (possibly 100 MB) document content.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from typing import Annotated, Any

import orjson
from fastapi import Depends, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field

from schemadoc.config import Settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.http import feeds
from schemadoc.interfaces.http.request_context import error_object
from schemadoc.interfaces.http.subscribers import SubscriberSlots
from schemadoc.ops.limits import deeper_than
from schemadoc.service import DocumentService

__all__ = ["READ_BODY", "REST_STATE", "ErrorBody", "ErrorObject", "JSONBody", "Rest", "RestState", "check_depth",
           "dump_body", "error_response", "errors", "errors_of_a_stream", "parse_json", "rest_state", "state_of"]


# -- responses -------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A result model as plain JSON data, sharing (not copying) the document content it holds.

    A model's ``__dict__`` holds its fields in declaration order (its extra members apart), which is
    what ``model_fields`` would list, without pydantic's attribute machinery."""
    if isinstance(value, BaseModel):
        out = {name: _plain(member) if isinstance(member, (BaseModel, list)) else member
               for name, member in value.__dict__.items()}
        extra = value.__pydantic_extra__
        if extra:
            out.update(extra)
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


# -- requests ----------------------------------------------------------------------------------


def parse_json(raw: bytes, argument: str = "body") -> Any:
    """The JSON value of ``raw``: ``invalid-request`` when it is not JSON (or holds a number the server cannot
    represent), ``request-too-deep`` past orjson's limit."""
    exact = _DIGIT_RUN in raw.translate(_DIGITS)
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        if "depth" in str(error) or "recursion" in str(error):
            raise SchemaDocError("request-too-deep", f"The request {argument} is nested too deeply to parse.",
                                 {"argument": argument}) from None
        if not (exact and "infinity" in str(error)):  # orjson reads an integer of 309 digits and more as infinite
            raise SchemaDocError("invalid-request", f"The request {argument} is not valid JSON: {error}.",
                                 {"argument": argument, "reason": str(error)}) from None
    if exact:
        # orjson reads integers beyond 64 bits as floats; the stdlib keeps them exact, as MCP does
        try:
            value = json.loads(raw, parse_constant=_no_constant, parse_int=functools.partial(_exact_int, argument),
                               parse_float=functools.partial(_finite, argument))
        except RecursionError:
            raise SchemaDocError("request-too-deep", f"The request {argument} is nested too deeply to parse.",
                                 {"argument": argument}) from None
    return value


_LONGEST_INTEGER = 4300
"""The most digits an integer may have (Python's own limit on reading one from text)."""


def _exact_int(argument: str, text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > _LONGEST_INTEGER:
        raise SchemaDocError("invalid-request", f"The request {argument} holds an integer of {digits:,} digits; the "
                                                f"server reads integers of at most {_LONGEST_INTEGER:,} digits.",
                             {"argument": argument, "reason": "integer too long", "digits": digits})
    return int(text)


def _finite(argument: str, text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise SchemaDocError("invalid-request", f"The request {argument} holds a number beyond the range of a double "
                                                f"({text[:40]}).", {"argument": argument, "reason": "number too large"})
    return number


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

READ_BODY = "schemadoc.body"
"""The scope key under which the body limits leave the request body they read (it is replayed too), so that
the REST door does not read it a second time through Starlette's stream."""


def state_of(request: Request) -> RestState:
    state: RestState = getattr(request.app.state, REST_STATE)
    return state


Rest = Annotated[RestState, Depends(state_of)]
