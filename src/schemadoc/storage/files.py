"""The default store: one flat directory, a few files per document (FR-015..019, FR-101..106).

Journal-first. A commit appends one line to ``{id}.journal.jsonl`` and fdatasyncs it: that is
the commit point, and the whole write. The line carries the new version's meta fields, so the
journal alone gives the current meta. ``{id}.json`` is a snapshot, the content of the version
``{id}.meta.json`` names (``snapshot_version``); it lags the journal until the service writes a
newer one (:meth:`FileDocumentStore.write_snapshot`, off the write path) or passes the content
with the commit (inline). Loading a document = its snapshot + the journal lines after it.

Freshness is cheap: this process's view of a document, its :class:`~schemadoc.storage.journal.Tail`,
is revalidated with one ``stat`` of the journal and one of the meta file, and only lines another
process appended are read. Several processes may share one directory: writes of a document are
serialised by its lock, and each commit checks the stored version (``version-conflict``).
Documents found corrupt are remembered and read as ``storage-read-failed`` while the others stay
available.

The modules beside this one hold the other concerns: :mod:`.layout` (names, errors),
:mod:`.journal` (lines, tail), :mod:`.snapshots` (switching a snapshot and its meta atomically),
:mod:`.locks` (write locks) and :mod:`.disk` (the file operations they share).
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
import threading
from collections.abc import Iterable
from contextlib import AbstractContextManager
from dataclasses import replace
from pathlib import Path

import orjson

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry, replay
from schemadoc.storage import disk, snapshots
from schemadoc.storage.base import (
    LOCK_TIMEOUT_SECONDS,
    DocumentMeta,
    RecoveryReport,
    StoredDocument,
    already_exists,
    check_doc_id,
    check_write,
    document_not_found,
    journal_line,
    keep_checkpoints,
    snapshot_due,
    version_conflict,
)
from schemadoc.storage.journal import Tail, find_line_end, fold, read_entries, repair_tail
from schemadoc.storage.layout import (
    META_SUFFIX,
    Corrupt,
    Paths,
    doc_id_of,
    journal_failed,
    read_failed,
    reason,
    write_failed,
)
from schemadoc.storage.locks import WriteLocks

__all__ = ["FileDocumentStore"]

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


def clean_temporaries(paths: Paths) -> list[str]:
    """Complete or discard interrupted snapshot switches, then remove every other temporary file,
    history checkpoints' included."""
    names = snapshots.finish_or_discard(paths)
    for path in paths.temporaries():
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
    token = secrets.token_hex(8)
    try:
        disk.write_synced(paths.snapshot_tmp(token), content)
        snapshots.publish(paths, token, rebuilt, find_line_end(paths.journal, last.version, 0), sync_directory=True)
    except OSError as error:
        disk.remove_quietly(paths.snapshot_tmp(token), paths.snapshot_meta_tmp(token))
        raise write_failed(doc_id, "rebuilding the snapshot from the journal", error) from None
    return rebuilt


class CheckpointDirectory:
    """The history checkpoints of one document, ``checkpoints/{doc_id}/{version}.json``.

    A cache for rebuilding past versions, not a commit: written through a temporary file and a
    rename but not fsynced (a torn one is detected by the reader and skipped), and bounded by
    :func:`~schemadoc.storage.base.keep_checkpoints` after every write.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def versions(self) -> list[int]:
        try:
            names = os.listdir(self.directory)
        except OSError:
            return []
        return [int(name[:-5]) for name in names if name.endswith(".json") and name[:-5].isdigit()]

    def write(self, version: int, content: bytes | Iterable[bytes]) -> None:
        """Write the checkpoint from its bytes, or from pieces of them written as they come.

        Raises :exc:`OSError`, and whatever drawing a piece raises (then nothing is left behind).
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        temporary = self.directory / f"{version}.json.tmp"
        try:
            with open(temporary, "wb") as file:
                for piece in (content,) if isinstance(content, bytes) else content:
                    file.write(piece)
        except BaseException:
            disk.remove_quietly(temporary)
            raise
        os.replace(temporary, self.directory / f"{version}.json")
        versions = self.versions()
        for stale in set(versions) - set(keep_checkpoints(versions)):
            disk.remove_quietly(self.directory / f"{stale}.json")

    def read(self, at_most: int) -> tuple[int, bytes] | None:
        for version in sorted((v for v in self.versions() if v <= at_most), reverse=True):
            try:
                return version, (self.directory / f"{version}.json").read_bytes()
            except OSError:
                continue
        return None

    def size_bytes(self) -> int:
        return sum(status.st_size for version in self.versions()
                   if (status := disk.stat_or_none(self.directory / f"{version}.json")) is not None)


