"""Who a write is made by (the actor journaled with every version), as the doors tell it.

The access layer (:mod:`~schemadoc.interfaces.http.access`) puts the token a request presented in its
scope under :data:`CREDENTIAL`; the actor of the request's writes is that token's name, else the
door the write came through (``rest``, ``mcp``, ``stdio``: no tokens file). No header and no
argument decides it. docs/security.md ("Who changed what") is the contract.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

__all__ = ["CREDENTIAL", "MCP_DOOR", "REST_DOOR", "STDIO_DOOR", "actor_of", "command_actor"]

CREDENTIAL: Final = "schemadoc.token"
"""The scope key holding the :class:`~schemadoc.interfaces.http.access.Token` a request presented (absent without a
tokens file): the MCP session layer binds each session to it, and its name is the actor of the request's writes."""
REST_DOOR: Final = "rest"
MCP_DOOR: Final = "mcp"
STDIO_DOOR: Final = "stdio"


def actor_of(scope: Mapping[str, Any] | None, door: str) -> str:
    """The actor of a request's writes: the name of the token in its ``scope``, else ``door``."""
    name = getattr(scope.get(CREDENTIAL), "name", None) if scope is not None else None
    return name if isinstance(name, str) and name else door


def command_actor(command: str) -> str:
    """The actor of the writes a command of the CLI makes itself: ``cli:import`` for ``schemadoc import``."""
    return f"cli:{command}"
