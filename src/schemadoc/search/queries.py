"""The queries of the search index (docs/search.md): filters and order over the documents (:meth:`find`, its
totals kept per index generation) and full-text search, ranked by the database or by an extension (:meth:`search`).

:class:`IndexQueries` is the half of :class:`~schemadoc.search.index.SearchIndex` that reads; the other half keeps
the index as the documents change.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from schemadoc.search.backends import Backend
from schemadoc.search.extension import IndexExtension, RankedUnit
from schemadoc.search.fields import KINDS, Query, decode_cursor, encode_cursor
from schemadoc.search.sql import (
    MISSING,
    count_statement,
    list_statement,
    pushed_terms,
    segment_statement,
    sort_columns,
    walkable,
)
from schemadoc.search.text import TextQuery, snippet

__all__ = ["IndexQueries", "ListedPage", "SearchHit", "TextPage"]

_COUNTS_KEPT = 64
"""The totals of the latest filters kept, each with the index generation it was counted at (``find``)."""
_LIVE_SECONDS = 30.0
"""How long the count of live documents a page's plan is weighed with is kept (``find``)."""
RANKED_MATCHES = 2_000
"""A search across every document ranks at most this many of its matches, the most recently indexed: ranking every
match of a word found in every document grows with the store (half a second at 100,000 books). One that matches
more says so in its answer's note; a search within documents or below a pointer ranks all its matches."""
_UNIT_STATEMENT = ("SELECT u.text, d.label FROM search_units u JOIN search_docs d ON d.doc_id = u.doc_id "
                   "WHERE u.doc_id = ? AND u.pointer = ? AND d.deleted = 0")


@dataclass(frozen=True)
class ListedPage:
    doc_ids: list[str]
    labels: dict[str, str | None]
    total: int
    next_cursor: str | None


@dataclass(frozen=True)
class SearchHit:
    doc_id: str
    pointer: str
    snippet: str
    label: str | None
    score: float


@dataclass(frozen=True)
class TextPage:
    hits: list[SearchHit]
    next_cursor: str | None
    note: str | None = None
    """What the ranking's extension says of this answer (for example: not ready, full text answered)."""


