"""The sockets ``schemadoc serve`` listens on (one, or one per worker beside a reserved address), and the uvicorn
server that stops gracefully on SIGTERM/SIGINT."""

from __future__ import annotations

import contextlib
import signal
import socket
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from schemadoc.config import Settings
from schemadoc.errors import SchemaDocError

if TYPE_CHECKING:
    from schemadoc.interfaces.http.shutdown import Stopping

__all__ = ["graceful_server_class", "listen", "listen_beside"]


def listen(settings: Settings, *, reuse_port: bool = False) -> socket.socket:
    """A listening socket on the configured address, or ``config-invalid`` naming the problem.

    ``reuse_port``: bound with ``SO_REUSEPORT`` and not listening: the address reserved for the workers of
    ``serve --workers``, each of which listens on a socket of its own bound beside it (:func:`listen_beside`).
    """
    try:
        infos = socket.getaddrinfo(settings.host, settings.port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise SchemaDocError("config-invalid", f"Cannot resolve host {settings.host!r}: {error}.",
                             {"setting": "host", "value": settings.host},
                             remediation="Use an IP address or a resolvable name with --host / HOST.") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(address)
        if not reuse_port:
            sock.listen(2048)
    except OSError as error:
        sock.close()
        raise SchemaDocError(
            "config-invalid", f"Cannot listen on {settings.host}:{settings.port}: {error.strerror or error}.",
            {"setting": "port", "host": settings.host, "port": settings.port},
            remediation="Choose a free port with --port / PORT (0 picks one), or stop the other server.") from None
    sock.set_inheritable(True)
    return sock


def listen_beside(reserved: socket.socket) -> socket.socket:
    """A worker's own listening socket on the address ``reserved`` holds (``SO_REUSEPORT``: the kernel spreads new
    connections over the workers' sockets by a hash of their addresses)."""
    sock = socket.socket(reserved.family, reserved.type, reserved.proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        if reserved.family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
        sock.bind(reserved.getsockname())
        sock.listen(2048)
    except OSError as error:
        sock.close()
        raise SchemaDocError("config-invalid", f"A worker cannot listen beside the others: {error.strerror or error}.",
                             {"setting": "workers"}) from None
    return sock


def graceful_server_class(stopping: Stopping, on_started: Callable[[], None] | None = None) -> type[Any]:
    import uvicorn

    class GracefulServer(uvicorn.Server):
        """uvicorn's server, except that a SIGTERM/SIGINT stop begins ``stopping`` (the gate refuses new requests,
        the event streams end) and ends with exit code 0 instead of re-raising the signal; ``on_started`` is
        called once it serves (a worker tells its supervisor)."""

        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            await super().startup(sockets)
            if self.started and on_started is not None:
                on_started()

        def handle_exit(self, sig: int, frame: Any) -> None:
            stopping.begin(sig)
            super().handle_exit(sig, frame)

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            if threading.current_thread() is not threading.main_thread():
                yield
                return
            handled = (signal.SIGINT, signal.SIGTERM)
            original = {sig: signal.signal(sig, self.handle_exit) for sig in handled}
            try:
                yield
            finally:
                for sig, handler in original.items():
                    signal.signal(sig, handler)

    return GracefulServer
