"""MCP sessions over streamable HTTP bound to the credential that opened them, and counted per client address.

The SDK's session manager knows a session only by its ``Mcp-Session-Id``: whoever presents the id
may send calls in it, follow its stream and end it. :class:`SessionOwners` sits in front of it and
remembers, for every handshake-era session opened through it, the access token that opened it (the
token itself, by its digest, not its access level) and the client address it came from:

- a request naming a session is admitted only with the credential that opened it; any other
  credential, and an unknown, ended or expired session, gets one answer, ``session-not-found``
  (404, a JSON-RPC error carrying the error object), and nothing is done;
- a request opening a session is refused with ``too-many-sessions`` (503, ``details.limit`` =
  ``max_mcp_sessions_per_client``) while its client address already holds as many sessions as
  one client may, so that one client cannot take every session the server serves.

A session ends (DELETE), expires (idle) or fails in the SDK; it frees its slot from then on: what
is remembered here is pruned against the sessions the SDK still holds. Requests of the modern
protocol era carry no session and are handed on untouched. Without a tokens file every request has
the same (absent) credential: only the count per client applies.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable, Container
from dataclasses import dataclass

from mcp.types import INTERNAL_ERROR, INVALID_REQUEST
from mcp.types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.http.access import CREDENTIAL, Token
from schemadoc.interfaces.http.guards import MCP_MESSAGE_ID, MCP_PATH, error_bytes, send_json
from schemadoc.interfaces.mcp_door.server import SchemaDocMCPServer

__all__ = ["SessionOwners", "live_sessions", "open_sessions"]

_SESSION_HEADER = b"mcp-session-id"
_VERSION_HEADER = b"mcp-protocol-version"
_HANDSHAKE_VERSIONS = frozenset(HANDSHAKE_PROTOCOL_VERSIONS)


@dataclass(frozen=True)
class _Session:
    owner: bytes | None  # the digest of the token that opened it; None without tokens
    client: str


def _first(scope: Scope, header: bytes) -> str | None:
    """The first value of ``header``: the one the SDK's session manager reads."""
    return next((bytes(value).decode("latin-1") for name, value in scope.get("headers", ()) if name == header), None)


def _client(scope: Scope) -> str:
    client = scope.get("client")
    return str(client[0]) if client else ""


def _owner(scope: Scope) -> bytes | None:
    token = scope.get(CREDENTIAL)
    return token.digest if isinstance(token, Token) else None


class SessionOwners:
    """The MCP endpoint with its sessions bound to their credential and counted per client (module docstring).

    ``live``: the ids of the sessions the SDK's session manager holds now (:func:`live_sessions`).
    """

    def __init__(self, app: ASGIApp, live: Callable[[], Container[str]], max_per_client: int) -> None:
        self.app = app
        self.live = live
        self.max_per_client = max_per_client
        self._sessions: dict[str, _Session] = {}
        self._opening: dict[str, int] = {}  # per client, opening requests being served

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        version = _first(scope, _VERSION_HEADER)
        if scope["type"] != "http" or (version is not None and version not in _HANDSHAKE_VERSIONS):
            await self.app(scope, receive, send)  # the modern era has no sessions (the SDK routes by this header)
            return
        session_id = _first(scope, _SESSION_HEADER)
        owner = _owner(scope)
        if session_id is not None:
            session = self._sessions.get(session_id)
            if session is None or session_id not in self.live() or not _same(session.owner, owner):
                await self._not_found(scope, send, session_id)
                return
            await self.app(scope, receive, send)
            return
        if scope["method"] != "POST":
            await self.app(scope, receive, send)  # the SDK answers a GET or DELETE without a session: none is opened
            return
        client = _client(scope)
        self._prune()
        held = sum(1 for session in self._sessions.values() if session.client == client)
        held += self._opening.get(client, 0)
        if held >= self.max_per_client:
            await self._too_many(scope, send, held)
            return
        self._opening[client] = self._opening.get(client, 0) + 1

        async def opening(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] < 400:
                opened = next((bytes(value).decode("latin-1") for name, value in message.get("headers", ())
                               if name.lower() == _SESSION_HEADER), None)
                if opened is not None:
                    self._sessions[opened] = _Session(owner, client)
            await send(message)

        try:
            await self.app(scope, receive, opening)
        finally:
            left = self._opening[client] - 1
            if left:
                self._opening[client] = left
            else:
                del self._opening[client]

    def _prune(self) -> None:
        live = self.live()
        for session_id in [session_id for session_id in self._sessions if session_id not in live]:
            del self._sessions[session_id]

    async def _not_found(self, scope: Scope, send: Send, session_id: str) -> None:
        error = SchemaDocError(
            "session-not-found",
            f"No MCP session {session_id[:64]!r} is open for the credential presented: it ended, expired, never "
            "existed, or was opened with another access token.",
            {"header": "Mcp-Session-Id"})
        await send_json(send, 404, error_bytes(error, MCP_PATH, scope.get(MCP_MESSAGE_ID), MCP_PATH,
                                               INVALID_REQUEST))

    async def _too_many(self, scope: Scope, send: Send, held: int) -> None:
        error = SchemaDocError(
            "too-many-sessions",
            f"This client address already holds {held} MCP sessions, the most one client may "
            "(max_mcp_sessions_per_client).",
            {"limit": "max_mcp_sessions_per_client", "max_mcp_sessions_per_client": self.max_per_client,
             "actual": held})
        await send_json(send, 503, error_bytes(error, MCP_PATH, scope.get(MCP_MESSAGE_ID), MCP_PATH,
                                               INTERNAL_ERROR))


def _same(opened_by: bytes | None, presented: bytes | None) -> bool:
    if opened_by is None or presented is None:
        return opened_by is presented
    return hmac.compare_digest(opened_by, presented)


def live_sessions(server: SchemaDocMCPServer) -> Callable[[], Container[str]]:
    """The ids of the handshake-era sessions the server's session manager holds (the SDK keeps them private).

    ``RuntimeError`` at once if this SDK keeps them elsewhere: sessions would otherwise never free a slot.
    """
    manager = server.session_manager
    if not isinstance(getattr(manager, "_server_instances", None), dict):
        raise RuntimeError("this MCP SDK's session manager keeps no _server_instances: schemadoc cannot tell "
                           "which sessions are open")

    def live() -> Container[str]:
        return manager._server_instances

    return live


def open_sessions(server: SchemaDocMCPServer) -> Callable[[], int]:
    """How many handshake-era sessions the server's session manager holds (the SDK keeps them private)."""
    def count() -> int:
        instances = getattr(server.session_manager, "_server_instances", None)
        return len(instances) if isinstance(instances, dict) else server.session_manager.max_sessions or 0
    return count
