"""Whole documents: creation from the schema's defaults, the listing, delete, undelete and purge."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from ulid import ULID

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch, check_patch
from schemadoc.ops.journal import utc_now
from schemadoc.ops.limits import check_string_lengths, scan_argument
from schemadoc.reading.examples import fill_defaults
from schemadoc.service.checks import check_int, check_version
from schemadoc.service.core import ServiceCore
from schemadoc.service.inventory import status_of
from schemadoc.service.models import ChangeEvent, DocState, DocumentList
from schemadoc.storage.base import DocumentMeta, check_doc_id
from schemadoc.validation import ValidationReport
from schemadoc.validation.suggestions import fold_fixes

__all__ = ["Documents"]

log = logging.getLogger("schemadoc.service")

_NO_CONTENT: Any = object()


class Documents(ServiceCore):
    """The use cases of a document as a whole (each one journaled, apart from purge)."""

    def create_document(self, content: Any = _NO_CONTENT, *, actor: str | None = None,
                        placeholders: Sequence[str] = ()) -> tuple[str, Any, DocumentMeta, ValidationReport]:
        """A new document at version 1: from the schema's defaults (the spec's create), or, as an extension,
        from ``content`` with the defaults of its absent members filled in, validated whole (every violation
        reported at once, nothing stored). ``actor``: who creates it, recorded in the journal entry (every
        write of this class takes it: a token's name, a door or a command, as the caller decides)."""
        if content is _NO_CONTENT:
            try:
                content = self.schema.defaults()
            except SchemaDocError as error:
                if error.code != "required-field-without-default":
                    raise
                raise SchemaDocError(error.code, error.message, error.details, remediation=(
                    "Pass the document as `content` to document_create (REST: a JSON body with \"content\"): "
                    "absent members get their defaults, the fields in details.paths must be given. Or give those "
                    "fields a default in the schema.")) from None
            report = self.validator.validate(content)
            report.raise_if_invalid(reason="the schema's defaults do not validate against the schema itself")
        else:
            scan = scan_argument(content, max_json_depth=self.max_json_depth,
                                 max_string_length=self.max_string_length)
            scan.check_depth(self.max_json_depth, "content")
            if scan.too_long:
                check_string_lengths(content, self.max_string_length, "content")
            content = fill_defaults(content, (), self.schema)
            report = self.validator.validate(content)
            try:
                report.raise_if_invalid(content_given=True)
            except SchemaDocError as error:
                details = error.details
                fix, details["violations"] = fold_fixes(details["violations"])
                if fix:
                    details["suggested_call"] = self._create_again(content, fix)
                suggestion = ("Send details.suggested_call as it is (replace the values in its placeholders with real "
                              "content first), or fix each violation and send the content again." if fix
                              else "Fix each violation and send the content again.")
                more = f" {error.remediation}" if error.remediation else ""
                raise SchemaDocError(error.code, error.message, details, remediation=suggestion + more) from None
        doc_id = str(ULID())
        with self.store.write_lock(doc_id, self.lock_timeout):
            meta = self._commit(doc_id, None, content, [{"op": "add", "path": "", "value": content}],
                                "create", {}, kind="created", actor=actor,
                                marks=[mark for mark in placeholders if isinstance(mark, str)])
        return doc_id, content, meta, report

    def _create_again(self, content: Any, fix: list[dict[str, Any]]) -> dict[str, Any]:
        """``document_create`` with the content corrected by ``fix`` (and whether that passes validation)."""
        try:
            corrected = apply_patch(content, check_patch(fix)).document
        except SchemaDocError:
            return {"tool": "document_apply_patch", "resolves": False, "arguments": {"patch": fix}}
        return self._suggestion(content, fix, "document_create", {"content": corrected})

    def list_documents(self, limit: int = 100, offset: int = 0, *, valid: bool | None = None) -> DocumentList:
        """Live documents, by doc_id, a page at a time; ``valid``: only those the served schema is known to accept
        (``True``) or refuse (``False``); documents not checked yet under it are in neither."""
        check_int("limit", limit, 1, 1000)
        check_int("offset", offset, 0, None)
        metas = [meta for meta in self.store.list_metas() if meta.deleted_at is None]
        if valid is not None:
            wanted = "valid" if valid else "invalid"
            metas = [meta for meta in metas if status_of(meta, self.schema.digest) == wanted]
        return DocumentList(metas[offset: offset + limit], len(metas), offset, limit)

    def delete_document(self, doc_id: str, version: int, *, actor: str | None = None) -> DocumentMeta:
        """Soft-delete a whole document (journaled; reads say document-not-found until undeleted)."""
        doc_id = check_doc_id(doc_id)
        version = check_version(version)
        with self._locked(doc_id, version) as state:
            return self._commit(doc_id, state, state.content, [], "delete_document", {},
                                kind="deleted", deleted_at=utc_now(), size=state.meta.content_size_bytes,
                                actor=actor)

    def undelete_document(self, doc_id: str, *, actor: str | None = None) -> DocumentMeta:
        """Bring a deleted document back with its whole history (journaled as a new version)."""
        doc_id = check_doc_id(doc_id)
        with self._deleted(doc_id, f"Document {doc_id} is not deleted.",
                           "Only a deleted document can be restored.") as state:
            return self._commit(doc_id, state, state.content, [], "undelete_document", {},
                                kind="undeleted", deleted_at=None, size=state.meta.content_size_bytes,
                                actor=actor)

    def purge_document(self, doc_id: str, *, actor: str | None = None) -> None:
        """Really remove a deleted document's files. Only deleted documents can be purged. No journal is left to
        hold the ``actor``: the server log keeps it (one line per purge)."""
        doc_id = check_doc_id(doc_id)
        with self._deleted(doc_id, f"Document {doc_id} must be deleted before it is purged.",
                           "Delete it with document_delete first; purging cannot be undone.") as state:
            self.store.purge(doc_id)
            self.snapshots.forget(doc_id)
            self._forget(doc_id)
            log.info("document %s purged at version %d by %s", doc_id, state.meta.version, actor or "an unnamed caller")
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
