"""Journal-first writes: every-write beside lazy snapshots (``make bench-journal``).

Per document size (MiB): leaf update and array append (median and p99 over ``--writes``
writes; validation included), opening a document with 1,000 journal entries after its
snapshot against opening it with a current snapshot, deep-read latency while a snapshot of the
document is serialised and written by each candidate mechanism (a thread with one
``orjson.dumps``, a thread with ``dumps_chunked``, a forked child), disk use per document and
peak RSS. Figures, not pass/fail; on a shared machine compare the ratios within one run.

    .venv/bin/python benchmarks/journal.py --sizes 1 10 100 --writes 200
"""

from __future__ import annotations

import argparse
import gc
import os
import resource
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import orjson
from generate import make_book, mid_paragraph_path

from schemadoc.schema import LoadedSchema, load_schema
from schemadoc.service import DocumentService
from schemadoc.snapshotter import SnapshotPolicy, dumps_chunked
from schemadoc.storage.files import FileDocumentStore

BOOK = Path(__file__).resolve().parents[1] / "schemas" / "book.schema.json"
POLICIES = {
    "every-write": SnapshotPolicy(mode="every-write"),
    "lazy": SnapshotPolicy(mode="lazy"),
}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"


def p99(samples: list[float]) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def summary(samples: list[float]) -> str:
    return f"p50 {ms(statistics.median(samples))}  p99 {ms(p99(samples))}"


def timed(action: Callable[[int], object], runs: int) -> list[float]:
    samples = []
    for i in range(runs):
        start = time.perf_counter()
        action(i)
        samples.append(time.perf_counter() - start)
    return samples


def service_on(schema: LoadedSchema, directory: Path, policy: SnapshotPolicy) -> DocumentService:
    service = DocumentService(schema, FileDocumentStore(directory), snapshot_policy=policy)
    service.open()
    return service


def writes(schema: LoadedSchema, base: Path, book: dict[str, Any], policy_name: str, runs: int) -> None:
    directory = base / policy_name
    service = service_on(schema, directory, POLICIES[policy_name])
    doc_id = service.create_document()[0]
    service.update_node(doc_id, "/", book, 1)
    leaf = mid_paragraph_path(book)
    parent = leaf.rsplit("/", 1)[0]
    version = [service.version_of(doc_id)]

    def update(i: int) -> None:
        version[0] = service.update_node(doc_id, f"{leaf}/text", f"edit {i}", version[0]).version

    def append(i: int) -> None:
        version[0] = service.create_node(doc_id, f"{parent}/-", {"text": f"new {i}"}, version[0]).version

    update_samples = timed(update, runs)
    append_samples = timed(append, runs)
    service.close()
    usage = FileDocumentStore(directory).disk_usage(doc_id)
    print(f"  {policy_name:11}  leaf update {summary(update_samples)}   append {summary(append_samples)}   "
          f"disk {sum(usage.values()) / 2**20:.1f} MiB {usage}", flush=True)


def opening(schema: LoadedSchema, base: Path, book: dict[str, Any], leaf: str, rounds: int = 5) -> None:
    """A cold open (a new service: recovery, then the first read) of a document whose snapshot is
    followed by 1,000 journal entries, against the same document with a current snapshot.

    The two are opened in turn, ``rounds`` times each, so that the machine's load strikes both.
    """
    tail, current = base / "open-tail", base / "open-current"
    lag = SnapshotPolicy(mode="lazy", inline_below_bytes=0, lag_versions=10**9, lag_bytes=2**62,
                         interval_seconds=10**9)
    service = service_on(schema, tail, lag)
    doc_id = service.create_document()[0]
    service.update_node(doc_id, "/", book, 1)
    service.snapshots.flush()
    version = service.version_of(doc_id)
    for i in range(1000):
        version = service.update_node(doc_id, f"{leaf}/text", f"v{i}", version).version
    service.snapshots.stop()  # no flush: 1,000 journal entries stay after the snapshot
    del service
    shutil.copytree(tail, current)
    service = service_on(schema, current, lag)
    service.read_node(doc_id, "/title")
    service.close()  # this copy's snapshot is current
    del service

    def cold(directory: Path) -> float:
        gc.collect()
        start = time.perf_counter()
        fresh = service_on(schema, directory, lag)
        fresh.read_node(doc_id, f"{leaf}/text")
        took = time.perf_counter() - start
        fresh.snapshots.stop()
        return took

    samples: dict[Path, list[float]] = {tail: [], current: []}
    for _ in range(rounds):
        for directory, taken in samples.items():
            taken.append(cold(directory))
    with_tail, snapshot_only = samples[tail], samples[current]
    print(f"  open: snapshot + 1,000 journal entries min {ms(min(with_tail))} median "
          f"{ms(statistics.median(with_tail))}; snapshot alone min {ms(min(snapshot_only))} median "
          f"{ms(statistics.median(snapshot_only))}; ratio {min(with_tail) / min(snapshot_only):.2f} (min), "
          f"{statistics.median(with_tail) / statistics.median(snapshot_only):.2f} (median)", flush=True)


