"""What the request limits cost a write: the one walk of a written value beside the write itself.

Not a test: it prints figures and writes them as Markdown tables to
``benchmarks/results/limits.md``. For book content of several sizes (``generate.py``), written
as one ``node_data`` (the chapters of a book, at ``/chapters``):

* ``scan``: ``DocumentService.scan_argument``, the one walk every limit reads (depth, string and
  member-name lengths, lone surrogates), as the MCP door makes it: ``orjson.dumps`` first (the
  cheap exits), then the walk when the value's JSON is longer than ``max_string_length``;
* ``walk``: the walk alone (what a value bigger than the limit always pays);
* ``write``: ``DocumentService.update_node`` of the same value (compile, apply, validate,
  journal, fsync), its own scan included;
* whole writes through the doors, at 1 and 10 MiB by default: a REST ``PUT /documents/{id}``
  (httpx over ASGI, from the request bytes to the response bytes) and an MCP
  ``document_update_node`` (the SDK's client in process), each replacing the chapters of a book
  of that size with changed ones;
* a subscriber slot taken and given back (``SubscriberSlots``), in microseconds.

    .venv/bin/python benchmarks/limits.py                  # 0.1, 1 and 10 MiB; doors at 1 and 10 MiB
    .venv/bin/python benchmarks/limits.py --sizes 0.1 1 --door-sizes 1 --runs 5

Median and minimum over ``--runs`` runs, the actions timed in turn within each run, so a loaded
machine shifts them alike.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import httpx
import orjson
from common import BOOK_SCHEMA, HERE
from generate import make_book
from mcp import Client

from schemadoc.config import Settings
from schemadoc.interfaces.app import build_app, create_service
from schemadoc.interfaces.http.subscribers import SubscriberSlots
from schemadoc.interfaces.mcp_door.server import build_mcp_server
from schemadoc.ops import limits
from schemadoc.ops.limits import MAX_STRING_LENGTH
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.files import FileDocumentStore

Timing = tuple[float, float]


def interleaved_ms(actions: list[Callable[[], Any]], runs: int) -> list[Timing]:
    """(median, minimum) in ms of each action, timed in turn within each run (so load hits all alike)."""
    samples: list[list[float]] = [[] for _ in actions]
    for _ in range(runs):
        for action, taken in zip(actions, samples, strict=True):
            start = time.perf_counter()
            action()
            taken.append((time.perf_counter() - start) * 1000)
    return [(statistics.median(taken), min(taken)) for taken in samples]


def measure(service: DocumentService, chapters: list[Any], runs: int) -> list[Timing]:
    """The scan, the walk alone and a write of ``chapters`` as one node."""
    def write() -> None:
        doc_id, _, meta, _ = service.create_document()
        service.update_node(doc_id, "/chapters", chapters, meta.version)

    return interleaved_ms([lambda: service.scan_argument(chapters, surrogates=True),
                           lambda: limits._walk(chapters, MAX_STRING_LENGTH, False), write], runs)


def _changed(chapters: list[Any], mark: str) -> list[Any]:
    return [{**chapter, "title": f"{chapter['title']} {mark}"} for chapter in chapters]


async def measure_doors(size: float, runs: int) -> tuple[int, Timing, Timing]:
    """JSON bytes of the chapters, then a whole write of them through REST and through MCP."""
    book = make_book(size)
    variants = [_changed(book["chapters"], mark) for mark in ("a", "b")]
    bodies = [orjson.dumps({"node_data": chapters}) for chapters in variants]
    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(schema_path=BOOK_SCHEMA, storage_dir=Path(tmp))
        service = create_service(settings)
        try:
            app = build_app(service, settings)
            server = build_mcp_server(service)
            doc_id, _, meta, _ = service.create_document()
            version = service.update_node(doc_id, "/", book, meta.version).version
            rest_ms: list[float] = []
            mcp_ms: list[float] = []
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://bench") as http, \
                        Client(server) as mcp:
                    for run in range(runs):
                        body = bodies[run % 2][:-1] + b',"version":%d}' % version
                        start = time.perf_counter()
                        response = await http.put(f"/api/v1/documents/{doc_id}", params={"path": "/chapters"},
                                                  content=body, headers={"content-type": "application/json"})
                        await response.aread()
                        rest_ms.append((time.perf_counter() - start) * 1000)
                        assert response.status_code == 200, response.text[:500]
                        version = response.json()["version"]

                        fresh = orjson.loads(bodies[(run + 1) % 2])["node_data"]  # as a server parses it
                        arguments = {"doc_id": doc_id, "node_path": "/chapters", "node_data": fresh,
                                     "version": version}
                        start = time.perf_counter()
                        result = await mcp.call_tool("document_update_node", arguments)
                        mcp_ms.append((time.perf_counter() - start) * 1000)
                        assert not result.is_error and result.structured_content is not None, str(result)[:500]
                        version = result.structured_content["version"]
        finally:
            service.close()
    return (len(orjson.dumps(variants[0])), (statistics.median(rest_ms), min(rest_ms)),
            (statistics.median(mcp_ms), min(mcp_ms)))


def _ms(timing: Timing, digits: int = 1) -> str:
    return f"{timing[0]:.{digits}f} ({timing[1]:.{digits}f}) ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=float, nargs="+", default=[0.1, 1.0, 10.0], help="sizes in MiB")
    parser.add_argument("--door-sizes", type=float, nargs="*", default=[1.0, 10.0],
                        help="sizes in MiB of the whole writes through REST and MCP")
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "limits.md")
    args = parser.parse_args()
    logging.getLogger("httpx").setLevel(logging.WARNING)  # a line per request otherwise

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        service = DocumentService(load_schema(BOOK_SCHEMA), FileDocumentStore(Path(tmp)))
        service.open()
        try:
            for size in args.sizes:
                chapters = make_book(size)["chapters"]
                json_bytes = len(orjson.dumps(chapters))
                scan, walk, written = measure(service, chapters, args.runs)
                rows.append((size, json_bytes, len(chapters), scan, walk, written))
                print(f"{size:>5} MiB ({json_bytes:,} bytes, {len(chapters)} chapters): scan {_ms(scan, 2)}, "
                      f"walk {_ms(walk, 2)}, write {_ms(written)}: the scan is {100 * scan[0] / written[0]:.1f}% "
                      "of the write", flush=True)
        finally:
            service.close()

    doors = []
    for size in args.door_sizes:
        json_bytes, rest, mcp = anyio.run(measure_doors, size, args.runs)
        doors.append((size, json_bytes, rest, mcp))
        print(f"{size:>5} MiB ({json_bytes:,} bytes) written whole: REST {_ms(rest)}, MCP {_ms(mcp)}", flush=True)

    slots = SubscriberSlots()
    start = time.perf_counter()
    rounds = 100_000
    for _ in range(rounds):
        slots.acquire("01ARZ3NDEKTSV4RRFFQ69G5FAV")()
    slot_us = (time.perf_counter() - start) / rounds * 1e6
    print(f"subscriber slot taken and given back: {slot_us:.2f} µs")

    load = os.getloadavg()[0]
    lines = [
        "# Request limits: what they cost a write",
        "",
        f"`benchmarks/limits.py`, median (minimum) of {args.runs} interleaved runs, load average {load:.1f} on "
        f"{os.cpu_count()} cores. `scan` is `DocumentService.scan_argument`, the one walk every limit on a "
        f"written value reads (depth, strings and member names at the default {MAX_STRING_LENGTH:,} characters, "
        "lone surrogates), as the MCP door makes it (`orjson.dumps` for the cheap exits, then the walk); `walk` "
        "the walk alone; `write` an `update_node` of the same value at `/chapters` (its scan included).",
        "",
        "| size | JSON bytes | chapters | scan | walk | write | scan / write |",
        "|---|---|---|---|---|---|---|",
        *(f"| {size} MiB | {json_bytes:,} | {chapters} | {_ms(scan, 2)} | {_ms(walk, 2)} | {_ms(written)} | "
          f"{100 * scan[0] / written[0]:.1f}% |" for size, json_bytes, chapters, scan, walk, written in rows),
        "",
    ]
    if doors:
        lines += [
            "A whole write through each door: the chapters of a book of that size replaced by changed ones, "
            "REST `PUT /documents/{id}?path=/chapters` over httpx's ASGI transport (request bytes to response "
            "bytes; the response carries the node and the patch) and MCP `document_update_node` through the "
            "SDK's client in process (the result fitted to the 40,000-byte budget).",
            "",
            "| size | JSON bytes | REST write | MCP write |",
            "|---|---|---|---|",
            *(f"| {size} MiB | {json_bytes:,} | {_ms(rest)} | {_ms(mcp)} |" for size, json_bytes, rest, mcp in doors),
            "",
        ]
    lines += [f"A subscriber slot taken and given back: {slot_us:.2f} µs.", ""]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines), encoding="utf-8")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
