"""The HTTP/1.1 connection: uvicorn's httptools protocol, bounded against clients that send too much or too slowly.

uvicorn (with httptools) reads any amount of request line and headers, waits for them and for a body as long
as the client likes, and accepts every connection. :func:`bounded_protocol` gives the server a subclass of
its :class:`~uvicorn.protocols.http.httptools_impl.HttpToolsProtocol` that adds, before the application (and
so before any access token is checked) sees a request:

- **a header size limit**: the request line and headers of one request over ``max_header_bytes`` are
  answered ``431 headers-too-large`` and the connection is closed; nothing more of it is read. The bytes are
  counted as they arrive, so an unfinished header never holds more than the limit and one read (256 KiB);
- **a header timeout**: headers not complete ``header_timeout_seconds`` after the connection opened (its
  first request) or after the first byte of a later request on it are answered ``408 request-timeout``,
  and the connection is closed; so is a connection that sends nothing;
- **a body timeout**: a body that gets no new bytes for ``body_timeout_seconds`` ends the connection
  (``408`` when no response started yet). Time during which the server itself stopped reading (the
  application has not taken the body read so far) does not count. The same time bounds the other
  direction: a client that takes nothing of a response while the server's send buffer is full (a
  stalled event-stream reader, a big read never read) is cut off (the connection aborted, what it left
  unread dropped), so no response can hold its buffers forever;
- **connection caps**: beyond ``max_connections_per_client`` open connections from one client address
  (the peer's IP address) or ``max_connections`` in total, a new connection is answered
  ``503 too-many-connections`` and closed at once, freeing its socket.

Each refusal is the catalog's JSON error object (so is the ``400 invalid-request`` for bytes that are not
HTTP). The timeouts are checked by one sweep per server (every :data:`SWEEP_SECONDS`, or a quarter of the
shortest timeout), so a request costs no timer of its own: a connection only notes when its current phase
began.

What is left to a reverse proxy: rates of requests (a client that sends complete small requests quickly),
bandwidth, TLS, and a deadline on a whole body (the body timeout is per pause, so a body trickled a byte
at a time holds its connection, within the connection caps). Behind a proxy every client has the proxy's
address: the per-client caps then count them together.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any, Final

import httptools
import orjson
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from schemadoc.errors import SchemaDocError

__all__ = ["SWEEP_SECONDS", "ConnectionRegistry", "TransportLimits", "bounded_protocol", "refusal"]

SWEEP_SECONDS: Final = 1.0
"""How often, at most, the timeouts of open connections are checked."""

_IDLE: Final = 0      # between requests on a kept-alive connection (uvicorn's keep-alive timeout applies)
_HEADERS: Final = 1   # the request line and headers are being read (or a new connection's first bytes awaited)
_BODY: Final = 2      # the headers are complete, the body is being read
_DONE: Final = 3      # refused, timed out or lost: nothing more is read or timed


@dataclass(frozen=True)
class TransportLimits:
    """The bounds one server's connections keep (the settings of the same names)."""

    max_header_bytes: int = 32 << 10
    header_timeout_seconds: float = 10.0
    body_timeout_seconds: float = 30.0
    max_connections: int = 512
    max_connections_per_client: int = 64


def refusal(status: int, error: SchemaDocError) -> bytes:
    """A whole HTTP/1.1 response carrying ``error``'s JSON object that closes the connection."""
    body = orjson.dumps(error.to_dict())
    reason = {400: b"Bad Request", 408: b"Request Timeout", 431: b"Request Header Fields Too Large",
              503: b"Service Unavailable"}
    return b"".join([b"HTTP/1.1 %d %s\r\n" % (status, reason.get(status, b"Error")),
                     b"content-type: application/json\r\ncontent-length: %d\r\nconnection: close\r\n" % len(body),
                     b"retry-after: 1\r\n\r\n" if status == 503 else b"\r\n", body])