def _fork_snapshot(content: Any, target: Path) -> Callable[[], None]:
    pid = os.fork()
    if pid == 0:  # the child: serialise the immutable document, write it, leave without cleanup
        try:
            data = orjson.dumps(content)
            with open(target, "wb") as file:
                file.write(data)
                os.fsync(file.fileno())
        finally:
            os._exit(0)
    return lambda: os.waitpid(pid, 0) and None


def reads_during_snapshot(schema: LoadedSchema, base: Path, book: dict[str, Any], leaf: str) -> None:
    directory = base / "reads"
    service = service_on(schema, directory, SnapshotPolicy(mode="lazy", inline_below_bytes=0))
    doc_id = service.create_document()[0]
    service.update_node(doc_id, "/", book, 1)
    content = service.read_node(doc_id, "").node
    target = directory / "probe.json"

    def write(data: bytes) -> None:
        with open(target, "wb") as file:
            file.write(data)
            os.fsync(file.fileno())

    mechanisms: dict[str, Callable[[], Callable[[], None]]] = {
        "thread, one orjson.dumps": lambda: _thread(lambda: write(orjson.dumps(content))),
        "thread, dumps_chunked": lambda: _thread(lambda: write(dumps_chunked(content))),
        "forked child": lambda: _fork_snapshot(content, target),
    }
    baseline = timed(lambda i: service.read_node(doc_id, f"{leaf}/text"), 2000)
    print(f"  deep read, idle: {summary(baseline)}", flush=True)
    for name, start in mechanisms.items():
        samples: list[float] = []
        begun = time.perf_counter()
        wait = start()
        done = threading.Event()
        threading.Thread(target=_then, args=(wait, done.set), daemon=True).start()
        while not done.is_set():  # a read is due every 0.5 ms: its latency counts from when it was due
            due = time.perf_counter() + 0.0005
            time.sleep(0.0005)
            service.read_node(doc_id, f"{leaf}/text")
            samples.append(max(time.perf_counter() - due, 0.0))
        took = time.perf_counter() - begun
        print(f"  deep read during a snapshot by {name:26}: {summary(samples)}  max {ms(max(samples))}"
              f"  ({len(samples)} reads; the snapshot took {took:.2f} s)", flush=True)
    service.snapshots.stop()


def _then(first: Callable[[], None], second: Callable[[], None]) -> None:
    first()
    second()


def _thread(work: Callable[[], None]) -> Callable[[], None]:
    thread = threading.Thread(target=work, daemon=True)
    thread.start()
    return thread.join


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 10, 100])
    parser.add_argument("--writes", type=int, default=200)
    options = parser.parse_args()
    schema = load_schema(BOOK)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    for size in options.sizes:
        book = make_book(size)
        leaf = mid_paragraph_path(book)
        print(f"\n== {size:g} MiB ({len(orjson.dumps(book)):,} bytes) ==", flush=True)
        base = Path(tempfile.mkdtemp(prefix="schemadoc-journal-bench-"))
        try:
            for policy_name in POLICIES:
                writes(schema, base, book, policy_name, options.writes)
            opening(schema, base, book, leaf)
            reads_during_snapshot(schema, base, book, leaf)
        finally:
            shutil.rmtree(base, ignore_errors=True)
        print(f"  peak RSS so far {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
