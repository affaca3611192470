"""What a refused write costs beside an accepted one, black box: REST and MCP over stdio, 10 KB to 100 MB books.

Not a test: it prints figures (p50 / p99 of each request, and the ratio of the refused write's p50 to the accepted
one's) and writes them as Markdown to ``benchmarks/results/refusals.md``. ``benchmarks/README.md`` explains it.

    .venv/bin/python benchmarks/refusals.py                      # 10 KB, 10 MB and 100 MB books, REST and MCP
    .venv/bin/python benchmarks/refusals.py --quick              # no 100 MB book
    .venv/bin/python benchmarks/refusals.py --server before=../other-checkout/src --server after=

For each ``--server LABEL=WHERE`` (as in ``rest.py``: an interpreter, a source directory put first on
``PYTHONPATH``, or empty for this checkout) the books are uploaded through REST into a fresh storage directory
(``PUT ?path=/``); the server is stopped and its directory copied, then a ``schemadoc serve`` over HTTP runs on
one copy and a ``schemadoc serve --transport stdio`` on the other, so neither door shares a process or a
directory with the other. Each round sends, on every book, door and server in turn:

- an accepted leaf update: the middle paragraph's text replaced by another string (REST ``PUT ?path=...``, MCP
  ``document_update_node``), at the document's current version;
- a refused one: the same paragraph's text set to a number (``validation-failed``, with its violation and
  ``details.suggested_call``), at the same version.

Each request is timed from sending it to having read the whole answer (REST: one keep-alive ``http.client``
connection; MCP: one JSON-RPC line written to the server's stdin, until its answer's line is read).
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import orjson  # noqa: E402
from generate import make_book, mid_paragraph_path  # noqa: E402
from rest import (  # noqa: E402
    API,
    BOOKS,
    DEFAULT_SCHEMA,
    QUICK_BOOKS,
    SERVER_ENV,
    Documents,
    Server,
    fmt_ms,
    load_average,
    log,
    percentile,
)

DEFAULT_OUT = HERE / "results" / "refusals.md"
TARGET = 1.5  # refused p50 at most this many times the accepted p50


class StdioServer:
    """``schemadoc serve --transport stdio`` on a storage directory, spoken to one JSON-RPC line at a time."""

    def __init__(self, label: str, where: Path | None, schema: Path, storage: Path, work: Path) -> None:
        env = {key: value for key, value in os.environ.items() if key not in SERVER_ENV}
        python = sys.executable
        if where is not None and where.is_dir():
            env["PYTHONPATH"] = os.pathsep.join([str(where), *filter(None, [env.get("PYTHONPATH")])])
        elif where is not None:
            python = str(where)
        self.stderr = (work / f"stdio-{label}.log").open("wb")
        self.process = subprocess.Popen(
            [python, "-m", "schemadoc", "serve", "--transport", "stdio", "--schema", str(schema),
             "--storage-dir", str(storage)], cwd=work, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=self.stderr)
        assert self.process.stdin is not None and self.process.stdout is not None
        self.stdin: IO[bytes] = self.process.stdin
        self.stdout: IO[bytes] = self.process.stdout
        self.next_id = 0
        self.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                                    "clientInfo": {"name": "schemadoc-refusals-bench", "version": "1"}})
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def _send(self, message: dict[str, Any]) -> None:
        self.stdin.write(orjson.dumps(message) + b"\n")
        self.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self.next_id += 1
        self._send({"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params})
        while True:
            line = self.stdout.readline()
            if not line:
                raise RuntimeError(f"the stdio server ended: see {self.stderr.name}")
            answer = orjson.loads(line)
            if answer.get("id") == self.next_id:
                if "error" in answer:
                    raise RuntimeError(f"{method} -> {answer['error']}")
                result: dict[str, Any] = answer["result"]
                return result

    def call(self, tool: str, arguments: dict[str, Any]) -> tuple[bool, Any]:
        """``(is_error, structured content or the text)`` of one tool call."""
        result = self.request("tools/call", {"name": tool, "arguments": arguments})
        content = result.get("structuredContent")
        if content is None:
            content = orjson.loads(result["content"][0]["text"])
        return bool(result.get("isError")), content

    def stop(self) -> None:
        if self.process.poll() is None:
            self.stdin.close()  # the end of input stops it
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.stderr.close()


def rest_steps(docs: Documents, book: str, leaf: str) -> tuple[Callable[[int], None], Callable[[int], None]]:
    """The accepted and the refused leaf update of ``book`` over REST."""
    url = f"{API}/documents/{docs.ids[book]}?path={leaf}"
    client = docs.server.client

    def accepted(i: int) -> None:
        body = orjson.dumps({"node_data": f"Edited paragraph {i}.", "version": docs.versions[book]})
        status, headers, data = client.request("PUT", url, body)
        if status != 200:
            raise RuntimeError(f"PUT {url} -> {status}: {data[:300]!r}")
        docs.versions[book] = int(headers["etag"].strip('"'))

    def refused(i: int) -> None:
        body = orjson.dumps({"node_data": i, "version": docs.versions[book]})
        status, _headers, data = client.request("PUT", url, body)
        if status != 422 or b"suggested_call" not in data:
            raise RuntimeError(f"PUT {url} (a number) -> {status}: {data[:300]!r}")

    return accepted, refused


def mcp_steps(server: StdioServer, doc_id: str, version: int, leaf: str
              ) -> tuple[Callable[[int], None], Callable[[int], None]]:
    """The accepted and the refused leaf update of one book over MCP (stdio)."""
    current = [version]

    def accepted(i: int) -> None:
        error, content = server.call("document_update_node", {"doc_id": doc_id, "node_path": leaf,
                                                               "node_data": f"Edited paragraph {i}.",
                                                               "version": current[0]})
        if error:
            raise RuntimeError(f"document_update_node -> {content}")
        current[0] = int(content["version"])

    def refused(i: int) -> None:
        error, content = server.call("document_update_node", {"doc_id": doc_id, "node_path": leaf, "node_data": i,
                                                               "version": current[0]})
        if not error or "suggested_call" not in str(content):
            raise RuntimeError(f"document_update_node (a number) -> {str(content)[:300]}")

    return accepted, refused


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", action="append", default=[], metavar="LABEL=WHERE",
                        help="the code to run (as in rest.py); repeatable (default: one, this checkout)")
    parser.add_argument("--quick", action="store_true", help="no 100 MB book")
    parser.add_argument("--writes", type=int, default=200, help="timed writes of each kind per book, door and "
                                                                "server (default 200)")
    parser.add_argument("--warmup", type=int, default=20, help="untimed rounds first (default 20)")
    parser.add_argument("--doors", default="rest,mcp", help="rest, mcp or both (default)")
    parser.add_argument("--schema", type=Path, default=DEFAULT_SCHEMA)
    parser.add_argument("--tmp-dir", type=Path, default=None, help="where the storage directories go")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the Markdown results file")
    args = parser.parse_args(argv)
    doors = [door for door in ("rest", "mcp") if door in args.doors.split(",")]
    wanted = [(label, Path(where).absolute() if where else None)
              for label, _, where in (spec.partition("=") for spec in args.server or ["server="])]
    books = [name for name in BOOKS if not (args.quick and name not in QUICK_BOOKS)]

    started_at = datetime.now(UTC)
    load_before = load_average()
    log(f"load average {load_before}; generating books {', '.join(books)}")
    leaves: dict[str, str] = {}
    book_bytes: dict[str, bytes] = {}
    for name in books:
        book = make_book(BOOKS[name])
        leaves[name] = mid_paragraph_path(book) + "/text"
        book_bytes[name] = orjson.dumps(book)
        del book
    gc.collect()

    work = Path(tempfile.mkdtemp(prefix="schemadoc-refusals-bench-", dir=args.tmp_dir))
    running: list[Server | StdioServer] = []
    samples: dict[tuple[str, str, str, str], list[float]] = {}  # (door, book, label, kind) -> seconds
    steps: list[tuple[tuple[str, str, str, str], Callable[[int], None]]] = []
    try:
        for label, where in wanted:
            log(f"server {label!r}: uploading the books through REST")
            uploader = Server(label, where, args.schema, work / "upload")
            docs = Documents(uploader)
            for name in books:
                docs.upload(name, book_bytes[name])
            uploader.stop()  # its snapshots written: each door starts from the same directory
            for door in doors:
                storage = work / f"{door}-{label}"
                shutil.copytree(uploader.storage, storage)
                if door == "rest":
                    server = Server(label, where, args.schema, work, storage=storage)
                    running.append(server)
                    served = Documents(server)
                    served.ids, served.versions = dict(docs.ids), dict(docs.versions)
                    for name in books:
                        accepted, refused = rest_steps(served, name, leaves[name])
                        steps += [(("REST", name, label, "accepted"), accepted),
                                  (("REST", name, label, "refused"), refused)]
                else:
                    stdio = StdioServer(label, where, args.schema, storage, work)
                    running.append(stdio)
                    for name in books:
                        accepted, refused = mcp_steps(stdio, docs.ids[name], docs.versions[name], leaves[name])
                        steps += [(("MCP stdio", name, label, "accepted"), accepted),
                                  (("MCP stdio", name, label, "refused"), refused)]
        del book_bytes
        gc.collect()
        gc.disable()  # no collector pauses in the client while it times requests
        log("warming up")
        for i in range(args.warmup):
            for _key, step in steps:
                step(-1 - i)
        log(f"timing {args.writes} rounds of {len(steps)} requests, interleaved")
        for i in range(args.writes):
            for key, step in steps:
                start = time.perf_counter()
                step(i)
                samples.setdefault(key, []).append(time.perf_counter() - start)
        gc.enable()
        load_after = load_average()
    finally:
        for each in running:
            each.stop()
        shutil.rmtree(work, ignore_errors=True)

    labels = [label for label, _ in wanted]
    lines = [
        "# Refused writes beside accepted ones (black box)",
        "",
        f"`benchmarks/refusals.py`, {started_at:%Y-%m-%d %H:%M} UTC; load average (1/5/15 min) {load_before} before, "
        f"{load_after} after; {os.cpu_count()} CPUs, {platform.platform()}, Python {platform.python_version()}.",
        "",
        f"A leaf update of the middle paragraph's text, accepted (a string) and refused (a number: "
        f"`validation-failed` with `details.suggested_call`), {args.writes} of each per book, door and server, "
        f"interleaved; p50 / p99. Target: refused p50 at most {TARGET}x the accepted p50.",
        "",
        "| door | book | " + " | ".join(f"{label}: accepted | {label}: refused | {label}: ratio" for label in labels)
        + " |",
        "|---|---|" + "---|---|---|" * len(labels),
    ]
    worst: dict[str, float] = {}
    for door in ("REST", "MCP stdio"):
        for name in books:
            cells = []
            for label in labels:
                accepted = samples.get((door, name, label, "accepted"))
                refused = samples.get((door, name, label, "refused"))
                if not accepted or not refused:
                    continue
                ratio = statistics.median(refused) / statistics.median(accepted)
                worst[label] = max(worst.get(label, 0.0), ratio)
                cells += [f"{fmt_ms(statistics.median(accepted))} / {fmt_ms(percentile(accepted, 0.99))}",
                          f"{fmt_ms(statistics.median(refused))} / {fmt_ms(percentile(refused, 0.99))}",
                          f"**{ratio:.2f}x**"]
            if cells:
                lines.append(f"| {door} | {name} | " + " | ".join(cells) + " |")
    lines += ["", "Worst ratio: " + ", ".join(
        f"{label} {worst[label]:.2f}x ({'met' if worst[label] <= TARGET else 'NOT met'})" for label in labels
        if label in worst) + f" (target: at most {TARGET}x).", ""]
    text = "\n".join(lines)
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    log(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
