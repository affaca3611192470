"""kill -9 of a real ``schemadoc serve`` process at random moments: every acknowledged write survives.

Each round starts ``schemadoc serve --transport http`` on the storage directory the previous
round's server was killed on (cold, ``python -m schemadoc serve``, for every start-up kill and
every 10th round; otherwise forked from a process that has already imported the server, which
then runs the same command: see ``preloaded_server.py``), and kills it with SIGKILL at one of
these moments:

- ``start-up``: while it starts, preferably while it holds a storage file open (recovery:
  temporaries removed, torn journal tails cut, interrupted snapshot switches completed);
- ``load``: during the first reads after the start, which load each document (its snapshot and
  the journal entries after it);
- ``write``: while clients write over REST (one thread per document, each appending paragraphs);
- ``snapshot`` (lazy snapshots only): as soon as a background snapshot's temporary file is seen.

A write counts as acknowledged when its HTTP response arrived. After each kill, before anything
else touches the directory, the disk is checked as the crash left it: the journal's complete
lines are contiguous versions, every write acknowledged so far is there at its version, and the
snapshot (with the meta a recovery would switch to, if the kill fell between the two renames of
a snapshot switch) equals the journal replayed to its version. After each restart that gets as
far as serving, the served documents validate against the schema, their versions cover every
acknowledged write, and each equals the journal replayed to its version. The replays are
incremental (an independent RFC 6902 implementation, ``jsonpatch``, applies only the entries after
the last verified version), so a round costs the same at the 1st and at the 1,000th kill; the
end of each run replays every journal from scratch and compares, then stops the server cleanly
and checks that its snapshots caught up.

The default suite runs a few kills per snapshot policy; ``make crash`` runs 1,000
(``SCHEMADOC_CRASH_KILLS``), half with every-write snapshots, half with background ones, and
prints how many kills fell in each phase.
"""

from __future__ import annotations

import collections
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import jsonpatch
import orjson
import pytest

from schemadoc.config import ENVIRONMENT
from schemadoc.schema import load_schema

BOOK = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
PRELOADED = Path(__file__).resolve().with_name("preloaded_server.py")
COLD_EVERY = 10  # besides every start-up kill, every 10th round starts ``python -m schemadoc serve`` cold
DOCUMENTS = 3
FILLER_PARAGRAPHS = 1500  # ~120 KB per document from the start, so that snapshots take a while
START_TIMEOUT_SECONDS = 60.0
SERVING = re.compile(rb"serving http://127\.0\.0\.1:(\d+)")
SNAPSHOT_TMP = re.compile(r"^[0-9A-Za-z]{26}\.[0-9a-f]{16}\.(meta\.)?tmp$")
CREATION_TMP = re.compile(r"^[0-9A-Za-z]{26}\.(meta\.)?tmp$")
POLICIES = {
    "every-write": {"SNAPSHOT_POLICY": "every-write"},
    # every snapshot in the background, one started every 4 versions: one is nearly always in flight
    "lazy": {"SNAPSHOT_POLICY": "lazy", "SNAPSHOT_INLINE_BELOW_BYTES": "0", "SNAPSHOT_LAG_VERSIONS": "4",
             "SNAPSHOT_INTERVAL_SECONDS": "1"},
}
PARAGRAPHS = "/chapters/0/sections/0/paragraphs"
CHECKPOINT_EVERY = 256  # the service hands the store the content of every 256th version


def _copy(value: Any) -> Any:
    return orjson.loads(orjson.dumps(value))


@dataclass
class Point:
    """A verified version of a document: where its journal line ends and the content replayed to it."""

    version: int
    offset: int
    line: bytes  # the journal line (with its newline) ending at ``offset``, checked again before replaying past it
    content: Any


@dataclass
class Document:
    doc_id: str
    head: Point  # the newest version a server served and the replay matched
    base: Point  # the newest snapshot version checked on disk (the disk checks' replays start here)
    acked: int = 0  # the newest acknowledged version
    unchecked: dict[int, str] = field(default_factory=dict)  # acknowledged since the last disk check: text
    past: dict[int, bytes] = field(default_factory=dict)  # recent replays at checkpoint versions, until checked
    checkpoints_checked: set[int] = field(default_factory=set)


