"""Semantic search: text units ranked by meaning, and hybrid ranking (meaning fused with full text).

An extra: ``pip install 'schemadoc[semantic]'`` brings ``wordllama`` (static word embeddings that run on a
CPU, the model inside its wheel). With it, two index extensions (:mod:`.extension`) are registered:

- ``semantic``: keeps a vector per text unit in the index's database (table ``semantic_vectors``: the
  document, the unit's pointer, an 8-byte digest of its text, 256 float32 as a blob; ``bytea`` on
  PostgreSQL, no pgvector needed). A write embeds only the units it changed: the index hands over the
  units below the places the patch reached, and among those a unit whose text is unchanged (an array
  item that only shifted) keeps its vector. Only units of two words or more are embedded. A query is
  embedded and scored by cosine against the vectors in scope, read block by block (bounded memory): within
  one document all of them; across documents all of them until the table is large, then those of the cells
  nearest the query (:class:`SemanticRanking`);
- ``hybrid`` (the default ranking when the extra is installed): reciprocal rank fusion of the full-text
  ranking's and the semantic ranking's best units (each unit scores ``sum 1 / (60 + rank)``).

Without the extra, asking for either ranking is refused with ``semantic-search-unavailable``, which says
how to install it. This module imports ``numpy`` and ``wordllama`` only when the extra is there.
"""

from __future__ import annotations

import importlib.util
import re
import secrets
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from schemadoc.errors import SchemaDocError
from schemadoc.search.extension import IndexExtension, IndexTransaction, RankedUnit
from schemadoc.search.units import TextUnit

if TYPE_CHECKING:
    from schemadoc.search.embeddings import Embedder

__all__ = ["EXTRA", "RANKINGS", "HybridRanking", "SemanticRanking", "default_extensions", "fuse", "installed",
           "meaningful", "unavailable"]

EXTRA = "pip install 'schemadoc[semantic]'"
RANKINGS = ("semantic", "hybrid")
"""The rankings this module provides."""
RRF_K = 60
"""Reciprocal rank fusion's constant (Cormack et al., 2009): a unit at rank r adds 1 / (60 + r)."""
FUSION_DEPTH = 50
"""How many units of each ranking a hybrid query fuses (at least the page asked for)."""
CELLS = 1_024
"""How many cells the vectors are grouped into."""
TRAIN_AT = 32_768
"""The vectors the cells are made from, once the table holds that many (until then every query is exact)."""
SCAN_MIN = 32_768
"""A query across documents scores at least this many vectors (all of them in a smaller store)."""
SCAN_SHARE = 0.02
"""... or this share of them, whichever is more."""
_BLOCK = 4_096
_TABLE = "semantic_vectors"
_CELLS = "semantic_cells"
_STATE = "semantic_state"
_UNSORTED = -1
"""The cell of a vector stored before there are cells."""


def installed() -> bool:
    """Whether the semantic extra is installed (``wordllama`` and ``numpy`` importable)."""
    return all(importlib.util.find_spec(name) is not None for name in ("wordllama", "numpy"))


def unavailable(ranking: str) -> SchemaDocError:
    """The refusal of a ranking by meaning on a server without the extra."""
    return SchemaDocError(
        "semantic-search-unavailable",
        f"The '{ranking}' ranking needs the semantic extra, which this server does not have: install it with "
        f"{EXTRA} and restart, or search with the 'text' ranking.",
        {"ranking": ranking, "install": EXTRA})


def fuse(rankings: Sequence[Sequence[RankedUnit]], limit: int, k: int = RRF_K) -> list[RankedUnit]:
    """Reciprocal rank fusion: each unit scores the sum over the rankings of ``1 / (k + rank)`` (rank from 1);
    best first, ties in the order first seen."""
    scores: dict[tuple[str, str], float] = {}
    for ranking in rankings:
        for rank, unit in enumerate(ranking, start=1):
            key = (unit.doc_id, unit.pointer)
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank)
    order = sorted(scores.items(), key=lambda item: -item[1])  # stable: first seen first among equals
    return [RankedUnit(doc_id, pointer, score) for (doc_id, pointer), score in order[:limit]]


def _below(dialect: str, prefix: str) -> tuple[str, list[Any]]:
    """SQL (and its parameters) for a unit's pointer at or below ``prefix``: every pointer starting with
    ``prefix + "/"`` sorts between it and ``prefix + "0"`` ('0' follows '/'), compared byte by byte."""
    if prefix == "":
        return "", []
    collate = ' COLLATE "C"' if dialect == "postgres" else ""
    return (f" AND (pointer{collate} = ? OR (pointer{collate} >= ? AND pointer{collate} < ?))",
            [prefix, prefix + "/", prefix + "0"])


