"""The REST routes that are not operations of the catalogue: a document's live event stream, a whole past
version as raw JSON, and the error catalog.

The event stream is Server-Sent Events over :mod:`schemadoc.interfaces.http.feeds` (the MCP door
publishes the same changes as resource notifications); a past version is the MCP resource
``schema://{doc_id}/versions/{n}``; the catalog is the MCP resource ``schema://errors``.
"""

from __future__ import annotations

import functools
from collections.abc import AsyncIterator, Callable
from typing import Annotated, Any

import anyio
from fastapi import APIRouter, Header, Path, Query, Request
from fastapi.responses import Response
from sse_starlette import EventSourceResponse, ServerSentEvent
from starlette.types import Receive, Scope, Send

from schemadoc.errors import CATALOG
from schemadoc.interfaces.http import feeds
from schemadoc.interfaces.http.shutdown import RETRY_MILLISECONDS, STOPPING
from schemadoc.interfaces.rest.wire import JSONBody, Rest, dump_body, errors, errors_of_a_stream
from schemadoc.operations import results
from schemadoc.operations.arguments import ULID_PATTERN
from schemadoc.storage.base import check_doc_id

__all__ = ["add_feed_routes"]

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
                         "(data = the error object; `subscriber-too-slow` when the reader left more than "
                         "subscriber_buffer_bytes of changes unread, `shutting-down` with a `retry:` field when "
                         "the server stops: reconnect with Last-Event-ID = details.last_version).",
          "content": {"text/event-stream": {"schema": _SSE_EVENT, "example": _SSE_EXAMPLE}}},
    **errors_of_a_stream(400, 404, 503),
}
_RAW_DOCUMENT_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"description": "The whole document as it was at that version (the ETag is the version).",
          "content": {"application/json": {"schema": {"description": "Any JSON value."}}}},
    **errors(400, 404),
}

_FINAL_EVENT_SECONDS = 1.0
"""How long a stream may take to send its final event once the server stops, before it is cut."""
_LAST_EVENT_ID = "Sent by EventSource clients when they reconnect: resume after this version (wins over since)."
DocIdPath = Annotated[str, Path(description="The document's id (a ULID returned by document_create).",
                                json_schema_extra={"pattern": ULID_PATTERN})]


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
            data = item.data if item.data is not None else dump_body(item.body)
            yield ServerSentEvent(data.decode(), event=item.kind, id=event_id, retry=item.retry_ms, sep="\n")


def add_feed_routes(router: APIRouter) -> None:
    """Add the event stream, the raw past version and the error catalog to ``router``."""

    @router.get("/documents/{doc_id}/versions/{version}", response_model=None, tags=["history"],
                summary="The whole document at a past version", responses=_RAW_DOCUMENT_RESPONSES,
                operation_id="document_read_version")
    def read_version(rest: Rest, doc_id: DocIdPath,
                     version: Annotated[int, Path(description="The version, from 1 to the current one.",
                                                             json_schema_extra={"minimum": 1})]) -> JSONBody:
        content = rest.service.read_version(doc_id, version)
        return JSONBody(content, headers={"ETag": f'"{version}"'})

    @router.get("/documents/{doc_id}/events", response_model=None, response_class=_EventStream, tags=["feeds"],
                summary="Server-Sent Events: every version from the journal, then each new one as it commits",
                description="Starts after `since` (default: the current version, i.e. only what commits from "
                            "now on; 0 for the whole history). A client reconnecting with `Last-Event-ID` "
                            "resumes right after that version: nothing is missed, nothing is sent twice. "
                            "A deleted document's stream stays open (an undelete arrives as a version); "
                            "a purge ends it.",
                responses=_EVENTS_RESPONSES, operation_id="document_events")
    async def document_events(rest: Rest, request: Request,
        doc_id: DocIdPath,
        since: Annotated[int | None, Query(description="Send the versions after this one first.",
                                           json_schema_extra={"minimum": 0})] = None,
        last_event_id: Annotated[str | None, Header(alias="Last-Event-ID", description=_LAST_EVENT_ID,
                                                    json_schema_extra={"pattern": "^[0-9]*$"})] = None,
    ) -> Response:
        start = await anyio.to_thread.run_sync(
            functools.partial(feeds.start_version, rest.service, doc_id, since, last_event_id))
        client = request.client.host if request.client is not None else None
        # too-many-subscribers: an ordinary error response
        release = rest.slots.acquire(check_doc_id(doc_id), client)
        try:
            events = feeds.document_events(rest.service, doc_id, start, heartbeat_seconds=rest.heartbeat_seconds,
                                           buffer_bytes=rest.slots.buffer_bytes, encode=dump_body,
                                           stopping=getattr(request.app.state, STOPPING, None),
                                           retry_ms=RETRY_MILLISECONDS)
            # the server's stop ends the feed with its final event; sse_starlette's own drain (which cancels the
            # stream when uvicorn stops) waits that long for it
            stream = _EventStream(_server_sent(events), ping=0, sep="\n", shutdown_event=anyio.Event(),
                                  shutdown_grace_period=_FINAL_EVENT_SECONDS)
            stream.release = release
            return stream
        except BaseException:
            release()
            raise

    @router.get("/errors", response_model=results.ErrorCatalogResult, tags=["schema"],
                summary="The error catalog", operation_id="errors_catalog",
                description="Every error code a route or MCP tool can return, with its HTTP status, typical "
                            "causes and remediation: the list the MCP resource schema://errors holds.")
    async def error_catalog() -> JSONBody:
        return JSONBody({"success": True, "errors": [entry.as_dict() for entry in CATALOG.values()]})
