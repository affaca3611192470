"""Restarts, crashes and two processes: what only a server the suite starts itself can show.

These clauses need ``--mcp-command`` (``SCHEMADOC_CONFORMANCE_MCP_COMMAND``): the suite stops the server,
kills it with SIGKILL right after a write is acknowledged, starts it again on the same storage directory,
and starts a second process on that directory. Through any other door they are not applicable.

- FR-011 / SC-009: documents, contents and versions survive a restart; an acknowledged write survives
  ``kill -9`` at once.
- FR-061 / FR-080 / FR-077: after a restart writes are still validated and version-checked, and versions
  go on growing by one.
- FR-084 / US4.8: two processes on one storage directory never both succeed from one version (where the
  implementation lets two processes share a storage directory at all; detected, else not applicable).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .doors import (
    BOOK_SCHEMA,
    TARGET,
    Doc,
    McpDoor,
    book_doc,
    chapter,
    failed,
    not_applicable,
    ok,
    stdio_server,
    supports,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def server(door_name: str) -> Any:
    """The server of the run, started by the suite's command (restartable)."""
    if not door_name.startswith("stdio-mcp-"):
        not_applicable("restarting or killing the server needs the command that starts it (--mcp-command)")
    return stdio_server(door_name.removeprefix("stdio-mcp-"))


async def _restart(server: Any, *, kill: bool = False) -> None:
    await anyio.to_thread.run_sync(lambda: server.restart(kill=kill))


def _door(server: Any, name: str) -> McpDoor:
    return McpDoor(name, server.client, status_from_category=True)


async def test_documents_and_versions_survive_a_restart(door_name: str, server: Any) -> None:
    doc = await book_doc(_door(server, door_name))
    ok(await doc.update("/title", "Before the restart"))
    ok(await doc.create("/chapters/-", chapter(4)))
    version, content = await doc.snapshot()
    await _restart(server)
    doc.door = _door(server, door_name)
    assert await doc.snapshot() == (version, content)
    assert ok(await doc.update("/title", "After the restart"))["version"] == version + 1
    assert await doc.content("/title") == "After the restart"


async def test_an_acknowledged_write_survives_kill_9(door_name: str, server: Any) -> None:
    doc = await book_doc(_door(server, door_name))
    for round_ in range(3):
        ok(await doc.update("/title", f"Acknowledged {round_}"))
        ok(await doc.create("/tags/-", f"tag-{round_}"))
        await _restart(server, kill=True)  # SIGKILL as soon as the acknowledgement arrived
        doc.door = _door(server, door_name)
        assert await doc.content("/title") == f"Acknowledged {round_}"
        assert (await doc.content("/tags"))[-1] == f"tag-{round_}"


async def test_writes_after_a_restart_are_validated_and_version_checked(door_name: str, server: Any) -> None:
    doc = await book_doc(_door(server, door_name))
    await _restart(server)
    doc.door = _door(server, door_name)
    before = await doc.snapshot()
    error = failed(await doc.update("/metadata/edition", 0), "validation-failed")
    assert [violation["code"] for violation in error["details"]["violations"]] == ["minimum"]
    failed(await doc.create("/chapters/-", {"id": "no-title"}), "validation-failed")
    failed(await doc.update("/title", "Stale", version=doc.version - 1), "version-conflict")
    if await supports(doc.door, "document_update_node", "dry_run"):
        dry = ok(await doc.update("/title", "Dry", dry_run=True))
        assert dry["dry_run"] is True
    assert await doc.snapshot() == before
    await _restart(server, kill=True)
    doc.door = _door(server, door_name)
    assert await doc.snapshot() == before, "a rejected or dry-run write after a restart reached the storage"


_STEPS = st.lists(st.one_of(
    st.tuples(st.just("write"), st.text(alphabet="abcxyz ", min_size=1, max_size=8)),
    st.tuples(st.just("invalid"), st.integers(max_value=0)),
    st.tuples(st.just("stale"), st.integers(min_value=1, max_value=3)),
    st.tuples(st.just("dry-run"), st.text(alphabet="abc", min_size=1, max_size=4)),
    st.tuples(st.just("restart"), st.booleans()),
), min_size=1, max_size=8)


