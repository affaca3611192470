"""Who may use the HTTP server: Host and Origin checks and bearer tokens, one ASGI layer in front of every door.

:class:`AccessGuard` wraps the whole application (REST, its event streams, MCP over streamable
HTTP at ``/mcp``, the API docs and the page at ``/ui``), so every door refuses the same requests
with the same catalogued error and status. MCP over stdio never passes here: it is local.
docs/security.md is the contract: which hosts, origins and tokens are admitted, which requests
write, the tokens file and its reloading.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from starlette.types import ASGIApp, Receive, Scope, Send

from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.http.actors import CREDENTIAL
from schemadoc.interfaces.http.apidocs import ASSETS_PATH
from schemadoc.interfaces.http.guards import McpReader, error_bytes, message_id, route_path, send_json

__all__ = [
    "CREDENTIAL",
    "LOOPBACK_HOSTS",
    "MAX_TOKEN_NAME_LENGTH",
    "AccessGuard",
    "HostPolicy",
    "Token",
    "TokensFile",
    "is_loopback",
    "mcp_message_writes",
]

log = logging.getLogger("schemadoc.access")

LOOPBACK_HOSTS: Final = ("localhost", "127.0.0.1", "[::1]")
"""The names a loopback server answers for unless ``allowed_hosts`` says otherwise."""
MIN_TOKEN_LENGTH: Final = 16
MAX_TOKEN_NAME_LENGTH: Final = 200
"""A token's name is the actor of its writes (journaled with each one): printable, at most this long."""
ACCESS_LEVELS: Final = ("read-only", "read-write")
_READ_METHODS: Final = frozenset({"GET", "HEAD", "OPTIONS"})
_OPEN_PATHS: Final = ("/health", "/docs", "/redoc", "/openapi.json", "/ui", ASSETS_PATH)
"""Answered without a token to GET and HEAD: health checks and pages (and the API docs' scripts and styles) that
hold no document data."""
_SINGLE_HEADERS: Final = {b"host": "Host", b"origin": "Origin", b"authorization": "Authorization"}
"""Headers a request carries at most once (RFC 9110 and 9112; RFC 6454 for Origin): two would be read one way
here and perhaps the other by a proxy in front."""
_MCP_READ_METHODS: Final = frozenset({
    "initialize", "ping", "tools/list", "resources/list", "resources/templates/list", "resources/read",
    "resources/subscribe", "resources/unsubscribe", "prompts/list", "prompts/get", "completion/complete",
    "logging/setLevel", "subscriptions/listen", "server/discover"})
_REALM: Final = 'Bearer realm="schemadoc"'
_CHALLENGES: Final = {  # the WWW-Authenticate header of each token refusal (RFC 6750)
    "token-missing": _REALM.encode(),
    "token-invalid": f'{_REALM}, error="invalid_token"'.encode(),
    "token-read-only": f'{_REALM}, error="insufficient_scope", scope="read-write"'.encode(),
}


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) is a loopback address."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


_HOST: Final = re.compile(r"(\[[0-9a-f:.]+\]|[a-z0-9._~-]+)(?::([0-9]{1,5}))?")
"""``host[:port]`` (RFC 9110 7.2): a bracketed IPv6 address, or a name of letters, digits and ``-._~`` (every DNS
name and IPv4 address; the RFC's rarer reg-name characters are refused), and a port of digits."""


def _split_host(value: str) -> tuple[str, int | None] | None:
    """``(name, port)`` of a Host header or an origin's authority, names lower-case, IPv6 without brackets; ``None``
    for anything that is not exactly ``host[:port]``."""
    match = _HOST.fullmatch(value.strip().lower())
    if match is None:
        return None
    name, port = match.group(1), match.group(2)
    if name.startswith("["):
        try:
            ipaddress.IPv6Address(name[1:-1])
        except ValueError:
            return None
        name = name[1:-1]
    number = int(port) if port is not None else None
    return None if number is not None and number > 65535 else (name, number)


