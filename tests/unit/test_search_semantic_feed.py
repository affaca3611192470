"""The semantic extension's feed: over an existing store, the vectors are made in the background after start-up.

The service opens (and answers) before any stored unit is embedded; meanwhile a semantic or hybrid search is
ranked by full text and its answer says so; writes made during the feed end with the vectors of their current
text; the feed reads bounded batches; and a server killed half-way (a real process, SIGKILL) leaves a position
the next start resumes from, embedding only what was left.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from pg_support import throwaway_schema

from schemadoc.schema import LoadedSchema, load_schema
from schemadoc.search import hybrid, semantic, semantic_feed
from schemadoc.search.units import text_units
from schemadoc.service import DocumentService
from schemadoc.storage import store_for

pytest.importorskip("wordllama", reason="the semantic extra is not installed (pip install 'schemadoc[semantic]')")

from schemadoc.search.embeddings import Vectors, digest, embedder

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import search_quality

ROOT = Path(__file__).resolve().parents[2]
BOOK_SCHEMA = ROOT / "schemas" / "book.schema.json"
LAMP_QUERY = "keeper trimmed the wick"  # every word in the lamp section: full text finds it


class Gated:
    """The process's embedder, counting the texts it is given; a call waits while the gate is shut."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self.waiting = threading.Event()
        self.batches: list[int] = []

    def embed(self, texts: Sequence[str]) -> Vectors:
        if len(texts) > 1 or not self.gate.is_set():  # the feed's batches (a query embeds one text)
            self.waiting.set()
            assert self.gate.wait(60), "the test never opened the gate"
            self.batches.append(len(texts))
        return embedder().embed(texts)


@pytest.fixture(scope="module")
def schema() -> LoadedSchema:
    return load_schema(BOOK_SCHEMA)


def stored_store(schema: LoadedSchema, directory: Path, books: int = 12, url: str | None = None) -> list[str]:
    """A store with books and its index, made by a server without the extra: no vector anywhere."""
    service = DocumentService(schema, store_for(directory, url))
    service.open()
    ids = [service.create_document(book)[0] for book in search_quality.make_corpus(books=books).books]
    service.search_index.sync()
    service.close()
    return ids


def with_extra(schema: LoadedSchema, directory: Path, extension: semantic.SemanticRanking,
               url: str | None = None) -> DocumentService:
    service = DocumentService(schema, store_for(directory, url))
    service.search_extensions.extend([extension, hybrid.HybridRanking(extension)])
    service.open()
    return service


@pytest.fixture(params=["files", "postgres"])
def url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """Where the store is: a files store's directory, or a throwaway PostgreSQL schema (the index's tables there)."""
    if request.param == "files":
        yield None
        return
    with throwaway_schema() as found:
        yield found


@pytest.fixture
def opened() -> Iterator[list[DocumentService]]:
    services: list[DocumentService] = []
    yield services
    for service in services:
        service.close()


def pointers(service: DocumentService, query: str, ranking: str) -> list[tuple[str, str]]:
    return [(hit.doc_id, hit.pointer) for hit in service.search(query, ranking=ranking).hits]


