"""Semantic search: text units ranked by meaning, and hybrid ranking (meaning fused with full text).

An extra: ``pip install 'schemadoc[semantic]'`` brings ``wordllama`` (static word embeddings that run on a
CPU, the model inside its wheel). With it, two index extensions (:mod:`.extension`) are registered:

- ``semantic``: keeps a vector per text unit in the index's database (table ``semantic_units``: the document,
  the unit's pointer, an 8-byte digest of its text, its cell, its 32-byte sign code and 256 float32 as a blob;
  ``bytea`` on PostgreSQL, no pgvector needed). A write embeds only the units it changed: the index hands over
  the units below the places the patch reached, and among those a unit whose text is unchanged (an array item
  that only shifted) keeps its vector. Only units of two words or more are embedded. A query within one
  document scores all of its vectors exactly. A query across documents reads the sign codes of the cells
  nearest the query, packed a cell to a row (``semantic_packs``), keeps the few hundred nearest by Hamming
  distance, and scores those exactly (:class:`SemanticRanking`);
- ``hybrid`` (the default ranking when the extra is installed): reciprocal rank fusion of the full-text
  ranking's and the semantic ranking's best units (each unit scores ``sum 1 / (60 + rank)``).

When the vectors are made anew over an existing store (the extra just installed, the format changed, the index
rebuilt), the index opens at once and a thread of this module embeds the stored units in batches behind it
(:class:`SemanticRanking`'s feed), resumable from where a stopped server left it; until it is done both rankings
answer by full text, with a note saying so.

Without the extra, asking for either ranking is refused with ``semantic-search-unavailable``, which says
how to install it. This module imports ``numpy`` and ``wordllama`` only when the extra is there.
"""

from __future__ import annotations

import importlib.util
import logging
import secrets
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from schemadoc.errors import SchemaDocError
from schemadoc.search.extension import IndexTransaction, RankedUnit
from schemadoc.search.semantic_feed import FEED_KEY as _FEED
from schemadoc.search.semantic_feed import STATE as _STATE
from schemadoc.search.semantic_feed import SemanticFeed, meaningful
from schemadoc.search.units import TextUnit

if TYPE_CHECKING:
    from schemadoc.search.embeddings import Embedder

__all__ = ["EXTRA", "RANKINGS", "SemanticRanking", "installed", "meaningful", "unavailable"]

log = logging.getLogger("schemadoc.search")

EXTRA = "pip install 'schemadoc[semantic]'"
RANKINGS = ("semantic", "hybrid")
"""The rankings this module provides."""
CELLS = 1_024
"""How many cells the vectors are grouped into."""
TRAIN_AT = 32_768
"""The vectors the cells are made from, once the table holds that many (until then a query reads every code)."""
SCAN_MIN = 65_536
"""A query across documents reads the codes of at least this many vectors (all of them in a smaller store)."""
SCAN_SHARE = 0.02
"""... or this share of them, whichever is more."""
RERANK_MIN = 400
"""The vectors nearest by code that a query across documents scores exactly: at least this many ..."""
RERANK_FACTOR = 8
"""... or this many times the units asked for."""
LOOSE_MIN = 16
"""A cell's pack is made again once more than this many of its vectors, or a sixteenth of them, changed since."""
_READ_VECTORS = 65_536
"""The codes a query reads in one statement (its memory: 40 bytes each)."""
_BLOCK = 4_096
_UNITS = "semantic_units"
_PACKS = "semantic_packs"
_GONE = "semantic_gone"
_CELLS = "semantic_cellinfo"
_CENTROIDS = "semantic_centroids"
_FORMER = ("semantic_vectors", "semantic_cells")
"""The tables of the format before packed codes (generation ``...float32-cells-1``), dropped when cleared."""
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


def _below(dialect: str, prefix: str) -> tuple[str, list[Any]]:
    """SQL (and its parameters) for a unit's pointer at or below ``prefix``: every pointer starting with
    ``prefix + "/"`` sorts between it and ``prefix + "0"`` ('0' follows '/'), compared byte by byte."""
    if prefix == "":
        return "", []
    collate = ' COLLATE "C"' if dialect == "postgres" else ""
    return (f" AND (pointer{collate} = ? OR (pointer{collate} >= ? AND pointer{collate} < ?))",
            [prefix, prefix + "/", prefix + "0"])


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


