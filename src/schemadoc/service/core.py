"""The service's shared state: documents in memory, locks, loading, committing and publishing events.

Every write follows the one pipeline of docs/architecture.md ("The one data flow"), committed by
:meth:`ServiceCore._commit`. Reads never take the write lock: they return the current immutable
in-memory state. Stored content is never mutated; callers must treat returned nodes as read-only.
"""

from __future__ import annotations

import gc
import logging
import sys
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import replace
from typing import Any, ParamSpec, TypeVar

import orjson

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch, apply_patches, check_patch
from schemadoc.ops.history import replay_from
from schemadoc.ops.journal import JournalEntry, utc_now
from schemadoc.ops.limits import MAX_PATCH_OPERATIONS, MAX_STRING_LENGTH
from schemadoc.ops.sizes import serialise
from schemadoc.reading import NodeSchemas, SizeCache
from schemadoc.schema import LoadedSchema
from schemadoc.search.extension import IndexExtension
from schemadoc.search.fields import indexed_members
from schemadoc.search.index import SearchIndex
from schemadoc.search.opening import open_index
from schemadoc.service.checks import check_current
from schemadoc.service.feed import ChangeFeed
from schemadoc.service.memory import BYTES_PER_BLOCK, Resident, ResidentSet, default_budget
from schemadoc.service.models import Change, ChangeEvent, DocState, Listener
from schemadoc.service.payloads import bounded_call, entry_size, json_bytes, parse_stored
from schemadoc.service.placeholders import MadeUpValues
from schemadoc.snapshotter import SnapshotPolicy, Snapshotter
from schemadoc.storage.base import LOCK_TIMEOUT_SECONDS, DocumentMeta, DocumentStore, RecoveryReport, Verdict
from schemadoc.storage.shared import SharedStore, StoreNotice
from schemadoc.validation import VALID, DocumentValidator, ValidationReport

__all__ = ["MAX_JSON_DEPTH", "PERSIST_CHECKPOINT_EVERY", "VALIDATION_LEVELS", "ServiceCore",
            "bounded_call", "json_bytes", "parse_stored"]

log = logging.getLogger("schemadoc.service")
_P = ParamSpec("_P")
_R = TypeVar("_R")

MAX_JSON_DEPTH = 128
"""Default nesting limit of stored documents (``document-too-deep`` beyond it). The official MCP
Python client cannot parse a message nested more than 200 levels, and a history entry puts a
document's content 7 levels down (message, result, structured content, entries, entry, patch,
operation): 128 keeps every document readable through every result, with room to spare."""
_FREEZE_ABOVE_BYTES = 1 << 20
_RESULT_SIZE_ENTRIES = 20_000
PERSIST_CHECKPOINT_EVERY = 256
VALIDATION_LEVELS = ("moderate", "strict")
"""The store is given the content of every 256th version (it keeps a bounded, log-spaced set of them)."""


