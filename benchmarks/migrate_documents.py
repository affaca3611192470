"""``schemadoc migrate-documents`` over many big documents under a memory budget: time and peak RSS per run.

Not a test: it prints figures (and writes them as Markdown with ``--out``).

    .venv/bin/python benchmarks/migrate_documents.py                        # 1,000 books of 1 MiB, 256 MiB budget
    .venv/bin/python benchmarks/migrate_documents.py --documents 200 --postgres

Method: a files store (with ``--postgres`` also a throwaway PostgreSQL schema at ``SCHEMADOC_TEST_POSTGRES_URL``)
of ``--documents`` books of ``--size-mib`` (``generate.py``, a distinct seed each, written straight through the
store). Then, each in its own ``schemadoc migrate-documents --memory-budget BUDGET`` process, which prints its
peak RSS (``ru_maxrss``) when it ends: the dry run of a patch template (``*`` over every chapter, a ``test``
guard), the template itself, the same template again (every document already migrated: the cost of resuming),
a merge patch and a Python function (every chapter title changed). The baseline is the command on an empty store.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

import orjson
from common import BOOK_SCHEMA, pg_schema, run_schemadoc
from generate import make_book

TEMPLATE = {"name": "bench-template", "patch": [
    {"op": "test", "path": "/metadata/edition", "value": 1},
    {"op": "replace", "path": "/chapters/*/title", "value": "A chapter"},
    {"op": "add", "path": "/metadata/isbn", "value": "9780000000000"},
    {"op": "add", "path": "/tags/-", "value": "migrated"}]}
MERGE = {"name": "bench-merge", "merge_patch": {"metadata": {"edition": 2, "keywords": ["migrated"]}}}
FUNCTION_MODULE = '''
def number_chapters(document):
    for number, chapter in enumerate(document["chapters"], start=1):
        chapter["title"] = f"{number}. {chapter['title']}"
    return document
'''
FUNCTION = {"name": "bench-function", "function": "bench_migration:number_chapters"}


def run(cwd: Path, *args: str) -> tuple[float, float, dict[str, object]]:
    """Seconds, peak RSS (MiB) and the JSON summary of one ``schemadoc migrate-documents`` in its own process."""
    done = run_schemadoc(cwd, "migrate-documents", *args, "--json")
    return done.seconds, done.peak_mib, orjson.loads(done.stdout)


def populate(storage_dir: Path, storage_url: str | None, count: int, size_mib: float) -> int:
    """``count`` books in the store; returns the bytes of their content."""
    from ulid import ULID

    from schemadoc.ops.journal import JournalEntry, utc_now
    from schemadoc.storage import store_for
    from schemadoc.storage.base import DocumentMeta

    store = store_for(storage_dir, storage_url)
    store.open()
    total = 0
    try:
        for number in range(count):
            book = make_book(size_mib, seed=number)
            book["title"] = f"Book {number}"
            doc_id, now = str(ULID()), utc_now()
            data = orjson.dumps(book)
            meta = DocumentMeta(doc_id, 1, BOOK_SCHEMA.as_uri(), now, now, len(data))
            store.create(meta, JournalEntry(1, "create", [{"op": "add", "path": "", "value": book}], now), data)
            total += len(data)
            del book, data
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            close()
    return total


def measure(work: Path, label: str, storage_url: str | None, count: int, size_mib: float,
            budget: str) -> list[str]:
    storage = work / f"data-{label}"
    empty = work / f"empty-{label}"
    for name, migration in (("template", TEMPLATE), ("merge", MERGE), ("function", FUNCTION)):
        (work / f"{name}.json").write_text(orjson.dumps(migration).decode())
    (work / "bench_migration.py").write_text(FUNCTION_MODULE)
    where = ["--storage-dir", str(storage)] + (["--storage-url", storage_url] if storage_url else [])
    common = ["--schema", str(BOOK_SCHEMA), "--memory-budget", budget]
    rows: list[str] = []
    if storage_url is None:
        seconds, peak, _ = run(work, str(work / "template.json"), *common, "--storage-dir", str(empty))
        rows.append(f"| {label} | baseline: empty store | 0 | {seconds:.1f} s | — | {peak:.0f} MiB | |")
    started = time.perf_counter()
    total = populate(storage, storage_url, count, size_mib)
    print(f"{label}: {count} books, {total / 2**20:.0f} MiB, generated in {time.perf_counter() - started:.0f} s",
          file=sys.stderr)
    steps = (("template, dry run", "template", ["--dry-run"]), ("template", "template", []),
             ("template again (all already migrated)", "template", []), ("merge patch", "merge", []),
             ("function", "function", []))
    for title, name, extra in steps:
        seconds, peak, summary = run(work, str(work / f"{name}.json"), *common, *where, *extra)
        counts = {key: value for key, value in summary["counts"].items() if value}  # type: ignore[union-attr]
        rate = count / seconds
        rows.append(f"| {label} | {title} | {count} × {size_mib:g} MiB | {seconds:.1f} s | {rate:.0f} doc/s | "
                    f"{peak:.0f} MiB | {counts} |")
        print(rows[-1], file=sys.stderr)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=1000, help="books in the store (default 1000)")
    parser.add_argument("--size-mib", type=float, default=1.0, help="size of each book (default 1)")
    parser.add_argument("--memory-budget", default="256MiB", help="the command's --memory-budget (default 256MiB)")
    parser.add_argument("--postgres", action="store_true", help="also on PostgreSQL")
    parser.add_argument("--tmp-dir", help="where the stores go")
    parser.add_argument("--out", help="write the figures as Markdown to this file too")
    args = parser.parse_args(argv)
    table = [f"`schemadoc migrate-documents --memory-budget {args.memory_budget}` ({os.cpu_count()} cores)", "",
             "| store | run | documents | time | rate | peak RSS | outcomes |", "|---|---|---|---|---|---|---|"]
    with tempfile.TemporaryDirectory(dir=args.tmp_dir) as tmp:
        work = Path(tmp)
        table += measure(work, "files", None, args.documents, args.size_mib, args.memory_budget)
        if args.postgres:
            with pg_schema("bench_migrate") as url:
                table += measure(work, "postgres", url, args.documents, args.size_mib, args.memory_budget)
    print("\n".join(table))
    if args.out:
        Path(args.out).write_text("\n".join(table) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