@dataclass
class Tally:
    kills: int = 0
    writes: int = 0  # acknowledged
    phases: collections.Counter[str] = field(default_factory=collections.Counter)
    tails: int = 0  # kills after which the journal went on past the snapshot (the next start replays it)
    longest_tail: int = 0
    torn: int = 0  # kills that left a partial journal line
    switches: int = 0  # kills between the two renames of a snapshot switch
    checkpoints: int = 0  # history checkpoint files compared with the replay
    restarts_verified: int = 0
    cold_starts: int = 0  # ``python -m schemadoc serve``; the other starts are forked from a preloaded process
    seconds: float = 0.0

    def add(self, other: Tally) -> None:
        for name in ("kills", "writes", "tails", "torn", "switches", "checkpoints", "restarts_verified",
                     "cold_starts", "seconds"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.longest_tail = max(self.longest_tail, other.longest_tail)
        self.phases.update(other.phases)

    def line(self, policy: str) -> str:
        phases = ", ".join(f"{name} {count}" for name, count in sorted(self.phases.items()))
        return (f"{policy}: {self.kills} kills ({phases}), {self.writes} acknowledged writes, 0 lost; "
                f"{self.restarts_verified} restarts verified, {self.cold_starts} cold starts; "
                f"journal past the snapshot after {self.tails} kills "
                f"(up to {self.longest_tail} entries), torn journal tail after {self.torn}, "
                f"between the two renames of a snapshot switch after {self.switches}; "
                f"{self.checkpoints} history checkpoints equal to the replay; {self.seconds:.0f} s")


class Launcher:
    """Forks servers from a process that has already imported them (``preloaded_server.py``)."""

    def __init__(self) -> None:
        self.process = subprocess.Popen([sys.executable, str(PRELOADED)], stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, text=True)

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(orjson.dumps(request).decode() + "\n")
        self.process.stdin.flush()
        answer: dict[str, Any] = orjson.loads(self.process.stdout.readline())
        return answer

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


class Server:
    """One ``schemadoc serve`` on a port it picks itself, stderr to a file: started cold, or forked."""

    def __init__(self, storage: Path, log: Path, policy: str, launcher: Launcher | None) -> None:
        self.storage = storage
        self.log = log
        self.launcher = launcher
        env = {key: value for key, value in os.environ.items() if key not in ENVIRONMENT}
        env.update(POLICIES[policy])
        argv = ["serve", "--transport", "http", "--schema", str(BOOK), "--storage-dir", str(storage),
                "--host", "127.0.0.1", "--port", "0"]
        self.process: subprocess.Popen[bytes] | None = None
        log.write_bytes(b"")  # never the previous server's port
        if launcher is None:
            with log.open("wb") as err:
                self.process = subprocess.Popen([sys.executable, "-m", "schemadoc", *argv], cwd=storage.parent,
                                                env=env, stdout=subprocess.DEVNULL, stderr=err)
            self.pid = self.process.pid
        else:
            self.pid = launcher.ask({"argv": argv, "env": env, "log": str(log)})["pid"]
        self.exit_code: int | None = None
        self.url = ""

    def running(self) -> bool:
        if self.exit_code is not None:
            return False
        if self.process is not None:
            return self.process.poll() is None
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return False
        return stat[stat.rindex(")") + 2] != "Z"

    def serving(self) -> bool:
        """Whether the server has opened its storage and said where it listens (sets ``url``)."""
        if not self.url:
            found = SERVING.search(self.log.read_bytes())
            if found:
                self.url = f"http://127.0.0.1:{int(found.group(1))}"
        return bool(self.url)

    def wait_serving(self) -> str:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not self.serving():
            assert self.running(), f"the server exited: {self.stderr}"
            assert time.monotonic() < deadline, f"the server did not start: {self.stderr}"
            time.sleep(0.005)
        return self.url

    def holds_storage_file(self) -> bool:
        """Whether the process has a file of the storage directory open right now."""
        prefix = str(self.storage) + os.sep
        directory = f"/proc/{self.pid}/fd"
        try:
            names = os.listdir(directory)
        except OSError:
            return False
        for name in names:
            try:
                if os.readlink(f"{directory}/{name}").startswith(prefix):
                    return True
            except OSError:
                continue
        return False

    @property
    def stderr(self) -> str:
        return self.log.read_text(errors="replace")[-4000:]

    def _reap(self) -> int:
        if self.process is not None:
            return self.process.wait(timeout=30)
        assert self.launcher is not None
        code: int = self.launcher.ask({"wait": self.pid})["exit"]
        return code

    def kill(self) -> None:
        if self.exit_code is None:
            os.kill(self.pid, signal.SIGKILL)  # also fine on a process that already exited and is not reaped
            self.exit_code = self._reap()

    def stop(self) -> int:
        """SIGTERM, and the exit code once it has shut down (SIGKILL after 60 s)."""
        os.kill(self.pid, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while self.running() and time.monotonic() < deadline:
            time.sleep(0.01)
        if self.running():
            self.kill()
        else:
            self.exit_code = self._reap()
        return self.exit_code


class Writers:
    """One thread per document appending paragraphs over REST until the server dies."""

    def __init__(self, url: str, documents: list[Document]) -> None:
        self.acks: list[tuple[str, int]] = []
        self.errors: list[str] = []
        self.in_flight = 0
        self.writing = threading.Event()  # set at the first acknowledgement
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(url, document.doc_id, document.head.version),
                                          daemon=True) for document in documents]
        for thread in self._threads:
            thread.start()

    def _run(self, url: str, doc_id: str, version: int) -> None:
        with httpx.Client(base_url=url, timeout=60) as client:
            while True:
                with self._lock:
                    self.in_flight += 1
                try:
                    response = client.post(f"/api/v1/documents/{doc_id}/nodes", params={"path": f"{PARAGRAPHS}/-"},
                                           json={"node_data": {"text": f"p{version + 1}"}, "version": version})
                except httpx.TransportError:
                    return  # the server is gone: this write was not acknowledged
                finally:
                    with self._lock:
                        self.in_flight -= 1
                if response.status_code != 201 or response.json()["version"] != version + 1:
                    self.errors.append(f"{doc_id} v{version}: {response.status_code} {response.text[:300]}")
                    return
                version += 1
                with self._lock:
                    self.acks.append((doc_id, version))
                self.writing.set()

    def join(self) -> None:
        for thread in self._threads:
            thread.join(timeout=60)
            assert not thread.is_alive(), "a writer did not notice that the server was killed"
        assert not self.errors, self.errors


