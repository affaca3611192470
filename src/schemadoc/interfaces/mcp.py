"""The MCP door: tools, resources and prompts over one :class:`DocumentService`.

``build_mcp_server(service)`` returns an ``MCPServer`` (mcp 2.x) that serves both protocol
eras, on stdio (``server.run("stdio")``) or mounted in the ASGI app
(``server.streamable_http_app()``).

Tools return the bodies of :mod:`schemadoc.interfaces.results` as structured content (and
the same JSON as text); their output schemas are those models. A failed call is an
``isError`` result whose only content is the JSON of the full error object
(``{"error": {...}}``) and which carries no structured content. Arguments are checked
strictly and without the SDK's JSON-string pre-parsing (which would turn the string
``"[1]"`` meant for a string field into a list), so the same request behaves the same way
through MCP and REST; a missing, unknown or wrongly typed argument is ``invalid-request``.

Besides the node tools, the journal is open to agents: ``document_history``,
``document_read_node`` with ``at_version``, ``document_diff``, ``document_revert`` (undo),
``document_merge_patch`` (RFC 7396), ``document_delete``/``document_undelete``/``document_purge``
and the cross-document ``document_changes`` feed.

Resources: ``schema://{doc_id}`` (every document; listed by ``resources/list``),
``schema://{doc_id}/versions/{n}`` (version n of a document), ``schema://schema`` (the
configured schema) and ``schema://errors`` (the error catalog). Change notifications reach
both eras through :class:`ChangeNotifier` (``server.notifier``).
"""

from __future__ import annotations

import contextvars
import functools
import json
import logging
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Annotated, Any, cast

import anyio.to_thread
import orjson
from mcp import MCPError
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
    ToolAnnotations,
)
from pydantic import BaseModel, Field, ValidationError, WithJsonSchema

from schemadoc import __version__
from schemadoc.errors import CATALOG, SchemaDocError
from schemadoc.interfaces.budget import (
    MCP_RESULT_BUDGET_BYTES,
    fit_error,
    fit_model,
    fit_result,
    fit_write,
    read_budget,
)
from schemadoc.interfaces.mcp_notify import ChangeNotifier, document_uri
from schemadoc.interfaces.mcp_prompts import PromptArgumentError, fill_document_text, fix_validation_errors_text
from schemadoc.interfaces.results import (
    ApplyPatchResult,
    ChangesResult,
    CreateDocumentResult,
    CreateNodeResult,
    DeleteNodeResult,
    DiffResult,
    DocumentStateResult,
    HistoryResult,
    ListDocumentsResult,
    MergePatchResult,
    MoveNodeResult,
    NextIncompleteResult,
    NodeSchemaResult,
    OutlineResult,
    PurgeResult,
    ReadNodeResult,
    RenderResult,
    RevertResult,
    RootSchemaResult,
    SearchResult,
    StatsResult,
    UpdateNodeResult,
    changes_result,
    create_document_result,
    create_node_result,
    delete_node_result,
    diff_result,
    document_state_result,
    history_result,
    list_documents_result,
    merge_patch_result,
    move_node_result,
    next_incomplete_result,
    node_schema_result,
    outline_result,
    patch_result,
    purge_result,
    read_view_result,
    render_result,
    revert_result,
    root_schema_result,
    search_result,
    stats_result,
    update_node_result,
)
from schemadoc.interfaces.subscribers import SubscriberSlots
from schemadoc.ops.limits import ArgumentScan
from schemadoc.service import DocumentService, check_doc_id

__all__ = ["SchemaDocMCPServer", "build_mcp_server", "error_result", "success_result", "version_uri"]

log = logging.getLogger("schemadoc.mcp")

SERVER_NAME = "schemadoc"
INSTRUCTIONS = (
    "schemadoc keeps JSON documents valid against one JSON Schema. Address nodes by RFC 6901 JSON "
    "Pointer ('/' is the whole document). Every write needs the document's current `version` (from "
    "the last read or write) and is validated against the whole schema: an invalid write is refused "
    "and changes nothing. Failed calls return an error object with `code`, `message`, `details` and "
    "`remediation`; the catalog is the resource schema://errors. Documents are resources at "
    "schema://{doc_id}; the schema is schema://schema. Every version is kept: document_history lists "
    "them, document_read_node with at_version and schema://{doc_id}/versions/{n} read them, document_diff "
    "compares two, and document_revert undoes changes by making a new version equal to an old one."
)

# -- argument types (the input schemas come from these) -----------------------------------------

DocId = Annotated[str, Field(
    strict=True,
    description="The document's id: the 26-character ULID returned by document_create or document_list.")]
NodePath = Annotated[str, Field(
    strict=True,
    description="RFC 6901 JSON Pointer to the node: '/' is the whole document, '/chapters/0/title' a member "
                "of an array item. Escape '/' in a key as '~1' and '~' as '~0'. A negative array index counts "
                "from the end ('/chapters/-1' is the last chapter).")]
NewNodePath = Annotated[str, Field(
    strict=True,
    description="RFC 6901 JSON Pointer of the node to create: a new object member ('/title'), an array index "
                "to insert at ('/chapters/0'), or '-' to append to an array ('/chapters/-'). The parent "
                "must exist.")]
