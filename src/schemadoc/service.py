"""DocumentService: the use cases, and the only place that combines schema, ops, validation and storage.

Every write follows one pipeline (ARCHITECTURE.md, "The one data flow"):

1. compile the request into an RFC 6902 patch (against the current content),
2. take the document's write lock (threads and processes) and check the version,
3. apply the patch to a structurally shared copy,
4. validate the whole copy,
5. ``dry_run``: return patch + preview + report and stop,
6. journal + snapshot through the store (write-ahead, atomic),
7. swap the in-memory state and publish a change event.

Reads never take the write lock: they return the current immutable in-memory state. Stored
content is never mutated; callers must treat returned nodes as read-only.
"""

from __future__ import annotations

import bisect
import gc
import logging
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import orjson
from ulid import ULID

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch, apply_patches, check_patch, check_written_depth
from schemadoc.ops.compile import CompiledWrite, compile_create, compile_delete, compile_update
from schemadoc.ops.history import CHECKPOINT_EVERY, Checkpoints, compile_merge_patch, diff, replay_from
from schemadoc.ops.journal import JournalEntry, utc_now
from schemadoc.ops.limits import (
    MAX_PATCH_OPERATIONS,
    MAX_STRING_LENGTH,
    ArgumentScan,
    check_operation_count,
    check_pointer_length,
    check_string_lengths,
    scan_argument,
)
from schemadoc.ops.sizes import patch_size, serialise
from schemadoc.pointer import format_pointer, json_type, parse, parse_node_path, resolve
from schemadoc.reading import (
    BoundedView,
    Hit,
    Incomplete,
    NodeCounts,
    NodeSchemas,
    Outline,
    Rendered,
    SizeCache,
    bounded_view,
    count_nodes,
    next_incomplete,
    outline,
    render_markdown,
    search,
)
from schemadoc.schema import LoadedSchema
from schemadoc.snapshotter import SnapshotPolicy, Snapshotter
from schemadoc.storage.base import (
    DocumentMeta,
    DocumentStore,
    RecoveryReport,
    SharedStore,
    StoreNotice,
    check_doc_id,
)
from schemadoc.validation import DocumentValidator, ValidationReport

__all__ = [
    "Change",
    "ChangeEvent",
    "ChangesPage",
    "DocumentList",
    "DocumentService",
    "HistoryPage",
    "NodeRead",
    "NodeSchema",
    "NodeView",
    "SearchPage",
    "Stats",
    "WriteResult",
    "check_doc_id",
]

log = logging.getLogger("schemadoc.service")

LOCK_TIMEOUT_SECONDS = 10.0
MAX_JSON_DEPTH = 128
"""Default nesting limit of stored documents (``document-too-deep`` beyond it). The official MCP
Python client cannot parse a message nested more than 200 levels, and a history entry puts a
document's content 7 levels down (message, result, structured content, entries, entry, patch,
operation): 128 keeps every document readable through every result, with room to spare."""
_FREEZE_ABOVE_BYTES = 1 << 20
_MAX_CACHED_DOCUMENTS = 16
PERSIST_CHECKPOINT_EVERY = 256
"""The store is given the content of every 256th version (it keeps a bounded, log-spaced set of them)."""


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
    hits: list[Hit]
    cursor: int
    has_more: bool

    @property
    def next_cursor(self) -> int | None:
        return self.cursor + len(self.hits) if self.has_more else None


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
    report: ValidationReport
    dry_run: bool = False


@dataclass(frozen=True)
class DocumentList:
    documents: list[DocumentMeta]
    total: int
    offset: int
    limit: int

    @property
    def has_more(self) -> bool:
        return self.offset + len(self.documents) < self.total


@dataclass(frozen=True)
class ChangeEvent:
    """Published after a write is committed (journaled and snapshotted)."""

    doc_id: str
    version: int
    kind: str                          # "created" | "updated" | "deleted" | "undeleted" | "purged"
    entry: JournalEntry | None


Listener = Callable[[ChangeEvent], None]


@dataclass(frozen=True)
class HistoryPage:
    doc_id: str
    entries: list[JournalEntry]
    current_version: int
    since_version: int

    @property
    def has_more(self) -> bool:
        last = self.entries[-1].version if self.entries else self.since_version
        return last < self.current_version


@dataclass(frozen=True)
class Change:
    """One committed version in the cross-document change feed; ``cursor`` orders the feed."""

    cursor: int
    doc_id: str
    version: int
    op: str
    at: str


@dataclass(frozen=True)
class ChangesPage:
    changes: list[Change]
    next_cursor: int


