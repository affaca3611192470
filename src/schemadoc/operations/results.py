"""The result bodies both doors return, and the builders of those that are more than a copy of a service result.

MCP tools return these as structured content (and declare them as output schemas); REST routes return
the same JSON (and declare them as response models). Each operation of the catalogue builds its result
once, so the two doors are identical by construction.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from schemadoc.ops.journal import JournalEntry
from schemadoc.reading import Incomplete, Window
from schemadoc.service import HistoryPage, NodeRead, NodeView, WriteResult
from schemadoc.service.nodes import REMAINING_LISTED
from schemadoc.validation import ValidationReport


class Body(BaseModel):
    model_config = ConfigDict(extra="allow")


class Result(Body):
    """An operation's answer."""

    success: bool = True


class ViolationBody(Body):
    code: str = Field(description="Catalog code, e.g. 'type-mismatch' (see schema://errors).")
    message: str = Field(description="What is wrong and how to fix it.")
    path: str = Field(description="JSON Pointer to the offending value.")
    constraint: str | None = Field(default=None, description="The schema keyword that failed.")
    expected: Any = Field(default=None, description="What the schema requires.")
    actual: Any = Field(default=None, description="What was found (big values are summarised).")
    schema_path: str | None = Field(default=None, description="JSON Pointer into the schema.")
    schema_excerpt: dict[str, Any] | None = Field(default=None, description="The failing keyword(s) as the node's "
                                                                            "schema states them.")
    suggested_fix: list[dict[str, Any]] | None = Field(
        default=None, description="An RFC 6902 patch that repairs this violation (send it with "
                                  "document_apply_patch), where one follows mechanically.")


class ValidationReportBody(Body):
    valid: bool
    error_count: int = 0
    errors: list[ViolationBody] = Field(default_factory=list)


class CreateDocumentResult(Result):
    doc_id: str = Field(description="The new document's ULID.")
    version: int = Field(description="Always 1 for a new document.")
    document_uri: str = Field(description="Where the whole document can be read.")
    schema_uri: str
    initial_tree: Any = Field(description="The document as created from the schema's defaults.")
    validation_report: ValidationReportBody


class ReadNodeResult(Result):
    doc_id: str
    node_path: str = Field(description="The concrete path read (negative indices resolved).")
    node_content: Any
    version: int = Field(description="Current version: pass it to your next write.")
    node_type: str = Field(description="object, array, string, number, boolean or null.")


class WriteBody(Result):
    doc_id: str
    version: int = Field(description="The new version (dry run: the current, unchanged version).")
    patch: list[dict[str, Any]] = Field(description="The RFC 6902 patch this write compiled to.")
    validation_report: ValidationReportBody = Field(description="A document the schema already rejected: valid "
                                                    "false, error_count left, the first errors, resolved_count fixed.")
    dry_run: bool = False


class UpdateNodeResult(WriteBody):
    node_path: str
    updated_node: Any


class CreateNodeResult(WriteBody):
    created_node_path: str = Field(description="Where the node was created ('-' resolved to an index).")
    created_node: Any


class DeleteNodeResult(WriteBody):
    node_path: str
    deleted_node: Any


class ApplyPatchResult(WriteBody):
    pass


class DocumentSummary(Body):
    doc_id: str
    label: str | None = Field(default=None, description="Its title, name, label or code member, to recognise it.")
    version: int
    created_at: str
    modified_at: str
    tree_size_bytes: int
    snapshot_version: int = Field(description="The version {doc_id}.json holds on disk; the journal has every "
                                              "version after it (the snapshot is written in the background).")
    valid: bool | None = Field(default=None, description="The served schema's verdict; null: not checked yet.")
    violation_count: int | None = None
    schema_digest: str | None = None


class ListDocumentsResult(Result):
    schema_uri: str
    documents: list[DocumentSummary]
    total_documents: int
    has_more: bool
    limit: int
    offset: int
    next_cursor: str | None = None


class RootSchemaResult(Result):
    schema_uri: str
    root_schema: dict[str, Any]
    schema_version: str | None = None


class ErrorCatalogEntry(Body):
    code: str = Field(description="The stable kebab-case code an error object carries.")
    status: int = Field(description="The HTTP status REST answers with (MCP carries the same error object).")
    category: str = Field(description="The status as a string, as in an error object's `category`.")
    kind: str = Field(description="What kind of problem: the request, the document's state, the server, ...")
    description: str
    causes: list[str] = Field(description="Typical situations that produce it.")
    remediation: str = Field(description="How to fix it.")
    origin: str = Field(description="'spec': a code of the specification's catalog; 'extension': a situation "
                                    "the specification does not cover.")
    extension: str | None = Field(default=None, description="For an extension: why it exists (absent for the "
                                                            "specification's codes).")


