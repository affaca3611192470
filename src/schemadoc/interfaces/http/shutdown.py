"""The server's stop on SIGTERM or SIGINT, within ``shutdown_grace_seconds`` (docs/deployment.md).

When the signal arrives, :meth:`Stopping.begin` (in the signal handler, so before anything else runs):

1. marks the stop: from then on :class:`StopGate`, just inside the request log (the outermost layer), answers
   every new HTTP request ``503 shutting-down`` with ``Connection: close`` (uvicorn closes its listening socket a
   moment later, after which connections are refused);
2. logs one line (what is in flight and how long the stop may take), and tells every open event stream,
   which ends with a final ``shutting-down`` event naming the last version it sent (``details.last_version``)
   and an SSE ``retry:`` hint, so a client resumes from the restarted server with ``Last-Event-ID``;
3. starts the deadline: requests in flight (writes included) finish; uvicorn waits for them at most
   :meth:`Stopping.connections_timeout` seconds, then the application's lifespan ends (MCP sessions), the
   service writes every lagging snapshot and closes the store. If the whole stop has not ended after
   ``shutdown_grace_seconds`` the process exits at once: every acknowledged write is already in the journal,
   so nothing acknowledged is lost, only snapshots may lag (the next start reads the journal after them).

:meth:`Stopping.finish` logs the second line: how long the stop took and what it waited for.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from typing import Final

import orjson
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.http.request_context import error_object

__all__ = ["RETRY_MILLISECONDS", "STOPPING", "StopGate", "Stopping", "shutting_down"]

log = logging.getLogger("schemadoc")

STOPPING: Final = "schemadoc_stopping"
"""The application's state attribute holding its :class:`Stopping`."""

RETRY_MILLISECONDS: Final = 2000
"""The SSE ``retry:`` a stream's final event carries: how long an EventSource waits before it reconnects."""


