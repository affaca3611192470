"""What the request limits cost a write: the string-length check beside the write itself.

Not a test: it prints figures and writes them as a Markdown table to
``benchmarks/results/limits.md``. For book content of several sizes (``generate.py``), written
as one ``node_data``:

* ``check``: ``check_string_lengths`` at the default ``max_string_length`` (1 MiB characters):
  one ``orjson.dumps`` when the value's JSON fits in the limit, else a walk of every string;
* ``walk``: the walk alone (what a value bigger than the limit always pays);
* ``write``: ``DocumentService.update_node`` of the same value at ``/chapters`` of a new book
  (compile, apply, validate, journal, fsync), the check included;
* a subscriber slot taken and given back (``SubscriberSlots``), in microseconds.

    .venv/bin/python benchmarks/limits.py                  # 0.1, 1 and 10 MiB
    .venv/bin/python benchmarks/limits.py --sizes 0.1 1 --runs 5

Median and minimum over ``--runs`` runs, the three timed in turn within each run, so a loaded
machine shifts them alike.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
try:
    import schemadoc  # noqa: F401
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO / "src"))

import orjson  # noqa: E402
from generate import make_book  # noqa: E402

from schemadoc.interfaces.subscribers import SubscriberSlots  # noqa: E402
from schemadoc.ops import limits  # noqa: E402
from schemadoc.ops.limits import MAX_STRING_LENGTH, check_string_lengths  # noqa: E402
from schemadoc.schema import load_schema  # noqa: E402
from schemadoc.service import DocumentService  # noqa: E402
from schemadoc.storage.files import FileDocumentStore  # noqa: E402

SCHEMA = REPO / "schemas" / "book.schema.json"


Timing = tuple[float, float]


def interleaved_ms(actions: list[Callable[[], Any]], runs: int) -> list[Timing]:
    """(median, minimum) in ms of each action, timed in turn within each run (so load hits all alike)."""
    samples: list[list[float]] = [[] for _ in actions]
    for _ in range(runs):
        for action, taken in zip(actions, samples, strict=True):
            start = time.perf_counter()
            action()
            taken.append((time.perf_counter() - start) * 1000)
    return [(statistics.median(taken), min(taken)) for taken in samples]


def measure(service: DocumentService, chapters: list[Any], runs: int) -> list[Timing]:
    """The check, the walk alone and a write of ``chapters`` as one node."""
    def write() -> None:
        doc_id, _, meta, _ = service.create_document()
        service.update_node(doc_id, "/chapters", chapters, meta.version)

    return interleaved_ms([lambda: check_string_lengths(chapters, MAX_STRING_LENGTH, "node_data"),
                           lambda: limits._too_long(chapters, MAX_STRING_LENGTH), write], runs)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[0.1, 1.0, 10.0], help="sizes in MiB")
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "limits.md")
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        service = DocumentService(load_schema(SCHEMA), FileDocumentStore(Path(tmp)))
        service.open()
        try:
            for size in args.sizes:
                chapters = make_book(size)["chapters"]
                json_bytes = len(orjson.dumps(chapters))
                check, walk, written = measure(service, chapters, args.runs)
                rows.append((size, json_bytes, len(chapters), check, walk, written))
                print(f"{size:>5} MiB ({json_bytes:,} bytes, {len(chapters)} chapters): check {check[0]:.2f} ms "
                      f"(min {check[1]:.2f}), walk {walk[0]:.2f} ms (min {walk[1]:.2f}), write {written[0]:.1f} ms "
                      f"(min {written[1]:.1f}): the check is {100 * check[0] / written[0]:.1f}% of the write",
                      flush=True)
        finally:
            service.close()

    slots = SubscriberSlots()
    start = time.perf_counter()
    rounds = 100_000
    for _ in range(rounds):
        slots.acquire("01ARZ3NDEKTSV4RRFFQ69G5FAV")()
    slot_us = (time.perf_counter() - start) / rounds * 1e6
    print(f"subscriber slot taken and given back: {slot_us:.2f} µs")

    load = os.getloadavg()[0]
    lines = [
        "# Request limits: what they cost a write",
        "",
        f"`benchmarks/limits.py`, median (minimum) of {args.runs} interleaved runs, load average {load:.1f} on "
        f"{os.cpu_count()} cores. "
        f"`check` is `check_string_lengths` at the default limit ({MAX_STRING_LENGTH:,} characters); `walk` the "
        "walk it falls back to for values whose JSON is bigger than the limit; `write` an `update_node` of the "
        "same value (check included).",
        "",
        "| size | JSON bytes | chapters | check | walk | write | check / write |",
        "|---|---|---|---|---|---|---|",
        *(f"| {size} MiB | {json_bytes:,} | {chapters} | {check[0]:.2f} ({check[1]:.2f}) ms | "
          f"{walk[0]:.2f} ({walk[1]:.2f}) ms | {written[0]:.1f} ({written[1]:.1f}) ms | "
          f"{100 * check[0] / written[0]:.1f}% |" for size, json_bytes, chapters, check, walk, written in rows),
        "",
        f"A subscriber slot taken and given back: {slot_us:.2f} µs.",
        "",
    ]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
