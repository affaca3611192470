"""Semantic search: text units ranked by meaning, and hybrid ranking (meaning fused with full text).

An extra: ``pip install 'schemadoc[semantic]'`` brings ``wordllama`` (static word embeddings that run on a
CPU, the model inside its wheel). With it, two index extensions (:mod:`.extension`) are registered:

- ``semantic``: keeps a vector per text unit in the index's database (table ``semantic_vectors``: the
  document, the unit's pointer, an 8-byte digest of its text, 256 float32 as a blob; ``bytea`` on
  PostgreSQL, no pgvector needed). A write embeds only the units it changed: the index hands over the
  units below the places the patch reached, and among those a unit whose text is unchanged (an array
  item that only shifted) keeps its vector. A query is embedded and scored by cosine against every
  vector in scope, read block by block (bounded memory, cost linear in the units in scope);
- ``hybrid`` (the default ranking when the extra is installed): reciprocal rank fusion of the full-text
  ranking's and the semantic ranking's best units (each unit scores ``sum 1 / (60 + rank)``).

Without the extra, asking for either ranking is refused with ``semantic-search-unavailable``, which says
how to install it. This module imports ``numpy`` and ``wordllama`` only when the extra is there.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from schemadoc.errors import SchemaDocError
from schemadoc.search.extension import IndexExtension, IndexTransaction, RankedUnit
from schemadoc.search.units import TextUnit

if TYPE_CHECKING:
    from schemadoc.search.embeddings import Embedder

__all__ = ["EXTRA", "RANKINGS", "HybridRanking", "SemanticRanking", "default_extensions", "fuse", "installed",
           "unavailable"]

EXTRA = "pip install 'schemadoc[semantic]'"
RANKINGS = ("semantic", "hybrid")
"""The rankings this module provides."""
RRF_K = 60
"""Reciprocal rank fusion's constant (Cormack et al., 2009): a unit at rank r adds 1 / (60 + r)."""
FUSION_DEPTH = 50
"""How many units of each ranking a hybrid query fuses (at least the page asked for)."""
_BLOCK = 4_096
_TABLE = "semantic_vectors"


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
    mark = "%s" if dialect == "postgres" else "?"
    return (f" AND (pointer{collate} = {mark} OR (pointer{collate} >= {mark} AND pointer{collate} < {mark}))",
            [prefix, prefix + "/", prefix + "0"])


class SemanticRanking:
    """The ``semantic`` index extension: a vector per text unit, kept from each write's changed units."""

    name = "semantic"
    generation = "wordllama-0.4/l2_supercat_256/float32-1"
    """The model and the stored format: a change makes the index clear and refeed this extension."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        from schemadoc.search.embeddings import embedder as process_embedder

        self.embedder = embedder if embedder is not None else process_embedder()
        self.units_embedded = 0
        """Units this extension embedded for writes (not queries): what the writes cost."""
        self.units_kept = 0
        """Units whose vector was kept because their text did not change (moved or shifted)."""

    # -- the index's hooks ------------------------------------------------------------------------------
    def create_tables(self, tx: IndexTransaction) -> None:
        if tx.dialect == "postgres":
            tx.execute(f"CREATE TABLE IF NOT EXISTS {_TABLE} (id BIGSERIAL PRIMARY KEY, doc_id TEXT NOT NULL, "
                       "pointer TEXT NOT NULL, digest BYTEA NOT NULL, vector BYTEA NOT NULL)")
            tx.execute(f'CREATE UNIQUE INDEX IF NOT EXISTS {_TABLE}_unit ON {_TABLE} (doc_id, pointer COLLATE "C")')
        else:
            tx.execute(f"CREATE TABLE IF NOT EXISTS {_TABLE} (id INTEGER PRIMARY KEY, doc_id TEXT NOT NULL, "
                       "pointer TEXT NOT NULL, digest BLOB NOT NULL, vector BLOB NOT NULL)")
            tx.execute(f"CREATE UNIQUE INDEX IF NOT EXISTS {_TABLE}_unit ON {_TABLE} (doc_id, pointer)")

    def on_units_changed(self, tx: IndexTransaction, doc_id: str, removed: Sequence[str],
                         added: Sequence[TextUnit]) -> None:
        from schemadoc.search.embeddings import digest, pack

        mark = "%s" if tx.dialect == "postgres" else "?"
        kept: dict[bytes, bytes] = {}  # a removed unit's text digest -> its vector, for a unit that only moved
        for prefix in removed:
            scope, params = _below(tx.dialect, prefix)
            where = f"doc_id = {mark}{scope}"
            if added:
                for old_digest, vector in tx.execute(f"SELECT digest, vector FROM {_TABLE} WHERE {where}",
                                                     [doc_id, *params]):
                    kept[bytes(old_digest)] = bytes(vector)
            tx.execute(f"DELETE FROM {_TABLE} WHERE {where}", [doc_id, *params])
        if not added:
            return
        digests = [digest(unit.text) for unit in added]
        fresh = [i for i, d in enumerate(digests) if d not in kept]
        vectors = self.embedder.embed([added[i].text for i in fresh])
        made = dict(zip(fresh, (pack(vector) for vector in vectors), strict=True))
        self.units_embedded += len(fresh)
        self.units_kept += len(added) - len(fresh)
        tx.executemany(f"INSERT INTO {_TABLE} (doc_id, pointer, digest, vector) VALUES ({mark}, {mark}, {mark}, "
                       f"{mark})",
                       [(doc_id, unit.pointer, digests[i], made[i] if i in made else kept[digests[i]])
                        for i, unit in enumerate(added)])

    def on_document_removed(self, tx: IndexTransaction, doc_id: str) -> None:
        mark = "%s" if tx.dialect == "postgres" else "?"
        tx.execute(f"DELETE FROM {_TABLE} WHERE doc_id = {mark}", [doc_id])

    def on_cleared(self, tx: IndexTransaction) -> None:
        tx.execute(f"DELETE FROM {_TABLE}")

    def rank(self, tx: IndexTransaction, query: str, *, doc_id: str | None, below: str, limit: int,
             text_rank: Callable[[int], list[RankedUnit]]) -> list[RankedUnit]:
        from schemadoc.search.embeddings import Nearest

        vector = self.embedder.embed([query])[0]
        if not vector.any():  # no word of the query is known to the model: nothing is near it
            return []
        nearest = Nearest(vector, limit)
        nearest.feed_rows(self._rows(tx, doc_id, below), _BLOCK)
        return [RankedUnit(unit_doc, pointer, score) for score, (unit_doc, pointer) in nearest.best() if score > 0]

    def _rows(self, tx: IndexTransaction, doc_id: str | None, below: str) -> Iterable[tuple[Any, bytes]]:
        """Every vector in scope, read in blocks by id (keyset: each block costs the same)."""
        mark = "%s" if tx.dialect == "postgres" else "?"
        where, params = "", []
        if doc_id is not None:
            scope, scope_params = _below(tx.dialect, below)
            where, params = f" AND doc_id = {mark}{scope}", [doc_id, *scope_params]
        last = -1
        while True:
            rows = tx.execute(f"SELECT id, doc_id, pointer, vector FROM {_TABLE} WHERE id > {mark}{where} "
                              f"ORDER BY id LIMIT {_BLOCK}", [last, *params])
            for _, unit_doc, pointer, vector in rows:
                yield (unit_doc, pointer), bytes(vector)
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
