"""The archive format of ``schemadoc export`` / ``schemadoc import``: a tar stream (optionally gzip) of JSON members.

::

    documents/{doc_id}/meta.json        the document's meta at its archived version (indented JSON)
    documents/{doc_id}/content.json     its content at that version (compact JSON)
    documents/{doc_id}/journal.jsonl    with --history: its journal, versions 1 to that version, one entry a line
    ...                                 one document after another, doc_ids ascending
    manifest.json                       format, format_version, schemadoc_version, created_at, store, schema,
                                        history, documents, deleted_documents
    SHA256SUMS                          "<sha256>  <member>" for every member before it, in archive order

``tar xf`` unpacks it and ``sha256sum -c SHA256SUMS`` checks it. Reading it back
(:class:`ArchiveReader`) checks the order of the members, every checksum, the manifest against
what was read, and that nothing follows ``SHA256SUMS``: any damage (a truncated file, a byte
changed, a member missing or added) is ``archive-invalid``. Both directions hold one document
at a time (its journal is streamed line by line), never the whole archive.
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import re
import tarfile
import tempfile
import time
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, Final

import orjson

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry
from schemadoc.storage.base import DocumentMeta, check_doc_id

__all__ = ["FORMAT", "FORMAT_VERSION", "MANIFEST", "SUMS", "ArchiveReader", "ArchiveWriter", "ArchivedDocument",
           "archive_invalid", "meta_member"]

FORMAT: Final = "schemadoc-archive"
FORMAT_VERSION: Final = 1
MANIFEST: Final = "manifest.json"
SUMS: Final = "SHA256SUMS"
_MANIFEST_MAX_BYTES: Final = 1 << 20
_MEMBER = re.compile(r"documents/([0-9A-Z]{26})/(meta\.json|content\.json|journal\.jsonl)")
_CHUNK: Final = 1 << 20


def archive_invalid(why: str, **details: Any) -> SchemaDocError:
    """``archive-invalid`` (details ``{"reason", ...}``)."""
    return SchemaDocError("archive-invalid", f"The archive cannot be imported: {why}.", {"reason": why, **details})


def meta_member(meta: DocumentMeta, content_size: int) -> bytes:
    """The ``meta.json`` member: the meta without the store's ``snapshot_version``, the size of ``content.json``."""
    data = {**meta.to_dict(), "content_size_bytes": content_size}
    del data["snapshot_version"]
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


class ArchiveWriter:
    """Writes an archive to a binary stream (a file or stdout; it is never sought), member by member."""

    def __init__(self, out: BinaryIO, *, gzip: bool = False) -> None:
        # both closed by finish()
        self._tar = tarfile.open(fileobj=out, mode="w|gz" if gzip else "w|", format=tarfile.PAX_FORMAT)  # noqa: SIM115
        self._sums: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=4 << 20)  # noqa: SIM115
        self.documents = 0
        self.deleted = 0

    def _add(self, name: str, data: IO[bytes], size: int, digest: str, mtime: float) -> None:
        info = tarfile.TarInfo(name)
        info.size, info.mtime, info.mode = size, mtime, 0o644
        self._tar.addfile(info, data)
        self._sums.write(f"{digest}  {name}\n".encode())

    def _add_bytes(self, name: str, data: bytes, mtime: float) -> None:
        self._add(name, io.BytesIO(data), len(data), hashlib.sha256(data).hexdigest(), mtime)

    def add_document(self, meta: DocumentMeta, content: bytes, journal: IO[bytes] | None = None,
                     journal_digest: str = "") -> None:
        """One document: ``content`` is its JSON at ``meta.version``; ``journal`` (read from its start, its
        SHA-256 ``journal_digest``) its journal lines up to that version."""
        mtime = _epoch(meta.modified_at)
        prefix = f"documents/{meta.doc_id}/"
        self._add_bytes(prefix + "meta.json", meta_member(meta, len(content)), mtime)
        self._add_bytes(prefix + "content.json", content, mtime)
        if journal is not None:
            size = journal.seek(0, io.SEEK_END)
            journal.seek(0)
            self._add(prefix + "journal.jsonl", journal, size, journal_digest, mtime)
        self.documents += 1
        self.deleted += meta.deleted_at is not None

    def finish(self, manifest: dict[str, Any]) -> None:
        """The manifest (``documents`` and ``deleted_documents`` filled in), ``SHA256SUMS``, and the end of the tar."""
        now = time.time()
        body = {**manifest, "documents": self.documents, "deleted_documents": self.deleted}
        self._add_bytes(MANIFEST, orjson.dumps(body, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE), now)
        size = self._sums.tell()
        self._sums.seek(0)
        digest = hashlib.sha256()
        while chunk := self._sums.read(_CHUNK):
            digest.update(chunk)
        self._sums.seek(0)
        info = tarfile.TarInfo(SUMS)
        info.size, info.mtime, info.mode = size, now, 0o644
        self._tar.addfile(info, self._sums)
        self._tar.close()
        self._sums.close()


