"""How long a real ``schemadoc serve`` takes to stop on SIGTERM: idle, with open event streams, under write load.

Not a test: it prints figures. Each case starts a server on a free port (files store in a temporary
directory), sets up its load, sends SIGTERM and measures:

* ``to log``: from the signal to the server's "stopping on SIGTERM" line (polled every 2 ms);
* ``to exit``: from the signal to the process's exit (its code is shown);
* ``streams told``: event streams that received the final ``shutting-down`` event, of those open;
* ``writes``: writes acknowledged before the stop, and 2xx answers to requests sent after the log line (0).

    .venv/bin/python benchmarks/shutdown.py
    .venv/bin/python benchmarks/shutdown.py --streams 200 --writers 8 --runs 3

Median of ``--runs`` stops per case, in milliseconds; the machine's load moves them all.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = ROOT / "schemas" / "book.schema.json"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class Server:
    def __init__(self, root: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = root / f"stderr-{self.port}.txt"
        # many streams from one address: the per-client bounds raised for the measurement
        env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "MAX_CONNECTIONS_PER_CLIENT": "1000",
               "MAX_SUBSCRIBERS_PER_CLIENT": "1000", "MAX_SUBSCRIBERS_PER_DOCUMENT": "1000"}
        with self.log.open("wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "schemadoc", "serve", "--schema", str(SCHEMA), "--storage-dir",
                 str(root / "data"), "--port", str(self.port)],
                cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=err)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.url}/health", timeout=1).status_code == 200:
                    return
            time.sleep(0.05)
        raise SystemExit(f"the server did not start: {self.log.read_text()}")


class Stream(threading.Thread):
    def __init__(self, url: str, doc_id: str) -> None:
        super().__init__(daemon=True)
        self.url, self.doc_id = url, doc_id
        self.open = threading.Event()
        self.told = False

    def run(self) -> None:
        with contextlib.suppress(httpx.HTTPError), httpx.stream(
                "GET", f"{self.url}/api/v1/documents/{self.doc_id}/events", params={"since": 0},
                timeout=httpx.Timeout(30, read=60)) as response:
            self.open.set()
            for line in response.iter_lines():
                if "shutting-down" in line:
                    self.told = True


class Writer(threading.Thread):
    def __init__(self, url: str, doc_id: str, stop_logged: list[float]) -> None:
        super().__init__(daemon=True)
        self.url, self.doc_id, self.stop_logged = url, doc_id, stop_logged
        self.acknowledged = 0
        self.late_2xx = 0

    def run(self) -> None:
        with httpx.Client(timeout=30) as http:
            while True:
                sent = time.monotonic()
                try:
                    answer = http.put(f"{self.url}/api/v1/documents/{self.doc_id}", params={"path": "/title"},
                                      json={"node_data": f"t{sent}"}, headers={"If-Match": "*"})
                except httpx.HTTPError:
                    return
                if answer.status_code != 200:
                    return
                self.acknowledged += 1
                if self.stop_logged and sent > self.stop_logged[0]:
                    self.late_2xx += 1


def one_stop(streams: int, writers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="schemadoc-stop-") as directory:
        root = Path(directory)
        server = Server(root)
        doc_id = httpx.post(f"{server.url}/api/v1/documents", json={}, timeout=30).json()["doc_id"]
        readers = [Stream(server.url, doc_id) for _ in range(streams)]
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.open.wait(10)
        logged: list[float] = []
        writing = [Writer(server.url, httpx.post(f"{server.url}/api/v1/documents", json={}, timeout=30).json()[
            "doc_id"], logged) for _ in range(writers)]
        for writer in writing:
            writer.start()
        time.sleep(1.0 if writers else 0.2)
        signalled = time.monotonic()
        server.process.send_signal(signal.SIGTERM)
        while not logged and server.process.poll() is None:
            if "stopping on SIGTERM" in server.log.read_text(errors="replace"):
                logged.append(time.monotonic())
            else:
                time.sleep(0.002)
        code = server.process.wait(timeout=60)
        exited = time.monotonic()
        for thread in [*readers, *writing]:
            thread.join(timeout=10)
        logged_at = logged[0] if logged else exited
        return {"log_ms": (logged_at - signalled) * 1000, "exit_ms": (exited - signalled) * 1000,
                "code": code, "told": sum(reader.told for reader in readers), "streams": streams,
                "acknowledged": sum(writer.acknowledged for writer in writing),
                "late_2xx": sum(writer.late_2xx for writer in writing)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--writers", type=int, default=4)
    args = parser.parse_args()
    cases = [("idle", 0, 0), (f"{args.streams} event streams", args.streams, 0),
             (f"{args.writers} writers + 10 streams", 10, args.writers)]
    print(f"SIGTERM to a real server, median of {args.runs} (grace 10 s; files store)\n")
    print("| case | to log (ms) | to exit (ms) | exit code | streams told | writes acknowledged | 2xx after the log |")
    print("|---|---|---|---|---|---|---|")
    for name, streams, writers in cases:
        runs = [one_stop(streams, writers) for _ in range(args.runs)]
        print(f"| {name} | {statistics.median(r['log_ms'] for r in runs):.0f} "
              f"| {statistics.median(r['exit_ms'] for r in runs):.0f} "
              f"| {','.join(sorted({str(r['code']) for r in runs}))} "
              f"| {min(r['told'] for r in runs)}/{streams} "
              f"| {statistics.median(r['acknowledged'] for r in runs):.0f} "
              f"| {max(r['late_2xx'] for r in runs)} |", flush=True)


if __name__ == "__main__":
    main()
