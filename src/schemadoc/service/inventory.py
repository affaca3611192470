"""Each document's verdict under the served schema, and the inventory that finds it (docs/schema-changes.md).

Every write records the digest of the schema that judged it and its verdict (valid, or what a repair
left) in the document's meta. A document whose recorded verdict is for another digest (the schema
changed since) or for another version is *unchecked*: the inventory checks it at its current version
(journal replayed) against the served schema and records the verdict with
:meth:`~schemadoc.storage.base.DocumentStore.record_verdict`, which changes no content and no version.

The inventory runs in one background thread after start-up (``check_documents_on_start``), one
document at a time: a document held in memory is checked as held; any other is loaded beside the
memory budget and dropped again (a check does not evict the documents in use). Each check holds the
document's write lock and first reads the meta again, so a server that shares the store (PostgreSQL,
or one storage directory) skips what another has checked meanwhile: every document is checked once.
Servers walk the documents in a random order, so two of them rarely wait on the same lock.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import utc_now
from schemadoc.service.core import ServiceCore
from schemadoc.storage.base import DocumentMeta, Verdict

__all__ = ["CHECK_LOCK_SECONDS", "Inventory", "InventoryProgress", "status_of"]

log = logging.getLogger("schemadoc.inventory")

CHECK_LOCK_SECONDS = 0.5
"""How long the inventory waits for a document's write lock before it comes back to it later."""
_LOG_EVERY_DOCUMENTS = 100
_LOG_EVERY_SECONDS = 10.0
_ROUNDS = 20  # passes over documents whose lock stayed busy, before they are left unchecked
_STARTING = threading.Lock()


def status_of(meta: DocumentMeta, digest: str) -> str:
    """``valid``, ``invalid`` or ``unchecked``: what the served schema (``digest``) is known to say of the
    document at its current version."""
    verdict = meta.verdict
    if verdict is None or verdict.digest != digest or verdict.version != meta.version:
        return "unchecked"
    return "valid" if verdict.valid else "invalid"


@dataclass
class InventoryProgress:
    """What the background inventory has done (read by the status answer)."""

    state: str = "idle"
    """``idle`` (not started: ``check_documents_on_start`` off), ``running``, ``done`` or ``stopped``."""
    to_check: int = 0
    checked: int = 0
    valid: int = 0
    invalid: int = 0
    skipped: int = 0
    """Checked by another server meanwhile, written meanwhile (the write recorded its verdict), or gone."""
    failed: int = 0
    started_at: str | None = None
    finished_at: str | None = None
    seconds: float | None = None
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        with self.lock:
            return {"state": self.state, "to_check": self.to_check, "checked": self.checked, "valid": self.valid,
                    "invalid": self.invalid, "skipped": self.skipped, "failed": self.failed,
                    "started_at": self.started_at, "finished_at": self.finished_at,
                    "seconds": None if self.seconds is None else round(self.seconds, 3)}


