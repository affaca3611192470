"""A real server under a 64 MiB memory budget serves documents totalling ten times that.

Every answer is checked against what was stored, and the server's resident set size (``VmRSS``
and its peak ``VmHWM`` from ``/proc``) stays within the budget plus a stated fixed overhead:

- the server's own RSS before it holds any document (interpreter, libraries, schema), measured
  when it starts;
- one document in flight beside the budget, at most :data:`IN_FLIGHT_PER_DOCUMENT_BYTE` bytes
  per byte of the largest document (the request or file bytes, the parsed content, the answer,
  the snapshotter serialising one document, and the allocator's arenas not yet returned):
  measured 8-12 with 2 MiB books (peaks 16-23 MiB above baseline + budget), bounded here at 20.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_server import BOOK_SCHEMA, Server

from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.files import FileDocumentStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from generate import make_book, mid_paragraph_path

pytestmark = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads RSS from /proc (Linux)")

MIB = 1 << 20
BUDGET = 64 * MIB
DOCUMENT_MIB = 2
DOCUMENTS = 320  # 640 MiB of JSON: ten times the budget
IN_FLIGHT_PER_DOCUMENT_BYTE = 20


def status_mib(pid: int, field: str) -> float:
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def stored_books(storage: Path) -> tuple[list[str], str, int]:
    """DOCUMENTS books written through the service in this process (no server memory involved)."""
    service = DocumentService(load_schema(BOOK_SCHEMA), FileDocumentStore(storage), memory_budget=BUDGET)
    service.open()
    book = make_book(DOCUMENT_MIB)
    leaf = mid_paragraph_path(book) + "/text"
    ids = []
    for number in range(DOCUMENTS):
        doc_id, *_ = service.create_document()
        service.update_node(doc_id, "", {**book, "title": f"Book {number:04d}"}, 1)
        ids.append(doc_id)
    size = service.read_document(ids[0])[1].content_size_bytes
    service.close()
    return ids, leaf, size


def test_a_server_under_a_small_budget_serves_ten_times_its_budget_correctly_within_bounded_memory(
        tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    ids, leaf, size = stored_books(storage)
    assert DOCUMENTS * size >= 10 * BUDGET
    env_budget = os.environ.pop("MEMORY_BUDGET", None)
    # no semantic ranking: its first start over books stored without it would embed all 320 of them
    server = Server(storage, tmp_path / "logs", extra_args=("--memory-budget", "64MiB"),
                    settings={"SEMANTIC_SEARCH": "false"})
    try:
        baseline = status_mib(server.process.pid, "VmRSS")
        bound = baseline + (BUDGET + IN_FLIGHT_PER_DOCUMENT_BYTE * size) / MIB
        peaks: list[float] = []
        with httpx.Client(base_url=f"{server.url}/api/v1", timeout=60) as client:
            def read(doc_id: str, path: str) -> Any:
                answer = client.get(f"/documents/{doc_id}", params={"path": path})
                assert answer.status_code == 200, answer.text
                return answer.json()["node_content"]

            for turn in range(2):  # every document twice: the first pass loads, the second reloads evicted ones
                for number, doc_id in enumerate(ids):
                    assert read(doc_id, "/title") == f"Book {number:04d}"
                    if number % 40 == turn:  # a leaf write on some, read back
                        version = client.get(f"/documents/{doc_id}", params={"path": "/title"}).headers["etag"]
                        written = client.put(f"/documents/{doc_id}", params={"path": leaf},
                                             json={"node_data": f"written {turn}", "version": int(version.strip('"'))})
                        assert written.status_code == 200, written.text
                        assert read(doc_id, leaf) == f"written {turn}"
                    if number % 20 == 0:
                        peaks.append(status_mib(server.process.pid, "VmRSS"))
            for number, doc_id in enumerate(ids):  # what was written survived every eviction
                expected = f"written {1 if number % 40 == 1 else 0}" if number % 40 in (0, 1) else None
                if expected is not None:
                    assert read(doc_id, leaf) == expected
        peak = status_mib(server.process.pid, "VmHWM")
        print(f"baseline {baseline:.0f} MiB, peak {peak:.0f} MiB, bound {bound:.0f} MiB, "
              f"document {size / MIB:.1f} MiB, RSS samples {min(peaks):.0f}-{max(peaks):.0f} MiB")
        assert peak <= bound, f"peak RSS {peak:.0f} MiB over {bound:.0f} MiB (baseline {baseline:.0f} MiB)"
    finally:
        server.stop()
        if env_budget is not None:
            os.environ["MEMORY_BUDGET"] = env_budget
