"""Black-box throughput: acknowledged leaf writes per second over REST at 1, 8 and 32 clients, files and PostgreSQL.

Not a test: it prints figures and writes them as Markdown to ``benchmarks/results/throughput.md``.

    make bench-throughput                                  # = .venv/bin/python benchmarks/throughput.py
    .venv/bin/python benchmarks/throughput.py --clients 1,8,32 --seconds 10 --stores files,postgres
    .venv/bin/python benchmarks/throughput.py --ops-only   # only the per-operation table (10 MB book)
    .venv/bin/python benchmarks/throughput.py --no-ops --stores files --workers 1,2   # serve --workers 1 beside 2

Each store gets one real ``schemadoc serve`` on 127.0.0.1 (PostgreSQL: a throwaway schema of
``--url``, default ``SCHEMADOC_TEST_POSTGRES_URL`` or the local ``test`` database, dropped at the end).

1. **Per operation** (one client, 10 MB book, the requests of the two servers interleaved round by
   round): read of a deep leaf, leaf update (``PUT``), JSON-Patch update (``POST .../patch``, two
   operations), append (``POST .../nodes`` to ``.../paragraphs/-``) and a refused update (a style
   outside the enum: ``422``). p50 and p99 of each, and PostgreSQL / files.
2. **Throughput**: ``N`` clients (one keep-alive connection each, closed loop: the next request
   when the answer came), each updating the title of its own small document (distinct documents),
   for ``--seconds`` after a warm-up. Acknowledged writes per second (``200`` answers only; any
   other answer is counted and reported), p50 and p99 of each request, and the CPU the load
   generator itself used (user + system seconds per wall second: it shares the machine's cores
   with the server). The generator is one asyncio process writing prebuilt requests on raw
   sockets, so that its own share stays small. ``--workers 1,2``: one server per count (``serve --workers N``,
   each on a storage directory or schema of its own), the rows of one client count taken one after the other;
   each row ends with the 1-minute load average (the machine may be shared).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import orjson  # noqa: E402
import rest  # noqa: E402
from generate import MIB, make_book, mid_paragraph_path  # noqa: E402
from rest import API, DEFAULT_SCHEMA, Documents, Server, fmt_ms, load_average, log, percentile  # noqa: E402

DEFAULT_URL = os.environ.get("SCHEMADOC_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
DEFAULT_OUT = HERE / "results" / "throughput.md"


@dataclass
class Run:
    store: str
    clients: int
    seconds: float
    acknowledged: int = 0
    refused: int = 0
    latencies: list[float] = field(default_factory=list)
    cpu_seconds: float = 0.0
    server_cpu_seconds: float = 0.0

    @property
    def rate(self) -> float:
        return self.acknowledged / self.seconds

    def row(self) -> str:
        p50 = fmt_ms(statistics.median(self.latencies)) if self.latencies else "-"
        p99 = fmt_ms(percentile(self.latencies, 0.99)) if self.latencies else "-"
        per_write = fmt_ms(self.server_cpu_seconds / self.acknowledged) if self.acknowledged else "-"
        return (f"| {self.store} | {self.clients} | {self.rate:,.0f} | {p50} | {p99} | "
                f"{self.cpu_seconds / self.seconds:.0%} ({self.cpu_seconds:.2f} s) | "
                f"{self.server_cpu_seconds / self.seconds:.0%} ({self.server_cpu_seconds:.2f} s) | {per_write} | "
                f"{self.refused} |")


class Connection:
    """One keep-alive HTTP/1.1 connection on asyncio streams; requests are prebuilt bytes."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def open(cls, port: int) -> Connection:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        return cls(reader, writer)

    async def send(self, request: bytes) -> tuple[int, bytes, bytes]:
        """The status, the raw headers and the body of the answer to ``request``."""
        self.writer.write(request)
        head = await self.reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        lower = head.lower()
        at = lower.find(b"content-length:")
        length = int(lower[at + 15:lower.index(b"\r\n", at)]) if at >= 0 else 0
        body = await self.reader.readexactly(length) if length else b""
        return status, head, body

    def close(self) -> None:
        self.writer.close()


def etag(head: bytes) -> int:
    lower = head.lower()
    at = lower.index(b"etag:")
    return int(lower[at + 5:lower.index(b"\r\n", at)].strip().strip(b'"').lstrip(b"w/").strip(b'"'))


def put(port: int, doc_id: str, path: str, body: bytes) -> bytes:
    return (f"PUT {API}/documents/{doc_id}?path={path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n").encode() + body


