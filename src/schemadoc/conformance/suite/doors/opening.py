"""Opening a door: onto a fresh in-process server, a stdio process, or a running server."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio

from ...target import BOOK_SCHEMA, IN_PROCESS_DOORS
from .base import TARGET, Door, not_applicable
from .over_mcp import McpDoor, mcp_door
from .over_rest import rest_door

TEST_SCHEMAS = BOOK_SCHEMA.parent / "schemas"
"""Schemas some clauses need a server started on (defaults, required fields without defaults)."""


def in_process(door_name: str) -> bool:
    """True for the doors onto a fresh in-process schemadoc (each test's server is its own)."""
    return door_name in IN_PROCESS_DOORS


_STDIO: dict[str, Any] = {}


def stdio_server(mode: str = "auto") -> Any:
    """The :class:`~schemadoc.conformance.stdio.StdioServer` of the run for ``mode``, started on first use
    on a fresh storage directory (stopped when the run ends)."""
    server = _STDIO.get(mode)
    if server is None:
        import atexit
        import shutil
        import tempfile

        from ...stdio import StdioServer

        root = Path(tempfile.mkdtemp(prefix="schemadoc-conformance-"))
        server = StdioServer(TARGET.mcp_command, BOOK_SCHEMA, root / "storage", mode=mode,
                             stderr_path=root / "server.stderr.log")
        _STDIO[mode] = server

        def cleanup() -> None:
            server.stop()
            shutil.rmtree(root, ignore_errors=True)

        atexit.register(cleanup)
    if not server.running:
        server.start()
    return server


def _in_process_service(storage_dir: Path, schema: Path = BOOK_SCHEMA) -> Any:
    from schemadoc.config import Settings
    from schemadoc.interfaces.app import create_service

    return create_service(Settings(schema_path=schema, storage_dir=storage_dir))


def in_process_service(storage_dir: Path, schema: Path = BOOK_SCHEMA) -> Any:
    """A fresh in-process ``DocumentService`` on ``schema`` (the bundled book), storing in ``storage_dir``."""
    return _in_process_service(storage_dir, schema)


@asynccontextmanager
async def open_door(
    name: str, storage_dir: Path, service: Any = None, schema: Path = BOOK_SCHEMA
) -> AsyncIterator[Door]:
    """The door called ``name``: onto the remote server, or in process onto ``service`` (default: a fresh
    one on ``schema``, storing in ``storage_dir``)."""
    if name == "remote-rest":
        async with rest_door(name, base_url=TARGET.rest_url) as door:
            yield door
    elif name.startswith("remote-mcp-"):
        async with mcp_door(name, TARGET.mcp_url, mode=name.removeprefix("remote-mcp-"),
                            status_from_category=True) as door:
            yield door
    elif name.startswith("stdio-mcp-"):
        server = await anyio.to_thread.run_sync(stdio_server, name.removeprefix("stdio-mcp-"))
        yield McpDoor(name, server.client, status_from_category=True)
    elif name == "rest":
        from schemadoc.config import Settings
        from schemadoc.interfaces.app import build_app

        settings = Settings(schema_path=schema, storage_dir=storage_dir)
        service = service if service is not None else _in_process_service(storage_dir, schema)
        async with rest_door(name, app=build_app(service, settings)) as door:
            yield door
    elif name.startswith("mcp-"):
        from schemadoc.interfaces.mcp_door.server import build_mcp_server

        server = build_mcp_server(service if service is not None else _in_process_service(storage_dir, schema))
        async with mcp_door(name, server, mode=name.removeprefix("mcp-")) as door:
            yield door
    else:  # pragma: no cover - a typo in DOOR_NAMES
        raise ValueError(f"unknown door {name!r}")


@asynccontextmanager
async def door_on_schema(door_name: str, schema_name: str, storage_dir: Path) -> AsyncIterator[Door]:
    """A door onto a server of its own started on one of the shipped test schemas (``schemas/``): in process,
    or by the command given (``--mcp-command``); not applicable for a server reached by URL. ``book.schema.json``
    is the suite's own schema: a fresh server of the kind every other test uses, on an empty storage."""
    schema = BOOK_SCHEMA if schema_name == BOOK_SCHEMA.name else TEST_SCHEMAS / schema_name
    if in_process(door_name):
        async with open_door(door_name, storage_dir, schema=schema) as door:
            yield door
        return
    if not door_name.startswith("stdio-mcp-"):
        not_applicable("needs a server started on another schema: give the command that starts it (--mcp-command)")
    from ...stdio import StdioServer

    server = StdioServer(TARGET.mcp_command, schema, storage_dir, mode=door_name.removeprefix("stdio-mcp-"),
                         stderr_path=storage_dir.parent / f"{storage_dir.name}.stderr.log")
    await anyio.to_thread.run_sync(server.start)
    try:
        yield McpDoor(door_name, server.client, status_from_category=True)
    finally:
        await anyio.to_thread.run_sync(server.stop)
