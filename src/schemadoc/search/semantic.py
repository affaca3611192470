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
import re
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

from schemadoc.errors import SchemaDocError
from schemadoc.search.extension import IndexExtension, IndexTransaction, RankedUnit, RunInIndex
from schemadoc.search.units import TextUnit

if TYPE_CHECKING:
    from schemadoc.search.embeddings import Embedder

__all__ = ["EXTRA", "RANKINGS", "HybridRanking", "SemanticRanking", "default_extensions", "fuse", "installed",
           "meaningful", "unavailable"]

log = logging.getLogger("schemadoc.search")

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
FEED_UNITS = 1_000
"""The stored units the background feed reads, embeds and writes at a time (its memory: one batch)."""
FEED_PAUSE_SECONDS = 0.01
"""The feed's pause between batches (the server's requests go first)."""
FEED_RETRY_SECONDS = 2.0
"""How long the feed waits after a failed batch (an outage of the database) before trying it again."""
FEED_CLAIM_SECONDS = 10.0
"""How long a server's claim on the feed's next batch holds off the others (servers sharing one index embed each
batch once; a batch takes well under a second to embed); a claim older than this, of a server stopped half way, is
taken over. A batch that takes longer is only embedded twice, never written twice."""
FEED_WAIT_SECONDS = 1.0
"""How long a server waits before looking again when another server holds the claim on the next batch."""
_READ_VECTORS = 65_536
"""The codes a query reads in one statement (its memory: 40 bytes each)."""
_BLOCK = 4_096
_UNITS = "semantic_units"
_PACKS = "semantic_packs"
_GONE = "semantic_gone"
_CELLS = "semantic_cellinfo"
_CENTROIDS = "semantic_centroids"
_STATE = "semantic_state"
_FORMER = ("semantic_vectors", "semantic_cells")
"""The tables of the format before packed codes (generation ``...float32-cells-1``), dropped when cleared."""
_UNSORTED = -1
"""The cell of a vector stored before there are cells."""
_HEAD = "substr(text, 1, 2000)"
"""What the feed reads of a unit's text: what is embedded and digested of it (a batch's memory stays bounded)."""
_FEED = "feed_after"
"""The state key of the background feed: every document whose id sorts at or before it is fed (absent: done)."""
_CLAIM = "feed_claim"
"""The state key of the claim on the feed's next batch: ``{owner} {deadline} {feed_after}``."""
_CLAIMED = "claimed"
"""What :meth:`SemanticRanking._feed_read` answers while another server's claim holds."""
_FEED_KEYS = f"('{_FEED}', 'feed_done', 'feed_total', '{_CLAIM}')"


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


def _marks(values: Sequence[Any]) -> str:
    return ", ".join("?" * len(values))


def _chunks(values: Sequence[Any], size: int = 500) -> Iterator[Sequence[Any]]:
    for start in range(0, len(values), size):
        yield values[start:start + size]


