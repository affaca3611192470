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

import gc
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

import orjson
from ulid import ULID

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch, check_patch
from schemadoc.ops.compile import CompiledWrite, compile_create, compile_delete, compile_update
from schemadoc.ops.journal import JournalEntry, utc_now
from schemadoc.pointer import format_pointer, json_type, parse, parse_node_path, resolve
from schemadoc.schema import LoadedSchema
from schemadoc.storage.base import DocumentMeta, DocumentStore, RecoveryReport, check_doc_id
from schemadoc.validation import DocumentValidator, ValidationReport

__all__ = [
    "ChangeEvent",
    "DocumentList",
    "DocumentService",
    "NodeRead",
    "NodeSchema",
    "WriteResult",
    "check_doc_id",
]

log = logging.getLogger("schemadoc.service")

LOCK_TIMEOUT_SECONDS = 10.0
_FREEZE_ABOVE_BYTES = 1 << 20


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


def check_version(version: Any) -> int:
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        raise SchemaDocError("invalid-request", f"version must be an integer >= 1, got {version!r}.",
                             {"argument": "version", "value": repr(version)})
    return version


class DocumentService:
    """The engine behind every door. Thread-safe; one instance per server process."""

    def __init__(self, schema: LoadedSchema, store: DocumentStore, *,
                 lock_timeout: float = LOCK_TIMEOUT_SECONDS) -> None:
        self.schema = schema
        self.store = store
        self.validator = DocumentValidator(schema)
        self.lock_timeout = lock_timeout
        self._states: dict[str, DocState] = {}
        self._listeners: list[Listener] = []
        self._listeners_lock = threading.Lock()

    # -- life cycle --------------------------------------------------------------------------

    def open(self) -> RecoveryReport:
        """Prepare the store (create the directory, clean up, roll journals forward)."""
        report = self.store.open()
        for doc_id, reason in report.corrupt.items():
            log.error("document %s is unreadable: %s", doc_id, reason)
        for doc_id, (old, new) in report.rolled_forward.items():
            log.warning("document %s rolled forward from version %d to %d", doc_id, old, new)
        return report

    @property
    def schema_uri(self) -> str:
        return self.schema.uri

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

    def read_node(self, doc_id: str, node_path: str) -> NodeRead:
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
        if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
            raise SchemaDocError("invalid-request", f"limit must be an integer from 1 to 1000, got {limit!r}.",
                                 {"argument": "limit", "value": repr(limit)})
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise SchemaDocError("invalid-request", f"offset must be an integer >= 0, got {offset!r}.",
                                 {"argument": "offset", "value": repr(offset)})
        metas = [meta for meta in self.store.list_metas() if meta.deleted_at is None]
        return DocumentList(metas[offset: offset + limit], len(metas), offset, limit)

    def version_of(self, doc_id: str) -> int:
        return self._state(check_doc_id(doc_id)).meta.version

    # -- writes ------------------------------------------------------------------------------

    def create_document(self) -> tuple[str, Any, DocumentMeta, ValidationReport]:
        """A new document from the schema's defaults, at version 1."""
        content = self.schema.defaults()
        report = self.validator.validate(content)
        report.raise_if_invalid(reason="the schema's defaults do not validate against the schema itself")
        doc_id = str(ULID())
        now = utc_now()
        data = orjson.dumps(content)
        meta = DocumentMeta(doc_id=doc_id, version=1, schema_uri=self.schema.uri, created_at=now,
                            modified_at=now, content_size_bytes=len(data))
        entry = JournalEntry(version=1, op="create", patch=[{"op": "add", "path": "", "value": content}], at=now)
        with self.store.write_lock(doc_id, self.lock_timeout):
            self.store.create(meta, data, entry)
            self._states[doc_id] = DocState(meta, content)
            self._publish(ChangeEvent(doc_id, 1, "created", entry))
        return doc_id, content, meta, report

    def update_node(self, doc_id: str, node_path: str, node_data: Any, version: int, *,
                    dry_run: bool = False) -> WriteResult:
        path = _path_arg(node_path)
        return self._write(doc_id, version, "update_node", lambda doc: compile_update(doc, path, node_data),
                           dry_run=dry_run, node_of=_node_at)

    def create_node(self, doc_id: str, node_path: str, node_data: Any, version: int, *,
                    dry_run: bool = False) -> WriteResult:
        path = _path_arg(node_path)
        return self._write(doc_id, version, "create_node", lambda doc: compile_create(doc, path, node_data),
                           dry_run=dry_run, node_of=_node_at)

    def delete_node(self, doc_id: str, node_path: str, version: int, *, dry_run: bool = False) -> WriteResult:
        path = _path_arg(node_path)
        return self._write(doc_id, version, "delete_node", lambda doc: compile_delete(doc, path),
                           dry_run=dry_run, node_of=_removed_node)

    def apply_patch(self, doc_id: str, patch: Any, version: int, *, dry_run: bool = False) -> WriteResult:
        """A raw RFC 6902 patch (all six ops) as one atomic write."""
        checked = check_patch(patch)
        return self._write(doc_id, version, "patch", lambda doc: CompiledWrite(checked, ""),
                           dry_run=dry_run, node_of=lambda old, new, pointer: None)

    def _write(self, doc_id: str, version: int, op: str, build: Callable[[Any], CompiledWrite], *,
               dry_run: bool, node_of: Callable[[Any, Any, str], Any], info: dict[str, Any] | None = None) -> WriteResult:
        doc_id = check_doc_id(doc_id)
        version = check_version(version)
        if not isinstance(dry_run, bool):
            raise SchemaDocError("invalid-request", "dry_run must be a boolean.", {"argument": "dry_run"})
        with self._locked(doc_id, dry_run) as state:
            current = state.meta.version
            if version != current:
                raise SchemaDocError(
                    "version-conflict",
                    f"Document {doc_id} is at version {current}, not {version}; it changed since you read it.",
                    {"doc_id": doc_id, "expected_version": version, "actual_version": current},
                    remediation="Re-read the node to get the current version and content, reapply your "
                                "change, and retry with that version.")
            compiled = build(state.content)
            applied = apply_patch(state.content, compiled.patch)
            report = self.validator.validate(applied.document)
            node_path = compiled.node_path
            node = node_of(state.content, applied.document, node_path)
            if dry_run:
                return WriteResult(doc_id, current, applied.patch, node_path, node, report, dry_run=True)
            report.raise_if_invalid(doc_id=doc_id, version=current)
            data = orjson.dumps(applied.document)
            now = utc_now()
            entry = JournalEntry(version=current + 1, op=op, patch=applied.patch, at=now,
                                 info=info if info is not None else ({"node_path": node_path} if op != "patch" else {}))
            meta = replace(state.meta, version=current + 1, modified_at=now, content_size_bytes=len(data))
            self.store.commit(meta, data, entry)
            self._states[doc_id] = DocState(meta, applied.document)
            self._publish(ChangeEvent(doc_id, meta.version, "updated", entry))
        return WriteResult(doc_id, meta.version, applied.patch, node_path, node, report)

    # -- state -------------------------------------------------------------------------------

    @contextmanager
    def _locked(self, doc_id: str, dry_run: bool) -> Iterator[DocState]:
        """The current state; for real writes, under the document's write lock and caught up with disk."""
        if dry_run:
            yield self._state(doc_id)
            return
        with self.store.write_lock(doc_id, self.lock_timeout):
            yield self._state(doc_id, locked=True)

    def _state(self, doc_id: str, *, locked: bool = False, include_deleted: bool = False) -> DocState:
        """The in-memory state of a document, loaded on first use and caught up with the store.

        Another process may share the storage directory: when the stored version moved on, the
        new journal entries are applied to the cached content (the journal is written first, so
        it is never behind the snapshot).
        """
        meta = self.store.read_meta(doc_id)
        cached = self._states.get(doc_id)
        if cached is None or cached.meta.version > meta.version:
            cached = self._load(doc_id, locked)
        elif cached.meta.version < meta.version:
            cached = self._catch_up(cached)
        if cached.meta.deleted_at != meta.deleted_at:
            cached = DocState(replace(cached.meta, deleted_at=meta.deleted_at), cached.content)
            self._states[doc_id] = cached
        if cached.meta.deleted_at is not None and not include_deleted:
            raise SchemaDocError(
                "document-not-found", f"Document {doc_id} was deleted.",
                {"doc_id": doc_id, "deleted": True, "deleted_at": cached.meta.deleted_at},
                remediation="Restore it with document_undelete, or create a new document.")
        return cached

    def _load(self, doc_id: str, locked: bool) -> DocState:
        if locked:
            stored = self.store.load(doc_id)
        else:
            # snapshot and meta are two files: read them under the lock so they belong together
            with self.store.write_lock(doc_id, self.lock_timeout):
                stored = self.store.load(doc_id)
        try:
            content = orjson.loads(stored.content)
        except orjson.JSONDecodeError as error:
            raise SchemaDocError("storage-read-failed", f"Document {doc_id} is not valid JSON on disk: {error}.",
                                 {"doc_id": doc_id}) from None
        if len(stored.content) > _FREEZE_ABOVE_BYTES:
            gc.freeze()  # long-lived document: keep the collector from rescanning it (halves parse time)
        state = DocState(stored.meta, content)
        self._states[doc_id] = state
        return state

    def _catch_up(self, cached: DocState) -> DocState:
        entries = self.store.read_journal(cached.meta.doc_id, since_version=cached.meta.version)
        content = cached.content
        meta = cached.meta
        for entry in entries:
            if entry.version != meta.version + 1:
                break
            content = apply_patch(content, entry.patch).document
            meta = replace(meta, version=entry.version, modified_at=entry.at)
        meta = replace(meta, content_size_bytes=len(orjson.dumps(content)))
        state = DocState(meta, content)
        self._states[cached.meta.doc_id] = state
        return state


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
