"""What the server notes of the request it is answering: its request id, door, operation, the document and version
it touched, the token that was admitted and the error it answered with (:class:`RequestRecord`).

The record of the request in hand is in a context variable (:data:`CURRENT`), set by the outermost layer
(:class:`~schemadoc.interfaces.http.request_log.RequestObserver`) or, over stdio, by the MCP door for each tool call.
The context is copied into worker threads and into the MCP SDK's handler tasks, so whatever answers the request finds it
and adds to it. Every error body of every door is made by :func:`error_object`, which adds the request id to it and
notes the error on the record: the one place error bodies get their ``request_id``.
"""

from __future__ import annotations

import re
import uuid
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

from schemadoc.errors import SchemaDocError

__all__ = ["CURRENT", "MAX_REQUEST_ID", "REQUEST_FIELDS", "RequestRecord", "current_request_id", "error_object",
           "new_request_id", "note_result", "request_id_of"]

MAX_REQUEST_ID: Final = 128
"""The longest ``X-Request-ID`` taken as it is sent."""
REQUEST_FIELDS: Final = "request"
"""The attribute of a request line's log record holding its members (the JSON log format writes them)."""
_REQUEST_ID: Final = re.compile(rb"[\x21-\x7e]{1,%d}" % MAX_REQUEST_ID)
"""A request id sent in: 1 to 128 printable ASCII characters, no space."""
_TRACEPARENT: Final = re.compile(rb"([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?")
"""W3C Trace Context ``traceparent``: version, trace id, parent id, flags (a later version may append members)."""


@dataclass(slots=True)
class RequestRecord:
    """What is known of one request (an HTTP request, or an MCP tool call over stdio) while it is answered."""

    request_id: str
    door: str
    """``rest``, ``mcp`` (MCP over HTTP) or ``stdio``."""
    method: str = ""
    path: str = ""
    operation: str | None = None
    """The catalogue operation (or MCP tool) that ran; ``None`` until one did."""
    tool: str | None = None
    """The MCP tool called, as the client named it (bounded), known or not."""
    doc_id: str | None = None
    version: int | None = None
    """The document's version the answer names: the new version for a write."""
    dry_run: bool = False
    token: str | None = None
    """The name of the admitted token (never its secret)."""
    status: int | None = None
    error: SchemaDocError | None = None
    """The catalogued error answered, if any (its code, and the violations of a refused write)."""
    streamed: bool = False
    """The answer is an event stream (``text/event-stream``): its duration is how long the client stayed."""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def code(self) -> str:
        return self.error.code if self.error is not None else ""


CURRENT: ContextVar[RequestRecord | None] = ContextVar("schemadoc_request", default=None)
"""The record of the request being answered in this context, if any."""


def new_request_id() -> str:
    """A generated request id: 32 lower-case hexadecimal digits (as a W3C trace id)."""
    return uuid.uuid4().hex


def request_id_of(headers: Any) -> str:
    """The request id of a request with these ASGI ``headers``: its ``X-Request-ID`` when that is 1 to 128
    printable ASCII characters, else the trace id of a valid ``traceparent``, else a generated one."""
    sent: bytes | None = None
    traceparent: bytes | None = None
    for name, value in headers:
        if name == b"x-request-id":
            sent = bytes(value).strip()
        elif name == b"traceparent":
            traceparent = bytes(value)
    if sent is not None and _REQUEST_ID.fullmatch(sent):
        return sent.decode("ascii")
    if traceparent is not None:
        found = _TRACEPARENT.fullmatch(bytes(traceparent).strip())
        if found is not None and found[1] != b"ff" and found[2] != b"0" * 32 and (found[1] != b"00" or not found[5]):
            return bytes(found[2]).decode("ascii")
    return new_request_id()


def current_request_id() -> str | None:
    record = CURRENT.get()
    return record.request_id if record is not None else None


def error_object(error: SchemaDocError) -> dict[str, Any]:
    """``error.to_dict()`` with the request id of the request in hand (``error.request_id``), the error noted on its
    record: every door makes its error bodies here."""
    body = error.to_dict()
    record = CURRENT.get()
    if record is not None:
        body["error"]["request_id"] = record.request_id
        record.error = error
    return body


def note_result(record: RequestRecord | None, result: Any) -> None:
    """Note the document and version a result names (a write's new version), and whether it was a dry run."""
    if record is None:
        return
    members = getattr(result, "__dict__", None)
    if not isinstance(members, dict):
        return
    doc_id = members.get("doc_id")
    if isinstance(doc_id, str):
        record.doc_id = doc_id
    version = members.get("version", members.get("current_version"))
    if isinstance(version, int) and not isinstance(version, bool):
        record.version = version
    if members.get("dry_run") is True:
        record.dry_run = True
