"""Memory under a budget: many 10 MB documents served by one real server process.

Not a test: it prints figures and writes them as Markdown to ``benchmarks/results/memory.md``.

    .venv/bin/python benchmarks/memory.py                                 # 1,000 x 10 MB under 1 GiB
    .venv/bin/python benchmarks/memory.py --documents 100 --budgets 256MiB,1GiB
    .venv/bin/python benchmarks/memory.py --cold-only                     # cold reads at 1, 10, 100 MiB

Method:

1. ``--documents`` books of ``--size-mib`` (default 10) are created over REST in one
   ``schemadoc serve`` process started with ``--memory-budget`` (the first of ``--budgets``):
   ``POST /documents`` then ``PUT ?path=/`` with the book. The books are generated from one template
   (``generate.py``) with a distinct title each, one at a time: the benchmark never holds more than
   one of them. Peak RSS (``VmHWM`` from ``/proc``) is sampled as they are created.
2. For each budget, a server on the same storage reads one leaf of every document (the issue's
   "each created once, then one leaf of each read"), then measures, each request timed from sending
   it to having read the whole answer: a warm leaf read and write (a document just used), a cold
   leaf read and write (documents least recently used, evicted unless the budget holds them all).
   Peak RSS is reported per budget, beside the bytes of JSON served.
3. In process (``--cold-sizes``): what a cold read costs at 1, 10 and 100 MiB, split into reading
   the snapshot file, parsing it (orjson, the collector off) and the whole reload through the service,
   beside pickle and marshal of the same content, to show how close JSON is to the floor.
"""

from __future__ import annotations

import argparse
import gc
import marshal
import os
import pickle
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import common  # noqa: E402,F401  (puts the checkout's src on the path)
import orjson  # noqa: E402
from generate import MIB, make_book, mid_paragraph_path  # noqa: E402
from rest import API, SERVER_ENV, Client, fmt_ms, free_port, percentile  # noqa: E402

DEFAULT_SCHEMA = HERE.parent / "schemas" / "book.schema.json"
DEFAULT_OUT = HERE / "results" / "memory.md"
START_TIMEOUT_SECONDS = 120.0
_TITLE = "@@TITLE@@"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Server:
    """One ``schemadoc serve`` with a memory budget on a given storage directory."""

    def __init__(self, storage: Path, budget: str, work: Path) -> None:
        self.port = free_port()
        env = {key: value for key, value in os.environ.items() if key not in (*SERVER_ENV, "MEMORY_BUDGET")}
        env["MAX_BODY_BYTES"] = str(512 * MIB)
        self.log_path = work / f"server-{budget}-{self.port}.log"
        with self.log_path.open("wb") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "schemadoc", "serve", "--transport", "http", "--schema", str(DEFAULT_SCHEMA),
                 "--storage-dir", str(storage), "--host", "127.0.0.1", "--port", str(self.port),
                 "--memory-budget", budget, "--log-level", "warning"],
                cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log_path.read_text(errors='replace')[-2000:]}")
            try:
                probe = Client(self.port)
                status, _, _ = probe.request("GET", "/health")
                probe.close()
                if status == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("server did not become healthy")
            time.sleep(0.2)
        self.client = Client(self.port)

    def status(self, field: str) -> float:
        """``VmRSS`` / ``VmHWM`` of the server, in MiB."""
        with open(f"/proc/{self.process.pid}/status") as status:
            for line in status:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.client.close()
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=600)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def template(size_mib: float) -> tuple[bytes, str]:
    """The book's JSON with a placeholder title, and the pointer of a leaf in its middle."""
    book = make_book(size_mib)
    book["title"] = _TITLE
    leaf = mid_paragraph_path(book) + "/text"
    data = orjson.dumps(book)
    del book
    return data, leaf


