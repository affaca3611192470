"""``schemadoc import``: an archive (:mod:`.format`) into a store, checked whole before anything is written.

Two passes over the archive. The first writes nothing: it checks every member, checksum and
the manifest, replays each journal to the content it must give, validates each document against
the served schema and looks up which doc_ids the store already holds; a damaged archive is
``archive-invalid`` and, with ``existing="fail"``, a doc_id already stored is ``import-conflict``,
both before anything changed. The second pass writes each document with
:meth:`~schemadoc.storage.base.DocumentStore.restore`: doc_id, version, times, deleted state and
every journal entry (``info`` included) as they were. Documents the schema refuses are reported
and left out; the others are imported. Without history a document's journal starts anew: version 1
holds its archived content (``info.archived_version`` names the version it had).

Memory holds one document at a time, and the doc_ids of refused and already stored documents.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, BinaryIO, Final

import orjson

from schemadoc.archive.format import ArchivedDocument, ArchiveReader, archive_invalid
from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry
from schemadoc.ops.journal import replay as replay_journal
from schemadoc.storage.base import DocumentStore
from schemadoc.validation import DocumentValidator

__all__ = ["EXISTING", "ImportSummary", "import_archive"]

EXISTING: Final = ("fail", "skip", "replace")
"""What an import does with a doc_id the store already holds: stop before writing anything, keep the stored
document, or put the archive's in its place."""

_SHOWN: Final = 20  # doc_ids named in an import-conflict
_VIOLATIONS_SHOWN: Final = 3


@dataclass
class ImportSummary:
    documents: int = 0   # in the archive
    imported: int = 0    # written (replaced ones included)
    replaced: int = 0
    skipped: int = 0
    invalid: int = 0
    manifest: dict[str, Any] = field(default_factory=dict)


def _content(doc: ArchivedDocument) -> Any:
    try:
        return orjson.loads(doc.content)
    except orjson.JSONDecodeError as error:
        raise archive_invalid(f"content.json of {doc.meta.doc_id} is not JSON: {error}",
                              doc_id=doc.meta.doc_id) from None


def _check_journal(doc: ArchivedDocument, content: Any) -> None:
    """The journal replays, versions 1 to the meta's, to the archived content."""
    if doc.journal is None:
        return
    doc_id = doc.meta.doc_id
    last = [0]

    def counted() -> Iterator[JournalEntry]:
        for entry in doc.journal or ():
            last[0] = entry.version
            yield entry

    try:
        rebuilt = replay_journal(counted(), copy=False)
    except ValueError as error:
        raise archive_invalid(f"the journal of {doc_id} does not replay: {error}", doc_id=doc_id) from None
    if last[0] != doc.meta.version:
        raise archive_invalid(f"the journal of {doc_id} ends at version {last[0]}, its meta is at version "
                              f"{doc.meta.version}", doc_id=doc_id)
    if rebuilt != content or orjson.dumps(rebuilt) != orjson.dumps(content):
        raise archive_invalid(f"the journal of {doc_id} does not replay to its content", doc_id=doc_id)


def _stored(store: DocumentStore, doc_id: str) -> bool:
    try:
        store.read_meta(doc_id)
    except SchemaDocError as error:
        if error.code == "document-not-found":
            return False
        raise
    return True


def _violations_line(doc_id: str, report: Any) -> str:
    shown = "; ".join(f"{item.path or '/'} {item.code}: {item.message}"
                      for item in report.violations[:_VIOLATIONS_SHOWN])
    more = len(report.violations) - _VIOLATIONS_SHOWN
    return (f"{doc_id}: refused by the schema, not imported ({len(report.violations)} violation(s)): {shown}"
            + (f"; and {more} more" if more > 0 else ""))


def _write(store: DocumentStore, doc: ArchivedDocument, content: Any, actor: str | None) -> None:
    data = orjson.dumps(content)
    meta = replace(doc.meta, content_size_bytes=len(data))
    if doc.journal is not None:
        store.restore(meta, doc.journal, data)
        return
    first = JournalEntry(1, "create", [{"op": "add", "path": "", "value": content}], meta.modified_at,
                         {"archived_version": meta.version, **({"actor": actor} if actor else {})})
    store.restore(replace(meta, version=1, snapshot_version=1), [first], data)


def import_archive(file: BinaryIO, store: DocumentStore, validator: DocumentValidator, *, existing: str = "fail",
                   report: Callable[[str], None] = print, actor: str | None = None) -> ImportSummary:
    """Import the archive in ``file`` (seekable: it is read twice) into the opened ``store``; see the module
    docstring. ``report`` receives one line per refused, skipped or replaced document; ``actor`` is recorded by the
    entry that starts the journal of a document archived without its history (one archived with it keeps its own)."""
    if existing not in EXISTING:
        raise ValueError(f"existing must be one of {EXISTING}, not {existing!r}")
    summary = ImportSummary()
    refused: set[str] = set()
    present: set[str] = set()
    file.seek(0)
    checking = ArchiveReader(file)
    for doc in checking.documents():
        summary.documents += 1
        content = _content(doc)
        _check_journal(doc, content)
        if not validator.is_valid(content):  # the report only when needed; nothing remembered (memory)
            refused.add(doc.meta.doc_id)
            report(_violations_line(doc.meta.doc_id, validator.validate(content)))
        if _stored(store, doc.meta.doc_id):
            present.add(doc.meta.doc_id)
    summary.manifest = checking.manifest
    if present and existing == "fail":
        shown = sorted(present)[:_SHOWN]
        raise SchemaDocError("import-conflict", f"{len(present)} document(s) of the archive already exist in the "
                             f"store (e.g. {shown[0]}); nothing was imported.",
                             {"count": len(present), "doc_ids": shown})
    file.seek(0)
    for doc in ArchiveReader(file).documents():
        doc_id = doc.meta.doc_id
        if doc_id in refused:
            summary.invalid += 1
            continue
        if doc_id in present:
            if existing == "skip":
                summary.skipped += 1
                report(f"{doc_id}: already in the store, kept as it is")
                continue
            with store.write_lock(doc_id):
                if _stored(store, doc_id):
                    store.purge(doc_id)
                _write(store, doc, _content(doc), actor)
            summary.replaced += 1
            report(f"{doc_id}: replaced by the archive's version {doc.meta.version}")
        else:
            _write(store, doc, _content(doc), actor)
        summary.imported += 1
    return summary