NodeData = Annotated[Any, Field(
    description="The node's new JSON value (object, array, string, number, boolean or null). It must fit "
                "the schema at node_path; check it with schema_get_node.")]
Version = Annotated[int, Field(
    strict=True, ge=1,
    description="The document version you last read or wrote (optimistic locking). If the document has "
                "moved on, the write fails with version-conflict and details.actual_version.")]
DryRun = Annotated[bool, Field(
    strict=True,
    description="true: compile and validate the write and return the result without applying it "
                "(the version does not change).")]
Patch = Annotated[Any, WithJsonSchema({
    "type": "array", "items": {"type": "object"},
    "description": "An RFC 6902 JSON Patch: a list of operations such as {\"op\": \"add\", \"path\": \"/tags/-\", "
                   "\"value\": \"x\"}; ops add, remove, replace, move, copy and test. All operations apply "
                   "atomically and the result is validated once. A malformed patch fails with patch-invalid."})]
Limit = Annotated[int, Field(strict=True, ge=1, le=1000, description="How many documents to return (1-1000).")]
Offset = Annotated[int, Field(strict=True, ge=0, description="How many documents to skip (for paging).")]
Dereferenced = Annotated[bool, Field(
    strict=True,
    description="true: resolve $ref so the schema is self-contained; false: return it as written.")]
OptionalDocId = Annotated[str | None, Field(
    strict=True,
    description="Optional document id: when given, the result also says whether the node exists there.")]
AtVersion = Annotated[int | None, Field(
    strict=True, ge=1,
    description="Optional past version to read (1 = as created; see document_history). Omit it to read the "
                "current document. A version the document does not have fails with version-not-found.")]
SinceVersion = Annotated[int, Field(
    strict=True, ge=0,
    description="Return the versions after this one (0 = from the first); pass the previous page's "
                "next_since_version to get the next page.")]
HistoryLimit = Annotated[int, Field(strict=True, ge=1, le=1000,
                                    description="How many versions to return (1-1000).")]
FromVersion = Annotated[int, Field(strict=True, ge=1, description="The version to compare from (1 or more).")]
ToVersion = Annotated[int, Field(strict=True, ge=1, description="The version to compare to (1 or more).")]
RevertTarget = Annotated[int, Field(
    strict=True, ge=1,
    description="The earlier version whose content the document should get back (see document_history).")]
MergePatch = Annotated[Any, Field(
    description="An RFC 7396 JSON Merge Patch for the node: an object whose members are set (objects merge "
                "recursively, arrays and other values replace), with null removing a member; any other "
                "JSON value replaces the node.")]
Cursor = Annotated[int, Field(
    strict=True, ge=0,
    description="Return the changes committed after this cursor: 0 for everything, else the next_cursor of "
                "your previous call.")]
ChangesLimit = Annotated[int, Field(strict=True, ge=1, le=1000, description="How many changes to return (1-1000).")]
MaxDepth = Annotated[int | None, Field(
    strict=True, ge=0, le=255,
    description="Show this many container levels below the node; deeper containers become stubs "
                '{"$stub": true, "type", "count", "size_bytes", "pointer"} (0: the node itself is a stub).')]
WindowOffset = Annotated[int, Field(
    strict=True, ge=0, description="Skip this many of the node's members, items (or characters of a string).")]
WindowLimit = Annotated[int | None, Field(
    strict=True, ge=1, description="Show at most this many of the node's members, items or characters.")]
MaxBytes = Annotated[int | None, Field(
    strict=True, ge=512,
    description="Keep the view within this many bytes of JSON (capped by the 40,000-byte result budget).")]
OutlineDepth = Annotated[int, Field(strict=True, ge=0, le=32,
                                    description="How many levels of members and items to list (0-32).")]
IncompleteLimit = Annotated[int, Field(strict=True, ge=1, le=100, description="How many places to return (1-100).")]
OptionalNodePath = Annotated[str | None, Field(
    strict=True, description="Only search below this JSON Pointer (in each document that has it).")]
DocIds = Annotated[list[str] | None, Field(description="Only search these documents (default: all).")]
Query = Annotated[str, Field(strict=True, min_length=1, description="Text to find in string values "
                                                                     "(case-insensitive).")]
SearchLimit = Annotated[int, Field(strict=True, ge=1, le=100, description="How many hits to return (1-100).")]
SearchCursor = Annotated[int, Field(strict=True, ge=0, description="0 for the first page, else the next_cursor "
                                                                  "of the previous one.")]
RenderFormat = Annotated[str, Field(strict=True, description="Only 'markdown'.")]
FromPath = Annotated[str, Field(strict=True, description="RFC 6901 JSON Pointer of the node to move.")]
ToPath = Annotated[str, Field(
    strict=True, description="Where it goes: a new member, an array index to insert at, or '/-' to append "
                             "(inside the same array this reorders).")]

# -- tool descriptions (written for agents) -----------------------------------------------------