class ErrorCatalogResult(Result):
    errors: list[ErrorCatalogEntry] = Field(description="Every code, in catalog order; the same list as the MCP "
                                                        "resource schema://errors.")


class NodeSchemaResult(Result):
    node_path: str
    node_schema: dict[str, Any]
    node_exists: bool | None = Field(default=None, description="Whether the node exists (only with doc_id).")


# -- history, undo, deletion, merge patch, change feed ---------------------------------------


_ACTOR = "Who made the version: the token's name, else the door (rest, mcp, stdio) or command; null if unrecorded."


class JournalEntryBody(Body):
    version: int
    op: str = Field(description="create, update_node, create_node, delete_node, patch, merge_patch, revert, "
                                "delete_document or undelete_document.")
    patch: list[dict[str, Any]] = Field(description="The RFC 6902 patch that produced this version.")
    at: str = Field(description="Commit time, ISO 8601 UTC.")
    actor: str | None = Field(default=None, description=_ACTOR)
    info: dict[str, Any] = Field(default_factory=dict)


class JournalSummaryBody(Body):
    """A version in the summary form of document_history: what changed where, and how big, without the patch."""

    version: int
    op: str
    at: str
    actor: str | None = Field(default=None, description=_ACTOR)
    path: str | None = Field(default=None, description="Where the change was made (the node written, else the "
                                                       "first operation's path).")
    patch_op_count: int
    patch_size_bytes: int
    info: dict[str, Any] = Field(default_factory=dict)


class HistoryResult(Result):
    doc_id: str
    entries: list[JournalEntryBody | JournalSummaryBody] = Field(description="Oldest first (summary=true: "
                                                                             "without patches).")
    current_version: int
    has_more: bool
    next_since_version: int = Field(description="Pass as since_version to get the next page.")


class DiffActorsBody(Body):
    """Who made the versions a diff spans: those after the lower of its two versions, up to the higher."""

    names: list[str] = Field(description="Distinct actor names (a token's name, else the door or command), in the "
                                         "order they first wrote; at most 20; versions with no recorded actor add "
                                         "none.")
    complete: bool = Field(description="true: names lists every actor of the versions the diff spans; false: more "
                                       "than 20, or a span longer than one diff reads (256 versions or 1 MiB of "
                                       "journal): names covers the versions up to through_version.")
    through_version: int = Field(description="names lists every actor of the versions up to this one (the higher "
                                             "version when complete).")


class DiffResult(Result):
    doc_id: str
    from_version: int
    to_version: int
    patch: list[dict[str, Any]] = Field(description="Applied to from_version, gives to_version exactly.")
    actors: DiffActorsBody = Field(description="Who made the versions between the two (either direction).")


class RevertResult(WriteBody):
    to_version: int


class MergePatchResult(WriteBody):
    node_path: str
    updated_node: Any


class DocumentStateResult(Result):
    doc_id: str
    version: int
    deleted: bool
    deleted_at: str | None = None


class PurgeResult(Result):
    doc_id: str
    purged: bool = True


class ChangeBody(Body):
    cursor: int
    doc_id: str
    version: int
    op: str
    at: str
    actor: str | None = Field(default=None, description=_ACTOR)


class ChangesResult(Result):
    changes: list[ChangeBody]
    next_cursor: int = Field(description="Pass as since to get what was committed after this page.")


# -- agents on large documents: bounded reads, outline, guided building, search, stats, render ----


class BoundedReadNodeResult(ReadNodeResult):
    """A read with bounds (max_depth, offset/limit, max_bytes, or the MCP budget that cut it)."""

    truncated: bool = Field(description="true when node_content is not the whole node: stubs "
                                        '({"$stub": true, "type", "count" or "length", "size_bytes", "pointer"}) '
                                        "stand in for parts, or the budget shortened the window.")
    node_size_bytes: int = Field(description="Bytes of the whole node as compact JSON.")
    total_count: int | None = Field(default=None, description="Members, items or characters the node has.")
    offset: int | None = Field(default=None, description="The first member, item or character shown.")
    returned_count: int | None = Field(default=None, description="How many members, items or characters are shown.")
    next_offset: int | None = Field(default=None, description="Read again with this offset to see what follows.")
    continue_at: list[str] = Field(default_factory=list,
                                   description="Pointers of the stubs, shallowest first (at most 20): read them "
                                               "to see what they stand for.")