class ServiceCore:
    """What every use case shares. Thread-safe; one instance per server process."""

    def __init__(self, schema: LoadedSchema, store: DocumentStore, *,
                 lock_timeout: float = LOCK_TIMEOUT_SECONDS, snapshot_policy: SnapshotPolicy | None = None,
                 max_json_depth: int = MAX_JSON_DEPTH, max_string_length: int = MAX_STRING_LENGTH,
                 max_patch_operations: int = MAX_PATCH_OPERATIONS, memory_budget: int | None = None,
                 validation_level: str = "moderate", search_fields: Sequence[str] | None = None,
                 search_field_depth: int = 3) -> None:
        self.schema = schema
        if validation_level not in VALIDATION_LEVELS:
            raise ValueError(f"validation_level must be one of {', '.join(VALIDATION_LEVELS)}")
        self.validation_level = validation_level
        """``moderate``: a write to a document the schema already rejects is accepted when it adds no violation
        (:mod:`schemadoc.validation.repair`); ``strict``: every write must leave the document valid."""
        self.max_json_depth = max_json_depth
        self.max_string_length = max_string_length
        """Longest string value, member name or pointer a write may carry, in characters."""
        self.max_patch_operations = max_patch_operations
        """Most RFC 6902 operations one patch (or one merge patch, compiled) may make."""
        self.store = store
        self.validator = DocumentValidator(schema)
        self.lock_timeout = lock_timeout
        self._states = ResidentSet(memory_budget if memory_budget is not None else default_budget(),
                                   _weakly(self._evicted))
        """Every document held in memory, with its caches, under one byte budget (:mod:`.memory`)."""
        self._listeners: list[Listener] = []
        self._listeners_lock = threading.Lock()
        self._feed = ChangeFeed()
        # a store shared by several processes orders the feed itself and tells of their commits
        self._shared: SharedStore | None = store if isinstance(store, SharedStore) else None
        self._unwatch: Callable[[], None] | None = None
        self.snapshots = Snapshotter(store, snapshot_policy or SnapshotPolicy(), _weakly(self._snapshot_source))
        self.sizes = SizeCache(max_entries=_RESULT_SIZE_ENTRIES)
        """Byte sizes of the containers in results (by identity; emptied when a document is evicted, so
        it never keeps an evicted document's content alive). Each document has its own in its entry."""
        self._node_schemas = NodeSchemas(schema)
        self.made_up = MadeUpValues(store, self._node_schemas.get)
        """The values the server made up that each held document still holds (:mod:`.placeholders`)."""
        self.on_cold_load: Callable[[float], None] | None = None
        """Told the seconds each load of a document from the store took (the metrics' histogram), if set."""
        self.search_members = list(search_fields) if search_fields is not None else indexed_members(
            schema.dereferenced_root(), search_field_depth)
        """The members ``document_list`` filters and sorts on (docs/search.md)."""
        self.search_extensions: list[IndexExtension] = []
        """Extensions plugged into the search index when it opens (a semantic ranking)."""
        self._search: SearchIndex | None = None
        self._search_guard = threading.Lock()
        self.span: Callable[[str], AbstractContextManager[Any]] = _no_span
        """A tracing span around the named step (``validation``, ``journal commit``, an operation); none by default."""

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
        self._open_search()
        return report

    def _open_search(self) -> SearchIndex:
        with self._search_guard:
            if self._search is None:
                # weakly, as the snapshotter: the index's thread must not keep a dropped service alive
                load: Any = _weakly(self._index_source)  # None once the service is gone, with its index
                patches: Any = _weakly(self._index_patches)
                self._search = open_index(self.store, self.search_members, _weakly(self._valid_now),
                                          self.search_extensions, load, patches, schema_digest=self.schema.digest)
            return self._search

    @property
    def search_index(self) -> SearchIndex:
        """The index of every document (opened with the service, or on first use)."""
        return self._search if self._search is not None else self._open_search()

    def rebuild_search_index(self) -> int:
        """Index every document again; how many were indexed."""
        return self.search_index.rebuild(self.store.list_metas(), self._index_source, self._index_patches)

    def _valid_now(self, meta: DocumentMeta) -> bool | None:
        """What the served schema is known to say of a document at its version (None: not checked yet)."""
        verdict = meta.verdict
        if verdict is None or verdict.digest != self.schema.digest or verdict.version != meta.version:
            return None
        return verdict.valid

    def _index_source(self, doc_id: str) -> tuple[DocumentMeta, Any]:
        held = self._states.get(doc_id)
        state = held if held is not None else self._read_stored(doc_id)[0]
        return state.meta, state.content

    def _index_patches(self, doc_id: str, since: int, until: int) -> list[list[dict[str, Any]]]:
        return [entry.patch for entry in self.store.read_journal(doc_id, since_version=since, until_version=until)]

    def close(self) -> None:
        """Write every lagging snapshot, stop hearing other processes and release the store's connections."""
        self.snapshots.close()
        if self._search is not None:
            self._search.close()
            self._search = None
        if self._unwatch is not None:
            self._unwatch()
            self._unwatch = None
        if self._shared is not None:
            self._shared.close()

    @property
    def memory(self) -> ResidentSet:
        """The documents held in memory and their budget."""
        return self._states

    def _snapshot_source(self, doc_id: str) -> tuple[int, Any] | None:
        """The content the snapshotter writes: the held one, else (evicted while its snapshot lagged) a
        load from the store that is not kept (one document in flight beside the budget)."""
        state = self._states.get(doc_id)
        if state is None:
            try:
                state = self._read_stored(doc_id)[0]
            except SchemaDocError:  # purged or unreadable: nothing to snapshot
                return None
        return state.meta.version, state.content

    def _evicted(self, doc_id: str, entry: Resident) -> None:
        """Forget what other caches remember of an evicted document's content, so it can be freed."""
        self.validator.forget(entry.state.content)
        self.sizes.clear()
        self.made_up.forget(doc_id)

    def _on_other_process(self, notice: StoreNotice) -> None:
        """A commit or purge by another process on a shared store: tell this process's subscribers.

        The event has no journal entry: feeds read it from the journal, readers catch up on their
        next read (every read compares the stored version with the cached one).
        """
        if notice.kind == "purged":
            self._forget(notice.doc_id)
        self._publish(ChangeEvent(notice.doc_id, notice.version, notice.kind, None))

    def use_change_feed(self, feed: ChangeFeed) -> None:
        """Order the change feed with ``feed`` (before the first commit): the feed of one worker of several on
        the files store, which also lists the other workers' commits (``serve --workers``)."""
        self._feed = feed

    def heard_from_other_process(self, notice: StoreNotice) -> None:
        """A commit or purge another process made on a store that does not tell of them itself (the files store
        under ``serve --workers``, whose supervisor passes each worker's commits on): published here as a shared
        store's are."""
        self._on_other_process(notice)

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

    # -- state -------------------------------------------------------------------------------

    @contextmanager
    def _locked(self, doc_id: str, version: int, *, dry_run: bool = False) -> Iterator[DocState]:
        """The current state, at ``version`` (else ``version-conflict``); for real writes, under the
        document's write lock and caught up with disk."""
        if not dry_run:
            self.store.read_meta(doc_id)  # document-not-found before a lock file is made for nothing
        commit_lock = None if dry_run else getattr(self.store, "commit_lock", None)
        with self._states.pinned(doc_id):
            if commit_lock is not None:  # PostgreSQL: no database lock, the commit conditional on the version
                with commit_lock(doc_id, self.lock_timeout):
                    state = self._state(doc_id)
                    if state.meta.version == version:
                        yield state
                        return
                # the meta known here is not the client's version: judged again from the meta read with the
                # database lock (another server's commit may not have reached this one yet)
            with nullcontext() if dry_run else self.store.write_lock(doc_id, self.lock_timeout):
                state = self._state(doc_id)
                check_current(doc_id, version, state.meta.version)
                yield state

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
            self._states.put(doc_id, cached)
        if cached.meta.deleted_at is not None and not include_deleted:
            raise SchemaDocError(
                "document-not-found", f"Document {doc_id} was deleted.",
                {"doc_id": doc_id, "deleted": True, "deleted_at": cached.meta.deleted_at},
                remediation="Restore it with document_undelete, or create a new document.")
        return cached

    def _load(self, doc_id: str) -> DocState:
        """Load a document (snapshot + journal tail) and hold it, within the memory budget."""
        started = time.perf_counter()
        state, charged, tail = self._read_stored(doc_id)
        if self.on_cold_load is not None:
            self.on_cold_load(time.perf_counter() - started)
        self._states.loads += 1
        self._states.put(doc_id, state, charged)
        self.snapshots.lagging(doc_id, tail)
        return state

    def _read_stored(self, doc_id: str) -> tuple[DocState, int, int]:
        """The stored document: its state, what its content costs in memory (bytes, see :mod:`.memory`)
        and how many journal entries were replayed onto the snapshot."""
        stored = self.store.load(doc_id)  # the store reads snapshot, meta and journal tail under the write lock
        big = len(stored.content) > _FREEZE_ABOVE_BYTES
        collecting = gc.isenabled()
        gc.disable()  # no collection inside the parse: it frees other objects (and doubles a big parse's time)
        try:
            before = sys.getallocatedblocks()
            content = parse_stored(stored.content)  # holds the interpreter lock: the blocks are its own
            blocks = sys.getallocatedblocks() - before
        except orjson.JSONDecodeError as error:
            raise SchemaDocError("storage-read-failed", f"Document {doc_id} is not valid JSON on disk: {error}.",
                                 {"doc_id": doc_id}) from None
        finally:
            if collecting:
                gc.enable()
        charged = len(stored.content) + BYTES_PER_BLOCK * max(blocks, 0)
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
            if stored.content:  # the same bytes per JSON byte for what the tail added
                charged = int(charged * max(stored.meta.content_size_bytes, 1) / len(stored.content))
            self.made_up.heard(doc_id, stored.entries[-1])
        return DocState(stored.meta, content), charged, len(stored.entries)

    def _catch_up(self, cached: DocState, meta: DocumentMeta) -> DocState:
        """Apply the journal entries another process committed since ``cached``, up to ``meta``'s version."""
        entries = self.store.read_journal(meta.doc_id, since_version=cached.meta.version, until_version=meta.version)
        state = DocState(meta, replay_from(cached.content, entries))
        self._states.put(meta.doc_id, state)
        if entries:
            self.made_up.heard(meta.doc_id, entries[-1])
        return state

    def _forget(self, doc_id: str) -> None:
        """Drop what this process holds of a document (it is reloaded from the store when read again)."""
        entry = self._states.drop(doc_id)
        if entry is not None:
            self._evicted(doc_id, entry)

    # -- commit ------------------------------------------------------------------------------

    def _commit(self, doc_id: str, state: DocState | None, content: Any, patch: list[dict[str, Any]], op: str,
                info: dict[str, Any], *, kind: str, deleted_at: str | bool | None = False,
                size: int | None = None, edit_bytes: int = 0, actor: str | None = None,
                report: ValidationReport = VALID, marks: Sequence[str] = ()) -> DocumentMeta:
        """Journal one new version (caller holds the write lock), then publish it.

        The new version records the served schema's digest and its verdict, what that schema says of it:
        ``report``, valid but for a repair write (``validation_level: moderate``), where it lists what
        remains (:meth:`_verdict_committed` is told it too). A write with an empty patch (delete, undelete)
        changes no content and keeps the verdict and digest the document had.

        ``actor`` (who made it: a token's name, a door or a command; the door decides, never the client) is
        recorded as the entry's ``info.actor``. ``info.placeholders`` records the values the server made up that
        the new version still holds (``marks``: where this write put some; :meth:`.MadeUpValues.after`).

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
        if actor is not None:
            info = {**info, "actor": actor}
        made_up = self.made_up.after(state, content, patch, marks)
        if made_up:
            info = {**info, "placeholders": list(made_up)}
        try:
            now = utc_now()
            entry = JournalEntry(version=1 if state is None else state.meta.version + 1, op=op, patch=patch,
                                 at=now, info={**info, "seq": cursor} if self._shared is None else info)
            verdict = None if report.valid else Verdict.of(entry.version, self.schema.digest, report.violations,
                                                           report.count)
            digest, judged = self._judged(state, entry.version, patch, verdict)
            if state is None:
                assert data is not None
                meta = DocumentMeta(doc_id=doc_id, version=1, schema_uri=self.schema_uri, created_at=now,
                                    modified_at=now, content_size_bytes=size, schema_digest=digest, verdict=judged)
                with self.span("journal commit"):
                    self.store.create(meta, entry, data)
            else:
                meta = replace(state.meta, version=entry.version, modified_at=now, content_size_bytes=size,
                               snapshot_version=entry.version if data is not None else state.meta.snapshot_version,
                               schema_digest=digest, verdict=judged)
                if deleted_at is not False:
                    meta = replace(meta, deleted_at=deleted_at if isinstance(deleted_at, str) else None)
                try:
                    with self.span("journal commit"):
                        self.store.commit(meta, entry, data)
                except SchemaDocError as error:
                    self._forget(doc_id)  # the store may have rolled the document forward
                    actual = error.details.get("actual_version")
                    if error.code == "version-conflict" and isinstance(actual, int):  # another server's commit
                        check_current(doc_id, state.meta.version, actual)  # came first: said as any stale version
                    raise
            self._states.put(doc_id, DocState(meta, content), None if state is not None else 2 * size)
            if self._search is not None:
                self._search.committed(doc_id, meta, content, None if state is None else patch)
            self.made_up.committed(doc_id, meta.version, made_up)
            self._verdict_committed(doc_id, meta, content, report, None if state is None else state.content)
            change = Change(cursor, doc_id, entry.version, op, now, actor)
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
        self._publish(ChangeEvent(doc_id, meta.version, kind, entry, entry_size(edit_bytes, patch)))
        return meta

    def _judged(self, state: DocState | None, version: int, patch: list[dict[str, Any]],
                verdict: Verdict | None) -> tuple[str | None, Verdict | None]:
        """The schema digest and verdict a new version records (see :meth:`_commit`)."""
        digest = self.schema.digest
        if not patch and verdict is None and state is not None:  # no content changed: what was known stays
            known = state.meta.verdict
            if known is None or known.version != state.meta.version:
                return state.meta.schema_digest, None
            return state.meta.schema_digest, replace(known, version=version)
        if verdict is None:
            return digest, Verdict(version, digest)
        return digest, replace(verdict, version=version, digest=digest)

    def _verdict_committed(self, doc_id: str, meta: DocumentMeta, content: Any, report: ValidationReport,
                           replaced: Any) -> None:
        """The one place a committed version's verdict passes (every commit; ``report`` invalid only for a repair
        write, ``replaced``: the version before): an invalid one is remembered with its content, so the next
        repair write to it does not validate it again."""
        if not report.valid:
            self.validator.remember_invalid(content, report, replaced)

    def _sizes_of(self, doc_id: str) -> SizeCache:
        """The size cache of a held document's containers."""
        entry = self._states.entry(doc_id)
        return entry.sizes if entry is not None else SizeCache()

    def _suggestion(self, after: Any, fix: list[dict[str, Any]], tool: str, arguments: dict[str, Any],
                    prefix: str = "", resolves: Callable[[], bool] | None = None) -> dict[str, Any]:
        """A refusal's ``suggested_call``: ``tool`` with ``arguments``, whether ``fix`` applied to ``after`` passes
        validation (``resolves``; or as the given function tells), the made-up values in ``fix`` to replace
        (``placeholders``, relative to ``prefix``), within 16 KiB (:func:`bounded_call`)."""
        try:
            resolved = resolves() if resolves is not None else \
                self.validator.validate(apply_patch(after, check_patch(fix)).document).valid
        except SchemaDocError:
            resolved = False
        marked = self.made_up.marks_in(fix, prefix)
        if marked:
            arguments = {**arguments, "placeholders": marked}
        call: dict[str, Any] = {"tool": tool, "arguments": arguments, "resolves": resolved}
        if marked:
            call["placeholders"] = marked
        return bounded_call(call, fix, prefix)

    def _persist_checkpoint(self, doc_id: str, version: int, data: bytes) -> None:
        try:
            self.store.write_checkpoint(doc_id, version, data)
        except OSError as error:  # a cache: losing one only makes old reads replay more
            log.warning("document %s: checkpoint of version %d not written: %s", doc_id, version, error.strerror)




_NO_SPAN: AbstractContextManager[Any] = nullcontext()


def _no_span(name: str) -> AbstractContextManager[Any]:
    """The span hook while tracing is off: nothing (one shared, reusable null context)."""
    return _NO_SPAN


def _weakly(method: Callable[_P, _R]) -> Callable[_P, _R | None]:
    """``method`` (a bound method) without keeping its object alive: ``None`` once the object is gone.

    The snapshotter's thread outlives a service dropped without ``close()``; through a strong
    reference it would keep the service, and every document it holds, alive (and a service in a
    reference cycle when a big document's load calls ``gc.freeze()`` is never freed at all).
    The memory budget's eviction callback is weak too, so a dropped service is freed at once.
    """
    weak = weakref.WeakMethod(method)

    def call(*args: _P.args, **kwargs: _P.kwargs) -> _R | None:
        bound = weak()
        return None if bound is None else bound(*args, **kwargs)

    return call