@dataclass(frozen=True)
class _HostRule:
    name: str  # "*" any; ".example.com" its subdomains; else one name
    port: int | None  # None: any port

    @classmethod
    def parse(cls, text: str) -> _HostRule:
        if text == "*":
            return cls("*", None)
        if text.startswith("*."):
            return cls(text[1:], None)
        text = text.removesuffix(":*")
        if text.count(":") > 1 and not text.startswith("["):
            text = f"[{text}]"  # a bare IPv6 address
        split = _split_host(text)
        if split is None:
            raise SchemaDocError("config-invalid", f"allowed_hosts: {text!r} is not a host name.",
                                 {"setting": "allowed_hosts", "value": text})
        return cls(*split)

    def admits(self, name: str, port: int | None) -> bool:
        return (self.port is None or port == self.port) and (
            self.name in ("*", name) or (self.name.startswith(".") and name.endswith(self.name)))


class HostPolicy:
    """Which ``Host`` and ``Origin`` headers the server admits (see the module docstring)."""

    def __init__(self, allowed_hosts: Iterable[str] | None, server_host: str, cors_origins: Iterable[str] = ()) -> None:
        if allowed_hosts is None:
            allowed_hosts = LOOPBACK_HOSTS if is_loopback(server_host) else ("*",)
        self.allowed_hosts = tuple(allowed_hosts)
        self._rules = tuple(_HostRule.parse(host) for host in self.allowed_hosts)
        self.any_host = any(rule.name == "*" and rule.port is None for rule in self._rules)
        self.cors_origins = frozenset(origin.rstrip("/").lower() for origin in cors_origins)
        self._verdicts: dict[tuple[str | None, str | None], str | None] = {}

    def admits(self, host: str | None, origin: str | None) -> str | None:
        """Why a request with these headers is refused (``"malformed-host"``, ``"host"``, ``"origin"``) or
        ``None``, remembered for the few pairs a server sees."""
        key = (host, origin)
        if key in self._verdicts:
            return self._verdicts[key]
        verdict: str | None = None
        if host and _split_host(host) is None:
            verdict = "malformed-host"  # refused whatever the allowed hosts, "*" too
        elif not self.host_allowed(host):
            verdict = "host"
        elif origin is not None and not self.origin_allowed(origin, host):
            verdict = "origin"
        if len(self._verdicts) >= 1024:
            self._verdicts.clear()
        self._verdicts[key] = verdict
        return verdict

    def host_allowed(self, host: str | None) -> bool:
        if self.any_host:
            return True
        split = _split_host(host) if host else None
        return split is not None and any(rule.admits(*split) for rule in self._rules)

    def origin_allowed(self, origin: str, host: str | None, *, writes: bool = False) -> bool:
        """Whether a request from the web ``origin`` is admitted; one that ``writes`` only from the server's own
        origin or one listed in ``cors_origins`` (a page on another port of an allowed host may read, not write:
        a browser sends its bodiless or ``text/plain`` writes without asking first)."""
        origin = origin.strip().rstrip("/").lower()
        if origin in self.cors_origins or "*" in self.cors_origins:
            return True
        scheme, separator, authority = origin.partition("://")
        split = _split_host(authority) if separator else None
        if scheme not in ("http", "https") or split is None:
            return False  # "null" (sandboxed frames, file pages), other schemes, anything but scheme://host[:port]
        if host is not None and _split_host(host) == split:
            return True  # the server's own origin: the page was served by this host and port
        return not writes and any(rule.name != "*" and rule.admits(*split) for rule in self._rules)


@dataclass(frozen=True)
class Token:
    """One named token: the SHA-256 digest of its secret and whether it may write."""

    name: str
    digest: bytes
    writes: bool


def _file_error(path: Path, message: str) -> SchemaDocError:
    return SchemaDocError("config-invalid", f"The tokens file {path} {message}",
                          {"setting": "tokens_file", "path": str(path)},
                          remediation='Write it as {"tokens": [{"name": "...", "token": "...", "access": '
                                      '"read-only" or "read-write"}]} (see docs/security.md).')


