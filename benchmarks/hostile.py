"""Hostile clients against a real ``schemadoc serve`` on 127.0.0.1: what they make the server hold, and how
a well-behaved client is served meanwhile.

Not a test: it prints figures. With the default settings (``max_header_bytes`` 32 KiB, header and body
timeouts 10 s and 30 s, 64 connections per client address, an 8 MiB buffer per subscriber):

    .venv/bin/python benchmarks/hostile.py                                        # this checkout
    .venv/bin/python benchmarks/hostile.py --server before=../base/src --server after=

``--server LABEL=WHERE`` as in ``benchmarks/rest.py``: a source directory put first on ``PYTHONPATH``,
or empty for this checkout; the servers run one after the other. Phases, each measured by the
server's RSS (``VmRSS``, sampled every 20 ms) and a good client on another address (127.0.0.2)
reading a small leaf of another document in a loop (p50 / p99, and how many of its reads failed):

1. quiet: no attack;
2. a stalled event-stream reader (4 KiB receive buffer, reads nothing) while 300 writes of 1 MB
   land on its document;
3. ten connections each sending 50 MB of one header that never ends;
4. 1,000 connections each sending half a request line and headers, then nothing (one address);
   counted: how many the server closed within 15 s.

The attacker's figures on the server before these bounds: phase 2, RSS 101 -> 384 MB (not released
after the reader left); phase 3, 94 -> 642 MB; phase 4, none of 1,000 closed in 50 s and, under a
1,024 open-file limit, 28 of 48 requests from other clients failed.
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import common  # noqa: F401  (puts the checkout's src on the path)
import orjson

from schemadoc.config import ENVIRONMENT

MIB = 1 << 20
ATTACKER = {
    "stalled reader": "101 -> 384 MB, not released",
    "50 MB headers": "94 -> 642 MB",
    "half-open": "none of 1,000 closed in 50 s; 28 of 48 other requests failed",
}
SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
          "properties": {"name": {"type": "string", "default": "hostile"},
                         "blob": {"type": "string", "default": ""}},
          "required": ["name", "blob"]}
START_TIMEOUT_SECONDS = 60.0


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    """One server process on a fresh directory; ``rss()`` is its resident set in MiB."""

    def __init__(self, label: str, where: Path | None, work: Path) -> None:
        self.label = label
        self.port = free_port()
        schema = work / "blob.schema.json"
        schema.write_text(json.dumps(SCHEMA))
        env = {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}  # the defaults
        # the server runs elsewhere: every entry of PYTHONPATH made absolute, the one given first
        paths = [str(Path(entry).resolve()) for entry in env.get("PYTHONPATH", "").split(os.pathsep) if entry]
        env["PYTHONPATH"] = os.pathsep.join([*([str(where)] if where is not None else []), *paths])
        self.log_path = work / f"server-{label}.log"
        with self.log_path.open("wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "schemadoc", "serve", "--schema", str(schema), "--storage-dir",
                 str(work / f"data-{label}"), "--host", "127.0.0.1", "--port", str(self.port), "--log-level",
                 os.environ.get("HOSTILE_LOG_LEVEL", "warning")],
                cwd=work, env=env, stdout=err, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            with contextlib.suppress(OSError, http.client.HTTPException):
                if request(self.port, "GET", "/health")[0] == 200:
                    break
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"server {label} did not start: {self.log_path.read_text()[-2000:]}")
            time.sleep(0.1)

    def rss(self) -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def request(port: int, method: str, path: str, body: Any = None, source: str = "127.0.0.1",
            timeout: float = 30) -> tuple[int, Any]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
    try:
        data = None if body is None else orjson.dumps(body)
        connection.request(method, path, body=data, headers={"Content-Type": "application/json"} if data else {})
        response = connection.getresponse()
        raw = response.read()
        return response.status, orjson.loads(raw) if raw else None
    finally:
        connection.close()


class Peak:
    """The server's RSS sampled every 20 ms while the block runs: ``peak`` and ``last`` in MiB."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.peak = self.last = server.rss()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)

    def _sample(self) -> None:
        while not self._stop.wait(0.02):
            with contextlib.suppress(OSError):
                self.last = self.server.rss()
                self.peak = max(self.peak, self.last)

    def __enter__(self) -> Peak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


class GoodClient:
    """Reads a small leaf in a loop from 127.0.0.2 (a kept-alive connection, opened again after a failure)."""

    def __init__(self, port: int, doc_id: str) -> None:
        self.port, self.path = port, f"/api/v1/documents/{doc_id}?path=/name"
        self.latencies: list[float] = []
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        connection: http.client.HTTPConnection | None = None
        while not self._stop.is_set():
            start = time.perf_counter()
            try:
                if connection is None:
                    connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10,
                                                            source_address=("127.0.0.2", 0))
                connection.request("GET", self.path)
                response = connection.getresponse()
                response.read()
                if response.status != 200:
                    raise OSError(response.status)
                self.latencies.append(time.perf_counter() - start)
            except (OSError, http.client.HTTPException):
                self.failures += 1
                if connection is not None:
                    connection.close()
                connection = None
            time.sleep(0.005)
        if connection is not None:
            connection.close()

    def __enter__(self) -> GoodClient:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def figures(self) -> str:
        if not self.latencies:
            return f"no read answered, {self.failures} failed"
        ordered = sorted(self.latencies)
        p99 = ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]
        return (f"p50 {statistics.median(ordered) * 1000:.2f} ms / p99 {p99 * 1000:.2f} ms "
                f"({len(ordered)} reads, {self.failures} failed)")


