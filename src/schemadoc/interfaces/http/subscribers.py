"""How many live change subscribers the server serves, per document and in total.

A subscriber is one REST event stream (``/documents/{doc_id}/events``) or one MCP resource
subscription to ``schema://{doc_id}`` (``resources/subscribe`` on a handshake-era connection, or a
``subscriptions/listen`` stream naming that URI). Both doors take their slots from one
:class:`SubscriberSlots`, so the limits hold whichever door subscribers come through: per document,
in total, and per client address (the peer's IP address, so that one client cannot take every
slot). A new subscriber beyond any limit is refused with ``too-many-subscribers`` (503,
``details.limit`` naming the setting); subscribers already following are not affected, and a slot
frees as soon as its subscriber disconnects or unsubscribes.

The slots also carry ``buffer_bytes`` (``subscriber_buffer_bytes``): how many bytes of change
events one subscriber may leave unread before it is cut off (:mod:`~schemadoc.interfaces.http.feeds`).
"""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable
from typing import Final

from schemadoc.config import Settings
from schemadoc.errors import SchemaDocError

__all__ = [
    "MAX_SUBSCRIBERS_PER_CLIENT",
    "MAX_SUBSCRIBERS_PER_DOCUMENT",
    "MAX_SUBSCRIBERS_TOTAL",
    "SUBSCRIBER_BUFFER_BYTES",
    "SubscriberSlots",
    "document_of_uri",
    "slots_of",
]

MAX_SUBSCRIBERS_PER_DOCUMENT: Final = 100
MAX_SUBSCRIBERS_TOTAL: Final = 1000
MAX_SUBSCRIBERS_PER_CLIENT: Final = 100
SUBSCRIBER_BUFFER_BYTES: Final = 8 << 20

_DOCUMENT_URI = re.compile(r"schema://([0-9A-Za-z]{26})")


def slots_of(settings: Settings) -> SubscriberSlots:
    """The subscriber slots of a server with ``settings``."""
    return SubscriberSlots(settings.max_subscribers_per_document, settings.max_subscribers_total,
                           per_client=settings.max_subscribers_per_client,
                           buffer_bytes=settings.subscriber_buffer_bytes)


def document_of_uri(uri: str) -> str | None:
    """The doc_id of a document resource URI (``schema://{doc_id}``), else ``None``."""
    match = _DOCUMENT_URI.fullmatch(uri)
    return match.group(1).upper() if match else None


class SubscriberSlots:
    """Counts live subscribers; thread-safe. :meth:`acquire` takes a slot, its result gives it back."""

    def __init__(self, per_document: int = MAX_SUBSCRIBERS_PER_DOCUMENT,
                 total: int = MAX_SUBSCRIBERS_TOTAL, *, per_client: int = MAX_SUBSCRIBERS_PER_CLIENT,
                 buffer_bytes: int = SUBSCRIBER_BUFFER_BYTES) -> None:
        self.per_document = per_document
        self.total = total
        self.per_client = per_client
        self.buffer_bytes = buffer_bytes
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()  # only documents with subscribers
        self._clients: Counter[str] = Counter()  # only client addresses with subscribers

    def count(self, doc_id: str | None = None) -> int:
        """Subscribers of ``doc_id`` (all documents when ``None``)."""
        with self._lock:
            return self._counts.total() if doc_id is None else self._counts[doc_id]

    def held_by(self, client: str) -> int:
        """Subscribers of the client address ``client``."""
        with self._lock:
            return self._clients[client]

    def acquire(self, doc_id: str, client: str | None = None) -> Callable[[], None]:
        """A slot for one more subscriber of ``doc_id`` from the address ``client`` (``None``: a client of its
        own, such as the one peer of MCP on stdio), or ``too-many-subscribers``.

        Returns the release: calling it gives the slot back (once; later calls do nothing).
        """
        with self._lock:
            current, total = self._counts[doc_id], self._counts.total()
            held = 0 if client is None else self._clients[client]
            for limit, actual, bound, what in (
                    ("max_subscribers_per_client", held, self.per_client,
                     f"This client address already holds {held} subscriptions, the most one client may hold"),
                    ("max_subscribers_per_document", current, self.per_document,
                     f"Document {doc_id} already has {current} subscribers, the most one document may have"),
                    ("max_subscribers_total", total, self.total,
                     f"The server already has {total} subscribers, the most it serves")):
                if actual >= bound:
                    raise SchemaDocError("too-many-subscribers", f"{what} ({limit}).",
                                         {"limit": limit, limit: bound, "actual": actual, "doc_id": doc_id})
            self._counts[doc_id] += 1
            if client is not None:
                self._clients[client] = held + 1
        released = False

        def release() -> None:
            nonlocal released
            with self._lock:
                if not released:
                    released = True
                    self._counts[doc_id] -= 1
                    if not self._counts[doc_id]:
                        del self._counts[doc_id]
                    if client is not None:
                        self._clients[client] -= 1
                        if not self._clients[client]:
                            del self._clients[client]

        return release
