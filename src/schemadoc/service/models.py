"""The values the service's use cases return (and the change events it publishes)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from schemadoc.ops.journal import JournalEntry
from schemadoc.pointer import json_type
from schemadoc.reading import BoundedView, NodeCounts
from schemadoc.search.queries import SearchHit
from schemadoc.storage.base import DocumentMeta
from schemadoc.storage.shared import StoredChange
from schemadoc.validation import Repair, ValidationReport


@dataclass(frozen=True)
class DocState:
    meta: DocumentMeta
    content: Any


@dataclass(frozen=True)
class NodeRead:
    doc_id: str
    node_path: str
    node: Any
    version: int

    @property
    def node_type(self) -> str:
        return json_type(self.node)


@dataclass(frozen=True)
class NodeView:
    """A bounded read: where, which version, and the view (see :mod:`schemadoc.reading.views`)."""

    doc_id: str
    node_path: str
    version: int
    view: BoundedView


@dataclass(frozen=True)
class SearchPage:
    hits: list[SearchHit]
    next_cursor: str | None
    note: str | None = None
    """Said of the answer by the ranking (semantic search still being indexed: full text answered)."""

    @property
    def has_more(self) -> bool:
        return self.next_cursor is not None


@dataclass(frozen=True)
class Stats:
    doc_id: str
    version: int
    size_bytes: int
    counts: NodeCounts
    journal_length: int


@dataclass(frozen=True)
class NodeSchema:
    node_path: str
    schema: dict[str, Any]
    node_exists: bool | None


@dataclass(frozen=True)
class WriteResult:
    doc_id: str
    version: int                       # the new version (for a dry run: the unchanged current version)
    patch: list[dict[str, Any]]        # the strict RFC 6902 patch (as journaled)
    node_path: str                     # concrete pointer of the node written ("" = root)
    node: Any                          # new node (update/create), removed node (delete), None (raw patch)
    report: ValidationReport           # the new content's verdict: valid, or (a repair write) what remains
    dry_run: bool = False
    repair: Repair | None = None
    """Set when the write went to a document the served schema already rejects and was judged by the repair rule
    (``validation_level: moderate``): what it resolved; ``report`` is then what remains."""

    @property
    def accepted(self) -> bool:
        """Whether the write is (for a dry run: would be) accepted."""
        return self.report.valid or (self.repair is not None and self.repair.accepted)


@dataclass(frozen=True)
class DocumentList:
    documents: list[DocumentMeta]
    total: int
    offset: int
    limit: int
    next_cursor: str | None = None
    """The cursor of the next page (None on the last)."""
    labels: dict[str, str | None] = field(default_factory=dict)
    """Each listed document's label, from the index."""

    @property
    def has_more(self) -> bool:
        return self.next_cursor is not None


@dataclass(frozen=True)
class ChangeEvent:
    """Published after a write is committed (journaled and snapshotted)."""

    doc_id: str
    version: int
    kind: str                          # "created" | "updated" | "deleted" | "undeleted" | "purged"
    entry: JournalEntry | None
    size: int = 0
    """About the JSON size of ``entry`` in bytes, from what the write measured (what its patch added and its
    operations' paths; the document is never serialised for it): what a subscriber's buffer is charged."""


Listener = Callable[[ChangeEvent], None]


@dataclass(frozen=True)
class HistoryPage:
    doc_id: str
    entries: list[JournalEntry]
    current_version: int
    since_version: int
    scanned_to: int | None = None
    """The last version a filtered page looked at (its entries are those of the versions up to it that matched);
    ``None``: the page is unfiltered, its last entry is where it stopped."""

    @property
    def next_since_version(self) -> int:
        """Where the next page starts (its ``since_version``)."""
        if self.scanned_to is not None:
            return self.scanned_to
        return self.entries[-1].version if self.entries else self.since_version

    @property
    def has_more(self) -> bool:
        return self.next_since_version < self.current_version


@dataclass(frozen=True)
class DiffActors:
    """Who made the versions a diff spans (those after the lower of its two versions, up to the higher)."""

    actors: list[str]
    """Distinct names, in the order of the version each first wrote; versions with no recorded actor add none."""
    complete: bool
    """``True``: ``actors`` names every actor of the span; ``False``: the list or the versions read were cut."""
    through_version: int
    """``actors`` names every actor of the versions up to this one (the higher version when ``complete``)."""


Change = StoredChange
"""One committed version in the cross-document change feed; ``cursor`` orders the feed (the
same record whether this process or a shared store orders it)."""


@dataclass(frozen=True)
class ChangesPage:
    changes: list[Change]
    next_cursor: int