def _get(url: str, path: str, **params: Any) -> Any:
    response = httpx.get(f"{url}/api/v1{path}", params=params, timeout=60)
    assert response.status_code == 200, response.text[:500]
    return response.json()


def _lines(journal: bytes, start: int) -> Iterator[tuple[int, bytes]]:
    """The complete lines after ``start``: (offset of the line's end, line)."""
    position = start
    while True:
        end = journal.find(b"\n", position)
        if end < 0:
            return
        yield end + 1, journal[position:end + 1]
        position = end + 1


def _replay(document: Document, start: Point, journal: bytes, *, capture: set[int]) -> tuple[Point, dict[int, Point]]:
    """Apply the journal's complete lines after ``start``; the last point and copies at ``capture``.

    Checks that the line ending at ``start.offset`` is unchanged, that versions are contiguous and
    that every acknowledged write not checked yet is in the journal at its version, as sent.
    """
    assert journal[start.offset - len(start.line):start.offset] == start.line, (
        f"{document.doc_id}: the journal changed before version {start.version}")
    content = _copy(start.content)
    point = start
    captured = {start.version: start} if start.version in capture else {}
    for end, line in _lines(journal, start.offset):
        entry = orjson.loads(line)  # a complete line always parses: only a partial last line may be torn
        version = point.version + 1
        assert entry["version"] == version, f"{document.doc_id}: v{entry['version']} after v{point.version}"
        content = jsonpatch.apply_patch(content, entry["patch"], in_place=True)
        if version in document.unchecked:
            assert entry["patch"][-1]["value"] == {"text": document.unchecked[version]}, (document.doc_id, entry)
        point = Point(version, end, line, content)
        if version % CHECKPOINT_EVERY == 0 and version not in document.checkpoints_checked:
            document.past.setdefault(version, orjson.dumps(content))
        if version in capture:
            captured[version] = Point(version, end, line, _copy(content))
    return point, captured


def _effective_meta(storage: Path, doc_id: str) -> dict[str, Any]:
    """The snapshot's meta as recovery will see it: a switch whose content rename happened completes."""
    metas = [path for path in storage.glob(f"{doc_id}.*.meta.tmp")
             if not (storage / f"{path.name[:-len('.meta.tmp')]}.tmp").exists()]
    assert len(metas) <= 1, metas
    meta: dict[str, Any] = orjson.loads((metas[0] if metas else storage / f"{doc_id}.meta.json").read_bytes())
    meta["switching"] = bool(metas)
    return meta