class IndexQueries:
    """What the index answers; :class:`~schemadoc.search.index.SearchIndex` supplies the backend, the extensions
    and :meth:`sync` (every query first applies what is still pending, so a process always finds its own writes)."""

    backend: Backend
    _extensions: list[IndexExtension]

    walk_plan: bool | None = None
    """Whether a page walks its order's index (True) or collects the matches and sorts them (False), whatever they
    cost; None (the default) takes the cheaper. The two plans answer alike: the tests compare them."""

    def __init__(self) -> None:
        self._counts: OrderedDict[tuple[Any, ...], tuple[Any, int]] = OrderedDict()
        self._counts_lock = threading.Lock()
        self._live_count: tuple[int, float] | None = None

    def sync(self) -> None:
        raise NotImplementedError

    def find(self, query: Query, *, limit: int, offset: int = 0, cursor: str | None = None) -> ListedPage:
        """A page of the live documents ``query`` selects, in its order, with the total it selects.

        The total is the count of every match, which costs what the matches are, not the page: it is kept
        with the index's generation (:meth:`Backend.generation`) and counted again only when the index changed,
        so the pages after the first of a listing cost their keyset lookup alone, at any depth."""
        self.sync()
        after = decode_cursor(query, cursor, lambda values: _cursor_fits(query, values)) if cursor else None
        dialect = self.backend.dialect
        counting, counting_params = count_statement(query, dialect)
        key = (counting, *counting_params)
        member = query.sort.startswith("/")
        with self.backend.transaction(write=False) as tx:
            generation = self.backend.generation(tx)
            total = self._known_count(key, generation)
            walked = False
            if (member and offset == 0) or (query.terms and walkable(query)):
                if total is None:  # counted first: it tells which page's plan costs less
                    total = self._count(tx, generation, counting, counting_params)
                live = self._live(tx, dialect)
                # walking the order's index tests about (rows wanted) x live / total documents; collecting the
                # matches and sorting them costs `total`
                walked = total * total > 4 * (limit + 1 + offset) * live if self.walk_plan is None else self.walk_plan
            if walked and member:
                rows = self._walk_member(tx, query, after, limit + 1, generation)
            else:
                # the first page of a filtered listing counts in its own statement (one evaluation of the matches,
                # which its order then sorts: on SQLite a third of 20,000 books took 150 ms so, 235 ms in two
                # statements); a listing of everything counts apart (an index's entries: its page is a walk of 21
                # rows of that index, which a count in the statement would turn into a sort of every document),
                # and so does a page after a cursor (it sees only the rows after it)
                counted = total is None and after is None and bool(query.terms or member)
                rows = tx.execute(*list_statement(query, dialect, after=after, limit=limit + 1, offset=offset,
                                                  counted=counted, walked=walked))
                if counted and rows:
                    total = int(rows[0][-1])
                    rows = [row[:-1] for row in rows]
            if total is None:
                total = int(tx.execute(counting, counting_params)[0][0])
            self._keep_count(key, generation, total)
        more = len(rows) > limit
        rows = rows[:limit]
        next_cursor = encode_cursor(query, list(rows[-1][2:])) if more and rows else None
        return ListedPage([r[0] for r in rows], {r[0]: r[1] for r in rows}, total, next_cursor)

    def _live(self, tx: Any, dialect: str) -> int:
        """How many live documents there are, counted again at most every :data:`_LIVE_SECONDS`: it only weighs one
        page's plan against another (never an answer), and on PostgreSQL it took 10 ms at 100,000 books, which the
        first filter after every write paid."""
        now = time.monotonic()
        if self._live_count is None or now - self._live_count[1] > _LIVE_SECONDS:
            sql, params = count_statement(Query((), "created", False), dialect)
            self._live_count = (int(tx.execute(sql, params)[0][0]), now)
        return self._live_count[0]

    def _count(self, tx: Any, generation: Any, sql: str, params: list[Any]) -> int:
        """A count, kept with the index's generation."""
        known = self._known_count((sql, *params), generation)
        if known is None:
            known = int(tx.execute(sql, params)[0][0])
            self._keep_count((sql, *params), generation, known)
        return known

    def _walk_member(self, tx: Any, query: Query, after: list[Any] | None, wanted: int,
                     generation: Any) -> list[tuple[Any, ...]]:
        """A page in a member's order, walked in the sort index one kind after the other (:func:`segment_statement`):
        a cursor's page starts in its kind's share. A term on the sort member itself is read as a range of the walk
        when every document has one row of it at most; the documents without it come last, and are looked for only
        when some document has no row of the member."""
        dialect = self.backend.dialect
        pushed = pushed_terms(query)
        if pushed and (tx.execute("SELECT max(pos) FROM search_fields WHERE field = ?", [query.sort])[0][0] or 0):
            pushed = []  # an array of several items somewhere: a term holds when any item does, not the first only
        ranks = sorted(set(KINDS.values()))
        if pushed:
            ranks = [r for r in ranks if all(rank == r for rank, _ in pushed)]  # the member is there, of that kind
        elif self._count(tx, generation, "SELECT count(*) FROM search_fields WHERE field = ? AND pos = 0",
                         [query.sort]) < self._count(tx, generation, "SELECT count(*) FROM search_docs", []):
            ranks.append(MISSING)
        start = int(after[0]) if after is not None else -1
        rows: list[tuple[Any, ...]] = []
        for rank in ranks:
            if rank < start:
                continue
            rows += tx.execute(*segment_statement(query, dialect, rank, pushed=[c for _, c in pushed],
                                                  after=after if rank == start else None, limit=wanted - len(rows)))
            if len(rows) >= wanted:
                break
        return rows

    def _known_count(self, key: tuple[Any, ...], generation: Any) -> int | None:
        if generation is None:
            return None
        with self._counts_lock:
            known = self._counts.get(key)
            if known is None or known[0] != generation:
                return None
            self._counts.move_to_end(key)
            return known[1]

    def _keep_count(self, key: tuple[Any, ...], generation: Any, total: int) -> None:
        if generation is None:
            return
        with self._counts_lock:
            self._counts[key] = (generation, total)
            self._counts.move_to_end(key)
            while len(self._counts) > _COUNTS_KEPT:
                self._counts.popitem(last=False)

    def search(self, text: TextQuery, *, doc_ids: Sequence[str] | None = None, below: str = "", limit: int = 20,
               cursor: str | None = None, ranking: str = "text") -> TextPage:
        """The units matching ``text``, best first (BM25 on SQLite, ``ts_rank_cd`` on PostgreSQL), in
        ``doc_ids`` (all documents when None) at or below the pointer ``below``."""
        self.sync()
        scope, params = _scope(doc_ids, below)
        binding = Query((), orjson.dumps([text.fts5(), sorted(doc_ids or []), below, ranking]).decode(), False)
        after = decode_cursor(binding, cursor) if cursor else None
        if ranking != "text":
            return self._ranked(ranking, text, binding, doc_ids, below, limit, after)
        candidates = _candidates(doc_ids, below)
        with self.backend.transaction(write=False) as tx:
            rows, more = self.backend.ranked_matches(tx, text, scope, params, after, limit + 1, candidates=candidates,
                                                     in_documents=doc_ids is not None)
            note = _bounded_note(candidates) if candidates is not None and more else None
        hits = [SearchHit(r[1], r[2], snippet(r[4], text), r[5], float(r[3])) for r in rows[:limit]]
        more = len(rows) > limit
        return TextPage(hits, encode_cursor(binding, [rows[limit - 1][3], rows[limit - 1][0]]) if more else None,
                        note)

    def rankings(self) -> list[str]:
        """The rankings ``search`` takes: ``text`` and each extension's."""
        return ["text", *(e.name for e in self._extensions)]

    def _ranked(self, ranking: str, text: TextQuery, binding: Query, doc_ids: Sequence[str] | None, below: str,
                limit: int, after: list[Any] | None) -> TextPage:
        extension = next(e for e in self._extensions if e.name == ranking)
        start = int(after[0]) if after else 0
        scopes = list(doc_ids) if doc_ids is not None else [None]
        with self.backend.transaction(write=False) as tx:
            ranked: list[RankedUnit] = []
            for doc_id in scopes:
                def text_rank(n: int, doc_id: str | None = doc_id) -> list[RankedUnit]:
                    within = None if doc_id is None else [doc_id]
                    scope, params = _scope(within, below)
                    rows, _ = self.backend.ranked_matches(tx, text, scope, params, None, n,
                                                          candidates=_candidates(within, below),
                                                          in_documents=doc_id is not None, tell_more=False)
                    return [RankedUnit(r[1], r[2], float(r[3])) for r in rows]
                ranked += extension.rank(tx, " ".join(" ".join(p.words) for p in text.parts), doc_id=doc_id,
                                         below=below, limit=start + limit + 1, text_rank=text_rank)
            ranked.sort(key=lambda r: -r.score)
            hits: list[SearchHit] = []
            for unit in ranked[start:]:
                found = tx.execute(_UNIT_STATEMENT, [unit.doc_id, unit.pointer])
                if found:
                    hits.append(SearchHit(unit.doc_id, unit.pointer, snippet(found[0][0], text), found[0][1],
                                          unit.score))
                if len(hits) > limit:
                    break
            noted = getattr(extension, "note", None)
            note = noted(tx) if noted is not None else None
        more = len(hits) > limit
        return TextPage(hits[:limit], encode_cursor(binding, [start + limit]) if more else None, note)


