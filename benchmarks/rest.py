"""Black-box REST figures: a real ``schemadoc serve`` on 127.0.0.1, one keep-alive client.

Not a test: it prints figures (p50 / p99 / mean of every request) and writes them as Markdown to
``benchmarks/results/rest.md``. ``benchmarks/README.md`` explains each row.

    .venv/bin/python benchmarks/rest.py                     # 10 KB, 10 MB and 100 MB books
    .venv/bin/python benchmarks/rest.py --quick             # no 100 MB book (about a minute)
    .venv/bin/python benchmarks/rest.py --server before=../other-checkout/.venv/bin/python --server after=
    .venv/bin/python benchmarks/rest.py --quick --server off= --server on= --server-env off:METRICS=false \
        --server-env on:LOG_FORMAT=json                     # the cost of /metrics and JSON request lines

Each ``--server LABEL=WHERE`` starts one server process: ``WHERE`` is a Python interpreter (the
server runs as ``WHERE -m schemadoc``, with that environment's libraries), a source directory
(put first on ``PYTHONPATH`` of this interpreter), or empty (this checkout). Two versions of the
code are thus compared in one run: the requests of every scenario are interleaved between the
servers, round by round, and the load of the machine falls on both alike.

Scenarios (each request timed from sending it to having read the whole response):

- ``read a small leaf``: ``GET /api/v1/documents/{id}?path=/title`` on a document created from the
  schema's defaults;
- ``write a small document``: ``PUT /api/v1/documents/{id}?path=/title`` on that document;
- ``leaf update, <size> book``: ``PUT`` of the text of the middle paragraph of a generated book
  (``generate.py``) of 10 KB, 10 MB or 100 MB, uploaded first through ``PUT ?path=/``.

The headline is the ratio of the 100 MB leaf update to the 10 KB one (medians, same run).
"""

from __future__ import annotations

import argparse
import gc
import http.client
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

import orjson  # noqa: E402
from generate import MIB, make_book, mid_paragraph_path  # noqa: E402

DEFAULT_SCHEMA = REPO / "schemas" / "book.schema.json"
DEFAULT_OUT = HERE / "results" / "rest.md"
API = "/api/v1"
# sizes of the generated books, in MiB of compact JSON
BOOKS = {"10 KB": 10 / 1024, "10 MB": 10.0, "100 MB": 100.0}
QUICK_BOOKS = ("10 KB", "10 MB")
SERVER_ENV = ("SCHEMA_PATH", "STORAGE_DIR", "LOG_LEVEL", "CONFIG_FILE", "HOST", "PORT", "CORS_ORIGINS",
              "TRANSPORT", "MAX_BODY_BYTES", "MAX_JSON_DEPTH")
