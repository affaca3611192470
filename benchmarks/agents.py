"""Agents on large documents: figures for the MCP tools on 10 and 100 MiB books (not pass/fail).

Each tool is called through the MCP server's tool-call path (argument checks, the service, the
budget, the JSON result) in process, so transport costs are left out. Printed: the median and
the worst of the runs in milliseconds, the result size in bytes, and the target.

    python benchmarks/agents.py [--sizes 10 100] [--runs 15] [--search-docs 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anyio
import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from generate import make_book

from schemadoc.interfaces.mcp_door.server import build_mcp_server
from schemadoc.operations.budget import MCP_RESULT_BUDGET_BYTES
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore

SCHEMA = Path(__file__).resolve().parents[1] / "schemas" / "book.schema.json"


async def _measure(runs: int, call: Callable[[], Awaitable[Any]]) -> tuple[float, float, int]:
    times: list[float] = []
    size = 0
    for _ in range(runs):
        start = time.perf_counter()
        result = await call()
        times.append((time.perf_counter() - start) * 1000)
        size = len(result.content[0].text.encode())
        assert not result.is_error, result.content[0].text[:500]
    return statistics.median(times), max(times), size


def _row(name: str, figures: tuple[float, float, int], target: str) -> None:
    median, worst, size = figures
    within = "yes" if size <= MCP_RESULT_BUDGET_BYTES else "NO"
    print(f"| {name} | {median:.1f} | {worst:.1f} | {size:,} | {within} | {target} |")


async def _document(size_mib: int, runs: int) -> None:
    service = DocumentService(load_schema(SCHEMA), MemoryDocumentStore())
    service.open()
    doc_id, _, meta, _ = service.create_document()
    book = make_book(size_mib)
    version = service.update_node(doc_id, "/", book, meta.version).version
    server = build_mcp_server(service)
    print(f"\n### {size_mib} MiB book ({len(orjson.dumps(book)):,} bytes)\n")
    print("| call | median ms | worst ms | result bytes | within budget | target |")
    print("|---|---|---|---|---|---|")

    def tool(name: str, **arguments: Any) -> Callable[[], Awaitable[Any]]:
        return lambda: server.call_tool(name, {"doc_id": doc_id, **arguments})

    start = time.perf_counter()
    first = await server.call_tool("document_read_node", {"doc_id": doc_id, "node_path": "/"})
    print(f"| first read of / after loading (sizes measured once) | {(time.perf_counter() - start) * 1000:.1f} "
          f"| | {len(first.content[0].text):,} | | |")
    _row("document_read_node / (default budget)", await _measure(runs, tool("document_read_node", node_path="/")),
         "<= 50 ms")
    _row("document_read_node /chapters (default budget)",
         await _measure(runs, tool("document_read_node", node_path="/chapters")), "")
    _row("document_outline / depth 2", await _measure(runs, tool("document_outline", node_path="/", depth=2)),
         "<= 20 ms")
    _row("document_next_incomplete / limit 10",
         await _measure(runs, tool("document_next_incomplete", node_path="/", limit=10)),
         "<= 50 ms at 10 MiB")
    _row("document_stats", await _measure(max(3, runs // 5), tool("document_stats")), "")
    _row("document_render /chapters/0", await _measure(runs, tool("document_render", node_path="/chapters/0")), "")

    times: list[float] = []
    for index in range(runs):  # a leaf write, then the root read that must re-measure the changed path
        version = service.update_node(doc_id, "/chapters/1/sections/0/paragraphs/0/text", f"Edit {index}.",
                                      version).version
        start = time.perf_counter()
        await server.call_tool("document_read_node", {"doc_id": doc_id, "node_path": "/"})
        times.append((time.perf_counter() - start) * 1000)
    print(f"| document_read_node / right after a leaf write | {statistics.median(times):.1f} | {max(times):.1f} "
          f"| | | <= 50 ms |")
    _row("document_update_node /chapters (dry run, echo over budget)",
         await _measure(max(3, runs // 5), tool("document_update_node", node_path="/chapters",
                                                node_data=book["chapters"], version=version, dry_run=True)), "")


async def _search(documents: int, runs: int) -> None:
    service = DocumentService(load_schema(SCHEMA), MemoryDocumentStore())
    service.open()
    for index in range(documents):
        doc_id, _, meta, _ = service.create_document()
        service.update_node(doc_id, "/", make_book(1, seed=index + 1), meta.version)
    server = build_mcp_server(service)
    print(f"\n### Search over {documents} documents of 1 MiB\n")
    print("| call | median ms | worst ms | result bytes | within budget | target |")
    print("|---|---|---|---|---|---|")
    for query, what in (("lighthouse", "a common word"), ("zebra crossing", "absent"),
                        ("Chapter 1:", "in a few titles")):
        _row(f"document_search {query!r} ({what}), limit 20",
             await _measure(runs, lambda q=query: server.call_tool("document_search", {"query": q, "limit": 20})),
             "<= 1 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--search-docs", type=int, default=100)
    args = parser.parse_args()
    print(f"## Agents on large documents (budget {MCP_RESULT_BUDGET_BYTES:,} bytes; load {os.getloadavg()[0]:.2f})")
    for size in args.sizes:
        anyio.run(_document, size, args.runs)
    if args.search_docs:
        anyio.run(_search, args.search_docs, max(3, args.runs // 3))


if __name__ == "__main__":
    main()
