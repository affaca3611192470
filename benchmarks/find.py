"""Finding documents (docs/search.md): filters, full-text search and list pages over many books of ~35 KB.

``--documents`` books (default 100,000) of about ``--size-kb`` KB (35) are written straight through the store
(no HTTP, no index: that is what a store looks like before the index exists), then a service opens on it under a
``--memory-budget`` (256 MiB) and builds its index from the store (the time is printed). Then, in process:

- filters: ``document_list`` with a common value (a third of the books), a rare one, a range, sorted by modified;
  each as asked the first time since the index changed (its total counted) and again (its total known);
- full-text: a word in about 1 book in 1,000, a common word, a phrase, a prefix; one document's search below a pointer;
- list pages: pages of 100 by cursor from the first to the last (p50, the slowest, the first tenth against the last
  tenth: the same cost at any depth), and the last page by offset;
- writes: a leaf update (``/title``) p50 with the index beside without it, blocks of each in turn (the first
  block of each warms up, uncounted).

Timings are wall clock in one process on a shared machine: the load average is printed. ``--postgres`` runs the
same on PostgreSQL (``SCHEMADOC_TEST_POSTGRES_URL``) after the files store.
"""

from __future__ import annotations

import argparse
import gc
import os
import random
import resource
import sys
import tempfile
import time
from collections.abc import Callable
from typing import Any

import common  # noqa: F401  (puts the checkout's src on the path)
import orjson
from common import BOOK_SCHEMA, pg_schema
from generate import _Prose, paragraph

from schemadoc.ops.journal import JournalEntry, utc_now
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage import store_for
from schemadoc.storage.base import DocumentMeta, DocumentStore

STATUSES = ("draft", "review", "published")
RARE_EVERY = 1000


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def book(i: int, prose: _Prose, rng: random.Random, size: int) -> dict[str, Any]:
    content: dict[str, Any] = {
        "title": f"Book {i} {prose.title(3)}",
        "metadata": {"language": rng.choice(("en", "fr", "de")), "status": rng.choice(STATUSES),
                     "edition": rng.randint(1, 5), "keywords": [f"kw{i % 50}", f"rare{i % RARE_EVERY}"]},
        "chapters": [], "tags": [f"t{i % 7}"],
    }
    total, number = 200, 0
    while total < size:
        number += 1
        paragraphs = [paragraph(prose.paragraph_text()) for _ in range(rng.randint(4, 10))]
        if number == 1:
            paragraphs[0]["text"] += f" The keeper zephyr{i % RARE_EVERY} lit the lamp."
        chapter = {"id": f"ch-{number}", "title": prose.title(2),
                   "sections": [{"title": prose.title(3), "paragraphs": paragraphs, "sections": []}]}
        content["chapters"].append(chapter)
        total += len(orjson.dumps(chapter))
    return content


def fill(store: DocumentStore, count: int, size: int, schema_uri: str, digest: str) -> list[str]:
    rng = random.Random(7)
    prose = _Prose(random.Random(8))
    ids = []
    started = time.perf_counter()
    for i in range(count):
        content = book(i, prose, rng, size)
        data = orjson.dumps(content)
        now = utc_now()
        doc_id = f"01K{i:023d}"
        entry = JournalEntry(version=1, op="create", patch=[{"op": "add", "path": "", "value": content}], at=now,
                             info={"seq": 0})
        store.create(DocumentMeta(doc_id=doc_id, version=1, schema_uri=schema_uri, created_at=now, modified_at=now,
                                  content_size_bytes=len(data), schema_digest=digest), entry, data)
        ids.append(doc_id)
        if (i + 1) % 5000 == 0:
            log(f"  {i + 1} written ({time.perf_counter() - started:.0f} s)")
    return ids