class Inventory(ServiceCore):
    """Verdicts: the current one of a document, a check on demand, and the background inventory."""

    _inventory_thread: threading.Thread | None = None
    _inventory_stop: threading.Event | None = None
    _inventory_progress: InventoryProgress | None = None

    @property
    def inventory(self) -> InventoryProgress:
        """The background inventory's progress (``idle`` until :meth:`start_inventory`)."""
        if self._inventory_progress is None:
            self._inventory_progress = InventoryProgress()
        return self._inventory_progress

    def document_status(self, meta: DocumentMeta) -> str:
        """``valid``, ``invalid`` or ``unchecked`` under the served schema (:func:`status_of`)."""
        return status_of(meta, self.schema.digest)

    def current_verdict(self, meta: DocumentMeta) -> Verdict | None:
        """The verdict of the served schema on the document at its current version, ``None`` while unchecked."""
        return meta.verdict if self.document_status(meta) != "unchecked" else None

    def verdict_counts(self) -> dict[str, int]:
        """How many live documents are valid, invalid and unchecked under the served schema (one pass over metas)."""
        counts = {"documents": 0, "valid": 0, "invalid": 0, "unchecked": 0}
        digest = self.schema.digest
        for meta in self.store.list_metas():
            if meta.deleted_at is None:
                counts["documents"] += 1
                counts[status_of(meta, digest)] += 1
        return counts

    # -- checks ------------------------------------------------------------------------------

    def check_document(self, doc_id: str, *, lock_timeout: float | None = None) -> tuple[DocumentMeta, bool]:
        """Check the document at its current version against the served schema and record the verdict.

        Returns the meta with the verdict and whether a check ran (``False``: the verdict of the served
        schema on this version was known already, from a write or another server's check). Raises
        ``document-not-found``, ``lock-timeout`` and the store's errors.
        """
        with self.store.write_lock(doc_id, self.lock_timeout if lock_timeout is None else lock_timeout):
            meta = self.store.read_meta(doc_id)
            if self.document_status(meta) != "unchecked":
                return meta, False
            content = self._content_at(doc_id, meta)
            report = self.validator.validate(content)
            verdict = Verdict.of(meta.version, self.schema.digest, report.violations, report.count,
                                 checked_at=utc_now())
            if self._states.get(doc_id) is None:
                self.validator.forget(content)
            self.store.record_verdict(doc_id, verdict)  # under the lock: the document is still at meta.version
            recorded = self.store.read_meta(doc_id)
            if self._search is not None:
                self._search.meta_changed(recorded)
            return recorded, True

    def _content_at(self, doc_id: str, meta: DocumentMeta) -> Any:
        """The content at ``meta.version``: the held one, else loaded and not kept (nothing in use is evicted)."""
        held = self._states.get(doc_id)
        if held is not None and held.meta.version <= meta.version:
            return self._state(doc_id, include_deleted=True).content
        state = self._read_stored(doc_id)[0]
        if state.meta.version != meta.version:
            raise SchemaDocError("version-conflict", f"Document {doc_id} moved while it was checked.",
                                 {"doc_id": doc_id, "expected_version": meta.version,
                                  "actual_version": state.meta.version})
        return state.content

    # -- the background inventory -------------------------------------------------------------

    def start_inventory(self) -> threading.Thread:
        """Start the background inventory, unless it is running (then its thread is returned); a finished one
        starts again from the documents unchecked now. :meth:`stop_inventory` ends it early (``close`` does)."""
        with _STARTING:
            running = self._inventory_thread
            if running is not None and running.is_alive():
                return running
            self._inventory_stop = threading.Event()
            self._inventory_progress = InventoryProgress(state="running")
            thread = threading.Thread(target=self._run_inventory, name="schemadoc-inventory", daemon=True)
            self._inventory_thread = thread
        thread.start()
        return thread

    def stop_inventory(self, timeout: float = 5.0) -> None:
        if self._inventory_stop is not None:
            self._inventory_stop.set()
        if self._inventory_thread is not None and self._inventory_thread is not threading.current_thread():
            self._inventory_thread.join(timeout)

    def close(self) -> None:
        self.stop_inventory()
        super().close()

    def _run_inventory(self) -> None:
        progress = self.inventory
        stop = self._inventory_stop
        assert stop is not None
        started = time.monotonic()
        digest = self.schema.digest
        try:
            pending = [meta.doc_id for meta in self.store.list_metas()
                       if meta.deleted_at is None and status_of(meta, digest) == "unchecked"]
        except SchemaDocError as error:
            log.error("inventory not run: the documents cannot be listed: %s", error.message)
            with progress.lock:
                progress.state, progress.finished_at = "stopped", utc_now()
            return
        random.shuffle(pending)
        with progress.lock:
            progress.to_check, progress.started_at = len(pending), utc_now()
        log.info("inventory: %d document(s) to check against the served schema %s", len(pending), digest[:19])
        logged_at, logged_count = started, 0
        for _ in range(_ROUNDS):
            busy: list[str] = []
            for doc_id in pending:
                if stop.is_set():
                    break
                self._check_one(doc_id, busy)
                done = progress.checked + progress.skipped + progress.failed
                now = time.monotonic()
                if done - logged_count >= _LOG_EVERY_DOCUMENTS or now - logged_at >= _LOG_EVERY_SECONDS:
                    logged_at, logged_count = now, done
                    log.info("inventory: %d of %d done (%d valid, %d invalid, %d skipped)", done, progress.to_check,
                             progress.valid, progress.invalid, progress.skipped)
            pending = busy
            if not pending or stop.is_set():
                break
            stop.wait(CHECK_LOCK_SECONDS)
        elapsed = time.monotonic() - started
        with progress.lock:
            progress.state = "stopped" if stop.is_set() else "done"
            progress.failed += len(pending) if not stop.is_set() else 0
            progress.finished_at, progress.seconds = utc_now(), elapsed
        log.info("inventory %s in %.1f s: %d checked (%d valid, %d invalid), %d skipped, %d failed",
                 progress.state, elapsed, progress.checked, progress.valid, progress.invalid, progress.skipped,
                 progress.failed)

    def _check_one(self, doc_id: str, busy: list[str]) -> None:
        progress = self.inventory
        try:
            meta, ran = self.check_document(doc_id, lock_timeout=CHECK_LOCK_SECONDS)
        except SchemaDocError as error:
            if error.code == "lock-timeout":
                busy.append(doc_id)
                return
            with progress.lock:
                if error.code in ("document-not-found", "version-conflict"):
                    progress.skipped += 1
                else:
                    progress.failed += 1
                    log.warning("inventory: document %s not checked: %s", doc_id, error.message)
            return
        with progress.lock:
            if not ran:
                progress.skipped += 1
                return
            progress.checked += 1
            if meta.verdict is not None and meta.verdict.valid:
                progress.valid += 1
            else:
                progress.invalid += 1
