"""Journal-first writes: every-write beside lazy snapshots (``make bench-journal``).

Per document size (MiB), in three sections (``--only``):

- ``writes``: leaf update and array append (median and p99 over ``--writes`` writes; validation
  included) and a rejected update, with ``every-write`` and ``lazy`` snapshots; disk use per document;
- ``open``: opening a document with 1,000 journal entries after its snapshot against opening it
  with a current snapshot (ABBA, min and median);
- ``snapshot``: deep reads (one due every 0.5 ms) and writes to a small document while a snapshot
  of the document is serialised and written by each candidate mechanism: a thread with one
  ``orjson.dumps``; a thread with ``dumps_chunked`` (pieces joined, then written) pausing with
  ``sleep(0)`` or with a 0.1 ms sleep; the store writing ``iter_chunked`` pieces as they come (what
  the snapshotter does); a forked child serialising the copy-on-write document. Each prints the
  read and write latencies, the snapshot's wall time and the memory it added.

Peak RSS after each size. Figures, not pass/fail; on a shared machine compare within one run.

    .venv/bin/python benchmarks/journal.py --sizes 1 10 100 --writes 200
    .venv/bin/python benchmarks/journal.py --sizes 100 --only snapshot --rounds 3
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

import orjson
from common import p99, timed  # puts the checkout's src on sys.path
from generate import make_book, mid_paragraph_path

from schemadoc.errors import SchemaDocError
from schemadoc.schema import LoadedSchema, load_schema
from schemadoc.service import DocumentService
from schemadoc.snapshotter import SnapshotPolicy, dumps_chunked, hand_over, iter_chunked
from schemadoc.storage.files import FileDocumentStore

BOOK = Path(__file__).resolve().parents[1] / "schemas" / "book.schema.json"
SECTIONS = ("writes", "open", "snapshot")
POLICIES = {
    "every-write": SnapshotPolicy(mode="every-write"),
    "lazy": SnapshotPolicy(mode="lazy"),
}


def ms(seconds: float) -> str:
    return f"{seconds * 1000:.2f} ms"



def summary(samples: list[float]) -> str:
    if not samples:  # a small document's snapshot can end before the first request
        return "-"
    return f"p50 {ms(statistics.median(samples))}  p99 {ms(p99(samples))}"



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

    def rejected(i: int) -> None:
        try:
            service.update_node(doc_id, f"{leaf}/style", "not-a-style", version[0])
        except SchemaDocError as error:
            if error.code != "validation-failed":
                raise
        else:
            raise SystemExit("a style outside the enum was accepted")

    update_samples = timed(update, runs, collect=False)
    append_samples = timed(append, runs, collect=False)
    rejected_samples = timed(rejected, min(runs, 20), collect=False)
    service.close()
    usage = FileDocumentStore(directory).disk_usage(doc_id)
    print(f"  {policy_name:11}  leaf update {summary(update_samples)}   append {summary(append_samples)}   "
          f"rejected (to validation-failed, whole report included, {len(rejected_samples)} runs) "
          f"{summary(rejected_samples)}   disk {sum(usage.values()) / 2**20:.1f} MiB {usage}", flush=True)


def opening(schema: LoadedSchema, base: Path, book: dict[str, Any], leaf: str, rounds: int = 6) -> None:
    """A cold open (a new service: recovery, then the first read) of a document whose snapshot is
    followed by 1,000 journal entries, against the same document with a current snapshot.

    The two are opened in turn (ABBA), ``rounds`` times each, so that the machine's load strikes both.
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

    def cold(directory: Path) -> tuple[float, float]:
        gc.collect()
        start, cpu = time.perf_counter(), time.process_time()
        fresh = service_on(schema, directory, lag)
        fresh.read_node(doc_id, f"{leaf}/text")
        took = time.perf_counter() - start, time.process_time() - cpu
        fresh.snapshots.stop()
        return took

    samples: dict[Path, list[tuple[float, float]]] = {tail: [], current: []}
    for round_ in range(rounds):  # in turn, first one then the other first, so that neither always follows
        for directory in (tail, current) if round_ % 2 == 0 else (current, tail):
            samples[directory].append(cold(directory))
    for label, index in (("wall", 0), ("CPU", 1)):  # CPU time: this process's work, whoever else wants the cores
        with_tail = [sample[index] for sample in samples[tail]]
        snapshot_only = [sample[index] for sample in samples[current]]
        print(f"  open ({label}): snapshot + 1,000 journal entries min {ms(min(with_tail))} median "
              f"{ms(statistics.median(with_tail))}; snapshot alone min {ms(min(snapshot_only))} median "
              f"{ms(statistics.median(snapshot_only))}; ratio {min(with_tail) / min(snapshot_only):.2f} (min), "
              f"{statistics.median(with_tail) / statistics.median(snapshot_only):.2f} (median)", flush=True)