def meaningful(text: str) -> bool:
    """Whether a unit is embedded: it has at least two words. A single word (an enum value such as ``draft``,
    a code, a one-word title) carries little meaning a static model can place; full text finds it."""
    return len(_WORD.findall(text, 0, 400)) >= 2


_WORD = re.compile(r"[^\W\d_]{2,}")


class SemanticRanking:
    """The ``semantic`` index extension: a vector per text unit, kept from each write's changed units.

    The coarse stage: once the table holds :data:`TRAIN_AT` vectors, they are grouped into :data:`CELLS` cells
    (spherical k-means, centroids stored in ``semantic_cells`` with the count of each cell, kept by every
    write); a new vector joins its nearest cell. A query across documents scores the vectors of the cells
    nearest to it until it has scored :data:`SCAN_MIN` vectors or :data:`SCAN_SHARE` of them, whichever is
    more: every vector below that size (exact), a bounded share above it. A query in one document scores
    all of that document's vectors.
    """

    name = "semantic"
    generation = "wordllama-0.4/l2_supercat_256/float32-cells-1"
    """The model and the stored format: a change makes the index clear and refeed this extension."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        from schemadoc.search.embeddings import embedder as process_embedder

        self.embedder = embedder if embedder is not None else process_embedder()
        self.units_embedded = 0
        """Units this extension embedded for writes (not queries): what the writes cost."""
        self.units_kept = 0
        """Units whose vector was kept because their text did not change (moved or shifted)."""
        self.scored = 0
        """Vectors the last query scored."""
        self._cells: tuple[str, Any] | None = None  # (the cells' token, their centroids), as last read

    # -- the index's hooks ------------------------------------------------------------------------------
    def create_tables(self, tx: IndexTransaction) -> None:
        blob, key = ("BYTEA", "BIGSERIAL") if tx.dialect == "postgres" else ("BLOB", "INTEGER")
        collate = ' COLLATE "C"' if tx.dialect == "postgres" else ""
        tx.execute(f"CREATE TABLE IF NOT EXISTS {_TABLE} (id {key} PRIMARY KEY, doc_id TEXT NOT NULL, "
                   f"pointer TEXT{collate} NOT NULL, digest {blob} NOT NULL, cell INTEGER NOT NULL, "
                   f"vector {blob} NOT NULL)")
        tx.execute(f"CREATE UNIQUE INDEX IF NOT EXISTS {_TABLE}_unit ON {_TABLE} (doc_id, pointer)")
        tx.execute(f"CREATE INDEX IF NOT EXISTS {_TABLE}_cell ON {_TABLE} (cell, id)")
        tx.execute(f"CREATE TABLE IF NOT EXISTS {_CELLS} (cell INTEGER PRIMARY KEY, units BIGINT NOT NULL, "
                   f"centroid {blob})")
        tx.execute(f"CREATE TABLE IF NOT EXISTS {_STATE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def on_units_changed(self, tx: IndexTransaction, doc_id: str, removed: Sequence[str],
                         added: Sequence[TextUnit]) -> None:
        from schemadoc.search.embeddings import digest, nearest_cells, pack

        counts: dict[int, int] = {}
        kept: dict[bytes, bytes] = {}  # a removed unit's text digest -> its vector, for a unit that only moved
        for prefix in removed:
            scope, params = _below(tx.dialect, prefix)
            for cell, old_digest, vector in tx.execute(
                    f"SELECT cell, digest, vector FROM {_TABLE} WHERE doc_id = ?{scope}", [doc_id, *params]):
                counts[cell] = counts.get(cell, 0) - 1
                kept[bytes(old_digest)] = bytes(vector)
            tx.execute(f"DELETE FROM {_TABLE} WHERE doc_id = ?{scope}", [doc_id, *params])
        units = [unit for unit in added if meaningful(unit.text)]
        if units:
            digests = [digest(unit.text) for unit in units]
            fresh = [i for i, d in enumerate(digests) if d not in kept]
            made = self.embedder.embed([units[i].text for i in fresh])
            self.units_embedded += len(fresh)
            self.units_kept += len(units) - len(fresh)
            blobs = [kept.get(d, b"") for d in digests]
            for i, vector in zip(fresh, made, strict=True):
                blobs[i] = pack(vector)
            centroids = self._centroids(tx)
            if centroids is None:
                cells = [_UNSORTED] * len(units)
            else:
                from schemadoc.search.embeddings import unpack

                cells = [int(cell) for cell in nearest_cells(unpack(blobs), centroids)]
            for cell in cells:
                counts[cell] = counts.get(cell, 0) + 1
            tx.executemany(f"INSERT INTO {_TABLE} (doc_id, pointer, digest, cell, vector) VALUES (?, ?, ?, ?, ?)",
                           [(doc_id, unit.pointer, d, cell, blob)
                            for unit, d, cell, blob in zip(units, digests, cells, blobs, strict=True)])
        self._count(tx, counts)
        if counts.get(_UNSORTED, 0) > 0 and self._cells is not None and self._cells[1] is None:
            unsorted = tx.execute(f"SELECT units FROM {_CELLS} WHERE cell = ?", [_UNSORTED])
            if unsorted and unsorted[0][0] >= TRAIN_AT:
                self._train(tx)

    def on_document_removed(self, tx: IndexTransaction, doc_id: str) -> None:
        counts: dict[int, int] = {}
        for (cell,) in tx.execute(f"SELECT cell FROM {_TABLE} WHERE doc_id = ?", [doc_id]):
            counts[cell] = counts.get(cell, 0) - 1
        tx.execute(f"DELETE FROM {_TABLE} WHERE doc_id = ?", [doc_id])
        self._count(tx, counts)

    def on_cleared(self, tx: IndexTransaction) -> None:
        for table in (_TABLE, _CELLS, _STATE):
            tx.execute(f"DELETE FROM {table}")
        self._cells = None

    def rank(self, tx: IndexTransaction, query: str, *, doc_id: str | None, below: str, limit: int,
             text_rank: Callable[[int], list[RankedUnit]]) -> list[RankedUnit]:
        from schemadoc.search.embeddings import Nearest

        vector = self.embedder.embed([query])[0]
        if not vector.any():  # no word of the query is known to the model: nothing is near it
            return []
        nearest = Nearest(vector, limit)
        if doc_id is not None:
            scope, params = _below(tx.dialect, below)
            nearest.feed_rows(self._rows(tx, f"doc_id = ?{scope}", [doc_id, *params]), _BLOCK)
        else:
            for cell in self._probed(tx, vector):
                nearest.feed_rows(self._rows(tx, "1 = 1" if cell is None else "cell = ?",
                                             [] if cell is None else [cell]), _BLOCK)
        self.scored = nearest.scored
        best = [(score, row_id) for score, row_id in nearest.best() if score > 0]
        units = dict(self._units(tx, [row_id for _, row_id in best]))
        return [RankedUnit(*units[row_id], score) for score, row_id in best if row_id in units]

    def _units(self, tx: IndexTransaction, ids: list[int]) -> list[tuple[int, tuple[str, str]]]:
        """(doc_id, pointer) of the vectors ``ids`` (the scan reads ids and vectors only)."""
        if not ids:
            return []
        marks = ", ".join("?" * len(ids))
        return [(row_id, (doc_id, pointer)) for row_id, doc_id, pointer in
                tx.execute(f"SELECT id, doc_id, pointer FROM {_TABLE} WHERE id IN ({marks})", ids)]

    # -- the cells ------------------------------------------------------------------------------------
    def _centroids(self, tx: IndexTransaction) -> Any:
        """The cells' centroids (None before there are any), read again only when another writer changed them."""
        found = tx.execute(f"SELECT value FROM {_STATE} WHERE key = 'cells'")
        token = found[0][0] if found else ""
        if self._cells is None or self._cells[0] != token:
            centroids = None
            if token:
                from schemadoc.search.embeddings import unpack

                rows = tx.execute(f"SELECT centroid FROM {_CELLS} WHERE cell >= 0 ORDER BY cell")
                centroids = unpack([bytes(row[0]) for row in rows])
            self._cells = (token, centroids)
        return self._cells[1]

    def _count(self, tx: IndexTransaction, counts: dict[int, int]) -> None:
        changed = [(cell, delta) for cell, delta in counts.items() if delta]
        if changed:
            tx.executemany(f"INSERT INTO {_CELLS} (cell, units) VALUES (?, ?) ON CONFLICT (cell) DO UPDATE SET "
                           f"units = {_CELLS}.units + excluded.units", changed)

    def _train(self, tx: IndexTransaction) -> None:
        """Group the vectors into cells, once (other writers see the token and use the same cells)."""
        from schemadoc.search.embeddings import nearest_cells, train_cells, unpack

        if tx.dialect == "postgres":  # two servers reaching the size together: one trains
            tx.execute(f"LOCK TABLE {_CELLS} IN EXCLUSIVE MODE")
        if tx.execute(f"SELECT value FROM {_STATE} WHERE key = 'cells'"):
            self._cells = None
            return
        rows = tx.execute(f"SELECT vector FROM {_TABLE} ORDER BY id LIMIT {TRAIN_AT}")
        centroids = train_cells(unpack([bytes(row[0]) for row in rows]), CELLS)
        tx.executemany(f"INSERT INTO {_CELLS} (cell, units, centroid) VALUES (?, 0, ?)",
                       [(cell, pack_centroid) for cell, pack_centroid in enumerate(c.tobytes() for c in centroids)])
        counts: dict[int, int] = {}
        last = -1
        while rows := tx.execute(f"SELECT id, vector FROM {_TABLE} WHERE id > ? ORDER BY id LIMIT {_BLOCK}",
                                 [last]):
            cells = nearest_cells(unpack([bytes(row[1]) for row in rows]), centroids)
            tx.executemany(f"UPDATE {_TABLE} SET cell = ? WHERE id = ?",
                           [(int(cell), row[0]) for cell, row in zip(cells, rows, strict=True)])
            for cell in cells:
                counts[int(cell)] = counts.get(int(cell), 0) + 1
            last = rows[-1][0]
        tx.execute(f"UPDATE {_CELLS} SET units = 0 WHERE cell = ?", [_UNSORTED])
        self._count(tx, counts)
        token = secrets.token_hex(8)
        tx.execute(f"INSERT INTO {_STATE} (key, value) VALUES ('cells', ?)", [token])
        self._cells = (token, centroids)

    def _probed(self, tx: IndexTransaction, vector: Any) -> list[int | None]:
        """The cells a query scores, nearest first (``[None]``: every vector, before there are cells)."""
        centroids = self._centroids(tx)
        if centroids is None:
            return [None]
        sizes = dict(tx.execute(f"SELECT cell, units FROM {_CELLS} WHERE units > 0"))
        budget = max(SCAN_MIN, SCAN_SHARE * sum(sizes.values()))
        probed: list[int | None] = [_UNSORTED] if sizes.get(_UNSORTED) else []
        scanned = sizes.get(_UNSORTED, 0)
        for cell in (centroids @ vector).argsort()[::-1]:
            if scanned >= budget:
                break
            if sizes.get(int(cell)):
                probed.append(int(cell))
                scanned += sizes[int(cell)]
        return probed

    def _rows(self, tx: IndexTransaction, where: str, params: list[Any]) -> Iterable[tuple[Any, bytes]]:
        """(id, vector) of the vectors ``where`` selects, read in blocks by id (keyset: each block costs the same)."""
        last = -1
        while True:
            rows = tx.execute(f"SELECT id, vector FROM {_TABLE} WHERE {where} AND id > ? ORDER BY id LIMIT {_BLOCK}",
                              [*params, last])
            for row_id, vector in rows:
                yield row_id, bytes(vector)
            if len(rows) < _BLOCK:
                return
            last = rows[-1][0]


