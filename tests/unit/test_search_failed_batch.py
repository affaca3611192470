"""A batch of index changes that fails for another reason than an outage loses nothing (docs/search.md).

An index extension that raises for the units of one document (its text says ``POISON``) stands for any
failure one document causes. The batch is applied again one document at a time: the other documents of the
batch are indexed; the bad one is set aside (logged once, counted in ``failures()`` and the metrics), marked in
the index (so that the next start-up indexes it whole) and indexed again from the store by the writer thread
once it can be. On the files store (a SQLite file) and PostgreSQL (skipped with the reason when absent)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pg_support import throwaway_schema

from schemadoc.interfaces.http.metrics import Metrics
from schemadoc.schema import LoadedSchema, load_schema
from schemadoc.search import failures as failures_module
from schemadoc.search.backends import SqliteBackend
from schemadoc.search.extension import IndexTransaction, RankedUnit
from schemadoc.search.index import SearchIndex
from schemadoc.search.text import parse_text_query
from schemadoc.search.units import TextUnit
from schemadoc.service import DocumentService
from schemadoc.storage import store_for
from schemadoc.storage.base import DocumentMeta

BOOK = Path(__file__).resolve().parents[2] / "src" / "schemadoc" / "examples" / "book.schema.json"
WAIT_SECONDS = 60.0
"""How long a test waits for the writer thread (a bound on a hang, not a measure: it polls)."""


class Poison:
    """An index extension that raises while ``armed`` for any document one of whose units says ``POISON``."""

    name = "poison"
    generation = "1"

    def __init__(self) -> None:
        self.armed = True
        self.raised = 0

    def create_tables(self, tx: IndexTransaction) -> None:
        return None

    def on_units_changed(self, tx: IndexTransaction, doc_id: str, removed: Sequence[str],
                         added: Sequence[TextUnit]) -> None:
        if self.armed and any("POISON" in unit.text for unit in added):
            self.raised += 1
            raise RuntimeError(f"the poison extension refuses {doc_id}")

    def on_document_removed(self, tx: IndexTransaction, doc_id: str) -> None:
        return None

    def on_cleared(self, tx: IndexTransaction) -> None:
        return None

    def rank(self, tx: IndexTransaction, query: str, *, doc_id: str | None, below: str, limit: int,
             text_rank: Callable[[int], list[RankedUnit]]) -> list[RankedUnit]:
        return []


@pytest.fixture(scope="module")
def schema() -> LoadedSchema:
    return load_schema(BOOK)


Factory = Callable[[Poison], DocumentService]


@pytest.fixture(params=["files", "postgres"])
def open_service(request: pytest.FixtureRequest, schema: LoadedSchema, tmp_path: Path) -> Iterator[Factory]:
    """Opens a service with the given extension; called again, another service on the same store (a restart)."""
    opened: list[DocumentService] = []

    def factory_for(url: str | None) -> Factory:
        def make(extension: Poison) -> DocumentService:
            service = DocumentService(schema, store_for(tmp_path / "docs", url), memory_budget=1 << 20)
            service.search_extensions.append(extension)
            service.open()
            opened.append(service)
            return service
        return make

    if request.param == "postgres":
        with throwaway_schema() as url:
            yield factory_for(url)
            for service in opened:
                service.close()
        return
    yield factory_for(None)
    for service in opened:
        service.close()


def found(service: DocumentService, word: str) -> set[str]:
    index = service.search_index
    return {hit.doc_id for hit in index.search(parse_text_query(word), limit=100).hits}


def indexed_version(service: DocumentService, doc_id: str) -> int | None:
    with service.search_index.backend.transaction(write=False) as tx:
        rows = tx.execute("SELECT version FROM search_docs WHERE doc_id = ?", [doc_id])
    return int(rows[0][0]) if rows else None


def marks(service: DocumentService) -> set[str]:
    """The documents the index marks as failed, for the next start-up."""
    with service.search_index.backend.transaction(write=False) as tx:
        rows = tx.execute("SELECT key FROM search_state WHERE key LIKE ?", ["failed:%"])
    return {str(row[0]).removeprefix("failed:") for row in rows}


def until(condition: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not condition():
        assert time.monotonic() < deadline, "the writer thread did not catch up"
        time.sleep(0.05)


def test_one_bad_document_does_not_drop_the_others_and_is_caught_up(open_service: Factory,
                                                                      monkeypatch: pytest.MonkeyPatch,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(failures_module, "RETRY_FAILED_SECONDS", 0.2)
    poison = Poison()
    service = open_service(poison)
    index = service.search_index
    good = [service.create_document({"title": f"harbour {i}"})[0] for i in range(3)]
    caplog.set_level(logging.WARNING, logger="schemadoc.search")
    with index._apply_lock:  # the writer thread waits: every change below is one batch
        bad = service.create_document({"title": "POISON lighthouse"})[0]
        more = [service.create_document({"title": f"lighthouse {i}"})[0] for i in range(3)]
        service.update_node(good[0], "/title", "lighthouse keeper", 1)
    index.sync()
    assert found(service, "lighthouse") == {*more, good[0]}  # the others of the batch are indexed
    assert found(service, "POISON") == set()
    assert index.failures() == {"failed": 1, "failures": 1, "caught_up": 0}
    assert set(index.failed_documents()) == {bad}
    assert marks(service) == {bad}
    metrics = Metrics(service)
    exposed = metrics.exposition().decode()
    assert "schemadoc_search_index_failed_documents 1.0" in exposed
    assert "schemadoc_search_index_failures_total 1.0" in exposed
    errors = [r for r in caplog.records if r.levelno == logging.ERROR and bad in r.getMessage()]
    assert len(errors) == 1
    # the writer thread tries again from the store while it still fails: not logged again, not counted again
    until(lambda: poison.raised >= 3)
    assert [r for r in caplog.records if r.levelno == logging.ERROR and bad in r.getMessage()] == errors
    assert index.failures()["failures"] == 1
    # another batch held up by the same document: the others indexed, nothing said again
    said = [r for r in caplog.records if r.levelno >= logging.WARNING]
    with index._apply_lock:
        service.update_node(bad, "/title", "POISON again", 1)
        extra = service.create_document({"title": "lighthouse extra"})[0]
    index.sync()
    assert extra in found(service, "lighthouse")
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == said
    assert index.failures()["failures"] == 1
    # once the document can be indexed, the writer thread catches it up without any write to it
    poison.armed = False
    until(lambda: index.failures()["failed"] == 0)
    assert found(service, "again") == {bad}  # its last version, from the store
    assert index.failures() == {"failed": 0, "failures": 1, "caught_up": 1}
    assert marks(service) == set()
    assert "schemadoc_search_index_failed_documents 0.0" in metrics.exposition().decode()
    metrics.close()


def test_a_document_still_failing_when_the_process_ends_is_indexed_at_the_next_start(open_service: Factory) -> None:
    poison = Poison()
    service = open_service(poison)
    doc_id = service.create_document({"title": "harbour"})[0]
    other = service.create_document({"title": "harbour too"})[0]
    assert found(service, "harbour") == {doc_id, other}
    service.update_node(doc_id, "/title", "POISON lantern", 1)
    service.update_node(other, "/title", "lantern", 1)
    service.search_index.sync()
    assert found(service, "lantern") == {other}
    assert marks(service) == {doc_id}  # any later start indexes it whole
    assert indexed_version(service, doc_id) == 1  # its old entry, as it was, still answers meanwhile
    assert found(service, "harbour") == {doc_id}
    service.close()
    again = open_service(_disarmed())
    assert found(again, "lantern") == {doc_id, other}
    assert found(again, "harbour") == set()
    assert indexed_version(again, doc_id) == 2
    assert again.search_index.failures()["failed"] == 0
    assert marks(again) == set()


def test_a_document_that_fails_at_start_up_does_not_stop_the_start(open_service: Factory) -> None:
    first = open_service(_disarmed())
    doc_id = first.create_document({"title": "POISON storm"})[0]
    other = first.create_document({"title": "storm"})[0]
    first.close()
    poison = Poison()
    # the index is lost: the next start indexes every document, one of which fails
    second = open_service(poison)
    with second.search_index.backend.transaction() as tx:
        for table in ("search_docs", "search_units", "search_fields"):
            tx.execute(f"DELETE FROM {table}")
    second.close()
    third = open_service(poison)
    assert found(third, "storm") == {other}
    assert set(third.search_index.failed_documents()) == {doc_id}
    assert marks(third) == {doc_id}
    poison.armed = False
    assert third.search_index.retry_failed() == 0
    assert found(third, "storm") == {doc_id, other}
    assert marks(third) == set()


def _disarmed() -> Poison:
    poison = Poison()
    poison.armed = False
    return poison


# -- the same, as a property over random batches (SQLite in memory, no store: the index alone) -------------------

def _meta(doc_id: str, version: int) -> DocumentMeta:
    return DocumentMeta(doc_id, version, "urn:test", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z", 20)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 7), st.booleans()), min_size=1, max_size=20))
def test_every_good_document_of_a_batch_is_indexed_whatever_fails(writes: list[tuple[int, bool]]) -> None:
    """Random writes (a document, poisoned or not) in one batch. After it: a document none of whose writes was
    poisoned is found by its last word, the others are set aside. A retry from the store while the poison still
    acts catches up those whose last content is good; once it stops acting, every document."""
    poison = Poison()
    stored: dict[str, tuple[DocumentMeta, Any]] = {}
    poisoned_once: set[str] = set()
    index = SearchIndex(SqliteBackend(None), [], lambda meta: None)
    index.add_extension(poison)
    index.open([], lambda doc_id: stored[doc_id], lambda *_: [])

    def found_by_last_word() -> set[str]:
        out = set()
        for doc_id, (meta, _) in stored.items():
            hits = index.search(parse_text_query(f"w{meta.version}"), doc_ids=[doc_id], limit=5).hits
            if hits:
                out.add(doc_id)
        return out

    try:
        with index._apply_lock:  # one batch
            for number, poisoned in writes:
                doc_id = f"01ARZ3NDEKTSV4RRFFQ69G5F{number:02d}"
                version = stored[doc_id][0].version + 1 if doc_id in stored else 1
                content = {"title": f"{'POISON' if poisoned else 'calm'} w{version}"}
                stored[doc_id] = (_meta(doc_id, version), content)
                if poisoned:
                    poisoned_once.add(doc_id)
                index.committed(doc_id, stored[doc_id][0], content, None)
        index.sync()
        assert found_by_last_word() == set(stored) - poisoned_once
        assert set(index.failed_documents()) == poisoned_once
        last_poisoned = {doc_id for doc_id, (_, content) in stored.items() if "POISON" in content["title"]}
        assert index.retry_failed() == len(last_poisoned)
        assert found_by_last_word() == set(stored) - last_poisoned
        poison.armed = False
        assert index.retry_failed() == 0
        assert found_by_last_word() == set(stored)
        assert index.failures() == {"failed": 0, "failures": len(poisoned_once), "caught_up": len(poisoned_once)}
    finally:
        index.close()
