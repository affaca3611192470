"""The typed results of the client: the same pydantic models the server answers with (one declaration)."""

from __future__ import annotations

from schemadoc.operations.results import (
    ApplyPatchResult,
    BoundedReadNodeResult,
    ChangeBody,
    ChangesResult,
    CreateDocumentResult,
    CreateNodeResult,
    DeleteNodeResult,
    DiffResult,
    DocumentStateResult,
    ErrorCatalogResult,
    HistoryResult,
    JournalEntryBody,
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
    ValidateNodeResult,
)

__all__ = [
    "ApplyPatchResult", "BoundedReadNodeResult", "ChangeBody", "ChangesResult", "CreateDocumentResult",
    "CreateNodeResult", "DeleteNodeResult", "DiffResult", "DocumentStateResult", "ErrorCatalogResult",
    "HistoryResult", "JournalEntryBody", "ListDocumentsResult", "MergePatchResult", "MoveNodeResult",
    "NextIncompleteResult", "NodeSchemaResult", "OutlineResult", "PurgeResult", "ReadNodeResult", "RenderResult",
    "RevertResult", "RootSchemaResult", "SearchResult", "StatsResult", "UpdateNodeResult", "ValidateNodeResult",
]