class OutlineResult(Result):
    doc_id: str
    version: int
    node_path: str
    outline: dict[str, Any] = Field(description='The node\'s entry: {"pointer", "type", "count", "size_bytes", '
                                                '"title" (the schema\'s), "label" (its title or name member), '
                                                '"children": [entries], "more": {"count", "next_offset"}}.')
    truncated: bool = Field(description="true when some children were left out for the budget (see 'more').")
    total_count: int | None = Field(default=None, description="Members or items of the node.")
    offset: int | None = None
    returned_count: int | None = None
    next_offset: int | None = Field(default=None, description="Ask again with this offset for the next children.")
    continue_at: list[str] = Field(default_factory=list, description="Entries with more children than shown.")


class ExampleCall(Body):
    tool: str = Field(description="document_create_node or document_update_node.")
    arguments: dict[str, Any] = Field(description="Arguments that would fill the place (checked against its schema).")
    placeholder: bool = Field(default=False, description="true: node_data holds made-up values (arguments."
                                                         "placeholders); put real content there.")


class IncompleteItem(Body):
    pointer: str
    reason: str = Field(description="violation (the schema changed and rejects this place: code, message; listed "
                                    "first), placeholder (a made-up value written as a suggested call gave it: "
                                    "write real content), absent (an optional property not there yet), empty-array "
                                    "(items the schema describes), or default-value (equal to the schema default; "
                                    "only with include_defaults, never with an example_call nor holding back "
                                    "complete).")
    node_schema: dict[str, Any] = Field(description="The schema of the value to write (for empty-array: of one item).")
    example_call: ExampleCall | None = Field(default=None, description="A call that would fill it, when one "
                                                                       "could be built from the schema.")


class NextIncompleteResult(Result):
    doc_id: str
    version: int
    node_path: str
    items: list[IncompleteItem] = Field(description="Breadth first, in a stable order. The example calls' versions "
                                                    "follow each other: send them in order.")
    has_more: bool
    complete: bool = Field(default=False, description="true: nothing is left to fill below node_path (no "
                                                      "placeholder either), and the document satisfies the schema "
                                                      "(else violation_count: its violations anywhere).")


class SearchHitBody(Body):
    doc_id: str
    pointer: str
    snippet: str = Field(description="HTML-escaped, matches in <mark>.")
    label: str | None = None


class SearchResult(Result):
    query: str
    hits: list[SearchHitBody]
    has_more: bool
    next_cursor: str | None = None


class StatsResult(Result):
    doc_id: str
    version: int
    size_bytes: int = Field(description="The document as compact JSON.")
    node_counts: dict[str, int] = Field(description="Nodes by JSON type (object, array, string, number, boolean, "
                                                    "null), the root included.")
    node_total: int
    depth: int = Field(description="Container levels: 1 for a flat object.")
    journal_length: int = Field(description="Versions in the journal.")


class RenderResult(Result):
    doc_id: str
    version: int
    node_path: str
    format: str
    text: str
    truncated: bool = Field(description="true when the budget stopped the rendering before the window's end.")
    total_count: int | None = None
    offset: int | None = None
    returned_count: int | None = Field(default=None, description="Children of the node rendered (whole).")
    next_offset: int | None = Field(default=None, description="Render again from this child (of a string node: "
                                                              "this character) to go on.")
    continue_at: str | None = Field(default=None, description=(
        "When the first child alone is over the budget: its beginning is shown; render this pointer for the "
        "rest (a level deeper), then go on from next_offset."))


class MoveNodeResult(WriteBody):
    from_path: str
    node_path: str = Field(description="The concrete new path of the moved node.")
    moved_node: Any


class ValidateNodeResult(Result):
    doc_id: str
    node_path: str = Field(description="The concrete path the value was checked at.")
    version: int = Field(description="The version it was checked against (nothing was written).")
    valid: bool = Field(description="Whether writing the value there would be accepted.")
    write: str = Field(description="The tool that would write it: document_update_node where the node exists, "
                                   "else document_create_node.")
    validation_report: ValidationReportBody


# -- builders ------------------------------------------------------------------------------------


def report_body(report: ValidationReport) -> ValidationReportBody:
    return ValidationReportBody.model_validate(report.to_dict())


def write_report_body(result: WriteResult) -> ValidationReportBody:
    """A write's verdict: valid, or for a write that repaired part of a document the schema already rejected (the
    repair rule), ``valid: false`` with how many violations remain (``error_count``), the first of them and how
    many it fixed (``resolved_count``)."""
    if result.repair is None or result.report.valid:
        return report_body(result.report) if result.repair is None else \
            ValidationReportBody.model_validate({"valid": True, "resolved_count": result.repair.resolved})
    remaining = result.report
    listed = [violation.to_dict() for violation in remaining.violations[:REMAINING_LISTED]]
    more = {"truncated": True} if remaining.count > len(listed) else {}
    return ValidationReportBody.model_validate({"valid": False, "error_count": remaining.count, "errors": listed,
                                                "resolved_count": result.repair.resolved, **more})


