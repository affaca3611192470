"""``schemadoc serve --workers N``: N server processes on one listening socket, and the process that supervises them.

The supervisor (the process ``serve`` started as) binds the address, then forks N workers before it has opened
the store, loaded anything big or started a thread; each worker builds its own service on the same store and
serves the address. On Linux each worker listens on a socket of its own bound with ``SO_REUSEPORT`` beside the
supervisor's (bound, never listening: it holds the address while workers come and go), and the kernel spreads
new connections over them by a hash of the connection's addresses; elsewhere the workers accept on the one
inherited socket (measured on Linux, 32 connections opened one after the other went 25 / 7 to two idle
workers that way, 19 / 13 at worst over three tries with ``SO_REUSEPORT``). A connection stays on the worker
that accepted it. A
worker is one of several servers on one store, as several ``serve`` processes on one storage directory or
PostgreSQL schema are: every commit checks the stored version under the document's write lock (a ``flock`` on
the files store, an advisory lock on PostgreSQL), so writes through different workers never lose one another.

What the supervisor adds (docs/deployment.md, "Several worker processes"):

- **Change events and the change feed between workers** on a store that does not carry them itself (the files
  store): each worker tells the supervisor of its own commits over its channel, a ``SOCK_SEQPACKET`` socket
  pair, and the supervisor tells every other worker. A notice (document, version, kind) is published as
  PostgreSQL's ``LISTEN`` publishes another server's commits: event streams and MCP subscribers hear every
  worker's writes, reading the entries from the journal. The change feed's messages (:class:`WorkersFeed`)
  make every worker's feed list every worker's commits without ever passing one still on its way. A message
  never waits: one a worker cannot take at once (its channel full) is dropped and counted in the log; a
  stream catches up at that document's next event, and a feed that sees the gap in the sender's sequence
  numbers is read again from the journals. PostgreSQL needs no relay (each worker listens to the database,
  which orders the feed).
- **The stop**: SIGTERM or SIGINT to the supervisor sends SIGTERM to every worker, which stops as one server
  does (new requests refused, event streams ended, requests in flight finished within the grace); the
  supervisor closes its own socket at once (so new connections are refused once the workers closed
  theirs), waits for every worker, kills one still running ``grace + 5`` seconds later, and exits 0 when every
  worker stopped cleanly.
- **A worker that ends** unexpectedly (killed, crashed, exited) after it served is logged with its exit status and
  replaced by a new one at once (after a second when it had lived less than ten); more than five ends within a
  minute stop the whole server with ``EXIT_INTERNAL``. A worker that exits before it served (a start-up failure:
  the store cannot be opened, the port's socket is gone) stops the whole server with that worker's exit code;
  one killed by a signal while it started is replaced as above.
- **Workers end with the supervisor**: each asks the kernel for SIGTERM when its parent dies (``PR_SET_PDEATHSIG``
  on Linux), so a supervisor killed with SIGKILL leaves no server behind.

POSIX only (``os.fork``); the command refuses ``--workers`` above 1 elsewhere, and on the stdio transport.
"""

from __future__ import annotations

import bisect
import contextlib
import ctypes
import itertools
import logging
import os
import selectors
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import astuple, dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from schemadoc.service.feed import ChangeFeed
from schemadoc.service.models import Change, ChangesPage
from schemadoc.storage.shared import StoreNotice

if TYPE_CHECKING:
    from schemadoc.service import DocumentService
    from schemadoc.service.models import ChangeEvent

__all__ = ["READY", "TICK_SECONDS", "Channel", "WorkersFeed", "supervise"]

log = logging.getLogger("schemadoc")

READY = b"\x00ready"
"""What a worker sends on its channel once it serves (its HTTP server started)."""

TICK_SECONDS = 0.05
"""How often a worker tells the others its change feed's clock (they show each other's commits this much later)."""

_MESSAGE_MAX_BYTES = 16384  # a document id (bounded by the id rule), versions, cursors, an op, a time, an actor
_CHANNEL_BUFFER_BYTES = 1 << 20
_RESTART_WINDOW_SECONDS = 60.0
_RESTARTS_IN_WINDOW = 5
_YOUNG_SECONDS = 10.0
_KILL_AFTER_GRACE_SECONDS = 5.0
_PR_SET_PDEATHSIG = 1