def _epoch(stamp: str) -> float:
    from datetime import datetime

    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


@dataclass
class ArchivedDocument:
    """A document read from an archive: its meta, its content's bytes and, for an archive with history, its
    journal, drawn entry by entry (only until the next document is drawn)."""

    meta: DocumentMeta
    content: bytes
    journal: Iterator[JournalEntry] | None


class _Hashed:
    """A member being read: every byte read goes into its SHA-256."""

    def __init__(self, file: IO[bytes], name: str) -> None:
        self.file, self.name, self.digest = file, name, hashlib.sha256()

    def read(self) -> bytes:
        with _damaged():
            data = self.file.read()
        self.digest.update(data)
        return data

    def lines(self) -> Iterator[bytes]:
        while True:
            with _damaged():
                line = self.file.readline()
            if not line:
                return
            self.digest.update(line)
            yield line

    def drain(self) -> str:
        with _damaged():
            while chunk := self.file.read(_CHUNK):
                self.digest.update(chunk)
        return self.digest.hexdigest()


@contextlib.contextmanager
def _damaged() -> Iterator[None]:
    """What reading a damaged tar or gzip stream raises, as ``archive-invalid``."""
    try:
        yield
    except (tarfile.TarError, EOFError, zlib.error, OSError) as error:
        raise archive_invalid(f"it is not a complete tar stream ({type(error).__name__}: {error})") from None


class _Counted:
    """A stream read through, counting the bytes it gave."""

    def __init__(self, file: IO[bytes]) -> None:
        self.file, self.count = file, 0

    def read(self, size: int = -1) -> bytes:
        data = self.file.read(size)
        self.count += len(data)
        return data


