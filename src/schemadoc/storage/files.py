"""The default store: one flat directory, four files per document (FR-015..019, FR-101..106).

::

    {storage_dir}/{doc_id}.json           current content, exactly the bytes the service wrote
    {storage_dir}/{doc_id}.meta.json      DocumentMeta (version, timestamps, schema_uri, size, deleted_at)
    {storage_dir}/{doc_id}.journal.jsonl  one JournalEntry line per version (version 1 = the whole document)
    {storage_dir}/{doc_id}.lock           inter-process write lock (fcntl.flock)

A commit writes ``{id}.tmp`` and ``{id}.meta.tmp`` (each fsynced), appends the journal line and
fsyncs it (the commit point), renames the two temporary files over ``{id}.json`` and
``{id}.meta.json``, then fsyncs the directory. Writing the temporary files before the journal
line means the failures that really happen (a full disk, a quota) strike before anything is
journaled, so a failed write leaves nothing behind. A crash after the journal line is repaired
by rolling the snapshot forward from the journal, at :meth:`FileDocumentStore.open` or at the
next write or load of the document, whichever comes first (other processes sharing the
directory do not restart when one of them crashes).

A creation has no previous version to fall back on, so its commit point is the meta file: it
writes both temporary files, the journal, then renames content and meta. A creation that dies
before its meta file appears was never acknowledged; recovery removes its files and lists it
in ``RecoveryReport.abandoned`` (a document whose meta file is missing *without* a
``{id}.meta.tmp`` beside it is reported corrupt instead).

The store never parses content on the normal path; it does so only to rebuild a snapshot from
the journal. Several processes may share one directory: writes of a document are serialised by
its lock, and each write checks the stored version (``version-conflict``).
"""

from __future__ import annotations

import fcntl
import logging
import mmap
import os
import secrets
import shutil
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import orjson

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry, peek_version, replay
from schemadoc.storage.base import (
    LOCK_TIMEOUT_SECONDS,
    DocumentMeta,
    RecoveryReport,
    StoredDocument,
    check_doc_id,
    check_write,
    document_not_found,
    journal_line,
    keep_checkpoints,
    lock_timeout,
    version_conflict,
)

__all__ = ["FileDocumentStore"]

log = logging.getLogger(__name__)

CONTENT_SUFFIX = ".json"
META_SUFFIX = ".meta.json"
JOURNAL_SUFFIX = ".journal.jsonl"
LOCK_SUFFIX = ".lock"
CONTENT_TMP_SUFFIX = ".tmp"
CHECKPOINT_DIR = "checkpoints"   # {storage_dir}/checkpoints/{doc_id}/{version}.json: past versions, a cache
_RETIRE_ABOVE_BYTES = 8 << 20
_OFFSET_EVERY = 64   # snapshots this big are unlinked in the background after a commit
META_TMP_SUFFIX = ".meta.tmp"
# longest first, so that "X.meta.json" is not read as "X.meta" + ".json"
_SUFFIXES = (META_SUFFIX, META_TMP_SUFFIX, JOURNAL_SUFFIX, CONTENT_SUFFIX, CONTENT_TMP_SUFFIX, LOCK_SUFFIX)
_NEWLINE = 0x0A
_POLL_MIN_SECONDS = 0.001
_POLL_MAX_SECONDS = 0.05


@dataclass(frozen=True)
class _Paths:
    content: Path
    meta: Path
    journal: Path
    lock: Path
    content_tmp: Path
    meta_tmp: Path


class _Corrupt(Exception):
    """A document whose files cannot be made consistent (reported, never fatal for the store)."""

    def __init__(self, reason: str, *files: str) -> None:
        super().__init__(reason)
        self.reason = reason
        self.files = list(files)


