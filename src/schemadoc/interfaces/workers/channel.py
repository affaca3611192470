"""A worker's end of its channel to the supervisor (:class:`Channel`; the package's docstring)."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import orjson

from schemadoc.interfaces.workers.feed import TICK_SECONDS, WorkersFeed
from schemadoc.service.models import Change
from schemadoc.storage.shared import StoreNotice

if TYPE_CHECKING:
    from schemadoc.service import DocumentService
    from schemadoc.service.models import ChangeEvent

__all__ = ["MESSAGE_MAX_BYTES", "READY", "Channel"]

log = logging.getLogger("schemadoc")

READY = b"\x00ready"
"""What a worker sends on its channel once it serves (its HTTP server started)."""

MESSAGE_MAX_BYTES = 16384  # a document id (bounded by the id rule), versions, cursors, an op, a time, an actor


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
                data = self.sock.recv(MESSAGE_MAX_BYTES)
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

