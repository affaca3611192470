"""The semantic ranking's parts, below the index: the vectors it keeps from each write's changed units, the
nearest vectors block by block, reciprocal rank fusion, and the refusal without the extra.

The extension is driven here through a plain SQLite transaction, as the index drives it (the same hooks, in
the same order); tests/unit/test_search_semantic_doors.py drives it through a real index and both doors.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemadoc.errors import CATALOG, SchemaDocError
from schemadoc.search import hybrid, semantic
from schemadoc.search.extension import RankedUnit
from schemadoc.search.units import TextUnit, changed_units, text_units

np = pytest.importorskip("numpy", reason="the semantic extra is not installed (pip install 'schemadoc[semantic]')")
pytest.importorskip("wordllama", reason="the semantic extra is not installed (pip install 'schemadoc[semantic]')")

from schemadoc.search.embeddings import DIMENSIONS, Nearest, pack  # noqa: E402


class SqliteTx:
    dialect = "sqlite"

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.db.execute(sql, params).fetchall()

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.db.executemany(sql, rows)


BOOK = {"title": "Tides", "chapters": [
    {"title": "The harbour", "sections": [
        {"title": "Evenings", "paragraphs": [{"text": "Every evening the keeper climbed the stairs, trimmed the wick "
                                                     "and polished the lens so the lamp burned until dawn."}]},
        {"title": "Market", "paragraphs": [{"text": "Stalls sell bread, cheese and cut flowers in the square."}]},
    ]},
    {"title": "Inland", "sections": [
        {"title": "Kitchen", "paragraphs": [{"text": "Knead the dough, leave it to rise, then bake it until the "
                                                     "crust is golden."}]},
    ]},
]}


def no_text(n: int) -> list[RankedUnit]:
    return []


@pytest.fixture
def ranking() -> tuple[semantic.SemanticRanking, SqliteTx]:
    extension, tx = semantic.SemanticRanking(), SqliteTx()
    extension.create_tables(tx)
    extension.on_units_changed(tx, "doc", ("",), list(text_units(BOOK)))
    return extension, tx


def stored(tx: SqliteTx) -> dict[str, bytes]:
    return {pointer: vector for pointer, vector in tx.execute("SELECT pointer, vector FROM semantic_units")}


def test_units_are_ranked_by_meaning(ranking: tuple[semantic.SemanticRanking, SqliteTx]) -> None:
    extension, tx = ranking
    best = extension.rank(tx, "keeping a lighthouse lit", doc_id=None, below="", limit=3, text_rank=no_text)
    assert best[0][:2] == ("doc", "/chapters/0/sections/0/paragraphs/0/text")
    assert [unit.score for unit in best] == sorted((unit.score for unit in best), reverse=True)
    bread = extension.rank(tx, "how to make pastry", doc_id=None, below="", limit=1, text_rank=no_text)
    assert bread[0].pointer == "/chapters/1/sections/0/paragraphs/0/text"


def embedded(node: Any) -> list[str]:
    """The pointers of the units of ``node`` the extension embeds (two words or more)."""
    return [unit.pointer for unit in text_units(node) if semantic.meaningful(unit.text)]


def test_only_units_of_two_words_or_more_are_embedded() -> None:
    assert semantic.meaningful("The harbour") and semantic.meaningful("It snowed.")
    assert not any(map(semantic.meaningful, ["Tides", "draft", "ch-1", "9780000000001", "en", "a b c", "x1 y2"]))
    assert embedded(BOOK) == ["/chapters/0/title", "/chapters/0/sections/0/paragraphs/0/text",
                              "/chapters/0/sections/1/paragraphs/0/text", "/chapters/1/sections/0/paragraphs/0/text"]


def test_a_write_embeds_only_the_units_it_changed(ranking: tuple[semantic.SemanticRanking, SqliteTx]) -> None:
    extension, tx = ranking
    assert extension.units_embedded == len(embedded(BOOK)) == 4
    before = stored(tx)
    book = {**BOOK, "chapters": [BOOK["chapters"][0], {**BOOK["chapters"][1], "title": "Up the hill"}]}
    patch = [{"op": "replace", "path": "/chapters/1/title", "value": "Up the hill"}]
    change = changed_units(book, patch)
    extension.on_units_changed(tx, "doc", change.removed, change.added)
    assert extension.units_embedded == 4 + 1
    after = stored(tx)
    assert after.keys() == before.keys() | {"/chapters/1/title"}
    assert all(after[p] == before[p] for p in before)


def test_a_shifted_unit_keeps_its_vector(ranking: tuple[semantic.SemanticRanking, SqliteTx]) -> None:
    """Inserting a chapter in front shifts every chapter: their units move, none is embedded again."""
    extension, tx = ranking
    before = stored(tx)
    new_chapter = {"title": "Prologue", "sections": [{"title": "Snow", "paragraphs": [{"text": "It snowed."}]}]}
    book = {**BOOK, "chapters": [new_chapter, *BOOK["chapters"]]}
    change = changed_units(book, [{"op": "add", "path": "/chapters/0", "value": new_chapter}])
    assert change.removed == ("/chapters",)
    extension.on_units_changed(tx, "doc", change.removed, change.added)
    assert extension.units_embedded == 4 + 1  # the prologue's paragraph
    assert extension.units_kept == 4  # every embedded unit of the chapters that shifted
    after = stored(tx)
    assert after["/chapters/1/sections/0/paragraphs/0/text"] == before["/chapters/0/sections/0/paragraphs/0/text"]
    assert set(after) == set(embedded(book))


def test_removed_units_and_documents_leave_the_ranking(ranking: tuple[semantic.SemanticRanking, SqliteTx]) -> None:
    extension, tx = ranking
    extension.on_units_changed(tx, "other", ("",), [TextUnit("/title", "The lamp keeper's log")])
    book = {**BOOK, "chapters": [BOOK["chapters"][1]]}
    change = changed_units(book, [{"op": "remove", "path": "/chapters/0"}])
    extension.on_units_changed(tx, "doc", change.removed, change.added)
    assert set(stored(tx)) == set(embedded(book)) | {"/title"}
    found = extension.rank(tx, "keeping a lighthouse lit", doc_id=None, below="", limit=20, text_rank=no_text)
    assert found[0][:2] == ("other", "/title")  # the lamp keeper's paragraph is gone
    extension.on_document_removed(tx, "other")
    found = extension.rank(tx, "keeping a lighthouse lit", doc_id=None, below="", limit=20, text_rank=no_text)
    assert {unit.doc_id for unit in found} == {"doc"}
    extension.on_cleared(tx)
    assert tx.execute("SELECT count(*) FROM semantic_units") == [(0,)]


def test_a_scope_ranks_only_the_units_below_it(ranking: tuple[semantic.SemanticRanking, SqliteTx]) -> None:
    extension, tx = ranking
    extension.on_units_changed(tx, "other", ("",), [TextUnit("/title", "The lamp keeper's log")])
    found = extension.rank(tx, "a recipe for baking", doc_id="doc", below="/chapters/1", limit=20,
                           text_rank=no_text)
    assert found and all(u.doc_id == "doc" and u.pointer.startswith("/chapters/1/") for u in found)
    # a sibling whose name extends the prefix is not below it
    extension.on_units_changed(tx, "doc", (), [TextUnit("/chapters/10", "A recipe for baking bread")])
    found = extension.rank(tx, "a recipe for baking", doc_id="doc", below="/chapters/1", limit=20, text_rank=no_text)
    assert "/chapters/10" not in [u.pointer for u in found]


def test_hybrid_fuses_both_rankings(ranking: tuple[semantic.SemanticRanking, SqliteTx]) -> None:
    extension, tx = ranking
    fused = hybrid.HybridRanking(extension)
    asked: list[int] = []

    def text_rank(n: int) -> list[RankedUnit]:
        asked.append(n)
        return [RankedUnit("doc", "/chapters/0/sections/1/paragraphs/0/text", -1.0)]

    found = fused.rank(tx, "keeping a lighthouse lit", doc_id=None, below="", limit=2, text_rank=text_rank)
    assert asked == [hybrid.FUSION_DEPTH]
    # both rankings' first units tie at 1/61: the full-text one was seen first
    assert [u.pointer for u in found] == ["/chapters/0/sections/1/paragraphs/0/text",
                                          "/chapters/0/sections/0/paragraphs/0/text"]


def test_reciprocal_rank_fusion_on_a_known_case() -> None:
    a = [RankedUnit("d", "/a", 9), RankedUnit("d", "/b", 8), RankedUnit("d", "/c", 7)]
    b = [RankedUnit("d", "/c", 0.9), RankedUnit("d", "/a", 0.8)]
    fused = hybrid.fuse([a, b], limit=3, k=1)
    # /a: 1/2 + 1/3; /c: 1/4 + 1/2; /b: 1/3
    assert [(u.pointer, round(u.score, 4)) for u in fused] == [("/a", 0.8333), ("/c", 0.75), ("/b", 0.3333)]
    assert hybrid.fuse([a, b], limit=1)[0].pointer == "/a"
    assert hybrid.fuse([], limit=5) == []


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 300), st.integers(1, 20), st.integers(1, 64), st.integers(0, 2**32 - 1))
def test_nearest_block_by_block_is_the_exact_top_k(count: int, k: int, block: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, DIMENSIONS)).astype(np.float32)
    query = rng.standard_normal(DIMENSIONS).astype(np.float32)
    nearest = Nearest(query, k)
    nearest.feed_rows(((i, pack(v)) for i, v in enumerate(vectors)), block)
    scores = vectors @ query
    expected = sorted(range(count), key=lambda i: (-scores[i], i))[:k]
    assert [key for _, key in nearest.best()] == expected
    assert nearest.scored == count


def test_without_the_extra_a_ranking_by_meaning_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "installed", lambda: False)
    assert hybrid.default_extensions() == []
    error = semantic.unavailable("hybrid")
    assert isinstance(error, SchemaDocError)
    assert error.code == "semantic-search-unavailable" and error.code in CATALOG
    assert "pip install 'schemadoc[semantic]'" in error.message
    assert error.details == {"ranking": "hybrid", "install": semantic.EXTRA}


def test_with_the_extra_both_rankings_are_registered() -> None:
    names = [extension.name for extension in hybrid.default_extensions()]
    assert names == ["semantic", "hybrid"]


def _sentences() -> list[str]:
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import search_quality

    return [t.text for t in search_quality.TARGETS] + [text for _, text in search_quality.DISTRACTORS]


def cell_counts(tx: SqliteTx) -> tuple[dict[int, int], dict[int, int]]:
    kept = dict(tx.execute("SELECT cell, units FROM semantic_cellinfo WHERE units != 0"))
    actual = dict(tx.execute("SELECT cell, count(*) FROM semantic_units GROUP BY cell"))
    return kept, actual


def test_cells_are_made_once_the_table_is_large_enough_and_kept_by_every_write(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(semantic, "TRAIN_AT", 30)
    monkeypatch.setattr(semantic, "CELLS", 4)
    monkeypatch.setattr(semantic, "SCAN_MIN", 10**9)  # every cell probed: exact
    extension, tx = semantic.SemanticRanking(), SqliteTx()
    extension.create_tables(tx)
    sentences = _sentences()
    query = "keeping a lighthouse lit"
    for i, text in enumerate(sentences[:29]):
        extension.on_units_changed(tx, f"d{i:02}", ("",), [TextUnit("/text", text)])
    assert tx.execute("SELECT count(*) FROM semantic_cellinfo WHERE cell >= 0") == [(0,)]
    exact = extension.rank(tx, query, doc_id=None, below="", limit=5, text_rank=no_text)
    for i, text in enumerate(sentences[29:], start=29):  # the 30th vector makes the cells
        extension.on_units_changed(tx, f"d{i:02}", ("",), [TextUnit("/text", text)])
    assert tx.execute("SELECT count(*) FROM semantic_cellinfo WHERE cell >= 0") == [(4,)]
    kept, actual = cell_counts(tx)
    assert kept == actual and -1 not in actual and sum(actual.values()) == len(sentences)
    probed = extension.rank(tx, query, doc_id=None, below="", limit=5, text_rank=no_text)
    assert probed[0] == exact[0]
    # a write and a purge keep the counts; another writer (a second extension object) uses the same cells
    other = semantic.SemanticRanking()
    other.on_units_changed(tx, "d00", ("",), [TextUnit("/text", "A new paragraph about tides and moons.")])
    extension.on_document_removed(tx, "d01")
    kept, actual = cell_counts(tx)
    assert kept == actual and -1 not in actual and sum(actual.values()) == len(sentences) - 1
    # a small budget scores only the nearest cells, still finding the nearest vector here
    monkeypatch.setattr(semantic, "SCAN_MIN", 1)
    monkeypatch.setattr(semantic, "SCAN_SHARE", 0.0)
    assert extension.rank(tx, query, doc_id=None, below="", limit=1, text_rank=no_text)[0] == exact[0]
    assert extension.scored < len(sentences) - 1
    extension.on_cleared(tx)  # and a feed starts: every document is left to it
    assert cell_counts(tx) == ({}, {}) and tx.execute("SELECT key, value FROM semantic_state") == [("feed_after", "")]
