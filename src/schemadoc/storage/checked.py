"""The verdicts checks record in a files store, ``verdicts/{doc_id}.json``, known without a ``stat`` per read.

A check (the inventory, ``POST .../check``) records a document's verdict without a new version
(:meth:`~schemadoc.storage.files.FileDocumentStore.record_verdict`): a record beside the journal, written
through a temporary file and a rename, not fsynced. Every read of a document's meta revalidates its meta
file by a ``stat`` (several processes may share the directory); a check moves that file's mtime on after
writing its verdict, so a verdict read under one key of the meta file (inode, mtime, size) holds until the
key moves: no ``stat`` of the verdict file on a read or a write, one when a snapshot switch or a check moved
the meta file.
"""

from __future__ import annotations

import logging
import os
import secrets
import time
from pathlib import Path

import orjson

from schemadoc.storage import disk
from schemadoc.storage.layout import Paths, reason
from schemadoc.storage.recent import Recent
from schemadoc.storage.verdict import Verdict

__all__ = ["CheckedVerdicts", "FileKey"]

log = logging.getLogger("schemadoc.storage.files")

FileKey = tuple[int, int, int]
"""A file's inode, mtime (ns) and size."""


KNOWN_KEPT = 8192
"""The documents whose verdict file's key is kept (:class:`~schemadoc.storage.recent.Recent`): one forgotten is
looked for again (a ``stat``)."""


class CheckedVerdicts:
    """This process's view of a directory's ``verdicts/``: each document's recorded verdict and the keys it was
    read under (the meta file's, the verdict file's)."""

    def __init__(self) -> None:
        self._known: Recent[str, tuple[FileKey, FileKey | None, Verdict | None]] = Recent(KNOWN_KEPT)

    def of(self, paths: Paths, meta_key: FileKey) -> Verdict | None:
        """The verdict ``verdicts/{doc_id}.json`` records; ``None`` when there is none or it cannot be read (the
        document then counts as unchecked, and is checked again). ``meta_key``: the meta file's key now."""
        doc_id = paths.doc_id
        known = self._known.get(doc_id)
        if known is not None and known[0] == meta_key:
            return known[2]
        status = disk.stat_or_none(paths.verdict)
        key = None if status is None else (status.st_ino, status.st_mtime_ns, status.st_size)
        if key is None:
            verdict = None
        elif known is not None and known[1] == key:
            verdict = known[2]
        else:
            try:
                verdict = Verdict.from_dict(orjson.loads(paths.verdict.read_bytes()))
            except (OSError, ValueError):
                verdict = None
        self._known[doc_id] = (meta_key, key, verdict)
        return verdict

    def write(self, paths: Paths, verdict: Verdict) -> None:
        """Record ``verdict`` (the caller holds the document's write lock), then move the meta file's mtime on,
        so that every process reads it again. Raises :exc:`OSError` when the verdict cannot be written."""
        paths.verdict.parent.mkdir(exist_ok=True)
        temporary = paths.verdict.with_suffix(f".{secrets.token_hex(8)}.tmp")
        try:
            temporary.write_bytes(orjson.dumps(verdict.to_dict()))
            os.replace(temporary, paths.verdict)
        except OSError:
            disk.remove_quietly(temporary)
            raise
        self.forget(paths.doc_id)
        _touch(paths.meta)

    def forget(self, doc_id: str) -> None:
        self._known.pop(doc_id)


def _touch(path: Path) -> None:
    """Move ``path``'s mtime on by at least a nanosecond (a key that differs even within one tick of a file
    system's coarse clock); its content, inode and size stay. A failure is only logged: other processes then see
    the verdict at the meta file's next change."""
    try:
        status = os.stat(path)
        os.utime(path, ns=(status.st_atime_ns, max(time.time_ns(), status.st_mtime_ns + 1)))
    except OSError as error:
        log.warning("%s: its mtime could not be moved on after a check (%s)", path.name, reason(error))
