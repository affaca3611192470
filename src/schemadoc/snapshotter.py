"""Snapshots and history checkpoints, written off the write path.

A write is durable once its journal line is (journal-first); the snapshot ``{id}.json`` is a
checkpoint of the journal that the :class:`Snapshotter` brings up to date in one background
thread: at most one snapshot in flight (so at most one per document), coalesced (a document
that was written 500 times since its snapshot gets one snapshot, of its newest version),
triggered by lag (versions or journal bytes since the snapshot) and by time (a lagging
document is snapshotted at most ``interval_seconds`` after its first unsnapshotted write), and
always on clean shutdown (:meth:`Snapshotter.close`).

Documents below ``inline_below_bytes`` may keep their snapshot current inline
(:class:`SnapshotPolicy`), so people who read ``{doc_id}.json`` directly see the current
version. It is off by default: measured black box over REST (``benchmarks/rest.py --quick``), a
write to a 10 KB document took p50 5.8-8.7 ms with the inline snapshot and 1.0 ms without (the
temporary file's fsync and two renames, whatever the size), so no size makes it cost about what
the journal append costs; a lagging small document is snapshotted ``interval_seconds`` later.

Serialising a 100 MiB document with one ``orjson.dumps`` call holds the GIL for 0.1-0.2 s and
stalls every request. The mechanism was chosen by measurement (``make bench-journal``, section
``snapshot``: deep reads every 0.5 ms and writes to another document while a 100 MiB snapshot is
written): :func:`iter_chunked` produces the very same bytes in pieces of ~256 KiB, the files store
writes each piece as it comes, syncing every 8 MiB so that other documents' fsyncs never queue
behind the whole file (:class:`~schemadoc.storage.base.StreamedSnapshots`), and between
pieces the thread sleeps 0.1 ms, which really hands the GIL over (``time.sleep(0)`` lets the
thread take it back at once, so a waiting reader waits out the 5 ms switch interval). Measured
beside it: one ``orjson.dumps`` in a thread (a stall of the whole serialisation), the pieces
joined before writing (twice the document's size in memory, reads p99 3-15 ms), and a forked
child serialising the copy-on-write document (``fork`` itself holds the GIL for 10-50 ms on a
process holding 0.5-1 GiB, and the child's buffer adds the document's size). Stores that take
only whole bytes get them joined. History checkpoints are written the same way (a 100 MiB one:
0.28 s and 1 MiB of memory, against 0.78 s and 197 MiB with the pieces joined). The service's
documents are immutable (structural sharing), so the snapshot thread reads a version while
writers build newer ones.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from schemadoc.errors import SchemaDocError
from schemadoc.storage.base import DocumentStore
from schemadoc.storage.shared import StreamedSnapshots

__all__ = ["POLICIES", "SnapshotPolicy", "Snapshotter", "dumps_chunked", "hand_over", "iter_chunked"]

log = logging.getLogger("schemadoc.snapshots")

POLICIES = ("every-write", "lazy")

_CHUNK_DESCEND_ITEMS = 32   # containers with at least this many members are serialised member by member
_CHUNK_DESCEND_DEPTH = 2    # ...and so are the top levels, whatever their size
_CHUNK_MAX_DEPTH = 8
_YIELD_EVERY_BYTES = 256 << 10
_HAND_OVER_SECONDS = 0.0001


def hand_over() -> None:
    """Let any thread waiting for the GIL run: a real sleep (``sleep(0)`` may take the GIL straight back)."""
    time.sleep(_HAND_OVER_SECONDS)


@dataclass(frozen=True)
class SnapshotPolicy:
    """When snapshots are written (the ``snapshot_*`` settings).

    - ``mode`` ``every-write``: every commit also writes the snapshot (inline, as before
      journal-first); ``lazy``: the snapshot lags and is written in the background.
    - ``inline_below_bytes`` (lazy): documents smaller than this keep their snapshot current
      inline (0: never).
    - ``lag_versions`` / ``lag_bytes``: a snapshot is started as soon as this many versions, or
      journal bytes, accumulated since the last one.
    - ``interval_seconds``: a lagging document is snapshotted at most this long after its first
      unsnapshotted write.
    """

    mode: str = "lazy"
    inline_below_bytes: int = 0
    lag_versions: int = 1000
    lag_bytes: int = 64 << 20
    interval_seconds: float = 5.0

    def __post_init__(self) -> None:
        if self.mode not in POLICIES:
            raise ValueError(f"snapshot policy must be one of {POLICIES}, got {self.mode!r}")

    @classmethod
    def from_settings(cls, settings: Any) -> SnapshotPolicy:
        """The policy the ``snapshot_*`` settings (:class:`~schemadoc.config.Settings`) describe."""
        return cls(mode=settings.snapshot_policy, inline_below_bytes=settings.snapshot_inline_below_bytes,
                   lag_versions=settings.snapshot_lag_versions, lag_bytes=settings.snapshot_lag_bytes,
                   interval_seconds=float(settings.snapshot_interval_seconds))

    def inline(self, size: int) -> bool:
        """Whether a commit of a document of ``size`` bytes writes its snapshot inline."""
        return self.mode == "every-write" or size < self.inline_below_bytes


def dumps_chunked(value: Any, pause: Callable[[], None] = lambda: time.sleep(0)) -> bytes:
    """``orjson.dumps(value)``, byte for byte: the pieces of :func:`iter_chunked` joined."""
    return b"".join(iter_chunked(value, pause))


def iter_chunked(value: Any, pause: Callable[[], None] = lambda: time.sleep(0)) -> Iterator[bytes]:
    """The bytes of ``orjson.dumps(value)`` as pieces of about 256 KiB, calling ``pause`` after each (by default
    ``time.sleep(0)``, which hands the GIL to any thread waiting for it).

    Big containers (and the top levels) are serialised member by member, the rest whole. A consumer that
    writes each piece as it comes never holds the whole serialisation. Raises ``orjson.JSONEncodeError`` as
    ``orjson.dumps`` would (possibly after some pieces were produced).
    """
    parts: list[bytes] = []
    pending = 0

    def walk(node: Any, depth: int) -> Iterator[bytes]:
        nonlocal parts, pending
        big = depth < _CHUNK_DESCEND_DEPTH or (
            isinstance(node, dict | list) and len(node) >= _CHUNK_DESCEND_ITEMS)
        if depth >= _CHUNK_MAX_DEPTH or not big or not isinstance(node, dict | list) or not node:
            yield from emit(orjson.dumps(node))
            return
        if isinstance(node, dict):
            yield from emit(b"{")
            for index, (key, member) in enumerate(node.items()):
                if not isinstance(key, str):  # let orjson raise its own error
                    orjson.dumps(node)
                yield from emit((b"," if index else b"") + orjson.dumps(key) + b":")
                yield from walk(member, depth + 1)
            yield from emit(b"}")
        else:
            yield from emit(b"[")
            for index, item in enumerate(node):
                if index:
                    yield from emit(b",")
                yield from walk(item, depth + 1)
            yield from emit(b"]")

    def emit(data: bytes) -> Iterator[bytes]:
        nonlocal parts, pending
        parts.append(data)
        pending += len(data)
        if pending >= _YIELD_EVERY_BYTES:
            piece = b"".join(parts)
            parts, pending = [], 0
            yield piece
            pause()

    yield from walk(value, 0)
    if parts:
        yield b"".join(parts)


@dataclass
class _Lag:
    versions: int = 0
    journal_bytes: int = 0
    since: float = field(default_factory=time.monotonic)


class Snapshotter:
    """One background thread writing snapshots and history checkpoints of a service's documents.

    ``current(doc_id)`` returns the service's in-memory ``(version, content)`` of a document (or
    ``None`` when it has none): the content is immutable, so it is serialised without locks.
    """

    def __init__(self, store: DocumentStore, policy: SnapshotPolicy,
                 current: Callable[[str], tuple[int, Any] | None]) -> None:
        self.store = store
        self.policy = policy
        self._current = current
        self._lags: dict[str, _Lag] = {}
        self._due: set[str] = set()
        self._checkpoints: list[tuple[str, int, Any]] = []
        self._condition = threading.Condition()
        self._busy = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self.written = 0  # snapshots written (for tests and benchmarks)
        self.on_snapshot: Callable[[float], None] | None = None
        """Told the seconds each snapshot written took (the metrics' histogram), if set."""

    # -- what the service tells it ----------------------------------------------------------------

    def committed(self, doc_id: str, journal_bytes: int, *, inline: bool) -> None:
        """A version of ``doc_id`` was committed; ``inline`` when its snapshot was written with it."""
        with self._condition:
            if inline:
                self._lags.pop(doc_id, None)
                self._due.discard(doc_id)
                return
            lag = self._lags.setdefault(doc_id, _Lag())
            lag.versions += 1
            lag.journal_bytes += journal_bytes
            if lag.versions >= self.policy.lag_versions or lag.journal_bytes >= self.policy.lag_bytes:
                self._due.add(doc_id)
            self._wake()

    def lagging(self, doc_id: str, versions: int) -> None:
        """A document was loaded with ``versions`` journal entries after its snapshot."""
        if versions > 0:
            with self._condition:
                lag = self._lags.setdefault(doc_id, _Lag())
                lag.versions = max(lag.versions, versions)
                if lag.versions >= self.policy.lag_versions:
                    self._due.add(doc_id)
                self._wake()

    def checkpoint(self, doc_id: str, version: int, content: Any) -> None:
        """Persist ``content`` (immutable) as the history checkpoint of ``version``, in the background."""
        with self._condition:
            self._checkpoints.append((doc_id, version, content))
            self._wake()

    def forget(self, doc_id: str) -> None:
        """The document was purged."""
        with self._condition:
            self._lags.pop(doc_id, None)
            self._due.discard(doc_id)
            self._checkpoints = [job for job in self._checkpoints if job[0] != doc_id]

    # -- life cycle ---------------------------------------------------------------------------------

    def flush(self) -> None:
        """Write every pending checkpoint and every lagging snapshot now, in the calling thread."""
        with self._condition:
            while self._busy:
                self._condition.wait()
            self._busy = True
            jobs, self._checkpoints = self._checkpoints, []
            lagging = sorted(self._lags)
            self._lags.clear()
            self._due.clear()
        try:
            for job in jobs:
                self._write("checkpoint", *job, hand_over)
            for doc_id in lagging:
                self._snapshot(doc_id, chunked=False)
        finally:
            with self._condition:
                self._busy = False
                self._condition.notify_all()

    def close(self) -> None:
        """Stop the thread, then :meth:`flush` (a clean shutdown leaves every snapshot current)."""
        self.stop()
        self.flush()

    def stop(self) -> None:
        """Stop the thread after the job in hand, leaving lagging snapshots behind (as a crash would)."""
        with self._condition:
            self._closed = True
            self._condition.notify_all()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()

    def wait_idle(self, timeout: float = 30.0) -> bool:
        """Wait until no job is due or running (lagging documents not yet due may remain); False on timeout."""
        deadline = time.monotonic() + timeout
        with self._condition:
            while self._busy or self._checkpoints or (self._due and not self._closed):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._condition.wait(timeout=remaining)
        return True

    def lag(self) -> tuple[int, int, float | None]:
        """Versions and journal bytes committed but not yet in a snapshot, summed over documents, and the
        ``time.monotonic()`` of the oldest such write (``None`` when every snapshot is current)."""
        with self._condition:
            lags = list(self._lags.values())
        return (sum(lag.versions for lag in lags), sum(lag.journal_bytes for lag in lags),
                min((lag.since for lag in lags), default=None))

    def pending(self) -> int:
        with self._condition:
            return len(self._lags) + len(self._checkpoints) + (1 if self._busy else 0)

    def _wake(self) -> None:
        """Start the thread if it is not running, and tell it there is work (with the condition held)."""
        if self._thread is None and not self._closed:
            self._thread = threading.Thread(target=self._run, name="schemadoc-snapshots", daemon=True)
            self._thread.start()
        self._condition.notify_all()

    # -- the thread ---------------------------------------------------------------------------------

    def _next(self) -> tuple[str, Any] | None:
        """The next job, waiting for one; ``None`` when closed. Called with the condition held."""
        while not self._closed:
            if self._checkpoints:
                return "checkpoint", self._checkpoints.pop(0)
            now = time.monotonic()
            for doc_id, lag in self._lags.items():
                if now - lag.since >= self.policy.interval_seconds:
                    self._due.add(doc_id)
            if self._due:
                doc_id = min(self._due)
                self._due.discard(doc_id)
                self._lags.pop(doc_id, None)
                return "snapshot", doc_id
            waits = [lag.since + self.policy.interval_seconds - now for lag in self._lags.values()]
            self._condition.wait(timeout=max(min(waits), 0.001) if waits else None)
        return None

    def _run(self) -> None:
        while True:
            with self._condition:
                while self._busy and not self._closed:
                    self._condition.wait()
                job = self._next()
                if job is None:
                    return
                self._busy = True
            try:
                if job[0] == "checkpoint":
                    doc_id, version, content = job[1]
                    self._write("checkpoint", doc_id, version, content, hand_over)
                else:
                    self._snapshot(job[1], chunked=True)
            except Exception:  # never let the thread die: the journal is the truth
                log.exception("background %s failed", job[0])
            finally:
                with self._condition:
                    self._busy = False
                    self._condition.notify_all()

    def _snapshot(self, doc_id: str, *, chunked: bool) -> None:
        state = self._current(doc_id)
        started = time.perf_counter()
        if state is not None and self._write("snapshot", doc_id, *state, hand_over if chunked else None):
            self.written += 1
            if self.on_snapshot is not None:
                self.on_snapshot(time.perf_counter() - started)

    def _write(self, what: str, doc_id: str, version: int, content: Any, pause: Callable[[], None] | None) -> bool:
        """Write the snapshot or the history checkpoint (``what``) of ``version``; False when none was written
        (a newer snapshot is there, or it failed and is logged: the journal is the truth, a checkpoint a cache).

        A store that streams takes the pieces as they are serialised, so no second copy of a big document is held
        (also at shutdown); ``pause`` runs between pieces (the background thread hands the GIL over); None: at
        once (in one ``orjson.dumps`` when the store takes whole bytes).
        """
        snapshot = what == "snapshot"
        try:
            if isinstance(self.store, StreamedSnapshots):
                write_pieces = self.store.write_snapshot_pieces if snapshot else self.store.write_checkpoint_pieces
                return bool(write_pieces(doc_id, version, iter_chunked(content, pause or (lambda: None))))
            data = orjson.dumps(content) if pause is None else dumps_chunked(content, pause)
            return bool((self.store.write_snapshot if snapshot else self.store.write_checkpoint)(doc_id, version, data))
        except (SchemaDocError, ValueError, OSError) as error:
            log.warning("document %s: %s of version %d not written: %s", doc_id, what, version, error)
            return False
