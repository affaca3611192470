"""Whole documents: creation from the schema's defaults, the listing, delete, undelete and purge."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ulid import ULID

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import utc_now
from schemadoc.service.checks import check_int, check_version
from schemadoc.service.core import ServiceCore
from schemadoc.service.models import ChangeEvent, DocState, DocumentList
from schemadoc.storage.base import DocumentMeta, check_doc_id
from schemadoc.validation import ValidationReport

__all__ = ["Documents"]


class Documents(ServiceCore):
    """The use cases of a document as a whole (each one journaled, apart from purge)."""

    def create_document(self) -> tuple[str, Any, DocumentMeta, ValidationReport]:
        """A new document from the schema's defaults, at version 1."""
        content = self.schema.defaults()
        report = self.validator.validate(content)
        report.raise_if_invalid(reason="the schema's defaults do not validate against the schema itself")
        doc_id = str(ULID())
        with self.store.write_lock(doc_id, self.lock_timeout):
            meta = self._commit(doc_id, None, content, [{"op": "add", "path": "", "value": content}],
                                "create", {}, kind="created")
        return doc_id, content, meta, report

    def list_documents(self, limit: int = 100, offset: int = 0) -> DocumentList:
        check_int("limit", limit, 1, 1000)
        check_int("offset", offset, 0, None)
        metas = [meta for meta in self.store.list_metas() if meta.deleted_at is None]
        return DocumentList(metas[offset: offset + limit], len(metas), offset, limit)

    def delete_document(self, doc_id: str, version: int) -> DocumentMeta:
        """Soft-delete a whole document (journaled; reads say document-not-found until undeleted)."""
        doc_id = check_doc_id(doc_id)
        version = check_version(version)
        with self._locked(doc_id, version) as state:
            return self._commit(doc_id, state, state.content, [], "delete_document", {},
                                kind="deleted", deleted_at=utc_now(), size=state.meta.content_size_bytes)

    def undelete_document(self, doc_id: str) -> DocumentMeta:
        """Bring a deleted document back with its whole history (journaled as a new version)."""
        doc_id = check_doc_id(doc_id)
        with self._deleted(doc_id, f"Document {doc_id} is not deleted.",
                           "Only a deleted document can be restored.") as state:
            return self._commit(doc_id, state, state.content, [], "undelete_document", {},
                                kind="undeleted", deleted_at=None, size=state.meta.content_size_bytes)

    def purge_document(self, doc_id: str) -> None:
        """Really remove a deleted document's files. Only deleted documents can be purged."""
        doc_id = check_doc_id(doc_id)
        with self._deleted(doc_id, f"Document {doc_id} must be deleted before it is purged.",
                           "Delete it with document_delete first; purging cannot be undone.") as state:
            self.store.purge(doc_id)
            self.snapshots.forget(doc_id)
            self._forget(doc_id)
            self._publish(ChangeEvent(doc_id, state.meta.version, "purged", None))

    @contextmanager
    def _deleted(self, doc_id: str, not_deleted: str, remediation: str) -> Iterator[DocState]:
        """A deleted document's state under its write lock; ``conflict`` (``not_deleted``) when it is not deleted."""
        self.store.read_meta(doc_id)
        with self.store.write_lock(doc_id, self.lock_timeout):
            state = self._state(doc_id, include_deleted=True)
            if state.meta.deleted_at is None:
                raise SchemaDocError("conflict", not_deleted, {"doc_id": doc_id}, remediation=remediation)
            yield state
