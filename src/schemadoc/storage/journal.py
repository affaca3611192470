"""The journal file of the files store: reading lines, folding its tail into the current meta.

A line is the :class:`~schemadoc.ops.journal.JournalEntry` with one more member, ``meta``: the
new version's ``modified_at``, ``content_size_bytes`` and ``deleted_at``
(:func:`~schemadoc.storage.base.journal_line` with the meta). So the journal alone
says what the current meta is, and a commit is one append + fdatasync: the meta file only
describes the snapshot. Replayers ignore the extra member (RFC 6902 tools read ``patch``).
Only complete lines (ending in a newline) count; a torn last line was never acknowledged.
"""

from __future__ import annotations

import contextlib
import logging
import mmap
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from schemadoc.ops.journal import JournalEntry, peek_version
from schemadoc.storage.base import DocumentMeta, Verdict
from schemadoc.storage.layout import Corrupt, reason

__all__ = ["OFFSET_EVERY", "Mark", "Tail", "find_line_end", "fold", "read_entries", "read_entries_within",
           "repair_tail"]

log = logging.getLogger("schemadoc.storage.files")

OFFSET_EVERY = 64
"""Byte offsets of every 64th version are remembered, so reads of recent history skip the rest."""
_NEWLINE = 0x0A


class Mark(NamedTuple):
    """What a journal line says about its version's meta, and where the line ends.

    A named tuple, not a frozen dataclass: one is made per journal line folded, and a tuple is
    built several times faster.
    """

    version: int
    end: int
    modified_at: str
    content_size_bytes: int
    deleted_at: str | None
    schema_digest: str | None = None
    verdict: Verdict | None = None


def _line_verdict(version: int, meta: dict[str, Any]) -> tuple[str | None, Verdict | None]:
    """The schema digest and the verdict a line's ``meta`` member records (valid under the digest, unless a
    ``verdict`` member says otherwise)."""
    digest = meta.get("schema_digest")
    if not isinstance(digest, str):
        return None, None
    verdict = Verdict.from_dict(meta["verdict"]) if "verdict" in meta else None
    return digest, verdict if verdict is not None else Verdict(version, digest)


@dataclass
class Tail:
    """One process's view of a document: its meta file (the snapshot) and the journal lines after it.

    ``key`` identifies the files it was read from (inodes, sizes, meta mtime): when a ``stat`` of
    both gives the same key, nothing changed and :attr:`current` is the current meta.
    """

    snapshot: DocumentMeta                 # the meta file: version == snapshot_version
    snapshot_end: int                      # byte offset after the snapshot version's journal line
    meta_key: tuple[int, int, int]
    journal_ino: int
    offset: int                            # bytes of complete lines folded
    marks: list[Mark] = field(default_factory=list)  # versions after the snapshot, in order

    @property
    def version(self) -> int:
        return self.marks[-1].version if self.marks else self.snapshot.version

    @property
    def current(self) -> DocumentMeta:
        if not self.marks:
            return self.snapshot
        last = self.marks[-1]
        return replace(self.snapshot, version=last.version, modified_at=last.modified_at,
                       content_size_bytes=last.content_size_bytes, deleted_at=last.deleted_at,
                       snapshot_version=self.snapshot.version, schema_digest=last.schema_digest,
                       verdict=last.verdict)

    def mark(self, version: int) -> Mark | None:
        index = version - self.snapshot.version - 1
        return self.marks[index] if 0 <= index < len(self.marks) else None

    def move_snapshot(self, snapshot: DocumentMeta, meta_key: tuple[int, int, int]) -> None:
        """The meta file now describes ``snapshot`` (a newer snapshot): drop the marks it covers."""
        covered = snapshot.version - self.snapshot.version
        if covered > 0:
            end = self.marks[covered - 1].end if covered <= len(self.marks) else self.snapshot_end
            self.marks = self.marks[covered:]
            self.snapshot_end = end
        self.snapshot = snapshot
        self.meta_key = meta_key


_META_MEMBER = b',"meta":{'
_SLICE_ABOVE_BYTES = 4096  # longer lines are read from their ends (their patch is not parsed)


