"""kill -9 at random moments: every acknowledged write survives, every document validates.

A writer process appends paragraphs to a few documents as fast as it can and prints one line
per acknowledged write. The test kills it with SIGKILL at a random moment, reopens the storage
directory with a fresh engine (start-up recovery), and checks that every acknowledged version is
there, that the snapshot equals the journal replay, and that every document validates.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import jsonpatch
import orjson
import pytest

from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.files import FileDocumentStore

BOOK = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"

WRITER = r"""
import sys
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.files import FileDocumentStore

service = DocumentService(load_schema(sys.argv[1]), FileDocumentStore(sys.argv[2]))
service.open()
listing = service.list_documents(limit=1000)
doc_ids = [m.doc_id for m in listing.documents]
while len(doc_ids) < 3:
    doc_id, *_ = service.create_document()
    print(f"ACK {doc_id} 1", flush=True)
    doc_ids.append(doc_id)
for doc_id in doc_ids:
    if not service.read_node(doc_id, "/chapters").node:
        version = service.version_of(doc_id)
        chapter = {"id": "ch-1", "title": "One", "sections": [{"title": "S", "paragraphs": [], "sections": []}]}
        result = service.create_node(doc_id, "/chapters/-", chapter, version)
        print(f"ACK {doc_id} {result.version}", flush=True)
n = 0
while True:
    doc_id = doc_ids[n % len(doc_ids)]
    version = service.version_of(doc_id)
    result = service.create_node(doc_id, "/chapters/0/sections/0/paragraphs/-", {"text": f"p{version + 1}"}, version)
    print(f"ACK {doc_id} {result.version}", flush=True)
    n += 1
"""

ROUNDS = int(os.environ.get("SCHEMADOC_CRASH_ROUNDS", "12"))


def _run_and_kill(storage: Path, rng: random.Random) -> dict[str, int]:
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(BOOK), str(storage)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    acked: dict[str, int] = {}
    assert process.stdout is not None
    deadline = time.monotonic() + 30
    # wait until the writer is really writing, then kill it at a random moment
    first = process.stdout.readline()
    assert first.startswith(b"ACK"), process.stderr.read() if process.stderr else first
    time.sleep(rng.uniform(0.0, 0.4))
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
    assert time.monotonic() < deadline
    for line in [first, *process.stdout.read().splitlines()]:
        if line.startswith(b"ACK "):
            _, doc_id, version = line.decode().split()
            acked[doc_id] = max(acked.get(doc_id, 0), int(version))
    return acked


def _check_storage(storage: Path, acked: dict[str, int], *, replay: bool) -> None:
    schema = load_schema(BOOK)
    service = DocumentService(schema, FileDocumentStore(storage))
    report = service.open()
    assert not report.corrupt, report.corrupt
    assert not list(storage.glob("*.tmp"))
    validator = schema.make_validator()
    for doc_id, version in acked.items():
        content, meta = service.read_document(doc_id)
        assert meta.version >= version, f"{doc_id}: acknowledged v{version}, found v{meta.version}"
        assert validator.is_valid(content)
        lines = (storage / f"{doc_id}.journal.jsonl").read_bytes().splitlines()
        assert [orjson.loads(line)["version"] for line in lines] == list(range(1, meta.version + 1))
        if replay:  # an independent RFC 6902 implementation rebuilds the snapshot exactly
            replayed = None
            for line in lines:
                replayed = jsonpatch.apply_patch(replayed if replayed is not None else {}, orjson.loads(line)["patch"])
            assert replayed == content
        paragraphs = content["chapters"][0]["sections"][0]["paragraphs"] if content["chapters"] else []
        texts = {p["text"] for p in paragraphs}
        # every acknowledged paragraph write of this document is present
        assert all(f"p{v}" in texts for v in range(3, version + 1)), (doc_id, version, sorted(texts))


def test_acknowledged_writes_survive_sigkill_at_random_moments(tmp_path: Path) -> None:
    rng = random.Random(int(os.environ.get("SCHEMADOC_CRASH_SEED", "20261122")))
    acked_total: dict[str, int] = {}
    for round_number in range(1, ROUNDS + 1):
        acked = _run_and_kill(tmp_path, rng)
        for doc_id, version in acked.items():
            acked_total[doc_id] = max(acked_total.get(doc_id, 0), version)
        _check_storage(tmp_path, acked_total, replay=round_number == ROUNDS)
    assert sum(acked_total.values()) > ROUNDS  # the writer really wrote between kills


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_many_more_kills(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys.modules[__name__], "ROUNDS", 100)
    test_acknowledged_writes_survive_sigkill_at_random_moments(tmp_path)