def _check_disk(storage: Path, documents: list[Document], tally: Tally) -> None:
    """The directory as the kill left it (before any recovery)."""
    tail_after_snapshot = torn = switching = 0
    for document in documents:
        journal = (storage / f"{document.doc_id}.journal.jsonl").read_bytes()
        meta = _effective_meta(storage, document.doc_id)
        snapshot_version = meta["version"]
        assert meta["snapshot_version"] == snapshot_version
        assert snapshot_version >= document.base.version, (document.doc_id, snapshot_version, document.base)
        last, captured = _replay(document, document.base, journal, capture={snapshot_version, document.head.version})
        assert last.version >= document.acked, (
            f"{document.doc_id}: acknowledged v{document.acked}, the journal ends at v{last.version}")
        if document.head.version >= document.base.version:  # else the head was before an older snapshot
            assert captured[document.head.version].content == document.head.content
        snapshot = (storage / f"{document.doc_id}.json").read_bytes()
        assert len(snapshot) == meta["content_size_bytes"], document.doc_id
        assert snapshot_version in captured, (document.doc_id, snapshot_version, last.version)
        assert orjson.loads(snapshot) == captured[snapshot_version].content, document.doc_id  # never torn
        document.base = captured[snapshot_version]
        document.unchecked.clear()
        tally.checkpoints += _check_checkpoints(storage, document, last.version)
        tail_after_snapshot = max(tail_after_snapshot, last.version - snapshot_version)
        torn += last.offset < len(journal)
        switching += meta["switching"]
    tally.tails += tail_after_snapshot > 0
    tally.longest_tail = max(tally.longest_tail, tail_after_snapshot)
    tally.torn += torn > 0
    tally.switches += switching > 0


def _check_checkpoints(storage: Path, document: Document, last: int) -> int:
    """Compare the history checkpoints written since the last check with the replay; returns how many."""
    directory = storage / "checkpoints" / document.doc_id
    names = os.listdir(directory) if directory.is_dir() else []
    checked = 0
    for version in sorted(int(name[:-5]) for name in names if name.endswith(".json") and name[:-5].isdigit()):
        if version in document.checkpoints_checked:
            continue
        assert version in document.past, f"{document.doc_id}: checkpoint of v{version} (journal at v{last})"
        stored = orjson.loads((directory / f"{version}.json").read_bytes())  # never torn: it parses
        assert stored == orjson.loads(document.past.pop(version)), f"{document.doc_id}: checkpoint v{version}"
        document.checkpoints_checked.add(version)
        checked += 1
    for version in [version for version in document.past if version <= last - 4 * CHECKPOINT_EVERY]:
        del document.past[version]  # written by now, or never will be (the cache may skip one)
    return checked


def _check_served(url: str, storage: Path, documents: list[Document], validator: Any) -> None:
    """A restarted server: each document valid, covering every acknowledged write, equal to the replay."""
    listed = {item["doc_id"]: item["version"] for item in _get(url, "/documents", limit=1000)["documents"]}
    assert sorted(listed) == sorted(document.doc_id for document in documents), listed
    for document in documents:
        read = _get(url, f"/documents/{document.doc_id}")
        content, version = read["node_content"], read["version"]
        assert validator.is_valid(content), document.doc_id
        assert version == listed[document.doc_id]
        assert version >= document.acked, f"{document.doc_id}: acknowledged v{document.acked}, served v{version}"
        journal = (storage / f"{document.doc_id}.journal.jsonl").read_bytes()
        last, _ = _replay(document, document.head, journal, capture=set())
        assert last.offset == len(journal), f"{document.doc_id}: recovery left a partial journal line"
        assert last.version == version, (document.doc_id, last.version, version)
        assert last.content == content, f"{document.doc_id}: the served document is not the journal replayed"
        document.head = last


def _create_documents(url: str) -> list[Document]:
    """The documents of the run, each with a chapter to append to and a filler chapter."""
    documents = []
    filler = {"id": "ch-2", "title": "Filler", "sections": [{"title": "F", "paragraphs": [
        {"text": f"filler paragraph {n:05d} " + "x" * 48} for n in range(FILLER_PARAGRAPHS)]}]}
    for _ in range(DOCUMENTS):
        created = httpx.post(f"{url}/api/v1/documents", timeout=60)
        assert created.status_code == 201, created.text
        doc_id = created.json()["doc_id"]
        for version, chapter in ((1, {"id": "ch-1", "title": "One", "sections": [{"title": "S", "paragraphs": []}]}),
                                 (2, filler)):
            response = httpx.post(f"{url}/api/v1/documents/{doc_id}/nodes", params={"path": "/chapters/-"},
                                  json={"node_data": chapter, "version": version}, timeout=60)
            assert response.status_code == 201, response.text[:500]
        empty = Point(0, 0, b"", {})
        documents.append(Document(doc_id, empty, empty, acked=3))
    return documents