START_TIMEOUT_SECONDS = 60.0


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Client:
    """One keep-alive HTTP/1.1 connection (``http.client``: the least client-side work per request)."""

    def __init__(self, port: int) -> None:
        self.connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)

    def request(self, method: str, url: str, body: bytes | None = None,
                headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
        sent = dict(headers or {})
        if body is not None:
            sent.setdefault("Content-Type", "application/json")
        try:
            self.connection.request(method, url, body=body, headers=sent)
            response = self.connection.getresponse()
        except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
            # the server closed a connection left idle past its keep-alive timeout: open a new one
            self.connection.close()
            self.connection.request(method, url, body=body, headers=sent)
            response = self.connection.getresponse()
        data = response.read()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, data

    def json(self, method: str, url: str, value: Any = None, expect: int = 200) -> tuple[dict[str, str], Any]:
        body = None if value is None else orjson.dumps(value)
        status, headers, data = self.request(method, url, body)
        if status != expect:
            raise RuntimeError(f"{method} {url} -> {status}: {data[:500]!r}")
        return headers, orjson.loads(data)

    def close(self) -> None:
        self.connection.close()


class Server:
    """One ``schemadoc serve`` process on a fresh storage directory; logs go to files."""

    def __init__(self, label: str, where: Path | None, schema: Path, work: Path,
                 settings: dict[str, str] | None = None, storage: Path | None = None) -> None:
        self.label = label
        self.port = free_port()
        self.storage = storage or work / f"storage-{label}"  # a given one may be another server's too
        self.storage.mkdir(parents=True, exist_ok=storage is not None)
        env = {key: value for key, value in os.environ.items() if key not in SERVER_ENV}
        env["MAX_BODY_BYTES"] = str(512 * MIB)  # the 100 MB book is uploaded in one request
        env.update(settings or {})  # --server-env: this server's own settings
        python = sys.executable
        if where is not None and where.is_dir():
            env["PYTHONPATH"] = os.pathsep.join([str(where), *filter(None, [env.get("PYTHONPATH")])])
        elif where is not None:
            python = str(where)
        self.stderr_path = work / f"server-{label}.log"
        with self.stderr_path.open("wb") as err:
            self.process = subprocess.Popen(
                [python, "-m", "schemadoc", "serve", "--transport", "http", "--schema", str(schema),
                 "--storage-dir", str(self.storage), "--host", "127.0.0.1", "--port", str(self.port)],
                cwd=work, env=env, stdout=err, stderr=subprocess.STDOUT)
        self._wait_healthy()
        self.client = Client(self.port)

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server {self.label} exited: {self.stderr_path.read_text(errors='replace')}")
            try:
                probe = Client(self.port)
                status, _, _ = probe.request("GET", "/health")
                probe.close()
                if status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"server {self.label} did not become healthy")

    def rss_mib(self, field: str = "VmRSS") -> float | None:
        """The server's resident set size now (``VmHWM``: its peak so far), Linux only."""
        try:
            with open(f"/proc/{self.process.pid}/status") as status:
                for line in status:
                    if line.startswith(f"{field}:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            return None
        return None

    def stop(self) -> None:
        self.client.close()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


@dataclass
class Scenario:
    """One kind of request against one server: ``step(i)`` sends request ``i``."""

    name: str
    server: str
    step: Callable[[int], None]
    samples: list[float] = field(default_factory=list)

    def run(self, i: int, *, timed: bool) -> None:
        start = time.perf_counter()
        self.step(i)
        elapsed = time.perf_counter() - start
        if timed:
            self.samples.append(elapsed)


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.2f} ms" if ms < 10 else f"{ms:.1f} ms" if ms < 100 else f"{ms:.0f} ms"


