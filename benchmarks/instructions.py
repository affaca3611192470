"""Instructions per request, counted by callgrind: figures that do not move with the machine's load.

Not a test: it prints figures. Wall-clock figures (``rest.py``) move by several per cent between
runs on a shared machine, and by 1-2 % with the order in which two servers are listed; a count of
executed instructions is the same from run to run within about 1 %, whatever else runs. Each
scenario runs in a child process under ``valgrind --tool=callgrind --instr-atstart=no``: start-up,
imports and warm-up are not counted; instrumentation is switched on (``callgrind_control -i on``)
for exactly the timed requests, then off. Snapshots are left to the end
(``snapshot_interval_seconds`` of an hour); writes still count the worker thread and the journal's
background work, so they vary by about 3 %; the read within 0.2 %. Needs valgrind (Debian's
``valgrind`` package).

    .venv/bin/python benchmarks/instructions.py                                  # this checkout
    .venv/bin/python benchmarks/instructions.py --tree before=../old/src --tree after=src

Scenarios, in process (no socket, so only our code and the libraries are counted):

- ``small read``: ``GET /api/v1/documents/{id}?path=/title`` through the whole ASGI application
  (access checks, body limits, the REST lane, the catalogue, the service);
- ``small write``: ``PUT`` of ``/title`` through the same application (the worker thread included);
- ``leaf update, 10 MB book``: ``DocumentService.update_node`` of the middle paragraph's text
  of a generated 10 MiB book (validation, journal, memory budget; no HTTP).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SCHEMA = REPO / "schemas" / "book.schema.json"
# no background snapshot inside the counted requests: one of a 10 MiB book outweighs 200 leaf updates
_SETTINGS = {"schema_path": str(SCHEMA), "snapshot_interval_seconds": 3600}
SCENARIOS = {"read": ("small read", 500), "write": ("small write", 300), "leaf": ("leaf update, 10 MB book", 200)}


# -- the child: one scenario, instrumented only while its requests run ---------------------------------


def _wait_for(path: Path) -> None:
    while not path.exists():
        time.sleep(0.05)


def _service(storage: str) -> tuple[Any, Any]:
    from schemadoc.config import load_settings
    from schemadoc.interfaces.app import create_service

    settings = load_settings(_SETTINGS | {"storage_dir": storage}, {})
    _log_as_serve_does(settings)
    return settings, create_service(settings)


def _log_as_serve_does(settings: Any) -> None:
    """Logging configured as ``schemadoc serve`` configures it (its handler, its level, a line per request),
    written to ``/dev/null``: the request lines a server writes are counted, and no library's own handler (the
    MCP SDK installs a Rich one when nothing is configured) stands in for it."""
    from schemadoc.interfaces.cli.common import configure_logging

    shown, sys.stderr = sys.stderr, open(os.devnull, "w")  # noqa: SIM115 - the handler keeps it open
    try:
        configure_logging(settings.log_level_number)
    finally:
        sys.stderr = shown


def _http_scenario(kind: str, n: int, sync: Path, storage: str) -> None:
    from schemadoc.interfaces.app import build_app

    settings, service = _service(storage)
    app = build_app(service, settings)

    async def call(method: str, path: str, query: bytes = b"", body: bytes = b"") -> list[dict[str, Any]]:
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
                 "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": query,
                 "root_path": "", "headers": [(b"host", b"127.0.0.1:8080"), (b"content-type", b"application/json")],
                 "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 8080), "state": {}}
        await app(scope, receive, send)
        if sent[0]["status"] >= 300:
            raise SystemExit(f"{method} {path} -> {sent[0]['status']}: {sent[1].get('body', b'')[:300]!r}")
        return sent

    async def requests(doc_id: str, version: int, count: int) -> int:
        path = f"/api/v1/documents/{doc_id}"
        for i in range(count):
            if kind == "read":
                await call("GET", path, b"path=/title")
            else:
                body = b'{"node_data": "title %d", "version": %d}' % (i, version)
                await call("PUT", path, b"path=/title", body)
                version += 1
        return version

    async def main() -> None:
        into: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        out: asyncio.Queue[dict[str, Any]] = asyncio.Queue()
        await into.put({"type": "lifespan.startup"})
        lifespan = asyncio.create_task(app({"type": "lifespan", "asgi": {"version": "3.0"}, "state": {}},
                                           into.get, out.put))
        await out.get()
        import orjson

        created = orjson.loads((await call("POST", "/api/v1/documents"))[1]["body"])
        version = await requests(created["doc_id"], created["version"], 20)  # warm-up
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, _wait_ready, sync)  # the parent switches instrumentation on
        await requests(created["doc_id"], version, n)
        await loop.run_in_executor(None, _wait_done, sync)
        await into.put({"type": "lifespan.shutdown"})
        await out.get()
        await lifespan

    asyncio.run(main())
    service.close()


def _wait_ready(sync: Path) -> None:
    """Tell the parent the counted part begins; return once instrumentation is on."""
    (sync / "ready").touch()
    _wait_for(sync / "go")


def _wait_done(sync: Path) -> None:
    """Tell the parent the counted part is over; return once instrumentation is off."""
    (sync / "done").touch()
    _wait_for(sync / "end")


def _leaf_scenario(n: int, sync: Path, storage: str) -> None:
    sys.path.insert(0, str(HERE))
    from generate import make_book, mid_paragraph_path

    _settings, service = _service(storage)
    doc_id, _content, meta, _report = service.create_document()
    book = make_book(10.0)
    leaf = mid_paragraph_path(book) + "/text"
    version = service.update_node(doc_id, "/", book, meta.version).version
    for i in range(5):  # warm-up
        version = service.update_node(doc_id, leaf, f"warm-up {i}", version).version

    _wait_ready(sync)
    for i in range(n):
        version = service.update_node(doc_id, leaf, f"paragraph {i}", version).version
    _wait_done(sync)
    service.close()


def child(kind: str, n: int, sync: Path) -> None:
    storage = tempfile.mkdtemp(prefix="schemadoc-instructions-")
    try:
        if kind == "leaf":
            _leaf_scenario(n, sync, storage)
        else:
            _http_scenario(kind, n, sync, storage)
    finally:
        shutil.rmtree(storage, ignore_errors=True)


# -- the parent: one child per tree and scenario -------------------------------------------------------


def count(tree: Path | None, kind: str, n: int) -> int:
    """Instructions per request of scenario ``kind`` with the source tree ``tree`` (None: this checkout)."""
    with tempfile.TemporaryDirectory(prefix="schemadoc-callgrind-") as work:
        sync, out = Path(work), Path(work) / "callgrind.out"
        env = dict(os.environ)
        if tree is not None:
            env["PYTHONPATH"] = os.pathsep.join([str(tree), *filter(None, [env.get("PYTHONPATH")])])
        with (sync / "log").open("wb") as log:
            process = subprocess.Popen(
                ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}",
                 sys.executable, __file__, "--child", kind, str(n), str(sync)],
                env=env, stdout=subprocess.DEVNULL, stderr=log)
        for step, switch in (("ready", "on"), ("done", "off")):
            while not (sync / step).exists():
                if process.poll() is not None:
                    raise SystemExit(f"the {kind} scenario stopped: see\n{(sync / 'log').read_text()[-2000:]}")
                time.sleep(0.2)
            subprocess.run(["callgrind_control", "-i", switch, str(process.pid)], check=True,
                           stdout=subprocess.DEVNULL)
            (sync / ("go" if switch == "on" else "end")).touch()
        process.wait()
        if process.returncode != 0:
            raise SystemExit(f"the {kind} scenario failed: see\n{(sync / 'log').read_text()[-2000:]}")
        total = 0
        for dump in sync.glob("callgrind.out*"):
            lines = dump.read_text(errors="replace").splitlines()
            total += max((int(line.split()[1]) for line in lines if line.startswith(("summary:", "totals:"))),
                         default=0)
        return total // n


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", action="append", default=[], metavar="LABEL=SRC",
                        help="a source tree to count (put first on PYTHONPATH); empty SRC: this checkout")
    parser.add_argument("--only", choices=sorted(SCENARIOS), action="append", help="run only these scenarios")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.child[0], int(args.child[1]), Path(args.child[2]))
        return 0
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        print("valgrind is not installed (Debian: apt-get install valgrind)", file=sys.stderr)
        return 2
    trees = [(label, Path(src).resolve() if src else None)
             for label, _, src in (tree.partition("=") for tree in args.tree or ["this="])]
    kinds = args.only or list(SCENARIOS)
    print("| scenario | requests | " + " | ".join(label for label, _ in trees) + " |")
    print("|---|---|" + "---|" * len(trees))
    for kind in kinds:
        title, n = SCENARIOS[kind]
        figures = [count(tree, kind, n) for _, tree in trees]
        cells = " | ".join(f"{value:,}" + (f" ({value / figures[0]:.3f}x)" if i else "")
                           for i, value in enumerate(figures))
        print(f"| {title} | {n} | {cells} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
