"""The ``hybrid`` ranking (docs/search.md): the full-text ranking's and the semantic ranking's best units fused by
reciprocal rank fusion (each unit scores ``sum 1 / (60 + rank)``); the default ranking when the semantic extra is
installed. :func:`default_extensions` is what a server registers: ``semantic`` and ``hybrid`` with the extra,
nothing without it."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from schemadoc.search import semantic
from schemadoc.search.extension import IndexExtension, IndexTransaction, RankedUnit
from schemadoc.search.semantic import SemanticRanking
from schemadoc.search.units import TextUnit

__all__ = ["FUSION_DEPTH", "RRF_K", "HybridRanking", "default_extensions", "fuse"]

RRF_K = 60
"""Reciprocal rank fusion's constant (Cormack et al., 2009): a unit at rank r adds 1 / (60 + r)."""
FUSION_DEPTH = 50
"""How many units of each ranking a hybrid query fuses (at least the page asked for)."""


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

    def note(self, tx: IndexTransaction) -> str | None:
        return self.semantic.note(tx)

    def rank(self, tx: IndexTransaction, query: str, *, doc_id: str | None, below: str, limit: int,
             text_rank: Callable[[int], list[RankedUnit]]) -> list[RankedUnit]:
        if self.semantic.feeding(tx):
            return text_rank(limit)
        depth = max(limit, FUSION_DEPTH)
        meaning = self.semantic.rank(tx, query, doc_id=doc_id, below=below, limit=depth, text_rank=text_rank)
        return fuse([text_rank(depth), meaning], limit)


def default_extensions() -> list[IndexExtension]:
    """The extensions a server registers: ``semantic`` and ``hybrid`` with the extra, none without it."""
    if not semantic.installed():
        return []
    ranking = SemanticRanking()
    return [ranking, HybridRanking(ranking)]
