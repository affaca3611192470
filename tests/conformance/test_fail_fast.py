"""``schemadoc-conformance`` refuses a run that cannot be right before it starts: exit status 2 and the reason on
standard error, no report written, no test run. And a run leaves nothing in the working directory."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from http_server import Server, free_port
from test_command import STDIO

GUARD = 120
"""Seconds before a hung command counts as a failure (a guard, not a speed requirement)."""


def refused(cwd: Path, *args: str) -> tuple[str, float]:
    """Run the command expecting a refusal; (its standard error, the seconds it took)."""
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "schemadoc.conformance.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=GUARD)
    seconds = time.monotonic() - started
    assert done.returncode == 2, f"exit {done.returncode}, not 2:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert done.stdout == "", "a refused run writes no report"
    assert "passed" not in done.stderr and "clauses:" not in done.stderr, "the suite ran anyway"
    return done.stderr, seconds


def test_an_unreachable_url_is_refused_with_the_reason(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    error, seconds = refused(tmp_path, "--rest-url", url)
    assert "cannot reach the REST API" in error and url in error, error
    print(f"unreachable REST URL refused in {seconds:.1f} s")
    error, seconds = refused(tmp_path, "--mcp-url", f"{url}/mcp")
    assert f"no MCP server at {url}/mcp" in error, error
    print(f"unreachable MCP URL refused in {seconds:.1f} s")


def test_a_command_that_exits_or_does_not_exist_is_refused(tmp_path: Path) -> None:
    error, _ = refused(tmp_path, "--mcp-command", f"{sys.executable} -c 'import sys; sys.exit(3)'")
    assert "--mcp-command did not start an MCP server" in error, error
    error, _ = refused(tmp_path, "--mcp-command", "no-such-binary-anywhere --schema {schema}")
    assert "did not start an MCP server" in error and "no-such-binary-anywhere" in error, error


def test_a_url_that_does_not_speak_the_protocol_is_refused(tmp_path: Path) -> None:
    server = Server(tmp_path / "storage", tmp_path / "logs")
    try:
        error, _ = refused(tmp_path, "--mcp-url", f"{server.url}/api/v1")
        assert f"no MCP server at {server.url}/api/v1" in error, error
        error, _ = refused(tmp_path, "--rest-url", f"{server.url}/mcp")
        assert "does not serve the spec's REST API" in error and "GET " in error, error
    finally:
        server.kill()


@pytest.mark.parametrize(("args", "reason"), [
    (["--mcp-command", f"{STDIO.replace('{storage_dir}', '{storage-dir}')}"], "unknown placeholder(s) {storage-dir}"),
    (["--mcp-command", "server 'unclosed"], "cannot be split like a shell line"),
    (["--mcp-command", STDIO, "--json", "/nonexistent-directory/report.json"], "does not exist"),
    (["--mcp-command", STDIO, "--junit", "."], "is a directory"),
    (["--mcp-command", STDIO, "--clause", "US99.9"], "unknown clause"),
    (["--mcp-command", STDIO, "--profile", "spec", "--clause", "X-patch"], "not in --profile spec"),
], ids=["misspelt-placeholder", "unsplittable-command", "report-directory-missing", "report-is-a-directory",
        "unknown-clause", "extension-clause-in-spec-profile"])
def test_options_that_cannot_work_are_refused_before_anything_starts(tmp_path: Path, args: list[str],
                                                                     reason: str) -> None:
    error, _ = refused(tmp_path, *args)
    assert reason in error, error
    assert "reached" not in error, "the target was started although the options were wrong"


def test_a_selection_of_no_test_is_refused(tmp_path: Path) -> None:
    error, _ = refused(tmp_path, "--mcp-command", STDIO, "-k", "no_test_has_this_name")
    assert "selects no test" in error and "no_test_has_this_name" in error, error


def test_a_run_writes_nothing_to_the_working_directory_but_its_reports(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    done = subprocess.run([sys.executable, "-m", "schemadoc.conformance.cli", "--mcp-command", STDIO,
                           "--clause", "US4.1", "-k", "random_edits", "--json", "report.json"],  # Hypothesis runs
                          cwd=work, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert sorted(path.name for path in work.iterdir()) == ["report.json"]