def _start_up_kill(server: Server, rng: random.Random) -> str:
    """Kill at the k-th moment the process is seen holding a storage file before it serves."""
    wanted = rng.randint(1, 3)
    seen = 0
    deadline = time.monotonic() + START_TIMEOUT_SECONDS
    while time.monotonic() < deadline and server.running():
        if server.holds_storage_file():
            seen += 1
            if seen >= wanted:
                server.kill()
                return "start-up: recovery (storage files open)"
        elif server.serving():
            time.sleep(rng.uniform(0.0, 0.05))
            server.kill()
            return "start-up: after recovery"
        time.sleep(0.0005)
    raise AssertionError(f"the server did not start: {server.stderr}")


@dataclass
class Run:
    """One storage directory killed again and again under one snapshot policy."""

    root: Path
    policy: str
    launcher: Launcher
    tally: Tally = field(default_factory=Tally)
    documents: list[Document] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.storage, self.logs = self.root / "data", self.root / "logs"
        self.storage.mkdir(parents=True)
        self.logs.mkdir()
        self.rng = random.Random(f"{os.environ.get('SCHEMADOC_CRASH_SEED', '20261123')}-{self.policy}")
        self.validator = load_schema(BOOK).make_validator()
        self.leftovers: list[str] = []  # the temporary files the last kill left

    def server(self, *, cold: bool) -> Server:
        self.tally.cold_starts += cold
        return Server(self.storage, self.logs / "server.log", self.policy, None if cold else self.launcher)

    def check_served(self, url: str) -> None:
        _check_served(url, self.storage, self.documents, self.validator)

    def wait_serving(self, server: Server) -> str:
        """The server's URL once it serves: its recovery has removed or completed every temporary file left."""
        url = server.wait_serving()
        assert not [name for name in self.leftovers if (self.storage / name).exists()], self.leftovers
        return url

    def round(self, mode: str) -> None:
        """Start a server, kill it in ``mode``, record what the kill hit, check the disk."""
        if not self.documents:
            mode = "write"  # the first round creates the documents
        server = self.server(cold=mode == "start-up" or (self.tally.kills + 1) % COLD_EVERY == 0)
        phases: set[str] = set()
        writers: Writers | None = None
        try:
            if mode == "start-up":
                phases.add(_start_up_kill(server, self.rng))
            elif mode == "load":
                phases |= self._load_kill(server)
            else:
                url = self.wait_serving(server)
                if self.documents:
                    self.check_served(url)
                    self.tally.restarts_verified += 1
                else:
                    self.documents = _create_documents(url)
                    self.tally.writes += DOCUMENTS * 3
                    self.check_served(url)
                writers = Writers(url, self.documents)
                assert writers.writing.wait(timeout=60) or writers.errors, "no write was acknowledged"
                if mode == "snapshot":
                    self._until_snapshot_seen()
                else:
                    time.sleep(self.rng.uniform(0.05, 0.35))
                if writers.in_flight:
                    phases.add("write")
                server.kill()
        finally:
            server.kill()
        self.leftovers = [name for name in os.listdir(self.storage) if name.endswith(".tmp")]
        phases |= _temporaries(self.storage)
        if writers is not None:
            writers.join()
            by_doc = {document.doc_id: document for document in self.documents}
            for doc_id, version in writers.acks:
                by_doc[doc_id].acked = max(by_doc[doc_id].acked, version)
                by_doc[doc_id].unchecked[version] = f"p{version}"
            self.tally.writes += len(writers.acks)
        self.tally.kills += 1
        self.tally.phases.update(phases or {"between requests"})
        _check_disk(self.storage, self.documents, self.tally)

    def _load_kill(self, server: Server) -> set[str]:
        """Kill during the first reads after the start, which load each document (snapshot + journal tail)."""
        url = self.wait_serving(server)
        done = threading.Event()
        failure: list[BaseException] = []

        def verify() -> None:
            try:
                self.check_served(url)
            except BaseException as error:
                failure.append(error)
            finally:
                done.set()

        reader = threading.Thread(target=verify, daemon=True)
        reader.start()
        time.sleep(self.rng.uniform(0.0, 0.04))
        interrupted = not done.is_set()
        server.kill()
        reader.join(timeout=60)
        assert not reader.is_alive()
        if not interrupted:
            if failure:
                raise failure[0]
            self.tally.restarts_verified += 1
        return {"load: first reads"} if interrupted else set()

    def _until_snapshot_seen(self) -> None:
        """Returns at the k-th time a snapshot's temporary file is seen (k from 1 to 3), or after 1 s."""
        wanted, seen = self.rng.randint(1, 3), 0
        deadline = time.monotonic() + 1.0
        while time.monotonic() < deadline:
            if any(SNAPSHOT_TMP.match(name) for name in os.listdir(self.storage)):
                seen += 1
                if seen >= wanted:
                    return
            time.sleep(0.0005)

    def finish(self) -> Tally:
        """A last restart: served state checked, every journal replayed from scratch, a clean stop."""
        server = self.server(cold=False)
        try:
            self.check_served(self.wait_serving(server))
            self.tally.restarts_verified += 1
            for document in self.documents:
                content, version = _whole_replay(self.storage, document)
                assert version == document.head.version
                assert content == document.head.content, f"{document.doc_id}: the whole replay differs"
            assert server.stop() == 0, server.stderr
        finally:
            server.kill()
        for document in self.documents:  # a clean stop writes every lagging snapshot
            meta = orjson.loads((self.storage / f"{document.doc_id}.meta.json").read_bytes())
            assert meta["snapshot_version"] == document.head.version
            assert orjson.loads((self.storage / f"{document.doc_id}.json").read_bytes()) == document.head.content
        assert not [name for name in os.listdir(self.storage) if name.endswith(".tmp")]
        assert self.tally.writes > self.tally.kills  # the clients really wrote between kills
        return self.tally