def stalled_reader(port: int, doc_id: str) -> socket.socket:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.connect(("127.0.0.1", port))
    sock.sendall(f"GET /api/v1/documents/{doc_id}/events HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".encode())
    sock.recv(1024)  # the response's head; nothing more is ever read
    return sock


def write_load(port: int, doc_id: str, writes: int, size: int) -> None:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    version = request(port, "GET", f"/api/v1/documents/{doc_id}")[1]["version"]
    for n in range(writes):
        body = orjson.dumps({"node_data": f"{n:08d}" + "x" * (size - 8), "version": version})
        connection.request("PUT", f"/api/v1/documents/{doc_id}?path=/blob", body=body,
                           headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        answer = orjson.loads(response.read())
        if response.status != 200:
            raise RuntimeError(f"write {n}: {response.status} {answer}")
        version = answer["version"]
    connection.close()


def big_header(port: int, size: int) -> str:
    """Send ``size`` bytes of one unfinished header; the status line the server answered, if any."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sent = 0
        with contextlib.suppress(OSError):
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ")
            while sent < size:
                sock.sendall(b"a" * MIB)
                sent += MIB
        with contextlib.suppress(OSError):
            sock.settimeout(1)
            return sock.recv(200).split(b"\r\n", 1)[0].decode() or f"closed after {sent >> 20} MB"
    return f"no answer after {sent >> 20} MB sent"


def half_open(port: int, count: int, wait: float) -> str:
    """Open ``count`` connections with half a request each; what the server did with them within ``wait`` s."""
    socks: list[socket.socket] = []
    answers: dict[int, bytes] = {}
    with contextlib.ExitStack() as stack:
        for _ in range(count):
            with contextlib.suppress(OSError):
                sock = stack.enter_context(socket.create_connection(("127.0.0.1", port), timeout=5))
                socks.append(sock)
                sock.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Half: ")
                sock.setblocking(False)
        start = time.monotonic()
        closed_at: list[float] = []
        while time.monotonic() < start + wait and len(answers) < len(socks):
            for index, sock in enumerate(socks):
                if index in answers:
                    continue
                data = b""
                try:
                    while chunk := sock.recv(65536):
                        data += chunk
                except BlockingIOError:
                    continue
                except OSError:
                    pass
                answers[index] = data  # the server closed it
                closed_at.append(time.monotonic() - start)
            time.sleep(0.1)
    statuses = [data.split(b" ", 2)[1].decode() if data.startswith(b"HTTP/1.1 ") else "closed" for data in
                answers.values()]
    counts = ", ".join(f"{statuses.count(status)} x {status}" for status in sorted(set(statuses)))
    last = f", the last after {max(closed_at):.1f} s" if closed_at else ""
    return f"{len(answers)} of {len(socks)} closed by the server within {wait:g} s ({counts or 'none'}{last})"


def phase(server: Server, doc_id: str, attack: Callable[[], str]) -> dict[str, str]:
    with Peak(server) as peak, GoodClient(server.port, doc_id) as good:
        before = peak.last
        outcome = attack()
    time.sleep(2)
    return {"rss": f"{before:.0f} -> peak {peak.peak:.0f} MiB, {server.rss():.0f} MiB 2 s later",
            "good": good.figures(), "outcome": outcome}


def run(label: str, where: Path | None, work: Path, writes: int) -> dict[str, dict[str, str]]:
    server = Server(label, where, work)
    try:
        doc_id = request(server.port, "POST", "/api/v1/documents")[1]["doc_id"]
        # the good client reads another document: reads of the written one between its writes keep each
        # version read in the service's caches (about 150 MB over 300 writes of 1 MB, with or without an attack)
        read_id = request(server.port, "POST", "/api/v1/documents")[1]["doc_id"]
        write_load(server.port, doc_id, 3, 1000)  # warm up
        figures = {"quiet": phase(server, read_id, lambda: (time.sleep(5), "no attack")[1])}

        def stalled() -> str:
            reader = stalled_reader(server.port, doc_id)
            write_load(server.port, doc_id, writes, MIB)
            reader.close()
            return f"{writes} writes of 1 MB landed"

        figures["stalled reader"] = phase(server, read_id, stalled)

        def headers() -> str:
            answers: list[str] = []
            threads = [threading.Thread(target=lambda: answers.append(big_header(server.port, 50 * MIB)))
                       for _ in range(10)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            return "; ".join(sorted(set(answers)))

        figures["50 MB headers"] = phase(server, read_id, headers)
        figures["half-open"] = phase(server, read_id, lambda: half_open(server.port, 1000, 15.0))
        return figures
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", action="append", default=[], metavar="LABEL=WHERE",
                        help="a server to attack: LABEL=source directory, or LABEL= for this checkout")
    parser.add_argument("--writes", type=int, default=300, help="1 MB writes under the stalled reader (300)")
    args = parser.parse_args()
    servers = [(label, Path(where).resolve() if where else None)
               for label, _, where in (spec.partition("=") for spec in args.server or ["this="])]
    results: dict[str, dict[str, dict[str, str]]] = {}
    with tempfile.TemporaryDirectory(prefix="hostile-") as tmp:
        for label, where in servers:
            log(f"attacking server {label!r}")
            results[label] = run(label, where, Path(tmp), args.writes)
    print(f"\n# Hostile clients ({time.strftime('%Y-%m-%d %H:%M')} UTC; load average "
          f"{' / '.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} CPUs)\n")
    for name in ("quiet", "stalled reader", "50 MB headers", "half-open"):
        print(f"## {name}" + (f" (the attacker's figures: {ATTACKER[name]})" if name in ATTACKER else ""))
        for label, figures in results.items():
            item = figures[name]
            print(f"- {label}: server RSS {item['rss']}; good client {item['good']}; {item['outcome']}")
        print()


if __name__ == "__main__":
    main()