class ArchiveReader:
    """Reads an archive from a binary stream and checks it as it goes (see the module docstring).

    :meth:`documents` yields each document; once it is exhausted the whole archive was verified and
    :attr:`manifest` holds the manifest. Any damage raises ``archive-invalid``, possibly after some
    documents were yielded: a caller that must not act on a damaged archive reads it twice.
    """

    def __init__(self, file: BinaryIO) -> None:
        self._file = file
        self.manifest: dict[str, Any] = {}
        self._sums = hashlib.sha256()  # of the SHA256SUMS text the members read so far call for
        self._previous = ""

    def documents(self) -> Iterator[ArchivedDocument]:
        with _damaged():
            yield from self._documents()

    def _open(self) -> tarfile.TarFile:
        """The tar stream: gzip is read by :mod:`gzip`, which checks the CRC and length at its end."""
        start = self._file.tell()
        magic = self._file.read(2)
        self._file.seek(start)
        source: Any = gzip.GzipFile(fileobj=self._file, mode="rb") if magic == b"\x1f\x8b" else self._file
        self._stream = _Counted(source)
        try:
            return tarfile.open(fileobj=self._stream, mode="r|")  # type: ignore[call-overload, no-any-return]
        except tarfile.ReadError:
            raise archive_invalid("it is not a tar file (or a gzipped one)") from None

    def _check_end(self, tar: tarfile.TarFile) -> None:
        """After the last member: the end-of-archive blocks, zeros to the end of the last record, nothing more.

        A reader stops at the first zero block, so a file cut short anywhere after the last member
        would pass unnoticed without this.
        """
        stream = tar.fileobj
        assert stream is not None
        while chunk := stream.read(_CHUNK):
            if chunk.count(0) != len(chunk):
                raise archive_invalid("data follows the end of the tar archive")
        total = self._stream.count
        if total < tar.offset + 2 * tarfile.BLOCKSIZE or total % tarfile.RECORDSIZE:
            raise archive_invalid("the tar archive is cut short after its last member (a truncated file)")

    def _member(self, tar: tarfile.TarFile, info: tarfile.TarInfo) -> _Hashed:
        if not info.isreg():
            raise archive_invalid(f"member {info.name!r} is not a regular file", member=info.name)
        file = tar.extractfile(info)
        assert file is not None
        return _Hashed(file, info.name)

    def _done(self, member: _Hashed) -> None:
        self._sums.update(f"{member.drain()}  {member.name}\n".encode())

    def _documents(self) -> Iterator[ArchivedDocument]:
        tar = self._open()
        count = deleted = journals = 0
        info = tar.next()
        while info is not None and info.name != MANIFEST:
            doc_id, kind = self._name(info.name)
            if kind != "meta.json":
                raise archive_invalid(f"member {info.name!r} comes before its document's meta.json "
                                      "(a member is missing)", member=info.name)
            meta = self._meta(doc_id, self._member(tar, info))
            info = tar.next()
            if info is None or self._name(info.name) != (doc_id, "content.json"):
                raise archive_invalid(f"document {doc_id} has no content.json after its meta.json", doc_id=doc_id)
            member = self._member(tar, info)
            content = member.read()
            self._done(member)
            if len(content) != meta.content_size_bytes:
                raise archive_invalid(f"content.json of {doc_id} is not the size its meta gives", doc_id=doc_id)
            info = tar.next()
            journal: _Hashed | None = None
            if info is not None and info.name == f"documents/{doc_id}/journal.jsonl":
                journal = self._member(tar, info)  # the next member is drawn once this one is read (a stream)
            document = ArchivedDocument(meta, content, _entries(doc_id, journal) if journal is not None else None)
            yield document
            if journal is not None:
                self._done(journal)
                journals += 1
                info = tar.next()
            count += 1
            deleted += meta.deleted_at is not None
        if info is None:
            raise archive_invalid(f"{MANIFEST} is missing (a truncated archive?)")
        manifest = self._member(tar, info)
        if info.size > _MANIFEST_MAX_BYTES:
            raise archive_invalid(f"{MANIFEST} is larger than {_MANIFEST_MAX_BYTES} bytes")
        manifest_bytes = manifest.read()
        self._done(manifest)
        info = tar.next()
        if info is None or info.name != SUMS:
            raise archive_invalid(f"{SUMS} is missing after {MANIFEST} (a truncated archive?)")
        sums = self._member(tar, info)
        if sums.drain() != self._sums.hexdigest():
            raise archive_invalid(f"a checksum does not match: a member was changed, or {SUMS} was")
        if tar.next() is not None:
            raise archive_invalid(f"members follow {SUMS}")
        self._check_end(tar)
        self.manifest = _check_manifest(manifest_bytes, count, deleted, journals)

    def _name(self, name: str) -> tuple[str, str]:
        match = _MEMBER.fullmatch(name)
        if match is None or check_doc_id(match.group(1)) != match.group(1):
            raise archive_invalid(f"unexpected member {name!r}", member=name)
        return match.group(1), match.group(2)

    def _meta(self, doc_id: str, member: _Hashed) -> DocumentMeta:
        if doc_id <= self._previous:
            raise archive_invalid(f"document {doc_id} is out of order (doc_ids ascend)", doc_id=doc_id)
        self._previous = doc_id
        data = member.read()
        self._done(member)
        try:
            meta = DocumentMeta.from_dict(orjson.loads(data))
        except ValueError as error:
            raise archive_invalid(f"meta.json of {doc_id} is invalid: {error}", doc_id=doc_id) from None
        if meta.doc_id != doc_id:
            raise archive_invalid(f"meta.json of {doc_id} names {meta.doc_id}", doc_id=doc_id)
        return meta


def _entries(doc_id: str, member: _Hashed) -> Iterator[JournalEntry]:
    for line in member.lines():
        try:
            yield JournalEntry.from_line(line)
        except ValueError as error:
            raise archive_invalid(f"journal.jsonl of {doc_id} holds a bad line: {error}", doc_id=doc_id) from None


def _check_manifest(data: bytes, count: int, deleted: int, journals: int) -> dict[str, Any]:
    try:
        manifest = orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise archive_invalid(f"{MANIFEST} is not JSON: {error}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != FORMAT:
        raise archive_invalid(f"{MANIFEST} does not describe a {FORMAT}")
    version = manifest.get("format_version")
    if version != FORMAT_VERSION:
        raise archive_invalid(f"archive format version {version!r} is not {FORMAT_VERSION}, the one this schemadoc "
                              "reads", format_version=version)
    if manifest.get("documents") != count or manifest.get("deleted_documents") != deleted:
        raise archive_invalid(f"{MANIFEST} counts {manifest.get('documents')!r} documents, the archive holds "
                              f"{count}")
    history = manifest.get("history")
    if history not in (True, False) or journals != (count if history else 0):
        raise archive_invalid(f"{MANIFEST} says history is {history!r}, but {journals} of {count} documents have "
                              "a journal")
    return manifest