class _ChangeFeed:
    """Cursor order for the cross-document feed.

    Each commit reserves a cursor (a hybrid clock: microseconds since the epoch, strictly
    increasing in this process) before it is journaled; the cursor travels in the journal entry
    (``info.seq``), so the feed can be rebuilt from the journals after a restart. Readers only
    see cursors below the lowest one still being committed (the watermark), so a slow commit
    can never be skipped by a client that already moved past a faster one.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._last = 0
        self._inflight: set[int] = set()
        self._changes: list[Change] | None = None

    def reserve(self) -> int:
        with self._lock:
            self._last = max(self._last + 1, time.time_ns() // 1000)
            self._inflight.add(self._last)
            return self._last

    def settle(self, cursor: int, change: Change | None) -> None:
        """The commit holding ``cursor`` finished (``change``) or failed (``None``)."""
        with self._lock:
            self._inflight.discard(cursor)
            if change is not None and self._changes is not None:
                bisect.insort(self._changes, change, key=lambda c: c.cursor)

    def loaded(self) -> bool:
        return self._changes is not None

    def load(self, changes: list[Change]) -> None:
        with self._lock:
            if self._changes is None:
                known = sorted(changes, key=lambda c: c.cursor)
                self._changes = known
                if known:
                    self._last = max(self._last, known[-1].cursor)

    def read(self, since: int, limit: int) -> ChangesPage:
        with self._lock:
            assert self._changes is not None
            watermark = min(self._inflight) if self._inflight else None
            start = bisect.bisect_right(self._changes, since, key=lambda c: c.cursor)
            page: list[Change] = []
            for change in self._changes[start:]:
                if len(page) >= limit or (watermark is not None and change.cursor >= watermark):
                    break
                page.append(change)
            return ChangesPage(page, page[-1].cursor if page else since)


def check_version(version: Any) -> int:
    return _check_int("version", version, 1, None)


class DocumentService:
    """The engine behind every door. Thread-safe; one instance per server process."""

    def __init__(self, schema: LoadedSchema, store: DocumentStore, *,
                 lock_timeout: float = LOCK_TIMEOUT_SECONDS, snapshot_policy: SnapshotPolicy | None = None,
                 max_json_depth: int = MAX_JSON_DEPTH, max_string_length: int = MAX_STRING_LENGTH,
                 max_patch_operations: int = MAX_PATCH_OPERATIONS) -> None:
        self.schema = schema
        self.max_json_depth = max_json_depth
        self.max_string_length = max_string_length
        """Longest string value, member name or pointer a write may carry, in characters."""
        self.max_patch_operations = max_patch_operations
        """Most RFC 6902 operations one patch (or one merge patch, compiled) may make."""
        self.store = store
        self.validator = DocumentValidator(schema)
        self.lock_timeout = lock_timeout
        self._states: dict[str, DocState] = {}
        self._listeners: list[Listener] = []
        self._listeners_lock = threading.Lock()
        self._checkpoint_cache: OrderedDict[str, Checkpoints] = OrderedDict()
        self._feed = _ChangeFeed()
        # a store shared by several processes orders the feed itself and tells of their commits
        self._shared: SharedStore | None = store if isinstance(store, SharedStore) else None
        self._unwatch: Callable[[], None] | None = None
        self.snapshots = Snapshotter(store, snapshot_policy or SnapshotPolicy(), _weakly(self._snapshot_source))
        self.sizes = SizeCache()
        """Byte sizes of stored containers by identity (content is never mutated)."""
        self._node_schemas = NodeSchemas(schema)
        self._counts: dict[str, tuple[Any, NodeCounts]] = {}  # doc_id -> (content counted, its counts)

    # -- life cycle --------------------------------------------------------------------------

    def open(self) -> RecoveryReport:
        """Prepare the store (create the directory, clean up, roll journals forward)."""
        report = self.store.open()
        if self._shared is not None and self._unwatch is None:
            self._unwatch = self._shared.watch(self._on_other_process)
        for doc_id, reason in report.corrupt.items():
            log.error("document %s is unreadable: %s", doc_id, reason)
        for doc_id, (old, new) in report.rolled_forward.items():
            log.warning("document %s rolled forward from version %d to %d", doc_id, old, new)
        return report

    def close(self) -> None:
        """Write every lagging snapshot, stop hearing other processes and release the store's connections."""
        self.snapshots.close()
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        if self._shared is not None:
            self._shared.close()

    def _snapshot_source(self, doc_id: str) -> tuple[int, Any] | None:
        state = self._states.get(doc_id)
        return (state.meta.version, state.content) if state is not None else None

    def _on_other_process(self, notice: StoreNotice) -> None:
        """A commit or purge by another process on a shared store: tell this process's subscribers.

        The event has no journal entry: feeds read it from the journal, readers catch up on their
        next read (every read compares the stored version with the cached one).
        """
        if notice.kind == "purged":
            self._states.pop(notice.doc_id, None)
            self._checkpoint_cache.pop(notice.doc_id, None)
        self._publish(ChangeEvent(notice.doc_id, notice.version, notice.kind, None))

    @property
    def schema_uri(self) -> str:
        """The schema's ``$id`` when it has one (no server paths leak), else its file URI."""
        return self.schema.base_uri

    # -- events ------------------------------------------------------------------------------

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener`` after each committed write; returns the unsubscribe function.

        Listeners run in the writer's thread while the document's lock is held, so events of a
        document arrive in version order; they must only hand the event on (queue it), never block.
        """
        with self._listeners_lock:
            self._listeners.append(listener)

        def unsubscribe() -> None:
            with self._listeners_lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return unsubscribe

    def _publish(self, event: ChangeEvent) -> None:
        with self._listeners_lock:
            listeners = list(self._listeners)
        for listener in listeners:
            try:
                listener(event)
            except Exception:  # a broken subscriber must not fail a committed write
                log.exception("change listener failed for %s v%d", event.doc_id, event.version)

    # -- reads -------------------------------------------------------------------------------

    def read_node(self, doc_id: str, node_path: str, at_version: int | None = None) -> NodeRead:
        """The node at ``node_path`` now, or at ``at_version`` (a past version) when given."""
        if at_version is not None:
            return self.read_node_at(doc_id, node_path, at_version)
        doc_id = check_doc_id(doc_id)
        state = self._state(doc_id)
        tokens = parse_node_path(_path_arg(node_path))
        node, concrete = resolve(state.content, tokens)
        return NodeRead(doc_id, format_pointer(concrete), node, state.meta.version)

    def read_document(self, doc_id: str) -> tuple[Any, DocumentMeta]:
        """The whole current document (validated on the way out, FR-034) and its meta."""
        doc_id = check_doc_id(doc_id)
        state = self._state(doc_id)
        report = self.validator.validate(state.content)
        if not report.valid:  # only possible if someone edited the files behind our back
            raise SchemaDocError("storage-read-failed",
                                 f"Document {doc_id} on disk no longer validates against the schema.",
                                 {"doc_id": doc_id, "violations": report.to_dict()["errors"][:20]})
        return state.content, state.meta

    def node_schema(self, node_path: str, doc_id: str | None = None, *, dereferenced: bool = True) -> NodeSchema:
        tokens = parse_node_path(_path_arg(node_path))
        exists: bool | None = None
        if doc_id is not None:
            state = self._state(check_doc_id(doc_id))
            try:
                resolve(state.content, tokens)
                exists = True
            except SchemaDocError as error:
                if error.code != "path-not-found":
                    raise
                exists = False
        schema = self.schema.node_schema(tokens, dereferenced=dereferenced)
        return NodeSchema(format_pointer(tokens), schema, exists)

    def root_schema(self, *, dereferenced: bool = True) -> dict[str, Any]:
        return self.schema.dereferenced_root() if dereferenced else self.schema.root

    def list_documents(self, limit: int = 100, offset: int = 0) -> DocumentList:
        _check_int("limit", limit, 1, 1000)
        _check_int("offset", offset, 0, None)
        metas = [meta for meta in self.store.list_metas() if meta.deleted_at is None]
        return DocumentList(metas[offset: offset + limit], len(metas), offset, limit)

    def reads_locally(self, doc_id: str) -> bool:
        """Whether reading ``doc_id`` now needs no more than memory and small local files.

        True when its current content is in memory and the store is not shared: such a read
        (``read_node`` without ``at_version``, ``node_schema``) only checks freshness in the small
        meta file and, if another process wrote since, reads the journal lines after the version
        held. An asynchronous caller may run it on its event loop. A shared store (a database)
        answers even that check over the network, and a document not in memory is loaded first.
        """
        return self._shared is None and doc_id in self._states

    def version_of(self, doc_id: str) -> int:
        return self._state(check_doc_id(doc_id)).meta.version

    # -- reads for agents on large documents (the logic is in schemadoc.reading) ---------------

    def read_view(self, doc_id: str, node_path: str, *, at_version: int | None = None,
                  max_depth: int | None = None, offset: int = 0, limit: int | None = None,
                  max_bytes: int | None = None) -> NodeView:
        """A bounded read of a node: ``max_depth`` levels, a window of its children, within ``max_bytes``."""
        _check_bounds(max_depth=max_depth, offset=offset, limit=limit, max_bytes=max_bytes)
        read = self.read_node(doc_id, node_path, at_version=at_version)
        view = bounded_view(read.node, read.node_path, self.sizes, max_depth=max_depth, offset=offset,
                            limit=limit, max_bytes=max_bytes)
        return NodeView(read.doc_id, read.node_path, read.version, view)

    def outline(self, doc_id: str, node_path: str = "/", depth: int = 2, *, offset: int = 0,
                limit: int | None = None, max_bytes: int | None = None) -> tuple[NodeRead, Outline]:
        """The table of contents of a node, ``depth`` levels down, without the leaf values."""
        _check_int("depth", depth, 0, _MAX_OUTLINE_DEPTH)
        _check_bounds(offset=offset, limit=limit, max_bytes=max_bytes)
        read, tokens = self._read_tokens(doc_id, node_path)
        found = outline(read.node, tokens, read.node_path, self.sizes, self._node_schemas, depth=depth,
                        offset=offset, limit=limit, max_bytes=max_bytes)
        return read, found

    def next_incomplete(self, doc_id: str, node_path: str = "/", limit: int = 10) -> tuple[NodeRead, list[Incomplete],
                                                                                            bool]:
        """The next places, breadth first, where the document is valid but not finished by the schema."""
        _check_int("limit", limit, 1, _MAX_INCOMPLETE)
        read, tokens = self._read_tokens(doc_id, node_path)
        found, more = next_incomplete(read.node, tokens, read.node_path, self._node_schemas,
                                      self._fits, limit=limit)
        return read, found, more

    def search(self, query: str, node_path: str | None = None, doc_ids: list[str] | None = None, *,
               limit: int = 20, cursor: int = 0) -> SearchPage:
        """String leaves containing ``query`` (case-insensitive) across documents, oldest document first."""
        if not isinstance(query, str) or not query:
            raise SchemaDocError("invalid-request", "query must be a non-empty string.", {"argument": "query"})
        _check_int("limit", limit, 1, _MAX_SEARCH_HITS)
        _check_int("cursor", cursor, 0, None)
        tokens = parse_node_path(_path_arg(node_path)) if node_path is not None else []
        if doc_ids is not None:
            if not isinstance(doc_ids, list) or not all(isinstance(d, str) for d in doc_ids):
                raise SchemaDocError("invalid-request", "doc_ids must be a list of document ids.",
                                     {"argument": "doc_ids"})
            ids = [check_doc_id(doc_id) for doc_id in doc_ids]
            for doc_id in ids:  # unknown ids fail up front, as any read of them would
                self._state(doc_id)
        else:
            ids = [meta.doc_id for meta in self.store.list_metas() if meta.deleted_at is None]

        def documents() -> Iterator[tuple[str, Any, str]]:
            for doc_id in ids:
                try:
                    content = self._state(doc_id).content
                except SchemaDocError as error:
                    if error.code == "document-not-found":  # deleted since the listing
                        continue
                    raise
                if not tokens:
                    yield doc_id, content, ""
                    continue
                try:
                    node, concrete = resolve(content, tokens)
                except SchemaDocError as error:
                    if error.code == "path-not-found":
                        continue
                    raise
                yield doc_id, node, format_pointer(concrete)

        hits, more = search(documents(), query, skip=cursor, limit=limit)
        return SearchPage(hits, cursor, more)

    def stats(self, doc_id: str) -> Stats:
        """Size, node counts by type, depth, version and journal length of a document."""
        doc_id = check_doc_id(doc_id)
        state = self._state(doc_id)
        counted = self._counts.get(doc_id)
        if counted is None or counted[0] is not state.content:
            counted = self._counts[doc_id] = (state.content, count_nodes(state.content))
        return Stats(doc_id, state.meta.version, self.sizes.size(state.content), counted[1], state.meta.version)

    def render(self, doc_id: str, node_path: str = "/", format: str = "markdown", *, offset: int = 0,
               limit: int | None = None, max_bytes: int | None = None) -> tuple[NodeRead, Rendered]:
        """A readable rendering of a node driven by the schema (titles as headings, arrays as lists)."""
        if format != "markdown":
            raise SchemaDocError("invalid-request", f"format must be 'markdown', got {format!r}.",
                                 {"argument": "format", "value": repr(format), "accepted": ["markdown"]})
        _check_bounds(offset=offset, limit=limit, max_bytes=max_bytes)
        read, tokens = self._read_tokens(doc_id, node_path)
        rendered = render_markdown(read.node, tokens, self._node_schemas, offset=offset,
                                   limit=limit, max_bytes=max_bytes)
        return read, rendered

    def _read_tokens(self, doc_id: str, node_path: str) -> tuple[NodeRead, list[str | int]]:
        """``read_node`` and the concrete tokens of the node (array indices as integers)."""
        doc_id = check_doc_id(doc_id)
        state = self._state(doc_id)
        node, concrete = resolve(state.content, parse_node_path(_path_arg(node_path)))
        return NodeRead(doc_id, format_pointer(concrete), node, state.meta.version), concrete

    def _fits(self, schema: dict[str, Any], value: Any) -> bool:
        return self.validator.validate_fragment(schema, value).valid

    # -- writes ------------------------------------------------------------------------------

    def create_document(self) -> tuple[str, Any, DocumentMeta, ValidationReport]:
        """A new document from the schema's defaults, at version 1."""
        content = self.schema.defaults()
        report = self.validator.validate(content)
        report.raise_if_invalid(reason="the schema's defaults do not validate against the schema itself")
        doc_id = str(ULID())
        with self.store.write_lock(doc_id, self.lock_timeout):
            meta = self._commit(doc_id, None, content, [{"op": "add", "path": "", "value": content}],
                                "create", {}, kind="created")
        return doc_id, content, meta, report

    def update_node(self, doc_id: str, node_path: str, node_data: Any, version: int, *,
                    dry_run: bool = False, scanned: ArgumentScan | None = None) -> WriteResult:
        path = _path_arg(node_path)
        scan = self._check_node_write(path, node_data, scanned)
        return self._write(doc_id, version, "update_node", lambda doc: compile_update(doc, path, node_data),
                           dry_run=dry_run, node_of=_node_at, written=_written_depths(scan, [node_data], 0))

    def create_node(self, doc_id: str, node_path: str, node_data: Any, version: int, *,
                    dry_run: bool = False, scanned: ArgumentScan | None = None) -> WriteResult:
        path = _path_arg(node_path)
        scan = self._check_node_write(path, node_data, scanned)
        return self._write(doc_id, version, "create_node", lambda doc: compile_create(doc, path, node_data),
                           dry_run=dry_run, node_of=_node_at, written=_written_depths(scan, [node_data], 0))

    def scan_argument(self, value: Any, *, text: bytes | None = None, surrogates: bool = False) -> ArgumentScan:
        """The one walk of a written argument (``node_data``, ``patch``, ``merge_patch``) at this service's
        limits (:func:`~schemadoc.ops.limits.scan_argument`). A door that makes it passes it on to the
        write as ``scanned``, so the write does not walk the value again; ``text``: the JSON it was read from."""
        return scan_argument(value, max_json_depth=self.max_json_depth, max_string_length=self.max_string_length,
                             surrogates=surrogates, text=text)

    def _scan(self, value: Any, scanned: ArgumentScan | None, argument: str) -> ArgumentScan:
        """``scanned`` when it is a scan of ``value`` at this service's limit, else a new one;
        ``request-too-large`` (naming the offender) when a string or member name is too long."""
        scan = scanned if scanned is not None and scanned.covers(value, self.max_string_length) \
            else self.scan_argument(value)
        if scan.too_long:
            check_string_lengths(value, self.max_string_length, argument)  # finds the offender and raises
        return scan

    def _check_node_write(self, path: str, node_data: Any, scanned: ArgumentScan | None) -> ArgumentScan:
        """The request limits of a node write: its path and the strings of ``node_data``."""
        check_pointer_length(path, self.max_string_length, "node_path")
        return self._scan(node_data, scanned, "node_data")

    def delete_node(self, doc_id: str, node_path: str, version: int, *, dry_run: bool = False) -> WriteResult:
        path = _path_arg(node_path)
        return self._write(doc_id, version, "delete_node", lambda doc: compile_delete(doc, path),
                           dry_run=dry_run, node_of=_removed_node)

    def move_node(self, doc_id: str, from_path: str, to_path: str, version: int, *,
                  dry_run: bool = False) -> WriteResult:
        """RFC 6902 ``move`` (also reordering inside an array; ``to_path`` may end in ``/-``), validated
        like every write; the result's node is the moved node at its concrete new path."""
        source, target = _path_arg(from_path), _path_arg(to_path)
        check_pointer_length(source, self.max_string_length, "from_path")
        check_pointer_length(target, self.max_string_length, "to_path")
        if source in ("", "/"):
            raise SchemaDocError("invalid-request", "The root cannot be moved.", {"argument": "from_path"})
        if target == "/":
            target = ""
        source_tokens = parse(source)
        operation = [{"op": "move", "from": source, "path": target}]

        def build(document: Any) -> CompiledWrite:
            resolve(document, source_tokens, allow_negative=False)  # path-not-found names what is missing
            strict = apply_patch(document, check_patch(operation)).patch
            return CompiledWrite(strict, strict[0]["path"])

        return self._write(doc_id, version, "move_node", build, dry_run=dry_run, node_of=_node_at,
                           info={"from_path": source, "node_path": target})

    def apply_patch(self, doc_id: str, patch: Any, version: int, *, dry_run: bool = False,
                    scanned: ArgumentScan | None = None) -> WriteResult:
        """A raw RFC 6902 patch (all six ops) as one atomic write."""
        if isinstance(patch, list):  # counted first: a patch over the limit is not inspected op by op
            check_operation_count(len(patch), self.max_patch_operations, "patch")
        checked = check_patch(patch)
        scan = self._scan(checked, scanned, "patch")  # values, paths and 'from' alike
        # an operation's value sits two containers down in the patch (the array, the operation)
        values = [operation["value"] for operation in checked if operation["op"] in ("add", "replace")]
        return self._write(doc_id, version, "patch", lambda doc: CompiledWrite(checked, ""),
                           dry_run=dry_run, node_of=_no_node, written=_written_depths(scan, values, 2))

    def merge_patch(self, doc_id: str, node_path: str, merge_patch: Any, version: int, *,
                    dry_run: bool = False, scanned: ArgumentScan | None = None) -> WriteResult:
        """RFC 7396 at a node, checked against the node's merge-patch schema, journaled as RFC 6902."""
        path = _path_arg(node_path)
        check_pointer_length(path, self.max_string_length, "node_path")
        self._scan(merge_patch, scanned, "merge_patch")
        tokens = parse_node_path(path)

        def build(document: Any) -> CompiledWrite:
            node, concrete = resolve(document, tokens)
            problems = self._merge_patch_problems(concrete, merge_patch)
            compiled = CompiledWrite(compile_merge_patch(node, merge_patch, concrete), format_pointer(concrete))
            check_operation_count(len(compiled.patch), self.max_patch_operations, "merge_patch")
            if problems:
                self._refuse_merge_patch(doc_id, version, document, compiled, problems)
            return compiled

        return self._write(doc_id, version, "merge_patch", build, dry_run=dry_run, node_of=_node_at)

    def revert(self, doc_id: str, to_version: int, version: int, *, dry_run: bool = False) -> WriteResult:
        """A new version whose content equals ``to_version`` (nothing in the journal is rewritten)."""
        doc_id = check_doc_id(doc_id)
        target = self.read_version(doc_id, to_version)
        return self._write(doc_id, version, "revert", lambda doc: CompiledWrite(diff(doc, target), ""),
                           dry_run=dry_run, node_of=_no_node, info={"to_version": to_version})

    def delete_document(self, doc_id: str, version: int) -> DocumentMeta:
        """Soft-delete a whole document (journaled; reads say document-not-found until undeleted)."""
        doc_id = check_doc_id(doc_id)
        version = check_version(version)
        with self._locked(doc_id, dry_run=False) as state:
            _check_current(doc_id, version, state.meta.version)
            meta = self._commit(doc_id, state, state.content, [], "delete_document", {},
                                kind="deleted", deleted_at=utc_now(), size=state.meta.content_size_bytes)
        return meta

    def undelete_document(self, doc_id: str) -> DocumentMeta:
        """Bring a deleted document back with its whole history (journaled as a new version)."""
        doc_id = check_doc_id(doc_id)
        self.store.read_meta(doc_id)
        with self.store.write_lock(doc_id, self.lock_timeout):
            state = self._state(doc_id, include_deleted=True)
            if state.meta.deleted_at is None:
                raise SchemaDocError("conflict", f"Document {doc_id} is not deleted.", {"doc_id": doc_id},
                                     remediation="Only a deleted document can be restored.")
            meta = self._commit(doc_id, state, state.content, [], "undelete_document", {},
                                kind="undeleted", deleted_at=None, size=state.meta.content_size_bytes)
        return meta

    def purge_document(self, doc_id: str) -> None:
        """Really remove a deleted document's files. Only deleted documents can be purged."""
        doc_id = check_doc_id(doc_id)
        self.store.read_meta(doc_id)
        with self.store.write_lock(doc_id, self.lock_timeout):
            state = self._state(doc_id, include_deleted=True)
            if state.meta.deleted_at is None:
                raise SchemaDocError("conflict", f"Document {doc_id} must be deleted before it is purged.",
                                     {"doc_id": doc_id},
                                     remediation="Delete it with document_delete first; purging cannot be undone.")
            self.store.purge(doc_id)
            self.snapshots.forget(doc_id)
            self._states.pop(doc_id, None)
            self._checkpoint_cache.pop(doc_id, None)
            self._publish(ChangeEvent(doc_id, state.meta.version, "purged", None))

    def _write(self, doc_id: str, version: int, op: str, build: Callable[[Any], CompiledWrite], *,
               dry_run: bool, node_of: Callable[[Any, Any, str], Any],
               info: dict[str, Any] | None = None, written: dict[int, tuple[int, bool]] | None = None) -> WriteResult:
        doc_id = check_doc_id(doc_id)
        version = check_version(version)
        if not isinstance(dry_run, bool):
            raise SchemaDocError("invalid-request", "dry_run must be a boolean.", {"argument": "dry_run"})
        with self._locked(doc_id, dry_run) as state:
            current = state.meta.version
            _check_current(doc_id, version, current)
            compiled = build(state.content)
            applied = apply_patch(state.content, compiled.patch)
            check_written_depth(applied.document, applied.patch, self.max_json_depth, known=written)
            report = self.validator.validate_change(state.content, applied.document, patch=applied.patch,
                                                    keep=not dry_run)
            node_path = compiled.node_path
            node = node_of(state.content, applied.document, node_path)
            if dry_run:
                if report.valid:  # a valid preview of something that cannot be stored must fail like the write
                    patch_size(state.content, state.meta.content_size_bytes, applied.patch, doc_id)
                return WriteResult(doc_id, current, applied.patch, node_path, node, report, dry_run=True)
            report.raise_if_invalid(doc_id=doc_id, version=current)
            # what the patch adds is checked and measured; the document itself is not serialised
            sized = patch_size(state.content, state.meta.content_size_bytes, applied.patch, doc_id)
            entry_info = dict(info) if info is not None else ({"node_path": node_path} if op != "patch" else {})
            meta = self._commit(doc_id, state, applied.document, applied.patch, op, entry_info, kind="updated",
                                size=sized.size, edit_bytes=sized.added_bytes)
        return WriteResult(doc_id, meta.version, applied.patch, node_path, node, report)

    def _commit(self, doc_id: str, state: DocState | None, content: Any, patch: list[dict[str, Any]], op: str,
                info: dict[str, Any], *, kind: str, deleted_at: str | bool | None = False,
                size: int | None = None, edit_bytes: int = 0) -> DocumentMeta:
        """Journal one new version (caller holds the write lock), then publish it.

        ``size`` is the new content's compact JSON size (``None``: the document is serialised to
        learn it, for a creation). Small documents get their snapshot inline; the others lag, and
        the snapshotter catches up off the write path.
        """
        data: bytes | None = None
        if size is None:
            data = serialise(content, doc_id)
            size = len(data)
            edit_bytes = size
        elif state is None or self.snapshots.policy.inline(size):
            data = orjson.dumps(content)
        # a shared store orders the feed itself (across processes); otherwise this process does
        cursor = self._feed.reserve() if self._shared is None else 0
        change: Change | None = None
        try:
            now = utc_now()
            entry = JournalEntry(version=1 if state is None else state.meta.version + 1, op=op, patch=patch,
                                 at=now, info={**info, "seq": cursor} if self._shared is None else info)
            if state is None:
                assert data is not None
                meta = DocumentMeta(doc_id=doc_id, version=1, schema_uri=self.schema_uri, created_at=now,
                                    modified_at=now, content_size_bytes=size)
                self.store.create(meta, entry, data)
            else:
                meta = replace(state.meta, version=entry.version, modified_at=now, content_size_bytes=size,
                               snapshot_version=entry.version if data is not None else state.meta.snapshot_version)
                if deleted_at is not False:
                    meta = replace(meta, deleted_at=deleted_at if isinstance(deleted_at, str) else None)
                try:
                    self.store.commit(meta, entry, data)
                except SchemaDocError:
                    # the store may have rolled the document forward: forget what we cached
                    self._states.pop(doc_id, None)
                    self._checkpoint_cache.pop(doc_id, None)
                    raise
            self._states[doc_id] = DocState(meta, content)
            change = Change(cursor, doc_id, entry.version, op, now)
            if state is not None:
                self.snapshots.committed(doc_id, edit_bytes + 200, inline=data is not None)
            if entry.version % PERSIST_CHECKPOINT_EVERY == 0:
                if data is not None:  # small: cheap to keep now
                    self._persist_checkpoint(doc_id, entry.version, data)
                else:
                    self.snapshots.checkpoint(doc_id, entry.version, content)
        finally:
            if self._shared is None:
                self._feed.settle(cursor, change)
        self._publish(ChangeEvent(doc_id, meta.version, kind, entry))
        return meta

    def _merge_patch_problems(self, concrete: list[str | int], merge_patch: Any) -> list[dict[str, Any]]:
        """What the node's merge-patch schema refuses in ``merge_patch``, with paths from the document root."""
        node_pointer = format_pointer(concrete)
        schema = self.schema.merge_patch_schema([str(token) for token in concrete])
        report = self.validator.validate_fragment(schema, merge_patch)
        return [{**v.to_dict(), "path": node_pointer + v.path} for v in report.violations]

    def _refuse_merge_patch(self, doc_id: str, version: Any, document: Any, compiled: CompiledWrite,
                            problems: list[dict[str, Any]]) -> None:
        """``validation-failed`` listing every violation the merge patch would cause, at once.

        The merge-patch schema finds refused values and members; the resulting document's
        validation finds what the patch's deletions break (a required member set to null). Both
        are listed, each violation once: the result's own violations first, then what only the
        merge-patch schema saw (its "null or a valid value" ``any-of-failed`` is left out where
        the result already names the value's problem).
        """
        try:
            resulting = self.validator.validate(apply_patch(document, compiled.patch).document)
        except SchemaDocError:  # the result cannot even be built: what the schema check found is all there is
            resulting = None
        violations = [] if resulting is None else [v.to_dict() for v in resulting.violations]
        seen = {(v["code"], v["path"]) for v in violations}
        for problem in problems:
            path = problem["path"]
            covered = problem["code"] == "any-of-failed" and any(
                v["path"] == path or v["path"].startswith(path + "/") for v in violations)
            if (problem["code"], path) not in seen and not covered:
                seen.add((problem["code"], path))
                violations.append(problem)
        count = len(violations)
        raise SchemaDocError(
            "validation-failed",
            f"The merge patch would make the document invalid ({count} error{'s' if count != 1 else ''}); "
            "nothing was changed.",
            {"doc_id": doc_id, "version": version, "path": compiled.node_path or "/", "violations": violations})

    # -- history -----------------------------------------------------------------------------

    def history(self, doc_id: str, since_version: int = 0, limit: int = 100, *,
                include_deleted: bool = False) -> HistoryPage:
        """Journal entries after ``since_version``, oldest first, at most ``limit``.

        A deleted document's history is ``document-not-found`` unless ``include_deleted``
        (change feeds use it to deliver the deletion itself).
        """
        doc_id = check_doc_id(doc_id)
        _check_int("since_version", since_version, 0, None)
        _check_int("limit", limit, 1, 1000)
        state = self._state(doc_id, include_deleted=include_deleted)
        if since_version > state.meta.version:
            raise SchemaDocError(
                "version-not-found",
                f"Document {doc_id} is at version {state.meta.version}; there is no version {since_version}.",
                {"doc_id": doc_id, "version": since_version, "latest_version": state.meta.version})
        entries = self.store.read_journal(doc_id, since_version=since_version, until_version=since_version + limit)
        return HistoryPage(doc_id, entries, state.meta.version, since_version)

    def read_version(self, doc_id: str, version: int) -> Any:
        """The whole document as it was at ``version``.

        Rebuilt from the nearest checkpoint below it (in memory, persisted, or the current
        content); recent versions replay at most ``PERSIST_CHECKPOINT_EVERY - 1`` patches, older ones more
        (persisted checkpoints thin out with age, see ``keep_checkpoints``).
        """
        doc_id = check_doc_id(doc_id)
        state = self._state(doc_id)
        if isinstance(version, bool) or not isinstance(version, int):
            raise SchemaDocError("invalid-request", f"A version must be an integer, got {version!r}.",
                                 {"argument": "version", "value": repr(version)})
        latest = state.meta.version
        if not 1 <= version <= latest:
            raise SchemaDocError(
                "version-not-found",
                f"Document {doc_id} has versions 1 to {latest}; there is no version {version}.",
                {"doc_id": doc_id, "version": version, "latest_version": latest})
        if version == latest:
            return state.content
        checkpoints = self._checkpoints(doc_id)
        base_version, base = checkpoints.nearest(version) or (0, None)
        if version - base_version >= CHECKPOINT_EVERY:
            persisted = self.store.read_checkpoint(doc_id, version)
            if persisted is not None and persisted[0] > base_version:
                try:
                    base_version, base = persisted[0], orjson.loads(persisted[1])
                    checkpoints.remember(base_version, base)
                except orjson.JSONDecodeError:  # a cache torn by a crash: replay further instead
                    log.warning("document %s: checkpoint of version %d is unreadable", doc_id, persisted[0])
                    base_version, base = checkpoints.nearest(version) or (0, None)
        if base_version == version:
            return base
        entries = self.store.read_journal(doc_id, since_version=base_version, until_version=version)
        return replay_from(base, entries, checkpoints)

    def read_node_at(self, doc_id: str, node_path: str, at_version: int) -> NodeRead:
        """``read_node`` on a past version; the same path diagnostics apply."""
        content = self.read_version(doc_id, at_version)
        tokens = parse_node_path(_path_arg(node_path))
        node, concrete = resolve(content, tokens)
        return NodeRead(check_doc_id(doc_id), format_pointer(concrete), node, at_version)

    def diff(self, doc_id: str, from_version: int, to_version: int) -> list[dict[str, Any]]:
        """An RFC 6902 patch turning version ``from_version`` into ``to_version`` (either direction)."""
        return diff(self.read_version(doc_id, from_version), self.read_version(doc_id, to_version))

    def changes(self, since: int = 0, limit: int = 100) -> ChangesPage:
        """Committed versions of every document after cursor ``since``, in commit order."""
        _check_int("since", since, 0, None)
        _check_int("limit", limit, 1, 1000)
        if self._shared is not None:
            stored = self._shared.read_changes(since, limit)
            changes = [Change(c.cursor, c.doc_id, c.version, c.op, c.at) for c in stored]
            return ChangesPage(changes, changes[-1].cursor if changes else since)
        if not self._feed.loaded():
            found: list[Change] = []
            for meta in self.store.list_metas():
                for entry in self.store.read_journal(meta.doc_id):
                    seq = entry.info.get("seq")
                    if isinstance(seq, int):
                        found.append(Change(seq, meta.doc_id, entry.version, entry.op, entry.at))
            self._feed.load(found)
        return self._feed.read(since, limit)

    def _checkpoints(self, doc_id: str) -> Checkpoints:
        checkpoints = self._checkpoint_cache.get(doc_id)
        if checkpoints is None:
            checkpoints = self._checkpoint_cache[doc_id] = Checkpoints()
            while len(self._checkpoint_cache) > _MAX_CACHED_DOCUMENTS:
                self._checkpoint_cache.popitem(last=False)
        else:
            self._checkpoint_cache.move_to_end(doc_id)
        return checkpoints

    def _persist_checkpoint(self, doc_id: str, version: int, data: bytes) -> None:
        try:
            self.store.write_checkpoint(doc_id, version, data)
        except OSError as error:  # a cache: losing one only makes old reads replay more
            log.warning("document %s: checkpoint of version %d not written: %s", doc_id, version, error.strerror)

    # -- state -------------------------------------------------------------------------------

    @contextmanager
    def _locked(self, doc_id: str, dry_run: bool) -> Iterator[DocState]:
        """The current state; for real writes, under the document's write lock and caught up with disk."""
        if dry_run:
            yield self._state(doc_id)
            return
        self.store.read_meta(doc_id)  # document-not-found before a lock file is made for nothing
        with self.store.write_lock(doc_id, self.lock_timeout):
            yield self._state(doc_id)

    def _state(self, doc_id: str, *, include_deleted: bool = False) -> DocState:
        """The in-memory state of a document, loaded on first use and caught up with the store.

        Another process may share the storage directory: when the stored version moved on, the
        new journal entries are applied to the cached content (the journal is written first, so
        it is never behind the snapshot).
        """
        meta = self.store.read_meta(doc_id)
        cached = self._states.get(doc_id)
        if cached is None or cached.meta.version > meta.version:
            cached = self._load(doc_id)
        elif cached.meta.version < meta.version:
            cached = self._catch_up(cached, meta)
        if cached.meta != meta and cached.meta.version == meta.version:  # deleted_at, snapshot_version
            cached = DocState(meta, cached.content)
            self._states[doc_id] = cached
        if cached.meta.deleted_at is not None and not include_deleted:
            raise SchemaDocError(
                "document-not-found", f"Document {doc_id} was deleted.",
                {"doc_id": doc_id, "deleted": True, "deleted_at": cached.meta.deleted_at},
                remediation="Restore it with document_undelete, or create a new document.")
        return cached

    def _load(self, doc_id: str) -> DocState:
        stored = self.store.load(doc_id)  # the store reads snapshot, meta and journal tail under the write lock
        big = len(stored.content) > _FREEZE_ABOVE_BYTES
        try:
            content = orjson.loads(stored.content)
        except orjson.JSONDecodeError as error:
            raise SchemaDocError("storage-read-failed", f"Document {doc_id} is not valid JSON on disk: {error}.",
                                 {"doc_id": doc_id}) from None
        if big:
            gc.freeze()  # long-lived document: keep the collector from rescanning it (halves parse time)
        if stored.entries:  # the journal after the snapshot, in one workspace (each path copied once)
            try:
                content = apply_patches(content, [entry.patch for entry in stored.entries])
            except SchemaDocError as error:
                raise SchemaDocError("storage-read-failed",
                                     f"The journal of document {doc_id} does not replay onto its snapshot: "
                                     f"{error.message}", {"doc_id": doc_id, "reason": error.message}) from None
            if big:
                gc.freeze()
        state = DocState(stored.meta, content)
        self._states[doc_id] = state
        self.snapshots.lagging(doc_id, len(stored.entries))
        return state

    def _catch_up(self, cached: DocState, meta: DocumentMeta) -> DocState:
        """Apply the journal entries another process committed since ``cached``, up to ``meta``'s version."""
        entries = self.store.read_journal(meta.doc_id, since_version=cached.meta.version, until_version=meta.version)
        state = DocState(meta, replay_from(cached.content, entries))
        self._states[meta.doc_id] = state
        return state