def p50(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[len(ordered) // 2]


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def timings(action: Callable[[], Any], runs: int) -> list[float]:
    found = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        found.append(time.perf_counter() - started)
    return found


def measure(service: DocumentService, ids: list[str], runs: int) -> None:
    filters = {
        "status eq draft (1/3), newest first": ([["/metadata/status", "eq", "draft"]], "-modified"),
        "keyword eq rare7 (1/1000)": ([["/metadata/keywords", "eq", "rare7"]], "created"),
        "edition ge 4 and language fr": ([["/metadata/edition", "ge", 4], ["/metadata/language", "eq", "fr"]],
                                         "/metadata/edition"),
        "title prefix 'Book 12'": ([["/title", "prefix", "Book 12"]], "created"),
    }
    index = service.search_index

    def counted(where: Any, sort: str) -> None:
        index._counts.clear()  # as a filter asked for the first time since the index changed: its total counted
        service.list_documents(where=where, sort=sort, limit=20)

    for name, (where, sort) in filters.items():
        total = service.list_documents(where=where, sort=sort, limit=20).total
        took = timings(lambda w=where, s=sort: counted(w, s), runs)
        print(f"| filter: {name} ({total} match), a page of 20, its total counted | {ms(p50(took))} |")
        took = timings(lambda w=where, s=sort: service.list_documents(where=w, sort=s, limit=20), runs)
        print(f"| ... the same again (its total known: the index unchanged) | {ms(p50(took))} |")
    searches = {
        "a word in 1 book in 1,000 (zephyr7)": ("zephyr7", None, None),
        "a common word (keeper, in every book)": ("keeper", None, None),
        'a phrase ("lit the lamp")': ('"lit the lamp"', None, None),
        "a prefix (zephyr12*)": ("zephyr12*", None, None),
        "one document, below /chapters/0": ("keeper", "/chapters/0", [ids[len(ids) // 2]]),
    }
    for name, (query, below, doc_ids) in searches.items():
        took = timings(lambda q=query, b=below, d=doc_ids: service.search(q, b, d, limit=20), runs)
        print(f"| search: {name}, 20 hits | {ms(p50(took))} |")
    pages: list[float] = []
    collections: list[float] = []  # the interpreter's garbage collections while the pages were listed
    collecting = [0.0]

    def timed_collection(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            collecting[0] = time.perf_counter()
        else:
            collections.append(time.perf_counter() - collecting[0])

    cursor = None
    gc.callbacks.append(timed_collection)
    try:
        while True:
            started = time.perf_counter()
            page = service.list_documents(limit=100, cursor=cursor)
            pages.append(time.perf_counter() - started)
            cursor = page.next_cursor
            if cursor is None:
                break
    finally:
        gc.callbacks.remove(timed_collection)
    print(f"| list pages of 100 by cursor, first to last ({len(pages)} pages): p50 | {ms(p50(pages))} |")
    print(f"| ... slowest page (the longest garbage collection while listing: {ms(max(collections, default=0.0))}, "
          f"{len(collections)} in all) | {ms(max(pages))} |")
    print(f"| ... the first page (its total counted) | {ms(pages[0])} |")
    tenth = max(len(pages) // 10, 1)
    print(f"| ... p50 of the first tenth of the pages / of the last tenth | {ms(p50(pages[:tenth]))} / "
          f"{ms(p50(pages[-tenth:]))} |")
    last = max(len(ids) - 100, 0)
    took = timings(lambda: service.list_documents(limit=100, offset=last), max(runs // 4, 3))
    print(f"| the last page of 100 by offset ({last}) | {ms(p50(took))} |")


def writes(service: DocumentService, ids: list[str], runs: int) -> None:
    rng = random.Random(3)
    index = service.search_index
    samples: dict[str, list[float]] = {"with": [], "without": []}
    versions: dict[str, int] = {}
    for block in range(8):  # the first two blocks (one of each) warm up and are not counted
        mode = "with" if block % 2 == 0 else "without"
        service._search = index if mode == "with" else None  # without: the commit tells no index
        for _ in range(max(runs // 3, 5)):
            doc_id = rng.choice(ids)
            version = versions.get(doc_id) or service.store.read_meta(doc_id).version
            started = time.perf_counter()
            versions[doc_id] = service.update_node(doc_id, "/title", f"Retitled {rng.random()}", version).version
            if block >= 2:
                samples[mode].append(time.perf_counter() - started)
        index.sync()
    service._search = index
    with_, without = p50(samples["with"]), p50(samples["without"])
    print(f"| leaf write p50 with the index / without | {ms(with_)} / {ms(without)} ({with_ / without:.2f}x) |")


def run(name: str, store: DocumentStore, args: argparse.Namespace) -> None:
    schema = load_schema(BOOK_SCHEMA)
    log(f"{name}: writing {args.documents} books of ~{args.size_kb} KB through the store")
    started = time.perf_counter()
    store.open()
    ids = fill(store, args.documents, args.size_kb * 1000, schema.base_uri, schema.digest)
    log(f"  written in {time.perf_counter() - started:.0f} s")
    service = DocumentService(schema, store, memory_budget=args.memory_budget)
    started = time.perf_counter()
    service.open()
    built = time.perf_counter() - started
    print(f"\n### {name}: {args.documents} books of ~{args.size_kb} KB, memory budget {args.memory_budget >> 20} MiB, "
          f"load average {os.getloadavg()[0]:.1f}\n")
    print("| measure | p50 |\n|---|---:|")
    print(f"| index built from the store at start-up (the store's recovery included) | {built:.1f} s "
          f"({built / max(args.documents, 1) * 1000:.1f} ms a book) |")
    measure(service, ids, args.runs)
    writes(service, ids, args.runs)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"| peak RSS of the process | {peak:.0f} MiB |")
    service.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=100_000)
    parser.add_argument("--size-kb", type=int, default=35)
    parser.add_argument("--memory-budget", type=int, default=256 << 20)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--postgres", action="store_true", help="also on PostgreSQL")
    parser.add_argument("--only-postgres", action="store_true")
    args = parser.parse_args(argv)
    if not args.only_postgres:
        with tempfile.TemporaryDirectory(prefix="bench-find-") as scratch:
            run("files store", store_for(os.path.join(scratch, "docs"), None), args)
    if args.postgres or args.only_postgres:
        with pg_schema("bench_find") as url:
            run("PostgreSQL", store_for(None, url), args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
