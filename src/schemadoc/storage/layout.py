"""Where the files store keeps a document, and the errors it raises about its files.

::

    {storage_dir}/{doc_id}.json                 snapshot: the content at the meta's snapshot_version
    {storage_dir}/{doc_id}.meta.json            DocumentMeta of the snapshot (+ journal_offset)
    {storage_dir}/{doc_id}.journal.jsonl        one line per version: the truth
    {storage_dir}/{doc_id}.lock                 inter-process write lock (fcntl.flock)
    {storage_dir}/{doc_id}.tmp, .meta.tmp       a creation in progress
    {storage_dir}/{doc_id}.{token}.tmp          a snapshot being written
    {storage_dir}/{doc_id}.{token}.meta.tmp     its meta, written before the snapshot is renamed
    {storage_dir}/checkpoints/{doc_id}/{version}.json   past versions (a bounded cache)
    {storage_dir}/verdicts/{doc_id}.json        the latest check's verdict of the document (a record, see files.py)
    {storage_dir}/schemadoc-store.json          the store format version (:mod:`~schemadoc.storage.store_format`)
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from schemadoc.errors import SchemaDocError
from schemadoc.storage.base import check_doc_id

__all__ = ["META_SUFFIX", "Corrupt", "Paths", "doc_id_of", "journal_failed", "read_failed",
           "reason", "write_failed"]

META_SUFFIX = ".meta.json"
_NAME = re.compile(r"^([0-9A-Za-z]{26})(\.meta\.json|\.journal\.jsonl|\.json|\.lock|\.tmp|\.meta\.tmp"
                   r"|\.[0-9a-f]{16}\.tmp|\.[0-9a-f]{16}\.meta\.tmp)$")


@dataclass(frozen=True)
class Paths:
    """The files of one document (each path made once, when first asked for: the store keeps the ``Paths`` of the
    documents it reads, so a read or a write builds no path)."""

    directory: Path
    doc_id: str

    @cached_property
    def content(self) -> Path:
        return self.directory / f"{self.doc_id}.json"

    @cached_property
    def meta(self) -> Path:
        return self.directory / f"{self.doc_id}{META_SUFFIX}"

    @cached_property
    def journal(self) -> Path:
        return self.directory / f"{self.doc_id}.journal.jsonl"

    @cached_property
    def lock(self) -> Path:
        return self.directory / f"{self.doc_id}.lock"

    @cached_property
    def content_tmp(self) -> Path:
        """A creation's content, before it is renamed into place."""
        return self.directory / f"{self.doc_id}.tmp"

    @cached_property
    def meta_tmp(self) -> Path:
        """A creation's meta: without ``{id}.meta.json`` beside it, the creation never completed."""
        return self.directory / f"{self.doc_id}.meta.tmp"

    def snapshot_tmp(self, token: str) -> Path:
        return self.directory / f"{self.doc_id}.{token}.tmp"

    def snapshot_meta_tmp(self, token: str) -> Path:
        return self.directory / f"{self.doc_id}.{token}.meta.tmp"

    @cached_property
    def verdict(self) -> Path:
        """The latest check's verdict of this document (a record beside the journal, rebuilt by checking again)."""
        return self.directory / "verdicts" / f"{self.doc_id}.json"

    @cached_property
    def checkpoints(self) -> Path:
        """The directory of this document's history checkpoints."""
        return self.directory / "checkpoints" / self.doc_id

    def temporaries(self) -> list[Path]:
        """Every temporary file of this document that exists now."""
        return sorted(self.directory.glob(f"{self.doc_id}.*tmp"))

    def exists(self) -> bool:
        return self.meta.exists() or self.content.exists() or self.journal.exists()


class Corrupt(Exception):
    """A document whose files cannot be made consistent (reported, never fatal for the store)."""

    def __init__(self, why: str, *files: str) -> None:
        super().__init__(why)
        self.reason = why
        self.files = list(files)


def doc_id_of(name: str) -> str | None:
    """The doc_id a file of the storage directory belongs to, or None for files that are not ours."""
    match = _NAME.match(name)
    try:
        return match.group(1) if match is not None and check_doc_id(match.group(1)) == match.group(1) else None
    except SchemaDocError:
        return None


def reason(error: OSError) -> str:
    # strerror, not str(error): the latter embeds the machine's absolute path
    return error.strerror or type(error).__name__


def write_failed(doc_id: str, action: str, error: OSError) -> SchemaDocError:
    why = f"{action}: {reason(error)}"
    return SchemaDocError("storage-write-failed", f"Document {doc_id} could not be written: {why}.",
                          {"doc_id": doc_id, "reason": why})


def read_failed(doc_id: str, why: str, *files: str) -> SchemaDocError:
    return SchemaDocError("storage-read-failed", f"Document {doc_id} cannot be read: {why}.",
                          {"doc_id": doc_id, "reason": why, "files": list(files)})


def journal_failed(doc_id: str, paths: Paths, error: OSError | Corrupt) -> SchemaDocError:
    """``storage-read-failed`` for a journal that could not be read (``error``) or is damaged (``Corrupt``)."""
    why = error.reason if isinstance(error, Corrupt) else f"cannot read the journal: {reason(error)}"
    return read_failed(doc_id, why, paths.journal.name)
