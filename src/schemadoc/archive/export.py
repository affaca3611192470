"""``schemadoc export``: every document of a store, each at its current version, into an archive (:mod:`.format`).

Taken from a live store without stopping writers: the doc_ids are listed once, then each
document is loaded on its own (its meta, snapshot and the journal after it, consistent with each
other: the store takes the document's lock for that instant) and its journal replayed onto the
snapshot, so the archived content is the version the meta names, never a stale snapshot. With
history, the journal is read up to that version in pages bounded in bytes. A document purged
meanwhile is left out; one created after the listing is not in the archive. Deleted (not purged)
documents are archived with their ``deleted_at``. Memory holds one document at a time (its journal
goes through a temporary file that spills to disk) and the list of doc_ids.
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from typing import IO, Any, BinaryIO, Final

import orjson

from schemadoc import __version__
from schemadoc.archive.format import FORMAT, FORMAT_VERSION, ArchiveWriter
from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import replay, utc_now
from schemadoc.storage.base import DocumentMeta, DocumentStore

__all__ = ["ExportSummary", "export_store"]

_JOURNAL_PAGE_BYTES: Final = 4 << 20
_JOURNAL_IN_MEMORY_BYTES: Final = 8 << 20


@dataclass
class ExportSummary:
    documents: int = 0
    deleted: int = 0
    vanished: int = 0  # purged between the listing and their turn


def _current(store: DocumentStore, doc_id: str) -> tuple[DocumentMeta, bytes]:
    """The document's meta and its content at that version, compact JSON."""
    stored = store.load(doc_id)
    document = orjson.loads(stored.content)
    if stored.entries:
        document = replay(stored.entries, start=document, start_version=stored.meta.snapshot_version, copy=False)
    return stored.meta, orjson.dumps(document)


def _journal(store: DocumentStore, doc_id: str, version: int) -> tuple[IO[bytes], str]:
    """The journal lines of versions 1..``version`` in a temporary file, and their SHA-256."""
    spool: IO[bytes] = tempfile.SpooledTemporaryFile(max_size=_JOURNAL_IN_MEMORY_BYTES)  # noqa: SIM115 - the caller closes it
    digest = hashlib.sha256()
    since = 0
    while since < version:
        page = store.read_journal(doc_id, since_version=since, until_version=version, max_bytes=_JOURNAL_PAGE_BYTES)
        if not page:
            raise SchemaDocError("storage-read-failed", f"The journal of {doc_id} ends at version {since}, "
                                 f"before version {version}.", {"doc_id": doc_id, "reason": "journal too short"})
        for entry in page:
            line = entry.to_line()
            spool.write(line)
            digest.update(line)
        since = page[-1].version
    return spool, digest.hexdigest()


def export_store(store: DocumentStore, out: BinaryIO, *, history: bool = False, gzip: bool = False,
                 source: dict[str, Any] | None = None, schema: dict[str, Any] | None = None,
                 progress: Callable[[str], None] | None = None) -> ExportSummary:
    """Write an archive of every document of ``store`` to ``out``; ``source`` and ``schema`` go into the manifest.

    Raises what the store raises (``storage-read-failed`` for a document that cannot be read: a
    backup does not leave one out silently); ``out`` then holds no manifest, so no import takes it.
    """
    started = utc_now()
    writer = ArchiveWriter(out, gzip=gzip)
    summary = ExportSummary()
    doc_ids = [meta.doc_id for meta in store.list_metas()]
    for doc_id in doc_ids:
        try:
            meta, content = _current(store, doc_id)
            journal = _journal(store, doc_id, meta.version) if history else None
        except SchemaDocError as error:
            if error.code != "document-not-found":
                raise
            summary.vanished += 1
            if progress is not None:
                progress(f"{doc_id}: purged during the export, left out")
            continue
        try:
            writer.add_document(meta, content, *(journal or ()))
        finally:
            if journal is not None:
                journal[0].close()
        summary.documents += 1
        summary.deleted += meta.deleted_at is not None
    writer.finish({"format": FORMAT, "format_version": FORMAT_VERSION, "schemadoc_version": __version__,
                   "created_at": started, "completed_at": utc_now(), "store": source or {}, "schema": schema,
                   "history": history})
    return summary