async def client_loop(port: int, doc_id: str, version: int, stop_at: float, warm_until: float, run: Run) -> None:
    connection = await Connection.open(port)
    i = 0
    try:
        while True:
            now = time.perf_counter()
            if now >= stop_at:
                return
            body = orjson.dumps({"node_data": f"title {i}", "version": version})
            started = time.perf_counter()
            status, head, _ = await connection.send(put(port, doc_id, "/title", body))
            done = time.perf_counter()
            i += 1
            if status == 200:
                version = etag(head)
                if started >= warm_until and done <= stop_at:
                    run.acknowledged += 1
                    run.latencies.append(done - started)
            else:
                run.refused += 1
                if status == 409:
                    version += 1  # another write of ours landed? re-read would be exact; never expected here
    finally:
        connection.close()


def server_cpu(pid: int) -> float:
    """User + system seconds of the server process and its children (workers) so far."""
    try:
        import psutil
    except ImportError:
        return 0.0
    process = psutil.Process(pid)
    total = 0.0
    for one in [process, *process.children(recursive=True)]:
        try:
            times = one.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


async def measure(ports: list[int], docs: list[tuple[str, int]], clients: int, seconds: float, warmup: float,
                  store: str, pids: list[int]) -> Run:
    run = Run(store, clients, seconds)
    start = time.perf_counter()
    warm_until = start + warmup
    stop_at = warm_until + seconds
    cpu_at_warm: list[float] = []
    server_at_warm: list[float] = []

    async def mark() -> None:
        await asyncio.sleep(warmup)
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu_at_warm.append(usage.ru_utime + usage.ru_stime)
        server_at_warm.append(sum(server_cpu(pid) for pid in pids))

    marker = asyncio.ensure_future(mark())
    await asyncio.gather(*(client_loop(ports[i % len(ports)], doc_id, version, stop_at, warm_until, run)
                           for i, (doc_id, version) in enumerate(docs[:clients])))
    await marker
    usage = resource.getrusage(resource.RUSAGE_SELF)
    run.cpu_seconds = usage.ru_utime + usage.ru_stime - cpu_at_warm[0]
    run.server_cpu_seconds = sum(server_cpu(pid) for pid in pids) - server_at_warm[0]
    return run


def wait_for_workers(server: Server, workers: int, timeout: float = 120.0) -> None:
    """Until every worker of a ``serve --workers`` server said it serves (the first answers health checks sooner)."""
    if workers <= 1:
        return
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.stderr_path.read_text(errors="replace").count(f" of {workers}, pid ") >= workers:
            time.sleep(0.5)  # its log line comes just before it accepts
            return
        time.sleep(0.2)
    raise RuntimeError(f"server {server.label}: not every one of its {workers} workers started")


def small_documents(server: Server, count: int) -> list[tuple[str, int]]:
    made = []
    for _ in range(count):
        headers, body = server.client.json("POST", f"{API}/documents", expect=201)
        made.append((body["doc_id"], int(headers["etag"].strip('"'))))
    return made


def current_versions(server: Server, docs: list[tuple[str, int]]) -> list[tuple[str, int]]:
    fresh = []
    for doc_id, _ in docs:
        headers, _body = server.client.json("GET", f"{API}/documents/{doc_id}?path=/title")
        fresh.append((doc_id, int(headers["etag"].strip('"'))))
    return fresh


class GranianServer(Server):
    """The same application under Granian (one process, its asyncio loop), settings from the environment."""

    def __init__(self, label: str, schema: Path, work: Path, settings: dict[str, str]) -> None:
        self.label = label
        self.port = rest.free_port()
        self.storage = work / f"storage-{label}"
        self.storage.mkdir(parents=True)
        env = {key: value for key, value in os.environ.items() if key not in rest.SERVER_ENV}
        env.update({"SCHEMA_PATH": str(schema), "STORAGE_DIR": str(self.storage), **settings})
        env["PYTHONPATH"] = os.pathsep.join([str(HERE), *filter(None, [env.get("PYTHONPATH")])])
        self.stderr_path = work / f"server-{label}.log"
        with self.stderr_path.open("wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "granian", "--interface", "asgi", "--factory", "--host", "127.0.0.1",
                 "--port", str(self.port), "--workers", "1", "--loop", "uvloop", "--no-ws", "--log-level", "warning",
                 "granian_target:app"], cwd=work, env=env, stdout=err, stderr=subprocess.STDOUT)
        self._wait_healthy()
        self.client = rest.Client(self.port)


@dataclass
class OpStats:
    samples: dict[tuple[str, str], list[float]] = field(default_factory=dict)

    def add(self, op: str, store: str, seconds: float) -> None:
        self.samples.setdefault((op, store), []).append(seconds)