def _temporaries(storage: Path) -> set[str]:
    """What the files left by a kill say it interrupted."""
    names = os.listdir(storage)
    phases = set()
    if any(SNAPSHOT_TMP.match(name) for name in names):
        phases.add("snapshot (temporary file present)")
    if any(CREATION_TMP.match(name) for name in names):
        phases.add("creation")
    if any((storage / "checkpoints").glob("*/*.tmp")):
        phases.add("checkpoint")
    return phases


def _whole_replay(storage: Path, document: Document) -> tuple[Any, int]:
    content: Any = {}
    version = 0
    for _, line in _lines((storage / f"{document.doc_id}.journal.jsonl").read_bytes(), 0):
        entry = orjson.loads(line)
        version += 1
        assert entry["version"] == version
        content = jsonpatch.apply_patch(content, entry["patch"], in_place=True)
    return content, version


def _modes(policy: str, rng: random.Random) -> Iterator[str]:
    weights = {"start-up": 20, "load": 10, "write": 45, "snapshot": 25} if policy == "lazy" else {
        "start-up": 20, "load": 10, "write": 70}
    while True:
        yield rng.choices(list(weights), list(weights.values()))[0]


@pytest.fixture(scope="module")
def launcher() -> Iterator[Launcher]:
    started = Launcher()
    yield started
    started.close()


@pytest.mark.parametrize("policy", ["every-write", "lazy"])
def test_acknowledged_writes_survive_sigkill_of_the_server(tmp_path: Path, launcher: Launcher, policy: str) -> None:
    run = Run(tmp_path, policy, launcher)
    for mode in ("write", "start-up", "snapshot" if policy == "lazy" else "load"):
        run.round(mode)
    tally = run.finish()
    assert tally.kills == 3 and tally.restarts_verified >= 1 and tally.writes > DOCUMENTS * 3


@pytest.mark.slow
@pytest.mark.timeout(7200)
def test_many_more_kills(tmp_path: Path, launcher: Launcher) -> None:
    """``make crash``: half the kills with every-write snapshots, half with background ones."""
    kills = int(os.environ.get("SCHEMADOC_CRASH_KILLS", "1000"))
    lines = []
    total = Tally()
    for policy in POLICIES:
        run = Run(tmp_path / policy, policy, launcher)
        modes = _modes(policy, random.Random(f"{os.environ.get('SCHEMADOC_CRASH_SEED', '20261123')}-modes-{policy}"))
        started = time.monotonic()
        for _ in range(kills // 2):
            run.round(next(modes))
        tally = run.finish()
        tally.seconds = time.monotonic() - started
        lines.append(tally.line(policy))
        total.add(tally)
    print("\ncrash: " + "\ncrash: ".join([*lines, total.line("total")]))