class SemanticRanking:
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
        self._feeder: threading.Thread | None = None
        self._stop = threading.Event()
        self.fed = threading.Event()
        """Set once no feed is running in this process (none needed, or this process's finished)."""
        self.fed.set()
        self._owner = secrets.token_hex(8)
        """Who this extension is in a claim on the feed's next batch (one per server process)."""

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

    def on_opened(self, run: RunInIndex) -> None:
        """Start the feed's thread when a feed is under way and anything is left to feed (an empty store's feed
        ends here)."""
        if self._feeder is not None or not run(self._feed_left):
            return
        self._stop.clear()
        self.fed.clear()
        self._feeder = threading.Thread(target=self._feed, args=(run,), name="semantic-feed", daemon=True)
        self._feeder.start()

    def on_closing(self) -> None:
        """Stop the feed's thread after its batch (the next start resumes where it stopped)."""
        self._stop.set()
        if self._feeder is not None:
            self._feeder.join(timeout=30)
            self._feeder = None

    def note(self, tx: IndexTransaction) -> str | None:
        """What an answer ranked by this extension says: while the feed runs, that it ranked by full text."""
        state = dict(tx.execute(f"SELECT key, value FROM {_STATE} WHERE key IN (?, 'feed_done', 'feed_total')",
                                [_FEED]))
        if _FEED not in state:
            return None
        done, total = int(state.get("feed_done", "0")), int(state.get("feed_total", "0"))
        progress = f" ({done:,} of {max(done, total):,} documents so far)" if total else ""
        return (f"Meaning is still being indexed{progress}: these hits are ranked by full text alone. Ask again "
                "once it is done for a ranking by meaning.")

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

    def feeding(self, tx: IndexTransaction) -> bool:
        """Whether a feed is under way (this server's or another's)."""
        return bool(tx.execute(f"SELECT 1 FROM {_STATE} WHERE key = ?", [_FEED]))

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

    # -- the feed -------------------------------------------------------------------------------------
    def _left_to_feed(self, tx: IndexTransaction, doc_id: str) -> bool:
        """Whether a feed is under way that has not reached ``doc_id``. PostgreSQL: the state row is held (shared)
        to the end of the write, so that a batch of the feed (which holds it exclusively) either saw this write's
        units or is seen by it."""
        lock = " FOR SHARE" if tx.dialect == "postgres" else ""
        found = tx.execute(f"SELECT value < ? FROM {_STATE} WHERE key = ?{lock}", [doc_id, _FEED])
        return bool(found and found[0][0])

    def _feed_left(self, tx: IndexTransaction) -> bool:
        """Whether a feed is under way with units left to feed; one with none left ends here."""
        found = tx.execute(f"SELECT value FROM {_STATE} WHERE key = ?", [_FEED])
        if not found:
            return False
        if tx.execute("SELECT 1 FROM search_units WHERE doc_id > ? LIMIT 1", [found[0][0]]):
            return True
        tx.execute(f"DELETE FROM {_STATE} WHERE key IN {_FEED_KEYS}")
        return False

    def _feed(self, run: RunInIndex) -> None:
        """The feed's thread: batch after batch until done or stopped; a failed batch is tried again."""
        try:
            while not self._stop.is_set():
                try:
                    if not self._feed_batch(run):
                        return
                except SchemaDocError as error:
                    log.warning("semantic index: the feed waits: %s", error.message)
                    self._stop.wait(FEED_RETRY_SECONDS)
                except Exception:
                    log.exception("semantic index: a batch of the feed failed; it is tried again")
                    self._stop.wait(FEED_RETRY_SECONDS)
                self._stop.wait(FEED_PAUSE_SECONDS)
        finally:
            self.fed.set()

    def _feed_batch(self, run: RunInIndex) -> bool:
        """Read the next units, embed them outside any transaction, then write them (with the units of the same
        documents as they are by then); whether the feed goes on."""
        batch = run(self._feed_read)
        if batch is None:
            return False
        if isinstance(batch, str):  # _CLAIMED: another server embeds the next batch; look again in a while
            self._stop.wait(FEED_WAIT_SECONDS)
            return True
        after, until, texts = batch
        from schemadoc.search.embeddings import digest

        unique = list(dict.fromkeys(text for text in texts if meaningful(text)))
        made = dict(zip((digest(text) for text in unique), self.embedder.embed(unique), strict=True))
        self.units_embedded += sum(1 for text in texts if meaningful(text))
        run(lambda tx: self._feed_write(tx, after, until, made))
        return True

    def _feed_read(self, tx: IndexTransaction) -> tuple[str, str, list[str]] | str | None:
        """(where the feed is, the last document of this batch, the texts of its units); None when done;
        ``_CLAIMED`` when another server has claimed this batch (and its claim still holds). The batch is claimed
        for this server here, so that servers sharing the index embed each batch once."""
        lock = " FOR UPDATE" if tx.dialect == "postgres" else ""  # one server at a time reads and claims
        found = tx.execute(f"SELECT value FROM {_STATE} WHERE key = ?{lock}", [_FEED])
        if not found:
            return None
        after = found[0][0]
        now = time.time()
        claim = tx.execute(f"SELECT value FROM {_STATE} WHERE key = ?", [_CLAIM])
        if claim:
            owner, deadline, claimed = claim[0][0].split(" ", 2)
            if owner != self._owner and claimed == after and float(deadline) > now:
                return _CLAIMED
        tx.execute(f"INSERT INTO {_STATE} (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = "
                   "excluded.value", [_CLAIM, f"{self._owner} {now + FEED_CLAIM_SECONDS:.3f} {after}"])
        rows = tx.execute(f"SELECT doc_id, {_HEAD} FROM search_units WHERE doc_id > ? ORDER BY doc_id, pointer "
                          f"LIMIT {FEED_UNITS + 1}", [after])
        if not rows:
            tx.execute(f"DELETE FROM {_STATE} WHERE key IN {_FEED_KEYS}")
            return None
        if not tx.execute(f"SELECT 1 FROM {_STATE} WHERE key = 'feed_total'"):
            total = tx.execute("SELECT count(*) FROM search_docs")[0][0]
            tx.execute(f"INSERT INTO {_STATE} (key, value) VALUES ('feed_total', ?), ('feed_done', '0')", [str(total)])
        if len(rows) > FEED_UNITS:  # the last document may be cut: it goes in the next batch
            whole = [row for row in rows if row[0] != rows[-1][0]]
            rows = whole or tx.execute(f"SELECT doc_id, {_HEAD} FROM search_units WHERE doc_id = ?", [rows[-1][0]])
        return after, rows[-1][0], [row[1] for row in rows]

    def _feed_write(self, tx: IndexTransaction, after: str, until: str, made: dict[bytes, Any]) -> None:
        lock = " FOR UPDATE" if tx.dialect == "postgres" else ""
        found = tx.execute(f"SELECT value FROM {_STATE} WHERE key = ?{lock}", [_FEED])
        if not found or found[0][0] != after:
            return  # another server fed these
        units: dict[str, list[TextUnit]] = {}
        for doc_id, pointer, text in tx.execute(f"SELECT doc_id, pointer, {_HEAD} FROM search_units WHERE doc_id > ? "
                                                "AND doc_id <= ? ORDER BY doc_id, pointer", [after, until]):
            units.setdefault(doc_id, []).append(TextUnit(pointer, text))
        for doc_id, added in units.items():
            self._replace(tx, doc_id, ("",), added, made)
        done = tx.execute(f"SELECT value FROM {_STATE} WHERE key = 'feed_done'")
        tx.execute(f"UPDATE {_STATE} SET value = ? WHERE key = ?", [until, _FEED])
        tx.execute(f"UPDATE {_STATE} SET value = ? WHERE key = 'feed_done'",
                   [str(int(done[0][0] if done else 0) + len(units))])


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
    if not installed():
        return []
    semantic = SemanticRanking()
    return [semantic, HybridRanking(semantic)]
