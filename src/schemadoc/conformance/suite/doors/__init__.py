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

from ...target import BOOK_SCHEMA
from .base import (
    CALL_TIMEOUT,
    CORE_TOOLS,
    DOOR_NAMES,
    NA_PREFIX,
    OBSERVED,
    OPTIONAL_TOOLS,
    REMOTE_URL,
    TARGET,
    TOOLS,
    TRANSCRIPT,
    Door,
    NotRepresentable,
    Observations,
    Outcome,
    extension_arguments,
    not_applicable,
    offers,
)
from .documents import ULID_PATTERN, UNKNOWN_DOC_ID, Doc, book_doc, chapter, failed, new_doc, ok, sample_book
from .opening import door_on_schema, in_process, in_process_service, open_door, stdio_server
from .over_mcp import McpDoor, mcp_door, supports, text_of, unsupported
from .over_rest import EventStream, RestDoor, rest_door

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