def fill(server: Server, count: int, data: bytes) -> tuple[list[str], list[tuple[int, float]]]:
    """Create ``count`` books; returns their ids and (documents, VmHWM MiB) samples."""
    ids: list[str] = []
    samples: list[tuple[int, float]] = []
    started = time.perf_counter()
    step = max(count // 10, 1)
    for number in range(count):
        status, _, body = server.client.request("POST", f"{API}/documents")
        if status != 201:
            raise RuntimeError(f"create -> {status}: {body[:300]!r}")
        doc_id = orjson.loads(body)["doc_id"]
        book = data.replace(_TITLE.encode(), f"Book {number:05d}".encode(), 1)
        status, _, answer = server.client.request("PUT", f"{API}/documents/{doc_id}?path=/",
                                                  b'{"version":1,"node_data":' + book + b"}")
        del book
        if status != 200:
            raise RuntimeError(f"upload {number} -> {status}: {answer[:300]!r}")
        ids.append(doc_id)
        if (number + 1) % step == 0 or number + 1 == count:
            samples.append((number + 1, server.status("VmHWM")))
            elapsed = time.perf_counter() - started
            log(f"  {number + 1} documents in {elapsed:.0f} s, RSS {server.status('VmRSS'):.0f} MiB, "
                f"peak {samples[-1][1]:.0f} MiB")
    return ids, samples


def timed_request(client: Client, method: str, url: str,
                  body: bytes | None = None) -> tuple[float, bytes, dict[str, str]]:
    started = time.perf_counter()
    status, headers, data = client.request(method, url, body)
    elapsed = time.perf_counter() - started
    if status != 200:
        raise RuntimeError(f"{method} {url} -> {status}: {data[:300]!r}")
    return elapsed, data, headers


def measure(server: Server, ids: list[str], leaf: str, rounds: int) -> dict[str, Any]:
    """Touch every document once, then warm and cold leaf reads and writes."""
    client = server.client
    started = time.perf_counter()
    touch = []
    for number, doc_id in enumerate(ids):
        elapsed, data, _ = timed_request(client, "GET", f"{API}/documents/{doc_id}?path=/title")
        if orjson.loads(data).get("node_content") != f"Book {number:05d}":
            raise RuntimeError(f"document {doc_id} answered {data[:100]!r}")
        touch.append(elapsed)
    touched = time.perf_counter() - started
    def write(doc_id: str, text: str) -> float:
        """A leaf write; every book is at version 2 after its upload, and the benchmark counts on."""
        body = orjson.dumps({"node_data": text, "version": _versions.get(doc_id, 2)})
        elapsed, _, headers = timed_request(client, "PUT", f"{API}/documents/{doc_id}?path={leaf}", body)
        _versions[doc_id] = int(headers["etag"].strip('"'))
        return elapsed

    warm_doc = ids[-1]
    warm_reads = [timed_request(client, "GET", f"{API}/documents/{warm_doc}?path={leaf}")[0] for _ in range(rounds)]
    warm_writes = [write(warm_doc, f"warm write {i}") for i in range(rounds)]
    # least recently used first: the documents touched first are the ones evicted first
    cold = ids[: min(rounds, max(len(ids) - 1, 1))]
    cold_reads = [timed_request(client, "GET", f"{API}/documents/{doc_id}?path={leaf}")[0] for doc_id in cold]
    for doc_id in ids[len(cold):]:  # push the cold ones out again (when the budget is smaller than the set)
        timed_request(client, "GET", f"{API}/documents/{doc_id}?path=/title")
    cold_writes = [write(doc_id, "cold write") for doc_id in cold]
    return {"touch_all_s": touched, "touch_p50": percentile(touch, 0.5), "touch_p99": percentile(touch, 0.99),
            "warm_read": warm_reads, "warm_write": warm_writes, "cold_read": cold_reads, "cold_write": cold_writes,
            "rss": server.status("VmRSS"), "hwm": server.status("VmHWM")}


_versions: dict[str, int] = {}


def cold_in_process(sizes: list[float], work: Path) -> list[dict[str, Any]]:
    """The parts of a cold read of one document, in this process, at each size."""
    from schemadoc.schema import load_schema

    schema = load_schema(DEFAULT_SCHEMA)
    return [cold_row(schema, size, work) for size in sizes]


def _best(action: Any, runs: int = 5) -> float:
    """The fastest of ``runs`` calls, the collector off (as the service parses)."""
    times = []
    for _ in range(runs):
        gc.collect()
        gc.disable()
        started = time.perf_counter()
        value = action()
        times.append(time.perf_counter() - started)
        gc.enable()
        del value
    return min(times)


def cold_row(schema: Any, size: float, work: Path) -> dict[str, Any]:
    from schemadoc.service import DocumentService
    from schemadoc.storage.files import FileDocumentStore

    storage = work / f"cold-{size:g}"
    storage.mkdir(parents=True, exist_ok=True)
    service = DocumentService(schema, FileDocumentStore(storage), memory_budget=MIB)
    service.open()
    book = make_book(size)
    leaf = mid_paragraph_path(book) + "/text"
    doc_id, *_ = service.create_document()
    service.update_node(doc_id, "", book, 1)
    service.snapshots.flush()  # a current snapshot: the cold read is the file's parse
    other, *_ = service.create_document()
    content = service.read_document(doc_id)[0]
    pickled, marshalled = pickle.dumps(content, protocol=5), marshal.dumps(content)
    del content, book
    snapshot = storage / f"{doc_id}.json"

    def evict_then_read() -> float:
        service.read_node(other, "/title")
        service.memory.drop(doc_id)
        gc.collect()
        started = time.perf_counter()
        service.read_node(doc_id, leaf)
        return time.perf_counter() - started

    row = {
        "size": size,
        "read_file": _best(snapshot.read_bytes),
        "orjson": _best(lambda: orjson.loads(snapshot.read_bytes())),
        "pickle": _best(lambda: pickle.loads(pickled)),
        "marshal": _best(lambda: marshal.loads(marshalled)),
        "service": min(evict_then_read() for _ in range(5)),
    }
    log(f"  cold read at {size:g} MiB: file {fmt_ms(row['read_file'])}, file+orjson {fmt_ms(row['orjson'])}, "
        f"service {fmt_ms(row['service'])} (pickle {fmt_ms(row['pickle'])}, marshal {fmt_ms(row['marshal'])})")
    service.close()
    shutil.rmtree(storage, ignore_errors=True)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--documents", type=int, default=1000, help="books to serve (default 1000)")
    parser.add_argument("--size-mib", type=float, default=10.0, help="size of each book in MiB (default 10)")
    parser.add_argument("--budgets", default="1GiB", help="comma-separated memory budgets (default 1GiB)")
    parser.add_argument("--rounds", type=int, default=50, help="requests per warm/cold figure (default 50)")
    parser.add_argument("--cold-sizes", default="1,10,100", help="in-process cold reads at these MiB ('' for none)")
    parser.add_argument("--cold-only", action="store_true", help="only the in-process cold reads")
    parser.add_argument("--work", type=Path, default=None, help="storage directory (default a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the storage directory")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="schemadoc-memory-"))
    work.mkdir(parents=True, exist_ok=True)
    lines = [f"# Memory under a budget ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)", "",
             f"Python {platform.python_version()}, {os.cpu_count()} CPUs, "
             f"load {os.getloadavg()[0]:.1f}; books of {args.size_mib:g} MiB (`benchmarks/generate.py`).", ""]
    try:
        if not args.cold_only and args.documents > 0:
            budgets = [b.strip() for b in args.budgets.split(",") if b.strip()]
            storage = work / "storage"
            storage.mkdir(exist_ok=True)
            data, leaf = template(args.size_mib)
            log(f"creating {args.documents} books of {len(data) / MIB:.1f} MiB under {budgets[0]}")
            server = Server(storage, budgets[0], work)
            started = time.perf_counter()
            ids, samples = fill(server, args.documents, data)
            filled_in = time.perf_counter() - started
            fill_hwm = server.status("VmHWM")
            server.stop()
            del data
            lines += [f"## {args.documents} books, {args.documents * args.size_mib / 1024:.2f} GiB of JSON", "",
                      f"Created in {filled_in:.0f} s under {budgets[0]}; peak RSS while creating "
                      f"(VmHWM, MiB) after n documents:", "",
                      "| documents | " + " | ".join(str(n) for n, _ in samples) + " |",
                      "|---|" + "---:|" * len(samples),
                      "| peak RSS MiB | " + " | ".join(f"{hwm:.0f}" for _, hwm in samples) + " |", "",
                      "| budget | peak RSS | RSS after | one leaf of each (p50 / p99, total) | warm read p50 / p99 "
                      "| warm write p50 / p99 | cold read p50 / p99 | cold write p50 / p99 |",
                      "|---|---:|---:|---|---|---|---|---|"]
            del fill_hwm
            for budget in budgets:
                log(f"budget {budget}: one leaf of each, then warm and cold reads and writes")
                server = Server(storage, budget, work)
                try:
                    figures = measure(server, ids, leaf, args.rounds)
                finally:
                    server.stop()

                def pair(name: str, figures: dict[str, Any] = figures) -> str:
                    samples = figures[name]
                    return f"{fmt_ms(percentile(samples, 0.5))} / {fmt_ms(percentile(samples, 0.99))}"

                row = (f"| {budget} | {figures['hwm']:.0f} MiB | {figures['rss']:.0f} MiB | "
                       f"{fmt_ms(figures['touch_p50'])} / {fmt_ms(figures['touch_p99'])}, "
                       f"{figures['touch_all_s']:.0f} s | {pair('warm_read')} | {pair('warm_write')} | "
                       f"{pair('cold_read')} | {pair('cold_write')} |")
                log(row)
                lines.append(row)
            lines.append("")
        sizes = [float(s) for s in args.cold_sizes.split(",") if s.strip()]
        if sizes:
            log("cold reads in process")
            rows = cold_in_process(sizes, work)
            lines += ["## A cold read, in process", "",
                      "| size | read the snapshot file | file + orjson.loads | reload through the service "
                      "(snapshot, parse, leaf) | pickle.loads | marshal.loads |",
                      "|---|---:|---:|---:|---:|---:|"]
            lines += [f"| {row['size']:g} MiB | {fmt_ms(row['read_file'])} | {fmt_ms(row['orjson'])} | "
                      f"{fmt_ms(row['service'])} | {fmt_ms(row['pickle'])} | {fmt_ms(row['marshal'])} |"
                      for row in rows]
            lines.append("")
    finally:
        if not args.keep and args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
