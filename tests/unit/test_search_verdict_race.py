"""Two servers on one index, one recording verdicts while the other starts (the race CI once hit on PostgreSQL).

The starting server reads every meta, then applies what differs from the index. A verdict the other server
recorded and indexed in between must survive: the starting server reads the meta again, with the document's
index lock held, before it writes it (``SearchIndex.open``'s ``reread``)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import psycopg
import pytest
from pg_support import URL, drop_schema, fresh_schema_name, require_postgres

from schemadoc.search.backends import PostgresTransaction, SqliteBackend
from schemadoc.search.fields import parse_query
from schemadoc.search.index import SearchIndex
from schemadoc.search.verdicts import put_state
from schemadoc.storage.base import DocumentMeta
from schemadoc.storage.verdict import Verdict

DIGEST = "served-schema"
DOC_IDS = ["01ARZ3NDEKTSV4RRFFQ69G5FA0", "01ARZ3NDEKTSV4RRFFQ69G5FA1", "01ARZ3NDEKTSV4RRFFQ69G5FA2"]


def _status(meta: DocumentMeta) -> bool | None:
    verdict = meta.verdict
    return None if verdict is None or verdict.digest != DIGEST or verdict.version != meta.version else verdict.valid


def _meta(doc_id: str, verdict: Verdict | None = None) -> DocumentMeta:
    return DocumentMeta(doc_id, 1, "urn:test", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", 20, verdict=verdict)


def _invalid(doc_id: str) -> DocumentMeta:
    return _meta(doc_id, Verdict.of(1, DIGEST, [{"code": "max-length", "path": "/title", "message": "too long"}], 1))


def _listed_invalid(index: SearchIndex) -> set[str]:
    return set(index.find(parse_query([["valid", "eq", False]], None, []), limit=100).doc_ids)


@pytest.mark.parametrize("reread", [True, False])
def test_a_verdict_indexed_by_another_server_survives_this_ones_start(tmp_path: Path, reread: bool) -> None:
    path = tmp_path / "index.sqlite3"
    content: dict[str, Any] = {"title": "A title"}
    stored = {doc_id: _meta(doc_id) for doc_id in DOC_IDS}

    def load(doc_id: str) -> tuple[DocumentMeta, Any]:
        return stored[doc_id], content

    first = SearchIndex(SqliteBackend(path), [], _status)
    first.open(list(stored.values()), load, lambda *_: [])
    assert _listed_invalid(first) == set()
    # the second server reads the metas: none has a verdict yet (the index agrees, so nothing to apply)
    read_at_start = list(stored.values())
    # the first server's check records the verdicts of two documents, and indexes them
    for doc_id in DOC_IDS[:2]:
        stored[doc_id] = _invalid(doc_id)
        first.meta_changed(stored[doc_id])
    first.sync()
    assert _listed_invalid(first) == set(DOC_IDS[:2])
    # the second server's view is older for those two, and different from the index for them: it applies them
    second = SearchIndex(SqliteBackend(path), [], _status)
    second.open(read_at_start, load, lambda *_: [],
                (lambda doc_ids: {d: stored[d] for d in doc_ids}) if reread else None)
    try:
        if reread:
            assert _listed_invalid(second) == set(DOC_IDS[:2]) == _listed_invalid(first)
        else:  # what happened before: the older meta written over the newer verdict, which nothing writes again
            assert _listed_invalid(second) == set()
    finally:
        first.close()
        second.close()


def test_a_document_gone_before_the_reread_keeps_the_meta_in_hand(tmp_path: Path) -> None:
    """A meta the re-read no longer finds (purged meanwhile) is applied as read: the purge's own change removes it."""
    path = tmp_path / "index.sqlite3"
    index = SearchIndex(SqliteBackend(path), [], _status)
    index.open([_meta(DOC_IDS[0])], lambda doc_id: (_meta(doc_id), {"title": "x"}), lambda *_: [])
    index.close()
    again = SearchIndex(SqliteBackend(path), [], _status)
    again.open([_invalid(DOC_IDS[0])], lambda doc_id: (_invalid(doc_id), {"title": "x"}), lambda *_: [],
               lambda doc_ids: {})
    try:
        assert _listed_invalid(again) == {DOC_IDS[0]}
    finally:
        again.close()


@pytest.mark.postgres
def test_two_servers_recording_the_index_state_at_once_both_succeed() -> None:
    """Both find no row, both write one: the second waits for the first and then overwrites it (it once failed on
    the key, and one of three servers started together exited with an internal error)."""
    require_postgres()
    schema = fresh_schema_name()
    try:
        with psycopg.connect(URL, autocommit=True) as setup:
            setup.execute(f'CREATE SCHEMA "{schema}"')
            setup.execute(f'CREATE TABLE "{schema}".search_state (key text PRIMARY KEY, value text NOT NULL)')
        with psycopg.connect(URL) as first, psycopg.connect(URL) as second:
            for conn in (first, second):
                conn.execute(f'SET search_path TO "{schema}"')
                conn.commit()
            put_state(PostgresTransaction(first), "members", "[1]")  # not committed yet
            failures: list[BaseException] = []

            def other() -> None:
                try:
                    put_state(PostgresTransaction(second), "members", "[2]")  # waits on the first's row
                    second.commit()
                except BaseException as error:
                    failures.append(error)

            thread = threading.Thread(target=other)
            thread.start()
            thread.join(0.5)
            assert thread.is_alive()  # it waits for the first transaction
            first.commit()
            thread.join(10)
            assert failures == []
            assert first.execute("SELECT value FROM search_state WHERE key = 'members'").fetchone() == ("[2]",)
    finally:
        drop_schema(schema)