def _cursor_fits(query: Query, values: list[Any]) -> bool:
    """Whether a cursor's sort values are of this query's order: as many as its columns, scalars, and for a
    member's order its kind's rank, value and text."""
    if len(values) != len(sort_columns(query)) or not all(
            v is None or isinstance(v, str | int | float) for v in values):
        return False
    return not query.sort.startswith("/") or (
        type(values[0]) is int and 0 <= values[0] <= MISSING and isinstance(values[1], int | float)
        and isinstance(values[2], str) and isinstance(values[3], str))


def _scope(doc_ids: Sequence[str] | None, below: str) -> tuple[str, list[Any]]:
    """The condition on a unit ``u`` of being in ``doc_ids`` (all when None) at or below ``below``."""
    scope, params = "1 = 1", []
    if doc_ids is not None:
        scope += f" AND u.doc_id IN ({', '.join('?' * len(doc_ids))})" if doc_ids else " AND 1 = 0"
        params += list(doc_ids)
    if below:
        scope += " AND (u.pointer = ? OR (u.pointer >= ? AND u.pointer < ?))"
        params += [below, below + "/", below + "0"]
    return scope, params


def _candidates(doc_ids: Sequence[str] | None, below: str) -> int | None:
    """How many matches a search ranks: :data:`RANKED_MATCHES` across every document, all of them within some."""
    return RANKED_MATCHES if doc_ids is None and below == "" else None


def _bounded_note(candidates: int) -> str:
    return (f"This search matches more than {candidates:,} places: these hits are the best of the {candidates:,} "
            "most recently indexed. Add a word or a phrase, or search within documents, for a ranking of every match.")