def per_operation(servers: dict[str, Server], book: bytes, leaf: str, rounds: int, warmup: int) -> OpStats:
    """Each operation on each server, one client, interleaved round by round."""
    stats = OpStats()
    docs = {}
    for name, server in servers.items():
        log(f"{name}: uploading the {len(book) / MIB:.0f} MiB book")
        documents = Documents(server)
        documents.upload("book", book)
        docs[name] = documents
    section = leaf.rsplit("/paragraphs/", 1)[0]
    style = leaf.rsplit("/", 1)[0] + "/style"

    def step(name: str, op: str, i: int) -> float:
        documents = docs[name]
        client = servers[name].client
        doc_id = documents.ids["book"]
        version = documents.versions["book"]
        url = f"{API}/documents/{doc_id}"
        if op == "read":
            method, target, body, expect = "GET", f"{url}?path={leaf}", None, 200
        elif op == "leaf update":
            method, target, expect = "PUT", f"{url}?path={leaf}", 200
            body = orjson.dumps({"node_data": f"text {i}", "version": version})
        elif op == "JSON-Patch update":
            method, target, expect = "POST", f"{url}/patch", 200
            body = orjson.dumps({"patch": [{"op": "test", "path": leaf, "value": f"text {i}"},
                                           {"op": "replace", "path": leaf, "value": f"patched {i}"}],
                                 "version": version})
        elif op == "append":
            method, target, expect = "POST", f"{url}/nodes?path={section}/paragraphs/-", 201
            body = orjson.dumps({"node_data": {"text": f"appended {i}", "style": "normal"}, "version": version})
        else:  # refusal
            method, target, expect = "PUT", f"{url}?path={style}", 422
            body = orjson.dumps({"node_data": "not-a-style", "version": version})
        started = time.perf_counter()
        status, headers, data = client.request(method, target, body)
        elapsed = time.perf_counter() - started
        if status != expect:
            raise RuntimeError(f"{name} {op}: {method} {target} -> {status}: {data[:300]!r}")
        if status in (200, 201) and method != "GET":
            documents.versions["book"] = int(headers["etag"].strip('"'))
        return elapsed

    operations = ("read", "leaf update", "JSON-Patch update", "append", "refusal")
    for i in range(warmup + rounds):
        for op in operations:
            order = list(servers) if i % 2 == 0 else list(reversed(servers))
            for name in order:
                elapsed = step(name, op, i)
                if i >= warmup:
                    stats.add(op, name, elapsed)
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", default="1,8,32", help="client counts (default 1,8,32)")
    parser.add_argument("--seconds", type=float, default=10.0, help="timed seconds per client count (default 10)")
    parser.add_argument("--warmup", type=float, default=2.0, help="untimed seconds first (default 2)")
    parser.add_argument("--stores", default="files,postgres", help="files, postgres or both (default both)")
    parser.add_argument("--url", default=DEFAULT_URL, help="the PostgreSQL database")
    parser.add_argument("--ops-rounds", type=int, default=100, help="timed rounds of the per-operation table")
    parser.add_argument("--ops-size", type=float, default=10.0, help="the book's size in MiB (default 10)")
    parser.add_argument("--no-ops", action="store_true", help="skip the per-operation table")
    parser.add_argument("--ops-only", action="store_true", help="only the per-operation table")
    parser.add_argument("--processes", type=int, default=1,
                        help="server processes per store for the throughput rows, on one storage directory or "
                             "schema, the clients spread over them (default 1)")
    parser.add_argument("--workers", default="1",
                        help="serve --workers counts to measure the throughput rows with, e.g. 1,2: one server per "
                             "count and store, the rows of each client count taken one after the other "
                             "(default 1)")
    parser.add_argument("--granian", action="store_true",
                        help="uvicorn (serve) beside Granian on the same application, files store: "
                             "stores become 'uvicorn' and 'granian'")
    parser.add_argument("--server-env", action="append", default=[], metavar="NAME=VALUE",
                        help="a setting of every server (repeatable), e.g. WORKERS=2")
    parser.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA)
    parser.add_argument("--tmp-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    counts = [int(n) for n in args.clients.split(",") if n]
    stores = [name.strip() for name in args.stores.split(",") if name.strip()]
    extra = dict(setting.split("=", 1) for setting in args.server_env)
    worker_counts = [int(n) for n in args.workers.split(",") if n]

    try:
        import uvloop
        uvloop.install()
    except ImportError:
        pass

    work = Path(tempfile.mkdtemp(prefix="schemadoc-throughput-", dir=args.tmp_dir))
    pg_schema = f"bench_throughput_{uuid.uuid4().hex[:8]}"
    servers: dict[str, Server] = {}
    extras: dict[str, list[Server]] = {}
    started: list[Server] = []  # the servers of further --workers counts
    pg_extra: list[str] = []  # and their PostgreSQL schemas
    lines = [f"# Throughput over REST ({datetime.now(UTC):%Y-%m-%d %H:%M} UTC)", "",
             f"{platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; "
             f"load average at the start {load_average()}.", ""]
    try:
        if args.granian:
            stores = ["uvicorn", "granian"]
        for name in stores:
            settings = dict(extra)
            if name == "granian":
                servers[name] = GranianServer(name, args.schema, work, settings)
                extras[name] = []
                continue
            if name == "postgres":
                settings["STORAGE_URL"] = f"{args.url}{'&' if '?' in args.url else '?'}schema={pg_schema}"
            if worker_counts[0] > 1:
                settings["WORKERS"] = str(worker_counts[0])
            servers[name] = Server(name, None, args.schema, work, settings)
            wait_for_workers(servers[name], worker_counts[0])
            extras[name] = [Server(f"{name}-{n}", None, args.schema, work, settings, storage=servers[name].storage)
                            for n in range(2, args.processes + 1)]
        if not args.no_ops:
            tree = make_book(args.ops_size)
            leaf = mid_paragraph_path(tree) + "/text"
            book = orjson.dumps(tree)
            del tree
            stats = per_operation(servers, book, leaf, args.ops_rounds, 10)
            head = "| operation | " + " | ".join(f"{name} p50 (p99)" for name in servers)
            ratio = len(servers) == 2
            lines += [f"## Per operation, {args.ops_size:g} MiB book, one client, {args.ops_rounds} rounds", "",
                      head + (" | ratio p50 |" if ratio else " |"),
                      "|---|" + "---|" * len(servers) + ("---|" if ratio else "")]
            for op in ("read", "leaf update", "JSON-Patch update", "append", "refusal"):
                cells = []
                medians = []
                for name in servers:
                    samples = stats.samples[(op, name)]
                    medians.append(statistics.median(samples))
                    cells.append(f"{fmt_ms(medians[-1])} ({fmt_ms(percentile(samples, 0.99))})")
                line = f"| {op} | " + " | ".join(cells) + " |"
                if ratio:
                    line += f" {medians[1] / medians[0]:.2f}x |"
                lines.append(line)
                log(line)
            lines.append("")
        if not args.ops_only:
            lines += ["## Acknowledged writes per second (distinct documents, leaf writes)", "",
                      f"{args.seconds:g} s timed after {args.warmup:g} s of warm-up per row; the generator's CPU is "
                      "its user + system time per wall second (100 % = one core; in brackets the CPU seconds of "
                      "the timed part), the server's likewise (all its processes: with --workers, the supervisor "
                      "and every worker); CPU per write is the server's CPU seconds over the acknowledged writes "
                      "(less sensitive to other work on the machine than the rate); the load is the 1-minute load "
                      "average when the row ended.", "",
                      "| store | clients | writes/s | p50 | p99 | generator CPU | server CPU | server CPU per write "
                      "| not 200 | load |",
                      "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
            for name, server in servers.items():
                # one server per further --workers count, on a storage (schema) of its own
                variants = [(server, worker_counts[0])]
                for workers in worker_counts[1:]:
                    settings = {**extra, "WORKERS": str(workers)}
                    if name == "postgres":
                        settings["STORAGE_URL"] = (f"{args.url}{'&' if '?' in args.url else '?'}"
                                                   f"schema={pg_schema}_w{workers}")
                        pg_extra.append(f"{pg_schema}_w{workers}")
                    other = Server(f"{name}-w{workers}", None, args.schema, work, settings)
                    wait_for_workers(other, workers)
                    started.append(other)
                    variants.append((other, workers))
                docs_of = {id(one): small_documents(one, max(counts)) for one, _ in variants}
                for clients in counts:
                    for one, workers in variants:
                        docs = docs_of[id(one)] = current_versions(one, docs_of[id(one)])
                        group = [one, *extras[name]] if one is server else [one]
                        label = name if len(group) == 1 else f"{name}, {len(group)} processes"
                        if workers > 1:
                            label += f", {workers} workers"
                        run = asyncio.run(measure([member.port for member in group], docs, clients, args.seconds,
                                                  args.warmup, label, [member.process.pid for member in group]))
                        row = run.row() + f" {os.getloadavg()[0]:.2f} |"
                        lines.append(row)
                        log(row)
            lines.append("")
        lines.append(f"Load average at the end {load_average()}.")
    finally:
        for server in [*servers.values(), *(one for group in extras.values() for one in group), *started]:
            server.stop()
        if "postgres" in stores:
            try:
                import psycopg
                from psycopg import sql
                with psycopg.connect(args.url, autocommit=True) as conn:
                    for one in [pg_schema, *pg_extra]:
                        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(one)))
            except Exception as error:
                log(f"could not drop schema {pg_schema}: {error}")
        shutil.rmtree(work, ignore_errors=True)
    text = "\n".join(lines) + "\n"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