class FileDocumentStore:
    """A :class:`~schemadoc.storage.base.DocumentStore` in one flat directory of files (the default).

    ``storage_dir`` is created by :meth:`open` if missing (its parent must exist). The store
    holds no document content in memory, only this process's view of each document (its tail);
    the service caches what it needs.
    """

    def __init__(self, storage_dir: str | os.PathLike[str]) -> None:
        self.storage_dir = Path(storage_dir)
        self._locks = WriteLocks(lambda doc_id: self._paths(doc_id).lock)
        self._corrupt: dict[str, str] = {}
        self._corrupt_files: dict[str, list[str]] = {}
        self._tails: dict[str, Tail] = {}
        self._tails_guard = threading.RLock()  # tails are read and extended by readers and writers alike
        # doc_id -> {version: byte offset of the line after it}, every 64 versions
        self._journal_offsets: dict[str, dict[int, int]] = {}

    def _paths(self, doc_id: str) -> Paths:
        return Paths(self.storage_dir, doc_id)

    def __repr__(self) -> str:
        return f"FileDocumentStore({str(self.storage_dir)!r})"

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
        """
        self._prepare_directory()
        report = RecoveryReport()
        try:
            names = sorted(os.listdir(self.storage_dir))
        except OSError as error:
            raise self._directory_error(f"cannot list it: {reason(error)}") from None
        documents: set[str] = set()
        for name in names:
            doc_id = doc_id_of(name)
            if doc_id is not None:
                documents.add(doc_id)
            elif name.endswith(".tmp") and disk.remove_quietly(self.storage_dir / name):
                report.removed_tmp.append(name)
        for doc_id in sorted(documents):
            self._recover(doc_id, report)
        for doc_id, why in report.corrupt.items():
            log.error("document %s cannot be read: %s", doc_id, why)
        return report

    def _prepare_directory(self) -> None:
        directory = self.storage_dir
        try:
            directory.mkdir(exist_ok=True)  # the parent must exist (FR-105)
            if not directory.is_dir():
                raise NotADirectoryError(20, "Not a directory")
            probe = directory / f".write-probe-{os.getpid()}-{secrets.token_hex(4)}.tmp"
            try:
                disk.write_synced(probe, b"probe", exclusive=True)
            finally:
                disk.remove_quietly(probe)  # another process's open() may have swept it already
        except OSError as error:
            raise self._directory_error(reason(error)) from None

    def _directory_error(self, why: str) -> SchemaDocError:
        return SchemaDocError(
            "storage-write-failed",
            f"The storage directory {str(self.storage_dir)!r} cannot be used: {why}.",
            {"storage_dir": str(self.storage_dir), "reason": why},
        )

    def _recover(self, doc_id: str, report: RecoveryReport) -> None:
        paths = self._paths(doc_id)
        try:
            with self.write_lock(doc_id):
                self._tails.pop(doc_id, None)
                abandoned = take_back_abandoned_creation(paths)
                report.removed_tmp.extend(clean_temporaries(paths))
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

    # -- writes --------------------------------------------------------------------------------

    def create(self, meta: DocumentMeta, entry: JournalEntry, content: bytes) -> None:
        """tmp files → journal (claimed with O_EXCL) → content rename → meta rename (the commit point).

        A creation that dies before its meta file appears leaves ``{id}.meta.tmp`` behind, which
        marks it as abandoned: recovery removes what it wrote instead of reporting it corrupt.
        """
        doc_id = check_write(meta, entry, content, new=True)
        meta = replace(meta, snapshot_version=1)
        line = journal_line(doc_id, entry, meta)
        paths = self._paths(doc_id)
        with self.write_lock(doc_id):
            if paths.exists():
                raise already_exists(doc_id)
            try:
                disk.write_synced(paths.content_tmp, content)
                disk.write_synced(paths.meta_tmp, snapshots.meta_bytes(meta, len(line)))
            except OSError as error:
                disk.remove_quietly(paths.content_tmp, paths.meta_tmp)
                raise write_failed(doc_id, "writing the new document", error) from None
            try:
                disk.write_synced(paths.journal, line, exclusive=True)
            except OSError as error:
                disk.remove_quietly(paths.content_tmp, paths.meta_tmp)
                if isinstance(error, FileExistsError):
                    raise already_exists(doc_id) from None
                raise write_failed(doc_id, "creating the journal", error) from None
            try:
                os.replace(paths.content_tmp, paths.content)
                os.replace(paths.meta_tmp, paths.meta)
                disk.fsync_directory(self.storage_dir)
            except OSError as error:
                disk.remove_quietly(paths.meta, paths.content, paths.meta_tmp, paths.content_tmp, paths.journal)
                raise write_failed(doc_id, "creating the document", error) from None
        self._tails.pop(doc_id, None)
        self._corrupt.pop(doc_id, None)

    def commit(self, meta: DocumentMeta, entry: JournalEntry, content: bytes | None = None) -> None:
        """Append the line and fdatasync it (the commit point); with ``content``, also switch the snapshot.

        An inline snapshot is written to its temporary files before the journal line, so the
        failures that really happen (a full disk) strike before anything is journaled. Once the
        line is durable the commit stands: a snapshot switch that fails after it only leaves the
        snapshot lagging (logged).
        """
        doc_id = check_write(meta, entry, content)
        line = journal_line(doc_id, entry, meta)
        paths = self._paths(doc_id)
        with self.write_lock(doc_id):
            tail = self._fresh(doc_id, paths)
            if tail.version != entry.version - 1:
                raise version_conflict(doc_id, entry.version - 1, tail.version)
            token = secrets.token_hex(8) if content is not None else None
            if token is not None and content is not None:
                try:
                    disk.write_synced(paths.snapshot_tmp(token), content)
                except OSError as error:
                    disk.remove_quietly(paths.snapshot_tmp(token))
                    raise write_failed(doc_id, "writing the snapshot", error) from None
            try:
                before = disk.append_synced(paths.journal, line, tail.offset)
            except OSError as error:
                if token is not None:
                    disk.remove_quietly(paths.snapshot_tmp(token))
                with self._tails_guard:
                    self._tails.pop(doc_id, None)
                raise write_failed(doc_id, "appending to the journal", error) from None
            with self._tails_guard:
                if self._tails.get(doc_id) is tail and tail.offset == before:
                    fold(tail, line, paths.journal)
                elif self._tails.get(doc_id) is not tail or tail.version != entry.version:
                    self._tails.pop(doc_id, None)  # a reader saw the line first; start afresh next time
                    tail = self._fresh(doc_id, paths)
            if token is not None:
                snapshot = replace(meta, snapshot_version=meta.version)
                try:
                    snapshots.publish(paths, token, snapshot, tail.offset, sync_directory=False)
                except snapshots.SwitchIncomplete:
                    self._repair_switch(doc_id, paths, tail)
                except OSError as error:
                    disk.remove_quietly(paths.snapshot_tmp(token), paths.snapshot_meta_tmp(token))
                    log.warning("document %s: version %d is journaled, its snapshot not written (%s)",
                                doc_id, meta.version, reason(error))
                else:
                    self._moved(tail, paths, snapshot)

    def write_snapshot(self, doc_id: str, version: int, content: bytes | Iterable[bytes]) -> bool:
        """Write the bytes (or their pieces, each as it comes) without the lock, then switch snapshot and
        meta under it (see the protocol).

        The pieces are drawn only when the snapshot is to be written (not when the stored one
        is already at ``version`` or newer). An exception a piece raises (the serialiser's)
        leaves nothing behind and propagates.
        """
        doc_id = check_doc_id(doc_id)
        paths = self._paths(doc_id)
        if not snapshot_due(doc_id, version, self.read_meta(doc_id)):
            return False
        token = secrets.token_hex(8)
        try:
            size = disk.write_synced(paths.snapshot_tmp(token), content)
            with self.write_lock(doc_id):
                tail = self._fresh(doc_id, paths)
                mark = tail.mark(version)
                if mark is None:  # another writer's snapshot is already at or past it
                    return False
                snapshot = replace(tail.snapshot, version=version, snapshot_version=version,
                                   modified_at=mark.modified_at, content_size_bytes=size,
                                   deleted_at=mark.deleted_at)
                try:
                    snapshots.publish(paths, token, snapshot, mark.end, sync_directory=True)
                except snapshots.SwitchIncomplete:
                    self._repair_switch(doc_id, paths, tail)
                    raise
                self._moved(tail, paths, snapshot)
                return True
        except OSError as error:
            raise write_failed(doc_id, "writing the snapshot", error) from None
        finally:
            disk.remove_quietly(paths.snapshot_tmp(token), paths.snapshot_meta_tmp(token))

    write_snapshot_pieces = write_snapshot

    def purge(self, doc_id: str) -> None:
        """Remove content, meta, journal, temporary, checkpoint and lock files (see the protocol).

        The lock file goes too: a process that waited on it and then finds the document gone
        gets ``document-not-found`` from whatever it does next.
        """
        doc_id = check_doc_id(doc_id)
        paths = self._paths(doc_id)
        if not paths.exists():
            raise document_not_found(doc_id)
        with self.write_lock(doc_id):
            removed = False
            for path in (paths.meta, paths.content, paths.journal, *paths.temporaries()):
                try:
                    path.unlink()
                    removed = True
                except FileNotFoundError:
                    continue
                except OSError as error:
                    raise write_failed(doc_id, f"removing {path.name}", error) from None
            disk.remove_quietly(paths.lock)
            shutil.rmtree(paths.checkpoints, ignore_errors=True)
            self._journal_offsets.pop(doc_id, None)
            self._tails.pop(doc_id, None)
            self._corrupt.pop(doc_id, None)
            if not removed:
                raise document_not_found(doc_id)
            try:
                disk.fsync_directory(self.storage_dir)
            except OSError as error:
                raise write_failed(doc_id, "syncing the directory", error) from None

    # -- reads ---------------------------------------------------------------------------------

    def load(self, doc_id: str) -> StoredDocument:
        doc_id = check_doc_id(doc_id)
        paths = self._paths(doc_id)
        if not paths.exists():  # do not leave a lock file behind for an unknown id
            raise document_not_found(doc_id)
        with self.write_lock(doc_id):
            tail = self._fresh(doc_id, paths)
            try:
                content = paths.content.read_bytes()
            except OSError as error:
                raise read_failed(doc_id, f"cannot read the content file: {reason(error)}",
                                  paths.content.name) from None
            if len(content) != tail.snapshot.content_size_bytes:  # damaged behind our back: rebuild it
                log.warning("document %s: content file of %d bytes (meta says %d) rebuilt from the journal",
                            doc_id, len(content), tail.snapshot.content_size_bytes)
                try:
                    rebuild(paths, tail.snapshot)
                except Corrupt as corrupt:
                    self._corrupt[doc_id] = corrupt.reason
                    raise read_failed(doc_id, corrupt.reason, *corrupt.files) from None
                self._tails.pop(doc_id, None)
                tail = self._fresh(doc_id, paths)
                content = paths.content.read_bytes()
            with self._tails_guard:
                current, snapshot, snapshot_end = tail.current, tail.snapshot, tail.snapshot_end
            try:
                entries, last = read_entries(paths.journal, since=snapshot.version, upto=current.version,
                                             start=(snapshot.version, snapshot_end))
            except (OSError, Corrupt) as error:
                raise journal_failed(doc_id, paths, error) from None
        if last < current.version:
            raise read_failed(doc_id, f"the journal ends at version {last}, the meta is at version "
                                      f"{current.version}", paths.journal.name)
        return StoredDocument(current, content, tuple(entries))

    def read_meta(self, doc_id: str) -> DocumentMeta:
        doc_id = check_doc_id(doc_id)
        return self._fresh(doc_id, self._paths(doc_id)).current

    def list_metas(self) -> list[DocumentMeta]:
        """Every readable document's meta, sorted by doc_id (a directory scan; corrupt documents left out).

        Raises ``storage-read-failed`` (details ``{"storage_dir", "reason"}``) when the
        directory cannot be listed.
        """
        try:
            names = os.listdir(self.storage_dir)
        except OSError as error:
            why = f"cannot list the storage directory: {reason(error)}"
            raise SchemaDocError("storage-read-failed", why + ".",
                                 {"storage_dir": str(self.storage_dir), "reason": why}) from None
        metas: list[DocumentMeta] = []
        for name in names:
            doc_id = doc_id_of(name) if name.endswith(META_SUFFIX) else None
            if doc_id is None or doc_id in self._corrupt:
                continue
            try:
                metas.append(self.read_meta(doc_id))
            except SchemaDocError as error:
                log.warning("document %s left out of the list: %s", doc_id, error.message)
        metas.sort(key=lambda meta: meta.doc_id)
        return metas

    def read_journal(self, doc_id: str, since_version: int = 0,
                     until_version: int | None = None) -> list[JournalEntry]:
        doc_id = check_doc_id(doc_id)
        paths = self._paths(doc_id)
        meta = self.read_meta(doc_id)
        upto = meta.version if until_version is None else min(until_version, meta.version)
        try:
            offsets = self._journal_offsets.setdefault(doc_id, {})
            start = max((version for version in list(offsets) if version <= since_version), default=0)
            entries, last = read_entries(paths.journal, since=since_version, upto=upto,
                                         start=(start, offsets.get(start, 0)), offsets=offsets)
        except FileNotFoundError:
            if not paths.meta.exists():
                raise document_not_found(doc_id) from None
            raise read_failed(doc_id, "the journal is missing", paths.journal.name) from None
        except (OSError, Corrupt) as error:
            raise journal_failed(doc_id, paths, error) from None
        if last < upto:
            raise read_failed(doc_id, f"the journal ends at version {last}, the meta is at version "
                                      f"{meta.version}", paths.journal.name, paths.meta.name)
        return entries

    # -- checkpoints ---------------------------------------------------------------------------

    def _checkpoints(self, doc_id: str) -> CheckpointDirectory:
        return CheckpointDirectory(self._paths(check_doc_id(doc_id)).checkpoints)

    def write_checkpoint(self, doc_id: str, version: int, content: bytes | Iterable[bytes]) -> None:
        """``checkpoints/{doc_id}/{version}.json`` from the bytes or their pieces, each written as it comes,
        via a temporary file and a rename (no fsync: a cache)."""
        self._checkpoints(doc_id).write(version, content)

    write_checkpoint_pieces = write_checkpoint

    def read_checkpoint(self, doc_id: str, at_most: int) -> tuple[int, bytes] | None:
        return self._checkpoints(doc_id).read(at_most)

    def disk_usage(self, doc_id: str) -> dict[str, int]:
        """Bytes on disk per kind of file of one document (snapshot, journal, meta, checkpoints)."""
        paths = self._paths(check_doc_id(doc_id))
        usage = {kind: status.st_size if (status := disk.stat_or_none(path)) is not None else 0
                 for kind, path in (("snapshot", paths.content), ("journal", paths.journal), ("meta", paths.meta))}
        usage["checkpoints"] = self._checkpoints(doc_id).size_bytes()
        return usage