class HybridRanking:
    """The ``hybrid`` ranking: the full-text and the semantic rankings fused (reciprocal rank fusion)."""

    name = "hybrid"
    generation = "rrf-60"

    def __init__(self, semantic: SemanticRanking) -> None:
        self.semantic = semantic

    def create_tables(self, tx: IndexTransaction) -> None:
        """Nothing of its own: it ranks from the full-text index and the semantic extension's vectors."""

    def on_units_changed(self, tx: IndexTransaction, doc_id: str, removed: Sequence[str],
                         added: Sequence[TextUnit]) -> None:
        """Nothing of its own to keep."""

    def on_document_removed(self, tx: IndexTransaction, doc_id: str) -> None:
        """Nothing of its own to keep."""

    def on_cleared(self, tx: IndexTransaction) -> None:
        """Nothing of its own to keep."""

    def rank(self, tx: IndexTransaction, query: str, *, doc_id: str | None, below: str, limit: int,
             text_rank: Callable[[int], list[RankedUnit]]) -> list[RankedUnit]:
        depth = max(limit, FUSION_DEPTH)
        meaning = self.semantic.rank(tx, query, doc_id=doc_id, below=below, limit=depth, text_rank=text_rank)
        return fuse([text_rank(depth), meaning], limit)


def default_extensions() -> list[IndexExtension]:
    """The extensions a server registers: ``semantic`` and ``hybrid`` with the extra, none without it."""
    if not installed():
        return []
    semantic = SemanticRanking()
    return [semantic, HybridRanking(semantic)]
