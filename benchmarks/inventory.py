"""The background inventory after a schema change: time and peak RSS of a real server checking every document.

Not a test: it prints figures (and writes them as Markdown with ``--out``).

    .venv/bin/python benchmarks/inventory.py                       # 1,000 books of 1 MiB, 256 MiB budget
    .venv/bin/python benchmarks/inventory.py --documents 200 --size-mib 1
    .venv/bin/python benchmarks/inventory.py --postgres                  # on PostgreSQL (a throwaway schema)

Method: ``--documents`` books of ``--size-mib`` (``generate.py``; one generated book, each document with its
own title) are written straight through the files store with no schema digest (as before digests were kept),
each with two title edits after its snapshot, so that checking it replays its journal. Half the titles are
longer than 12 characters. A real ``schemadoc serve`` starts on that storage with a schema that allows at most
12 characters and ``--memory-budget``; the figures are the seconds from its start until ``GET /api/v1/status``
says the inventory is done, its peak RSS (``VmHWM``) beside a server started on an empty storage (the
baseline), and the verdict counts (which must be half valid, half invalid). ``--postgres`` stores them in
PostgreSQL (``SCHEMADOC_TEST_POSTGRES_URL``, a throwaway schema dropped afterwards) instead of files.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import orjson
from common import BOOK_SCHEMA, REPO, pg_schema
from generate import make_book


def populate(directory: Path, count: int, size_mib: float, url: str | None = None) -> int:
    """``count`` books in a files store (or PostgreSQL at ``url``), unchecked; returns the bytes of their content."""
    from ulid import ULID

    from schemadoc.ops.journal import JournalEntry, utc_now
    from schemadoc.storage import store_for
    from schemadoc.storage.base import DocumentMeta

    store = store_for(directory, url)
    store.open()
    book = make_book(size_mib)
    total = 0
    for number in range(count):
        title = f"Book {number}" if number % 2 == 0 else f"The long book number {number}"
        book["title"] = "draft"
        doc_id, now = str(ULID()), utc_now()
        data = orjson.dumps(book)
        meta = DocumentMeta(doc_id, 1, BOOK_SCHEMA.as_uri(), now, now, len(data))
        store.create(meta, JournalEntry(1, "create", [{"op": "add", "path": "", "value": book}], now), data)
        for version, value in ((2, "draft 2"), (3, title)):  # the journal after the snapshot
            size = len(data) - len('"draft"') + len(json.dumps(value))
            meta = DocumentMeta(doc_id, version, meta.schema_uri, meta.created_at, utc_now(), size)
            store.commit(meta, JournalEntry(version, "update_node", [{"op": "replace", "path": "/title",
                                                                        "value": value}], meta.modified_at))
        total += meta.content_size_bytes
    close = getattr(store, "close", None)
    if callable(close):
        close()
    return total


def _port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _peak_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def serve(storage: Path, schema: Path, budget: str, logs: Path,
          url: str | None = None) -> tuple[float, float, dict[str, object]]:
    """Seconds until the inventory is done, peak RSS (MiB) and the status answer of one server."""
    port = _port()
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    command = [sys.executable, "-m", "schemadoc", "serve", "--transport", "http", "--schema", str(schema),
               "--storage-dir", str(storage), "--port", str(port), "--memory-budget", budget,
               *(("--storage-url", url) if url else ())]
    started = time.perf_counter()
    with (logs / f"server-{port}.log").open("wb") as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=log)
    try:
        status: dict[str, object] = {}
        while True:
            if process.poll() is not None:
                raise SystemExit(f"the server exited: {(logs / f'server-{port}.log').read_text()}")
            try:
                status = httpx.get(f"http://127.0.0.1:{port}/api/v1/status", timeout=30).json()
                inventory = status["inventory"]
                assert isinstance(inventory, dict)
                if inventory["state"] == "done":
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        seconds = time.perf_counter() - started
        return seconds, _peak_mib(process.pid), status
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--size-mib", type=float, default=1.0)
    parser.add_argument("--memory-budget", default="256MiB")
    parser.add_argument("--out", type=Path, help="write the figures as Markdown here too")
    parser.add_argument("--postgres", action="store_true", help="store the documents in PostgreSQL")
    args = parser.parse_args()
    with (tempfile.TemporaryDirectory(prefix="schemadoc-inventory-") as temporary,
          pg_schema("bench_inventory") if args.postgres else contextlib.nullcontext() as url):
        root = Path(temporary)
        schema = json.loads(BOOK_SCHEMA.read_text(encoding="utf-8"))
        schema["properties"]["title"]["maxLength"] = 12
        (root / "schema").mkdir()
        tightened = root / "schema" / "book.schema.json"
        tightened.write_text(json.dumps(schema), encoding="utf-8")
        (root / "logs").mkdir()
        (root / "empty").mkdir()
        started = time.perf_counter()
        total = populate(root / "data", args.documents, args.size_mib, url)
        elapsed = time.perf_counter() - started
        print(f"populated {args.documents} documents, {total / 2**20:.0f} MiB, in {elapsed:.0f} s")
        _, baseline, _ = serve(root / "empty", tightened, args.memory_budget, root / "logs")
        seconds, peak, status = serve(root / "data", tightened, args.memory_budget, root / "logs", url)
        inventory = status["inventory"]
        assert isinstance(inventory, dict)
        lines = [
            f"inventory of {args.documents} documents of {args.size_mib:g} MiB ({total / 2**20:.0f} MiB) under a "
            f"{args.memory_budget} budget (2 cores), {'PostgreSQL' if url else 'files store'}:",
            f"- from the server's start until done: {seconds:.1f} s (the inventory alone: {inventory['seconds']} s, "
            f"{args.documents / float(str(inventory['seconds'])):.0f} documents/s)",
            f"- peak RSS {peak:.0f} MiB; a server on an empty store {baseline:.0f} MiB; "
            f"above it {peak - baseline:.0f} MiB",
            f"- verdicts: {status['valid']} valid, {status['invalid']} invalid, {status['unchecked']} unchecked",
        ]
        print("\n".join(lines))
        if args.out is not None:
            args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