def shutting_down(what: str, details: dict[str, object] | None = None) -> SchemaDocError:
    """``shutting-down`` for ``what`` (a request, an event stream), with ``retry_after_seconds``."""
    return SchemaDocError(
        "shutting-down", f"The server is stopping: {what}.",
        {**(details or {}), "retry_after_seconds": max(1, RETRY_MILLISECONDS // 1000)})


class Stopping:
    """The stop of one server process: begun once, by a signal, seen by the gate and the event streams.

    ``exit_now``: what ends the process when the grace has passed (tests replace it); ``refusing``: what the
    first log line says happens to new requests.
    """

    def __init__(self, grace_seconds: float, *, exit_now: Callable[[int], None] = os._exit,
                 refusing: str = "new requests are refused (503 shutting-down)") -> None:
        self.grace_seconds = grace_seconds
        self.refusing = refusing
        self.begun_at: float | None = None
        self.signal_name = ""
        self.in_flight = 0  # HTTP requests inside the application (the gate counts them)
        self.in_flight_at_stop = 0
        self.refused = 0
        self.cut = 0  # requests still running when uvicorn's wait ended
        self.streams_ended = 0
        self._listeners: dict[int, Callable[[], None]] = {}
        self._not_streams: set[int] = set()
        self._next_key = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._exit_now = exit_now
        self._finished = threading.Event()

    @property
    def is_stopping(self) -> bool:
        return self.begun_at is not None

    def connections_timeout(self) -> int:
        """Whole seconds uvicorn waits for requests in flight and streams: the grace less what the lifespan's
        end and the snapshots need (a fifth of it, at least 1 s and at most 2 s), at least 1 s."""
        grace = int(self.grace_seconds)
        return max(1, grace - max(1, min(2, grace // 5)))

    def attach_loop(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """The event loop the application runs on (its lifespan calls this)."""
        self._loop = loop if loop is not None else asyncio.get_running_loop()

    def listen(self, callback: Callable[[], None], *, stream: bool = True) -> Callable[[], None]:
        """Call ``callback`` on the event loop when the stop begins (at once if it has); returns the
        function that stops listening. ``stream``: the listener is an event stream (counted in the log)."""
        if self.is_stopping:
            callback()
            return lambda: None
        key = self._next_key
        self._next_key += 1
        self._listeners[key] = callback
        if not stream:
            self._not_streams.add(key)

        def unlisten() -> None:
            self._listeners.pop(key, None)
            self._not_streams.discard(key)

        return unlisten

    def begin(self, signal_number: int | None = None) -> None:
        """Begin the stop (once; later calls do nothing). Safe in a signal handler: it sets the mark, and leaves
        the deadline, the log line and the streams to the event loop (when one is attached)."""
        if self.begun_at is not None:
            return
        self.begun_at = time.monotonic()
        self.in_flight_at_stop = self.in_flight
        self.signal_name = signal.Signals(signal_number).name if signal_number is not None else "request"
        # nothing that takes a lock here (a thread start, a log line): the signal may have interrupted its holder
        if self._loop is not None and not self._loop.is_closed():
            try:
                self._loop.call_soon_threadsafe(self._announce)
                return
            except RuntimeError:  # the loop closed meanwhile
                pass
        self._announce()

    def _announce(self) -> None:
        threading.Thread(target=self._deadline, name="schemadoc-stop-deadline", daemon=True).start()
        streams = len(self._listeners.keys() - self._not_streams)
        self.in_flight_at_stop = max(0, self.in_flight_at_stop - streams)  # the streams are requests too
        log.info("stopping on %s: %s; waiting up to %s s for %d request(s) in flight, ending %d event stream(s), "
                 "then writing lagging snapshots", self.signal_name, self.refusing, self.grace_seconds,
                 self.in_flight_at_stop, streams)
        listeners = list(self._listeners.values())
        self._listeners.clear()
        for callback in listeners:
            try:
                callback()
            except Exception:  # one stream's failure must not keep the others open
                log.exception("ending an event stream failed")
        self.streams_ended += streams

    def _deadline(self) -> None:
        assert self.begun_at is not None
        if self._finished.wait(max(0.0, self.begun_at + self.grace_seconds - time.monotonic())):
            return
        log.warning("stop: shutdown_grace_seconds (%s s) passed; exiting now with %d request(s) still in "
                    "flight (acknowledged writes are in the journal; snapshots may lag)",
                    self.grace_seconds, self.in_flight)
        for handler in logging.getLogger().handlers:
            # a handler that cannot flush (its stream closed) must not keep the process from ending
            with contextlib.suppress(Exception):
                handler.flush()
        self._exit_now(0)

    def finish(self, snapshots: str = "") -> None:
        """The stop ended: log how long it took and what it waited for."""
        self._finished.set()
        if self.begun_at is None:
            return
        took = time.monotonic() - self.begun_at
        log.info("stopped after %.2f s (grace %s s): waited for %d request(s) in flight (%d cut at the end of the "
                 "wait), ended %d event stream(s), refused %d request(s) during the stop%s", took, self.grace_seconds,
                 self.in_flight_at_stop, self.cut, self.streams_ended, self.refused, snapshots)


class StopGate:
    """The ASGI layer just inside the request log: counts the HTTP requests in flight, and once the stop began
    answers each new one ``503 shutting-down`` (``Connection: close``, ``Retry-After``) without reaching the
    application (the request log still gives it its id, its line and its count)."""

    def __init__(self, app: ASGIApp, stopping: Stopping) -> None:
        self.app = app
        self.stopping = stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        stopping = self.stopping
        if stopping.is_stopping:
            stopping.refused += 1
            await _refuse(send, "it no longer accepts requests; nothing was changed", scope)
            return
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        stopping.in_flight += 1
        try:
            await self.app(scope, receive, sending)
        except asyncio.CancelledError:
            if not stopping.is_stopping:
                raise
            # uvicorn cancels what is still running when its wait ends: one line instead of its traceback
            stopping.cut += 1
            log.warning("stop: %s %s was still running when the wait for requests ended; cut", scope.get("method"),
                        scope.get("path"))
            if not started:
                await _refuse(send, "this request was still running when the wait for requests in flight ended; "
                                    "a write it made, if any, is in the journal", scope)
        finally:
            stopping.in_flight -= 1


async def _refuse(send: Send, what: str, scope: Scope) -> None:
    error = shutting_down(what, {"method": scope.get("method"), "path": scope.get("path")})
    body = orjson.dumps(error_object(error))  # with the request id the request log gave it
    await send({"type": "http.response.start", "status": error.status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                            (b"retry-after", str(error.details["retry_after_seconds"]).encode()),
                            (b"connection", b"close")]})
    await send({"type": "http.response.body", "body": body})