def _chunks(values: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start:start + size]


class SemanticRanking(SemanticFeed):
    """The ``semantic`` index extension: a vector per text unit, kept from each write's changed units.

    **Cells.** Once the table holds :data:`TRAIN_AT` vectors, they are grouped into :data:`CELLS` cells
    (spherical k-means, centroids stored in ``semantic_centroids``, the count of each cell in
    ``semantic_cellinfo``, kept by every write); a new vector joins its nearest cell. A query across documents
    reads the cells nearest to it until it has read :data:`SCAN_MIN` vectors or :data:`SCAN_SHARE` of them,
    whichever is more: every vector below that size, a bounded share above it. A query in one document scores all
    of that document's vectors.

    **Packs.** A cell's vectors are read as one row of ``semantic_packs``: their ids and their sign codes (32
    bytes each, :func:`~schemadoc.search.embeddings.codes`). A vector written since its cell was packed is
    *loose* (``packed = 0``, read from a partial index of the loose rows), one deleted since is listed in
    ``semantic_gone`` until the pack is made again, which the write that makes the loose and the gone of a cell
    more than :data:`LOOSE_MIN` or a sixteenth of it does. The codes read give the
    ``max(RERANK_MIN, RERANK_FACTOR * limit)`` nearest by Hamming distance, which are then scored exactly by
    cosine from their float32 vectors.

    **The feed.** :meth:`on_cleared` starts a feed (state ``feed_after``): a write to a document not fed yet
    leaves it to the feed, which a thread of this object (started by :meth:`on_opened`) runs in batches of
    :data:`FEED_UNITS` units in document order, each batch committed with the position reached, so a server
    stopped half-way resumes there. Until it is done, a query is answered by full text (:meth:`note` says so).
    """

    name = "semantic"
    generation = "wordllama-0.4/l2_supercat_256/float32+sign-packs-2"
    """The model and the stored format: a change makes the index clear this extension, which then feeds itself."""
    feeds_itself = True
    """After :meth:`on_cleared`, the index need not feed this extension the stored units: its feed reads them."""

    def __init__(self, embedder: Embedder | None = None) -> None:
        from schemadoc.search.embeddings import embedder as process_embedder

        super().__init__()
        self.embedder = embedder if embedder is not None else process_embedder()
        self.units_embedded = 0
        """Units this extension embedded for writes and its feed (not queries): what the writes cost."""
        self.units_kept = 0
        """Units whose vector was kept because their text did not change (moved or shifted)."""
        self.scored = 0
        """Vectors the last query read the codes of (across documents) or scored (in documents)."""
        self.repacked = 0
        """Packs made again (a count, for tests and benchmarks)."""
        self._cells: tuple[str, Any] | None = None  # (the cells' token, their centroids), as last read

    # -- the index's hooks ------------------------------------------------------------------------------
    def create_tables(self, tx: IndexTransaction) -> None:
        # ids are never used again (SQLite: AUTOINCREMENT), so that a pack's gone id never names a later row
        blob, key = ("BYTEA", "BIGSERIAL PRIMARY KEY") if tx.dialect == "postgres" else (
            "BLOB", "INTEGER PRIMARY KEY AUTOINCREMENT")
        collate = ' COLLATE "C"' if tx.dialect == "postgres" else ""
        tx.execute(f"CREATE TABLE IF NOT EXISTS {_UNITS} (id {key}, doc_id TEXT NOT NULL, "
                   f"pointer TEXT{collate} NOT NULL, digest {blob} NOT NULL, cell INTEGER NOT NULL, "
                   f"packed SMALLINT NOT NULL, code {blob} NOT NULL, vector {blob} NOT NULL)")
        tx.execute(f"CREATE UNIQUE INDEX IF NOT EXISTS {_UNITS}_unit ON {_UNITS} (doc_id, pointer)")
        tx.execute(f"CREATE INDEX IF NOT EXISTS {_UNITS}_loose ON {_UNITS} (cell, id, code) WHERE packed = 0")
        tx.execute(f"CREATE TABLE IF NOT EXISTS {_PACKS} (cell INTEGER PRIMARY KEY, ids {blob} NOT NULL, "
                   f"codes {blob} NOT NULL)")
        tx.execute(f"CREATE TABLE IF NOT EXISTS {_GONE} (cell INTEGER NOT NULL, id BIGINT NOT NULL, "
                   f"PRIMARY KEY (cell, id))")
        tx.execute(f"CREATE TABLE IF NOT EXISTS {_CELLS} (cell INTEGER PRIMARY KEY, units BIGINT NOT NULL, "
                   f"loose BIGINT NOT NULL)")
        tx.execute(f"CREATE TABLE IF NOT EXISTS {_CENTROIDS} (cell INTEGER PRIMARY KEY, centroid {blob} NOT NULL)")
        tx.execute(f"CREATE TABLE IF NOT EXISTS {_STATE} (key TEXT PRIMARY KEY, value TEXT NOT NULL)")

    def on_units_changed(self, tx: IndexTransaction, doc_id: str, removed: Sequence[str],
                         added: Sequence[TextUnit]) -> None:
        if self._left_to_feed(tx, doc_id):
            return  # the feed reads this document's units when it gets there
        self._replace(tx, doc_id, removed, added, None)

    def on_document_removed(self, tx: IndexTransaction, doc_id: str) -> None:
        rows = tx.execute(f"SELECT id, cell, packed FROM {_UNITS} WHERE doc_id = ?", [doc_id])
        if not rows:
            return
        self._lock_cells(tx, {row[1] for row in rows})
        tx.execute(f"DELETE FROM {_UNITS} WHERE doc_id = ?", [doc_id])
        self._forget(tx, rows)

    def on_cleared(self, tx: IndexTransaction) -> None:
        for table in (_UNITS, _PACKS, _GONE, _CELLS, _CENTROIDS, _STATE):
            tx.execute(f"DELETE FROM {table}")
        if tx.dialect == "sqlite":  # the former format's rows (a PostgreSQL role may not drop: they stay, unread)
            for table in _FORMER:
                tx.execute(f"DROP TABLE IF EXISTS {table}")
        tx.execute(f"INSERT INTO {_STATE} (key, value) VALUES (?, '')", [_FEED])
        self._cells = None

    def rank(self, tx: IndexTransaction, query: str, *, doc_id: str | None, below: str, limit: int,
             text_rank: Callable[[int], list[RankedUnit]]) -> list[RankedUnit]:
        if self.feeding(tx):
            return text_rank(limit)
        vector = self.embedder.embed([query])[0]
        if not vector.any():  # no word of the query is known to the model: nothing is near it
            return []
        if doc_id is None:
            best = self._across(tx, vector, limit)
        else:
            from schemadoc.search.embeddings import Nearest

            nearest = Nearest(vector, limit)
            scope, params = _below(tx.dialect, below)
            nearest.feed_rows(self._rows(tx, f"doc_id = ?{scope}", [doc_id, *params]), _BLOCK)
            self.scored = nearest.scored
            best = nearest.best()
        return [RankedUnit(doc, pointer, score) for score, (doc, pointer) in best if score > 0]

    # -- a query across documents -----------------------------------------------------------------------
    def _across(self, tx: IndexTransaction, vector: Any, limit: int) -> list[tuple[float, tuple[str, str]]]:
        """The best ``limit`` (score, (doc_id, pointer)): codes of the probed cells, then exact scores."""
        import numpy as np

        from schemadoc.search.embeddings import CODE_BYTES, Coarse, unpack

        coarse = Coarse(vector, max(RERANK_MIN, RERANK_FACTOR * limit))
        for cells in self._probed(tx, vector):
            marks = _marks(cells)
            gone = np.array([row[0] for row in tx.execute(f"SELECT id FROM {_GONE} WHERE cell IN ({marks})", cells)],
                            dtype=np.int64)
            packs = tx.execute(f"SELECT ids, codes FROM {_PACKS} WHERE cell IN ({marks})", cells)
            coarse.feed(np.frombuffer(b"".join(bytes(row[0]) for row in packs), dtype="<i8"),
                        np.frombuffer(b"".join(bytes(row[1]) for row in packs), dtype=np.uint8).reshape(-1, CODE_BYTES),
                        gone)
            loose = tx.execute(f"SELECT id, code FROM {_UNITS} WHERE packed = 0 AND cell IN ({marks})", cells)
            coarse.feed(np.array([row[0] for row in loose], dtype=np.int64),
                        np.frombuffer(b"".join(bytes(row[1]) for row in loose), dtype=np.uint8).reshape(-1, CODE_BYTES))
        self.scored = coarse.scored
        found: list[tuple[float, int, tuple[str, str]]] = []
        for ids in _chunks([int(i) for i in coarse.best()]):
            rows = tx.execute(f"SELECT id, doc_id, pointer, vector FROM {_UNITS} WHERE id IN ({_marks(ids)})", ids)
            if rows:
                scores = unpack([bytes(row[3]) for row in rows]) @ vector
                # to float32's precision: one text stored twice scores the same wherever BLAS summed it
                found += [(round(float(score), 6), row[0], (row[1], row[2]))
                          for score, row in zip(scores, rows, strict=True)]
        found.sort(key=lambda item: (-item[0], item[1]))
        return [(score, unit) for score, _, unit in found[:limit]]

    def _probed(self, tx: IndexTransaction, vector: Any) -> list[list[int]]:
        """The cells a query reads, nearest first, in groups of about :data:`_READ_VECTORS` vectors (each group one
        statement)."""
        sizes = dict(tx.execute(f"SELECT cell, units FROM {_CELLS} WHERE units > 0"))
        centroids = self._centroids(tx)
        order: list[int] = [_UNSORTED] if sizes.get(_UNSORTED) else []
        if centroids is not None:
            budget = max(SCAN_MIN, SCAN_SHARE * sum(sizes.values()))
            scanned = sizes.get(_UNSORTED, 0)
            for cell in (centroids @ vector).argsort()[::-1]:
                if scanned >= budget:
                    break
                if sizes.get(int(cell)):
                    order.append(int(cell))
                    scanned += sizes[int(cell)]
        groups: list[list[int]] = []
        held = _READ_VECTORS
        for cell in order:
            if held + sizes[cell] > _READ_VECTORS or len(groups[-1]) >= 500:
                groups.append([])
                held = 0
            groups[-1].append(cell)
            held += sizes[cell]
        return groups

    def _rows(self, tx: IndexTransaction, where: str, params: list[Any]) -> Iterable[tuple[Any, bytes]]:
        """((doc_id, pointer), vector) of the vectors ``where`` selects, read in blocks by id (keyset: each block
        costs the same)."""
        last = -1
        while True:
            rows = tx.execute(f"SELECT id, doc_id, pointer, vector FROM {_UNITS} WHERE {where} AND id > ? "
                              f"ORDER BY id LIMIT {_BLOCK}", [*params, last])
            for _, doc_id, pointer, vector in rows:
                yield (doc_id, pointer), bytes(vector)
            if len(rows) < _BLOCK:
                return
            last = rows[-1][0]

    # -- writing vectors --------------------------------------------------------------------------------
    def _replace(self, tx: IndexTransaction, doc_id: str, removed: Sequence[str], added: Sequence[TextUnit],
                 made: dict[bytes, Any] | None) -> None:
        """The units of ``doc_id`` below ``removed`` replaced by ``added``; a text whose vector is in ``made`` (by
        digest) or was below ``removed`` is not embedded again."""
        from schemadoc.search.embeddings import codes, digest, nearest_cells, pack, unpack

        old: list[tuple[Any, ...]] = []
        for prefix in removed:
            scope, params = _below(tx.dialect, prefix)
            old += tx.execute(f"SELECT id, cell, packed, digest, vector FROM {_UNITS} WHERE doc_id = ?{scope}",
                              [doc_id, *params])
        kept = {bytes(row[3]): bytes(row[4]) for row in old}
        units = [unit for unit in added if meaningful(unit.text)]
        digests = [digest(unit.text) for unit in units]
        blobs = [kept.get(d) or (pack(made[d]) if made is not None and d in made else b"") for d in digests]
        fresh = [i for i, blob in enumerate(blobs) if not blob]
        if fresh:
            for i, vector in zip(fresh, self.embedder.embed([units[i].text for i in fresh]), strict=True):
                blobs[i] = pack(vector)
        self.units_embedded += len(fresh)
        self.units_kept += sum(1 for d in digests if d in kept)
        vectors = unpack(blobs)
        centroids = self._centroids(tx)
        cells = [_UNSORTED] * len(units) if centroids is None else [int(c) for c in nearest_cells(vectors, centroids)]
        self._lock_cells(tx, {row[1] for row in old} | set(cells))
        for prefix in removed:
            scope, params = _below(tx.dialect, prefix)
            tx.execute(f"DELETE FROM {_UNITS} WHERE doc_id = ?{scope}", [doc_id, *params])
        rows = [(doc_id, unit.pointer, d, cell, code.tobytes(), blob)
                for unit, d, cell, code, blob in zip(units, digests, cells, codes(vectors), blobs, strict=True)]
        tx.executemany(f"INSERT INTO {_UNITS} (doc_id, pointer, digest, cell, packed, code, vector) "
                       f"VALUES (?, ?, ?, ?, 0, ?, ?)", rows)
        self._forget(tx, [row[:3] for row in old], added=cells)

    def _forget(self, tx: IndexTransaction, rows: Sequence[tuple[Any, ...]], added: Sequence[int] = ()) -> None:
        """Count the rows (id, cell, packed) deleted and the cells of the rows added; list the deleted rows a pack
        holds as gone; make again the packs of the cells that changed enough."""
        units: dict[int, int] = {}
        loose: dict[int, int] = {}
        gone = [(cell, row_id) for row_id, cell, packed in rows if packed]
        for _, cell, packed in rows:
            units[cell] = units.get(cell, 0) - 1
            loose[cell] = loose.get(cell, 0) + (1 if packed else -1)  # a packed row becomes gone
        for cell in added:
            units[cell] = units.get(cell, 0) + 1
            loose[cell] = loose.get(cell, 0) + 1
        if gone:
            tx.executemany(f"INSERT INTO {_GONE} (cell, id) VALUES (?, ?)", gone)
        changed = sorted((cell, units.get(cell, 0), loose.get(cell, 0)) for cell in units.keys() | loose.keys())
        changed = [row for row in changed if row[1] or row[2]]
        if not changed:
            return
        tx.executemany(f"INSERT INTO {_CELLS} (cell, units, loose) VALUES (?, ?, ?) ON CONFLICT (cell) DO UPDATE "
                       f"SET units = {_CELLS}.units + excluded.units, loose = {_CELLS}.loose + excluded.loose",
                       changed)
        marks = _marks(changed)
        for cell, size, count in tx.execute(f"SELECT cell, units, loose FROM {_CELLS} WHERE cell IN ({marks})",
                                            [row[0] for row in changed]):
            if count > max(LOOSE_MIN, size // 16):
                self._repack(tx, cell)
        if self._cells is not None and self._cells[1] is None and units.get(_UNSORTED, 0) > 0:
            unsorted = tx.execute(f"SELECT units FROM {_CELLS} WHERE cell = ?", [_UNSORTED])
            if unsorted and unsorted[0][0] >= TRAIN_AT:
                self._train(tx)

    def _lock_cells(self, tx: IndexTransaction, cells: set[int]) -> None:
        """PostgreSQL: hold the count rows of ``cells``, in order, before changing their vectors, so that a pack is
        made again by one writer at a time and two writers wait for each other in one order."""
        if tx.dialect != "postgres" or not cells:
            return
        ordered = sorted(cells)
        tx.executemany(f"INSERT INTO {_CELLS} (cell, units, loose) VALUES (?, 0, 0) ON CONFLICT (cell) DO NOTHING",
                       [(cell,) for cell in ordered])
        tx.execute(f"SELECT cell FROM {_CELLS} WHERE cell IN ({_marks(ordered)}) ORDER BY cell FOR UPDATE", ordered)

    def _repack(self, tx: IndexTransaction, cell: int) -> None:
        """One row again for the cell: its pack less the gone, with the loose."""
        import numpy as np

        from schemadoc.search.embeddings import CODE_BYTES

        found = tx.execute(f"SELECT ids, codes FROM {_PACKS} WHERE cell = ?", [cell])
        ids = np.frombuffer(found[0][0], dtype="<i8") if found else np.zeros(0, dtype="<i8")
        codes = (np.frombuffer(found[0][1], dtype=np.uint8).reshape(-1, CODE_BYTES) if found
                 else np.zeros((0, CODE_BYTES), dtype=np.uint8))
        gone = [row[0] for row in tx.execute(f"SELECT id FROM {_GONE} WHERE cell = ?", [cell])]
        if gone:
            kept = ~np.isin(ids, np.array(gone, dtype=np.int64))
            ids, codes = ids[kept], codes[kept]
        loose = tx.execute(f"UPDATE {_UNITS} SET packed = 1 WHERE cell = ? AND packed = 0 RETURNING id, code", [cell])
        if loose:
            ids = np.concatenate([ids, np.array([row[0] for row in loose], dtype="<i8")])
            codes = np.concatenate([codes, np.frombuffer(b"".join(bytes(row[1]) for row in loose), dtype=np.uint8)
                                    .reshape(-1, CODE_BYTES)])
        tx.execute(f"DELETE FROM {_PACKS} WHERE cell = ?", [cell])
        if len(ids):
            tx.execute(f"INSERT INTO {_PACKS} (cell, ids, codes) VALUES (?, ?, ?)",
                       [cell, ids.astype("<i8").tobytes(), np.ascontiguousarray(codes).tobytes()])
        tx.execute(f"DELETE FROM {_GONE} WHERE cell = ?", [cell])
        tx.execute(f"UPDATE {_CELLS} SET loose = 0 WHERE cell = ?", [cell])
        self.repacked += 1

    # -- the cells ------------------------------------------------------------------------------------
    def _centroids(self, tx: IndexTransaction) -> Any:
        """The cells' centroids (None before there are any), read again only when another writer changed them."""
        found = tx.execute(f"SELECT value FROM {_STATE} WHERE key = 'cells'")
        token = found[0][0] if found else ""
        if self._cells is None or self._cells[0] != token:
            centroids = None
            if token:
                from schemadoc.search.embeddings import unpack

                rows = tx.execute(f"SELECT centroid FROM {_CENTROIDS} ORDER BY cell")
                centroids = unpack([bytes(row[0]) for row in rows])
            self._cells = (token, centroids)
        return self._cells[1]

    def _train(self, tx: IndexTransaction) -> None:
        """Group the vectors into cells, once (other writers see the token and use the same cells), and pack each."""
        from schemadoc.search.embeddings import nearest_cells, train_cells, unpack

        if tx.dialect == "postgres":  # two servers reaching the size together: one trains
            tx.execute(f"LOCK TABLE {_CELLS} IN EXCLUSIVE MODE")
        if tx.execute(f"SELECT value FROM {_STATE} WHERE key = 'cells'"):
            self._cells = None
            return
        rows = tx.execute(f"SELECT vector FROM {_UNITS} ORDER BY id LIMIT {TRAIN_AT}")
        centroids = train_cells(unpack([bytes(row[0]) for row in rows]), CELLS)
        tx.execute(f"DELETE FROM {_CELLS}")
        tx.execute(f"DELETE FROM {_PACKS}")
        tx.execute(f"DELETE FROM {_GONE}")
        tx.execute(f"DELETE FROM {_CENTROIDS}")
        tx.executemany(f"INSERT INTO {_CENTROIDS} (cell, centroid) VALUES (?, ?)",
                       [(cell, centroid.tobytes()) for cell, centroid in enumerate(centroids)])
        tx.executemany(f"INSERT INTO {_CELLS} (cell, units, loose) VALUES (?, 0, 0)",
                       [(cell,) for cell in range(len(centroids))])
        counts: dict[int, int] = {}
        last = -1
        while rows := tx.execute(f"SELECT id, vector FROM {_UNITS} WHERE id > ? ORDER BY id LIMIT {_BLOCK}", [last]):
            cells = nearest_cells(unpack([bytes(row[1]) for row in rows]), centroids)
            tx.executemany(f"UPDATE {_UNITS} SET cell = ?, packed = 0 WHERE id = ?",
                           [(int(cell), row[0]) for cell, row in zip(cells, rows, strict=True)])
            for cell in cells:
                counts[int(cell)] = counts.get(int(cell), 0) + 1
            last = rows[-1][0]
        tx.executemany(f"UPDATE {_CELLS} SET units = ? WHERE cell = ?", [(n, cell) for cell, n in counts.items()])
        for cell in sorted(counts):
            self._repack(tx, cell)
        token = secrets.token_hex(8)
        tx.execute(f"INSERT INTO {_STATE} (key, value) VALUES ('cells', ?)", [token])
        self._cells = (token, centroids)

