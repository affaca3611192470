"""This process's view of a files store's directory: start-up recovery and each document's tail.

:class:`DocumentDirectory` is the base of :class:`~schemadoc.storage.files.FileDocumentStore`: it
opens and recovers the directory, and keeps each document's :class:`~schemadoc.storage.journal.Tail`,
revalidated with one ``stat`` of the journal and one of the meta file (only lines another process
appended are read). Documents found corrupt are remembered and read as ``storage-read-failed``.
The module functions are the start-up repairs.
"""

from __future__ import annotations

import logging
import os
import secrets
import threading
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path

import orjson

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import replay
from schemadoc.storage import disk, snapshots, store_format
from schemadoc.storage.base import (
    LOCK_TIMEOUT_SECONDS,
    DocumentMeta,
    RecoveryReport,
    document_not_found,
)
from schemadoc.storage.checked import CheckedVerdicts
from schemadoc.storage.journal import Tail, find_line_end, fold, read_entries, repair_tail
from schemadoc.storage.layout import (
    Corrupt,
    Paths,
    doc_id_of,
    journal_failed,
    read_failed,
    reason,
    write_failed,
)
from schemadoc.storage.locks import WriteLocks
from schemadoc.storage.recent import Recent

__all__ = ["DocumentDirectory", "clean_temporaries", "rebuild", "take_back_abandoned_creation"]

log = logging.getLogger(__name__)


def take_back_abandoned_creation(paths: Paths) -> bool:
    """Remove a creation that died before renaming its meta file (its commit point); True if there was one.

    Only a creation leaves ``{id}.meta.tmp`` without ``{id}.meta.json``.
    """
    if not (paths.meta_tmp.exists() and not paths.meta.exists()):
        return False
    removed = [path.name for path in (paths.content, paths.journal, paths.content_tmp, paths.meta_tmp)
               if disk.remove_quietly(path)]
    log.warning("document %s: creation interrupted before it completed; removed %s", paths.doc_id,
                ", ".join(removed))
    return True


def clean_temporaries(paths: Paths, *, listed: bool = True) -> list[str]:
    """Complete or discard interrupted snapshot switches, then remove every other temporary file,
    history checkpoints' included. ``listed=False``: the directory's listing had no temporary file of this
    document, so the storage directory is not searched for one again (a search lists the whole directory: once
    per document, start-up grew with the square of the documents)."""
    names = snapshots.finish_or_discard(paths) if listed else []
    for path in paths.temporaries() if listed else ():
        if disk.remove_quietly(path):
            names.append(path.name)
    for path in sorted(paths.checkpoints.glob("*.json.tmp")):  # a cache: an unfinished one is simply dropped
        if disk.remove_quietly(path):
            names.append(f"{path.parent.parent.name}/{path.parent.name}/{path.name}")
    return sorted(set(names))


def rebuild(paths: Paths, meta: DocumentMeta) -> DocumentMeta:
    """Replay the whole journal and make its last version the snapshot; returns the new snapshot meta.

    ``meta`` is the meta file's (for the fields the journal does not hold). Raises
    :class:`Corrupt` when the journal cannot rebuild the document and ``storage-write-failed``.
    """
    doc_id = paths.doc_id
    try:
        entries, _ = read_entries(paths.journal, since=0, upto=None)
    except OSError as error:
        raise Corrupt(f"cannot read the journal: {reason(error)}", paths.journal.name) from None
    try:
        content = orjson.dumps(replay(entries, copy=False))
    except (ValueError, TypeError) as error:
        raise Corrupt(f"the journal cannot rebuild the document: {error}", paths.journal.name) from None
    deleted_at = None
    for entry in entries:
        if entry.op == "delete_document":
            deleted_at = entry.at
        elif entry.op == "undelete_document":
            deleted_at = None
    last = entries[-1]
    rebuilt = replace(meta, version=last.version, snapshot_version=last.version, content_size_bytes=len(content),
                      deleted_at=deleted_at, modified_at=last.at if last.version > meta.version else meta.modified_at)
    if last.version > meta.version:  # the schema that judged the versions after it is not known here: unchecked
        rebuilt = replace(rebuilt, schema_digest=None, verdict=None)
    token = secrets.token_hex(8)
    try:
        disk.write_synced(paths.snapshot_tmp(token), content)
        snapshots.publish(paths, token, rebuilt, find_line_end(paths.journal, last.version, 0), sync_directory=True)
    except OSError as error:
        disk.remove_quietly(paths.snapshot_tmp(token), paths.snapshot_meta_tmp(token))
        raise write_failed(doc_id, "rebuilding the snapshot from the journal", error) from None
    return rebuilt



