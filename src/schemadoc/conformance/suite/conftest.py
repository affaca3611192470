"""Fixtures of the conformance suite: the ``door`` every behaviour test runs through.

In process (the default) each test gets a fresh server: a files store in ``tmp_path`` and the
bundled ``schemas/book.schema.json``, reached through REST (``rest``) and MCP in both protocol
eras (``mcp-auto``, ``mcp-legacy``). With ``SCHEMADOC_CONFORMANCE_URL`` set to a running
server's base URL, the same tests run against it instead (``remote-rest``, ``remote-mcp-auto``,
``remote-mcp-legacy``); that server must serve the same bundled schema.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import pytest

from .doors import BOOK_SCHEMA, DOOR_NAMES, TARGET, TRANSCRIPT, Door, in_process, in_process_service, open_door


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
    return in_process(door_name)


@pytest.fixture
async def door(door_name: str, tmp_path: Path) -> AsyncIterator[Door]:
    async with open_door(door_name, tmp_path / "data") as opened:
        yield opened


@pytest.fixture
async def doors(tmp_path: Path) -> AsyncIterator[list[Door]]:
    """Every door, all onto ONE server (in process: one service behind a REST app and two MCP servers)."""
    service = in_process_service(tmp_path / "data") if TARGET.in_process else None
    async with AsyncExitStack() as stack:
        yield [await stack.enter_async_context(open_door(name, tmp_path / "data", service))
               for name in TARGET.one_server_doors]


@pytest.fixture(autouse=True)
def _fresh_transcript() -> None:
    """Each test's transcript starts empty: a failure reports its own exchanges."""
    TRANSCRIPT.clear()


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


KNOWN_BUGS: list[tuple[str, tuple[str, ...], str]] = []
"""(test name, doors, reason): bugs still open, marked ``xfail(strict=True)`` so that a fix shows up as a
failure (XPASS) and the entry gets removed."""


def _door_of(item: pytest.Item) -> str | None:
    callspec = getattr(item, "callspec", None)
    return None if callspec is None else callspec.params.get("door_name")


_ONE_WORKER = "schemadoc_conformance_suite_in_one_worker"


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """With pytest-xdist's ``--dist loadfile``: each file in one worker, and the whole suite in ONE worker, in
    order, so that ``test_zz_observed.py`` reads what the whole suite observed (:data:`OBSERVED` lives in the
    process). Other ``--dist`` modes are left as they are (and the whole-suite check skips)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    root = Path(config.rootpath).resolve()
    here = _HERE.resolve()

    class SuiteInOneWorker(LoadFileScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            file = nodeid.split("::", 1)[0]
            return str(here) if (root / file).resolve().parent == here else file

    return SuiteInOneWorker(config, log)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Tell each pytest-xdist worker whether it runs the whole suite (see ``pytest_xdist_make_scheduler``)."""
    node.workerinput[_ONE_WORKER] = node.config.getvalue("dist") == "loadfile"


def _in_one_process(config: pytest.Config) -> bool:
    """Whether every selected test of the suite runs in this process: no pytest-xdist, or its ``loadfile``."""
    workerinput = getattr(config, "workerinput", None)
    return workerinput is None or bool(workerinput.get(_ONE_WORKER, False))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the known bugs; run ``test_zz_observed.py`` last (it checks what the whole suite observed), and
    note whether the whole suite runs in this process: only then can it demand that every reachable error code
    was seen."""
    for item in items:
        for name, doors, reason in KNOWN_BUGS:
            if _ours(item) and getattr(item, "originalname", item.name) == name and _door_of(item) in doors:
                item.add_marker(pytest.mark.xfail(strict=True, reason=reason))
    last = [item for item in items if _ours(item) and Path(str(item.fspath)).name == "test_zz_observed.py"]
    items[:] = [item for item in items if item not in last] + last
    modules = {Path(str(item.fspath)).name for item in items if _ours(item)}
    every_module = {path.name for path in _HERE.glob("test_*.py")}
    config.stash[_WHOLE_SUITE] = (modules == every_module and not config.stash.get(_DESELECTED, False)
                                  and _in_one_process(config))


@pytest.fixture(scope="session")
def whole_suite(request: pytest.FixtureRequest) -> bool:
    """True when every test of the suite was selected (no -k, no single file) and runs in this process."""
    return request.config.stash.get(_WHOLE_SUITE, False)
