"""What semantic search costs: embedding a write's units, and a query across documents with and without cells.

    python benchmarks/semantic_cost.py [--units 100000 1000000] [--queries 40]

1. Writes: the embedding of one unit (a leaf write) and of a generated 35 KB book's units (a document created),
   and the extension's whole hook for a leaf write on a table of vectors (SQLite).
2. Queries across documents, for each table size: the p50 reading every vector's sign code, the p50 with cells
   (the nearest cells until 65,536 vectors or 2 % of them are read), both followed by the exact scores of the
   best by code, the codes read, and each one's recall@10 of the exact answer (a brute-force scan of every
   vector, in numpy). The vectors are made from real English: the docstrings of standard-library
   modules (embedded once), each stored vector a mix of two of them with a little noise, so that they cluster
   as text does (uniformly random vectors would not).
3. With ``--startup-books N``: a start-up with the extra over N books indexed without it (the feed).
4. The extrapolation to 100,000 documents of about 35 KB (the vectors one such book has, from
   ``benchmarks/generate.py``).

Times are the CPU time of this process (``time.process_time``), which the other work of a shared machine
disturbs less than wall-clock; the file is read from the page cache.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import re
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import common  # the checkout's src on sys.path (and the book schema)
import generate
import numpy as np

from schemadoc.search import hybrid, semantic
from schemadoc.search.backends import SQLITE_CACHE_KIB
from schemadoc.search.embeddings import codes, embedder, nearest_cells, pack
from schemadoc.search.units import TextUnit, text_units

_MODULES = ("os", "re", "json", "collections", "itertools", "functools", "pathlib", "typing", "argparse", "logging",
            "asyncio", "email", "http.client", "urllib.request", "xml.dom.minidom", "sqlite3", "decimal", "fractions",
            "statistics", "datetime", "calendar", "textwrap", "string", "shutil", "tarfile", "zipfile", "csv",
            "configparser", "threading", "subprocess", "socket", "ssl", "unittest", "doctest", "inspect", "ast",
            "tokenize", "pickle", "copy", "heapq", "bisect", "random", "math", "hashlib", "hmac", "secrets",
            "base64", "struct", "codecs", "locale", "gettext", "io", "tempfile", "glob", "fnmatch", "enum",
            "dataclasses", "contextlib", "abc", "numbers", "operator", "weakref", "traceback", "warnings", "queue",
            "sched", "selectors", "signal", "mmap", "difflib", "pprint", "reprlib", "graphlib", "zoneinfo",
            "ipaddress", "mailbox", "mimetypes", "smtplib", "imaplib", "ftplib", "poplib", "wave", "colorsys",
            "timeit", "trace", "tracemalloc", "cProfile", "pstats", "platform", "sysconfig", "shelve", "dbm",
            "gzip", "bz2", "lzma", "zlib", "netrc", "plistlib", "html.parser", "webbrowser", "uuid", "array")


class Tx:
    dialect = "sqlite"

    def __init__(self, path: Path) -> None:
        self.db = sqlite3.connect(path)
        self.db.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")  # as the server's index

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.db.execute(sql, params).fetchall()

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.db.executemany(sql, rows)


def docstrings() -> list[str]:
    """Paragraphs of four words or more from the docstrings of standard-library modules and their members."""
    found: list[str] = []
    for name in _MODULES:
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        objects: list[Any] = [module]
        for _, member in inspect.getmembers(module):
            objects.append(member)
            if inspect.isclass(member):
                objects.extend(value for _, value in inspect.getmembers(member))
        for item in objects:
            doc = getattr(item, "__doc__", None)
            if isinstance(doc, str):
                for paragraph in re.split(r"\n\s*\n", doc):
                    text = " ".join(paragraph.split())
                    if len(text.split()) >= 4:
                        found.append(text[:600])
    return list(dict.fromkeys(found))


def p50_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def writes(texts: list[str], tx_dir: Path) -> None:
    model = embedder()
    model.embed(["warm up"])
    one = [p50_ms([_timed(lambda i=i: model.embed([texts[i]])) for i in range(50)])]
    book = generate.make_book(35 / 1024 * 35 / 63)  # about 35 KB of compact JSON
    units = [unit for unit in text_units(book) if semantic.meaningful(unit.text)]
    whole = p50_ms([_timed(lambda: model.embed([unit.text for unit in units])) for _ in range(5)])
    extension, tx = semantic.SemanticRanking(), Tx(tx_dir / "writes.sqlite3")
    extension.create_tables(tx)
    extension.on_units_changed(tx, "doc", ("",), list(text_units(book)))
    leaf = units[len(units) // 2].pointer

    def leaf_write(i: int) -> None:
        extension.on_units_changed(tx, "doc", (leaf,), [TextUnit(leaf, texts[i])])

    hook = p50_ms([_timed(lambda i=i: leaf_write(i)) for i in range(50)])
    print(f"writes (CPU time): one unit embedded {one[0]:.2f} ms; a 35 KB book's {len(units)} units (of "
          f"{len(list(text_units(book)))}) embedded {whole:.1f} ms; the hook of a leaf write (delete, embed, insert, "
          f"cell counts) {hook:.2f} ms")


def _timed(action: Any) -> float:
    """The CPU seconds of this process ``action`` took (steadier than wall-clock on a shared machine)."""
    start = time.process_time()
    action()
    return time.process_time() - start


def queries(base: np.ndarray, questions: np.ndarray, sizes: list[int], tx_dir: Path) -> None:
    rng = np.random.default_rng(30)
    model = embedder()
    query_vectors = model.embed([str(q) for q in questions])
    print("queries across documents (SQLite, one process; CPU time, wall-clock beside it):")
    print(f"(every code: the whole table's codes read; cells: the nearest until {semantic.SCAN_MIN:,} vectors or "
          f"{semantic.SCAN_SHARE:.0%} of them; then the best max({semantic.RERANK_MIN}, "
          f"{semantic.RERANK_FACTOR} x 10) by code scored exactly; recall@10 against a brute-force exact top 10)")
    print(f"{'vectors':>9} {'file MB':>8} {'every code p50':>15} {'recall@10':>10} {'cells p50 (wall)':>17} "
          f"{'codes read':>11} {'recall@10':>10}")
    for size in sizes:
        path = tx_dir / f"q{size}.sqlite3"
        tx = Tx(path)
        tx.db.execute("PRAGMA journal_mode=WAL")
        extension = semantic.SemanticRanking()
        extension.create_tables(tx)
        exact: list[list[tuple[float, int]]] = [[] for _ in questions]  # the true top 10 of each query, by id
        built = time.perf_counter()
        counts: dict[int, int] = {}
        for start in range(0, size, 8_192):
            count = min(8_192, size - start)
            pairs = rng.integers(0, len(base), (count, 2))
            mixed = base[pairs[:, 0]] + 0.6 * base[pairs[:, 1]] + 0.05 * rng.standard_normal((count, 256))
            mixed = (mixed / np.linalg.norm(mixed, axis=1, keepdims=True)).astype(np.float32)
            signs = codes(mixed)
            centroids = extension._centroids(tx)  # as a server: the first TRAIN_AT vectors make the cells, each
            cells = [-1] * count if centroids is None else nearest_cells(mixed, centroids).tolist()  # later joins one
            tx.executemany("INSERT INTO semantic_units (id, doc_id, pointer, digest, cell, packed, code, vector) "
                           "VALUES (?, ?, ?, x'00', ?, 0, ?, ?)",
                           [(start + i + 1, f"d{(start + i) // 100:07}", f"/u/{(start + i) % 100}", cells[i],
                             signs[i].tobytes(), pack(v)) for i, v in enumerate(mixed)])
            for cell in cells:
                counts[cell] = counts.get(cell, 0) + 1
            if centroids is None and start + count >= semantic.TRAIN_AT:
                tx.execute("INSERT INTO semantic_cellinfo (cell, units, loose) VALUES (-1, ?, ?)",
                           [counts[-1], counts[-1]])
                extension._train(tx)
                counts = {}
            scores = mixed @ query_vectors.T
            for q in range(len(questions)):
                best = np.argpartition(-scores[:, q], 10)[:10]
                exact[q] = sorted(exact[q] + [(float(scores[i, q]), start + int(i) + 1) for i in best],
                                  key=lambda item: -item[0])[:10]
        tx.executemany("INSERT INTO semantic_cellinfo (cell, units, loose) VALUES (?, ?, ?) ON CONFLICT (cell) DO "
                       "UPDATE SET units = units + excluded.units, loose = loose + excluded.loose",
                       [(cell, n, n) for cell, n in counts.items()])
        for cell in sorted(counts):
            extension._repack(tx, cell)
        tx.db.commit()
        built = time.perf_counter() - built
        megabytes = path.stat().st_size / 1e6
        every_ms, cells_ms, cells_wall, scored, every_recall, cells_recall = [], [], [], [], [], []
        for q in range(len(questions)):
            truth = {row_id for _, row_id in exact[q]}
            saved = semantic.SCAN_MIN
            semantic.SCAN_MIN = 10**12
            start = time.process_time()
            found = extension._across(tx, query_vectors[q], 10)
            every_ms.append(time.process_time() - start)
            semantic.SCAN_MIN = saved
            every_recall.append(len(truth & _ids(tx, found)) / 10)
            start, wall = time.process_time(), time.perf_counter()
            found = extension._across(tx, query_vectors[q], 10)
            cells_ms.append(time.process_time() - start)
            cells_wall.append(time.perf_counter() - wall)
            scored.append(extension.scored)
            cells_recall.append(len(truth & _ids(tx, found)) / 10)
        print(f"{size:>9,} {megabytes:>8.0f} {p50_ms(every_ms):>12.1f} ms {statistics.mean(every_recall):>10.2f} "
              f"{p50_ms(cells_ms):>7.1f} ({p50_ms(cells_wall):.1f}) ms {statistics.median(scored):>11,.0f} "
              f"{statistics.mean(cells_recall):>10.2f}   (built in {built:.0f} s)")
        tx.db.close()
        for leftover in tx_dir.glob(f"q{size}.sqlite3*"):
            leftover.unlink()


def _ids(tx: Tx, found: list[tuple[float, tuple[str, str]]]) -> set[int]:
    """The row ids of the units ``found`` (doc_id, pointer)."""
    return {tx.execute("SELECT id FROM semantic_units WHERE doc_id = ? AND pointer = ?", list(unit))[0][0]
            for _, unit in found}


def startup(books: int, directory: Path) -> None:
    """A files store of ``books`` books indexed without the extra, then opened with it: how long ``open`` takes, a
    hybrid search's time during the feed (and its note), and when the vectors are all made (wall-clock)."""
    from schemadoc.schema import load_schema
    from schemadoc.service import DocumentService
    from schemadoc.storage import store_for

    schema = load_schema(Path(common.BOOK_SCHEMA))
    service = DocumentService(schema, store_for(directory, None))
    service.open()
    for _ in range(books):
        service.create_document(generate.make_book(35 / 1024 * 35 / 63))
    service.search_index.sync()
    service.close()
    extensions = hybrid.default_extensions()
    extension = extensions[0]
    assert isinstance(extension, semantic.SemanticRanking)
    extension.embedder.embed(["the model loaded"])
    service = DocumentService(schema, store_for(directory, None))
    service.search_extensions.extend(extensions)
    started = time.perf_counter()
    service.open()
    opened = time.perf_counter() - started
    asked = time.perf_counter()
    page = service.search("keeping a lighthouse lit", ranking="hybrid")
    answered = time.perf_counter() - asked
    extension.fed.wait(3600)
    print(f"start-up with the extra over {books} books indexed without it (wall-clock): open() returned in "
          f"{opened:.2f} s; a hybrid search during the feed answered in {answered * 1000:.0f} ms with the note "
          f"{page.note!r}; every vector made {time.perf_counter() - started:.1f} s after open() began "
          f"({extension.units_embedded:,} units embedded)")
    service.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--scan-min", type=int, default=semantic.SCAN_MIN,
                        help="score at least this many vectors per query (default: the server's)")
    parser.add_argument("--cells", type=int, default=semantic.CELLS,
                        help="group the vectors into this many cells (default: the server's)")
    parser.add_argument("--rerank-min", type=int, default=semantic.RERANK_MIN,
                        help="score exactly at least this many of the nearest by code (default: the server's)")
    parser.add_argument("--startup-books", type=int, default=0,
                        help="also time a start-up with the extra over this many books indexed without it")
    args = parser.parse_args(argv)
    semantic.SCAN_MIN = args.scan_min
    semantic.RERANK_MIN = args.rerank_min
    semantic.CELLS = args.cells
    if not semantic.installed():
        sys.exit("the semantic extra is not installed: pip install 'schemadoc[semantic]'")
    texts = docstrings()
    started = time.perf_counter()
    base = embedder().embed(texts)
    print(f"{len(texts):,} docstring paragraphs embedded in {time.perf_counter() - started:.1f} s")
    rng = np.random.default_rng(7)
    questions = np.array([" ".join(texts[i].split()[:6]) for i in rng.choice(len(texts), args.queries,
                                                                            replace=False)])
    with tempfile.TemporaryDirectory() as directory:
        writes(texts, Path(directory))
        queries(base, questions, args.units, Path(directory))
        if args.startup_books:
            startup(args.startup_books, Path(directory) / "startup")
    book = generate.make_book(35 / 1024 * 35 / 63)
    per_book = sum(1 for unit in text_units(book) if semantic.meaningful(unit.text))
    total = per_book * 100_000
    print(f"100,000 books of about 35 KB: {per_book} vectors each, {total:,} in all, "
          f"{total * (semantic_row_bytes()) / 1e9:.1f} GB of vectors; a query scores "
          f"max({semantic.SCAN_MIN:,}, {semantic.SCAN_SHARE:.0%}) = "
          f"{max(semantic.SCAN_MIN, semantic.SCAN_SHARE * total):,.0f} of them")


def semantic_row_bytes() -> int:
    return 1024 + 32 + 8 + 40 + 60  # the vector, its code, its digest, its id and code in a pack, the row (about)


if __name__ == "__main__":
    main()
