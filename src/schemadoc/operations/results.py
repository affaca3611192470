"""The result bodies both doors return, built once from service results.

MCP tools return these as structured content (and declare them as output schemas); REST
routes return the same JSON (and declare them as response models). One builder per result
keeps the two doors identical by construction.
"""

from __future__ import annotations

import json
from typing import Any

import orjson
from pydantic import BaseModel, ConfigDict, Field

from schemadoc.ops.journal import JournalEntry
from schemadoc.service import (
    ChangesPage,
    DocumentList,
    HistoryPage,
    NodeRead,
    NodeSchema,
    WriteResult,
)
from schemadoc.storage.base import DocumentMeta
from schemadoc.validation import ValidationReport

__all__ = [
    "ApplyPatchResult",
    "Body",
    "ChangesResult",
    "CreateDocumentResult",
    "CreateNodeResult",
    "DeleteNodeResult",
    "DiffResult",
    "DocumentStateResult",
    "DocumentSummary",
    "HistoryResult",
    "ListDocumentsResult",
    "MergePatchResult",
    "NodeSchemaResult",
    "PurgeResult",
    "ReadNodeResult",
    "RevertResult",
    "RootSchemaResult",
    "UpdateNodeResult",
    "ValidationReportBody",
    "WriteBody",
    "changes_result",
    "create_document_result",
    "create_node_result",
    "delete_node_result",
    "diff_result",
    "document_state_result",
    "history_result",
    "journal_entry_body",
    "list_documents_result",
    "merge_patch_result",
    "node_schema_result",
    "patch_result",
    "purge_result",
    "read_node_result",
    "report_body",
    "revert_result",
    "root_schema_result",
    "update_node_result",
    "write_fields",
]


class Body(BaseModel):
    model_config = ConfigDict(extra="allow")


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


class CreateDocumentResult(Body):
    success: bool = True
    doc_id: str = Field(description="The new document's ULID.")
    version: int = Field(description="Always 1 for a new document.")
    document_uri: str = Field(description="Where the whole document can be read.")
    schema_uri: str
    initial_tree: Any = Field(description="The document as created from the schema's defaults.")
    validation_report: ValidationReportBody


class ReadNodeResult(Body):
    success: bool = True
    doc_id: str
    node_path: str = Field(description="The concrete path read (negative indices resolved).")
    node_content: Any
    version: int = Field(description="Current version: pass it to your next write.")
    node_type: str = Field(description="object, array, string, number, boolean or null.")


class WriteBody(Body):
    success: bool = True
    doc_id: str
    version: int = Field(description="The new version (dry run: the current, unchanged version).")
    patch: list[dict[str, Any]] = Field(description="The RFC 6902 patch this write compiled to.")
    validation_report: ValidationReportBody
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


class ListDocumentsResult(Body):
    success: bool = True
    schema_uri: str
    documents: list[DocumentSummary]
    total_documents: int
    has_more: bool
    limit: int
    offset: int


class RootSchemaResult(Body):
    success: bool = True
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


class ErrorCatalogResult(Body):
    success: bool = True
    errors: list[ErrorCatalogEntry] = Field(description="Every code, in catalog order; the same list as the MCP "
                                                        "resource schema://errors.")


class NodeSchemaResult(Body):
    success: bool = True
    node_path: str
    node_schema: dict[str, Any]
    node_exists: bool | None = Field(default=None, description="Whether the node exists (only with doc_id).")


def report_body(report: ValidationReport) -> ValidationReportBody:
    return ValidationReportBody.model_validate(report.to_dict())


def create_document_result(doc_id: str, content: Any, meta: DocumentMeta, report: ValidationReport,
                           document_uri: str) -> CreateDocumentResult:
    return CreateDocumentResult(doc_id=doc_id, version=meta.version, document_uri=document_uri,
                                schema_uri=meta.schema_uri, initial_tree=content,
                                validation_report=report_body(report))


def read_node_result(read: NodeRead) -> ReadNodeResult:
    return ReadNodeResult(doc_id=read.doc_id, node_path=read.node_path or "/", node_content=read.node,
                          version=read.version, node_type=read.node_type)


def write_fields(result: WriteResult) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "doc_id": result.doc_id,
        "version": result.version,
        "patch": result.patch,
        "validation_report": report_body(result.report),
        "dry_run": result.dry_run,
    }
    if result.dry_run:
        fields["would_be_version"] = result.version + 1
    return fields


def update_node_result(result: WriteResult) -> UpdateNodeResult:
    return UpdateNodeResult(node_path=result.node_path or "/", updated_node=result.node, **write_fields(result))


def create_node_result(result: WriteResult) -> CreateNodeResult:
    return CreateNodeResult(created_node_path=result.node_path, created_node=result.node, **write_fields(result))


def delete_node_result(result: WriteResult) -> DeleteNodeResult:
    return DeleteNodeResult(node_path=result.node_path, deleted_node=result.node, **write_fields(result))


def patch_result(result: WriteResult) -> ApplyPatchResult:
    return ApplyPatchResult(**write_fields(result))


