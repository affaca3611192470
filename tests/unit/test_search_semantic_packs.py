"""The semantic extension's packed codes, under random writes (Hypothesis): whatever the order of creations, edits
below a pointer, moves of unchanged text and removals, before and after the cells are made,

- each cell's pack less its gone, with its loose rows, is exactly the cell's vectors; the counts are right; the
  loose and gone of a cell never stay above the repack threshold;
- a query reading every code and scoring enough of them exactly gives the brute-force answer over the stored
  vectors.

A stand-in embedder (a seeded vector per text) keeps it fast; tests/unit/test_search_semantic.py uses the model.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemadoc.search import semantic
from schemadoc.search.units import TextUnit

np = pytest.importorskip("numpy", reason="the semantic extra is not installed (pip install 'schemadoc[semantic]')")

from schemadoc.search.embeddings import CODE_BYTES, DIMENSIONS, Coarse, codes  # noqa: E402

PHRASES = [f"{a} {b}" for a in ("amber", "birch", "cedar", "dune", "ember", "fjord") for b in ("lake", "moss", "reef")]


class Seeded:
    """A unit vector per text, the same each time."""

    def embed(self, texts: Sequence[str]) -> Any:
        rows = []
        for text in texts:
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            vector = np.random.default_rng(seed).standard_normal(DIMENSIONS)
            rows.append(vector / np.linalg.norm(vector))
        return np.array(rows, dtype=np.float32).reshape(len(texts), DIMENSIONS)


class SqliteTx:
    dialect = "sqlite"

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:")

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.db.execute(sql, params).fetchall()

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.db.executemany(sql, rows)


@contextmanager
def small(**values: Any) -> Iterator[None]:
    saved = {name: getattr(semantic, name) for name in values}
    for name, value in values.items():
        setattr(semantic, name, value)
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(semantic, name, value)


def units(texts: list[int], under: str) -> list[TextUnit]:
    return [TextUnit(f"{under}/{i}", PHRASES[t]) for i, t in enumerate(texts)]


write = st.tuples(st.just("write"), st.integers(0, 3), st.lists(st.integers(0, len(PHRASES) - 1), max_size=8))
edit = st.tuples(st.just("edit"), st.integers(0, 3), st.lists(st.integers(0, len(PHRASES) - 1), max_size=4))
remove = st.tuples(st.just("remove"), st.integers(0, 3), st.just([]))


def check(tx: SqliteTx) -> None:
    rows: dict[int, set[int]] = {}
    for row_id, cell in tx.execute("SELECT id, cell FROM semantic_units"):
        rows.setdefault(cell, set()).add(row_id)
    packs = {cell: set(np.frombuffer(ids, dtype="<i8").tolist()) for cell, ids in
             tx.execute("SELECT cell, ids FROM semantic_packs")}
    for _cell, ids, code_blob in tx.execute("SELECT cell, ids, codes FROM semantic_packs"):
        assert len(code_blob) == len(ids) // 8 * CODE_BYTES
    gone: dict[int, set[int]] = {}
    for cell, row_id in tx.execute("SELECT cell, id FROM semantic_gone"):
        gone.setdefault(cell, set()).add(row_id)
    loose: dict[int, set[int]] = {}
    for cell, row_id in tx.execute("SELECT cell, id FROM semantic_units WHERE packed = 0"):
        loose.setdefault(cell, set()).add(row_id)
    counts = {cell: (n, m) for cell, n, m in tx.execute("SELECT cell, units, loose FROM semantic_cellinfo")
              if n or m}
    for cell in rows.keys() | packs.keys() | gone.keys():
        pack, away, fresh = packs.get(cell, set()), gone.get(cell, set()), loose.get(cell, set())
        assert away <= pack and not fresh & pack
        assert (pack - away) | fresh == rows.get(cell, set())
        size, unpacked = counts.get(cell, (0, 0))
        assert size == len(rows.get(cell, set())) and unpacked == len(away) + len(fresh)
        assert unpacked <= max(semantic.LOOSE_MIN, size // 16)


def brute_force(tx: SqliteTx, query: Any) -> dict[tuple[str, str], float]:
    """Every stored unit's cosine with the query."""
    return {(doc_id, pointer): float(np.frombuffer(vector, dtype="<f4") @ query)
            for doc_id, pointer, vector in tx.execute("SELECT doc_id, pointer, vector FROM semantic_units")}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(write, edit, remove), min_size=1, max_size=30), st.integers(0, len(PHRASES) - 1))
def test_packs_hold_every_vector_once_and_a_full_read_is_exact(steps: list[tuple[str, int, list[int]]],
                                                               asked: int) -> None:
    with small(TRAIN_AT=12, CELLS=3, LOOSE_MIN=2, SCAN_MIN=10**9, RERANK_MIN=10**6):
        extension, tx = semantic.SemanticRanking(Seeded()), SqliteTx()  # type: ignore[arg-type]
        extension.create_tables(tx)
        for kind, doc, texts in steps:
            doc_id = f"d{doc}"
            if kind == "write":
                extension.on_units_changed(tx, doc_id, ("",), units(texts, "/a"))
            elif kind == "edit":  # the units below /a/1 replaced (an array item's text moved or changed)
                extension.on_units_changed(tx, doc_id, ("/a/1",), units(texts, "/a/1"))
            else:
                extension.on_document_removed(tx, doc_id)
            check(tx)
        query = Seeded().embed([PHRASES[asked]])[0]
        found = extension.rank(tx, PHRASES[asked], doc_id=None, below="", limit=5, text_rank=lambda n: [])
        exact = brute_force(tx, query)
        best = sorted((score for score in exact.values() if score > 0), reverse=True)[:5]
        # the exact top 5 (by score: one text stored twice ties, in whichever order)
        assert [unit.score for unit in found] == pytest.approx(best, abs=1e-5)
        assert all(exact[unit.doc_id, unit.pointer] == pytest.approx(unit.score, abs=1e-5) for unit in found)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 400), st.integers(1, 30), st.integers(1, 97), st.integers(0, 2**32 - 1))
def test_coarse_keeps_the_nearest_codes_block_by_block(count: int, k: int, block: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((count, DIMENSIONS)).astype(np.float32)
    query = rng.standard_normal(DIMENSIONS).astype(np.float32)
    keys = np.arange(count, dtype=np.int64) * 3
    skip = keys[rng.random(count) < 0.2]
    coarse = Coarse(query, k)
    signs = codes(vectors)
    for start in range(0, count, block):
        coarse.feed(keys[start:start + block], signs[start:start + block], skip)
    distances = np.unpackbits(np.bitwise_xor(signs, codes(query)[0]), axis=1).sum(axis=1)
    expected = [int(keys[i]) for i in sorted(range(count), key=lambda i: (distances[i], i))
                if keys[i] not in set(skip.tolist())][:k]
    assert coarse.best().tolist() == expected and coarse.scored == count
