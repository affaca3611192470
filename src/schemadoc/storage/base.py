"""The storage contract: what every document store does, and the data it exchanges.

A store keeps, per document, its journal (:class:`~schemadoc.ops.journal.JournalEntry` per
version), a snapshot (JSON bytes exactly as the service wrote them, the content of one version
no newer than the journal) and its :class:`DocumentMeta`. It never validates or interprets
content on the normal path: the service does.

Journal-first: a write is durable (acknowledged) once its journal entry is. The snapshot is a
checkpoint of the journal; it may lag it (``DocumentMeta.snapshot_version``) and is brought up
to date off the write path with :meth:`DocumentStore.write_snapshot`. The document at its
current version is the snapshot with the journal entries after it replayed
(:meth:`DocumentStore.load` returns both).

Every store runs the same contract suite (``tests/contract/storage``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

import orjson
from ulid import ULID

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry
from schemadoc.storage.verdict import VERDICT_VIOLATIONS, Verdict

__all__ = [
    "CHECKPOINTS_KEPT_RECENT",
    "LOCK_TIMEOUT_SECONDS",
    "VERDICT_VIOLATIONS",
    "DocumentMeta",
    "DocumentStore",
    "RecoveryReport",
    "StoredDocument",
    "Verdict",
    "already_exists",
    "check_doc_id",
    "check_restore",
    "check_write",
    "document_not_found",
    "journal_line",
    "keep_checkpoints",
    "lock_timeout",
    "restored_entries",
    "snapshot_due",
    "version_conflict",
]

LOCK_TIMEOUT_SECONDS = 10.0
"""How long a writer waits for a document's write lock (FR-083: 10 seconds, not configurable)."""


_CANONICAL_ULID = re.compile(r"[0-7][0-9A-HJKMNP-TV-Z]{25}")  # Crockford base32, at most 128 bits


def check_doc_id(doc_id: Any) -> str:
    """The doc_id in canonical form (upper-case ULID): the only thing a store turns into a file name.

    Raises ``invalid-doc-id`` (details ``{"doc_id", "reason"}``) for anything that is not a
    26-character Crockford base32 ULID, which rules out path traversal through a doc_id.
    """
    if isinstance(doc_id, str):
        canonical = doc_id.upper()
        if _CANONICAL_ULID.fullmatch(canonical):  # what the ULID round trip below gives, 20x faster
            return canonical
    shown = doc_id if isinstance(doc_id, str) else repr(doc_id)
    if not isinstance(doc_id, str):
        reason = f"a doc_id is a string, not {type(doc_id).__name__}"
    else:
        try:
            return str(ULID.from_str(doc_id.upper()))
        except ValueError as error:
            reason = str(error)
    raise SchemaDocError("invalid-doc-id", f"{shown!r} is not a doc_id (a 26-character ULID): {reason}.",
                         {"doc_id": shown, "reason": reason})


def check_write(meta: DocumentMeta, entry: JournalEntry, content: bytes | None, *, new: bool = False) -> str:
    """The checks every store makes on the arguments of ``create`` (``new``) and ``commit`` (see their
    errors); returns the doc_id, which must be in canonical (upper-case) form."""
    doc_id = check_doc_id(meta.doc_id)
    if doc_id != meta.doc_id:
        raise SchemaDocError("invalid-doc-id", f"{meta.doc_id!r} is not in canonical (upper-case) form.",
                             {"doc_id": meta.doc_id, "reason": "not in canonical upper-case form"})
    if meta.version != entry.version:
        raise ValueError(f"meta version {meta.version} and journal entry version {entry.version} differ")
    if new and meta.version != 1:
        raise ValueError(f"a new document starts at version 1, not {meta.version}")
    if content is None:
        if new:
            raise ValueError("a new document needs its content (the first snapshot)")
        return doc_id
    if meta.content_size_bytes != len(content):
        raise ValueError(f"meta content_size_bytes {meta.content_size_bytes} is not the content's "
                         f"length {len(content)}")
    return doc_id


def check_restore(meta: DocumentMeta, content: bytes) -> str:
    """The checks of ``restore`` on its meta and content (the entries are checked as they come, with
    :func:`restored_entries`); returns the doc_id, which must be in canonical (upper-case) form."""
    doc_id = check_doc_id(meta.doc_id)
    if doc_id != meta.doc_id:
        raise SchemaDocError("invalid-doc-id", f"{meta.doc_id!r} is not in canonical (upper-case) form.",
                             {"doc_id": meta.doc_id, "reason": "not in canonical upper-case form"})
    if meta.content_size_bytes != len(content):
        raise ValueError(f"meta content_size_bytes {meta.content_size_bytes} is not the content's "
                         f"length {len(content)}")
    return doc_id


