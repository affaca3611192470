"""What an index extension (for example a semantic ranking) plugs into the search index.

The search index (:mod:`schemadoc.search.index`) keeps, per document, its text units (:mod:`.units`) in its
own tables: in a SQLite file in the storage directory (files and memory stores) or in the PostgreSQL
database beside the documents. An extension keeps its own tables next to them, in the same database and
the same transactions: each hook is given the open :class:`IndexTransaction`.

The index calls, in order:

- :meth:`IndexExtension.create_tables` once when the index opens (``CREATE TABLE IF NOT EXISTS``);
- :meth:`IndexExtension.on_units_changed` for each write (the units below ``removed`` are gone, ``added``
  are the new ones there: the edit's cost), and with ``removed=("",)`` and every unit when a document is
  created or indexed again whole;
- :meth:`IndexExtension.on_document_removed` when a document is purged (a soft delete keeps its units: the
  index leaves deleted documents out of every answer itself);
- :meth:`IndexExtension.on_cleared` before a rebuild, which then feeds every document's units again. The
  index remembers each extension's ``name`` and ``generation``; when they are new or changed, it clears
  and refeeds that extension from its own units table (no document is loaded for it);
- :meth:`IndexExtension.rank` when ``document_search`` asks for the ranking the extension is named for.

An extension may also have (each optional, looked up by name):

- ``feeds_itself = True``: when its ``generation`` is new over an existing index, the index clears it
  (:meth:`IndexExtension.on_cleared`) and does not feed it the stored units: the extension reads them itself,
  later (the semantic extension embeds them in the background);
- ``on_opened(run)``: called once the index is open (the server answers from then on), with a
  :data:`RunInIndex` for work of its own in the index's database; ``on_closing()`` before the index closes;
- ``note(tx)``: a sentence the answer ranked by this extension carries (None: nothing to say), for example that
  its ranking is not ready yet and full text answered instead.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol, TypeAlias

from schemadoc.search.units import TextUnit

__all__ = ["IndexExtension", "IndexTransaction", "RankedUnit", "RunInIndex"]


class RankedUnit(NamedTuple):
    doc_id: str
    pointer: str
    score: float
    """Higher is better."""


class IndexTransaction(Protocol):
    """One open transaction on the index's database."""

    dialect: str
    """``"sqlite"`` (parameters ``?``) or ``"postgres"`` (psycopg, parameters ``%s``)."""

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        """Run one statement; its rows (empty for a statement without any)."""
        ...

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """Run one statement for each row of parameters."""
        ...


RunInIndex: TypeAlias = Callable[[Callable[["IndexTransaction"], Any]], Any]
"""``run(work)``: ``work(tx)`` in one write transaction of the index, between the index's own batches (never
at the same time as one of this process's), and what it returned."""


class IndexExtension(Protocol):
    name: str
    """The ranking's name, as ``document_search`` asks for it (``"semantic"``, ``"hybrid"``)."""
    generation: str
    """Changes whenever what the extension stores changes (a model, a format): the index then refeeds it."""

    def create_tables(self, tx: IndexTransaction) -> None: ...

    def on_units_changed(self, tx: IndexTransaction, doc_id: str, removed: Sequence[str],
                         added: Sequence[TextUnit]) -> None: ...

    def on_document_removed(self, tx: IndexTransaction, doc_id: str) -> None: ...

    def on_cleared(self, tx: IndexTransaction) -> None: ...

    def rank(self, tx: IndexTransaction, query: str, *, doc_id: str | None, below: str, limit: int,
             text_rank: Callable[[int], list[RankedUnit]]) -> list[RankedUnit]:
        """The best ``limit`` units for ``query`` (across documents, or in ``doc_id`` at or below ``below``),
        best first. ``text_rank(n)`` gives the full-text ranking's best ``n`` in the same scope (for a hybrid
        ranking). Deleted documents may be returned: the index drops them."""
        ...