class FileDocumentStore:
    """A :class:`~schemadoc.storage.base.DocumentStore` in one flat directory of files (the default).

    ``storage_dir`` is created by :meth:`open` if missing (its parent must exist). The store
    holds no document content in memory; the service caches what it needs.
    """

    def __init__(self, storage_dir: str | os.PathLike[str]) -> None:
        self.storage_dir = Path(storage_dir)
        self._locks: dict[str, _DocumentLock] = {}
        self._locks_guard = threading.Lock()
        self._corrupt: dict[str, str] = {}
        # doc_id -> {version: byte offset of the line after it}, every _OFFSET_EVERY versions: the
        # journal is append-only, so a read of recent versions need not scan it from the start
        self._journal_offsets: dict[str, dict[int, int]] = {}

    def __repr__(self) -> str:
        return f"FileDocumentStore({str(self.storage_dir)!r})"

    # -- start-up ------------------------------------------------------------------------------

    def open(self) -> RecoveryReport:
        """Create the directory if missing, check it is writable, and recover every document.

        Recovery, per document and under its write lock (so a process sharing the directory
        is never disturbed mid-write): remove ``{id}.tmp``/``{id}.meta.tmp``; truncate a torn
        last journal line (never acknowledged); roll the snapshot forward when the journal is
        ahead of the meta; rebuild a snapshot whose size disagrees with the meta. Other
        ``*.tmp`` files are removed too. Documents that cannot be recovered are reported in
        ``corrupt`` and raise ``storage-read-failed`` when read; the others stay available.

        Raises ``storage-write-failed`` (details ``{"storage_dir", "reason"}``) when the
        directory cannot be created, is not a directory, or is not writable.
        """
        self._prepare_directory()
        report = RecoveryReport()
        try:
            names = sorted(os.listdir(self.storage_dir))
        except OSError as error:
            raise self._directory_error(f"cannot list it: {_reason(error)}") from None
        documents: set[str] = set()
        for name in names:
            doc_id = _doc_id_of(name)
            if doc_id is not None:
                documents.add(doc_id)
            elif name.endswith(".tmp") and _remove_quietly(self.storage_dir / name):
                report.removed_tmp.append(name)
        for doc_id in sorted(documents):
            self._recover(doc_id, report)
        for doc_id, reason in report.corrupt.items():
            log.error("document %s cannot be read: %s", doc_id, reason)
        return report

    def _prepare_directory(self) -> None:
        directory = self.storage_dir
        try:
            directory.mkdir(exist_ok=True)  # the parent must exist (FR-105)
            if not directory.is_dir():
                raise NotADirectoryError(20, "Not a directory")
            probe = directory / f".write-probe-{os.getpid()}-{secrets.token_hex(4)}.tmp"
            fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, b"probe")
                os.fsync(fd)
            finally:
                os.close(fd)
                probe.unlink(missing_ok=True)  # another process's open() may have swept it already
        except OSError as error:
            raise self._directory_error(_reason(error)) from None

    def _directory_error(self, reason: str) -> SchemaDocError:
        return SchemaDocError(
            "storage-write-failed",
            f"The storage directory {str(self.storage_dir)!r} cannot be used: {reason}.",
            {"storage_dir": str(self.storage_dir), "reason": reason},
        )

    def _recover(self, doc_id: str, report: RecoveryReport) -> None:
        paths = self._paths(doc_id)
        abandoned = False
        try:
            with self.write_lock(doc_id):
                try:
                    abandoned = _abandoned_creation(paths)
                    rolled = self._reconcile(doc_id, paths)
                finally:
                    for path in (paths.content_tmp, paths.meta_tmp):
                        if _remove_quietly(path):
                            report.removed_tmp.append(path.name)
        except _Corrupt as corrupt:
            self._corrupt[doc_id] = corrupt.reason
            report.corrupt[doc_id] = corrupt.reason
            return
        except SchemaDocError as error:
            if error.code == "document-not-found":  # only a lock file, or an abandoned creation
                if abandoned:
                    report.abandoned.append(doc_id)
                return
            if error.code == "lock-timeout":  # another process is writing it right now: it is alive
                log.warning("document %s is being written by another process; not checked", doc_id)
                return
            self._corrupt[doc_id] = error.message
            report.corrupt[doc_id] = error.message
            return
        self._corrupt.pop(doc_id, None)
        if rolled is not None:
            report.rolled_forward[doc_id] = rolled

    # -- writes --------------------------------------------------------------------------------

    def create(self, meta: DocumentMeta, entry: JournalEntry, content: bytes) -> None:
        """tmp files → journal (claimed with O_EXCL) → content rename → meta rename (the commit point).

        A creation that dies before its meta file appears leaves ``{id}.meta.tmp`` behind, which
        marks it as abandoned: recovery removes what it wrote instead of reporting it corrupt.
        """
        doc_id = check_write(meta, entry, content, new=True)
        meta = replace(meta, snapshot_version=1)
        line = journal_line(doc_id, entry)
        paths = self._paths(doc_id)
        with self.write_lock(doc_id):
            if self._exists(paths):
                raise _already_exists(doc_id)
            _write_temporaries(doc_id, paths, meta, content, "writing the new document")
            try:
                fd = os.open(paths.journal, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            except OSError as error:
                _remove_quietly(paths.content_tmp, paths.meta_tmp)
                if isinstance(error, FileExistsError):
                    raise _already_exists(doc_id) from None
                raise _write_failed(doc_id, "creating the journal", error) from None
            try:
                try:
                    _write_all(fd, line)
                    os.fsync(fd)
                finally:
                    os.close(fd)
                os.replace(paths.content_tmp, paths.content)
                os.replace(paths.meta_tmp, paths.meta)
                _fsync_directory(self.storage_dir)
            except OSError as error:
                _remove_quietly(paths.meta, paths.content, paths.meta_tmp, paths.content_tmp, paths.journal)
                raise _write_failed(doc_id, "creating the document", error) from None
        self._corrupt.pop(doc_id, None)

    def commit(self, meta: DocumentMeta, entry: JournalEntry, content: bytes | None = None) -> None:
        doc_id = check_write(meta, entry, content)
        line = journal_line(doc_id, entry)
        paths = self._paths(doc_id)
        with self.write_lock(doc_id):
            self._reconcile_or_raise(doc_id, paths)
            stored = self._read_meta_file(doc_id, paths)
            if stored.version != entry.version - 1:
                raise version_conflict(doc_id, entry.version - 1, stored.version)
            if content is None:  # this store keeps its snapshot current: build it from the patch
                content = _apply_entry(doc_id, paths, entry)
                meta = replace(meta, content_size_bytes=len(content))
            self._write_version(doc_id, paths, replace(meta, snapshot_version=meta.version), content, line)

    def write_snapshot(self, doc_id: str, version: int, content: bytes) -> bool:
        """Nothing to do: this store writes every snapshot with its commit."""
        meta = self.read_meta(doc_id)
        if not 1 <= version <= meta.version:
            raise ValueError(f"version {version} is not a version of document {meta.doc_id} (1 to {meta.version})")
        return False

    def _write_version(
        self, doc_id: str, paths: _Paths, meta: DocumentMeta, content: bytes, line: bytes
    ) -> None:
        """tmp files → journal line (commit point) → renames → directory fsync."""
        _write_temporaries(doc_id, paths, meta, content, "writing the new version")
        try:
            journal_size = _append_synced(paths.journal, line)
        except OSError as error:
            _remove_quietly(paths.content_tmp, paths.meta_tmp)
            raise _write_failed(doc_id, "appending to the journal", error) from None
        retired = self._retire(paths.content) if len(content) >= _RETIRE_ABOVE_BYTES else None
        try:
            os.replace(paths.content_tmp, paths.content)
        except OSError as error:
            if retired is not None:
                _remove_quietly(retired)
            # nothing visible changed yet: take the journal line back
            if not _truncate_quietly(paths.journal, journal_size):
                log.error("document %s: the failed write's journal line stays; it rolls forward", doc_id)
            _remove_quietly(paths.content_tmp, paths.meta_tmp)
            raise _write_failed(doc_id, "replacing the content file", error) from None
        try:
            os.replace(paths.meta_tmp, paths.meta)
        except OSError as error:
            # the content already is the new version: make meta agree by rolling forward
            try:
                self._reconcile(doc_id, paths)
            except (_Corrupt, SchemaDocError, OSError):
                log.exception("document %s: roll-forward after a failed meta write failed", doc_id)
            raise _write_failed(doc_id, "replacing the meta file", error) from None
        if retired is not None:
            # freeing a big file's blocks takes ~50 ms per 100 MB: not while the writer waits
            threading.Thread(target=_remove_quietly, args=(retired,), name="schemadoc-unlink", daemon=True).start()
        try:
            _fsync_directory(self.storage_dir)
        except OSError as error:
            raise _write_failed(doc_id, "syncing the directory (the new version is in place but may not "
                                        "survive a crash)", error) from None

    def _retire(self, path: Path) -> Path | None:
        """A second name for the snapshot about to be replaced, so that the rename does not free it.

        The name ends in ``.tmp`` and names no document, so start-up removes it if we die first.
        """
        retired = self.storage_dir / f".retired-{secrets.token_hex(8)}.tmp"
        try:
            os.link(path, retired)
        except OSError:
            return None
        return retired

    def purge(self, doc_id: str) -> None:
        """Remove content, meta, journal, temporary and lock files (see the protocol).

        The lock file goes too: a process that waited on it and then finds the document gone
        gets ``document-not-found`` from whatever it does next.
        """
        doc_id = check_doc_id(doc_id)
        paths = self._paths(doc_id)
        if not self._exists(paths):
            raise document_not_found(doc_id)
        with self.write_lock(doc_id):
            removed = False
            for path in (paths.meta, paths.content, paths.journal, paths.content_tmp, paths.meta_tmp):
                try:
                    path.unlink()
                    removed = True
                except FileNotFoundError:
                    continue
                except OSError as error:
                    raise _write_failed(doc_id, f"removing {path.name}", error) from None
            _remove_quietly(paths.lock)
            shutil.rmtree(self._checkpoint_dir(doc_id), ignore_errors=True)
            self._journal_offsets.pop(doc_id, None)
            self._corrupt.pop(doc_id, None)
            if not removed:
                raise document_not_found(doc_id)
            try:
                _fsync_directory(self.storage_dir)
            except OSError as error:
                raise _write_failed(doc_id, "syncing the directory", error) from None

    # -- reads ---------------------------------------------------------------------------------

    def load(self, doc_id: str) -> StoredDocument:
        doc_id = check_doc_id(doc_id)
        paths = self._paths(doc_id)
        if not self._exists(paths):  # do not leave a lock file behind for an unknown id
            raise document_not_found(doc_id)
        with self.write_lock(doc_id):
            self._reconcile_or_raise(doc_id, paths)
            meta = self._read_meta_file(doc_id, paths)
            try:
                content = paths.content.read_bytes()
            except OSError as error:
                raise _read_failed(doc_id, f"cannot read the content file: {_reason(error)}",
                                   paths.content.name) from None
        if len(content) != meta.content_size_bytes:
            raise _read_failed(doc_id, f"the content file has {len(content)} bytes, the meta says "
                                       f"{meta.content_size_bytes}", paths.content.name, paths.meta.name)
        return StoredDocument(meta, content)

    def read_meta(self, doc_id: str) -> DocumentMeta:
        doc_id = check_doc_id(doc_id)
        return self._read_meta_file(doc_id, self._paths(doc_id))

    def list_metas(self) -> list[DocumentMeta]:
        """Every readable meta file, sorted by doc_id (a directory scan; corrupt documents left out).

        Raises ``storage-read-failed`` (details ``{"storage_dir", "reason"}``) when the
        directory cannot be listed.
        """
        try:
            names = os.listdir(self.storage_dir)
        except OSError as error:
            reason = f"cannot list the storage directory: {_reason(error)}"
            raise SchemaDocError("storage-read-failed", reason + ".",
                                 {"storage_dir": str(self.storage_dir), "reason": reason}) from None
        metas: list[DocumentMeta] = []
        for name in names:
            if not name.endswith(META_SUFFIX):
                continue
            doc_id = name[: -len(META_SUFFIX)]
            if not _is_canonical(doc_id) or doc_id in self._corrupt:
                continue
            try:
                metas.append(self._read_meta_file(doc_id, self._paths(doc_id)))
            except SchemaDocError as error:
                log.warning("document %s left out of the list: %s", doc_id, error.message)
        metas.sort(key=lambda meta: meta.doc_id)
        return metas

    def read_journal(self, doc_id: str, since_version: int = 0,
                     until_version: int | None = None) -> list[JournalEntry]:
        doc_id = check_doc_id(doc_id)
        paths = self._paths(doc_id)
        meta = self._read_meta_file(doc_id, paths)
        upto = meta.version if until_version is None else min(until_version, meta.version)
        try:
            offsets = self._journal_offsets.setdefault(doc_id, {})
            start = max((version for version in list(offsets) if version <= since_version), default=0)
            entries, last = _read_entries(paths.journal, since=since_version, upto=upto,
                                          start=(start, offsets.get(start, 0)), offsets=offsets)
        except FileNotFoundError:
            if not paths.meta.exists():
                raise document_not_found(doc_id) from None
            raise _read_failed(doc_id, "the journal is missing", paths.journal.name) from None
        except OSError as error:
            raise _read_failed(doc_id, f"cannot read the journal: {_reason(error)}",
                               paths.journal.name) from None
        except _Corrupt as corrupt:
            raise _read_failed(doc_id, corrupt.reason, paths.journal.name) from None
        if last < upto:
            raise _read_failed(doc_id, f"the journal ends at version {last}, the meta is at version "
                                       f"{meta.version}", paths.journal.name, paths.meta.name)
        return entries

    # -- checkpoints ---------------------------------------------------------------------------

    def _checkpoint_dir(self, doc_id: str) -> Path:
        return self.storage_dir / CHECKPOINT_DIR / check_doc_id(doc_id)

    def write_checkpoint(self, doc_id: str, version: int, content: bytes) -> None:
        """``checkpoints/{doc_id}/{version}.json`` via a temporary file and a rename (no fsync: a cache)."""
        directory = self._checkpoint_dir(doc_id)
        directory.mkdir(parents=True, exist_ok=True)
        temporary = directory / f"{version}.json.tmp"
        temporary.write_bytes(content)
        os.replace(temporary, directory / f"{version}.json")
        versions = _checkpoint_versions(directory)
        for stale in set(versions) - set(keep_checkpoints(versions)):
            _remove_quietly(directory / f"{stale}.json")

    def read_checkpoint(self, doc_id: str, at_most: int) -> tuple[int, bytes] | None:
        directory = self._checkpoint_dir(doc_id)
        try:
            names = os.listdir(directory)
        except OSError:
            return None
        versions = _checkpoint_versions(directory, names)
        for version in sorted((v for v in versions if v <= at_most), reverse=True):
            try:
                return version, (directory / f"{version}.json").read_bytes()
            except OSError:
                continue
        return None

    # -- locks ---------------------------------------------------------------------------------

    @contextmanager
    def write_lock(self, doc_id: str, timeout: float = LOCK_TIMEOUT_SECONDS) -> Iterator[None]:
        """A per-document threading lock plus ``fcntl.flock`` on ``{id}.lock``, polled until ``timeout``.

        Re-entrant within a thread. Raises ``lock-timeout``, ``invalid-doc-id``, and
        ``storage-write-failed`` when the lock file cannot be opened.
        """
        doc_id = check_doc_id(doc_id)
        with self._locks_guard:
            lock = self._locks.get(doc_id)
            if lock is None:
                lock = self._locks[doc_id] = _DocumentLock(self._paths(doc_id).lock)
        try:
            acquired = lock.acquire(timeout)
        except OSError as error:
            raise _write_failed(doc_id, "opening the lock file", error) from None
        if not acquired:
            raise lock_timeout(doc_id, timeout)
        try:
            yield
        finally:
            lock.release()

    # -- recovery ------------------------------------------------------------------------------

    def _reconcile_or_raise(self, doc_id: str, paths: _Paths) -> None:
        try:
            self._reconcile(doc_id, paths)
        except _Corrupt as corrupt:
            self._corrupt[doc_id] = corrupt.reason
            raise _read_failed(doc_id, corrupt.reason, *corrupt.files) from None
        self._corrupt.pop(doc_id, None)

    def _reconcile(self, doc_id: str, paths: _Paths) -> tuple[int, int] | None:
        """Make one document's files agree; the caller holds its write lock.

        Returns (meta version, journal version) when the snapshot was rebuilt from the journal.
        Raises ``document-not-found`` when no file of the document exists, :class:`_Corrupt`
        when the files cannot be made to agree, ``storage-write-failed`` when a rebuilt
        snapshot cannot be written.
        """
        if _abandoned_creation(paths):  # never acknowledged: take it back
            removed = [path.name for path in (paths.content, paths.journal, paths.content_tmp, paths.meta_tmp)
                       if _remove_quietly(path)]
            log.warning("document %s: creation interrupted before it completed; removed %s", doc_id,
                        ", ".join(removed))
        has_meta, has_content = paths.meta.exists(), paths.content.exists()
        has_journal = paths.journal.exists()
        if not (has_meta or has_content or has_journal):
            raise document_not_found(doc_id)
        last = _repair_journal_tail(doc_id, paths.journal) if has_journal else 0
        if not has_meta:
            if has_content:
                raise _Corrupt("the content file has no meta file", paths.content.name, paths.meta.name)
            raise _Corrupt("only the journal exists (an interrupted creation?)", paths.journal.name)
        try:
            meta = self._read_meta_file(doc_id, paths)
        except SchemaDocError as error:
            raise _Corrupt(str(error.details.get("reason", error.message)), paths.meta.name) from None
        if not has_content:
            raise _Corrupt("the meta file has no content file", paths.meta.name, paths.content.name)
        if not has_journal:
            raise _Corrupt("the journal is missing", paths.journal.name)
        if last < meta.version:
            raise _Corrupt(f"the journal ends at version {last}, the meta is at version {meta.version}",
                           paths.journal.name, paths.meta.name)
        if last > meta.version:
            self._rebuild(doc_id, paths, meta)
            log.warning("document %s rolled forward from version %d to %d", doc_id, meta.version, last)
            return meta.version, last
        try:
            size = paths.content.stat().st_size
        except OSError as error:
            raise _Corrupt(f"cannot read the content file: {_reason(error)}", paths.content.name) from None
        if size != meta.content_size_bytes:
            self._rebuild(doc_id, paths, meta)
            log.warning("document %s: content file of %d bytes (meta says %d) rebuilt from the journal",
                        doc_id, size, meta.content_size_bytes)
            return meta.version, last
        return None

    def _rebuild(self, doc_id: str, paths: _Paths, meta: DocumentMeta) -> None:
        """Replay the whole journal and write snapshot + meta at its last version.

        From scratch, not from the snapshot: after a crash between the two renames the content
        file may already hold the journal's version while the meta still names the previous one.
        """
        try:
            entries, _ = _read_entries(paths.journal, since=0, upto=None)
        except OSError as error:
            raise _Corrupt(f"cannot read the journal: {_reason(error)}", paths.journal.name) from None
        try:
            document = replay(entries, copy=False)
            content = orjson.dumps(document)
        except (ValueError, TypeError) as error:
            raise _Corrupt(f"the journal cannot rebuild the document: {error}", paths.journal.name) from None
        last = entries[-1]
        deleted_at = meta.deleted_at
        for entry in entries[meta.version:]:
            if entry.op == "delete_document":
                deleted_at = entry.at
            elif entry.op == "undelete_document":
                deleted_at = None
        rebuilt = replace(meta, version=last.version, snapshot_version=last.version,
                          content_size_bytes=len(content), deleted_at=deleted_at,
                          modified_at=last.at if last.version > meta.version else meta.modified_at)
        try:
            _write_synced(paths.content_tmp, content)
            _write_synced(paths.meta_tmp, _meta_bytes(rebuilt))
            os.replace(paths.content_tmp, paths.content)
            os.replace(paths.meta_tmp, paths.meta)
            _fsync_directory(self.storage_dir)
        except OSError as error:
            _remove_quietly(paths.content_tmp, paths.meta_tmp)
            raise _write_failed(doc_id, "rebuilding the snapshot from the journal", error) from None

    # -- helpers -------------------------------------------------------------------------------

    def _paths(self, doc_id: str) -> _Paths:
        base = self.storage_dir
        return _Paths(
            content=base / f"{doc_id}{CONTENT_SUFFIX}",
            meta=base / f"{doc_id}{META_SUFFIX}",
            journal=base / f"{doc_id}{JOURNAL_SUFFIX}",
            lock=base / f"{doc_id}{LOCK_SUFFIX}",
            content_tmp=base / f"{doc_id}{CONTENT_TMP_SUFFIX}",
            meta_tmp=base / f"{doc_id}{META_TMP_SUFFIX}",
        )

    @staticmethod
    def _exists(paths: _Paths) -> bool:
        return paths.meta.exists() or paths.content.exists() or paths.journal.exists()

    @staticmethod
    def _read_meta_file(doc_id: str, paths: _Paths) -> DocumentMeta:
        try:
            data = paths.meta.read_bytes()
        except FileNotFoundError:
            if paths.content.exists():
                raise _read_failed(doc_id, "the content file has no meta file",
                                   paths.content.name, paths.meta.name) from None
            raise document_not_found(doc_id) from None
        except OSError as error:
            reason = f"cannot read the meta file: {_reason(error)}"
            raise _read_failed(doc_id, reason, paths.meta.name) from None
        try:
            meta = DocumentMeta.from_dict(orjson.loads(data))
        except ValueError as error:  # orjson.JSONDecodeError is a ValueError
            raise _read_failed(doc_id, f"the meta file is invalid: {error}", paths.meta.name) from None
        if meta.doc_id != doc_id:
            raise _read_failed(doc_id, f"the meta file names document {meta.doc_id!r}", paths.meta.name)
        return meta


class _DocumentLock:
    """Re-entrant per-document lock: an ``RLock`` for threads, then ``flock`` for processes.

    ``flock`` locks belong to an open file description, so the process takes it once (depth 0
    → 1) and re-entry only counts. The OS drops it when the process dies.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    def acquire(self, timeout: float) -> bool:
        """True once held; False when ``timeout`` seconds passed. Raises :exc:`OSError` (lock file)."""
        deadline = time.monotonic() + max(timeout, 0.0)
        if timeout > 0:
            acquired = self._thread_lock.acquire(timeout=timeout)
        else:
            acquired = self._thread_lock.acquire(blocking=False)
        if not acquired:
            return False
        if self._depth > 0:
            self._depth += 1
            return True
        try:
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError:
            self._thread_lock.release()
            raise
        delay = _POLL_MIN_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    os.close(fd)
                    self._thread_lock.release()
                    return False
                time.sleep(min(delay, remaining))
                delay = min(delay * 2, _POLL_MAX_SECONDS)
            except OSError:
                os.close(fd)
                self._thread_lock.release()
                raise
        self._fd = fd
        self._depth = 1
        return True

    def release(self) -> None:
        """Release once; the last release of the holding thread drops the ``flock`` and closes the file."""
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self._thread_lock.release()


# -- journal files ---------------------------------------------------------------------------------


def _apply_entry(doc_id: str, paths: _Paths, entry: JournalEntry) -> bytes:
    try:
        document = orjson.loads(paths.content.read_bytes())
        return orjson.dumps(replay([entry], start=document, start_version=entry.version - 1, copy=False))
    except OSError as error:
        raise _read_failed(doc_id, f"cannot read the content file: {_reason(error)}", paths.content.name) from None
    except (ValueError, TypeError) as error:
        raise _read_failed(doc_id, f"the new version cannot be built: {error}", paths.content.name) from None


def _abandoned_creation(paths: _Paths) -> bool:
    """A creation died before renaming its meta file (the commit point of a creation).

    Only a creation leaves ``{id}.meta.tmp`` without ``{id}.meta.json``: a commit always has the
    previous meta file. Asked under the document's write lock, so the creator is gone.
    """
    return paths.meta_tmp.exists() and not paths.meta.exists()


def _line_version(line: bytes) -> int | None:
    """The version of a complete journal line, or None when it cannot be read."""
    try:
        return JournalEntry.from_line(line).version
    except ValueError:
        return None


def _repair_journal_tail(doc_id: str, path: Path) -> int:
    """Truncate a torn last line (never acknowledged) and return the journal's last version (0 when empty).

    A line is torn when the file does not end with a newline (a crash mid-append) or when the
    last line cannot be read. At most one line goes; :class:`_Corrupt` when more is damaged.
    """
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as error:
        raise _Corrupt(f"cannot open the journal: {_reason(error)}", path.name) from None
    try:
        size = os.fstat(fd).st_size
        if size == 0:
            return 0
        with mmap.mmap(fd, size, access=mmap.ACCESS_READ) as view:
            cut = size if view[size - 1] == _NEWLINE else view.rfind(b"\n") + 1
            removed_a_line = cut != size
            version = 0
            while cut > 0:
                start = view.rfind(b"\n", 0, cut - 1) + 1
                found = peek_version(view[start:start + 64])
                if found is None:
                    found = _line_version(view[start:cut])
                if found is not None:
                    version = found
                    break
                if removed_a_line:
                    raise _Corrupt(f"the journal line at byte {start} cannot be read", path.name)
                cut, removed_a_line = start, True
        if cut != size:
            os.ftruncate(fd, cut)
            os.fsync(fd)
            log.warning("document %s: torn journal tail of %d bytes truncated", doc_id, size - cut)
        return version
    except OSError as error:
        raise _Corrupt(f"cannot repair the journal: {_reason(error)}", path.name) from None
    finally:
        os.close(fd)


def _write_temporaries(doc_id: str, paths: _Paths, meta: DocumentMeta, content: bytes, what: str) -> None:
    """``{id}.tmp`` and ``{id}.meta.tmp``, each fsynced; both removed again if either fails."""
    try:
        _write_synced(paths.content_tmp, content)
        _write_synced(paths.meta_tmp, _meta_bytes(meta))
    except OSError as error:
        _remove_quietly(paths.content_tmp, paths.meta_tmp)
        raise _write_failed(doc_id, what, error) from None


def _read_entries(path: Path, *, since: int, upto: int | None, start: tuple[int, int] = (0, 0),
                  offsets: dict[int, int] | None = None) -> tuple[list[JournalEntry], int]:
    """Entries ``since < version <= upto`` and the last version seen (checked consecutive from 1).

    Lines are skipped by their version prefix, never parsed, when not returned. An unfinished
    last line (no newline: a write in progress or torn) is ignored. ``start`` is a known
    ``(version, offset of the line after it)`` to begin at; ``offsets`` collects such pairs every
    :data:`_OFFSET_EVERY` versions. Raises :class:`_Corrupt` and :exc:`OSError`.
    """
    entries: list[JournalEntry] = []
    last = start[0]
    with path.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size == 0:
            return entries, 0
        with mmap.mmap(file.fileno(), size, access=mmap.ACCESS_READ) as view:
            position = start[1]
            while position < size and (upto is None or last < upto):
                end = view.find(b"\n", position)
                if end < 0:
                    break
                entry: JournalEntry | None = None
                version = peek_version(view[position:position + 64])
                try:
                    if version is None:
                        entry = JournalEntry.from_line(view[position:end])
                        version = entry.version
                    if version > since and entry is None:
                        entry = JournalEntry.from_line(view[position:end])
                except ValueError as error:
                    raise _Corrupt(f"journal line {last + 1} cannot be read: {error}", path.name) from None
                if version != last + 1 or (entry is not None and entry.version != version):
                    raise _Corrupt(f"journal versions are not consecutive: version {version} after {last}",
                                   path.name)
                if entry is not None and version > since:
                    entries.append(entry)
                last = version
                position = end + 1
                if offsets is not None and version % _OFFSET_EVERY == 0:
                    offsets[version] = position
    return entries, last


def _checkpoint_versions(directory: Path, names: list[str] | None = None) -> list[int]:
    if names is None:
        names = os.listdir(directory)
    return [int(name[:-5]) for name in names if name.endswith(".json") and name[:-5].isdigit()]


# -- small file operations --------------------------------------------------------------------------


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def _write_synced(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        _write_all(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)


def _append_synced(path: Path, line: bytes) -> int:
    """Append and fsync; returns the size before. On failure the file is truncated back, then it raises."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        size = os.fstat(fd).st_size
        try:
            _write_all(fd, line)
            os.fsync(fd)
        except OSError:
            try:
                os.ftruncate(fd, size)
                os.fsync(fd)
            except OSError:
                log.error("journal %s: a partial line could not be taken back", path.name)
            raise
        return size
    finally:
        os.close(fd)


def _truncate_quietly(path: Path, size: int) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY)
        try:
            os.ftruncate(fd, size)
            os.fsync(fd)
        finally:
            os.close(fd)
        return True
    except OSError:
        return False


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_quietly(*paths: Path) -> bool:
    """Remove the files that exist; True when at least one was removed."""
    removed = False
    for path in paths:
        try:
            path.unlink()
            removed = True
        except OSError:
            continue
    return removed