def restored_entries(meta: DocumentMeta, entries: Iterable[JournalEntry]) -> Iterator[JournalEntry]:
    """``entries``, checked as they are drawn: versions 1, 2, ... up to ``meta.version`` and no further.

    Raises :exc:`ValueError` at the first entry out of order, or at the end when the journal stops
    before ``meta.version`` (a store that writes them as they come then leaves nothing behind).
    """
    expected = 1
    for entry in entries:
        if entry.version != expected or expected > meta.version:
            raise ValueError(f"restored journal of {meta.doc_id}: expected version {expected} "
                             f"(of 1..{meta.version}), found version {entry.version}")
        yield entry
        expected += 1
    if expected != meta.version + 1:
        raise ValueError(f"restored journal of {meta.doc_id} ends at version {expected - 1}, "
                         f"the meta is at version {meta.version}")


def journal_line(doc_id: str, entry: JournalEntry, meta: DocumentMeta | None = None) -> bytes:
    """``entry.to_line()``; ``storage-write-failed`` when the entry holds what JSON cannot represent.

    With ``meta``, the line ends with one more member, ``meta``: the new version's ``modified_at``,
    ``content_size_bytes`` and ``deleted_at`` (the files store's lines, see :mod:`.journal`), and
    ``schema_digest`` when known; ``verdict`` only when it is not "valid under ``schema_digest``" (a
    repair that left violations), so a line of an ordinary write grows by the digest alone.
    """
    data = entry.to_dict()
    if meta is not None:
        data["meta"] = {"modified_at": meta.modified_at, "content_size_bytes": meta.content_size_bytes,
                        "deleted_at": meta.deleted_at}
        if meta.schema_digest is not None:
            data["meta"]["schema_digest"] = meta.schema_digest
        if meta.verdict is not None and (not meta.verdict.valid or meta.verdict.digest != meta.schema_digest):
            data["meta"]["verdict"] = meta.verdict.to_dict()
    try:
        return orjson.dumps(data, option=orjson.OPT_APPEND_NEWLINE)
    except TypeError as error:
        reason = f"journal entry not serialisable: {error}"
        raise SchemaDocError("storage-write-failed", f"The journal entry of {doc_id} is not JSON: {error}.",
                             {"doc_id": doc_id, "reason": reason}) from None


def snapshot_due(doc_id: str, version: int, stored: DocumentMeta) -> bool:
    """Whether a snapshot of ``version`` is newer than the ``stored`` one (``write_snapshot``'s first check).

    Raises :exc:`ValueError` when ``version`` is not a version of the document.
    """
    if not 1 <= version <= stored.version:
        raise ValueError(f"version {version} is not a version of document {doc_id} (1 to {stored.version})")
    return version > stored.snapshot_version


CHECKPOINTS_KEPT_RECENT = 4
"""Persisted history checkpoints: the newest four are always kept (see :func:`keep_checkpoints`)."""


def keep_checkpoints(versions: list[int]) -> list[int]:
    """The checkpoint versions a store keeps of ``versions``, ascending: a bounded, log-spaced set.

    The newest :data:`CHECKPOINTS_KEPT_RECENT`, then of the older ones the oldest in each band of
    distance from the newest checkpoint (1, 2-3, 4-7, 8-15, ... versions back). Applied after
    every new checkpoint, this keeps at most ``4 + log2(newest)`` of them, the oldest one always
    (e.g. one every 256 versions for 999 checkpoints leaves 12: the first, then ever closer
    ones towards the present), so recent versions are cheap to rebuild and old ones reachable.
    """
    ordered = sorted(set(versions), reverse=True)
    if not ordered:
        return []
    newest = ordered[0]
    kept = ordered[:CHECKPOINTS_KEPT_RECENT]
    oldest_in_band: dict[int, int] = {}
    for version in ordered[CHECKPOINTS_KEPT_RECENT:]:
        oldest_in_band[(newest - version).bit_length()] = version
    return sorted([*kept, *oldest_in_band.values()])


def already_exists(doc_id: str) -> SchemaDocError:
    return SchemaDocError("storage-write-failed", f"Document {doc_id} already exists.",
                          {"doc_id": doc_id, "reason": "the document already exists"})


def document_not_found(doc_id: str) -> SchemaDocError:
    """The ``document-not-found`` error for ``doc_id`` (details ``{"doc_id"}``)."""
    return SchemaDocError("document-not-found", f"No document with doc_id {doc_id} exists.",
                          {"doc_id": doc_id})


