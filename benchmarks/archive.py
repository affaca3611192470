"""Export and import in bounded memory: peak RSS and time of ``schemadoc export`` / ``schemadoc import`` processes.

Not a test: it prints figures (and writes them as Markdown with ``--out``).

    .venv/bin/python benchmarks/archive.py                         # 20 and 200 books of 1 MiB, files store
    .venv/bin/python benchmarks/archive.py --counts 200 --size-mib 1 --postgres
    .venv/bin/python benchmarks/archive.py --counts 20 --size-mib 10

Method: ``--counts`` stores of books of ``--size-mib`` (``generate.py``, a distinct seed and title each,
written straight through the files store one at a time, each with ``--versions`` small title edits after
its creation so that ``--history`` has a journal to carry). Each command runs in its own process, which
prints its peak RSS (``ru_maxrss``) when it ends: ``export --history`` from the files store, ``import`` of
that archive into an empty files store (every document validated against ``schemas/book.schema.json`` and
its journal replayed), and with ``--postgres`` (``SCHEMADOC_TEST_POSTGRES_URL``, a throwaway schema) the
import into PostgreSQL and the export from it. The baseline is the same command on an empty store. Memory
bounded by the largest document, not by the store, shows as a peak that does not grow with the count.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import orjson
from common import BOOK_SCHEMA, pg_schema, run_schemadoc
from generate import make_book


def run(cwd: Path, *args: str) -> tuple[float, float]:
    """Seconds and peak RSS (MiB) of one ``schemadoc`` command in its own process."""
    done = run_schemadoc(cwd, *args)
    return done.seconds, done.peak_mib


def populate(directory: Path, count: int, size_mib: float, versions: int) -> int:
    """``count`` books in a files store; returns the bytes of their current content."""
    from ulid import ULID

    from schemadoc.ops.journal import JournalEntry, utc_now
    from schemadoc.storage.base import DocumentMeta
    from schemadoc.storage.files import FileDocumentStore

    store = FileDocumentStore(directory)
    store.open()
    total = 0
    for number in range(count):
        book = make_book(size_mib, seed=number)
        book["title"] = f"Book {number}"
        doc_id, now = str(ULID()), utc_now()
        data = orjson.dumps(book)
        meta = DocumentMeta(doc_id, 1, BOOK_SCHEMA.as_uri(), now, now, len(data))
        store.create(meta, JournalEntry(1, "create", [{"op": "add", "path": "", "value": book}], now), data)
        for version in range(2, versions + 2):
            book["title"] = f"Book {number}, edit {version}"
            data = orjson.dumps(book)
            meta = DocumentMeta(doc_id, version, meta.schema_uri, meta.created_at, utc_now(), len(data))
            entry = JournalEntry(version, "update_node", [{"op": "replace", "path": "/title", "value": book["title"]}],
                                 meta.modified_at)
            store.commit(meta, entry, data if version == versions + 1 else None)
        total += len(data)
        del book, data
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--counts", default="20,200", help="documents per store, comma-separated (default 20,200)")
    parser.add_argument("--size-mib", type=float, default=1.0, help="size of each book (default 1)")
    parser.add_argument("--versions", type=int, default=3, help="title edits after each creation (default 3)")
    parser.add_argument("--postgres", action="store_true", help="also import into PostgreSQL and export from it")
    parser.add_argument("--tmp-dir", help="where the stores and archives go")
    parser.add_argument("--out", help="write the figures as Markdown to this file too")
    args = parser.parse_args(argv)
    rows: list[str] = []
    with tempfile.TemporaryDirectory(dir=args.tmp_dir) as tmp:
        work = Path(tmp)
        (work / "empty").mkdir()
        _, base_peak = run(work, "export", "--storage-dir", "empty", "--history", "empty.tar")
        _, base_import = run(work, "import", "--schema", str(BOOK_SCHEMA), "--storage-dir", "empty-target",
                             "empty.tar")
        rows.append(f"| baseline: files (empty store) | 0 | export {base_peak:.0f} / import {base_import:.0f} | | |")
        pg_base = {"export": base_peak, "import": base_import}
        if args.postgres:
            with pg_schema("bench_archive") as url:
                pg_base["import"] = run(work, "import", "--schema", str(BOOK_SCHEMA), "--storage-url", url,
                                        "empty.tar")[1]
                pg_base["export"] = run(work, "export", "--storage-url", url, "--history", "pg-empty.tar")[1]
            rows.append(f"| baseline: PostgreSQL (empty store) | 0 | export {pg_base['export']:.0f} / import "
                        f"{pg_base['import']:.0f} | | |")
        for count in (int(part) for part in args.counts.split(",")):
            source = work / f"source-{count}"
            content = populate(source, count, args.size_mib, args.versions)
            archive = work / f"{count}.tar"
            figures = {"export --history (files)": run(work, "export", "--storage-dir", source.name, "--history",
                                                       archive.name)}
            figures["import (files)"] = run(work, "import", "--schema", str(BOOK_SCHEMA), "--storage-dir",
                                            f"target-{count}", archive.name)
            if args.postgres:
                with pg_schema("bench_archive") as url:
                    figures["import (PostgreSQL)"] = run(work, "import", "--schema", str(BOOK_SCHEMA),
                                                         "--storage-url", url, archive.name)
                    figures["export --history (PostgreSQL)"] = run(work, "export", "--storage-url", url,
                                                                   "--history", f"pg-{count}.tar")
            size = archive.stat().st_size / (1 << 20)
            for what, (seconds, peak) in figures.items():
                kind = "import" if what.startswith("import") else "export"
                files_base = {"import": base_import, "export": base_peak}
                baseline = pg_base[kind] if "PostgreSQL" in what else files_base[kind]
                rows.append(f"| {what} | {count} x {args.size_mib:g} MiB ({content / (1 << 20):.0f} MiB, archive "
                            f"{size:.0f} MiB) | {peak:.0f} | {peak - baseline:+.0f} | {seconds:.1f} |")
            print("\n".join(rows[-len(figures):]), flush=True)
    table = ["| command | store | peak RSS (MiB) | above its baseline (MiB) | seconds |", "|---|---|---|---|---|",
             *rows]
    print("\n".join(table))
    if args.out:
        Path(args.out).write_text("\n".join(table) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
