"""The search index, kept as the documents change (docs/search.md).

Each commit hands the index the new content and its patch (:meth:`SearchIndex.committed`); a writer thread
applies what is pending in one transaction per batch, and every query first applies what is still pending
in its own thread, so a process always finds its own writes. A write costs what its patch reached: the
units below the patch's paths are replaced (:func:`~schemadoc.search.units.changed_units`) and the indexed
members read again (a handful of lookups). The index remembers the version it indexed of each document;
when that is not the version before the commit (another process wrote in between, or a crash lost an
update), the document is indexed whole from the content in hand.

On :meth:`SearchIndex.open` the versions indexed are compared with the store's: a document behind is brought
up to date from its journal (the patches since the version indexed name the places to index again), one
missing is indexed whole, one gone is removed. A change of the indexed members or of the served schema
(verdicts) is found the same way, from what ``search_state`` recorded.

Several processes write one index (a SQLite file in the storage directory, tables in PostgreSQL). Each change
is applied with the document's index lock held (:meth:`~schemadoc.search.backends.Backend.lock_document`) and
the document's meta read again from the store under it: a verdict another process recorded and indexed is
never written over with an older meta of the same version. A process without an index of its own that records
verdicts (``schemadoc check --record``) tells the index with :func:`index_verdicts`.

A batch that fails for another reason than an outage of the database is applied again one document at a time;
a document that still fails is logged once, counted (:meth:`SearchIndex.failures`), marked in ``search_state``
(so that the next start-up, here or in another process, indexes it whole; its entry, as it was, still answers)
and indexed again from the store by the writer thread every
:data:`~schemadoc.search.failures.RETRY_FAILED_SECONDS` (:mod:`.failures`).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from schemadoc.errors import SchemaDocError
from schemadoc.search.backends import Backend
from schemadoc.search.extension import IndexExtension, IndexTransaction
from schemadoc.search.failures import FailedDocuments, said
from schemadoc.search.fields import KINDS, field_rows, members_reached
from schemadoc.search.queries import IndexQueries
from schemadoc.search.units import TextUnit, UnitChange, changed_units, document_label, text_units
from schemadoc.search.verdicts import Metas, put_state, valid_code
from schemadoc.storage.base import DocumentMeta

__all__ = ["Loader", "Patches", "SearchIndex"]

log = logging.getLogger("schemadoc.search")

_BATCH_DELAY_SECONDS = 0.005
_OPEN_BATCH = 200
"""Documents indexed in one transaction at start-up (FTS5 flushes a segment per transaction)."""
_OUTAGE_RETRY_SECONDS = 1.0
"""How long the index's thread waits before applying again the changes an outage of the database held up."""
_INTERNAL = ("search_state", "search_docs", "search_fields", "search_units")
Loader = Callable[[str], tuple[DocumentMeta, Any]]
"""A document's current meta and content (``SchemaDocError`` when it cannot be read)."""
Patches = Callable[[str, int, int], list[list[dict[str, Any]]]]
"""The patches of a document's versions after ``since`` up to ``until``."""


@dataclass(frozen=True)
class _Change:
    doc_id: str
    meta: DocumentMeta | None
    """None: the document was purged."""
    content: Any = None
    patch: list[dict[str, Any]] | None = None
    """None: index the content whole; empty: only the meta changed (delete, undelete, a verdict)."""