def _line_meta(line: bytes) -> tuple[int, dict[str, Any]] | None:
    """The version and ``meta`` member of a line as the files store writes it, or ``None``.

    A long line is read from its ends: ``version`` is its first member and ``meta`` its last, and
    the slice from ``,"meta":`` to the line's closing brace parses as one JSON object only for that
    member (a ``meta`` nested in the patch or ``info`` leaves unbalanced brackets behind it, and a
    quote inside a string is escaped). A short line is parsed whole, which is cheaper. ``None``
    when the line is written differently; the caller then reads it as a journal entry.
    """
    if len(line) > _SLICE_ABOVE_BYTES:
        version = peek_version(line[:64])
        start = line.rfind(_META_MEMBER)
        if version is None or start < 0 or not line.endswith(b"}}"):
            return None
        try:
            meta = orjson.loads(line[start + 8:-1])
        except orjson.JSONDecodeError:
            return None
    else:
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError:
            return None
        if not isinstance(data, dict):
            return None
        version, meta = data.get("version"), data.get("meta")
        if not isinstance(version, int) or isinstance(version, bool):
            return None
    if (isinstance(meta, dict) and isinstance(meta.get("modified_at"), str)
            and isinstance(meta.get("content_size_bytes"), int) and not isinstance(meta["content_size_bytes"], bool)
            and (meta.get("deleted_at") is None or isinstance(meta["deleted_at"], str))):
        return version, meta
    return None


def fold(tail: Tail, data: bytes, path: Path) -> None:
    """Add the complete lines in ``data`` (the journal from ``tail.offset``) to ``tail``.

    A line is read as far as its version and meta go (its patch is parsed by whoever replays
    it); a line written otherwise is parsed whole. Raises :class:`Corrupt` when a complete line
    cannot be read or versions are not consecutive.
    """
    position = 0
    version = tail.version
    last = tail.marks[-1] if tail.marks else None
    size_before = last.content_size_bytes if last is not None else tail.snapshot.content_size_bytes
    deleted_before = last.deleted_at if last is not None else tail.snapshot.deleted_at
    while True:
        end = data.find(b"\n", position)
        if end < 0:
            break
        line = data[position:end]
        quick = _line_meta(line)
        if quick is not None:
            found, meta = quick
            mark = Mark(found, tail.offset + end + 1, meta["modified_at"], meta["content_size_bytes"],
                        meta.get("deleted_at"), *_line_verdict(found, meta))
        else:
            mark = _parsed_mark(line, tail.offset + end + 1, version, size_before, deleted_before, path)
        if mark.version != version + 1:
            raise Corrupt(f"journal versions are not consecutive: version {mark.version} after {version}",
                          path.name)
        tail.marks.append(mark)
        version, size_before, deleted_before = mark.version, mark.content_size_bytes, mark.deleted_at
        position = end + 1
    tail.offset += position


def _parsed_mark(line: bytes, end: int, version: int, size_before: int, deleted_before: str | None,
                 path: Path) -> Mark:
    """The mark of a line parsed whole (written by another tool, or before lines carried their meta)."""
    try:
        data = orjson.loads(line)
        entry = JournalEntry.from_dict(data)
    except ValueError as error:
        raise Corrupt(f"journal line {version + 1} cannot be read: {error}", path.name) from None
    meta = data.get("meta")
    if isinstance(meta, dict):
        size = meta.get("content_size_bytes")
        deleted_at = meta.get("deleted_at")
        return Mark(entry.version, end, str(meta.get("modified_at", entry.at)),
                    size if isinstance(size, int) else size_before,
                    deleted_at if isinstance(deleted_at, str) else None, *_line_verdict(entry.version, meta))
    # a line written before lines carried their meta
    deleted = (entry.at if entry.op == "delete_document"
               else None if entry.op == "undelete_document" else deleted_before)
    return Mark(entry.version, end, entry.at, -1, deleted)


def find_line_end(path: Path, version: int, hint: int) -> int:
    """The byte offset after ``version``'s journal line (0 for version 0), trying ``hint`` first.

    Raises :class:`Corrupt` when the journal ends before ``version`` and :exc:`OSError`.
    """
    if version == 0:
        return 0
    with path.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        if 0 < hint <= size:
            before = os.pread(file.fileno(), 1, hint - 1)
            following = os.pread(file.fileno(), 64, hint)
            if before == b"\n" and (hint == size or peek_version(following) == version + 1):
                return hint
    offsets: dict[int, int] = {}
    _, last = read_entries(path, since=version, upto=version, offsets=offsets, every=1)
    if last < version:
        raise Corrupt(f"the journal ends at version {last}, the meta is at version {version}", path.name)
    return offsets[version]


