"""The black-box catalogue (``blackbox.py``): other implementations of the spec, made on the wire in front of a
real schemadoc, judged by ``schemadoc-conformance`` as their authors would run it.

Legal variants (spec-only, core tools only, lower-case ids over MCP and over REST) pass ``--profile spec`` with
no failure; each broken variant fails every clause it breaks. The default run takes a sample (``spec-only`` on a
few clauses, two broken variants); ``make conformance`` runs the whole catalogue, each legal variant through the
whole spec profile.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from blackbox import CATALOGUE, Entry
from http_server import Server, free_port
from test_command import conformance, failures, statuses

HERE = Path(__file__).resolve().parent
SCHEMADOC_STDIO = (f"{sys.executable} -m schemadoc serve --transport stdio --schema {{schema}} "
                   f"--storage-dir {{storage_dir}}")
LEGAL = [entry for entry in CATALOGUE if entry.clause is None]
BROKEN = [entry for entry in CATALOGUE if entry.clause is not None]


def proxied(name: str) -> str:
    """The --mcp-command of schemadoc behind the MCP proxy that applies the variant ``name``."""
    return f"{sys.executable} {HERE / 'mcp_proxy.py'} {name} -- {SCHEMADOC_STDIO}"


@contextmanager
def rest_proxy(name: str, tmp_path: Path) -> Iterator[str]:
    """A real schemadoc over HTTP with the REST proxy applying ``name`` in front: the proxy's base URL."""
    server = Server(tmp_path / "storage", tmp_path / "logs")
    port = free_port()
    proxy = subprocess.Popen([sys.executable, str(HERE / "rest_proxy.py"), name, server.url, str(port)],
                             cwd=tmp_path)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proxy.poll() is None, f"the REST proxy exited with {proxy.returncode}"
            try:
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "the REST proxy did not answer"
            time.sleep(0.1)
        yield url
    finally:
        proxy.kill()
        proxy.wait()
        server.kill()


@contextmanager
def _target(entry: Entry, tmp_path: Path) -> Iterator[list[str]]:
    """The options that point the suite at ``entry``'s implementation (a proxy running while inside)."""
    if entry.door == "mcp":
        yield ["--mcp-command", proxied(entry.name)]
    else:
        with rest_proxy(entry.name, tmp_path) as url:
            yield ["--url" if entry.door == "http" else "--rest-url", url]


SPEC_SAMPLE = ("US1.1", "US2.2", "US4.1", "US7.3", "FR-069", "EDGE-requests")
"""The clauses the spec-only variant failed on before the profiles: its members, arguments, tools and codes."""


@pytest.mark.timeout(900)  # a whole spec-profile run, on a loaded machine
@pytest.mark.parametrize("entry", [pytest.param(entry, id=entry.name, marks=() if entry.name == "spec-only"
                                                else pytest.mark.slow) for entry in LEGAL])
def test_a_legal_variant_passes_the_spec_profile(tmp_path: Path, entry: Entry, request: pytest.FixtureRequest) -> None:
    whole = request.node.get_closest_marker("slow") is not None
    selection = [] if whole else [arg for clause in SPEC_SAMPLE for arg in ("--clause", clause)] + [
        "-k", "not random"]
    with _target(entry, tmp_path) as target:
        status, _out, report = conformance(tmp_path, *target, "--profile", "spec", *selection)
        assert status == 0, f"{entry.name} ({entry.what}) failed:\n{failures(report)}"
        assert "failed" not in statuses(report).values()
        assert all(clause["profile"] == "spec" for clause in report["clauses"])
        if not whole:
            assert set(SPEC_SAMPLE) <= {clause for clause, status in statuses(report).items() if status == "passed"}


FAST_BROKEN = ("stale-reads", "dash-reads-the-last-item")
"""The broken variants of the default run: a cache writes never clear, and an array's ``-`` read as its last item
(three tests of one clause)."""


@pytest.mark.parametrize("entry", [pytest.param(entry, id=entry.name, marks=() if entry.name in FAST_BROKEN
                                                else pytest.mark.slow) for entry in BROKEN])
def test_a_broken_variant_is_caught_on_the_clause_it_breaks(tmp_path: Path, entry: Entry) -> None:
    assert entry.clause is not None
    quick = ["-k", "not random"] if entry.name in FAST_BROKEN else []  # the default run leaves out the property tests
    selection = [arg for clause in entry.clauses for arg in ("--clause", clause)]
    with _target(entry, tmp_path) as target:
        status, _out, report = conformance(tmp_path, *target, "--profile", "spec", *selection, *quick)
        assert status == 1, f"{entry.name} ({entry.what}) was not caught: {statuses(report)}"
        assert {clause: statuses(report)[clause] for clause in entry.clauses} == dict.fromkeys(
            entry.clauses, "failed"), statuses(report)
        assert report["causes"], "a failed run names its causes"


def test_one_root_cause_is_named_once_however_many_tests_it_fails(tmp_path: Path) -> None:
    """A server whose document_create wants an argument the spec does not have fails nearly every test at its
    first call: the summary's first screen says so in one line, not once per test."""
    clauses = ("US1.1", "US2.1", "US2.6", "US4.1", "US5.1", "US6.1", "US8.1")
    summary = tmp_path / "summary.txt"
    status, _out, report = conformance(tmp_path, "--mcp-command", proxied("create-wants-schema-id"),
                                       *[arg for clause in clauses for arg in ("--clause", clause)],
                                       "-k", "not random", "--output", str(summary))
    assert status == 1
    failed = len({test["test"] for clause in report["clauses"] for test in clause["tests"]
                  if test["outcome"] == "failed"})
    first = report["causes"][0]
    assert first["cause"] == "document_create failed with validation-failed where the test needed it to succeed"
    assert len(set(first["tests"])) >= 10 and len(first["tests"]) >= failed * 0.8, report["causes"]
    screen = summary.read_text(encoding="utf-8").splitlines()[:25]
    assert any(first["cause"] in line for line in screen), screen
    assert "schema_id is required" in first["example"]["exchange"]["response"]["text"]
