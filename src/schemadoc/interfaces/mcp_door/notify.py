"""Change notifications for MCP clients of both protocol eras.

The service calls its listeners in the writer's thread, right after a commit. The
:class:`ChangeNotifier` only hands each event to the event loop the MCP server runs on
(``loop.call_soon_threadsafe``); on the loop it then publishes

- ``ResourceUpdated("schema://{doc_id}")`` (and ``ResourcesListChanged`` when a document
  appeared or disappeared) on the :class:`SubscriptionBus`, which feeds the modern era's
  ``subscriptions/listen`` streams, and
- ``notifications/resources/updated`` (and ``notifications/resources/list_changed``) to every
  handshake-era connection that subscribed to that URI with ``resources/subscribe``.

Writes made by any door of the same process (REST, MCP, CLI) reach every MCP subscriber,
because the notifier listens to the service, not to the MCP tools. The service publishes only
committed versions (never a dry run or a refused write), and the notifier publishes them one
at a time, in the order the service reported them, so every subscriber hears of a document's
versions in order and of a list change after the write that caused it.

Nothing a slow subscriber does grows the server without bound: a change waiting to be published
holds no journal entry, and past :data:`MAX_WAITING_NOTICES` changes to one document are merged
into one notice ("read again" says the same once); a handshake-era
connection that does not take a notification within :data:`SEND_TIMEOUT_SECONDS` is dropped
(the SDK buffers 16 messages per stream); a ``subscriptions/listen`` stream buffers at most
1,024 small events in the SDK and is ended beyond that; a response nobody reads is ended by the
HTTP protocol's timeout (:mod:`~schemadoc.interfaces.http.protocol`).

Each subscription to a document's URI (``resources/subscribe``, or a ``subscriptions/listen``
stream naming it) takes a slot of the :class:`~schemadoc.interfaces.http.subscribers.SubscriberSlots`
shared with the REST event streams (per document, in total and per client address); one beyond the
limits is a JSON-RPC error whose ``data`` is the ``too-many-subscribers`` error object. The slot
frees on unsubscribe, when the connection or stream ends, and when the peer is dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp import MCPError
from mcp.server import NotificationOptions, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.server.mcpserver import MCPServer
from mcp.server.session import ServerSession
from mcp.server.subscriptions import ResourcesListChanged, ResourceUpdated, SubscriptionBus
from mcp.types import (
    INTERNAL_ERROR,
    EmptyResult,
    SubscribeRequestParams,
    SubscriptionsListenRequestParams,
    SubscriptionsListenResult,
    UnsubscribeRequestParams,
)
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS

from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.http.request_context import error_object
from schemadoc.interfaces.http.subscribers import SubscriberSlots, document_of_uri
from schemadoc.service import ChangeEvent, DocumentService

__all__ = ["LIST_CHANGING_KINDS", "ChangeNotifier", "document_uri"]

log = logging.getLogger("schemadoc.mcp")

LIST_CHANGING_KINDS = frozenset({"created", "deleted", "undeleted", "purged"})
"""Change kinds that add a document to, or remove one from, ``resources/list``."""

SEND_TIMEOUT_SECONDS = 5.0
"""A legacy connection that does not take a notification within this time is dropped (a stuck client cannot hold
the others up for long)."""


MAX_WAITING_NOTICES = 1024
"""Change notices waiting to be published beyond which changes to one document are merged."""


@dataclass
class _Notice:
    """A change waiting to be published: which document, its newest version, and what kind of change."""

    doc_id: str
    version: int
    kind: str

    def merge(self, event: ChangeEvent) -> None:
        """Fold a later change of the same document in: a purge or a list change is kept."""
        self.version = max(self.version, event.version)
        if self.kind != "purged" and (event.kind == "purged" or event.kind in LIST_CHANGING_KINDS
                                      or self.kind not in LIST_CHANGING_KINDS):
            self.kind = event.kind


def document_uri(doc_id: str) -> str:
    """The MCP resource URI of a document."""
    return f"schema://{doc_id}"


@dataclass
class _LegacyPeer:
    """A handshake-era connection: the latest session seen on it and the URIs it subscribed to, each with the
    release of the subscriber slot it holds (``None`` for a URI that is not a document's)."""

    session: ServerSession
    uris: dict[str, Callable[[], None] | None] = field(default_factory=dict)

    def discard(self, uri: str) -> None:
        release = self.uris.pop(uri, None)
        if release is not None:
            release()

    def release_all(self) -> None:
        for uri in list(self.uris):
            self.discard(uri)


def limit_error(error: SchemaDocError) -> MCPError:
    """A catalogued capacity refusal as a JSON-RPC error (``data`` is the error object)."""
    return MCPError(code=INTERNAL_ERROR, message=error.message, data=error_object(error))


class ChangeNotifier:
    """Fans committed changes out to MCP clients (one worker task publishes them in order); one per MCP server.

    Every method except :meth:`on_change` runs on the server's event loop. The loop is
    attached when the server starts (its lifespan), lazily on each inbound message, or
    explicitly with :meth:`attach_loop`; until then changes are dropped (nobody can be
    listening yet).
    """

    def __init__(self, bus: SubscriptionBus, *, max_peers: int = 1024, max_uris_per_peer: int = 1024,
                 slots: SubscriberSlots | None = None, max_waiting: int = MAX_WAITING_NOTICES) -> None:
        self.bus = bus
        self.slots = slots if slots is not None else SubscriberSlots()
        self.max_peers = max_peers
        self.max_uris_per_peer = max_uris_per_peer
        self._loop: asyncio.AbstractEventLoop | None = None
        self._peers: OrderedDict[object, _LegacyPeer] = OrderedDict()
        self.max_waiting = max_waiting
        self._queue: deque[_Notice] = deque()
        self._newest: dict[str, _Notice] = {}  # the newest waiting notice of each document
        self._worker: asyncio.Task[None] | None = None
        self._detach: Callable[[], None] | None = None

    # -- wiring ------------------------------------------------------------------------------

    def connect(self, service: DocumentService) -> None:
        """Listen to the service's committed changes (once)."""
        if self._detach is None:
            self._detach = service.subscribe(self.on_change)

    def close(self) -> None:
        """Stop listening to the service and forget every legacy subscriber."""
        if self._detach is not None:
            self._detach()
            self._detach = None
        for peer in self._peers.values():
            peer.release_all()
        self._peers.clear()
        self._queue.clear()
        self._newest.clear()

    def install(self, server: MCPServer[Any]) -> None:
        """Serve legacy ``resources/subscribe``/``unsubscribe`` and advertise ``listChanged``.

        ``MCPServer`` serves only the modern ``subscriptions/listen``; the handshake-era methods
        are added on its low-level server (the SDK's documented route for methods the 2026
        revision removed), and its initialization options are made to advertise
        ``resources.listChanged`` to handshake-era clients.
        """
        low = server._lowlevel_server
        low.add_request_handler("resources/subscribe", SubscribeRequestParams, self.on_subscribe)
        low.add_request_handler("resources/unsubscribe", UnsubscribeRequestParams, self.on_unsubscribe)
        listen = low.get_request_handler("subscriptions/listen")
        if listen is not None:
            low.add_request_handler("subscriptions/listen", SubscriptionsListenRequestParams,
                                    functools.partial(self.on_listen, listen.handler))
        low.middleware.append(self.middleware)
        low.create_initialization_options = functools.partial(  # type: ignore[method-assign]
            low.create_initialization_options, NotificationOptions(resources_changed=True))

    async def say_stopping(self, timeout: float = 0.3) -> int:
        """Tell every handshake-era subscriber that the server stops, before its stream is ended: a
        ``notifications/message`` (level ``warning``, logger ``schemadoc``) whose ``data`` is the ``shutting-down``
        error object naming the URIs it subscribed to. Each peer gets at most ``timeout`` seconds; returns how many
        were told."""
        peers = [peer for peer in self._peers.values() if peer.uris]

        async def tell(peer: _LegacyPeer) -> bool:
            error = SchemaDocError(
                "shutting-down", "The server is stopping: this connection and its subscriptions end now.",
                {"subscriptions": sorted(peer.uris)},
                remediation="Connect again once the server is back (or to another on the same storage), read the "
                            "documents again (resources/read) and subscribe again.")
            with anyio.move_on_after(timeout):
                await peer.session.send_log_message(level="warning", data=error.to_dict(), logger="schemadoc")
                return True
            return False

        told = await asyncio.gather(*(tell(peer) for peer in peers), return_exceptions=True)
        return sum(1 for result in told if result is True)

    def attach_loop(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        """Deliver changes on ``loop`` (default: the running loop)."""
        self._loop = loop if loop is not None else asyncio.get_running_loop()

    # -- from the writer's thread ------------------------------------------------------------

    def on_change(self, event: ChangeEvent) -> None:
        """The service listener: hand the event to the loop, never block the writer."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        try:
            loop.call_soon_threadsafe(self._enqueue, event)
        except RuntimeError:  # the loop closed between the check and the call
            log.debug("event loop closed; change of %s v%d not published", event.doc_id, event.version)

    def _enqueue(self, event: ChangeEvent) -> None:
        """Queue ``event`` behind the ones not yet published; one worker publishes them in order.

        A waiting notice holds no journal entry. Past ``max_waiting`` notices, a change to a document
        that already has one waiting is merged into it (the newest version; a list change or a purge
        kept), since a notification only says "read again": however slowly subscribers take
        notifications, at most ``max_waiting`` notices and one per document changed meanwhile wait.
        """
        waiting = self._newest.get(event.doc_id)
        if waiting is not None and len(self._queue) >= self.max_waiting:
            waiting.merge(event)
        else:
            notice = _Notice(event.doc_id, event.version, event.kind)
            self._queue.append(notice)
            self._newest[event.doc_id] = notice
        loop = asyncio.get_running_loop()
        worker = self._worker
        if worker is None or worker.done() or worker.get_loop() is not loop:
            self._worker = loop.create_task(self._work())

    async def _work(self) -> None:
        while self._queue:
            notice = self._queue.popleft()
            if self._newest.get(notice.doc_id) is notice:
                del self._newest[notice.doc_id]
            try:
                await self.publish(ChangeEvent(notice.doc_id, notice.version, notice.kind, None))
            except Exception:
                log.exception("publishing the change of %s v%d failed", notice.doc_id, notice.version)

    async def drain(self) -> None:
        """Wait until every change handed to the loop so far has been published."""
        await anyio.sleep(0)  # let callbacks scheduled with call_soon_threadsafe queue their events
        loop = asyncio.get_running_loop()
        while (worker := self._worker) is not None and not worker.done() and worker.get_loop() is loop:
            await asyncio.wait([worker])

    # -- on the loop -------------------------------------------------------------------------

    async def publish(self, event: ChangeEvent) -> None:
        """Tell modern listeners and legacy subscribers that a document changed."""
        uri = document_uri(event.doc_id)
        list_changed = event.kind in LIST_CHANGING_KINDS
        await self.bus.publish(ResourceUpdated(uri=uri))
        if list_changed:
            await self.bus.publish(ResourcesListChanged())
        for key, peer in list(self._peers.items()):
            if uri not in peer.uris and not list_changed:
                continue
            try:
                with anyio.fail_after(SEND_TIMEOUT_SECONDS):
                    if uri in peer.uris:
                        await peer.session.send_resource_updated(uri)
                    if list_changed:
                        await peer.session.send_resource_list_changed()
            except Exception as error:  # a closed or stuck connection: forget it
                log.info("dropping MCP subscriber after a failed notification: %r", error)
                self._forget(key)
        if event.kind == "purged":  # the document is gone for good: nothing more will be said about it
            for peer in self._peers.values():
                peer.discard(uri)

    async def middleware(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Attach the loop lazily and remember handshake-era connections (for ``list_changed``)."""
        if self._loop is None or self._loop.is_closed():
            self.attach_loop()
        if (ctx.request_id is not None and ctx.method != "initialize"
                and ctx.protocol_version in HANDSHAKE_PROTOCOL_VERSIONS):
            self._peer(ctx.session)
        return await call_next(ctx)

    async def on_subscribe(self, ctx: ServerRequestContext[Any, Any],
                           params: SubscribeRequestParams) -> EmptyResult:
        peer = self._peer(ctx.session)
        if peer is not None:
            uri = str(params.uri)
            if uri in peer.uris:
                return EmptyResult()
            doc_id = document_of_uri(uri)
            if doc_id is None:  # nothing but documents ever changes: nothing to remember (a URI may be huge)
                return EmptyResult()
            try:
                release = self.slots.acquire(doc_id, client_of(ctx))
            except SchemaDocError as error:
                raise limit_error(error) from None
            if len(peer.uris) >= self.max_uris_per_peer:
                peer.discard(next(iter(peer.uris)))
            peer.uris[uri] = release
        return EmptyResult()

    async def on_listen(self, handler: Callable[..., Any], ctx: ServerRequestContext[Any, Any],
                        params: SubscriptionsListenRequestParams) -> SubscriptionsListenResult:
        """``subscriptions/listen``, holding a subscriber slot per document URI while the stream lasts."""
        with contextlib.ExitStack() as slots:
            try:
                for uri in dict.fromkeys(params.notifications.resource_subscriptions or ()):
                    if (doc_id := document_of_uri(uri)) is not None:
                        slots.callback(self.slots.acquire(doc_id, client_of(ctx)))
            except SchemaDocError as error:
                raise limit_error(error) from None
            result: SubscriptionsListenResult = await handler(ctx, params)
            return result

    async def on_unsubscribe(self, ctx: ServerRequestContext[Any, Any],
                             params: UnsubscribeRequestParams) -> EmptyResult:
        peer = self._peers.get(_connection_key(ctx.session))
        if peer is not None:
            peer.discard(str(params.uri))
        return EmptyResult()

    def subscribers(self, uri: str) -> int:
        """How many legacy connections subscribed to ``uri`` (for tests and diagnostics)."""
        return sum(1 for peer in self._peers.values() if uri in peer.uris)

    def _peer(self, session: ServerSession) -> _LegacyPeer | None:
        """The peer of the session's connection, registered (with clean-up on close) on first sight."""
        connection = _connection_of(session)
        if connection is not None and not getattr(connection, "has_standalone_channel", True):
            return None  # stateless HTTP: nothing can be pushed to this client
        key = _connection_key(session)
        peer = self._peers.get(key)
        if peer is not None:
            peer.session = session
            self._peers.move_to_end(key)
            return peer
        peer = _LegacyPeer(session)
        self._peers[key] = peer
        if connection is not None and hasattr(connection, "exit_stack"):
            connection.exit_stack.callback(self._forget, key)
        while len(self._peers) > self.max_peers:
            self._forget(next(iter(self._peers)))
        return peer

    def _forget(self, key: object) -> None:
        """Drop a peer and give back its subscriber slots."""
        peer = self._peers.pop(key, None)
        if peer is not None:
            peer.release_all()


def client_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The client address of a request over HTTP (the peer's IP address), ``None`` on stdio."""
    client = getattr(ctx.request, "client", None)
    host = getattr(client, "host", None)
    return host if isinstance(host, str) else None


def _connection_of(session: ServerSession) -> Any:
    """The connection behind a per-request session (the SDK keeps it private)."""
    return getattr(session, "_connection", None)


def _connection_key(session: ServerSession) -> object:
    connection = _connection_of(session)
    return connection if connection is not None else session
