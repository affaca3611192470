"""The documents whose changes the search index failed to apply (docs/search.md).

A batch that fails for another reason than an outage of the database is applied again one document at a time
(:class:`~schemadoc.search.index.SearchIndex`); a document that still fails is set aside here: logged once,
counted, marked in ``search_state`` (``failed:{doc_id}``, so that the next start-up of any process indexes it
whole; its entry, as it was, still answers meanwhile) and indexed again from the store by the index's writer
thread every :data:`RETRY_FAILED_SECONDS`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Mapping

from schemadoc.errors import SchemaDocError
from schemadoc.search.backends import Backend
from schemadoc.search.verdicts import put_state

__all__ = ["RETRY_FAILED_SECONDS", "FailedDocuments", "said"]

log = logging.getLogger("schemadoc.search")

RETRY_FAILED_SECONDS = 30.0
"""How often the index's thread indexes again, from the store, the documents whose changes failed to apply."""
_FAILED_MARK = "failed:"
"""``search_state`` keys ``failed:{doc_id}``: a document whose changes failed, indexed whole at the next start-up
(by whichever process opens the index first; its entry, left as it was, still answers meanwhile)."""


def said(error: BaseException) -> str:
    """An error's message, one line, bounded (for the log and :meth:`FailedDocuments.documents`)."""
    text = error.message if isinstance(error, SchemaDocError) else str(error)
    text = text.splitlines()[0] if text else type(error).__name__
    return text if len(text) <= 300 else text[:299] + "\u2026"


class FailedDocuments:
    """The documents set aside, each with its error, and when to try them again. Thread-safe.

    ``wake``: called when a document is first set aside (the writer thread, maybe waiting for the next change,
    then waits for the retry instead)."""

    def __init__(self, backend: Backend, wake: Callable[[], None]) -> None:
        self._backend = backend
        self._wake = wake
        self._lock = threading.Lock()
        self._failed: dict[str, str] = {}
        self._failures = 0
        self._caught_up = 0
        self._retry_at = 0.0

    @staticmethod
    def marked(state: Mapping[str, str]) -> set[str]:
        """The documents ``search_state`` (as read: key to value) marks as failed, in any process."""
        return {key[len(_FAILED_MARK):] for key in state if key.startswith(_FAILED_MARK)}

    def counts(self) -> dict[str, int]:
        """``failed``: documents whose changes failed to apply and wait to be indexed again from the store;
        ``failures``: documents set aside so since this process started; ``caught_up``: of those, indexed since."""
        with self._lock:
            return {"failed": len(self._failed), "failures": self._failures, "caught_up": self._caught_up}

    def documents(self) -> dict[str, str]:
        """The documents :meth:`counts` counts as ``failed``, each with the error."""
        with self._lock:
            return dict(self._failed)

    def due_in(self) -> float | None:
        """Seconds until the next retry (at most 0: due now); None when no document waits for one."""
        with self._lock:
            return self._retry_at - time.monotonic() if self._failed else None

    def take_for_retry(self) -> list[str]:
        """The documents to index again now, in doc_id order; the next retry is due a period from now."""
        with self._lock:
            self._retry_at = time.monotonic() + RETRY_FAILED_SECONDS
            return sorted(self._failed)

    def forget_all(self) -> None:
        """Every document is indexed again (a rebuild): those that still fail are set aside again."""
        with self._lock:
            self._failed.clear()

    def set_aside(self, doc_id: str, error: BaseException) -> bool:
        """Remember that ``doc_id``'s changes failed (logged the first time), and mark it in the index itself so
        that the next start-up of any process indexes it whole, should this one end before it catches up. Whether
        it is the document's first failure."""
        reason = f"{type(error).__name__}: {said(error)}"
        with self._lock:
            first = doc_id not in self._failed
            self._failed[doc_id] = reason
            if first:
                self._failures += 1
                self._retry_at = time.monotonic() + RETRY_FAILED_SECONDS
        if not first:
            return False
        self._wake()
        log.error("search index: the changes of document %s failed to apply (%s: %s); its entry stays as it was "
                  "and is indexed again from the store within %.0f s (and at the next start-up)", doc_id,
                  type(error).__name__, said(error), RETRY_FAILED_SECONDS)
        try:
            with self._backend.transaction() as tx:
                put_state(tx, _FAILED_MARK + doc_id, reason)
        except Exception as mark:  # the database refuses even that: this process's retry is what is left
            log.warning("search index: document %s could not be marked for the next start-up: %s", doc_id,
                        said(mark))
        return True

    def resolved(self, doc_id: str) -> None:
        """``doc_id`` was indexed: no longer set aside (nothing when it was not)."""
        with self._lock:
            if self._failed.pop(doc_id, None) is None:
                return
            self._caught_up += 1
        log.info("search index: document %s is indexed again", doc_id)
        self.unmark([doc_id])

    def unmark(self, doc_ids: Iterable[str], *, keep_failing: bool = False) -> None:
        """Remove the marks of ``doc_ids`` from ``search_state`` (``keep_failing``: not those still set aside)."""
        with self._lock:
            still = set(self._failed) if keep_failing else set()
        keys = [[_FAILED_MARK + doc_id] for doc_id in doc_ids if doc_id not in still]
        if not keys:
            return
        try:
            with self._backend.transaction() as tx:
                tx.executemany("DELETE FROM search_state WHERE key = ?", keys)
        except Exception as error:  # the mark stays: the next start-up indexes the document whole once more
            log.warning("search index: %d mark(s) of failed documents could not be removed: %s", len(keys),
                        said(error))

    def remaining(self) -> int:
        with self._lock:
            return len(self._failed)