def _meta_bytes(meta: DocumentMeta) -> bytes:
    return orjson.dumps(meta.to_dict(), option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


# -- names and errors -------------------------------------------------------------------------------


def _is_canonical(doc_id: str) -> bool:
    try:
        return check_doc_id(doc_id) == doc_id
    except SchemaDocError:
        return False


def _doc_id_of(name: str) -> str | None:
    """The doc_id a file of this directory belongs to, or None for files that are not ours."""
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            stem = name[: -len(suffix)]
            return stem if _is_canonical(stem) else None
    return None


def _reason(error: OSError) -> str:
    # strerror, not str(error): the latter embeds the machine's absolute path
    return error.strerror or type(error).__name__


def _already_exists(doc_id: str) -> SchemaDocError:
    return SchemaDocError("storage-write-failed", f"Document {doc_id} already exists.",
                          {"doc_id": doc_id, "reason": "the document already exists"})


def _write_failed(doc_id: str, action: str, error: OSError) -> SchemaDocError:
    reason = f"{action}: {_reason(error)}"
    return SchemaDocError("storage-write-failed", f"Document {doc_id} could not be written: {reason}.",
                          {"doc_id": doc_id, "reason": reason})


def _read_failed(doc_id: str, reason: str, *files: str) -> SchemaDocError:
    return SchemaDocError("storage-read-failed", f"Document {doc_id} cannot be read: {reason}.",
                          {"doc_id": doc_id, "reason": reason, "files": list(files)})
