"""What building a server costs: the service, the MCP server, the REST app, and `schemadoc serve` to its first answer.

Not a test: it prints figures. The MCP tools (``interfaces/mcp_door/server.py``) and the REST endpoints
(``interfaces/rest/routes.py``) are described once per process and then bound to each server's own
service, so the first server of a process pays for the descriptions and every later one does
not. Each build is timed both ways:

* ``cold``: the per-process descriptions dropped before each build (what every build paid
  before they were kept: the 23 tool models and schemas, FastAPI's analysis of the endpoints);
* ``warm``: the descriptions kept (every server after the first in a process, e.g. each test
  of the conformance suite).

``serve``: ``schemadoc serve`` started as a process on a free port until ``GET /health``
answers 200 (interpreter start, imports, schema, storage, app, uvicorn), median of ``--serves``.

    .venv/bin/python benchmarks/startup.py
    .venv/bin/python benchmarks/startup.py --runs 50 --serves 5

Median and minimum over ``--runs`` builds, in milliseconds; the machine's load moves them all.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from common import REPO

from schemadoc.config import Settings
from schemadoc.interfaces.app import build_app, create_service
from schemadoc.interfaces.mcp_door import server as mcp
from schemadoc.interfaces.mcp_door import tools as mcp_tools
from schemadoc.interfaces.rest import routes as rest

SCHEMA = REPO / "schemas" / "book.schema.json"


def _drop_descriptions() -> None:
    mcp_tools._tool_templates.cache_clear()
    rest.rest_router.cache_clear()


def _timed(build: Callable[[int], Any], runs: int, before: Callable[[], None] | None = None) -> list[float]:
    samples: list[float] = []
    for run in range(runs):
        if before is not None:
            before()
        start = time.perf_counter()
        build(run)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


def _row(name: str, samples: list[float]) -> str:
    return f"| {name} | {statistics.median(samples):.1f} | {min(samples):.1f} | {len(samples)} |"


def _first_request(app: Any) -> None:
    """``GET /api/v1/documents`` through the application (answered by FastAPI, not the lane): what a build
    leaves to the first request (FastAPI prepares included routers then) shows here."""
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "GET", "scheme": "http",
             "path": "/api/v1/documents", "raw_path": b"/api/v1/documents", "root_path": "", "query_string": b"",
             "headers": [(b"host", b"127.0.0.1")], "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80)}
    asyncio.run(app(scope, receive, send))
    if sent[0]["status"] != 200:
        raise RuntimeError(f"GET /api/v1/documents answered {sent[0]['status']}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


_SERVE = "import sys; from schemadoc.interfaces.cli.command import main; sys.exit(main())"


def _serve_once(storage: Path) -> float:
    """Milliseconds from starting ``schemadoc serve`` to its first 200 on /health."""
    port = _free_port()
    command = [sys.executable, "-c", _SERVE, "serve", "--schema", str(SCHEMA),
               "--storage-dir", str(storage), "--port", str(port), "--log-level", "warning"]
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=1.0) as client:
            while True:
                if process.poll() is not None:
                    error = process.stderr.read().decode() if process.stderr else ""
                    raise RuntimeError(f"schemadoc serve ended: {error}")
                try:
                    if client.get("/health").status_code == 200:
                        return (time.perf_counter() - start) * 1000
                except httpx.TransportError:
                    pass
                if time.perf_counter() - start > 60:
                    raise RuntimeError("schemadoc serve did not answer within 60 s")
                time.sleep(0.005)
    finally:
        process.terminate()
        process.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=20, help="builds timed per figure (default 20)")
    parser.add_argument("--serves", type=int, default=3, help="`schemadoc serve` start-ups timed (default 3; 0: none)")
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per /health poll otherwise

    with tempfile.TemporaryDirectory(prefix="schemadoc-startup-") as tmp:
        root = Path(tmp)

        def settings(run: int) -> Settings:
            return Settings(schema_path=SCHEMA, storage_dir=root / f"s{run}")

        services = [create_service(settings(run)) for run in range(args.runs)]
        build_app(services[0], settings(0))  # imports and first-call caches of the libraries, outside the figures
        rows = [
            _row("service (`create_service`: schema, store)",
                 _timed(lambda run: create_service(settings(args.runs + run)), args.runs)),
            _row("MCP server, cold", _timed(lambda run: mcp.build_mcp_server(services[run]), args.runs,
                                            _drop_descriptions)),
            _row("MCP server, warm", _timed(lambda run: mcp.build_mcp_server(services[run]), args.runs)),
            _row("REST app (MCP server included), cold",
                 _timed(lambda run: build_app(services[run], settings(run)), args.runs, _drop_descriptions)),
            _row("REST app (MCP server included), warm",
                 _timed(lambda run: build_app(services[run], settings(run)), args.runs)),
            _row("REST app, cold, and its first REST response",
                 _timed(lambda run: _first_request(build_app(services[run], settings(run))), args.runs,
                        _drop_descriptions)),
            _row("REST app, warm, and its first REST response",
                 _timed(lambda run: _first_request(build_app(services[run], settings(run))), args.runs)),
        ]
        print(f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}\n")
        print("| build | median ms | min ms | runs |\n|---|---|---|---|")
        print("\n".join(rows))
        if args.serves:
            serves = [_serve_once(root / f"serve{n}") for n in range(args.serves)]
            print(_row("`schemadoc serve` to the first /health", serves))


if __name__ == "__main__":
    main()
