"""The store contract: the schema digest and verdict each version records, and a check's verdict recorded
without a new version."""

from __future__ import annotations

from dataclasses import replace

import pytest
from contract.storage.helpers import commit_patch, create_document, new_doc_id

from schemadoc.errors import SchemaDocError
from schemadoc.storage.base import DocumentStore, Verdict

__all__ = ["VerdictsContract"]

OLD = "sha256:" + "a" * 64
NEW = "sha256:" + "b" * 64
REFUSED = [{"code": "required-missing", "path": "", "message": "isbn is required"},
           {"code": "max-length", "path": "/title", "message": "at most 3 characters"}]


class VerdictsContract:
    """Digests and verdicts travel with the meta; a check's verdict is kept only for the version it judged."""

    def test_a_commit_keeps_the_digest_and_verdict_it_is_given(self, store: DocumentStore) -> None:
        meta = create_document(store)
        invalid = Verdict.of(2, OLD, REFUSED, 2)
        helper_meta = commit_patch(store, replace(meta, schema_digest=OLD, verdict=invalid),
                                   [{"op": "replace", "path": "/title", "value": "B"}], inline=False)
        for read in (store.read_meta(meta.doc_id), store.load(meta.doc_id).meta, store.list_metas()[0]):
            assert (read.schema_digest, read.verdict) == (OLD, invalid)
        valid = Verdict(3, OLD)
        commit_patch(store, replace(helper_meta, verdict=valid), [{"op": "replace", "path": "/title", "value": "C"}])
        read = store.read_meta(meta.doc_id)
        assert (read.version, read.snapshot_version, read.schema_digest, read.verdict) == (3, 3, OLD, valid)

    def test_a_checks_verdict_is_recorded_without_a_new_version(self, store: DocumentStore) -> None:
        meta = create_document(store)
        before = store.read_meta(meta.doc_id)
        journal = store.read_journal(meta.doc_id)
        checked = Verdict.of(1, NEW, REFUSED, 2, checked_at="2030-01-01T00:00:00.000Z")
        assert store.record_verdict(meta.doc_id, checked) is True
        after = store.read_meta(meta.doc_id)
        assert after == replace(before, verdict=checked)
        assert store.load(meta.doc_id).meta == after == store.list_metas()[0]
        assert store.read_journal(meta.doc_id) == journal

    def test_a_verdict_of_a_version_that_moved_on_is_not_recorded_and_a_write_replaces_a_recorded_one(
            self, store: DocumentStore) -> None:
        meta = create_document(store)
        store.record_verdict(meta.doc_id, Verdict.of(1, NEW, REFUSED, 2))
        second = commit_patch(store, replace(meta, schema_digest=NEW, verdict=Verdict(2, NEW)),
                              [{"op": "replace", "path": "/title", "value": "B"}], inline=False)
        assert store.read_meta(meta.doc_id).verdict == Verdict(2, NEW)
        assert store.record_verdict(meta.doc_id, Verdict.of(1, NEW, REFUSED, 2)) is False
        assert store.read_meta(meta.doc_id) == store.load(meta.doc_id).meta
        assert store.read_meta(meta.doc_id).verdict == second.verdict

    def test_recording_a_verdict_of_a_missing_document_is_document_not_found(self, store: DocumentStore) -> None:
        with pytest.raises(SchemaDocError) as caught:
            store.record_verdict(new_doc_id(), Verdict(1, NEW))
        assert caught.value.code == "document-not-found"