def _weakly(source: Callable[[str], tuple[int, Any] | None]) -> Callable[[str], tuple[int, Any] | None]:
    """``source`` (a bound method) without keeping its object alive: ``None`` once the object is gone.

    The snapshotter's thread outlives a service dropped without ``close()``; through a strong
    reference it would keep the service, and every document it holds, alive (and a service in a
    reference cycle when a big document's load calls ``gc.freeze()`` is never freed at all).
    """
    method = weakref.WeakMethod(source)

    def call(doc_id: str) -> tuple[int, Any] | None:
        bound = method()
        return None if bound is None else bound(doc_id)

    return call


def _check_current(doc_id: str, version: int, current: int) -> None:
    if version != current:
        raise SchemaDocError(
            "version-conflict",
            f"Document {doc_id} is at version {current}, not {version}; it changed since you read it.",
            {"doc_id": doc_id, "expected_version": version, "actual_version": current},
            remediation="Re-read the node to get the current version and content, reapply your "
                        "change, and retry with that version.")


def _check_int(name: str, value: Any, low: int, high: int | None) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low or (high is not None and value > high):
        bounds = f"from {low} to {high}" if high is not None else f">= {low}"
        raise SchemaDocError("invalid-request", f"{name} must be an integer {bounds}, got {value!r}.",
                             {"argument": name, "value": repr(value)})
    return int(value)