_KNOWN_PATHS = 4096
_TAILS_KEPT = 8192
"""The tails of the documents read or written last kept (:class:`~schemadoc.storage.recent.Recent`): a tail
forgotten is read again from the meta file and the journal's end (30 to 80 microseconds)."""


class DocumentDirectory:
    """The directory of a files store as this process knows it (module docstring)."""

    def __init__(self, storage_dir: str | os.PathLike[str], *, read_only: bool = False) -> None:
        self.storage_dir = Path(storage_dir)
        self.read_only = read_only
        """Only read, never write a byte: no recovery at :meth:`open`, no lock file made, a damaged snapshot
        reported instead of rebuilt, every write refused (``schemadoc check`` beside a running server)."""
        self._locks = WriteLocks(lambda doc_id: self._paths(doc_id).lock, create=not read_only)
        self._corrupt: dict[str, str] = {}
        self._corrupt_files: dict[str, list[str]] = {}
        self._tails: Recent[str, Tail] = Recent(_TAILS_KEPT)
        self._tails_guard = threading.RLock()  # tails are read and extended by readers and writers alike
        # doc_id -> {version: byte offset of the line after it}, every 64 versions
        self._journal_offsets: dict[str, dict[int, int]] = {}
        self._verdicts = CheckedVerdicts()  # what checks recorded: verdicts/{doc_id}.json
        self._known_paths: dict[str, Paths] = {}  # each document's paths, built once (at most _KNOWN_PATHS kept)
        self.store_format: store_format.FormatCheck | None = None  # what open() found and left

    def _paths(self, doc_id: str) -> Paths:
        paths = self._known_paths.get(doc_id)
        if paths is None:
            if len(self._known_paths) >= _KNOWN_PATHS:
                self._known_paths.clear()
            paths = self._known_paths[doc_id] = Paths(self.storage_dir, doc_id)
        return paths

    # -- start-up ------------------------------------------------------------------------------

    def open(self) -> RecoveryReport:
        """Create the directory if missing, check it is writable, and recover every document.

        Recovery, per document and under its write lock (so a process sharing the directory
        is never disturbed mid-write): take back a creation that never completed; complete or
        discard an interrupted snapshot switch; remove temporary files; truncate a torn last
        journal line (never acknowledged); rebuild from the whole journal a snapshot whose size
        disagrees with its meta, or whose journal of the older format is ahead of it
        (``rolled_forward``). Nothing else needs rolling forward: the journal is the truth.
        Documents that cannot be recovered are reported in ``corrupt`` and raise
        ``storage-read-failed`` when read; the others stay available.

        Raises ``storage-write-failed`` (details ``{"storage_dir", "reason"}``) when the
        directory cannot be created, is not a directory, or is not writable.

        A store opened ``read_only`` checks only that the directory exists and that its format can be
        read (``storage-read-failed``, ``store-format-unsupported``); it recovers nothing and writes nothing.
        """
        if self.read_only:
            if not self.storage_dir.is_dir():
                why = "missing directory" if not self.storage_dir.exists() else "not a directory"
                raise SchemaDocError("storage-read-failed", f"The storage directory {self.storage_dir} cannot be "
                                     f"read: {why}.", {"storage_dir": str(self.storage_dir), "reason": why},
                                     remediation="Name the server's storage directory with --storage-dir / "
                                                 "STORAGE_DIR.")
            store_format.check_readable(self.storage_dir)
            return RecoveryReport()
        self._prepare_directory()
        report = RecoveryReport()
        try:
            names = sorted(os.listdir(self.storage_dir))
        except OSError as error:
            raise self._directory_error(f"cannot list it: {reason(error)}") from None
        documents: set[str] = set()
        temporaries: set[str] = set()
        for name in names:
            doc_id = doc_id_of(name)
            if name.endswith("tmp"):  # what clean_temporaries' search of {doc_id}.*tmp finds
                temporaries.add(name.split(".", 1)[0])
            if doc_id is not None:
                documents.add(doc_id)
            elif name.endswith(".tmp") and disk.remove_quietly(self.storage_dir / name):
                report.removed_tmp.append(name)
        for doc_id in sorted(documents):
            self._recover(doc_id, report, doc_id in temporaries)
        for doc_id, why in report.corrupt.items():
            log.error("document %s cannot be read: %s", doc_id, why)
        return report

    def _prepare_directory(self) -> None:
        directory = self.storage_dir
        try:
            directory.mkdir(exist_ok=True)  # the parent must exist (FR-105)
            if not directory.is_dir():
                raise NotADirectoryError(20, "Not a directory")
            # before anything is written: a newer format is refused with the directory untouched
            self.store_format = store_format.settle(directory)
            probe = directory / f".write-probe-{os.getpid()}-{secrets.token_hex(4)}.tmp"
            try:
                disk.write_synced(probe, b"probe", exclusive=True)
            finally:
                disk.remove_quietly(probe)  # another process's open() may have swept it already
        except OSError as error:
            raise self._directory_error(reason(error)) from None

    def _writable(self, doc_id: str) -> None:
        """Refuse a write to a store opened ``read_only`` (before anything is touched)."""
        if self.read_only:
            raise write_failed(doc_id, "writing", PermissionError(1, "the store is opened read-only"))

    def _directory_error(self, why: str) -> SchemaDocError:
        return SchemaDocError(
            "storage-write-failed",
            f"The storage directory {str(self.storage_dir)!r} cannot be used: {why}.",
            {"storage_dir": str(self.storage_dir), "reason": why},
        )

    def _recover(self, doc_id: str, report: RecoveryReport, temporaries: bool = True) -> None:
        """``temporaries``: the directory's listing had a temporary file of this document."""
        paths = self._paths(doc_id)
        try:
            with self.write_lock(doc_id):
                self._tails.pop(doc_id, None)
                abandoned = take_back_abandoned_creation(paths)
                report.removed_tmp.extend(clean_temporaries(paths, listed=temporaries))
                if abandoned:
                    report.abandoned.append(doc_id)
                    if not paths.exists():
                        return
                rebuilt = self._check(doc_id, paths)
        except Corrupt as corrupt:
            self._corrupt[doc_id] = corrupt.reason
            self._corrupt_files[doc_id] = corrupt.files
            report.corrupt[doc_id] = corrupt.reason
            return
        except SchemaDocError as error:
            if error.code == "document-not-found":  # only a lock file
                return
            if error.code == "lock-timeout":  # another process is writing it right now: it is alive
                log.warning("document %s is being written by another process; not checked", doc_id)
                return
            self._corrupt[doc_id] = error.message
            report.corrupt[doc_id] = error.message
            return
        self._corrupt.pop(doc_id, None)
        if rebuilt is not None:
            report.rolled_forward[doc_id] = rebuilt

    def _check(self, doc_id: str, paths: Paths) -> tuple[int, int] | None:
        """Make one document's files agree; the caller holds its write lock.

        Returns (snapshot version before, after) when the snapshot was rebuilt from the journal.
        """
        has_meta, has_content, has_journal = paths.meta.exists(), paths.content.exists(), paths.journal.exists()
        if not (has_meta or has_content or has_journal):
            raise document_not_found(doc_id)
        last = repair_tail(doc_id, paths.journal) if has_journal else 0
        if not has_meta:
            if has_content:
                raise Corrupt("the content file has no meta file", paths.content.name, paths.meta.name)
            raise Corrupt("only the journal exists (an interrupted creation?)", paths.journal.name)
        try:
            meta, _, _ = snapshots.read_meta_file(doc_id, paths)
        except SchemaDocError as error:
            raise Corrupt(str(error.details.get("reason", error.message)), paths.meta.name) from None
        if not has_content:
            raise Corrupt("the meta file has no content file", paths.meta.name, paths.content.name)
        if not has_journal:
            raise Corrupt("the journal is missing", paths.journal.name)
        if last < meta.version:
            raise Corrupt(f"the journal ends at version {last}, the meta is at version {meta.version}",
                          paths.journal.name, paths.meta.name)
        try:
            size = paths.content.stat().st_size
        except OSError as error:
            raise Corrupt(f"cannot read the content file: {reason(error)}", paths.content.name) from None
        tail = self._tail(doc_id, paths)
        if size != meta.content_size_bytes or any(mark.content_size_bytes < 0 for mark in tail.marks):
            rebuild(paths, meta)
            self._tails.pop(doc_id, None)
            log.warning("document %s: snapshot rebuilt from the journal (version %d to %d)", doc_id,
                        meta.version, last)
            return meta.version, last
        return None

    # -- the tail: what this process knows of a document --------------------------------------

    def _tail(self, doc_id: str, paths: Paths) -> Tail:
        """The document's tail, revalidated with a ``stat`` of the meta file and of the journal.

        Raises ``document-not-found``, ``storage-read-failed`` and :class:`Corrupt`.
        """
        with self._tails_guard:  # re-entrant: a tail whose journal was replaced meanwhile starts afresh here
            tail = self._tails.get(doc_id)
            meta_status = disk.stat_or_none(paths.meta)
            journal_status = disk.stat_or_none(paths.journal)
            if meta_status is None:
                self._tails.pop(doc_id, None)
                snapshots.read_meta_file(doc_id, paths)  # raises the right error
                raise document_not_found(doc_id)
            if journal_status is None:
                self._tails.pop(doc_id, None)
                raise read_failed(doc_id, "the journal is missing", paths.journal.name)
            meta_key = (meta_status.st_ino, meta_status.st_mtime_ns, meta_status.st_size)
            if tail is not None and (tail.journal_ino != journal_status.st_ino or journal_status.st_size < tail.offset):
                tail = None  # the journal was replaced or cut back: start afresh
            if tail is not None and tail.meta_key == meta_key and journal_status.st_size == tail.offset:
                return tail
            if tail is None:
                snapshot, hint, meta_key = snapshots.read_meta_file(doc_id, paths)
                try:
                    end = find_line_end(paths.journal, snapshot.version, hint)
                except OSError as error:
                    raise journal_failed(doc_id, paths, error) from None
                tail = Tail(snapshot, end, meta_key, journal_status.st_ino, end)
            if journal_status.st_size > tail.offset:
                try:
                    data, ino, _ = disk.read_from(paths.journal, tail.offset)
                except OSError as error:
                    raise journal_failed(doc_id, paths, error) from None
                if ino != tail.journal_ino:
                    self._tails.pop(doc_id, None)
                    return self._tail(doc_id, paths)
                fold(tail, data, paths.journal)
            if tail.meta_key != meta_key:
                snapshot, _, meta_key = snapshots.read_meta_file(doc_id, paths)
                if snapshot.version > tail.version:
                    raise Corrupt(f"the journal ends at version {tail.version}, the meta is at version "
                                  f"{snapshot.version}", paths.journal.name, paths.meta.name)
                if snapshot.version >= tail.snapshot.version:
                    tail.move_snapshot(snapshot, meta_key)
            self._tails[doc_id] = tail
            return tail

    def _fresh(self, doc_id: str, paths: Paths) -> Tail:
        try:
            tail = self._tail(doc_id, paths)
        except Corrupt as corrupt:
            self._corrupt[doc_id] = corrupt.reason
            raise read_failed(doc_id, corrupt.reason, *corrupt.files) from None
        if doc_id in self._corrupt:
            raise read_failed(doc_id, self._corrupt[doc_id], *self._corrupt_files.get(doc_id, [paths.meta.name]))
        return tail

    def _repair_switch(self, doc_id: str, paths: Paths, tail: Tail) -> None:
        """The snapshot was renamed but not its meta: rebuild both from the journal, or stop serving it.

        Serving the new snapshot with the old meta would replay entries twice; until a rebuild
        succeeds (here, or at the next start-up) the document reads as ``storage-read-failed``.
        """
        self._tails.pop(doc_id, None)
        try:
            disk.remove_quietly(*paths.temporaries())
            rebuild(paths, tail.snapshot)
            log.warning("document %s: an incomplete snapshot switch was repaired from the journal", doc_id)
        except (Corrupt, SchemaDocError) as error:
            why = error.reason if isinstance(error, Corrupt) else error.message
            self._corrupt[doc_id] = f"an incomplete snapshot switch could not be repaired: {why}"
            log.error("document %s: %s", doc_id, self._corrupt[doc_id])

    def _moved(self, tail: Tail, paths: Paths, snapshot: DocumentMeta) -> None:
        status = disk.stat_or_none(paths.meta)
        key = (status.st_ino, status.st_mtime_ns, status.st_size) if status is not None else (0, 0, 0)
        with self._tails_guard:
            if self._tails.get(paths.doc_id) is tail:
                tail.move_snapshot(snapshot, key)
            else:
                self._tails.pop(paths.doc_id, None)

    def write_lock(self, doc_id: str, timeout: float = LOCK_TIMEOUT_SECONDS) -> AbstractContextManager[None]:
        """A per-document threading lock plus ``fcntl.flock`` on ``{id}.lock`` (:class:`WriteLocks`)."""
        return self._locks.hold(doc_id, timeout)