def lock_timeout(doc_id: str, timeout: float) -> SchemaDocError:
    """The ``lock-timeout`` error (details ``{"doc_id", "timeout_seconds"}``)."""
    return SchemaDocError(
        "lock-timeout",
        f"The write lock of document {doc_id} was not acquired within {timeout:g} seconds.",
        {"doc_id": doc_id, "timeout_seconds": timeout},
    )


def version_conflict(doc_id: str, expected: int, actual: int) -> SchemaDocError:
    """The ``version-conflict`` a store raises when a commit does not follow the stored version."""
    return SchemaDocError(
        "version-conflict",
        f"Document {doc_id} is stored at version {actual}, not {expected}; another writer committed first.",
        {"doc_id": doc_id, "expected_version": expected, "actual_version": actual},
    )


_META_FIELDS: dict[str, type] = {"doc_id": str, "version": int, "schema_uri": str, "created_at": str,
                                  "modified_at": str, "content_size_bytes": int, "deleted_at": str,
                                  "snapshot_version": int, "schema_digest": str}
_OPTIONAL_META_FIELDS = ("deleted_at", "snapshot_version", "schema_digest")

@dataclass(frozen=True)
class DocumentMeta:
    """What a store knows about a document besides its content (FR-016b), one file per document.

    ``version`` lives here only, never in the content (FR-016d). ``deleted_at`` is set while the
    whole document is deleted (soft delete, restorable) and ``None`` otherwise.
    ``content_size_bytes`` is the size of the current version's compact JSON (what a snapshot
    of it holds). ``snapshot_version`` is the version the stored snapshot holds (``<= version``;
    the journal entries after it are the lag); the store sets it, and ``0`` given to the
    constructor means "same as ``version``".
    """

    doc_id: str
    version: int
    schema_uri: str
    created_at: str
    modified_at: str
    content_size_bytes: int
    deleted_at: str | None = None
    snapshot_version: int = 0
    schema_digest: str | None = None
    """The digest of the schema the last write was judged by (``None``: written before digests were kept)."""
    verdict: Verdict | None = None
    """The latest verdict known: the last write's, or a later check's of this version (see :class:`Verdict`)."""

    def __post_init__(self) -> None:
        if self.snapshot_version == 0:
            object.__setattr__(self, "snapshot_version", self.version)

    def to_dict(self) -> dict[str, Any]:
        """The meta file's JSON object: every field, ``deleted_at`` included (``null`` when live); ``schema_digest``
        and ``verdict`` only when known."""
        data = asdict(self)
        for name in ("schema_digest", "verdict"):  # left out when unknown: the format before they were kept
            if data[name] is None:
                del data[name]
        if self.verdict is not None:
            data["verdict"] = self.verdict.to_dict()
        return data

    @classmethod
    def from_dict(cls, data: Any) -> DocumentMeta:
        """The meta for a JSON object as :meth:`to_dict` makes it (``deleted_at`` and ``snapshot_version``
        may be absent; unknown members are ignored); :exc:`ValueError` when it is not one."""
        if not isinstance(data, dict):
            raise ValueError(f"document meta must be a JSON object, got {type(data).__name__}")
        values: dict[str, Any] = {name: data.get(name) for name in _META_FIELDS}
        for name, kind in _META_FIELDS.items():
            value = values[name]
            if (value is not None or name not in _OPTIONAL_META_FIELDS) and (
                    isinstance(value, bool) or not isinstance(value, kind)):
                raise ValueError(f"document meta field {name!r} must be a {kind.__name__}, got {value!r}")
        meta = cls(**{**values, "snapshot_version": values["snapshot_version"] or 0},
                   verdict=Verdict.from_dict(data.get("verdict")))
        if meta.version < 1:
            raise ValueError(f"document meta version must be >= 1, got {meta.version}")
        if meta.content_size_bytes < 0:
            raise ValueError(f"document meta content_size_bytes must be >= 0, got {meta.content_size_bytes}")
        if not 1 <= meta.snapshot_version <= meta.version:
            raise ValueError(f"document meta snapshot_version must be from 1 to version {meta.version}, "
                             f"got {meta.snapshot_version}")
        return meta


@dataclass(frozen=True)
class StoredDocument:
    """A document as stored: its current meta, the snapshot and the journal entries after it.

    ``content`` is the snapshot, the JSON bytes of version ``meta.snapshot_version`` exactly as
    written; ``entries`` are the journal entries ``meta.snapshot_version + 1 .. meta.version``,
    oldest first (empty when the snapshot is current). Replaying ``entries`` on the parsed
    ``content`` gives the current version.
    """

    meta: DocumentMeta
    content: bytes
    entries: tuple[JournalEntry, ...] = ()