def test_random_writes_and_restarts_keep_every_acknowledged_version(door_name: str, server: Any) -> None:
    """Random valid, invalid, stale and dry-run writes with graceful and SIGKILL restarts between them: every
    acknowledged write is there after each restart, nothing else is, and versions grow by one per success.
    A failure reports the shrunk sequence of steps."""

    @settings(max_examples=TARGET.examples(4), deadline=None, derandomize=False, database=None,
              suppress_health_check=list(HealthCheck))
    @given(steps=_STEPS)
    def run(steps: list[tuple[str, Any]]) -> None:
        anyio.run(_run_steps, door_name, server, steps, backend="asyncio")

    run()


async def _run_steps(door_name: str, server: Any, steps: list[tuple[str, Any]]) -> None:
    doc = await book_doc(_door(server, door_name))
    version, content = await doc.snapshot()
    title = content["title"]
    dry_runs = await supports(doc.door, "document_update_node", "dry_run")
    for step, value in steps:
        if step == "write":
            body = ok(await doc.update("/title", value))
            assert body["version"] == version + 1, body
            version, title = version + 1, value
        elif step == "invalid":
            failed(await doc.update("/metadata/edition", value), "validation-failed")
        elif step == "stale":
            if version - value >= 1:
                failed(await doc.update("/title", "stale", version=version - value), "version-conflict")
        elif step == "dry-run":
            if not dry_runs:  # an extension this server does not offer: the step is left out
                continue
            assert ok(await doc.update("/title", value, dry_run=True))["dry_run"] is True
        else:
            await _restart(server, kill=value)
            doc.door = _door(server, door_name)
        body = ok(await doc.read("/title"))
        assert (body["version"], body["node_content"]) == (version, title), (step, value, body)


async def test_two_processes_on_one_storage_never_both_win_from_one_version(door_name: str, server: Any) -> None:
    from ..stdio import StdioServer

    first = _door(server, door_name)
    doc = await book_doc(first)
    with tempfile.TemporaryDirectory(prefix="schemadoc-conformance-second-") as scratch:
        second_server = StdioServer(TARGET.mcp_command, BOOK_SCHEMA, server.storage_dir,
                                    mode=server.mode, stderr_path=Path(scratch) / "stderr.log")
        try:
            await anyio.to_thread.run_sync(second_server.start)
        except RuntimeError as failure:
            not_applicable(f"a second process on the same storage directory does not start: {failure}")
        try:
            second = Doc(_door(second_server, door_name + "-second"), doc.doc_id, doc.version)
            seen = await second.read("/title")
            if not seen.ok and seen.code == "document-not-found":
                not_applicable("a second process on the same storage directory does not see the first's documents")
            assert ok(seen)["version"] == doc.version
            # sequentially: the second process must notice the first's write, not overwrite it
            for round_ in range(3):
                start = doc.version
                ok(await doc.update("/title", f"first {round_}"))
                second.version = start
                failed(await second.update("/title", f"second {round_}"), "version-conflict")
                second.version = doc.version
                assert await second.content("/title") == f"first {round_}"
            # concurrently: of two writes from one version exactly one wins
            for round_ in range(5):
                start = doc.version
                second.version = start
                outcomes: dict[str, Any] = {}
                async with anyio.create_task_group() as group:
                    group.start_soon(_write_title, doc, f"one {round_}", start, outcomes)
                    group.start_soon(_write_title, second, f"two {round_}", start, outcomes)
                winners = [text for text, outcome in outcomes.items() if outcome.ok]
                assert len(winners) == 1, f"from version {start}: {outcomes}"
                loser = next(outcome for outcome in outcomes.values() if not outcome.ok)
                assert loser.code == "version-conflict", loser
                doc.version = second.version = start + 1
                assert await doc.content("/title") == winners[0]
                assert await second.content("/title") == winners[0]
        finally:
            await anyio.to_thread.run_sync(second_server.stop)


async def _write_title(doc: Doc, title: str, version: int, outcomes: dict[str, Any]) -> None:
    outcomes[title] = await doc.door.call("document_update_node", {
        "doc_id": doc.doc_id, "node_path": "/title", "node_data": title, "version": version})