def repair_tail(doc_id: str, path: Path) -> int:
    """Truncate a torn last line (never acknowledged) and return the journal's last version (0 when empty).

    A line is torn when the file does not end with a newline (a crash mid-append) or when the
    last line cannot be read. At most one line goes; :class:`Corrupt` when more is damaged.
    """
    try:
        fd = os.open(path, os.O_RDWR)
    except OSError as error:
        raise Corrupt(f"cannot open the journal: {reason(error)}", path.name) from None
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
                    with contextlib.suppress(ValueError):
                        found = JournalEntry.from_line(view[start:cut]).version
                if found is not None:
                    version = found
                    break
                if removed_a_line:
                    raise Corrupt(f"the journal line at byte {start} cannot be read", path.name)
                cut, removed_a_line = start, True
        if cut != size:
            os.ftruncate(fd, cut)
            os.fsync(fd)
            log.warning("document %s: torn journal tail of %d bytes truncated", doc_id, size - cut)
        return version
    except OSError as error:
        raise Corrupt(f"cannot repair the journal: {reason(error)}", path.name) from None
    finally:
        os.close(fd)


def read_entries(path: Path, *, since: int, upto: int | None, start: tuple[int, int] = (0, 0),
                  offsets: dict[int, int] | None = None, every: int = OFFSET_EVERY) -> tuple[list[JournalEntry], int]:
    """Entries ``since < version <= upto`` and the last version seen: :func:`read_entries_within` without a
    byte bound."""
    entries, last, _ = read_entries_within(path, since=since, upto=upto, start=start, offsets=offsets, every=every)
    return entries, last


def read_entries_within(path: Path, *, since: int, upto: int | None, start: tuple[int, int] = (0, 0),
                        offsets: dict[int, int] | None = None, every: int = OFFSET_EVERY,
                        max_bytes: int | None = None) -> tuple[list[JournalEntry], int, bool]:
    """Entries ``since < version <= upto`` and the last version seen (checked consecutive from 1), and
    whether the reading stopped early because the lines returned reached ``max_bytes`` (the entry that
    reaches it is returned: at least one always is).

    Lines are skipped by their version prefix, never parsed, when not returned. An unfinished
    last line (no newline: a write in progress or torn) is ignored. ``start`` is a known
    ``(version, offset of the line after it)`` to begin at; ``offsets`` collects such pairs every
    :data:`OFFSET_EVERY` versions. Raises :class:`Corrupt` and :exc:`OSError`.
    """
    entries: list[JournalEntry] = []
    last = start[0]
    taken = 0
    with path.open("rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size == 0:
            return entries, 0, False
        with mmap.mmap(file.fileno(), size, access=mmap.ACCESS_READ) as view:
            position = start[1]
            while position < size and (upto is None or last < upto):
                end = view.find(b"\n", position)
                if end < 0:
                    break
                entry: JournalEntry | None = None
                # a line that will be returned is parsed at once; others are skipped by their prefix
                version = None if last >= since else peek_version(view[position:position + 64])
                try:
                    if version is None:
                        entry = JournalEntry.from_line(view[position:end])
                        version = entry.version
                    if version > since and entry is None:
                        entry = JournalEntry.from_line(view[position:end])
                except ValueError as error:
                    raise Corrupt(f"journal line {last + 1} cannot be read: {error}", path.name) from None
                if version != last + 1 or (entry is not None and entry.version != version):
                    raise Corrupt(f"journal versions are not consecutive: version {version} after {last}",
                                   path.name)
                if entry is not None and version > since:
                    entries.append(entry)
                    taken += end + 1 - position
                last = version
                position = end + 1
                if offsets is not None and version % every == 0:
                    offsets[version] = position
                if max_bytes is not None and taken >= max_bytes and (upto is None or last < upto):
                    return entries, last, True
    return entries, last, False


