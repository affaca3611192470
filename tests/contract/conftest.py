"""Fixtures of the conformance suite: the ``door`` every behaviour test runs through.

In process (the default) each test gets a fresh server: a files store in ``tmp_path`` and the
bundled ``schemas/book.schema.json``, reached through REST (``rest``) and MCP in both protocol
eras (``mcp-auto``, ``mcp-legacy``). With ``SCHEMADOC_CONFORMANCE_URL`` set to a running
server's base URL, the same tests run against it instead (``remote-rest``, ``remote-mcp-auto``,
``remote-mcp-legacy``); that server must serve the same bundled schema.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.contract.doors import Door, mcp_door, rest_door

REMOTE_URL = os.environ.get("SCHEMADOC_CONFORMANCE_URL", "").rstrip("/")
BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
DOOR_NAMES = (
    ["remote-rest", "remote-mcp-auto", "remote-mcp-legacy"] if REMOTE_URL else ["rest", "mcp-auto", "mcp-legacy"]
)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=DOOR_NAMES)
def door_name(request: pytest.FixtureRequest) -> str:
    """The door a test runs through (sync, for tests that open doors themselves)."""
    return str(request.param)


@pytest.fixture
def fresh_server(door_name: str) -> bool:
    """True when the server is this test's alone (in process): it starts with no documents."""
    return not door_name.startswith("remote-")


def _in_process_service(storage_dir: Path) -> Any:
    from schemadoc.config import Settings
    from schemadoc.interfaces.app import create_service

    return create_service(Settings(schema_path=BOOK_SCHEMA, storage_dir=storage_dir))


@asynccontextmanager
async def open_door(name: str, storage_dir: Path) -> AsyncIterator[Door]:
    """Open the door called ``name`` (a fresh in-process server in ``storage_dir``, or the remote one)."""
    if name == "remote-rest":
        async with rest_door(name, base_url=REMOTE_URL) as door:
            yield door
    elif name.startswith("remote-mcp-"):
        async with mcp_door(name, f"{REMOTE_URL}/mcp", mode=name.removeprefix("remote-mcp-"),
                            status_from_category=True) as door:
            yield door
    elif name == "rest":
        from schemadoc.config import Settings
        from schemadoc.interfaces.app import build_app

        settings = Settings(schema_path=BOOK_SCHEMA, storage_dir=storage_dir)
        service = _in_process_service(storage_dir)
        async with rest_door(name, app=build_app(service, settings)) as door:
            yield door
    elif name.startswith("mcp-"):
        from schemadoc.interfaces.mcp import build_mcp_server

        server = build_mcp_server(_in_process_service(storage_dir))
        async with mcp_door(name, server, mode=name.removeprefix("mcp-")) as door:
            yield door
    else:  # pragma: no cover - a typo in DOOR_NAMES
        raise ValueError(f"unknown door {name!r}")


@pytest.fixture
async def door(door_name: str, tmp_path: Path) -> AsyncIterator[Door]:
    async with open_door(door_name, tmp_path / "data") as opened:
        yield opened


@pytest.fixture(scope="session")
def book_schema() -> dict[str, Any]:
    import json

    return dict(json.loads(BOOK_SCHEMA.read_text(encoding="utf-8")))


_WHOLE_SUITE = pytest.StashKey[bool]()
_DESELECTED = pytest.StashKey[bool]()
_HERE = Path(__file__).parent


def _ours(item: pytest.Item) -> bool:
    return Path(str(item.fspath)).parent == _HERE


def pytest_deselected(items: list[pytest.Item]) -> None:
    if items and any(_ours(item) for item in items):
        items[0].config.stash[_DESELECTED] = True


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run ``test_zz_observed.py`` last (it checks what the whole suite observed), and note whether the
    whole suite runs: only then can it demand that every reachable error code was seen."""
    last = [item for item in items if _ours(item) and Path(str(item.fspath)).name == "test_zz_observed.py"]
    items[:] = [item for item in items if item not in last] + last
    modules = {Path(str(item.fspath)).name for item in items if _ours(item)}
    every_module = {path.name for path in _HERE.glob("test_*.py")}
    config.stash[_WHOLE_SUITE] = modules == every_module and not config.stash.get(_DESELECTED, False)


@pytest.fixture(scope="session")
def whole_suite(request: pytest.FixtureRequest) -> bool:
    """True when every test of the suite was selected (no -k, no single file)."""
    return request.config.stash.get(_WHOLE_SUITE, False)
