"""A store that keeps everything in memory: for tests, and for servers that need no persistence.

It behaves like the files store on purpose (same errors, same version checks, same re-entrant
locks with timeouts), and keeps each journal as the very lines the files store would write,
so what comes out never aliases what went in.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace

from schemadoc.ops.journal import JournalEntry
from schemadoc.storage.base import (
    LOCK_TIMEOUT_SECONDS,
    DocumentMeta,
    RecoveryReport,
    StoredDocument,
    Verdict,
    already_exists,
    check_doc_id,
    check_restore,
    check_write,
    document_not_found,
    journal_line,
    keep_checkpoints,
    restored_entries,
    snapshot_due,
    version_conflict,
)
from schemadoc.storage.locks import WriteLocks

__all__ = ["MemoryDocumentStore"]


@dataclass
class _Document:
    meta: DocumentMeta                 # the current version's; snapshot_version says what ``content`` holds
    content: bytes                     # the snapshot
    journal: list[bytes] = field(default_factory=list)
    checkpoints: dict[int, bytes] = field(default_factory=dict)


class MemoryDocumentStore:
    """A :class:`~schemadoc.storage.base.DocumentStore` in a dictionary, one ``RLock`` per document."""

    def __init__(self) -> None:
        self._documents: dict[str, _Document] = {}
        self._locks = WriteLocks(lambda doc_id: None)
        self._guard = threading.Lock()  # protects the dictionary itself

    def open(self) -> RecoveryReport:
        """Nothing to prepare or recover: an empty report."""
        return RecoveryReport()

    # -- writes --------------------------------------------------------------------------------

    def create(self, meta: DocumentMeta, entry: JournalEntry, content: bytes) -> None:
        doc_id = check_write(meta, entry, content, new=True)
        line = journal_line(doc_id, entry)
        with self.write_lock(doc_id), self._guard:
            if doc_id in self._documents:
                raise already_exists(doc_id)
            self._documents[doc_id] = _Document(replace(meta, snapshot_version=1), bytes(content), [line])

    def commit(self, meta: DocumentMeta, entry: JournalEntry, content: bytes | None = None) -> None:
        doc_id = check_write(meta, entry, content)
        line = journal_line(doc_id, entry)
        with self.write_lock(doc_id):
            document = self._get(doc_id)
            if document.meta.version != entry.version - 1:
                raise version_conflict(doc_id, entry.version - 1, document.meta.version)
            if content is None:
                stored = replace(meta, snapshot_version=document.meta.snapshot_version)
                snapshot = document.content
            else:
                stored, snapshot = replace(meta, snapshot_version=meta.version), bytes(content)
            with self._guard:
                self._documents[doc_id] = _Document(stored, snapshot, [*document.journal, line],
                                                    document.checkpoints)

    def restore(self, meta: DocumentMeta, entries: Iterable[JournalEntry], content: bytes) -> None:
        doc_id = check_restore(meta, content)
        with self.write_lock(doc_id):
            if doc_id in self._documents:
                raise already_exists(doc_id)
            journal = [journal_line(doc_id, entry) for entry in restored_entries(meta, entries)]
            with self._guard:
                if doc_id in self._documents:
                    raise already_exists(doc_id)
                self._documents[doc_id] = _Document(replace(meta, snapshot_version=meta.version), bytes(content),
                                                    journal)

    def write_snapshot(self, doc_id: str, version: int, content: bytes) -> bool:
        doc_id = check_doc_id(doc_id)
        with self.write_lock(doc_id):
            document = self._get(doc_id)
            if not snapshot_due(doc_id, version, document.meta):
                return False
            with self._guard:
                self._documents[doc_id] = _Document(replace(document.meta, snapshot_version=version),
                                                    bytes(content), document.journal, document.checkpoints)
            return True

    def record_verdict(self, doc_id: str, verdict: Verdict) -> bool:
        doc_id = check_doc_id(doc_id)
        with self.write_lock(doc_id):
            document = self._get(doc_id)
            if document.meta.version != verdict.version:
                return False
            with self._guard:
                self._documents[doc_id] = replace(document, meta=replace(document.meta, verdict=verdict))
            return True

    def purge(self, doc_id: str) -> None:
        doc_id = check_doc_id(doc_id)
        with self.write_lock(doc_id), self._guard:
            if self._documents.pop(doc_id, None) is None:
                raise document_not_found(doc_id)

    # -- reads ---------------------------------------------------------------------------------

    def load(self, doc_id: str) -> StoredDocument:
        document = self._get(check_doc_id(doc_id))
        lines = document.journal[document.meta.snapshot_version:]
        return StoredDocument(document.meta, document.content,
                              tuple(JournalEntry.from_line(line) for line in lines))

    def read_meta(self, doc_id: str) -> DocumentMeta:
        return self._get(check_doc_id(doc_id)).meta

    def list_metas(self) -> list[DocumentMeta]:
        with self._guard:
            documents = list(self._documents.items())
        return [document.meta for _, document in sorted(documents)]

    def read_journal(self, doc_id: str, since_version: int = 0, until_version: int | None = None, *,
                     max_bytes: int | None = None) -> list[JournalEntry]:
        document = self._get(check_doc_id(doc_id))
        lines = document.journal[max(since_version, 0): until_version]
        if max_bytes is not None:
            taken = count = 0
            while count < len(lines) and taken < max_bytes:
                taken += len(lines[count]) + 1
                count += 1
            lines = lines[:count]
        return [JournalEntry.from_line(line) for line in lines]

    def write_checkpoint(self, doc_id: str, version: int, content: bytes) -> None:
        checkpoints = self._get(check_doc_id(doc_id)).checkpoints
        checkpoints[version] = bytes(content)
        for stale in set(checkpoints) - set(keep_checkpoints(list(checkpoints))):
            checkpoints.pop(stale, None)

    def read_checkpoint(self, doc_id: str, at_most: int) -> tuple[int, bytes] | None:
        checkpoints = self._get(check_doc_id(doc_id)).checkpoints
        versions = [version for version in list(checkpoints) if version <= at_most]
        return (max(versions), checkpoints[max(versions)]) if versions else None

    def write_lock(self, doc_id: str, timeout: float = LOCK_TIMEOUT_SECONDS) -> AbstractContextManager[None]:
        return self._locks.hold(doc_id, timeout)

    def _get(self, doc_id: str) -> _Document:
        # one dictionary read: a _Document is replaced whole, never changed in place
        document = self._documents.get(doc_id)
        if document is None:
            raise document_not_found(doc_id)
        return document