def _rss() -> int:
    """This process's resident set size now, in bytes (Linux; 0 elsewhere)."""
    try:
        with open("/proc/self/statm", "rb") as file:
            return int(file.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except OSError:
        return 0


def _private_bytes() -> int:
    """Memory this process does not share (its own pages and those copied on write since a fork)."""
    try:
        with open("/proc/self/smaps_rollup", "rb") as file:
            return sum(int(line.split()[1]) * 1024 for line in file if line.startswith(b"Private_"))
    except OSError:
        return 0


class Mechanism:
    """One way of writing a snapshot of ``content`` to ``target`` while the service keeps serving."""

    def __init__(self, name: str, start: Callable[[], Callable[[], int]]) -> None:
        self.name = name
        self.start = start  # starts it; returns a function that waits for the end and returns extra bytes


def _write(target: Path, data: bytes) -> None:
    with open(target, "wb") as file:
        file.write(data)
        os.fsync(file.fileno())


def _in_thread(serialise: Callable[[], bytes], target: Path) -> Callable[[], int]:
    def work() -> None:
        _write(target, serialise())

    thread = threading.Thread(target=work, daemon=True)
    thread.start()

    def wait() -> int:
        thread.join()
        return 0  # a thread's memory shows in this process's RSS, sampled by the caller

    return wait


def _in_store(service: DocumentService, doc_id: str, leaf: str) -> Callable[[], int]:
    """What the snapshotter does: the store writes the pieces of ``iter_chunked`` as they come, then switches.

    A leaf update first (untimed), so that there is a newer version to snapshot.
    """
    version = service.version_of(doc_id)
    version = service.update_node(doc_id, f"{leaf}/text", f"snapshot of {version + 1}", version).version
    content = service.read_node(doc_id, "").node
    store = service.store
    assert isinstance(store, FileDocumentStore)
    thread = threading.Thread(
        target=lambda: store.write_snapshot_pieces(doc_id, version, iter_chunked(content, hand_over)), daemon=True)
    thread.start()

    def wait() -> int:
        thread.join()
        return 0

    return wait


def _forked(content: Any, target: Path) -> Callable[[], int]:
    """A child serialises the (immutable, copy-on-write) document; it reports the memory it did not share."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: serialise, write, report, leave without cleanup
        code = 1
        try:
            os.close(reader)
            data = orjson.dumps(content)
            _write(target, data)
            os.write(writer, str(_private_bytes()).encode())  # while the serialised bytes are still held
            code = 0
        finally:
            os._exit(code)
    os.close(writer)

    def wait() -> int:
        os.waitpid(pid, 0)
        with os.fdopen(reader, "rb") as pipe:
            return int(pipe.read() or 0)

    return wait


def _finish(wait: Callable[[], int], extra: list[int], done: threading.Event) -> None:
    extra[0] = wait()
    done.set()


def reads_during_snapshot(schema: LoadedSchema, base: Path, book: dict[str, Any], leaf: str,
                          names: list[str] | None = None, rounds: int = 1) -> None:
    """Deep reads of the document and writes to another one while a snapshot of it is written.

    A read is due every 0.5 ms and its latency counts from when it was due (so a stall counts
    once per read it delays); every 20th turn a leaf of a small document is written instead.
    Per mechanism: read and write latencies during the snapshot, the snapshot's wall time, and
    the memory it added (a thread: this process's RSS peak above its level before; a forked
    child: what it did not share with this process, plus this process's growth).
    """
    directory = base / "reads"
    service = service_on(schema, directory, SnapshotPolicy(mode="lazy", inline_below_bytes=0))
    doc_id = service.create_document()[0]
    service.update_node(doc_id, "/", book, 1)
    small = service.create_document()[0]
    small_version = [service.version_of(small)]
    content = service.read_node(doc_id, "").node
    target = directory / "probe.json"
    mechanisms = [
        Mechanism("thread, one orjson.dumps", lambda: _in_thread(lambda: orjson.dumps(content), target)),
        Mechanism("thread, dumps_chunked", lambda: _in_thread(lambda: dumps_chunked(content), target)),
        Mechanism("thread, dumps_chunked, sleep 0.1 ms",
                  lambda: _in_thread(lambda: dumps_chunked(content, lambda: time.sleep(0.0001)), target)),
        Mechanism("thread, pieces written as they come (chosen)", lambda: _in_store(service, doc_id, leaf)),
        Mechanism("forked child, orjson.dumps", lambda: _forked(content, target)),
    ]
    baseline = timed(lambda i: service.read_node(doc_id, f"{leaf}/text"), 2000, collect=False)
    print(f"  deep read, idle: {summary(baseline)}", flush=True)

    def write_small(i: int) -> None:
        small_version[0] = service.update_node(small, "/title", f"t{i}", small_version[0]).version

    print(f"  write to a small document, idle: {summary(timed(write_small, 100, collect=False))}", flush=True)
    chosen = [mechanism for mechanism in mechanisms if not names or any(name in mechanism.name for name in names)]
    for mechanism in chosen * rounds:  # in turn, so that the machine's load strikes each
        gc.collect()
        reads: list[float] = []
        writes_: list[float] = []
        before = peak = _rss()
        begun = due = time.perf_counter()  # the first read is due as the snapshot starts: a stall starting it counts
        wait = mechanism.start()
        done = threading.Event()
        extra = [0]
        threading.Thread(target=_finish, args=(wait, extra, done), daemon=True).start()
        turn = 0
        while not done.is_set():
            if turn:
                due = time.perf_counter() + 0.0005
                time.sleep(0.0005)
            if turn % 20 == 19:
                write_small(turn)
                writes_.append(max(time.perf_counter() - due, 0.0))
            else:
                service.read_node(doc_id, f"{leaf}/text")
                reads.append(max(time.perf_counter() - due, 0.0))
            peak = max(peak, _rss())
            turn += 1
        took = time.perf_counter() - begun
        added = (peak - before) + extra[0]
        slowest = ms(max(reads)) if reads else "-"
        print(f"  during a snapshot by {mechanism.name:52}: deep read {summary(reads)} max {slowest} "
              f"({len(reads)} reads); small write {summary(writes_)}; snapshot {took:.2f} s; "
              f"memory added {added / 2**20:.0f} MiB", flush=True)
        target.unlink(missing_ok=True)
    service.snapshots.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", type=float, nargs="+", default=[1, 10, 100])
    parser.add_argument("--writes", type=int, default=200)
    parser.add_argument("--only", nargs="+", choices=SECTIONS, default=list(SECTIONS),
                        help="the sections to run (default all)")
    parser.add_argument("--mechanisms", nargs="+", default=None,
                        help="snapshot mechanisms to compare, by part of their name (thread, chunked, fork)")
    parser.add_argument("--rounds", type=int, default=1, help="snapshots per mechanism (taken in turn)")
    options = parser.parse_args()
    schema = load_schema(BOOK)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores", flush=True)
    for size in options.sizes:
        book = make_book(size)
        leaf = mid_paragraph_path(book)
        print(f"\n== {size:g} MiB ({len(orjson.dumps(book)):,} bytes), load average {os.getloadavg()[0]:.1f} ==",
              flush=True)
        base = Path(tempfile.mkdtemp(prefix="schemadoc-journal-bench-"))
        try:
            if "writes" in options.only:
                for policy_name in POLICIES:
                    writes(schema, base, book, policy_name, options.writes)
            if "open" in options.only:
                opening(schema, base, book, leaf)
            if "snapshot" in options.only:
                reads_during_snapshot(schema, base, book, leaf, options.mechanisms, options.rounds)
        finally:
            shutil.rmtree(base, ignore_errors=True)
        print(f"  peak RSS so far {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB, "
              f"load average {os.getloadavg()[0]:.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
