"""The supervisor of ``serve --workers N``: the workers forked, watched, replaced and stopped (:func:`supervise`;
the package's docstring)."""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import selectors
import signal
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from schemadoc.interfaces.workers.channel import MESSAGE_MAX_BYTES, READY, Channel

__all__ = ["supervise"]

log = logging.getLogger("schemadoc")

_CHANNEL_BUFFER_BYTES = 1 << 20
_RESTART_WINDOW_SECONDS = 60.0
_RESTARTS_IN_WINDOW = 5
_YOUNG_SECONDS = 10.0
_KILL_AFTER_GRACE_SECONDS = 5.0
_PR_SET_PDEATHSIG = 1


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
                message = worker.channel.recv(MESSAGE_MAX_BYTES)
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