class SearchIndex(IndexQueries):
    """Filters, order and full-text search over every document of one store. Thread-safe."""

    def __init__(self, backend: Backend, members: Sequence[str], status: Callable[[DocumentMeta], bool | None],
                 *, schema_digest: str = "") -> None:
        super().__init__()
        self.backend = backend
        self.members = list(members)
        self._status = status
        self._schema_digest = schema_digest
        self._extensions: list[IndexExtension] = []
        self._pending: list[_Change] = []
        self._pending_lock = threading.Lock()
        self._apply_lock = threading.Lock()
        self._wake = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        self._reread: Metas | None = None
        self._load: Loader | None = None
        self._failed = FailedDocuments(backend, self._wake.set)
        """Documents whose changes failed to apply, and why (indexed again from the store by the writer thread)."""

    # -- life cycle ----------------------------------------------------------------------------

    def add_extension(self, extension: IndexExtension) -> None:
        """Plug an extension in (before :meth:`open`)."""
        self._extensions.append(extension)

    def open(self, metas: Iterable[DocumentMeta], load: Loader, patches: Patches,
             reread: Metas | None = None) -> int:
        """Bring the index up to date with the store (see the module's text); how many documents it indexed.

        A document whose meta alone differs from what is indexed (its verdict, mostly) has its meta read again
        with the document's index lock held (``reread``): another server may have recorded a verdict, and
        indexed it, since ``metas`` was read; writing the older meta would hide that verdict for good."""
        self._reread = reread
        self._load = load
        with self.backend.transaction() as tx:
            for extension in self._extensions:
                extension.create_tables(tx)
            state = dict(tx.execute("SELECT key, value FROM search_state"))
            members = orjson.dumps(self.members).decode()
            whole = state.get("members") != members
            if whole:
                log.info("search index: indexed members changed, every document is indexed again")
            indexed = {row[0]: (row[1], row[2], row[3]) for row in
                       tx.execute("SELECT doc_id, version, valid, deleted FROM search_docs")}
            marked = FailedDocuments.marked(state)
            stale_extensions = [e for e in self._extensions if state.get(f"extension:{e.name}") != e.generation]
            fresh = not indexed  # a new index: the documents indexed below feed every extension once
            if fresh:
                for extension in stale_extensions:
                    extension.on_cleared(tx)
        done = 0
        batch: list[tuple[_Change, int | None]] = []
        for meta in metas:
            if len(batch) >= _OPEN_BATCH:
                self._apply_open(batch)
                batch = []
            known = indexed.pop(meta.doc_id, None)
            if meta.doc_id in marked:  # its changes failed in some process: indexed whole, from the store
                known = None
            if known is not None and known[0] == meta.version and not whole:
                if known[1] != valid_code(self._status(meta)) or known[2] != (meta.deleted_at is not None):
                    batch.append((_Change(meta.doc_id, meta, None, []), None))
                continue
            try:
                meta, content = load(meta.doc_id)
            except Exception as error:
                log.warning("search index: document %s cannot be read: %s", meta.doc_id, error)
                marked.discard(meta.doc_id)  # its mark, if any, stays for the next start-up
                continue
            patch: list[dict[str, Any]] | None = None
            base = known[0] if known is not None and 0 < known[0] < meta.version and not whole else None
            if base is not None:
                patch = [op for step in patches(meta.doc_id, base, meta.version) for op in step]
            batch.append((_Change(meta.doc_id, meta, content, patch), base))
            done += 1
        self._apply_open(batch)
        if indexed:
            self._apply([_Change(doc_id, None) for doc_id in indexed])
        self._failed.unmark(sorted(marked), keep_failing=True)  # indexed whole above, or gone from the store
        with self.backend.transaction() as tx:
            if done or indexed:  # the planner's statistics, after a build or a catch-up
                self.backend.settle(tx)
            for extension in stale_extensions:
                if fresh:
                    self._record_generation(tx, extension)
                else:
                    self._refeed(tx, extension)
            put_state(tx, "members", members)
            if self._schema_digest:  # what ``valid`` means here, for a process that records verdicts without an index
                put_state(tx, "schema", self._schema_digest)
        if done or indexed:
            self.backend.tidy()
        self._thread = threading.Thread(target=self._run, name="search-index", daemon=True)
        self._thread.start()
        for extension in self._extensions:  # work of their own from now on (the semantic feed: docs/search.md)
            opened = getattr(extension, "on_opened", None)
            if opened is not None:
                opened(self._in_index)
        return done

    def _in_index(self, work: Callable[[IndexTransaction], Any]) -> Any:
        """An extension's ``work`` in one write transaction, between this process's batches."""
        with self._apply_lock, self.backend.transaction() as tx:
            return work(tx)

    def rebuild(self, metas: Iterable[DocumentMeta], load: Loader, patches: Patches) -> int:
        """Forget everything and index every document again (on demand)."""
        self.sync()
        with self._apply_lock, self.backend.transaction() as tx:
            for table in _INTERNAL:
                tx.execute(f"DELETE FROM {table}")
            for extension in self._extensions:
                extension.on_cleared(tx)
        self._close_thread()
        self._closed = False
        self._failed.forget_all()  # every document is indexed again: those that still fail are set aside again
        return self.open(metas, load, patches, self._reread)

    def close(self) -> None:
        """Apply what is pending and stop the writer thread."""
        self._close_thread()
        self.sync()
        self.backend.close()

    def _close_thread(self) -> None:
        for extension in self._extensions:
            closing = getattr(extension, "on_closing", None)
            if closing is not None:
                closing()
        self._closed = True
        self._wake.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None

    def _refeed(self, tx: IndexTransaction, extension: IndexExtension) -> None:
        extension.on_cleared(tx)
        if getattr(extension, "feeds_itself", False):  # it reads the units itself, after start-up
            self._record_generation(tx, extension)
            return
        current: str | None = None
        units: list[TextUnit] = []
        for doc_id, pointer, text in tx.execute("SELECT doc_id, pointer, text FROM search_units ORDER BY doc_id, id"):
            if doc_id != current and current is not None:
                extension.on_units_changed(tx, current, ("",), units)
                units = []
            current = doc_id
            units.append(TextUnit(pointer, text))
        if current is not None:
            extension.on_units_changed(tx, current, ("",), units)
        self._record_generation(tx, extension)

    @staticmethod
    def _record_generation(tx: IndexTransaction, extension: IndexExtension) -> None:
        put_state(tx, f"extension:{extension.name}", extension.generation)

    # -- changes -------------------------------------------------------------------------------

    def committed(self, doc_id: str, meta: DocumentMeta, content: Any, patch: list[dict[str, Any]] | None) -> None:
        """A new version was committed (``patch``: what made it from the previous one; None: a creation)."""
        self._queue(_Change(doc_id, meta, content, patch))

    def meta_changed(self, meta: DocumentMeta) -> None:
        """The meta changed without new content (a verdict recorded)."""
        self._queue(_Change(meta.doc_id, meta, None, []))

    def purged(self, doc_id: str) -> None:
        self._queue(_Change(doc_id, None))

    def _queue(self, change: _Change) -> None:
        with self._pending_lock:
            self._pending.append(change)
        self._wake.set()

    def sync(self) -> None:
        """Apply every pending change now (after the batch the writer thread may be applying).

        Raises ``storage-unavailable`` during an outage of the database (the changes wait, in order, for its
        end). Any other failure of the batch is not raised: the batch is applied again one document at a time
        and the documents that still fail are set aside (:meth:`failures`)."""
        with self._apply_lock:
            with self._pending_lock:
                batch, self._pending = self._pending, []
            if not batch:
                return
            try:
                self._apply_batch(batch)
            except SchemaDocError as error:
                if error.code == "storage-unavailable":  # an outage: kept, in order, for when it ends
                    with self._pending_lock:
                        self._pending[:0] = batch
                    raise
                self._apply_alone(batch, error)
            except Exception as error:
                self._apply_alone(batch, error)

    def failures(self) -> dict[str, int]:
        """``failed``: documents whose changes failed to apply and wait to be indexed again from the store;
        ``failures``: documents set aside so since this process started; ``caught_up``: of those, indexed since."""
        return self._failed.counts()

    def failed_documents(self) -> dict[str, str]:
        """The documents :meth:`failures` counts as ``failed``, each with the error."""
        return self._failed.documents()

    def _apply_alone(self, batch: list[_Change], error: BaseException) -> None:
        """A batch failed for another reason than an outage: its documents applied again one at a time (each with
        its changes in order), so that one bad document cannot drop the others' changes."""
        by_document: dict[str, list[_Change]] = {}
        for change in batch:
            by_document.setdefault(change.doc_id, []).append(change)
        documents = sorted(by_document)
        failed: list[str] = []
        new = 0
        for position, doc_id in enumerate(documents):
            try:
                self._apply_batch(by_document[doc_id])
            except SchemaDocError as failure:
                if failure.code == "storage-unavailable":  # the rest waits for the database, in order
                    with self._pending_lock:
                        self._pending[:0] = [c for d in documents[position:] for c in by_document[d]]
                    raise
                failed.append(doc_id)
                new += self._failed.set_aside(doc_id, failure)
            except Exception as failure:
                failed.append(doc_id)
                new += self._failed.set_aside(doc_id, failure)
            else:
                self._failed.resolved(doc_id)
        # said once per document (by _set_aside); a batch held up only by documents known to fail is not said again
        level = logging.DEBUG if failed and not new else logging.WARNING
        log.log(level, "search index: a batch of %d change(s) failed (%s: %s); applied one document at a time, "
                "%d of %d document(s) failed", len(batch), type(error).__name__, said(error), len(failed),
                len(documents))

    def retry_failed(self) -> int:
        """Index again, whole and from the store, every document whose changes failed; how many are still failing.
        The writer thread calls it every :data:`~schemadoc.search.failures.RETRY_FAILED_SECONDS` while some are."""
        failed = self._failed.take_for_retry()
        load = self._load
        if not failed or load is None:
            return len(failed)
        with self._apply_lock:
            for doc_id in failed:
                try:
                    found = load(doc_id)
                    if found is None:  # the service is gone
                        break
                    meta, content = found
                    change = _Change(doc_id, meta, content, None)
                except SchemaDocError as error:
                    if error.code == "storage-unavailable":
                        raise
                    if error.code != "document-not-found":
                        continue  # still unreadable: tried again at the next round
                    change = _Change(doc_id, None)  # purged meanwhile
                try:
                    self._apply_batch([change])
                except SchemaDocError as error:
                    if error.code == "storage-unavailable":
                        raise
                    self._failed.set_aside(doc_id, error)
                except Exception as error:
                    self._failed.set_aside(doc_id, error)
                else:
                    self._failed.resolved(doc_id)
        return self._failed.remaining()

    def _run(self) -> None:
        while not self._closed:
            due = self._failed.due_in()
            self._wake.wait(None if due is None else max(due, 0.0))
            self._wake.clear()
            if self._closed:
                return
            threading.Event().wait(_BATCH_DELAY_SECONDS)
            try:
                self.sync()
                due = self._failed.due_in()
                if due is not None and due <= 0:
                    self.retry_failed()
            except SchemaDocError as error:
                if error.code != "storage-unavailable":
                    log.error("search index: applying changes failed: %s", error.message)
                    continue
                log.warning("search index: changes wait for the database: %s", error.message)
                threading.Event().wait(_OUTAGE_RETRY_SECONDS)
                self._wake.set()
            except Exception:  # the next start-up catches up from the journal
                log.exception("search index: applying changes failed")

    def _apply_open(self, batch: list[tuple[_Change, int | None]]) -> None:
        """Changes found at start-up, in one transaction (each with the version its patches start from); when that
        fails for another reason than an outage, one document at a time (a bad one is set aside, as at run time)."""
        try:
            self._apply_open_batch(batch)
        except SchemaDocError as error:
            if error.code == "storage-unavailable":
                raise
            self._open_alone(batch, error)
        except Exception as error:
            self._open_alone(batch, error)

    def _open_alone(self, batch: list[tuple[_Change, int | None]], error: BaseException) -> None:
        log.warning("search index: %d document(s) failed to index together at start-up (%s: %s); indexing them one "
                    "at a time", len(batch), type(error).__name__, said(error))
        with self._apply_lock:
            for change, base in sorted(batch, key=lambda item: item[0].doc_id):
                try:
                    self._apply_batch([change], base)
                except SchemaDocError as failure:
                    if failure.code == "storage-unavailable":
                        raise
                    self._failed.set_aside(change.doc_id, failure)
                except Exception as failure:
                    self._failed.set_aside(change.doc_id, failure)

    def _apply_open_batch(self, batch: list[tuple[_Change, int | None]]) -> None:
        with self._apply_lock, self.backend.transaction() as tx:
            batch = sorted(batch, key=lambda item: item[0].doc_id)
            changes = [change for change, _ in batch]
            if self._reread is not None:  # as every batch: the metas read again under the documents' locks
                changes = self._fresh(tx, changes)
            for change, (_, base) in zip(changes, batch, strict=True):
                self._apply_one(tx, change, base)

    def _apply(self, batch: list[_Change], base: int | None = None) -> None:
        with self._apply_lock:
            self._apply_batch(batch, base)

    def _apply_batch(self, batch: list[_Change], base: int | None = None) -> None:
        with self.backend.transaction() as tx:
            changes = sorted(batch, key=lambda c: c.doc_id)  # stable: one document's changes stay in order
            if self._reread is not None:
                changes = self._fresh(tx, changes)
            for change in changes:
                self._apply_one(tx, change, base)

    def _fresh(self, tx: IndexTransaction, changes: list[_Change]) -> list[_Change]:
        """``changes`` (in doc_id order) with each meta read again from the store, with the documents' index locks
        held: a meta of the same version may carry a later verdict (a check recorded it since, and may have
        indexed it already). A meta of another version is left as it is (its own change follows)."""
        assert self._reread is not None
        doc_ids = list(dict.fromkeys(change.doc_id for change in changes if change.meta is not None))
        if not doc_ids:
            return changes
        for doc_id in doc_ids:  # in doc_id order, as every batch takes them: no deadlock
            self.backend.lock_document(tx, doc_id)
        fresh = self._reread(doc_ids)
        out: list[_Change] = []
        for change in changes:
            now = fresh.get(change.doc_id) if change.meta is not None else None
            if now is not None and change.meta is not None and now.version == change.meta.version:
                change = replace(change, meta=now)
            out.append(change)
        return out

    def _apply_one(self, tx: IndexTransaction, change: _Change, base: int | None) -> None:
        doc_id, meta = change.doc_id, change.meta
        if meta is None:
            for table in ("search_docs", "search_fields", "search_units"):
                tx.execute(f"DELETE FROM {table} WHERE doc_id = ?", [doc_id])
            for extension in self._extensions:
                extension.on_document_removed(tx, doc_id)
            return
        self.backend.lock_document(tx, doc_id)
        row = tx.execute("SELECT version FROM search_docs WHERE doc_id = ?", [doc_id])
        indexed = row[0][0] if row else None
        if indexed is not None and indexed > meta.version:
            return  # a later version is indexed already (another process)
        previous = meta.version - 1 if base is None else base
        # the content is as indexed when only the meta changed from the version indexed (delete, undelete) or
        # at it (a verdict recorded); else it is indexed from the content in hand
        content_changed = change.patch != [] or indexed not in (meta.version, previous)
        if change.content is None and (content_changed or indexed != meta.version):
            return  # nothing to index it from: the next start-up catches up
        if content_changed:
            if change.patch is None or indexed != previous:
                units = UnitChange(("",), tuple(text_units(change.content)), None)
            else:
                units = changed_units(change.content, change.patch)
            self._write_units(tx, doc_id, units, fresh=indexed is None)
            if change.patch is None or indexed != previous:
                self._write_fields(tx, doc_id, change.content, self.members, fresh=indexed is None)
            else:  # an edit: only the members it reached (a write to a chapter touches no indexed member)
                self._write_fields(tx, doc_id, change.content, members_reached(self.members, change.patch))
            tx.execute("INSERT INTO search_docs (doc_id, version, created, modified, valid, deleted, label) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (doc_id) DO UPDATE SET version = excluded.version, "
                       "created = excluded.created, modified = excluded.modified, valid = excluded.valid, "
                       "deleted = excluded.deleted, label = excluded.label",
                       [doc_id, meta.version, meta.created_at, meta.modified_at, valid_code(self._status(meta)),
                        int(meta.deleted_at is not None), document_label(change.content)])
        else:  # the content is as indexed (its row exists): the label stays
            tx.execute("UPDATE search_docs SET version = ?, created = ?, modified = ?, valid = ?, deleted = ? "
                       "WHERE doc_id = ?",
                       [meta.version, meta.created_at, meta.modified_at, valid_code(self._status(meta)),
                        int(meta.deleted_at is not None), doc_id])

    @staticmethod
    def _write_fields(tx: IndexTransaction, doc_id: str, content: Any, members: Sequence[str], *,
                      fresh: bool = False) -> None:
        """The rows of ``members`` as ``content`` has them, in place of those indexed (``fresh``: none are)."""
        if not members:
            return
        if not fresh:
            marks = ", ".join("?" * len(members))
            tx.execute(f"DELETE FROM search_fields WHERE doc_id = ? AND field IN ({marks})", [doc_id, *members])
        tx.executemany("INSERT INTO search_fields (doc_id, field, pos, kind, rank, num, txt) "
                       "VALUES (?, ?, ?, ?, ?, ?, ?)",
                       [(doc_id, r.field, r.position, r.kind, KINDS[r.kind], r.number, r.text)
                        for r in field_rows(content, members)])

    def _write_units(self, tx: IndexTransaction, doc_id: str, units: UnitChange, *, fresh: bool = False) -> None:
        """``fresh``: the document has no row in the index (so no units): nothing to delete. On SQLite a delete
        from ``search_units``, even of no row, makes FTS5 write out the words it holds (its trigger's statement
        opens a savepoint): once per document, a build made one small segment per book and merged them."""
        for prefix in () if fresh else units.removed:
            if prefix == "":
                tx.execute("DELETE FROM search_units WHERE doc_id = ?", [doc_id])
            else:
                tx.execute("DELETE FROM search_units WHERE doc_id = ? AND (pointer = ? OR (pointer >= ? AND "
                           "pointer < ?))", [doc_id, prefix, prefix + "/", prefix + "0"])
        self.backend.insert_units(tx, doc_id, units.added)
        for extension in self._extensions:
            extension.on_units_changed(tx, doc_id, units.removed, units.added)