class ConnectionRegistry:
    """The open connections of one server: counts per client address and in total, and the timeout sweep."""

    def __init__(self, limits: TransportLimits) -> None:
        self.limits = limits
        self.open: set[BoundedProtocol] = set()
        self.per_client: Counter[str] = Counter()
        self.sweep_seconds = min(SWEEP_SECONDS, limits.header_timeout_seconds / 4, limits.body_timeout_seconds / 4)
        self._sweeping: asyncio.TimerHandle | None = None

    def admit(self, connection: BoundedProtocol, client: str) -> SchemaDocError | None:
        """Count ``connection`` in, or say why it is refused (it is then not counted)."""
        limits = self.limits
        held = self.per_client[client]
        if held >= limits.max_connections_per_client:
            return SchemaDocError(
                "too-many-connections",
                f"This client address already holds {held} connections, the most one client may hold "
                "(max_connections_per_client).",
                {"limit": "max_connections_per_client",
                 "max_connections_per_client": limits.max_connections_per_client, "actual": held})
        if len(self.open) >= limits.max_connections:
            return SchemaDocError(
                "too-many-connections",
                f"The server already holds {len(self.open)} connections, the most it serves (max_connections).",
                {"limit": "max_connections", "max_connections": limits.max_connections, "actual": len(self.open)})
        self.per_client[client] = held + 1
        self.open.add(connection)
        if self._sweeping is None:
            self._sweeping = connection.loop.call_later(self.sweep_seconds, self._sweep, connection.loop)
        return None

    def release(self, connection: BoundedProtocol, client: str) -> None:
        if connection in self.open:
            self.open.discard(connection)
            left = self.per_client[client] - 1
            if left > 0:
                self.per_client[client] = left
            else:
                del self.per_client[client]

    def _sweep(self, loop: asyncio.AbstractEventLoop) -> None:
        now = loop.time()
        for connection in list(self.open):
            connection.check_timeouts(now)
        self._sweeping = loop.call_later(self.sweep_seconds, self._sweep, loop) if self.open else None


class BoundedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with the bounds of the module docstring; ``registry`` is set per server."""

    registry: ConnectionRegistry

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._phase = _HEADERS
        self._since = 0.0         # when the current phase began (headers) or the body last grew
        self._header_bytes = 0
        self._client_key = ""
        self._counted = False
        self._write_stalled = 0.0  # since when the client has not taken what the server wrote (0: it has)
        self._max_header_bytes = self.registry.limits.max_header_bytes

    # -- connections -------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._since = self.loop.time()
        self._client_key = self.client[0] if self.client else ""
        refused = self.registry.admit(self, self._client_key)
        if refused is not None:
            self._refuse(503, refused)
        else:
            self._counted = True

    def connection_lost(self, exc: Exception | None) -> None:
        if self._counted:
            self._counted = False
            self.registry.release(self, self._client_key)
        self._phase = _DONE
        super().connection_lost(exc)

    def _refuse(self, status: int, error: SchemaDocError) -> None:
        """Answer ``error`` and close: nothing more is read from this connection."""
        self._phase = _DONE
        self.transport.write(refusal(status, error))
        self.transport.close()
        if self.cycle is not None and not self.cycle.response_complete:
            self.cycle.disconnected = True  # the application's receive() returns http.disconnect
            self.cycle.message_event.set()

    # -- reading -----------------------------------------------------------------------------

    def data_received(self, data: bytes) -> None:
        phase = self._phase
        if phase == _DONE:
            return
        if phase != _BODY:  # these bytes start with the request line or headers (one read over, at most)
            if phase == _IDLE:  # a later request on this connection: timed from its first byte
                self._phase = _HEADERS
                self._since = self.loop.time()
            self._header_bytes += len(data)
        self._unset_keepalive_if_required()
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            if self._should_upgrade():
                self.handle_websocket_upgrade()
            else:
                self._unsupported_upgrade_warning()
            return
        except httptools.HttpParserError:
            if self._phase != _DONE:  # not a refusal of ours stopping the parser
                msg = "Invalid HTTP request received."
                self.logger.warning(msg)
                self.send_400_response(msg)
            return
        if self._phase == _HEADERS:
            if self._header_bytes > self._max_header_bytes:
                self._refuse(431, self._too_large(self._header_bytes))
        elif self._phase == _BODY:
            self._since = self.loop.time()

    def send_400_response(self, msg: str) -> None:
        """A request httptools cannot parse: ``400 invalid-request`` as the catalog's error object, then close."""
        self._refuse(400, SchemaDocError("invalid-request", "The request is not valid HTTP/1.1; the connection is "
                                         "closed.", {"reason": msg}))

    def _too_large(self, size: int) -> SchemaDocError:
        limit = self.registry.limits.max_header_bytes
        return SchemaDocError(
            "headers-too-large",
            f"The request line and headers take more than {limit} bytes, the most the server reads "
            "(max_header_bytes).",
            {"limit": "max_header_bytes", "max_header_bytes": limit, "actual_at_least": size})

    def on_headers_complete(self) -> None:
        if self._header_bytes > self._max_header_bytes:  # what was read may hold a body too
            size = len(self.url) + sum(len(name) + len(value) + 4 for name, value in self.headers) + 16
            if size > self._max_header_bytes:
                self._refuse(431, self._too_large(size))
                raise _Refused  # stops the parser: no application, no body
        self._phase = _BODY
        self._since = self.loop.time()
        HttpToolsProtocol.on_headers_complete(self)

    def on_message_complete(self) -> None:
        self._phase = _IDLE
        self._header_bytes = 0
        HttpToolsProtocol.on_message_complete(self)

    # -- writing -----------------------------------------------------------------------------

    def pause_writing(self) -> None:
        """The transport's buffer is full: the client is not reading what the server writes."""
        super().pause_writing()
        self._write_stalled = self.loop.time()

    def resume_writing(self) -> None:
        super().resume_writing()
        self._write_stalled = 0.0

    # -- timeouts ----------------------------------------------------------------------------

    def check_timeouts(self, now: float) -> None:
        """End this connection if its headers or its body are overdue, or if it has not read any of a response
        for ``body_timeout_seconds`` (the registry's sweep calls it)."""
        phase = self._phase
        limits = self.registry.limits
        if self._write_stalled and now - self._write_stalled >= limits.body_timeout_seconds and phase != _DONE:
            self.logger.info("aborting a connection from %s: it read nothing of its response for %g seconds",
                             self._client_key, limits.body_timeout_seconds)
            self._phase = _DONE
            self.transport.abort()  # what it left unread is dropped: close() would wait for it forever
            return
        if phase == _HEADERS:
            if now - self._since < limits.header_timeout_seconds:
                return
            waited = limits.header_timeout_seconds
            reason = "request line and headers"
            setting = "header_timeout_seconds"
        elif phase == _BODY:
            if self.flow.read_paused:  # the server is not reading: the client is not late
                self._since = now
                return
            if now - self._since < limits.body_timeout_seconds:
                return
            waited = limits.body_timeout_seconds
            reason = "request body"
            setting = "body_timeout_seconds"
        else:
            return
        if self.transport.is_closing():
            return
        self.logger.info("closing a connection from %s: its %s did not arrive in time", self._client_key, reason)
        cycle = self.cycle
        if phase == _BODY:  # the cycle is this request's: answered already (without reading the whole body)?
            answered = cycle is not None and cycle.response_started
        else:  # the cycle is the previous request's: its response still under way (this one pipelined)?
            answered = cycle is not None and cycle.response_started and not cycle.response_complete
        error = SchemaDocError("request-timeout",
                               f"The {reason} did not arrive within {waited:g} seconds ({setting}).",
                               {"limit": setting, setting: waited})
        if answered:  # a response started: nothing more can be said, only closed
            self._phase = _DONE
            self.transport.close()
            assert self.cycle is not None
            self.cycle.disconnected = True
            self.cycle.message_event.set()
        else:
            self._refuse(408, error)


class _Refused(Exception):
    """Raised from a parser callback to stop parsing a refused request."""


def bounded_protocol(limits: TransportLimits) -> type[BoundedProtocol]:
    """A protocol class for one server (``uvicorn.Config(http=...)``), its connections counted together."""
    return type("BoundedHttpToolsProtocol", (BoundedProtocol,), {"registry": ConnectionRegistry(limits)})