class Documents:
    """The documents of one server: a small one from the defaults, and the uploaded books."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.versions: dict[str, int] = {}
        self.ids: dict[str, str] = {}

    def create(self, key: str) -> str:
        headers, body = self.server.client.json("POST", f"{API}/documents", expect=201)
        self.ids[key] = body["doc_id"]
        self.versions[key] = int(headers["etag"].strip('"'))
        return self.ids[key]

    def upload(self, key: str, book: bytes) -> None:
        doc_id = self.create(key)
        body = b'{"version":%d,"node_data":%s}' % (self.versions[key], book)
        status, headers, data = self.server.client.request("PUT", f"{API}/documents/{doc_id}?path=/", body)
        if status != 200:
            raise RuntimeError(f"upload of the {key} book -> {status}: {data[:500]!r}")
        self.versions[key] = int(headers["etag"].strip('"'))

    def reader(self, key: str, path: str) -> Callable[[int], None]:
        url = f"{API}/documents/{self.ids[key]}?path={path}"
        client = self.server.client

        def read(_: int) -> None:
            status, _headers, data = client.request("GET", url)
            if status != 200:
                raise RuntimeError(f"GET {url} -> {status}: {data[:300]!r}")

        return read

    def writer(self, key: str, path: str, text: Callable[[int], str]) -> Callable[[int], None]:
        url = f"{API}/documents/{self.ids[key]}?path={path}"
        client = self.server.client

        def write(i: int) -> None:
            body = orjson.dumps({"node_data": text(i), "version": self.versions[key]})
            status, headers, data = client.request("PUT", url, body)
            if status != 200:
                raise RuntimeError(f"PUT {url} -> {status}: {data[:300]!r}")
            self.versions[key] = int(headers["etag"].strip('"'))

        return write


def versions_of(*names: str) -> str:
    found = []
    for name in names:
        try:
            found.append(f"{name} {importlib_metadata.version(name)}")
        except importlib_metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", action="append", default=[], metavar="LABEL=WHERE",
                        help="a server run by the interpreter WHERE, or with the source directory WHERE, or "
                             "(WHERE empty) from this checkout; repeatable (default: one, this checkout)")
    parser.add_argument("--server-env", action="append", default=[], metavar="LABEL:NAME=VALUE",
                        help="a setting of the server LABEL as its environment variable (e.g. off:METRICS=false, "
                             "on:LOG_FORMAT=json); repeatable")
    parser.add_argument("--quick", action="store_true", help="no 100 MB book")
    parser.add_argument("--reads", type=int, default=1000, help="timed small reads per server (default 1000)")
    parser.add_argument("--writes", type=int, default=300, help="timed small-document writes (default 300)")
    parser.add_argument("--leaf-writes", type=int, default=200, help="timed leaf updates per book (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed requests of each kind first (default 20)")
    parser.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA)
    parser.add_argument("--tmp-dir", type=Path, default=None, help="where the storage directories go")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the Markdown results file")
    args = parser.parse_args(argv)

    servers_wanted: list[tuple[str, Path | None]] = []
    for spec in args.server:
        label, _, where = spec.partition("=")
        servers_wanted.append((label, Path(where).absolute() if where else None))
    if not servers_wanted:
        servers_wanted = [("server", None)]
    server_settings: dict[str, dict[str, str]] = {}
    for spec in args.server_env:
        label, _, setting = spec.partition(":")
        name, equals, value = setting.partition("=")
        if not equals or label not in {wanted for wanted, _ in servers_wanted}:
            parser.error(f"--server-env {spec!r}: expected LABEL:NAME=VALUE for a --server LABEL")
        server_settings.setdefault(label, {})[name] = value
    books = [name for name in BOOKS if not (args.quick and name not in QUICK_BOOKS)]

    started_at = datetime.now(UTC)
    load_before = load_average()
    log(f"load average {load_before}; generating books {', '.join(books)}")
    book_bytes: dict[str, bytes] = {}
    leaves: dict[str, str] = {}
    for name in books:
        book = make_book(BOOKS[name])
        leaves[name] = mid_paragraph_path(book) + "/text"
        book_bytes[name] = orjson.dumps(book)
        del book
    gc.collect()

    work = Path(tempfile.mkdtemp(prefix="schemadoc-rest-bench-", dir=args.tmp_dir))
    servers: list[Server] = []
    try:
        scenarios: list[list[Scenario]] = []  # one list per kind of request, one scenario per server
        kinds: dict[str, list[Scenario]] = {}
        rss: dict[str, float | None] = {}
        peak_rss: dict[str, float | None] = {}
        for label, where in servers_wanted:
            log(f"starting server {label!r}" + (f" with {where}" if where else "")
                + (f" and {server_settings[label]}" if label in server_settings else ""))
            server = Server(label, where, args.schema, work, server_settings.get(label))
            servers.append(server)
            docs = Documents(server)
            docs.create("small")
            for name in books:
                log(f"  uploading the {name} book ({len(book_bytes[name]):,} bytes)")
                docs.upload(name, book_bytes[name])
            rss[label] = server.rss_mib()
            planned = [
                ("read a small leaf (GET ?path=/title)", docs.reader("small", "/title"), args.reads),
                ("write a small document (PUT ?path=/title)",
                 docs.writer("small", "/title", lambda i: f"Title {i}"), args.writes),
                *((f"leaf update, {name} book", docs.writer(name, leaves[name], lambda i: f"Edited paragraph {i}."),
                   args.leaf_writes) for name in books),
            ]
            for kind, step, _count in planned:
                kinds.setdefault(kind, []).append(Scenario(kind, label, step))
        counts = {kind: count for kind, _step, count in planned}
        del book_bytes
        gc.collect()
        gc.disable()  # no collector pauses in the client while it times requests

        # leaf updates of every book interleaved round by round (one noise for all, hence the ratio)
        log("warming up")
        for group in kinds.values():
            for i in range(args.warmup):
                for scenario in group:
                    scenario.run(-1 - i, timed=False)
        for kind in list(kinds)[:2]:
            log(f"timing {kind} x {counts[kind]} per server")
            for i in range(counts[kind]):
                for scenario in kinds[kind]:
                    scenario.run(i, timed=True)
        leaf_kinds = list(kinds)[2:]
        log(f"timing leaf updates x {args.leaf_writes} per book and server, interleaved")
        for i in range(args.leaf_writes):
            for kind in leaf_kinds:
                for scenario in kinds[kind]:
                    scenario.run(i, timed=True)
        gc.enable()
        load_after = load_average()
        for server in servers:
            rss[server.label] = max(filter(None, [rss[server.label], server.rss_mib()]), default=None)
            peak_rss[server.label] = server.rss_mib("VmHWM")
        scenarios = list(kinds.values())
    finally:
        for server in servers:
            server.stop()
        shutil.rmtree(work, ignore_errors=True)

    labels = [label for label, _ in servers_wanted]
    lines = [
        "# REST request figures (black box)",
        "",
        f"`benchmarks/rest.py`, {started_at:%Y-%m-%d %H:%M} UTC; load average (1/5/15 min) {load_before} before, "
        f"{load_after} after; {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}; "
        f"{versions_of('uvicorn', 'httptools', 'uvloop', 'starlette', 'fastapi')}.",
        "",
        "One keep-alive `http.client` connection per server; each cell is p50 / p99 (mean) of n requests.",
        "",
        "| request | n | " + " | ".join(labels) + " |",
        "|---|---|" + "---|" * len(labels),
    ]
    for group in scenarios:
        cells = [f"{fmt_ms(statistics.median(s.samples))} / {fmt_ms(percentile(s.samples, 0.99))} "
                 f"({fmt_ms(statistics.fmean(s.samples))})" for s in group]
        lines.append(f"| {group[0].name} | {len(group[0].samples)} | " + " | ".join(cells) + " |")
    lines.append("| server RSS after the run | | " + " | ".join(
        f"{rss[label]:.0f} MiB" if rss[label] else "?" for label in labels) + " |")
    lines.append("| server peak RSS (VmHWM) | | " + " | ".join(
        f"{peak_rss[label]:.0f} MiB" if peak_rss.get(label) else "?" for label in labels) + " |")
    lines.append("")
    by_kind = {group[0].name: {s.server: s for s in group} for group in scenarios}
    if "100 MB" in books:
        lines.append("Headline: leaf update on the 100 MB book / on the 10 KB book (p50, same run): " + ", ".join(
            f"{label} {statistics.median(by_kind['leaf update, 100 MB book'][label].samples) / statistics.median(by_kind['leaf update, 10 KB book'][label].samples):.1f}x"  # noqa: E501
            for label in labels) + " (target: at most 2x).")
        lines.append("")
    if len(labels) > 1:
        first = labels[0]
        lines.append(f"p50 relative to {first}: " + "; ".join(
            f"{kind}: " + ", ".join(
                f"{label} {statistics.median(group[label].samples) / statistics.median(group[first].samples):.2f}x"
                for label in labels[1:]) for kind, group in by_kind.items()) + ".")
        lines.append("")
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    log(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