def index_rows(where: Path | DocumentService, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Rows of the index's database: a files store's SQLite file, or the service's own index."""
    if isinstance(where, DocumentService):
        with where.search_index.backend.transaction(write=False) as tx:
            return [tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in tx.execute(sql, params)]
    with sqlite3.connect(where / "search-index.sqlite3") as db:
        return db.execute(sql, params).fetchall()


def assert_vectors_are_of_the_current_text(directory: Path | DocumentService) -> None:
    """Every unit of two words or more has one vector, made from its current text; no other vector is left."""
    units = {(doc, pointer): text for doc, pointer, text in index_rows(directory, "SELECT doc_id, pointer, text "
                                                                                  "FROM search_units")}
    vectors = {(doc, pointer): bytes(d) for doc, pointer, d in index_rows(directory, "SELECT doc_id, pointer, digest "
                                                                                    "FROM semantic_units")}
    expected = {key: digest(text) for key, text in units.items() if semantic.meaningful(text)}
    assert vectors == expected


def test_start_up_answers_at_once_and_search_says_meaning_is_still_being_indexed(
        schema: LoadedSchema, url: str | None, tmp_path: Path, opened: list[DocumentService],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic_feed, "FEED_UNITS", 20)
    stored_store(schema, tmp_path / "docs", url=url)
    gated = Gated()
    extension = semantic.SemanticRanking(gated)  # type: ignore[arg-type]
    service = with_extra(schema, tmp_path / "docs", extension, url)  # returns while the first batch waits at the gate
    opened.append(service)
    directory = service
    assert gated.waiting.wait(30) and not extension.fed.is_set()
    assert index_rows(directory, "SELECT count(*) FROM semantic_units") == [(0,)]
    for ranking in ("semantic", "hybrid"):
        page = service.search(LAMP_QUERY, ranking=ranking)
        assert page.note is not None and "still being indexed" in page.note and "full text" in page.note
        assert page.hits and [(h.doc_id, h.pointer) for h in page.hits] == pointers(service, LAMP_QUERY, "text")
    assert service.search(LAMP_QUERY, ranking="text").note is None
    # a paraphrase shares no word with its section: full text finds nothing, and says why
    assert service.search("keeping a lighthouse lit", ranking="semantic").hits == []

    gated.gate.set()
    assert extension.fed.wait(60)
    assert max(gated.batches) <= semantic_feed.FEED_UNITS  # bounded batches (no book here is larger than one)
    assert_vectors_are_of_the_current_text(directory)
    page = service.search("keeping a lighthouse lit", ranking="semantic")
    assert page.note is None and any("wick" in hit.snippet for hit in page.hits[:5])  # found by meaning now
    feed_keys = "('feed_after', 'feed_done', 'feed_total')"
    assert index_rows(directory, f"SELECT count(*) FROM semantic_state WHERE key IN {feed_keys}") == [(0,)]


def test_writes_during_the_feed_end_with_the_vectors_of_their_current_text(
        schema: LoadedSchema, url: str | None, tmp_path: Path, opened: list[DocumentService],
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic_feed, "FEED_UNITS", 20)
    ids = sorted(stored_store(schema, tmp_path / "docs", url=url))
    gated = Gated()
    extension = semantic.SemanticRanking(gated)  # type: ignore[arg-type]
    service = with_extra(schema, tmp_path / "docs", extension, url)
    opened.append(service)
    directory = service
    assert gated.waiting.wait(30)  # the first batch (the first documents) is read, waiting to be embedded
    first, last = ids[0], ids[-1]
    for doc_id, text in ((first, "The tide tables are printed each January for the harbour master."),
                         (last, "Frost came early and the geese flew south over the marsh.")):
        meta = service.store.read_meta(doc_id)
        service.update_node(doc_id, "/chapters/0/sections/0/paragraphs/0/text", text, meta.version)
    purged = ids[len(ids) // 2]
    service.delete_document(purged, service.store.read_meta(purged).version)
    created = service.create_document(search_quality.make_corpus(books=1).books[0])[0]
    service.search_index.sync()
    gated.gate.set()
    assert extension.fed.wait(60)
    assert_vectors_are_of_the_current_text(directory)
    found = pointers(service, "when the tide tables come out", "semantic")
    assert found[0] == (first, "/chapters/0/sections/0/paragraphs/0/text")
    assert any(doc == created for doc, _ in pointers(service, "Collected pieces volume", "semantic"))
    # after the feed, a write is embedded at once again
    before = extension.units_embedded
    meta = service.store.read_meta(first)
    service.update_node(first, "/chapters/0/sections/0/paragraphs/0/text", "Owls hunt mice in the barn at night.",
                        meta.version)
    service.search_index.sync()
    assert extension.units_embedded == before + 1
    assert_vectors_are_of_the_current_text(directory)


_CHILD = """
import sys, time
sys.path.insert(0, {src!r})
from schemadoc.schema import load_schema
from schemadoc.search import hybrid, semantic, semantic_feed
from schemadoc.search.embeddings import embedder
from schemadoc.service import DocumentService
from schemadoc.storage import store_for

class Slow:
    def embed(self, texts):
        time.sleep(0.2)
        return embedder().embed(texts)

semantic_feed.FEED_UNITS = 8
service = DocumentService(load_schema({schema!r}), store_for({directory!r}, None))
extension = semantic.SemanticRanking(Slow())
service.search_extensions.extend([extension, hybrid.HybridRanking(extension)])
service.open()
print("open", flush=True)
time.sleep(600)
"""


def test_a_feed_killed_half_way_resumes_where_it_stopped(
        schema: LoadedSchema, tmp_path: Path, opened: list[DocumentService], monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "docs"
    stored_store(schema, directory)
    script = _CHILD.format(src=str(ROOT / "src"), schema=str(BOOK_SCHEMA), directory=str(directory))
    child = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "open"
        deadline = time.monotonic() + 60
        while True:  # until a few batches are committed, then kill it in the middle of the feed
            done = index_rows(directory, "SELECT value FROM semantic_state WHERE key = 'feed_done'")
            if done and int(done[0][0]) >= 3:
                break
            assert time.monotonic() < deadline, "the child's feed did not start"
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(30)
    (after,) = index_rows(directory, "SELECT value FROM semantic_state WHERE key = 'feed_after'")[0]
    fed = {doc for (doc,) in index_rows(directory, "SELECT DISTINCT doc_id FROM semantic_units")}
    everyone = {doc for (doc,) in index_rows(directory, "SELECT doc_id FROM search_docs")}
    assert fed and fed < everyone and all(doc <= after for doc in fed)
    left = sum(1 for doc, text in index_rows(directory, "SELECT doc_id, text FROM search_units")
               if doc > after and semantic.meaningful(text))

    monkeypatch.setattr(semantic_feed, "FEED_UNITS", 8)
    counting = semantic.SemanticRanking()
    service = with_extra(schema, directory, counting)
    opened.append(service)
    assert counting.fed.wait(60)
    assert counting.units_embedded == left  # nothing the killed server had committed was embedded again
    assert_vectors_are_of_the_current_text(directory)
    books = search_quality.make_corpus(books=12).books
    assert sum(1 for book in books for unit in text_units(book) if semantic.meaningful(unit.text)) == \
        index_rows(directory, "SELECT count(*) FROM semantic_units")[0][0]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.mark.anyio
async def test_both_doors_carry_the_note_while_the_feed_runs(schema: LoadedSchema, tmp_path: Path,
                                                             opened: list[DocumentService]) -> None:
    import warnings

    import orjson
    from fastapi.testclient import TestClient
    from mcp import Client

    from schemadoc.config import Settings
    from schemadoc.interfaces.app import build_app
    from schemadoc.interfaces.mcp_door.server import build_mcp_server

    stored_store(schema, tmp_path / "docs", books=3)
    gated = Gated()
    extension = semantic.SemanticRanking(gated)  # type: ignore[arg-type]
    service = with_extra(schema, tmp_path / "docs", extension)
    opened.append(service)
    assert gated.waiting.wait(30)
    settings = Settings(schema_path=BOOK_SCHEMA, storage_dir=tmp_path / "docs")
    with TestClient(build_app(service, settings), base_url="http://127.0.0.1") as client:
        for ranking in (None, "semantic", "hybrid", "text"):  # None: the default, hybrid with the extra
            params = {"query": LAMP_QUERY} | ({"ranking": ranking} if ranking else {})
            body = client.get("/api/v1/search", params=params).json()
            assert body["hits"] and (("note" in body) == (ranking != "text")), (ranking, body)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(build_mcp_server(service)) as mcp:
            result = await mcp.call_tool("document_search", {"query": LAMP_QUERY})
    answer = orjson.loads(result.content[0].text)  # type: ignore[union-attr]
    assert not result.is_error and "still being indexed" in answer["note"] and answer["hits"]
    gated.gate.set()
    assert extension.fed.wait(60)
    with TestClient(build_app(service, settings), base_url="http://127.0.0.1") as client:
        assert "note" not in client.get("/api/v1/search", params={"query": LAMP_QUERY}).json()


def test_servers_sharing_an_index_embed_each_batch_of_the_feed_once(
        schema: LoadedSchema, url: str | None, tmp_path: Path, opened: list[DocumentService],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The first server to read a batch claims it; another finds the claim and waits instead of embedding the
    same units (and throwing its work away when it comes to write them)."""
    monkeypatch.setattr(semantic_feed, "FEED_UNITS", 20)
    monkeypatch.setattr(semantic_feed, "FEED_WAIT_SECONDS", 0.05)
    stored_store(schema, tmp_path / "docs", url=url)
    first, second = Gated(), Gated()
    extensions = [semantic.SemanticRanking(first), semantic.SemanticRanking(second)]  # type: ignore[arg-type]
    opened.append(with_extra(schema, tmp_path / "docs", extensions[0], url))
    assert first.waiting.wait(30)  # the first server holds the first batch, embedding it
    opened.append(with_extra(schema, tmp_path / "docs", extensions[1], url))
    assert not second.waiting.wait(1.5)  # the second finds the batch claimed: it embeds nothing meanwhile
    first.gate.set()
    second.gate.set()
    assert all(extension.fed.wait(60) for extension in extensions)
    meaningful = sum(1 for (text,) in index_rows(opened[0], "SELECT text FROM search_units")
                     if semantic.meaningful(text))
    assert sum(extension.units_embedded for extension in extensions) == meaningful  # each unit embedded once
    assert_vectors_are_of_the_current_text(opened[0])