_VERSION_NOTE = (" Pass the document's current `version`; the result carries the new one for your next "
                 "write. The whole document is validated: if the change would make it invalid, the call "
                 "fails with validation-failed listing every violation (details.violations), and nothing "
                 "changes. Use dry_run=true to try a write first.")

DESCRIPTIONS: dict[str, str] = {
    "document_create": (
        "Create a new document from the schema's defaults and return its doc_id, version 1 and initial "
        "content. Use it once before filling a document; then add content with document_create_node and "
        "document_update_node (the fill-document prompt walks through it).\n"
        "Example: document_create {}"),
    "document_read_node": (
        "Read the JSON value at one node of a document, with the document's current `version` (needed "
        "by your next write) and the node's JSON type. Use it before writing, and to inspect a subtree "
        "without loading the whole document (the whole document is also the resource schema://{doc_id}). "
        "A missing path fails with path-not-found, whose details name the deepest existing ancestor. "
        "Pass at_version to read the node as it was at a past version (see document_history); the "
        "result's `version` is then that past version, so take the current one from a read without "
        "at_version before writing.\n"
        'Example: document_read_node {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "node_path": "/chapters/0"}\n'
        'Example: document_read_node {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "node_path": "/title", '
        '"at_version": 2}'),
    "document_update_node": (
        "Replace the value of an existing node (use '/' to replace the whole document)." + _VERSION_NOTE
        + " To add a member or array item that does not exist yet, use document_create_node.\n"
        'Example: document_update_node {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "node_path": "/title", '
        '"node_data": "A New Title", "version": 3}'),
    "document_create_node": (
        "Create a node that does not exist yet: a new object member, an array item inserted at an index, "
        "or an item appended with a path ending in '/-'. The parent must exist (create ancestors first); "
        "an existing member fails with conflict (use document_update_node instead). Include every "
        "member the new node's own schema requires." + _VERSION_NOTE + "\n"
        'Example: document_create_node {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "node_path": "/chapters/-", '
        '"node_data": {"title": "Intro", "pages": 12}, "version": 4}'),
    "document_delete_node": (
        "Delete an existing node (an object member or an array item; later items shift down). The root "
        "cannot be deleted. Deleting something the schema requires fails with validation-failed."
        + _VERSION_NOTE + "\n"
        'Example: document_delete_node {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "node_path": "/chapters/2", '
        '"version": 5}'),
    "document_apply_patch": (
        "Apply an RFC 6902 JSON Patch (add, remove, replace, move, copy, test) as ONE atomic write: all "
        "operations succeed together or nothing changes. Use it for changes that are only valid together "
        "(e.g. renaming a required member, or several fixes at once)." + _VERSION_NOTE + "\n"
        'Example: document_apply_patch {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "patch": [{"op": "test", '
        '"path": "/title", "value": "Draft"}, {"op": "replace", "path": "/title", "value": "Final"}], '
        '"version": 6}'),
    "document_list": (
        "List the documents on this server (doc_id, version, created/modified times, size), oldest first, "
        "a page at a time; `has_more` says whether to ask for the next page with a larger offset.\n"
        'Example: document_list {"limit": 20, "offset": 0}'),
    "schema_get_root": (
        "Return the JSON Schema every document on this server must satisfy (also the resource "
        "schema://schema). Read it before creating or filling documents.\n"
        'Example: schema_get_root {"dereferenced": true}'),
    "schema_get_node": (
        "Return the JSON Schema that applies at a node path (its type, required members, constraints), "
        "even where the document has no node yet. Use it before creating or updating a node; pass doc_id "
        "to also learn whether the node exists.\n"
        'Example: schema_get_node {"node_path": "/chapters/0", "doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V"}'),
    "document_history": (
        "List a document's versions from its journal, oldest first: for each, the version, the operation "
        "(create, update_node, create_node, delete_node, patch, merge_patch, revert, delete_document, "
        "undelete_document), the RFC 6902 patch that produced it and when. `current_version` is the "
        "version your next write must send. While `has_more` is true, call again with since_version = "
        "next_since_version. Use it to find the version to read (document_read_node with at_version), "
        "compare (document_diff) or return to (document_revert).\n"
        'Example: document_history {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "since_version": 0, "limit": 20}'),
    "document_diff": (
        "Return the RFC 6902 JSON Patch that turns version from_version of a document into version "
        "to_version; applied to from_version it gives to_version exactly. Either direction works: from a "
        "newer to an older version it is the patch that undoes the changes in between. A version the "
        "document does not have fails with version-not-found.\n"
        'Example: document_diff {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "from_version": 3, "to_version": 5}'),
    "document_revert": (
        "Undo: make a NEW version whose content equals an earlier version to_version. Nothing is "
        "rewritten: the versions in between stay in the history, and a revert can itself be reverted. "
        "The result's `patch` is what changed." + _VERSION_NOTE + "\n"
        'Example: document_revert {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "to_version": 4, "version": 7}'),
    "document_merge_patch": (
        "Change a node with an RFC 7396 JSON Merge Patch: members present in merge_patch are set "
        "(objects merge recursively), members set to null are removed, members left out stay as they "
        "are; arrays, and a merge_patch that is not an object, replace the value whole. Handy to change "
        "several members of an object at once without restating the rest. The merge patch is first "
        "checked against the node's schema and the result validated: a refusal is validation-failed listing "
        "every violation at once (details.violations), values the schema refuses and required members "
        "deleted alike." + _VERSION_NOTE
        + "\n"
        'Example: document_merge_patch {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "node_path": "/metadata", '
        '"merge_patch": {"status": "review", "isbn": null}, "version": 8}'),
    "document_delete": (
        "Delete a whole document. It is a soft delete, journaled as a new version: the document leaves "
        "document_list and resources/list, and reads and writes fail with document-not-found "
        "(details.deleted is true) until document_undelete restores it with its whole history. Pass the "
        "document's current `version`; if it has moved on, the call fails with version-conflict. To "
        "remove a node inside a document use document_delete_node; to erase a deleted document for good, "
        "document_purge.\n"
        'Example: document_delete {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "version": 9}'),
    "document_undelete": (
        "Restore a document deleted with document_delete, with its whole history, as a new version (the "
        "result carries it). A document that is not deleted fails with conflict; a purged one no longer "
        "exists (document-not-found).\n"
        'Example: document_undelete {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V"}'),
    "document_purge": (
        "Erase a deleted document and its whole history for good; this cannot be undone. Only a document "
        "deleted with document_delete can be purged: a live one fails with conflict.\n"
        'Example: document_purge {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V"}'),
    "document_changes": (
        "The change feed of every document on this server: each committed version (doc_id, version, "
        "operation, time) in commit order, after the cursor `since`. Poll it: start with since=0, then "
        "pass the `next_cursor` of each answer back as `since` to get only what was committed since. "
        "To be told about one document's changes instead of polling, subscribe to its resource "
        "schema://{doc_id}.\n"
        'Example: document_changes {"since": 0, "limit": 50}'),
}