def list_documents_result(listing: DocumentList, schema_uri: str,
                          labels: dict[str, str | None] | None = None) -> ListDocumentsResult:
    found = labels or {}
    return ListDocumentsResult(
        schema_uri=schema_uri,
        documents=[DocumentSummary(doc_id=m.doc_id, label=found.get(m.doc_id), version=m.version,
                                   created_at=m.created_at,
                                   modified_at=m.modified_at, tree_size_bytes=m.content_size_bytes,
                                   snapshot_version=m.snapshot_version)
                   for m in listing.documents],
        total_documents=listing.total, has_more=listing.has_more, limit=listing.limit, offset=listing.offset)


def root_schema_result(schema_uri: str, root: dict[str, Any], version: str | None) -> RootSchemaResult:
    return RootSchemaResult(schema_uri=schema_uri, root_schema=root, schema_version=version)


def node_schema_result(node: NodeSchema) -> NodeSchemaResult:
    return NodeSchemaResult(node_path=node.node_path or "/", node_schema=node.schema, node_exists=node.node_exists)


# -- history, undo, deletion, merge patch, change feed ---------------------------------------


class JournalEntryBody(Body):
    version: int
    op: str = Field(description="create, update_node, create_node, delete_node, patch, merge_patch, revert, "
                                "delete_document or undelete_document.")
    patch: list[dict[str, Any]] = Field(description="The RFC 6902 patch that produced this version.")
    at: str = Field(description="Commit time, ISO 8601 UTC.")
    info: dict[str, Any] = Field(default_factory=dict)


class JournalSummaryBody(Body):
    """A version in the summary form of document_history: what changed where, and how big, without the patch."""

    version: int
    op: str
    at: str
    path: str | None = Field(default=None, description="Where the change was made (the node written, else the "
                                                       "first operation's path).")
    patch_op_count: int
    patch_size_bytes: int
    info: dict[str, Any] = Field(default_factory=dict)


class HistoryResult(Body):
    success: bool = True
    doc_id: str
    entries: list[JournalEntryBody | JournalSummaryBody] = Field(description="Oldest first (summary=true: "
                                                                             "without patches).")
    current_version: int
    has_more: bool
    next_since_version: int = Field(description="Pass as since_version to get the next page.")


class DiffResult(Body):
    success: bool = True
    doc_id: str
    from_version: int
    to_version: int
    patch: list[dict[str, Any]] = Field(description="Applied to from_version, gives to_version exactly.")


class RevertResult(WriteBody):
    to_version: int


class MergePatchResult(WriteBody):
    node_path: str
    updated_node: Any


class DocumentStateResult(Body):
    success: bool = True
    doc_id: str
    version: int
    deleted: bool
    deleted_at: str | None = None


class PurgeResult(Body):
    success: bool = True
    doc_id: str
    purged: bool = True


class ChangeBody(Body):
    cursor: int
    doc_id: str
    version: int
    op: str
    at: str


class ChangesResult(Body):
    success: bool = True
    changes: list[ChangeBody]
    next_cursor: int = Field(description="Pass as since to get what was committed after this page.")


def journal_entry_body(entry: JournalEntry) -> JournalEntryBody:
    return JournalEntryBody(version=entry.version, op=entry.op, patch=entry.patch, at=entry.at, info=entry.info)


def journal_entry_summary(entry: JournalEntry) -> JournalSummaryBody:
    """An entry without its patch: version, operation, where, when and how big."""
    where = entry.info.get("node_path")
    if not isinstance(where, str):
        where = entry.patch[0].get("path") if entry.patch else None
    try:
        size = len(orjson.dumps(entry.patch))
    except TypeError:  # integers beyond 64 bits
        size = len(json.dumps(entry.patch, separators=(",", ":")))
    info = {key: value for key, value in entry.info.items() if key not in ("node_path", "seq")}
    return JournalSummaryBody(version=entry.version, op=entry.op, at=entry.at, info=info,
                              path=(where or "/") if isinstance(where, str) else None,
                              patch_op_count=len(entry.patch), patch_size_bytes=size)


def history_result(page: HistoryPage, *, summary: bool = False) -> HistoryResult:
    last = page.entries[-1].version if page.entries else page.since_version
    entries: list[JournalEntryBody | JournalSummaryBody] = \
        [journal_entry_summary(e) for e in page.entries] if summary else [journal_entry_body(e) for e in page.entries]
    return HistoryResult(doc_id=page.doc_id, entries=entries,
                         current_version=page.current_version, has_more=page.has_more, next_since_version=last)


def diff_result(doc_id: str, from_version: int, to_version: int, patch: list[dict[str, Any]]) -> DiffResult:
    return DiffResult(doc_id=doc_id, from_version=from_version, to_version=to_version, patch=patch)


def revert_result(result: WriteResult, to_version: int) -> RevertResult:
    return RevertResult(to_version=to_version, **write_fields(result))


def merge_patch_result(result: WriteResult) -> MergePatchResult:
    return MergePatchResult(node_path=result.node_path or "/", updated_node=result.node, **write_fields(result))


def document_state_result(meta: DocumentMeta) -> DocumentStateResult:
    return DocumentStateResult(doc_id=meta.doc_id, version=meta.version, deleted=meta.deleted_at is not None,
                               deleted_at=meta.deleted_at)


def purge_result(doc_id: str) -> PurgeResult:
    return PurgeResult(doc_id=doc_id)


def changes_result(page: ChangesPage) -> ChangesResult:
    return ChangesResult(changes=[ChangeBody(cursor=c.cursor, doc_id=c.doc_id, version=c.version, op=c.op, at=c.at)
                                  for c in page.changes], next_cursor=page.next_cursor)
