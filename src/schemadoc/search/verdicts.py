"""The ``valid`` column of the search index and the index's own state (``search_state``): a document's verdict as
the served schema reads it, the served schema's digest the index follows, and the verdicts a process without an
index of its own (``schemadoc check --record``) writes into a shared one."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from schemadoc.search.backends import Backend
from schemadoc.search.extension import IndexTransaction
from schemadoc.storage.base import DocumentMeta

__all__ = ["Metas", "index_verdicts", "put_state", "served_digest", "valid_code", "verdict_status"]

Metas = Callable[[list[str]], dict[str, DocumentMeta]]
"""The current metas of some documents, read from the store itself (those gone left out)."""
_VERDICT_BATCH = 200
"""Documents whose verdicts :func:`index_verdicts` writes in one transaction."""


def put_state(tx: IndexTransaction, key: str, value: str) -> None:
    """One statement, not a delete then an insert: two servers starting together both found no row to delete, and
    the second insert failed on the key."""
    tx.execute("INSERT INTO search_state (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
               "excluded.value", [key, value])


def valid_code(valid: bool | None) -> int | None:
    return None if valid is None else int(valid)


def verdict_status(meta: DocumentMeta, digest: str) -> bool | None:
    """What the schema of ``digest`` is known to say of the document at its version (None: not checked yet)."""
    verdict = meta.verdict
    if verdict is None or verdict.digest != digest or verdict.version != meta.version:
        return None
    return verdict.valid


def served_digest(backend: Backend) -> str | None:
    """The digest of the schema the index's ``valid`` column follows (the one its servers serve), as the last of them
    to open it recorded it; None when none recorded one."""
    with backend.transaction(write=False) as tx:
        rows = tx.execute("SELECT value FROM search_state WHERE key = 'schema'")
    return str(rows[0][0]) if rows else None


def index_verdicts(backend: Backend, doc_ids: Sequence[str], reread: Metas) -> int:
    """Write into a shared index the verdicts a process without an index of its own recorded in the store
    (``schemadoc check --record``); how many entries changed.

    Each document's meta is read again from the store with its index lock held (``reread``), and its ``valid``
    set as the served schema (:func:`served_digest`) reads that meta, only where the index holds that very version:
    an entry behind or ahead belongs to a change another process is applying, which reads the meta again under
    the same lock, so a verdict is never written over by an older meta. Nothing is written when the index records
    no served schema (the next start-up compares every verdict)."""
    digest = served_digest(backend)
    if digest is None:
        return 0
    changed = 0
    ordered = sorted(set(doc_ids))
    for start in range(0, len(ordered), _VERDICT_BATCH):
        part = ordered[start:start + _VERDICT_BATCH]
        with backend.transaction() as tx:
            for doc_id in part:  # in doc_id order, as every batch takes them: no deadlock
                backend.lock_document(tx, doc_id)
            for doc_id, meta in sorted(reread(part).items()):
                code = valid_code(verdict_status(meta, digest))
                rows = tx.execute("SELECT valid FROM search_docs WHERE doc_id = ? AND version = ?",
                                  [doc_id, meta.version])
                if rows and rows[0][0] != code:
                    tx.execute("UPDATE search_docs SET valid = ? WHERE doc_id = ? AND version = ?",
                               [code, doc_id, meta.version])
                    changed += 1
    return changed
