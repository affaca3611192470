"""The semantic extension on every store (memory, files, PostgreSQL) through the service: a write embeds only the
units it changed (counted), removed units and documents leave the ranking, the cells are made and kept, and a
restart finds the vectors where it left them (nothing embedded again) or, with the index gone, rebuilds them."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pg_support import throwaway_schema

from schemadoc.schema import LoadedSchema, load_schema
from schemadoc.search import hybrid, semantic
from schemadoc.search.units import text_units
from schemadoc.service import DocumentService
from schemadoc.storage import store_for
from schemadoc.storage.memory import MemoryDocumentStore

pytest.importorskip("wordllama", reason="the semantic extra is not installed (pip install 'schemadoc[semantic]')")

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import search_quality

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
Opened = tuple[DocumentService, semantic.SemanticRanking]
Factory = Callable[[], Opened]


@pytest.fixture(scope="module")
def schema() -> LoadedSchema:
    return load_schema(BOOK_SCHEMA)


@pytest.fixture(params=["memory", "files", "postgres"])
def open_service(request: pytest.FixtureRequest, schema: LoadedSchema, tmp_path: Path,
                 monkeypatch: pytest.MonkeyPatch) -> Iterator[Factory]:
    """A service with the semantic extensions; called again, another one on the same store (a restart). Cells
    are made from 20 vectors, 3 of them, every cell probed: the coarse stage runs, the answers stay exact."""
    monkeypatch.setattr(semantic, "TRAIN_AT", 20)
    monkeypatch.setattr(semantic, "CELLS", 3)
    monkeypatch.setattr(semantic, "SCAN_MIN", 10**9)
    opened: list[DocumentService] = []
    memory: list[Any] = []

    def factory_for(url: str | None) -> Factory:
        def make() -> Opened:
            if request.param == "memory":
                memory.append(memory[0] if memory else MemoryDocumentStore())
                store = memory[-1]
            else:
                store = store_for(tmp_path / "docs", url)
            service = DocumentService(schema, store)
            extensions = hybrid.default_extensions()
            service.search_extensions.extend(extensions)
            service.open()
            opened.append(service)
            assert isinstance(extensions[0], semantic.SemanticRanking)
            return service, extensions[0]
        make.kind = request.param  # type: ignore[attr-defined]
        return make

    try:
        if request.param == "postgres":
            with throwaway_schema() as url:
                yield factory_for(url)
                for service in opened:
                    service.close()
            return
        yield factory_for(None)
    finally:
        for service in opened:
            service.close()


def settled(service: DocumentService, check: Callable[[], bool]) -> None:
    """Wait (at most 30 s) until ``check`` holds: what a test reads of the extension's own counters is written by
    the index's writer thread, off the write path."""
    deadline = time.monotonic() + 30
    while not check():
        assert time.monotonic() < deadline, "the index did not catch up"
        time.sleep(0.05)


def ranked(service: DocumentService, query: str, ranking: str = "semantic", **scope: Any) -> list[tuple[str, str]]:
    return [(hit.doc_id, hit.pointer) for hit in service.search(query, ranking=ranking, **scope).hits]


def test_meaning_found_kept_and_forgotten_on_every_store(open_service: Factory) -> None:
    service, extension = open_service()
    corpus = search_quality.make_corpus(books=3)
    ids = [service.create_document(book)[0] for book in corpus.books]
    settled(service, lambda: extension.units_embedded > 0 and bool(ranked(service, "the keeper")))
    meaningful = sum(1 for book in corpus.books for unit in text_units(book)
                     if semantic.meaningful(unit.text))
    assert extension.units_embedded == meaningful
    # the cells were made: the table held more than TRAIN_AT vectors
    assert extension._cells is not None and extension._cells[1] is not None and len(extension._cells[1]) == 3

    wick = "keeper trimmed the wick of the lamp"
    target = next(q for q in corpus.queries if q.text == wick)
    lamp = (ids[target.book], target.section + "/paragraphs/0/text")
    assert ranked(service, wick)[0] == lamp
    assert ranked(service, wick, ranking="hybrid")[0] == lamp
    in_section = ranked(service, "keeping a lighthouse lit", doc_ids=[lamp[0]], node_path=target.section)
    assert in_section[0] == lamp and {hit[0] for hit in in_section} == {lamp[0]}

    # a leaf write embeds that leaf only
    version = service.store.read_meta(lamp[0]).version
    service.update_node(lamp[0], lamp[1], "The tide tables are printed each January for the harbour master.",
                        version)
    settled(service, lambda: ranked(service, "when the tides are published")[0] == lamp)
    assert extension.units_embedded == meaningful + 1
    assert ranked(service, wick)[0] != lamp
    assert ranked(service, "when the tides are published")[0] == lamp

    # a removed document leaves the ranking
    other = next(q for q in corpus.queries if q.text == "preparing bread at home")
    bread = (ids[other.book], other.section + "/paragraphs/0/text")
    assert ranked(service, "knead the dough and leave it to rise")[0] == bread
    service.delete_document(bread[0], service.store.read_meta(bread[0]).version)
    settled(service, lambda: ranked(service, "knead the dough and leave it to rise")[0] != bread)
    assert all(doc != bread[0] for doc, _ in ranked(service, "knead the dough and leave it to rise"))


def test_a_restart_keeps_the_vectors_and_a_lost_index_rebuilds_them(open_service: Factory, tmp_path: Path) -> None:
    service, first = open_service()
    corpus = search_quality.make_corpus(books=2)
    for book in corpus.books:
        service.create_document(book)
    settled(service, lambda: len(ranked(service, "keeper trimmed the wick of the lamp")) > 3)
    before = ranked(service, "stargazing after dark")
    embedded = first.units_embedded
    service.close()
    again, extension = open_service()
    assert extension.fed.wait(60)  # a new index (the memory store's) is fed in the background
    assert ranked(again, "stargazing after dark") == before
    kind = open_service.kind  # type: ignore[attr-defined]
    if kind == "memory":  # its index lives in memory: the new service builds it again
        assert extension.units_embedded == embedded  # each unit once (a fresh index feeds its extensions once)
        return
    assert extension.units_embedded == 0  # the vectors were where the first service left them
    if kind == "files":
        again.close()
        for path in (tmp_path / "docs").glob("search-index.sqlite3*"):
            path.unlink()
        rebuilt, extension = open_service()
        assert extension.fed.wait(60)
        assert ranked(rebuilt, "stargazing after dark") == before
        assert extension.units_embedded == embedded  # each unit once (a fresh index feeds its extensions once)
