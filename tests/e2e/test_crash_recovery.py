"""kill -9 at random moments: every acknowledged write survives, every document validates.

A writer process appends paragraphs to a few documents as fast as it can and prints one line
per acknowledged write. The test kills it with SIGKILL at a random moment (also during its
start-up recovery, and, with lazy snapshots, while background snapshots are being written),
reopens the storage directory with a fresh engine, and checks that every acknowledged version
is there, that the journal is contiguous, that the snapshot equals the journal replayed up to
its version, that the served document equals the whole journal replayed, and that every
document validates. ``make crash`` runs 1,000 kills (``SCHEMADOC_CRASH_KILLS``).
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
from schemadoc.snapshotter import SnapshotPolicy
from schemadoc.storage.files import FileDocumentStore

policy = (SnapshotPolicy(mode="lazy", inline_below_bytes=0, lag_versions=4, interval_seconds=0.02)
          if sys.argv[3] == "lazy" else SnapshotPolicy(mode="every-write"))
service = DocumentService(load_schema(sys.argv[1]), FileDocumentStore(sys.argv[2]), snapshot_policy=policy)
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

ROUNDS = int(os.environ.get("SCHEMADOC_CRASH_ROUNDS", "8"))


def _run_and_kill(storage: Path, rng: random.Random, policy: str) -> dict[str, int]:
    process = subprocess.Popen(
        [sys.executable, "-c", WRITER, str(BOOK), str(storage), policy],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )
    acked: dict[str, int] = {}
    assert process.stdout is not None
    deadline = time.monotonic() + 30
    if rng.random() < 0.2:  # during start-up: imports, recovery, loading (replaying journal tails)
        time.sleep(rng.uniform(0.2, 0.8))
        first = b""
    else:  # wait until the writer is really writing, then kill it at a random moment
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
        snapshot_version = orjson.loads((storage / f"{doc_id}.meta.json").read_bytes())["snapshot_version"]
        snapshot = orjson.loads((storage / f"{doc_id}.json").read_bytes())  # never torn: it parses
        if replay:  # an independent RFC 6902 implementation rebuilds the snapshot and the served state
            replayed: list[object] = []
            for line in lines:
                replayed.append(jsonpatch.apply_patch(replayed[-1] if replayed else {}, orjson.loads(line)["patch"]))
            assert replayed[snapshot_version - 1] == snapshot
            assert replayed[-1] == content
        paragraphs = content["chapters"][0]["sections"][0]["paragraphs"] if content["chapters"] else []
        texts = {p["text"] for p in paragraphs}
        # every acknowledged paragraph write of this document is present
        assert all(f"p{v}" in texts for v in range(3, version + 1)), (doc_id, version, sorted(texts))


def _kill_repeatedly(storage: Path, rounds: int, policy: str, *, replay_every: int) -> tuple[int, int]:
    """``rounds`` kills; returns (kills, acknowledged writes). Fails at the first lost write."""
    rng = random.Random(int(os.environ.get("SCHEMADOC_CRASH_SEED", "20261122")))
    acked_total: dict[str, int] = {}
    writes = 0
    for round_number in range(1, rounds + 1):
        acked = _run_and_kill(storage, rng, policy)
        for doc_id, version in acked.items():
            writes += max(0, version - acked_total.get(doc_id, 0))
            acked_total[doc_id] = max(acked_total.get(doc_id, 0), version)
        _check_storage(storage, acked_total, replay=round_number == rounds or round_number % replay_every == 0)
    assert sum(acked_total.values()) > rounds // 2  # the writer really wrote between kills
    return rounds, writes


@pytest.mark.parametrize("policy", ["every-write", "lazy"])
def test_acknowledged_writes_survive_sigkill_at_random_moments(tmp_path: Path, policy: str) -> None:
    _kill_repeatedly(tmp_path, ROUNDS, policy, replay_every=ROUNDS)


@pytest.mark.slow
@pytest.mark.timeout(7200)
def test_many_more_kills(tmp_path: Path) -> None:
    """``make crash``: half the kills with every-write snapshots, half with background ones."""
    kills = int(os.environ.get("SCHEMADOC_CRASH_KILLS", "1000"))
    total_kills = total_writes = 0
    for policy in ("every-write", "lazy"):
        done, writes = _kill_repeatedly(tmp_path / policy, kills // 2, policy, replay_every=10)
        total_kills += done
        total_writes += writes
    print(f"\ncrash: {total_kills} kills, {total_writes} acknowledged writes, 0 lost")
