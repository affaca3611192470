"""The PostgreSQL store beside the files store: what a write and a read cost, and writes per second.

Not a test: it prints figures (median, min and max of several runs) and writes them as a
Markdown table to ``benchmarks/results/postgres.md``.

    make bench-postgres                                  # = .venv/bin/python benchmarks/postgres.py
    .venv/bin/python benchmarks/postgres.py --sizes 1 --seconds 3

Needs a PostgreSQL server: ``--url`` or ``SCHEMADOC_TEST_POSTGRES_URL`` (default the local
``test`` database). Everything goes to a throwaway PostgreSQL schema, dropped at the end.

1. **Snapshot column**: the snapshot of a 1 and 10 MiB book stored (one autocommitted upsert)
   and read back as ``bytea`` (the JSON bytes as they are, fetched in binary format) and as
   ``jsonb`` (PostgreSQL parses it on the way in and prints it on the way out), each with the
   default TOAST compression (pglz) and with lz4; read back into Python with ``orjson.loads``.
2. **Engine**: ``DocumentService`` on each store: a leaf update (a paragraph's text, the
   middle one of the book; validated, journaled, committed) and a deep read of that leaf, at 1
   and 10 MiB.
3. **Writes per second** on one database (one storage directory for the files store) by 1 and
   3 processes, each writing its own small document as fast as it can for ``--seconds``.

The machine's load average is printed with the figures: on a shared machine they are noisy.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import psycopg
from common import HERE, REPO, timed
from generate import make_book, mid_paragraph_path
from psycopg import sql

from schemadoc.ops.journal import JournalEntry, utc_now
from schemadoc.schema import LoadedSchema, load_schema
from schemadoc.service import DocumentService
from schemadoc.storage import store_for
from schemadoc.storage.postgres import PostgresDocumentStore

DEFAULT_URL = os.environ.get("SCHEMADOC_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
SCHEMA = REPO / "schemas" / "book.schema.json"
DEFAULT_OUT = HERE / "results" / "postgres.md"
COLUMNS = {
    "bytea (default pglz)": "bytea",
    "bytea lz4 (the store's)": "bytea COMPRESSION lz4",
    "jsonb (default pglz)": "jsonb",
    "jsonb lz4": "jsonb COMPRESSION lz4",
}
"""The snapshot column variants measured: table name -> column type."""


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)



def fmt(samples: list[float]) -> str:
    def one(seconds: float) -> str:
        return f"{seconds * 1e6:.0f} µs" if seconds < 1e-3 else f"{seconds * 1e3:.1f} ms" if seconds < 1 \
            else f"{seconds:.2f} s"
    return f"{one(statistics.median(samples))} ({one(min(samples))} – {one(max(samples))})"


def with_schema(url: str, schema: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}schema={schema}"


# -- 1. bytea or jsonb --------------------------------------------------------------------------------


def bench_snapshot_column(url: str, schema: str, sizes: list[int], runs: int) -> list[list[str]]:
    rows = []
    with psycopg.connect(url, autocommit=True) as conn:
        name = sql.Identifier(schema)
        conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(name))
        for column, kind in COLUMNS.items():
            conn.execute(sql.SQL("CREATE TABLE {} (id int PRIMARY KEY, content " + kind + ")").format(
                sql.Identifier(schema, column)))
        for size in sizes:
            data = orjson.dumps(make_book(size))
            for column in COLUMNS:
                table = sql.Identifier(schema, column)
                as_text = column.startswith("jsonb")
                value: Any = data.decode() if as_text else data

                def write(i: int, table: Any = table, value: Any = value) -> None:
                    conn.execute(sql.SQL("INSERT INTO {} VALUES (%s, %s) ON CONFLICT (id) DO UPDATE "
                                         "SET content = excluded.content").format(table), (i % 2, value))

                def read(i: int, table: Any = table, as_text: bool = as_text) -> None:
                    # bytea in binary format (the store's way); jsonb printed as text by the server
                    query = "SELECT content::text FROM {} WHERE id = 0" if as_text else \
                        "SELECT content FROM {} WHERE id = 0"
                    row = conn.execute(sql.SQL(query).format(table), binary=not as_text).fetchone()
                    assert row is not None
                    orjson.loads(row[0])

                writes, reads = timed(write, runs), timed(read, runs)
                stored = conn.execute(sql.SQL("SELECT pg_column_size(content) FROM {} WHERE id = 0").format(table)
                                      ).fetchone()
                assert stored is not None
                rows.append([f"{size} MiB", column, fmt(writes), fmt(reads), f"{stored[0] / 2**20:.1f} MiB"])
                log(f"  snapshot as {column} at {size} MiB: write {rows[-1][2]}, read + parse {rows[-1][3]}, "
                    f"stored {rows[-1][4]}")
    return rows


# -- 2. the engine on each store ------------------------------------------------------------------------


def bench_engine(schema: LoadedSchema, url: str, pg_schema: str, sizes: list[int], runs: int,
                 tmp: Path) -> list[list[str]]:
    rows = []
    for size in sizes:
        book = make_book(size)
        leaf: str = mid_paragraph_path(book) + "/text"
        for name in ("files", "postgres"):
            store = store_for(tmp / f"files-{size}", with_schema(url, pg_schema) if name == "postgres" else None)
            service = DocumentService(schema, store)
            service.open()
            doc_id = service.create_document()[0]
            service.update_node(doc_id, "/", book, 1)
            version = service.version_of(doc_id)

            def update(i: int, service: DocumentService = service, doc_id: str = doc_id, leaf: str = leaf) -> None:
                nonlocal version
                version = service.update_node(doc_id, leaf, f"Edited, run {i}.", version).version

            def read(i: int, service: DocumentService = service, doc_id: str = doc_id, leaf: str = leaf) -> None:
                service.read_node(doc_id, leaf)

            updates, reads = timed(update, runs), timed(read, runs * 5)

            def journal_only(i: int, store: Any = store, doc_id: str = doc_id, leaf: str = leaf) -> None:
                # what a journal-first commit costs the store: the entry alone, the snapshot left behind
                meta = store.read_meta(doc_id)
                now = utc_now()
                entry = JournalEntry(meta.version + 1, "update_node",
                                     [{"op": "replace", "path": leaf, "value": f"Journal only, run {i}."}], now)
                store.commit(replace(meta, version=meta.version + 1, modified_at=now), entry, None)

            commits = timed(journal_only, runs)
            rows.append([f"{size} MiB", name, fmt(updates), fmt(commits), fmt(reads)])
            log(f"  {name} at {size} MiB: leaf update {rows[-1][2]}, journal-only commit {rows[-1][3]}, "
                f"deep read {rows[-1][4]}")
            service.close()
            del service, store
        del book
    return rows


# -- 3. writes per second, several processes ---------------------------------------------------------------


def _writer(storage_url: str | None, storage_dir: str, seconds: float, start_at: float,
            counts: Any, index: int) -> None:
    service = DocumentService(load_schema(SCHEMA), store_for(storage_dir, storage_url))
    service.open()
    doc_id = service.create_document()[0]
    version = 1
    while time.time() < start_at:
        time.sleep(0.001)
    deadline = start_at + seconds
    done = 0
    while time.time() < deadline:
        version = service.update_node(doc_id, "/title", f"Title {done}", version).version
        done += 1
    counts[index] = done
    service.close()


def bench_throughput(url: str, pg_schema: str, seconds: float, tmp: Path) -> list[list[str]]:
    rows = []
    context = multiprocessing.get_context("spawn")
    for name in ("files", "postgres"):
        for processes in (1, 3):
            counts = context.Array("i", processes)
            start_at = time.time() + 8.0  # every process imported and connected before the clock starts
            storage_url = with_schema(url, pg_schema) if name == "postgres" else None
            workers = [context.Process(target=_writer, args=(storage_url, str(tmp / "throughput"), seconds,
                                                             start_at, counts, i)) for i in range(processes)]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join(seconds + 120)
            total = sum(counts)
            rows.append([name, str(processes), f"{total / seconds:.0f}",
                         " + ".join(f"{count / seconds:.0f}" for count in counts)])
            log(f"  {name}, {processes} process(es): {rows[-1][2]} writes/s ({rows[-1][3]})")
    return rows


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default=DEFAULT_URL, help="PostgreSQL URL (default SCHEMADOC_TEST_POSTGRES_URL)")
    parser.add_argument("--sizes", default="1,10", help="book sizes in MiB (default 1,10)")
    parser.add_argument("--runs", type=int, default=7, help="runs per operation (default 7)")
    parser.add_argument("--seconds", type=float, default=5.0, help="length of each throughput run (default 5)")
    parser.add_argument("--parts", default="column,engine,throughput",
                        help="what to measure (default column,engine,throughput)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    options = parser.parse_args(argv)
    sizes = [int(size) for size in options.sizes.split(",")]
    pg_schema = f"bench_{uuid.uuid4().hex[:12]}"
    tmp = Path(tempfile.mkdtemp(prefix="schemadoc-bench-pg-"))
    load_before = os.getloadavg()
    parts = set(options.parts.split(","))
    column: list[list[str]] = []
    engine: list[list[str]] = []
    throughput: list[list[str]] = []
    try:
        if "column" in parts:
            log("== snapshot column: bytea or jsonb ==")
            column = bench_snapshot_column(options.url, pg_schema, sizes, options.runs)
        store = PostgresDocumentStore(with_schema(options.url, pg_schema))
        store.open()  # creates the tables before several processes race for it
        store.close()
        if "engine" in parts:
            log("== the engine on each store ==")
            engine = bench_engine(load_schema(SCHEMA), options.url, pg_schema, sizes, options.runs, tmp)
        if "throughput" in parts:
            log("== writes per second ==")
            throughput = bench_throughput(options.url, pg_schema, options.seconds, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
        with psycopg.connect(options.url, autocommit=True) as conn:
            conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(pg_schema)))
    load_after = os.getloadavg()
    report = "\n\n".join([
        f"# PostgreSQL store beside the files store\n\n{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, "
        f"{os.cpu_count()} cores, load average {load_before[0]:.1f} before / {load_after[0]:.1f} after; "
        f"median (min – max) of {options.runs} runs.",
        "## Snapshot column\n\n" + table(["book", "column", "write", "read + parse", "stored"], column),
        "## Engine (DocumentService)\n\nLeaf update and deep read through the service (today it hands the store "
        "the whole new content with every commit, so the snapshot is rewritten inline); journal-only commit: "
        "the store's commit of the same kind of edit without content (the snapshot left to lag, journal-first), "
        "read_meta included.\n\n"
        + table(["book", "store", "leaf update", "journal-only commit", "deep read"], engine),
        f"## Writes per second ({options.seconds:g} s, one small document per process)\n\n"
        + table(["store", "processes", "writes/s", "per process"], throughput),
    ])
    print(report)
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(report + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