_BUDGET_NOTE = (f" Results stay within {MCP_RESULT_BUDGET_BYTES:,} bytes of JSON: what does not fit is "
                "replaced by stubs or left for the next page, with truncated: true and where to go on.")

DESCRIPTIONS.update({
    "document_outline": (
        "The table of contents of a node: its members and items `depth` levels down, each with its pointer, "
        "type, member or item count, size in bytes, the schema's title and, for objects with a title or name "
        "member, that label; no other leaf values. Start here on a big document, then read the part you "
        "need with document_read_node." + _BUDGET_NOTE + "\n"
        'Example: document_outline {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "node_path": "/", "depth": 2}'),
    "document_next_incomplete": (
        "Where the document is valid but not finished by the schema's own words, breadth first in a stable "
        "order: optional properties that are absent, empty arrays whose items the schema describes, values "
        "still equal to their default. Each comes with its pointer, the schema of the value to write and, "
        "when one can be built, an example_call (document_create_node or document_update_node) that would "
        "fill it. Call it, fill the first place, repeat.\n"
        'Example: document_next_incomplete {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "limit": 5}'),
    "document_move_node": (
        "Move a node (RFC 6902 move): to another member or array position, or within one array to reorder "
        "it ('/chapters/-' appends)." + _VERSION_NOTE + "\n"
        'Example: document_move_node {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "from_path": "/chapters/3", '
        '"to_path": "/chapters/0", "version": 7}'),
    "document_search": (
        "Find text in the string values of documents (case-insensitive): each hit is a doc_id, the pointer "
        "of the string and a snippet around the match, oldest document first. Page with cursor = next_cursor."
        "\n"
        'Example: document_search {"query": "lighthouse", "limit": 10}'),
    "document_stats": (
        "Measure a document: its size in bytes, node counts by JSON type, depth, version and journal length.\n"
        'Example: document_stats {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V"}'),
    "document_render": (
        "A readable Markdown rendering of a node driven by the schema (titles as headings, arrays as lists), "
        "to review a draft. offset/limit choose which children of the node to render." + _BUDGET_NOTE + "\n"
        'Example: document_render {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "node_path": "/chapters/0"}'),
})
DESCRIPTIONS["document_read_node"] += (
    "\nBig nodes: max_depth shows that many levels (deeper containers become stubs with their type, count, "
    "size_bytes and pointer), offset/limit a window of the node's members or items, max_bytes a size cap."
    + _BUDGET_NOTE + "\n"
    'Example: document_read_node {"doc_id": "01JC6Y0Z8K9M2N3P4Q5R6S7T8V", "node_path": "/chapters", '
    '"offset": 20, "limit": 10, "max_depth": 1}')

_READ = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False)
_WRITE = ToolAnnotations(read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False)
_REPLACE = ToolAnnotations(read_only_hint=False, destructive_hint=True, idempotent_hint=False,
                           open_world_hint=False)

# -- results -----------------------------------------------------------------------------------


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
    return CallToolResult(content=[TextContent(type="text", text=_dumps(error.to_dict()))], is_error=True)