class WorkersFeed(ChangeFeed):
    """The change feed of one worker of several on the files store: every worker's commits, and never a cursor
    passed while another worker may still deliver one below it.

    A worker's cursors are its hybrid clock's (microseconds), those equal to its number - 1 modulo the number
    of workers, so no two workers make the same one. Each settled commit goes to the other workers with the
    sender's state: its clock and the lowest cursor it still has in flight; so does a tick (at most every
    ``TICK_SECONDS``) that moves its clock to now, sent once when the worker starts and then only when
    another worker's commit arrived since it last spoke (an idle server sends nothing). A worker's future
    cursors are above its clock, and its settled commits reach the others before anything it sends later
    (one ordered channel), so another worker may show every cursor below ``min(in flight, clock + 1)`` of
    the sender's last message once it listed what came before. A worker not heard from yet (starting, or
    replacing one that ended) holds every other worker's feed back until its first tick. A lost message (a
    full channel; each carries the sender's sequence number) makes the receiver read its feed again from
    the journals.
    """

    def __init__(self, index: int, count: int, send: Callable[[list[Any]], None]) -> None:
        super().__init__()
        self.index = index
        self.count = count
        self._send = send
        self._bounds: dict[int, int | None] = {other: None for other in range(1, count + 1) if other != index}
        self._heard: dict[int, int] = {}  # sender -> the sequence number of its last message
        self._keys: set[tuple[str, int]] = set()
        self._arriving: list[Change] | None = None  # other workers' commits heard while the journals are read
        self._owed = False  # another worker's commit arrived since this one last spoke: tick

    def reserve(self) -> int:
        with self._lock:
            cursor = max(self._last + 1, time.time_ns() // 1000)
            cursor += (self.index - 1 - cursor) % self.count
            self._last = cursor
            self._inflight.add(cursor)
            return cursor

    def settle(self, cursor: int, change: Change | None) -> None:
        with self._lock:
            self._inflight.discard(cursor)
            if change is not None:
                self._insert(change)
            self._send(["s", *self._state(), None if change is None else list(astuple(change))])
            self._owed = False

    def tick(self, *, always: bool = False) -> None:
        """Move this worker's clock to now and tell the others (they may then show what is below it): when another
        worker's commit arrived since this worker last spoke (it waits for this), or ``always``."""
        with self._lock:
            if not (always or self._owed):
                return
            self._last = max(self._last, time.time_ns() // 1000)
            self._send(["t", *self._state()])
            self._owed = False

    def _state(self) -> list[int]:
        return [self._last, min(self._inflight) if self._inflight else 0]

    def _insert(self, change: Change) -> None:
        key = (change.doc_id, change.version)
        if self._changes is not None and key not in self._keys:
            self._keys.add(key)
            bisect.insort(self._changes, change, key=lambda c: c.cursor)
        elif self._changes is None and self._arriving is not None:
            self._arriving.append(change)

    def loaded(self) -> bool:
        with self._lock:
            if self._changes is None and self._arriving is None:
                self._arriving = []  # the service reads the journals now: what arrives meanwhile is kept
            return self._changes is not None

    def load(self, changes: list[Change]) -> None:
        with self._lock:
            if self._changes is not None:
                return
            known: dict[tuple[str, int], Change] = {}
            for change in [*changes, *(self._arriving or [])]:
                known.setdefault((change.doc_id, change.version), change)
            self._changes = sorted(known.values(), key=lambda c: c.cursor)
            self._keys = set(known)
            self._arriving = None
            if self._changes:
                self._last = max(self._last, self._changes[-1].cursor)

    def heard(self, sender: int, sequence: int, state: tuple[int, int] | None = None,
              change: Change | None = None) -> None:
        """Message ``sequence`` of worker ``sender``: its feed's ``state`` (clock, lowest cursor in flight or 0) and a
        commit it settled, when the message carries them."""
        with self._lock:
            if sequence != self._heard.get(sender, 0) + 1 and self._changes is not None:
                log.warning("worker %d: messages of worker %d were lost; the change feed is read again from the "
                            "journals", self.index, sender)
                self._changes = None
                self._keys = set()
            self._heard[sender] = sequence
            if state is not None:
                clock, lowest = state
                self._bounds[sender] = lowest if lowest else clock + 1
            if change is not None:
                self._insert(change)
                self._owed = True

    def ended(self, sender: int) -> None:
        """Worker ``sender`` ended: the feed waits for its replacement's first message."""
        with self._lock:
            self._heard.pop(sender, None)
            self._bounds[sender] = None

    def read(self, since: int, limit: int) -> ChangesPage:
        with self._lock:
            if self._changes is None:  # a gap dropped it since the service loaded it: the next read loads again
                return ChangesPage([], since)
            bounds = [*self._bounds.values(), *([min(self._inflight)] if self._inflight else [])]
            watermark = 0 if None in bounds else min((bound for bound in bounds if bound is not None), default=None)
            start = bisect.bisect_right(self._changes, since, key=lambda c: c.cursor)
            visible = itertools.takewhile(lambda c: watermark is None or c.cursor < watermark,
                                          itertools.islice(self._changes, start, None))
            page = list(itertools.islice(visible, limit))
            return ChangesPage(page, page[-1].cursor if page else since)


class Channel:
    """A worker's end of its channel to the supervisor: readiness out; with :meth:`relay`, its commits and its change
    feed's state out, the other workers' in."""

    def __init__(self, sock: socket.socket, index: int, count: int) -> None:
        self.sock = sock
        self.index = index
        """This worker's number, 1 to ``count``."""
        self.count = count
        self._relaying = threading.local()
        self._unsubscribe: Callable[[], None] | None = None
        self._send_lock = threading.Lock()
        self._sequence = 0
        self._closed = threading.Event()
        self.feed: WorkersFeed | None = None
        self.dropped = 0
        """Messages not sent to the supervisor because the channel was full."""

    def ready(self) -> None:
        """Tell the supervisor this worker serves (a start-up failure after this is a worker that ended)."""
        with contextlib.suppress(OSError):
            self.sock.send(READY)

    def relay(self, service: DocumentService) -> None:
        """Tell the other workers of this worker's commits, and publish theirs here; keep the change feed with
        theirs (a store that is not shared: the files store)."""
        self.feed = WorkersFeed(self.index, self.count, self._message)
        service.use_change_feed(self.feed)
        self._unsubscribe = service.subscribe(self._tell)
        threading.Thread(target=self._hear, args=(service, self.feed), name="schemadoc-worker-relay",
                         daemon=True).start()
        threading.Thread(target=self._tick, args=(self.feed,), name="schemadoc-worker-tick", daemon=True).start()

    def _message(self, message: list[Any]) -> None:
        """Send ``[kind, this worker, its sequence number, *rest]`` without waiting (dropped when the channel is
        full: the receivers see the gap in the sequence numbers)."""
        with self._send_lock:
            self._sequence += 1
            data = orjson.dumps([message[0], self.index, self._sequence, *message[1:]])
            try:
                self.sock.send(data, socket.MSG_DONTWAIT)
            except BlockingIOError:
                self.dropped += 1
                if self.dropped == 1 or self.dropped % 1000 == 0:
                    log.warning("worker %d: %d message(s) to the other workers dropped (channel full)",
                                self.index, self.dropped)
            except OSError:
                pass  # the supervisor is gone: this worker is stopping with it

    def _tell(self, event: ChangeEvent) -> None:
        """A commit published here: this worker's own (sent on) or one heard from another worker (not sent back)."""
        if not getattr(self._relaying, "active", False):
            self._message(["e", event.doc_id, event.version, event.kind])

    def _tick(self, feed: WorkersFeed) -> None:
        feed.tick(always=True)  # the others wait for this worker's first word
        while not self._closed.wait(TICK_SECONDS):
            feed.tick()

    def _hear(self, service: DocumentService, feed: WorkersFeed) -> None:
        while True:
            try:
                data = self.sock.recv(_MESSAGE_MAX_BYTES)
            except OSError:
                return
            if not data:
                return  # the supervisor closed its end
            try:
                kind, sender, *rest = orjson.loads(data)
                if kind == "x":
                    feed.ended(int(sender))
                    continue
                sequence, *rest = rest
                if kind == "e":
                    doc_id, version, what = rest
                    feed.heard(int(sender), int(sequence))
                    self._publish(service, StoreNotice(str(doc_id), int(version), str(what)))
                elif kind in ("s", "t"):
                    clock, lowest, *change = rest
                    settled = Change(*change[0]) if change and change[0] is not None else None
                    feed.heard(int(sender), int(sequence), (int(clock), int(lowest)), settled)
            except (orjson.JSONDecodeError, TypeError, ValueError):
                log.warning("worker %d: an unreadable message from the supervisor was ignored", self.index)

    def _publish(self, service: DocumentService, notice: StoreNotice) -> None:
        self._relaying.active = True
        try:
            service.heard_from_other_process(notice)
        except Exception:
            log.exception("worker %d: publishing %s v%d from another worker failed", self.index, notice.doc_id,
                          notice.version)
        finally:
            self._relaying.active = False

    def close(self) -> None:
        self._closed.set()
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()


@dataclass
class _Worker:
    index: int
    pid: int
    channel: socket.socket
    started: float
    ready: bool = False


@dataclass
class _State:
    workers: dict[int, _Worker] = field(default_factory=dict)  # by pid
    stop_signal: int | None = None
    second_sigint: bool = False
    exit_code: int = 0
    ends: list[float] = field(default_factory=list)
    dropped: int = 0


def _die_with_parent(parent: int) -> None:
    """SIGTERM to this process when ``parent`` dies (Linux), and an exit now if it already has."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(0)


def _describe(status: int) -> str:
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        try:
            name = signal.Signals(number).name
        except ValueError:
            name = str(number)
        return f"killed by {name}"
    return f"exit code {os.waitstatus_to_exitcode(status)}"


def supervise(count: int, listening: socket.socket, serve_worker: Callable[[Channel], int], *,
              grace_seconds: float, relay: bool, internal_code: int) -> int:
    """Run ``count`` workers, each ``serve_worker(channel)`` in a forked process (its return value is its exit code),
    until SIGTERM/SIGINT stops them all or one fails to start (module docstring); the exit code of the whole
    (``internal_code`` for a worker that failed without one of its own, or workers that had to be killed)."""
    state = _State()
    parent = os.getpid()
    wake_read, wake_write = os.pipe()
    os.set_blocking(wake_read, False)
    os.set_blocking(wake_write, False)
    selector = selectors.DefaultSelector()
    selector.register(wake_read, selectors.EVENT_READ)
    handled = (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD)

    def on_signal(sig: int, frame: Any) -> None:
        if sig == signal.SIGCHLD:
            return  # the wake-up byte is enough: the loop reaps
        if state.stop_signal is not None and sig == signal.SIGINT:
            state.second_sigint = True
        elif state.stop_signal is None:
            state.stop_signal = sig

    def spawn(index: int) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        for end in (ours, theirs):
            end.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _CHANNEL_BUFFER_BYTES)
            end.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _CHANNEL_BUFFER_BYTES)
        blocked = signal.pthread_sigmask(signal.SIG_BLOCK, handled)
        pid = os.fork()
        if pid == 0:  # the worker
            code = internal_code
            try:
                signal.set_wakeup_fd(-1)
                for sig in handled:
                    signal.signal(sig, signal.SIG_DFL)
                signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
                selector.close()
                os.close(wake_read)
                os.close(wake_write)
                ours.close()
                for other in state.workers.values():
                    other.channel.close()
                _die_with_parent(parent)
                code = serve_worker(Channel(theirs, index, count))
            except SystemExit as exit_:
                code = exit_.code if isinstance(exit_.code, int) else 1
            except BaseException:
                log.exception("worker %d failed", index)
            finally:
                with contextlib.suppress(Exception):
                    logging.shutdown()
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code)
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        theirs.close()
        ours.setblocking(False)
        worker = _Worker(index, pid, ours, time.monotonic())
        state.workers[pid] = worker
        selector.register(ours, selectors.EVENT_READ, worker)

    def forward(worker: _Worker) -> None:
        while True:
            try:
                message = worker.channel.recv(_MESSAGE_MAX_BYTES)
            except (BlockingIOError, InterruptedError):
                return
            except OSError:
                return
            if not message:
                return
            if message == READY:
                worker.ready = True
                continue
            if not relay:
                continue
            for other in state.workers.values():
                if other is worker:
                    continue
                try:
                    other.channel.send(message, socket.MSG_DONTWAIT)
                except OSError:
                    state.dropped += 1
                    if state.dropped == 1 or state.dropped % 1000 == 0:
                        log.warning("%d change notice(s) not passed on: a worker's channel was full or closed",
                                    state.dropped)

    def stop_all(sig: int) -> None:
        for worker in state.workers.values():
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, sig)

    def ended(pid: int, status: int) -> None:
        worker = state.workers.pop(pid, None)
        if worker is None:
            return
        with contextlib.suppress(KeyError, ValueError):
            selector.unregister(worker.channel)
        forward(worker)  # what it said before it ended (its last notices, its readiness)
        worker.channel.close()
        if relay:  # the others' change feeds wait for its replacement's first message
            for other in state.workers.values():
                with contextlib.suppress(OSError):
                    other.channel.send(orjson.dumps(["x", worker.index]), socket.MSG_DONTWAIT)
        how = _describe(status)
        if state.stop_signal is not None:
            clean = os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
            if not clean and state.exit_code == 0 and not (os.WIFSIGNALED(status)
                                                           and os.WTERMSIG(status) == signal.SIGTERM):
                state.exit_code = os.WEXITSTATUS(status) if os.WIFEXITED(status) else internal_code
            log.debug("worker %d (pid %d) stopped: %s", worker.index, pid, how)
            return
        if not worker.ready and not os.WIFSIGNALED(status):  # it failed to start: its replacement would too
            log.error("worker %d (pid %d) ended before it served (%s): stopping the server", worker.index, pid, how)
            failed = os.WIFEXITED(status) and os.WEXITSTATUS(status) != 0
            state.exit_code = os.WEXITSTATUS(status) if failed else internal_code
            state.stop_signal = signal.SIGTERM
            return
        now = time.monotonic()
        state.ends = [at for at in state.ends if now - at < _RESTART_WINDOW_SECONDS] + [now]
        if len(state.ends) > _RESTARTS_IN_WINDOW:
            log.error("worker %d (pid %d) ended (%s), the %d-th worker to end within %d s: stopping the server",
                      worker.index, pid, how, len(state.ends), _RESTART_WINDOW_SECONDS)
            state.exit_code = internal_code
            state.stop_signal = signal.SIGTERM
            return
        log.warning("worker %d (pid %d) ended unexpectedly (%s); starting another", worker.index, pid, how)
        if now - worker.started < _YOUNG_SECONDS:
            time.sleep(1.0)
        spawn(worker.index)

    original = {sig: signal.signal(sig, on_signal) for sig in handled}
    previous_wakeup = signal.set_wakeup_fd(wake_write, warn_on_full_buffer=False)
    forwarded: int | None = None
    deadline: float | None = None
    try:
        for index in range(1, count + 1):
            spawn(index)
        log.info("schemadoc: started %d workers on one address (pids %s); SIGTERM stops them all", count,
                 ", ".join(str(worker.pid) for worker in state.workers.values()))
        while state.workers:
            timeout = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
            for key, _ in selector.select(timeout):
                if key.data is None:
                    with contextlib.suppress(OSError):
                        while os.read(wake_read, 512):
                            pass
                else:
                    forward(key.data)
            while state.workers:
                try:
                    pid, status = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if pid == 0:
                    break
                ended(pid, status)
            if state.stop_signal is not None and forwarded is None:
                forwarded = state.stop_signal
                log.info("schemadoc: stopping %d worker(s) (%s)", len(state.workers),
                         signal.Signals(forwarded).name)
                listening.close()  # new connections are refused once every worker closed its copy too
                stop_all(signal.SIGTERM)
                deadline = time.monotonic() + grace_seconds + _KILL_AFTER_GRACE_SECONDS
            if state.second_sigint:
                state.second_sigint = False
                stop_all(signal.SIGINT)  # skip the wait, as a second SIGINT does to one server
            if deadline is not None and time.monotonic() >= deadline and state.workers:
                log.error("schemadoc: %d worker(s) still running %.0f s after the stop began: killed",
                          len(state.workers), grace_seconds + _KILL_AFTER_GRACE_SECONDS)
                stop_all(signal.SIGKILL)
                state.exit_code = state.exit_code or internal_code
                deadline = time.monotonic() + 60.0
    finally:
        signal.set_wakeup_fd(previous_wakeup)
        for sig, handler in original.items():
            signal.signal(sig, handler)
        if state.workers:  # an exception in the loop: leave no worker behind
            stop_all(signal.SIGKILL)
        selector.close()
        os.close(wake_read)
        os.close(wake_write)
    if state.stop_signal is not None and state.exit_code == 0:
        log.info("schemadoc stopped (%d workers)", count)
    return state.exit_code