def write_fields(result: WriteResult) -> dict[str, Any]:
    """The members every write result has."""
    fields: dict[str, Any] = {
        "doc_id": result.doc_id,
        "version": result.version,
        "patch": result.patch,
        "validation_report": write_report_body(result),
        "dry_run": result.dry_run,
    }
    if result.dry_run:
        fields["would_be_version"] = result.version + 1
    return fields


def window_fields(window: Window | None) -> dict[str, Any]:
    if window is None:
        return {}
    return {"total_count": window.total, "offset": window.offset, "returned_count": window.count,
            "next_offset": window.next_offset}


def journal_entry_body(entry: JournalEntry) -> JournalEntryBody:
    info = entry.info if "actor" not in entry.info else {key: value for key, value in entry.info.items()
                                                         if key != "actor"}
    return JournalEntryBody(version=entry.version, op=entry.op, patch=entry.patch, at=entry.at, actor=entry.actor,
                            info=info)


def journal_entry_summary(entry: JournalEntry) -> JournalSummaryBody:
    """An entry without its patch: version, operation, where, when and how big."""
    where = entry.info.get("node_path")
    if not isinstance(where, str):
        where = entry.patch[0].get("path") if entry.patch else None
    try:
        size = len(orjson.dumps(entry.patch))
    except TypeError:  # integers beyond 64 bits
        size = len(json.dumps(entry.patch, separators=(",", ":")))
    info = {key: value for key, value in entry.info.items() if key not in ("node_path", "seq", "actor")}
    return JournalSummaryBody(version=entry.version, op=entry.op, at=entry.at, actor=entry.actor, info=info,
                              path=(where or "/") if isinstance(where, str) else None,
                              patch_op_count=len(entry.patch), patch_size_bytes=size)


def history_result(page: HistoryPage, *, summary: bool = False) -> HistoryResult:
    entries: list[JournalEntryBody | JournalSummaryBody] = \
        [journal_entry_summary(e) for e in page.entries] if summary else [journal_entry_body(e) for e in page.entries]
    return HistoryResult(doc_id=page.doc_id, entries=entries,
                         current_version=page.current_version, has_more=page.has_more,
                         next_since_version=page.next_since_version)


def read_view_result(read: NodeView, bounded: bool) -> ReadNodeResult:
    """The plain read when nothing bounded it, else the bounded read with its window and stubs."""
    view = read.view
    if not bounded and not view.truncated:
        return ReadNodeResult(doc_id=read.doc_id, node_path=read.node_path or "/", node_content=view.content,
                              version=read.version, node_type=view.node_type)
    return BoundedReadNodeResult(doc_id=read.doc_id, node_path=read.node_path or "/", node_content=view.content,
                                 version=read.version, node_type=view.node_type, truncated=view.truncated,
                                 node_size_bytes=view.size_bytes, continue_at=view.continue_at,
                                 **window_fields(view.window))


def next_incomplete_result(read: NodeRead, items: list[Incomplete], has_more: bool,
                           violation_count: int = 0) -> NextIncompleteResult:
    bodies = []
    version = read.version  # the example calls are meant to be sent in order: each one's version follows
    for item in items:
        call = None
        if item.has_example:
            arguments = {"doc_id": read.doc_id, "node_path": item.node_path, "node_data": item.example,
                         "version": version} if item.tool != "document_apply_patch" else \
                {"doc_id": read.doc_id, "patch": item.example, "version": version}
            if item.marks:
                arguments["placeholders"] = list(item.marks)
            call = ExampleCall(tool=item.tool, arguments=arguments, placeholder=item.placeholder)
            version += 1
        more = {"code": item.code, "message": item.message} if item.reason == "violation" else {}
        bodies.append(IncompleteItem(pointer=item.pointer, reason=item.reason, node_schema=item.node_schema,
                                     example_call=call, **more))
    extra: dict[str, Any] = {"violation_count": violation_count} if violation_count else {}
    return NextIncompleteResult.model_validate({
        "doc_id": read.doc_id, "version": read.version, "node_path": read.node_path or "/", "items": bodies,
        "has_more": has_more, "complete": not has_more and not violation_count
        and all(item.reason == "default-value" for item in items), **extra})
