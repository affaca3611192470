"""``schemadoc check`` on a store of many big documents: time and peak RSS of the process.

Not a test: it prints figures (and writes them as Markdown with ``--out``).

    .venv/bin/python benchmarks/check.py                              # 1,000 books of 1 MiB, files store
    .venv/bin/python benchmarks/check.py --count 200 --postgres       # PostgreSQL too

Method: a store of ``--count`` books of ``--size-mib`` (``generate.py``; ``--distinct`` books generated, the
others copies of them with their own title), each created and then edited ``--versions`` times (title edits)
with its snapshot left at version 1, so every check replays a journal tail. The check runs in its own process,
which prints its peak RSS (``ru_maxrss``) when it ends, three ways: against the book schema (every document
valid), against a tightened one (every chapter misses a required ``isbn``: every document invalid, with
hundreds of violations each, tallied by code and path pattern), and the same with ``--json``. The baseline is
the check of an empty store. Memory bounded by the largest document shows as a peak that does not grow with
the count, well under the 256 MiB the issue sets as the budget.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
from common import BOOK_SCHEMA, pg_schema, run_schemadoc
from generate import make_book


def run(cwd: Path, *args: str) -> tuple[float, float, int]:
    """Seconds, peak RSS (MiB) and exit code of one ``schemadoc`` command in its own process."""
    done = run_schemadoc(cwd, *args, accept=(0, 1))
    return done.seconds, done.peak_mib, done.returncode


def populate(store: Any, count: int, size_mib: float, versions: int, distinct: int) -> int:
    """``count`` books in ``store`` (opened), snapshots at version 1; returns the bytes of their current content."""
    from ulid import ULID

    from schemadoc.ops.journal import JournalEntry, utc_now
    from schemadoc.storage.base import DocumentMeta

    books = [make_book(size_mib, seed=seed) for seed in range(distinct)]
    total = 0
    for number in range(count):
        book = books[number % distinct]
        book["title"] = f"Book {number}"
        doc_id, now = str(ULID()), utc_now()
        data = orjson.dumps(book)
        meta = DocumentMeta(doc_id, 1, BOOK_SCHEMA.as_uri(), now, now, len(data))
        store.create(meta, JournalEntry(1, "create", [{"op": "add", "path": "", "value": book}], now), data)
        for version in range(2, versions + 2):
            title = f"Book {number}, edit {version}"
            size = len(data) + len(title) - len(book["title"])
            meta = DocumentMeta(doc_id, version, meta.schema_uri, meta.created_at, utc_now(), size)
            entry = JournalEntry(version, "update_node", [{"op": "replace", "path": "/title", "value": title}],
                                 meta.modified_at)
            store.commit(meta, entry)
        total += size
    return total


def tightened(directory: Path) -> Path:
    schema = json.loads(BOOK_SCHEMA.read_text())
    chapter = schema["$defs"]["chapter"]
    chapter["properties"]["isbn"] = {"type": "string", "pattern": "^[0-9]{13}$"}
    chapter["required"] = [*chapter["required"], "isbn"]
    path = directory / "tightened.schema.json"
    path.write_text(json.dumps(schema))
    return path


def _measure(work: Path, where: list[str], strict: Path, label: str, content: int, count: int,
             size_mib: float, baseline: float) -> list[str]:
    rows = []
    for what, schema, extra in (("every document valid", BOOK_SCHEMA, ()), ("every document invalid", strict, ()),
                                ("every document invalid, --json", strict, ("--json",))):
        seconds, peak, code = run(work, "check", "--schema", str(schema), *where, *extra)
        assert code == (0 if schema == BOOK_SCHEMA else 1), code
        rows.append(f"| {label}: {what} | {count} x {size_mib:g} MiB ({content / (1 << 20):.0f} MiB) | {peak:.0f} "
                    f"| {peak - baseline:+.0f} | {seconds:.1f} | {seconds / count * 1000:.0f} |")
        print(rows[-1], flush=True)
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--count", type=int, default=1000, help="documents in the store (default 1000)")
    parser.add_argument("--size-mib", type=float, default=1.0, help="size of each book (default 1)")
    parser.add_argument("--versions", type=int, default=3, help="title edits after each creation (default 3)")
    parser.add_argument("--distinct", type=int, default=8, help="books generated; the others are copies (default 8)")
    parser.add_argument("--postgres", action="store_true", help="also a PostgreSQL store (SCHEMADOC_TEST_POSTGRES_URL)")
    parser.add_argument("--tmp-dir", help="where the store goes")
    parser.add_argument("--out", help="write the figures as Markdown to this file too")
    args = parser.parse_args(argv)
    from schemadoc.storage import FileDocumentStore

    rows: list[str] = []
    with tempfile.TemporaryDirectory(dir=args.tmp_dir) as tmp:
        work = Path(tmp)
        strict = tightened(work)
        (work / "empty").mkdir()
        _, baseline, _ = run(work, "check", "--schema", str(BOOK_SCHEMA), "--storage-dir", "empty")
        rows.append(f"| baseline: files (empty store) | 0 | {baseline:.0f} | | | |")
        store = FileDocumentStore(work / "store")
        store.open()
        started = time.perf_counter()
        content = populate(store, args.count, args.size_mib, args.versions, args.distinct)
        print(f"generated {args.count} books in {time.perf_counter() - started:.0f} s", flush=True)
        rows += _measure(work, ["--storage-dir", "store"], strict, "files", content, args.count, args.size_mib,
                         baseline)
        if args.postgres:
            from schemadoc.storage.postgres import PostgresDocumentStore

            with pg_schema("bench_check") as url:
                database = PostgresDocumentStore(url)
                database.open()
                try:
                    content = populate(database, args.count, args.size_mib, args.versions, args.distinct)
                finally:
                    database.close()
                rows += _measure(work, ["--storage-url", url], strict, "PostgreSQL", content, args.count,
                                 args.size_mib, baseline)
    table = ["| check | store | peak RSS (MiB) | above the baseline (MiB) | seconds | ms per document |",
             "|---|---|---|---|---|---|", *rows]
    print("\n".join(table))
    if args.out:
        Path(args.out).write_text("\n".join(table) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