_MAX_OUTLINE_DEPTH = 32
_MAX_INCOMPLETE = 100
_MAX_SEARCH_HITS = 100


def _check_bounds(*, max_depth: int | None = None, offset: int = 0, limit: int | None = None,
                  max_bytes: int | None = None) -> None:
    """The arguments of bounded reads: ``invalid-request`` naming the one out of range."""
    if max_depth is not None:
        _check_int("max_depth", max_depth, 0, 255)
    _check_int("offset", offset, 0, None)
    if limit is not None:
        _check_int("limit", limit, 1, None)
    if max_bytes is not None:
        _check_int("max_bytes", max_bytes, MIN_MAX_BYTES, None)


MIN_MAX_BYTES = 512
"""The smallest ``max_bytes`` a bounded read accepts (room for a stub and its pointer)."""


def _written_depths(scan: ArgumentScan, values: list[Any], below: int) -> dict[int, tuple[int, bool]]:
    """What ``scan`` says of the depth of ``values`` it covers, each ``below`` containers down in the
    scanned value: by identity, for :func:`~schemadoc.ops.apply.check_written_depth` (exact only for the
    scanned value itself)."""
    bound = max(scan.depth - below, 0)
    return {id(value): (bound, scan.depth_exact and below == 0) for value in values if isinstance(value, dict | list)}


def _no_node(old: Any, new: Any, pointer: str) -> Any:
    return None


def _path_arg(node_path: Any) -> str:
    if not isinstance(node_path, str):
        raise SchemaDocError("invalid-request", f"node_path must be a string, got {json_type(node_path)}.",
                             {"argument": "node_path"})
    return node_path


def _node_at(old: Any, new: Any, pointer: str) -> Any:
    node, _ = resolve(new, parse(pointer), allow_negative=False)
    return node


def _removed_node(old: Any, new: Any, pointer: str) -> Any:
    node, _ = resolve(old, parse(pointer), allow_negative=False)
    return node