@dataclass
class RecoveryReport:
    """What :meth:`DocumentStore.open` found and did.

    - ``removed_tmp``: temporary files left by interrupted writes, removed (file names);
    - ``rolled_forward``: doc_id → (snapshot version, journal version) for documents whose
      snapshot was rebuilt from the journal (both versions equal when a damaged snapshot was
      rebuilt at the same version);
    - ``corrupt``: doc_id → reason for documents that cannot be read; reading them raises
      ``storage-read-failed`` while every other document stays available;
    - ``abandoned``: doc_ids of creations interrupted before they completed (never
      acknowledged), whose files were removed.
    """

    removed_tmp: list[str] = field(default_factory=list)
    rolled_forward: dict[str, tuple[int, int]] = field(default_factory=dict)
    corrupt: dict[str, str] = field(default_factory=dict)
    abandoned: list[str] = field(default_factory=list)


@runtime_checkable
class DocumentStore(Protocol):
    """Where documents live: content, meta and journal per document, plus a write lock.

    Every method that takes a doc_id raises ``invalid-doc-id`` for anything but a ULID, before
    touching storage. ``storage-read-failed`` and ``storage-write-failed`` carry
    ``details["doc_id"]`` and ``details["reason"]``.
    """

    def open(self) -> RecoveryReport:
        """Prepare the store for use; call once before anything else.

        A store on disk recovers from a crash here and reports documents it cannot read (without
        failing). Raises ``storage-write-failed`` (details ``{"storage_dir", "reason"}``) when the
        store cannot be used at all.
        """
        ...

    def create(self, meta: DocumentMeta, entry: JournalEntry, content: bytes) -> None:
        """Store a new document at version 1: the journal's first entry, the snapshot and meta.

        Atomic: after a crash the document either exists whole or not at all (:meth:`open`
        takes back a creation interrupted before it completed).

        Takes the document's write lock itself (re-entrant for a caller who holds it). Raises
        ``storage-write-failed`` when a document with ``meta.doc_id`` already exists or the
        write fails (then nothing of it remains), ``invalid-doc-id`` for a bad
        ``meta.doc_id``, and :exc:`ValueError` when ``meta.version`` or ``entry.version`` is
        not 1 or ``meta.content_size_bytes != len(content)``.
        """
        ...

    def commit(self, meta: DocumentMeta, entry: JournalEntry, content: bytes | None = None) -> None:
        """Store a new version: append ``entry`` to the journal durably (the commit point).

        ``meta.version == entry.version`` must be the stored version + 1; ``meta`` gives the new
        version's ``modified_at``, ``content_size_bytes`` and ``deleted_at``. ``content``, when
        given, is the new version's whole JSON and becomes the snapshot too (inline); ``None``
        leaves the stored ``snapshot_version`` (``meta.snapshot_version`` is ignored) until
        :meth:`write_snapshot`. Also deletes or restores the whole document (an empty-patch
        entry, ``meta.deleted_at`` set or cleared). The caller normally holds :meth:`write_lock`;
        the store takes it again (re-entrantly) so a commit never interleaves with another's.

        On success the new version is durable; on failure nothing visible changed (readers see
        the previous version, no file is ever half-written).

        Raises ``document-not-found``; ``version-conflict`` (details ``{"doc_id",
        "expected_version", "actual_version"}``) when the stored version is not
        ``entry.version - 1`` (another writer, possibly another process, committed first);
        ``storage-read-failed`` (a corrupt document); ``storage-write-failed``; ``lock-timeout``;
        :exc:`ValueError` when ``meta`` and ``entry`` disagree on the version or
        ``meta.content_size_bytes != len(content)``.
        """
        ...

    def restore(self, meta: DocumentMeta, entries: Iterable[JournalEntry], content: bytes) -> None:
        """Store a whole document as it was elsewhere (``schemadoc import``): its journal and its current version.

        ``entries`` are versions 1 to ``meta.version`` in order (drawn one at a time, so a long
        journal is never held whole), ``content`` is the JSON of ``meta.version`` and becomes the
        snapshot, and ``meta`` is kept as given: ``created_at``, ``modified_at``, ``deleted_at``
        (``meta.snapshot_version`` is ignored). Each entry is kept as it was, ``info`` included.

        Atomic like :meth:`create`: after a failure or a crash the document exists whole or not at
        all. Takes the document's write lock itself. Raises ``storage-write-failed`` when a
        document with ``meta.doc_id`` already exists (nothing changed) or the write fails,
        ``invalid-doc-id``, and :exc:`ValueError` when the entries are not versions 1 to
        ``meta.version`` or ``meta.content_size_bytes != len(content)`` (nothing written).
        """
        ...

    def write_snapshot(self, doc_id: str, version: int, content: bytes) -> bool:
        """Make ``content`` (the whole JSON of ``version``, exactly as the service serialised it)
        the document's snapshot; called off the write path.

        Returns ``False`` and changes nothing when the stored snapshot is already at ``version``
        or newer. The snapshot and ``snapshot_version`` change together, atomically: a crash
        leaves the old snapshot or the new one, never a mix. Writers of the document are held
        up only for the final switch, not while the bytes are written. Raises
        ``document-not-found``, ``storage-write-failed`` (nothing changed), ``lock-timeout``,
        and :exc:`ValueError` when ``version`` is above the stored version or below 1.
        """
        ...

    def load(self, doc_id: str) -> StoredDocument:
        """The current meta, the snapshot and the journal entries after it, consistent with each other.

        Takes the write lock briefly (re-entrantly) so that they belong together. Raises
        ``document-not-found``, ``storage-read-failed`` (a corrupt document or a missing half:
        content without meta or meta without content) and ``lock-timeout``.
        """
        ...

    def record_verdict(self, doc_id: str, verdict: Verdict) -> bool:
        """Record a check's ``verdict`` of the document, when it is still at ``verdict.version``; ``False``
        (nothing recorded) when it moved on, since the write that moved it recorded its own.

        Changes no version and no content: the verdict becomes the meta's (:attr:`DocumentMeta.verdict`) until
        the next write. Takes the write lock (re-entrantly). Raises ``document-not-found``,
        ``storage-write-failed`` and ``lock-timeout``.
        """
        ...

    def read_meta(self, doc_id: str) -> DocumentMeta:
        """The document's current meta, read alone (cheap; no lock): its version is the journal's last.

        Raises ``document-not-found`` and ``storage-read-failed`` (unreadable meta, content
        without meta, or a document reported corrupt).
        """
        ...

    def list_metas(self) -> list[DocumentMeta]:
        """The meta of every readable document, sorted by doc_id; deleted ones included (``deleted_at``).

        Documents that cannot be read are left out (:meth:`open` reports them).
        """
        ...

    def read_journal(self, doc_id: str, since_version: int = 0, until_version: int | None = None, *,
                     max_bytes: int | None = None) -> list[JournalEntry]:
        """The journal entries with ``since_version < version <= until_version``, oldest first; with
        ``max_bytes``, only as many as make up ``max_bytes`` of journal lines (the one that reaches it
        included, so at least one), so that a reader can page through big entries in bounded memory.

        Only committed versions are returned (never beyond the meta's version), so
        ``replay(read_journal(doc_id))`` equals the current content. Raises
        ``document-not-found`` and ``storage-read-failed`` (a missing or damaged journal).
        """
        ...

    def write_checkpoint(self, doc_id: str, version: int, content: bytes) -> None:
        """Keep the content of a past version so that old versions can be rebuilt without replaying
        the whole journal. A cache, not a commit: not fsynced; losing one only costs time.
        Bounded: older checkpoints are dropped as :func:`keep_checkpoints` says. Raises
        :exc:`OSError` (callers log it and go on).
        """
        ...

    def read_checkpoint(self, doc_id: str, at_most: int) -> tuple[int, bytes] | None:
        """The newest checkpoint with ``version <= at_most`` as ``(version, content)``, or ``None``."""
        ...

    def write_lock(self, doc_id: str, timeout: float = LOCK_TIMEOUT_SECONDS) -> AbstractContextManager[None]:
        """Exclusive write access to one document, across threads (and processes, for stores that
        can be shared), for the duration of a ``with`` block.

        Re-entrant: the thread that holds it may take it again. Released at the end of the
        block, also when it raises; a dead process's locks are released by the OS. The
        document need not exist (a creation takes it too). Raises ``lock-timeout`` (details
        ``{"doc_id", "timeout_seconds"}``) when not acquired within ``timeout`` seconds.
        """
        ...

    def purge(self, doc_id: str) -> None:
        """Remove every trace of the document (content, meta, journal, lock): not restorable.

        Works on corrupt documents too. Raises ``document-not-found`` when nothing of the
        document exists, ``storage-write-failed`` when a file cannot be removed.
        """
        ...
