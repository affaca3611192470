"""The repair rule's cost on a write (validation_level moderate), beside a normal write, on books of about 1 and
10 MiB.

Not a test: it prints figures and writes them as a Markdown table to ``benchmarks/results/repair.md``. A book is
stored under ``schemas/book.schema.json`` on a files store, then served by a service whose schema is tightened: every
chapter now requires an ``isbn`` it lacks (one violation per chapter). Each figure is a whole service write
(``update_node``: lock, apply, validation, the journal appended and fsynced), median and p99:

* normal: a paragraph's text updated in the book under its own schema (valid: incremental validation), and
  the same as the first write after the document was loaded (judged whole once);
* repair, leaf: the same update in the book under the tightened schema (invalid, the violations left alone:
  the rule needs the old report, remembered from the last write, and the new one, by whole validation);
* repair, fix one: a chapter's missing ``isbn`` added (one violation fewer each time);
* repair, first after a load: as "repair, leaf" but the document just loaded, so its report is not remembered
  yet (the old version is validated too);
* refused: a write that adds a violation (a paragraph style outside its enum) to the invalid book.

    .venv/bin/python benchmarks/repair.py                    # 1 and 10 MiB, 20 writes each
    .venv/bin/python benchmarks/repair.py --sizes 10 --writes 50
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common import BOOK_SCHEMA, HERE, p99
from generate import make_book, mid_paragraph_path

from schemadoc.errors import SchemaDocError
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.files import FileDocumentStore

OUT = HERE / "results" / "repair.md"


def tightened(folder: Path) -> Path:
    """The book schema with a required chapter ``isbn`` (no default): every stored chapter lacks it."""
    schema = json.loads(BOOK_SCHEMA.read_text())
    chapter = schema["$defs"]["chapter"]
    chapter["properties"]["isbn"] = {"type": "string", "pattern": "^[0-9]{13}$"}
    chapter["required"] = [*chapter["required"], "isbn"]
    schema["$id"] = schema.get("$id", "book") + "-tight"
    path = folder / "book-tight.schema.json"
    path.write_text(json.dumps(schema))
    for sibling in BOOK_SCHEMA.parent.glob("*.json"):  # the $ref documents beside it, if any
        if sibling.name != BOOK_SCHEMA.name:
            (folder / sibling.name).write_text(sibling.read_text())
    return path


def ms(seconds: float) -> str:
    value = seconds * 1e3
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def time_writes(write: Callable[[int], Any], writes: int, before: Callable[[int], None] | None = None) -> list[float]:
    import time
    samples = []
    for i in range(writes):
        if before is not None:
            before(i)
        start = time.perf_counter()
        write(i)
        samples.append(time.perf_counter() - start)
    return samples


def measure(size: float, writes: int, folder: Path) -> dict[str, list[float]]:
    book = make_book(size)
    leaf = mid_paragraph_path(book) + "/text"
    chapters = len(book["chapters"])
    book_schema, tight_schema = load_schema(BOOK_SCHEMA), load_schema(tightened(folder))
    rows: dict[str, list[float]] = {}

    normal_store = folder / f"normal-{size}"
    normal = DocumentService(book_schema, FileDocumentStore(normal_store))
    normal.open()
    doc = normal.create_document(book)[0]
    version = normal.version_of(doc)
    normal.update_node(doc, leaf, "warm up", version)  # the validator now knows the current version valid

    def normal_write(i: int) -> None:
        normal.update_node(doc, leaf, f"normal write {i}", normal.version_of(doc))

    rows["normal write (valid book)"] = time_writes(normal_write, writes)

    def reload_normal(i: int) -> None:
        normal._forget(doc)
        normal.read_node(doc, "/title")

    rows["normal write, first after a load"] = time_writes(normal_write, max(writes // 4, 3), before=reload_normal)
    normal.close()

    store = folder / f"repair-{size}"
    loose = DocumentService(book_schema, FileDocumentStore(store))
    loose.open()
    doc = loose.create_document(book)[0]
    loose.close()
    tight = DocumentService(tight_schema, FileDocumentStore(store))
    tight.open()
    assert tight.violation_count(doc) == chapters

    def repair_leaf(i: int) -> None:
        result = tight.update_node(doc, leaf, f"repair write {i}", tight.version_of(doc))
        assert result.accepted and not result.report.valid

    rows[f"repair write, leaf ({chapters} violations left)"] = time_writes(repair_leaf, writes)

    def fix_one(i: int) -> None:
        result = tight.create_node(doc, f"/chapters/{i}/isbn", "9780000000000", tight.version_of(doc))
        assert result.repair is not None and result.repair.resolved == 1

    rows["repair write, fixing one chapter"] = time_writes(fix_one, min(writes, chapters - 1))

    def refused(i: int) -> None:
        try:
            tight.update_node(doc, leaf.rsplit("/", 1)[0] + "/style", "no-such-style", tight.version_of(doc))
        except SchemaDocError as error:
            assert error.code == "validation-failed" and "already_invalid" in error.details
        else:
            raise AssertionError("the write adding a violation was accepted")

    rows["refused (adds a violation)"] = time_writes(refused, writes)

    def reload(i: int) -> None:
        tight._forget(doc)  # as an eviction: the next write loads the document and knows nothing of it
        tight.read_node(doc, "/title")

    rows["repair write, first after a load"] = time_writes(repair_leaf, max(writes // 4, 3), before=reload)
    tight.close()
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 10])
    parser.add_argument("--writes", type=int, default=20)
    args = parser.parse_args(argv)
    lines = ["| book | write | median ms | p99 ms |", "|---|---|---|---|"]
    with tempfile.TemporaryDirectory(prefix="schemadoc-repair-bench-") as folder:
        for size in args.sizes:
            for name, samples in measure(size, args.writes, Path(folder)).items():
                line = f"| {size:g} MiB | {name} | {ms(statistics.median(samples))} | {ms(p99(samples))} |"
                lines.append(line)
                print(line, flush=True)
    OUT.write_text("# The repair rule's cost per write\n\nWritten by `benchmarks/repair.py` (see its docstring).\n\n"
                   + "\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