def parse_tokens(path: Path, raw: bytes) -> tuple[Token, ...]:
    """The tokens of a tokens file's bytes; ``config-invalid`` naming the entry for anything wrong (never a secret)."""
    try:
        data = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise _file_error(path, f"is not JSON: {error.msg if isinstance(error, json.JSONDecodeError) else error}."
                          ) from None
    if not isinstance(data, dict) or set(data) != {"tokens"} or not isinstance(data["tokens"], list):
        raise _file_error(path, 'must hold one JSON object {"tokens": [...]}.')
    tokens: list[Token] = []
    names: set[str] = set()
    holders: dict[bytes, str] = {}  # digest -> the first entry giving it
    for index, item in enumerate(data["tokens"]):
        where = f"entry {index}"
        if not isinstance(item, dict):
            raise _file_error(path, f"has an {where} that is not an object.")
        unknown = sorted(set(item) - {"name", "token", "sha256", "access"})
        name = item.get("name")
        if not isinstance(name, str) or not name.strip():
            raise _file_error(path, f"has an {where} without a name.")
        if len(name) > MAX_TOKEN_NAME_LENGTH or not name.isprintable():
            raise _file_error(path, f"gives {where} a name that is not at most {MAX_TOKEN_NAME_LENGTH} printable "
                              "characters (the name is journaled as the actor of the token's writes).")
        where = f"token {name!r}"
        if unknown:
            raise _file_error(path, f"has unknown members in {where}: {', '.join(unknown)}.")
        if name in names:
            raise _file_error(path, f"names {where} twice.")
        names.add(name)
        access = item.get("access")
        if access not in ACCESS_LEVELS:
            raise _file_error(path, f"gives {where} the access {access!r}; it must be read-only or read-write.")
        secret, digest_hex = item.get("token"), item.get("sha256")
        if (secret is None) == (digest_hex is None):
            raise _file_error(path, f"must give {where} exactly one of token and sha256.")
        if secret is not None:
            if not isinstance(secret, str) or len(secret) < MIN_TOKEN_LENGTH or not secret.isascii() or any(
                    char.isspace() or not char.isprintable() for char in secret):
                raise _file_error(path, f"gives {where} a secret that is not at least {MIN_TOKEN_LENGTH} printable "
                                  "ASCII characters without spaces.")
            digest = hashlib.sha256(secret.encode()).digest()
        else:
            try:
                digest = bytes.fromhex(digest_hex) if isinstance(digest_hex, str) else b""
            except ValueError:
                digest = b""
            if len(digest) != 32:
                raise _file_error(path, f"gives {where} a sha256 that is not 64 hexadecimal digits.")
        if digest in holders:  # one secret, two entries: which access it has would depend on the order
            raise _file_error(path, f"gives {where} the same secret as token {holders[digest]!r} (as token or "
                              "sha256); list each secret once, with one access.")
        holders[digest] = name
        tokens.append(Token(name, digest, access == "read-write"))
    return tuple(tokens)


