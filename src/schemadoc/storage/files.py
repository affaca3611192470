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

The modules beside this one hold the other concerns: :mod:`.directory` (start-up recovery, each
document's tail), :mod:`.layout` (names, errors), :mod:`.journal` (lines, tail), :mod:`.snapshots`
(switching a snapshot and its meta atomically), :mod:`.locks` (write locks) and :mod:`.disk` (the
file operations they share).
"""

from __future__ import annotations

import logging
import os
import secrets
import shutil
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry
from schemadoc.storage import disk, snapshots
from schemadoc.storage.base import (
    DocumentMeta,
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
from schemadoc.storage.directory import DocumentDirectory, rebuild
from schemadoc.storage.journal import fold, read_entries, read_entries_within
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

__all__ = ["FileDocumentStore"]

log = logging.getLogger(__name__)


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


class FileDocumentStore(DocumentDirectory):
    """A :class:`~schemadoc.storage.base.DocumentStore` in one flat directory of files (the default).

    ``storage_dir`` is created by :meth:`open` if missing (its parent must exist). The store
    holds no document content in memory, only this process's view of each document (its tail);
    the service caches what it needs.
    """

    def __repr__(self) -> str:
        return f"FileDocumentStore({str(self.storage_dir)!r})"

    # -- writes --------------------------------------------------------------------------------

    def create(self, meta: DocumentMeta, entry: JournalEntry, content: bytes) -> None:
        """tmp files → journal (claimed with O_EXCL) → content rename → meta rename (the commit point).

        A creation that dies before its meta file appears leaves ``{id}.meta.tmp`` behind, which
        marks it as abandoned: recovery removes what it wrote instead of reporting it corrupt.
        """
        doc_id = check_write(meta, entry, content, new=True)
        self._writable(doc_id)
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
            self._publish_new(doc_id, paths, "creating the document")

    def restore(self, meta: DocumentMeta, entries: Iterable[JournalEntry], content: bytes) -> None:
        """Like :meth:`create`, with a whole journal: tmp files (the journal written line by line as the entries
        come) → journal (claimed with a hard link, which fails when one exists) → content rename → meta rename.

        Lines before the last carry no ``meta`` member (only the last one's is known; readers parse such
        lines whole); the snapshot is the current version, so the tail after it is empty.
        """
        doc_id = check_restore(meta, content)
        self._writable(doc_id)
        meta = replace(meta, snapshot_version=meta.version)
        paths = self._paths(doc_id)
        journal_tmp = paths.snapshot_tmp(secrets.token_hex(8))
        lines = (journal_line(doc_id, entry, meta if entry.version == meta.version else None)
                 for entry in restored_entries(meta, entries))
        with self.write_lock(doc_id):
            if paths.exists():
                raise already_exists(doc_id)
            try:
                size = disk.write_synced(journal_tmp, lines)
                disk.write_synced(paths.content_tmp, content)
                disk.write_synced(paths.meta_tmp, snapshots.meta_bytes(meta, size))
                os.link(journal_tmp, paths.journal)
            except BaseException as error:
                disk.remove_quietly(journal_tmp, paths.content_tmp, paths.meta_tmp)
                if isinstance(error, FileExistsError):
                    raise already_exists(doc_id) from None
                if isinstance(error, OSError):
                    raise write_failed(doc_id, "restoring the document", error) from None
                raise
            disk.remove_quietly(journal_tmp)
            self._publish_new(doc_id, paths, "restoring the document")
        self._journal_offsets.pop(doc_id, None)


    def _publish_new(self, doc_id: str, paths: Paths, what: str) -> None:
        """The last step of :meth:`create` and :meth:`restore` (the journal already claimed, under the lock): the
        content and meta renamed into place and the directory synced; on failure every file of the document goes,
        so nothing half-made stays."""
        try:
            os.replace(paths.content_tmp, paths.content)
            os.replace(paths.meta_tmp, paths.meta)
            disk.fsync_directory(self.storage_dir)
        except OSError as error:
            disk.remove_quietly(paths.meta, paths.content, paths.meta_tmp, paths.content_tmp, paths.journal)
            raise write_failed(doc_id, what, error) from None
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
        self._writable(doc_id)
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
        self._writable(doc_id)
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
                                   deleted_at=mark.deleted_at, schema_digest=mark.schema_digest,
                                   verdict=mark.verdict)
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
        self._writable(doc_id)
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
            disk.remove_quietly(paths.lock, paths.verdict)
            self._verdicts.forget(doc_id)
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
                if self.read_only:
                    raise read_failed(doc_id, f"the content file has {len(content)} bytes, its meta says "
                                              f"{tail.snapshot.content_size_bytes} (a server's start-up rebuilds it)",
                                      paths.content.name)
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
                meta_key = tail.meta_key
            try:
                entries, last = read_entries(paths.journal, since=snapshot.version, upto=current.version,
                                             start=(snapshot.version, snapshot_end))
            except (OSError, Corrupt) as error:
                raise journal_failed(doc_id, paths, error) from None
        if last < current.version:
            raise read_failed(doc_id, f"the journal ends at version {last}, the meta is at version "
                                      f"{current.version}", paths.journal.name)
        return StoredDocument(self._with_checked(paths, current, meta_key), content, tuple(entries))

    def read_meta(self, doc_id: str) -> DocumentMeta:
        doc_id = check_doc_id(doc_id)
        paths = self._paths(doc_id)
        tail = self._fresh(doc_id, paths)
        return self._with_checked(paths, tail.current, tail.meta_key)

    # -- verdicts of checks --------------------------------------------------------------------

    def _with_checked(self, paths: Paths, current: DocumentMeta, meta_key: tuple[int, int, int]) -> DocumentMeta:
        """``current`` with the verdict of a check of its version, when there is one (it came after the write)."""
        checked = self._verdicts.of(paths, meta_key)
        if checked is not None and checked.version == current.version:
            return replace(current, verdict=checked)
        return current

    def record_verdict(self, doc_id: str, verdict: Verdict) -> bool:
        """``verdicts/{doc_id}.json``, when the document is still at ``verdict.version`` (under its write lock).

        A record, not a commit: written through a temporary file and a rename, not fsynced; losing it
        only means the document is checked again. The verdict a write records travels in its journal
        line instead (no extra file on the write path); a check's verdict of the same version wins
        over it (:meth:`read_meta`), because a check comes after the write that made the version.
        """
        doc_id = check_doc_id(doc_id)
        paths = self._paths(doc_id)
        with self.write_lock(doc_id):
            if self.read_meta(doc_id).version != verdict.version:
                return False
            try:
                self._verdicts.write(paths, verdict)  # every process sharing the directory reads it again
            except OSError as error:
                raise write_failed(doc_id, "writing its verdict", error) from None
            return True

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

    def read_journal(self, doc_id: str, since_version: int = 0, until_version: int | None = None, *,
                     max_bytes: int | None = None) -> list[JournalEntry]:
        doc_id = check_doc_id(doc_id)
        paths = self._paths(doc_id)
        meta = self.read_meta(doc_id)
        upto = meta.version if until_version is None else min(until_version, meta.version)
        try:
            offsets = self._journal_offsets.setdefault(doc_id, {})
            start = max((version for version in list(offsets) if version <= since_version), default=0)
            entries, last, stopped = read_entries_within(paths.journal, since=since_version, upto=upto,
                                                         start=(start, offsets.get(start, 0)), offsets=offsets,
                                                         max_bytes=max_bytes)
        except FileNotFoundError:
            if not paths.meta.exists():
                raise document_not_found(doc_id) from None
            raise read_failed(doc_id, "the journal is missing", paths.journal.name) from None
        except (OSError, Corrupt) as error:
            raise journal_failed(doc_id, paths, error) from None
        if last < upto and not stopped:
            raise read_failed(doc_id, f"the journal ends at version {last}, the meta is at version "
                                      f"{meta.version}", paths.journal.name, paths.meta.name)
        return entries

    # -- checkpoints ---------------------------------------------------------------------------

    def _checkpoints(self, doc_id: str) -> CheckpointDirectory:
        return CheckpointDirectory(self._paths(check_doc_id(doc_id)).checkpoints)

    def write_checkpoint(self, doc_id: str, version: int, content: bytes | Iterable[bytes]) -> None:
        """``checkpoints/{doc_id}/{version}.json`` from the bytes or their pieces, each written as it comes,
        via a temporary file and a rename (no fsync: a cache)."""
        self._writable(check_doc_id(doc_id))
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