def _argument_error(tool: str, error: ValidationError) -> SchemaDocError:
    problems: list[dict[str, Any]] = []
    for item in error.errors(include_url=False, include_input=False):
        argument = ".".join(str(part) for part in item["loc"]) or "arguments"
        problem = "missing" if item["type"] == "missing" else "wrong-type-or-value"
        problems.append({"argument": argument, "problem": problem, "message": item["msg"]})
    summary = "; ".join(
        f"'{p['argument']}' is missing" if p["problem"] == "missing" else f"'{p['argument']}': {p['message']}"
        for p in problems)
    return SchemaDocError(
        "invalid-request", f"Invalid arguments for {tool}: {summary}.",
        {"tool": tool, "argument": problems[0]["argument"] if problems else None, "problems": problems},
        remediation=f"Send the arguments {tool}'s input schema declares, with those types (see tools/list).")


# -- the server --------------------------------------------------------------------------------


class SchemaDocMCPServer(MCPServer[Any]):
    """``MCPServer`` with schemadoc's tool-call, resource-list and prompt semantics.

    Attributes: ``service`` (the engine), ``notifier`` (:class:`ChangeNotifier`, whose
    ``bus`` feeds the modern era's listen streams).
    """

    def __init__(self, service: DocumentService, bus: SubscriptionBus, *, max_json_depth: int,
                 subscribers: SubscriberSlots | None = None, tools: list[Tool] | None = None) -> None:
        self.service = service
        self.notifier = ChangeNotifier(bus, slots=subscribers)
        self.max_json_depth = max_json_depth
        super().__init__(SERVER_NAME, title="schemadoc", version=__version__, instructions=INSTRUCTIONS,
                         subscriptions=bus, lifespan=_lifespan, tools=tools)

    @property
    def bus(self) -> SubscriptionBus:
        return self.notifier.bus

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        context: Context[Any, Any] | None = None) -> CallToolResult | InputRequiredResult:
        """Run a tool; every failure becomes an ``isError`` result carrying a catalogued error object."""
        tool = self._tool_manager.get_tool(name)
        if tool is None:
            known = sorted(t.name for t in self._tool_manager.list_tools())
            return error_result(SchemaDocError(
                "invalid-request", f"Unknown tool {name!r}.", {"tool": name, "tools": known},
                remediation="Call one of the tools tools/list returns."))
        try:
            scans = check_unicode(arguments, self.service)
            kwargs = _validate_arguments(tool, arguments)
            for argument in _FREE_FORM_ARGUMENTS & kwargs.keys():
                scan = scans.get(argument)
                if scan is None or scan.value is not kwargs[argument]:
                    scan = scans[argument] = self.service.scan_argument(kwargs[argument])
                scan.check_depth(self.max_json_depth, argument)
        except SchemaDocError as error:
            return error_result(error)

        def run() -> BaseModel:
            _SCANS.set(scans)  # this call's own context: the write reads the walk instead of walking again
            return self._within_budget(tool.fn(**kwargs), kwargs)

        try:
            body: BaseModel = await anyio.to_thread.run_sync(contextvars.copy_context().run, run)
            return success_result(body)
        except SchemaDocError as error:
            log.info("tool %s failed: %s", name, error)
            return error_result(SchemaDocError(error.code, error.message,
                                               fit_error(error.to_dict())["error"]["details"], error.remediation))
        except Exception:
            log.exception("tool %s raised an unexpected exception", name)
            return error_result(SchemaDocError(
                "internal-error", f"{name} failed unexpectedly; the server log has the details.", {"tool": name}))

    def _within_budget(self, body: BaseModel, arguments: dict[str, Any]) -> BaseModel:
        """The result, fitted to the MCP budget (see :mod:`schemadoc.interfaces.budget`)."""
        if "patch" in type(body).model_fields and "validation_report" in type(body).model_fields:
            body = fit_write(body, self.service.sizes)
        else:
            body = fit_model(body, self.service.sizes)
        structured = body.model_dump(mode="json")
        fitted = fit_result(structured, arguments)
        if fitted is structured:
            return body
        return type(body).model_validate(fitted)

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
                Resource(uri=document_uri(meta.doc_id), name=meta.doc_id, title=f"Document {meta.doc_id}",
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


_SCANS: contextvars.ContextVar[dict[str, ArgumentScan]] = contextvars.ContextVar("schemadoc_argument_scans")
"""The walks of a tool call's written arguments, by argument name, for the write the call makes."""


def _scanned(argument: str) -> ArgumentScan | None:
    return _SCANS.get({}).get(argument)


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


def _validate_arguments(tool: Tool, arguments: dict[str, Any]) -> dict[str, Any]:
    """Strict validation against the tool's argument model, without the SDK's JSON-string pre-parsing."""
    model = tool.fn_metadata.arg_model
    known = {field.alias or name for name, field in model.model_fields.items()}
    unknown = sorted(set(arguments) - known)
    if unknown:
        raise SchemaDocError(
            "invalid-request", f"Unknown argument(s) for {tool.name}: {', '.join(unknown)}.",
            {"tool": tool.name, "argument": unknown[0], "unknown": unknown, "accepted": sorted(known)},
            remediation=f"Send only the arguments {tool.name}'s input schema declares.")
    try:
        validated = model.model_validate(arguments)
    except ValidationError as error:
        raise _argument_error(tool.name, error) from None
    return validated.model_dump_one_level()


def build_mcp_server(service: DocumentService, *, bus: SubscriptionBus | None = None,
                     max_json_depth: int | None = None,
                     subscribers: SubscriberSlots | None = None) -> SchemaDocMCPServer:
    """The MCP server for ``service``: 23 tools, 4 resources (two templates), 2 prompts.

    The returned server listens to the service's changes (``server.notifier``) and publishes
    them to MCP subscribers of both eras; pass ``bus`` to share the modern-era subscription
    bus with other code (default: a fresh in-memory bus, ``server.bus``). ``node_data``,
    ``patch`` and ``merge_patch`` nested deeper than ``max_json_depth`` are refused with
    ``request-too-deep`` (default: the service's own limit). Resource subscriptions to documents
    take their slots from ``subscribers`` (shared with the REST event streams; default: slots
    with the default limits for this server alone).
    """
    server = SchemaDocMCPServer(service, bus if bus is not None else InMemorySubscriptionBus(),
                                max_json_depth=service.max_json_depth if max_json_depth is None else max_json_depth,
                                subscribers=subscribers, tools=_bound_tools(service))
    _add_resources(server, service)
    _add_prompts(server, service)
    server.notifier.install(server)
    server.notifier.connect(service)
    return server


_TOOL_TABLE: tuple[tuple[str, str, ToolAnnotations], ...] = (
    ("document_create", "Create a document", _WRITE),
    ("document_read_node", "Read a node", _READ),
    ("document_update_node", "Replace a node", _REPLACE),
    ("document_create_node", "Create a node", _WRITE),
    ("document_delete_node", "Delete a node", _REPLACE),
    ("document_apply_patch", "Apply a JSON Patch", _REPLACE),
    ("document_list", "List documents", _READ),
    ("schema_get_root", "Get the schema", _READ),
    ("schema_get_node", "Get a node's schema", _READ),
    ("document_history", "List a document's versions", _READ),
    ("document_diff", "Compare two versions", _READ),
    ("document_revert", "Revert to an earlier version", _REPLACE),
    ("document_merge_patch", "Apply a JSON Merge Patch", _REPLACE),
    ("document_delete", "Delete a document", _REPLACE),
    ("document_undelete", "Restore a deleted document", _WRITE),
    ("document_purge", "Erase a deleted document", _REPLACE),
    ("document_changes", "Changes of all documents", _READ),
    ("document_outline", "Outline a node", _READ),
    ("document_next_incomplete", "Find what is not finished", _READ),
    ("document_move_node", "Move a node", _REPLACE),
    ("document_search", "Search documents", _READ),
    ("document_stats", "Measure a document", _READ),
    ("document_render", "Render a node as Markdown", _READ),
)
"""Every tool in ``tools/list`` order: name (= its function's name), title, annotations."""


def _tool_from_function(fn: Callable[..., BaseModel], title: str, annotations: ToolAnnotations) -> Tool:
    """What ``MCPServer.add_tool`` registers for ``fn`` (its argument and output models, their JSON schemas),
    with ``additionalProperties: false`` in the input schema: unknown arguments are refused, so it says so."""
    tool = Tool.from_function(fn, name=fn.__name__, title=title, description=DESCRIPTIONS[fn.__name__],
                              annotations=annotations, structured_output=True)
    tool.parameters["additionalProperties"] = False
    return tool


@functools.cache
def _tool_templates() -> tuple[Tool, ...]:
    """The tools, described once per process: building them (pydantic models generated from the signatures,
    their JSON schemas) is most of what building a server costs, and none of it depends on the service.
    Their functions are never called: each server binds its own (:func:`_bound_tools`)."""
    functions = _tool_functions(cast(DocumentService, None))
    return tuple(_tool_from_function(functions[name], title, annotations) for name, title, annotations in _TOOL_TABLE)


def _copy_json(value: Any) -> Any:
    """A deep copy of a JSON value (~10x faster than ``copy.deepcopy``)."""
    return orjson.loads(orjson.dumps(value))


def _bound_tools(service: DocumentService) -> list[Tool]:
    """The tools of a server on ``service``: the templates with this service's functions, each with its own
    copy of the JSON schemas (the models behind them are shared: classes, never changed)."""
    functions = _tool_functions(service)
    tools: list[Tool] = []
    for template in _tool_templates():
        metadata = template.fn_metadata
        tools.append(template.model_copy(update={
            "fn": functions[template.name],
            "parameters": _copy_json(template.parameters),
            "fn_metadata": metadata.model_copy(update={"output_schema": _copy_json(metadata.output_schema)}),
        }))
    return tools


def _tool_functions(service: DocumentService) -> dict[str, Callable[..., BaseModel]]:
    """The tool functions over ``service``, by name (their signatures and docstrings describe the tools)."""

    def document_create() -> CreateDocumentResult:
        doc_id, content, meta, report = service.create_document()
        return create_document_result(doc_id, content, meta, report, document_uri(doc_id))

    def document_read_node(doc_id: DocId, node_path: NodePath, at_version: AtVersion = None,
                           max_depth: MaxDepth = None, offset: WindowOffset = 0, limit: WindowLimit = None,
                           max_bytes: MaxBytes = None) -> ReadNodeResult:
        bounded = max_depth is not None or offset != 0 or limit is not None or max_bytes is not None
        view = service.read_view(doc_id, node_path, at_version=at_version, max_depth=max_depth, offset=offset,
                                 limit=limit, max_bytes=read_budget(max_bytes))
        return read_view_result(view, bounded)

    def document_outline(doc_id: DocId, node_path: NodePath = "/", depth: OutlineDepth = 2,
                         offset: WindowOffset = 0, limit: WindowLimit = None,
                         max_bytes: MaxBytes = None) -> OutlineResult:
        read, found = service.outline(doc_id, node_path, depth, offset=offset, limit=limit,
                                      max_bytes=read_budget(max_bytes))
        return outline_result(read, found)

    def document_next_incomplete(doc_id: DocId, node_path: NodePath = "/",
                                 limit: IncompleteLimit = 10) -> NextIncompleteResult:
        return next_incomplete_result(*service.next_incomplete(doc_id, node_path, limit))

    def document_move_node(doc_id: DocId, from_path: FromPath, to_path: ToPath, version: Version,
                           dry_run: DryRun = False) -> MoveNodeResult:
        result = service.move_node(doc_id, from_path, to_path, version, dry_run=dry_run)
        return move_node_result(result, from_path)

    def document_search(query: Query, node_path: OptionalNodePath = None, doc_ids: DocIds = None,
                        limit: SearchLimit = 20, cursor: SearchCursor = 0) -> SearchResult:
        return search_result(query, service.search(query, node_path, doc_ids, limit=limit, cursor=cursor))

    def document_stats(doc_id: DocId) -> StatsResult:
        return stats_result(service.stats(doc_id))

    def document_render(doc_id: DocId, node_path: NodePath = "/", format: RenderFormat = "markdown",
                        offset: WindowOffset = 0, limit: WindowLimit = None,
                        max_bytes: MaxBytes = None) -> RenderResult:
        read, rendered = service.render(doc_id, node_path, format, offset=offset, limit=limit,
                                        max_bytes=read_budget(max_bytes))
        return render_result(read, rendered, format)

    def document_update_node(doc_id: DocId, node_path: NodePath, node_data: NodeData, version: Version,
                             dry_run: DryRun = False) -> UpdateNodeResult:
        return update_node_result(service.update_node(doc_id, node_path, node_data, version, dry_run=dry_run,
                                                      scanned=_scanned("node_data")))

    def document_create_node(doc_id: DocId, node_path: NewNodePath, node_data: NodeData, version: Version,
                             dry_run: DryRun = False) -> CreateNodeResult:
        return create_node_result(service.create_node(doc_id, node_path, node_data, version, dry_run=dry_run,
                                                      scanned=_scanned("node_data")))

    def document_delete_node(doc_id: DocId, node_path: NodePath, version: Version,
                             dry_run: DryRun = False) -> DeleteNodeResult:
        return delete_node_result(service.delete_node(doc_id, node_path, version, dry_run=dry_run))

    def document_apply_patch(doc_id: DocId, patch: Patch, version: Version,
                             dry_run: DryRun = False) -> ApplyPatchResult:
        return patch_result(service.apply_patch(doc_id, patch, version, dry_run=dry_run,
                                                scanned=_scanned("patch")))

    def document_list(limit: Limit = 100, offset: Offset = 0) -> ListDocumentsResult:
        return list_documents_result(service.list_documents(limit=limit, offset=offset), service.schema_uri)

    def schema_get_root(dereferenced: Dereferenced = True) -> RootSchemaResult:
        return root_schema_result(service.schema_uri, service.root_schema(dereferenced=dereferenced),
                                  service.schema.schema_version)

    def schema_get_node(node_path: NodePath, doc_id: OptionalDocId = None,
                        dereferenced: Dereferenced = True) -> NodeSchemaResult:
        return node_schema_result(service.node_schema(node_path, doc_id, dereferenced=dereferenced))

    def document_history(doc_id: DocId, since_version: SinceVersion = 0,
                         limit: HistoryLimit = 100) -> HistoryResult:
        return history_result(service.history(doc_id, since_version=since_version, limit=limit))

    def document_diff(doc_id: DocId, from_version: FromVersion, to_version: ToVersion) -> DiffResult:
        patch = service.diff(doc_id, from_version, to_version)
        return diff_result(check_doc_id(doc_id), from_version, to_version, patch)

    def document_revert(doc_id: DocId, to_version: RevertTarget, version: Version,
                        dry_run: DryRun = False) -> RevertResult:
        return revert_result(service.revert(doc_id, to_version, version, dry_run=dry_run), to_version)

    def document_merge_patch(doc_id: DocId, node_path: NodePath, merge_patch: MergePatch, version: Version,
                             dry_run: DryRun = False) -> MergePatchResult:
        return merge_patch_result(service.merge_patch(doc_id, node_path, merge_patch, version, dry_run=dry_run,
                                                      scanned=_scanned("merge_patch")))

    def document_delete(doc_id: DocId, version: Version) -> DocumentStateResult:
        return document_state_result(service.delete_document(doc_id, version))

    def document_undelete(doc_id: DocId) -> DocumentStateResult:
        return document_state_result(service.undelete_document(doc_id))

    def document_purge(doc_id: DocId) -> PurgeResult:
        service.purge_document(doc_id)
        return purge_result(check_doc_id(doc_id))

    def document_changes(since: Cursor = 0, limit: ChangesLimit = 100) -> ChangesResult:
        return changes_result(service.changes(since=since, limit=limit))

    functions: list[Callable[..., BaseModel]] = [
        document_create, document_read_node, document_update_node, document_create_node, document_delete_node,
        document_apply_patch, document_list, schema_get_root, schema_get_node, document_history, document_diff,
        document_revert, document_merge_patch, document_delete, document_undelete, document_purge,
        document_changes, document_outline, document_next_incomplete, document_move_node, document_search,
        document_stats, document_render]
    return {fn.__name__: fn for fn in functions}


def _not_found(uri: str, error: SchemaDocError) -> MCPError:
    return MCPError(code=INVALID_PARAMS, message=f"Resource not found: {uri} ({error.message})",
                    data={"uri": uri, "error": error.to_dict()["error"]})


_VERSION_NUMBER = re.compile(r"0|[1-9][0-9]{0,17}")  # the service says which versions exist


def version_uri(doc_id: str, version: int | str) -> str:
    """The MCP resource URI of one version of a document."""
    return f"{document_uri(doc_id)}/versions/{version}"


def _add_resources(server: MCPServer[Any], service: DocumentService) -> None:
    @server.resource("schema://schema", name="schema", title="The document schema", mime_type="application/json",
                     description="The JSON Schema (Draft 2020-12) every document on this server satisfies, as "
                                 "configured ($ref not resolved; schema_get_root can dereference it).")
    def schema_resource() -> str:
        return _dumps(service.root_schema(dereferenced=False))

    @server.resource("schema://errors", name="errors", title="The error catalog", mime_type="application/json",
                     description="Every error code a tool or endpoint can return: HTTP status, description, "
                                 "typical causes and how to fix it.")
    def errors_resource() -> str:
        return _dumps([entry.as_dict() for entry in CATALOG.values()])

    @server.resource("schema://{doc_id}", name="document", title="A document", mime_type="application/json",
                     description="The whole current document (validated) as JSON. resources/list lists every "
                                 "document; read nodes with document_read_node.")
    async def document_resource(doc_id: str) -> str:
        uri = document_uri(doc_id)
        try:
            content, _meta = await anyio.to_thread.run_sync(service.read_document, doc_id)
        except SchemaDocError as error:
            if error.code in ("invalid-doc-id", "document-not-found"):
                raise _not_found(uri, error) from None
            raise ResourceError(f"{uri}: {error.message}") from error
        return _dumps(content)

    @server.resource("schema://{doc_id}/versions/{n}", name="document-version", title="A version of a document",
                     mime_type="application/json",
                     description="The whole document as it was at version n (1 = as created), as JSON. "
                                 "document_history lists the versions; document_diff compares two.")
    async def document_version_resource(doc_id: str, n: str) -> str:
        uri = version_uri(doc_id, n)
        try:
            if not _VERSION_NUMBER.fullmatch(n):
                raise SchemaDocError("version-not-found", f"{n!r} is not a version number (1, 2, ...).",
                                     {"doc_id": doc_id, "version": n})
            content = await anyio.to_thread.run_sync(service.read_version, doc_id, int(n))
        except SchemaDocError as error:
            if error.code in ("invalid-doc-id", "document-not-found", "version-not-found"):
                raise _not_found(uri, error) from None
            raise ResourceError(f"{uri}: {error.message}") from error
        return _dumps(content)


def _add_prompts(server: MCPServer[Any], service: DocumentService) -> None:
    @server.prompt(name="fill-document", title="Fill a document from its schema")
    def fill_document(doc_id: Annotated[str, Field(description="The document to populate.")]) -> str:
        """Step-by-step guidance to populate a document from the schema, node by node, top-down."""
        try:
            return fill_document_text(service, doc_id)
        except PromptArgumentError as error:
            raise MCPError(code=INVALID_PARAMS, message=str(error)) from None

    @server.prompt(name="fix-validation-errors", title="Fix validation errors")
    def fix_validation_errors(
        doc_id: Annotated[str, Field(description="The document the refused write targeted.")],
        violations: Annotated[str, Field(description="JSON of error.details.violations, or of the whole error "
                                                     "object or validation_report.")],
    ) -> str:
        """Turn a validation report into an ordered plan of edits, one tool call per violation."""
        try:
            return fix_validation_errors_text(service, doc_id, violations)
        except PromptArgumentError as error:
            raise MCPError(code=INVALID_PARAMS, message=str(error)) from None
