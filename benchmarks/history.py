"""Measure point-in-time reads, diffs and reverts on a document with many versions.

Not a test: it prints figures. ``make bench-history`` (or ``.venv/bin/python benchmarks/history.py``)
builds a book with ``--versions`` versions (default 10,000: chapters appended, titles and
paragraphs edited, chapters deleted) through the real service and files store, then measures:

- the first past-version read after a restart (the nearest persisted checkpoint, one every 256
  versions, plus the journal lines after it),
- random past-version reads afterwards (in-memory checkpoints every 64 versions as well),
- diffs between random versions and a revert to a random version,
- history pages: unfiltered, and filtered by actor (writes are made by ``ci`` and ``editor``, and by
  ``auditor`` one in a hundred): the filter reads the journal and keeps what matches, so a page
  for a rare actor looks at up to 10,000 versions.

The target of the history issue: any version of a 10,000-version document read in well under
50 ms. Writes go to a temporary directory (``--tmp-dir``, default: /dev/shm when present, so
building 10,000 versions does not wait on 10,000 fsyncs; the reads measured do not fsync).
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from common import REPO, timed

from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.files import FileDocumentStore

SCHEMA = REPO / "schemas" / "book.schema.json"


def build(service: DocumentService, versions: int, rng: random.Random) -> str:
    doc_id, *_ = service.create_document(actor="ci")
    version = 1
    chapters = 0
    while version < versions:
        actor = "auditor" if rng.random() < 0.01 else rng.choice(("ci", "editor"))
        action = rng.random()
        if chapters == 0 or action < 0.25:
            chapters += 1
            chapter = {"id": f"ch-{version}", "title": f"Chapter {version}",
                       "sections": [{"title": "S", "paragraphs": [{"text": f"p{version}"}], "sections": []}]}
            service.create_node(doc_id, "/chapters/-", chapter, version, actor=actor)
        elif action < 0.5:
            service.update_node(doc_id, "/title", f"Title {version}", version, actor=actor)
        elif action < 0.9:
            index = rng.randrange(chapters)
            service.create_node(doc_id, f"/chapters/{index}/sections/0/paragraphs/-", {"text": f"p{version}"},
                                version, actor=actor)
        else:
            service.delete_node(doc_id, f"/chapters/{rng.randrange(chapters)}", version, actor=actor)
            chapters -= 1
        version += 1
    return doc_id



def show(label: str, samples: list[float]) -> None:
    ms = [s * 1000 for s in samples]
    print(f"| {label} | {statistics.median(ms):.2f} ms | {min(ms):.2f} ms | {max(ms):.2f} ms | {len(ms)} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--versions", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--tmp-dir", type=Path, default=Path("/dev/shm") if Path("/dev/shm").is_dir() else None)
    args = parser.parse_args()
    rng = random.Random(10_000)
    schema = load_schema(SCHEMA)
    directory = Path(tempfile.mkdtemp(prefix="schemadoc-history-", dir=args.tmp_dir))
    try:
        service = DocumentService(schema, FileDocumentStore(directory))
        service.open()
        start = time.perf_counter()
        doc_id = build(service, args.versions, rng)
        built = time.perf_counter() - start
        size = (directory / f"{doc_id}.json").stat().st_size
        journal = (directory / f"{doc_id}.journal.jsonl").stat().st_size
        print(f"built {args.versions} versions in {built:.1f} s; snapshot {size / 1024:.0f} KiB, "
              f"journal {journal / 1024 / 1024:.1f} MiB")
        print()
        print("| operation | median | min | max | runs |")
        print("|---|---|---|---|---|")

        def cold() -> None:
            fresh = DocumentService(schema, FileDocumentStore(directory))
            fresh.open()
            fresh.read_node(doc_id, "/title", at_version=rng.randrange(1, args.versions + 1))

        show("first past read after a restart (persisted checkpoint + journal slice)", timed(lambda _: cold(), 5))
        service = DocumentService(schema, FileDocumentStore(directory))
        service.open()
        service.read_node(doc_id, "/title", at_version=1)
        show("past read, random version (warm)",
             timed(lambda _: service.read_node(doc_id, "/title", at_version=rng.randrange(1, args.versions + 1)),
                   args.runs))
        show("past read, version 9,999 of 10,000 (63 patches from an in-memory checkpoint)" if
             args.versions == 10_000 else "past read, latest - 1",
             timed(lambda _: service.read_version(doc_id, args.versions - 1), args.runs))
        show("diff between two random versions",
             timed(lambda _: service.diff(doc_id, rng.randrange(1, args.versions + 1),
                                        rng.randrange(1, args.versions + 1)), args.runs))
        latest = [args.versions]

        def revert() -> None:
            result = service.revert(doc_id, rng.randrange(1, latest[0]), latest[0])
            latest[0] = result.version

        show("revert to a random version (a write, with fsync)", timed(lambda _: revert(), 20))
        runs = max(args.runs // 10, 5)
        show("history page of 100 from a random version, unfiltered",
             timed(lambda _: service.history(doc_id, since_version=rng.randrange(args.versions), limit=100), runs))
        show("history page of 100 from a random version, actor=editor (about half the versions)",
             timed(lambda _: service.history(doc_id, since_version=rng.randrange(args.versions), limit=100,
                                             actor="editor"), runs))
        show("history of actor=auditor (1 % of the versions) from version 0: every version looked at",
             timed(lambda _: service.history(doc_id, limit=100, actor="auditor"), runs))
        show("history of an actor who never wrote, from version 0 (10,000 versions looked at)",
             timed(lambda _: service.history(doc_id, limit=100, actor="nobody"), runs))
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