class TokensFile:
    """The tokens of a file, read again whenever the file changes (size, time or inode).

    Constructed from a readable, valid file (else ``config-invalid``). Afterwards a file that
    disappears or becomes invalid is logged once and admits no token until it is fixed.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._guard = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self._tokens: tuple[Token, ...] = ()
        self._reload(raise_errors=True)

    def _signature(self) -> tuple[int, int, int] | None:
        try:
            status = os.stat(self.path)
        except OSError:
            return None
        return status.st_mtime_ns, status.st_size, status.st_ino

    def _reload(self, *, raise_errors: bool = False) -> None:
        signature = self._signature()
        with self._guard:
            if signature == self._seen and signature is not None:
                return
            try:
                if signature is None:
                    raise _file_error(self.path, "cannot be read.")
                tokens = parse_tokens(self.path, self.path.read_bytes())
            except (SchemaDocError, OSError) as error:
                if raise_errors:
                    raise error if isinstance(error, SchemaDocError) else _file_error(
                        self.path, f"cannot be read: {error.strerror or error}.") from None
                if self._tokens or self._seen != signature:
                    log.error("%s; every token is refused until it is fixed", error)
                self._tokens, self._seen = (), signature
                return
            if self._seen is not None:
                log.info("tokens file %s read again: %d token(s)", self.path, len(tokens))
            self._tokens, self._seen = tokens, signature

    def find(self, presented: str) -> Token | None:
        """The token whose secret is ``presented``, comparing digests in constant time with every entry."""
        self._reload()
        digest = hashlib.sha256(presented.encode("utf-8", "surrogateescape")).digest()
        found: Token | None = None
        for token in self._tokens:  # no early exit: the time does not tell which entry matched
            if hmac.compare_digest(token.digest, digest) and found is None:
                found = token
        return found


def mcp_message_writes(message: Any, read_only_tools: frozenset[str]) -> bool:
    """Whether one JSON-RPC message (or a batch) may change documents: unknown methods count as writes."""
    if isinstance(message, list):
        return any(mcp_message_writes(item, read_only_tools) for item in message) or not message
    if not isinstance(message, dict):
        return True
    method = message.get("method")
    if method is None:
        return "result" not in message and "error" not in message  # a reply to the server reads
    if not isinstance(method, str):
        return True
    if method.startswith("notifications/") or method in _MCP_READ_METHODS:
        return False
    if method == "tools/call":
        params = message.get("params")
        name = params.get("name") if isinstance(params, dict) else None
        return name not in read_only_tools
    return True


class AccessGuard:
    """The ASGI layer of this module: Host and Origin checks first, then the bearer token.

    ``read_only_tools``: the MCP tools whose annotations say they only read. ``reads``: whether a
    request with a method other than GET, HEAD or OPTIONS only reads all the same (an operation of
    the catalogue that takes a body but changes nothing). ``mcp_path``: where MCP answers (its
    refusals are JSON-RPC errors carrying the error object, as its other errors). ``mcp_reader``:
    reads every message posted there (whatever the token, or without tokens) once, after Host,
    Origin and token are admitted and before anything else; a read-only token's decision is taken
    on the value it parsed, the very value the MCP transport is handed.
    """

    def __init__(self, app: ASGIApp, *, hosts: HostPolicy, tokens: TokensFile | None,
                 read_only_tools: frozenset[str], mcp_reader: McpReader,
                 reads: Callable[[str, str], bool] | None = None) -> None:
        self.app = app
        self.hosts = hosts
        self.tokens = tokens
        self.read_only_tools = read_only_tools
        self.mcp_reader = mcp_reader
        self.mcp_path = mcp_reader.path
        self.reads = reads

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":  # no door speaks it: refused before anything is read
            await send({"type": "websocket.close", "code": 1008})
            return
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = route_path(scope)
        host: str | None = None
        origin = authorization = seen = preflight = None
        repeated: bytes | None = None
        for name, value in scope.get("headers", ()):
            if name in _SINGLE_HEADERS:
                text = bytes(value).decode("latin-1")
                if name == b"host":
                    seen, host = host, text
                elif name == b"origin":
                    seen, origin = origin, text
                else:
                    seen, authorization = authorization, text
                if seen is not None:
                    repeated = name
            elif name == b"access-control-request-method":
                preflight = value
        verdict = self.hosts.admits(host, origin) if repeated is None else "repeated"
        method: str = scope.get("method", "GET")
        if verdict is None and origin is not None and method not in _READ_METHODS and not self.hosts.origin_allowed(
                origin, host, writes=True):
            verdict = "origin-writes"
        if verdict is not None:
            await self._refuse(send, path, self._header_refusal(verdict, repeated, host, origin, method))
        elif self.tokens is None:
            await (self._mcp_post(scope, receive, send, None) if method == "POST" and path == self.mcp_path
                   else self.app(scope, receive, send))
        elif (method in ("GET", "HEAD") and _is_open(path)) or (method == "OPTIONS" and preflight is not None):
            await self.app(scope, receive, send)  # an open page, or a CORS preflight (never carries a token)
        elif isinstance(token := self._token(authorization), SchemaDocError):
            await self._refuse(send, path, token)
        elif token.writes or method in _READ_METHODS or (path == self.mcp_path and method in ("POST", "DELETE")) or (
                self.reads is not None and self.reads(method, path)):
            scope[CREDENTIAL] = token
            await (self._mcp_post(scope, receive, send, token) if method == "POST" and path == self.mcp_path
                   else self.app(scope, receive, send))
        else:
            await self._refuse(send, path, _read_only(token, f"{method} {path}"))

    def _header_refusal(self, verdict: str, repeated: bytes | None, host: str | None, origin: str | None,
                        method: str) -> SchemaDocError:
        """The error refusing a request whose Host or Origin headers :meth:`HostPolicy.admits` refused
        (``verdict``), or that are repeated, or whose origin may read but not write (``"origin-writes"``)."""
        if verdict == "repeated":
            assert repeated is not None
            header = _SINGLE_HEADERS[repeated]
            return SchemaDocError("invalid-request", f"The request has more than one {header} header; send it once.",
                                  {"header": header, "reason": "repeated"})
        if verdict == "malformed-host":
            return SchemaDocError("invalid-request", f"The Host header {host!r} is not host[:port].",
                                  {"header": "Host", "value": host, "reason": "malformed"})
        if verdict == "host":
            return SchemaDocError(
                "host-not-allowed", f"This server does not answer for the host {host!r}." if host
                else "The request has no Host header, and this server answers only for named hosts.",
                {"host": host, "allowed_hosts": list(self.hosts.allowed_hosts)})
        return SchemaDocError(
            "origin-not-allowed", f"Requests from the web origin {origin!r} are not admitted." if verdict == "origin"
            else f"The web origin {origin!r} may read but not change documents: only pages served by this server "
            "or listed in cors_origins may.",
            {"origin": origin, "allowed_hosts": list(self.hosts.allowed_hosts), "method": method})

    def _token(self, authorization: str | None) -> Token | SchemaDocError:
        assert self.tokens is not None
        scheme, _, presented = (authorization or "").strip().partition(" ")
        presented = presented.strip()
        if authorization is None or scheme.lower() != "bearer" or not presented:
            return SchemaDocError("token-missing", "This server requires an access token: send "
                                  "'Authorization: Bearer <token>'.",
                                  {"scheme": "Bearer", "header": "Authorization"})
        token = self.tokens.find(presented)
        if token is None:
            return SchemaDocError("token-invalid", "The access token is not valid (unknown or revoked).",
                                  {"scheme": "Bearer"})
        return token

    async def _mcp_post(self, scope: Scope, receive: Receive, send: Send, token: Token | None) -> None:
        """Hand on an admitted message posted to MCP: read first (:class:`McpReader`), and refused if it writes
        and ``token`` is read-only."""
        post = await self.mcp_reader.read(scope, receive, send)
        if post is None:
            return  # answered by the reader (too large, not JSON, too deep), or the client left
        if token is not None and not token.writes and mcp_message_writes(post.message, self.read_only_tools):
            await self._refuse(send, self.mcp_path, _read_only(token, _mcp_what(post.message)),
                               message_id(post.message))
            return
        receive = post.receive
        del post  # the parsed value, judged: the SDK parses the canonical bytes it is handed
        await self.app(scope, receive, send)

    async def _refuse(self, send: Send, path: str, error: SchemaDocError, message_id: Any = None) -> None:
        log.debug("refused %s: %s", path, error.code)  # never the token; the request line has the code
        challenge = [(b"www-authenticate", _CHALLENGES[error.code])] if error.code in _CHALLENGES else None
        await send_json(send, error.status, error_bytes(error, path, message_id, self.mcp_path), challenge)


_OPEN_PREFIXES: Final = tuple(f"{prefix}/" for prefix in _OPEN_PATHS)


def _is_open(path: str) -> bool:
    return path in _OPEN_PATHS or path.startswith(_OPEN_PREFIXES)


def _read_only(token: Token, what: str) -> SchemaDocError:
    return SchemaDocError("token-read-only", f"The token {token.name!r} is read-only; {what} writes.",
                          {"token": token.name, "access": "read-only", "request": what})


def _mcp_what(message: Any) -> str:
    items = message if isinstance(message, list) else [message]
    for item in items:
        if isinstance(item, dict):
            method = item.get("method")
            params = item.get("params")
            if method == "tools/call" and isinstance(params, dict):
                return f"the MCP tool {params.get('name')!r}"
            if isinstance(method, str):
                return f"the MCP method {method!r}"
    return "the MCP message"
