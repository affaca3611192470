"""The helpers of the store contract suite: real documents, real patches, threads."""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any

import jsonpatch
import orjson
from ulid import ULID

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry, replay, utc_now
from schemadoc.storage.base import DocumentMeta, DocumentStore

__all__ = [
    "BAD_DOC_IDS",
    "SCHEMA_URI",
    "SHORT_TIMEOUT",
    "codes",
    "commit_patch",
    "create_document",
    "current_content",
    "delete_document",
    "in_thread",
    "new_doc_id",
]

SCHEMA_URI = "https://example.com/schemas/book.schema.json"

BAD_DOC_IDS: list[Any] = [
    "",
    "not-a-ulid",
    "../../../etc/passwd",
    "01ARZ3NDEKTSV4RRFFQ69G5FA",  # 25 characters
    "01ARZ3NDEKTSV4RRFFQ69G5FAVX",  # 27 characters
    "01ARZ3NDEKTSV4RRFFQ69G5F/V",  # a separator inside
    "01ARZ3NDEKTSV4RRFFQ69G5FAU",  # U is not Crockford base32
    "80000000000000000000000000",  # overflows 128 bits
    None,
    12345,
]

SHORT_TIMEOUT = 0.2  # seconds: lock timeouts in tests


def new_doc_id() -> str:
    """A fresh doc_id (ULID, canonical form)."""
    return str(ULID())


def create_document(store: DocumentStore, content: Any = None, *, doc_id: str | None = None) -> DocumentMeta:
    """Create a document at version 1 (the default content is a small book) and return its meta."""
    if content is None:
        content = {"title": "A book", "chapters": [{"title": "One", "paragraphs": ["It begins."]}]}
    data = orjson.dumps(content)
    now = utc_now()
    meta = DocumentMeta(doc_id=doc_id or new_doc_id(), version=1, schema_uri=SCHEMA_URI, created_at=now,
                        modified_at=now, content_size_bytes=len(data))
    store.create(meta, JournalEntry(1, "create", [{"op": "add", "path": "", "value": content}], now), data)
    return meta


def current_content(store: DocumentStore, doc_id: str) -> Any:
    """The current version's content: the loaded snapshot with the journal entries after it replayed."""
    stored = store.load(doc_id)
    assert [entry.version for entry in stored.entries] == list(
        range(stored.meta.snapshot_version + 1, stored.meta.version + 1))
    return replay(stored.entries, start=orjson.loads(stored.content), start_version=stored.meta.snapshot_version,
                  copy=False)


def commit_patch(store: DocumentStore, meta: DocumentMeta, patch: list[dict[str, Any]], *,
                 op: str = "patch", info: dict[str, Any] | None = None, inline: bool = True) -> DocumentMeta:
    """Apply ``patch`` to the current content, commit it as the next version, return the new meta.

    ``inline`` passes the new content along (the snapshot becomes current); otherwise the
    snapshot lags and the returned meta keeps the previous ``snapshot_version``.
    """
    content = jsonpatch.apply_patch(current_content(store, meta.doc_id), patch)
    data = orjson.dumps(content)
    now = utc_now()
    new_meta = replace(meta, version=meta.version + 1, modified_at=now, content_size_bytes=len(data))
    if inline:
        new_meta = replace(new_meta, snapshot_version=new_meta.version)
    else:
        new_meta = replace(new_meta, snapshot_version=store.read_meta(meta.doc_id).snapshot_version)
    entry = JournalEntry(new_meta.version, op, patch, now, info or {})
    store.commit(new_meta, entry, data if inline else None)
    return new_meta


def delete_document(store: DocumentStore, meta: DocumentMeta, *, undelete: bool = False,
                    inline: bool = True) -> DocumentMeta:
    """Commit a whole-document delete (or restore): empty patch, same content, ``deleted_at`` set/cleared."""
    now = utc_now()
    new_meta = replace(meta, version=meta.version + 1, modified_at=now, deleted_at=None if undelete else now)
    data = orjson.dumps(current_content(store, meta.doc_id)) if inline else None
    snapshot_version = new_meta.version if inline else store.read_meta(meta.doc_id).snapshot_version
    new_meta = replace(new_meta, snapshot_version=snapshot_version)
    op = "undelete_document" if undelete else "delete_document"
    store.commit(new_meta, JournalEntry(new_meta.version, op, [], now), data)
    return new_meta


def in_thread(target: Any) -> list[BaseException]:
    """Run ``target`` in another thread, wait for it, return what it raised."""
    raised: list[BaseException] = []

    def run() -> None:
        try:
            target()
        except BaseException as error:  # handed back to the test
            raised.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    thread.join(30)
    assert not thread.is_alive(), "the other thread is stuck"
    return raised


def codes(errors: list[BaseException]) -> list[str]:
    return [error.code if isinstance(error, SchemaDocError) else repr(error) for error in errors]
