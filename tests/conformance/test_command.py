"""``schemadoc-conformance`` as its users run it: real processes, every door, every output format.

The suite passes against schemadoc through REST and MCP over HTTP (one server by URL) and through MCP
over stdio (a server the suite starts by command); it fails each deliberately broken variant
(``variants.py``, started by ``launch.py``) on the clause that variant breaks, and says "not applicable"
for a feature an implementation leaves out. The default run takes a sample of clauses and variants; the
whole suite through each door and the whole catalogue are marked ``slow`` (``make conformance``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "e2e"))

from http_server import Server
from variants import VARIANTS

HERE = Path(__file__).resolve().parent
RUN_TIMEOUT = 900
STDIO = f"{sys.executable} -m schemadoc serve --transport stdio --schema {{schema}} --storage-dir {{storage_dir}}"


def launch(name: str) -> str:
    """The --mcp-command of schemadoc with the variant (or feature switch) ``name`` on."""
    return (f"{sys.executable} {HERE / 'launch.py'} {name} serve --transport stdio --schema {{schema}} "
            f"--storage-dir {{storage_dir}}")


def conformance(tmp_path: Path, *args: str) -> tuple[int, str, dict[str, Any]]:
    """Run the command; (exit status, standard output, the JSON report)."""
    report = tmp_path / "report.json"
    done = subprocess.run([sys.executable, "-m", "schemadoc.conformance.cli", *args, "--json", str(report)],
                          cwd=tmp_path, capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert report.exists(), f"no report (exit {done.returncode}):\n{done.stdout}\n{done.stderr[-5000:]}"
    return done.returncode, done.stdout, json.loads(report.read_text(encoding="utf-8"))


def statuses(report: dict[str, Any]) -> dict[str, str]:
    return {clause["id"]: clause["status"] for clause in report["clauses"]}


def doors_of(report: dict[str, Any]) -> set[str]:
    return {test["door"] for clause in report["clauses"] for test in clause["tests"] if test["door"]}


def failures(report: dict[str, Any]) -> str:
    return "\n".join(f"{test['test']}: {test['reason']}\n{test['exchange']}" for clause in report["clauses"]
                     for test in clause["tests"] if test["outcome"] == "failed")


@pytest.fixture
def http_server(tmp_path: Path) -> Iterator[Server]:
    server = Server(tmp_path / "storage", tmp_path / "logs")
    try:
        yield server
    finally:
        server.kill()


SAMPLE = ("US2.6", "US4.2", "US4.7", "US8.1")
"""Errors, a validation report, a version conflict and the export, through each door of a real server. Merge
patches (27 tests, over half this run's time) pass through the in-process doors of the default suite and
through this real server in ``make conformance``."""


def test_the_suite_passes_through_rest_and_mcp_over_http_of_a_running_schemadoc(
        tmp_path: Path, http_server: Server) -> None:
    args = [arg for clause in SAMPLE for arg in ("--clause", clause)]
    status, _out, report = conformance(tmp_path, "--url", http_server.url, *args, "-k", "not random")
    assert status == 0, failures(report)
    assert set(statuses(report)) >= set(SAMPLE) and set(statuses(report).values()) == {"passed"}
    assert doors_of(report) == {"remote-rest", "remote-mcp-auto", "remote-mcp-legacy"}


def test_the_suite_passes_through_mcp_over_stdio_started_by_a_command_with_restarts(tmp_path: Path) -> None:
    status, _out, report = conformance(tmp_path, "--mcp-command", STDIO, "--clause", "US4.7", "--clause", "FR-061",
                                       "--clause", "FR-084", "-k", "not random")
    assert status == 0, failures(report)
    assert {"US4.7": "passed", "FR-061": "passed", "FR-084": "passed"}.items() <= statuses(report).items()
    assert doors_of(report) == {"stdio-mcp-auto"}


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT)
def test_the_whole_suite_passes_through_rest_and_mcp_over_http(tmp_path: Path, http_server: Server) -> None:
    status, _out, report = conformance(tmp_path, "--url", http_server.url)
    assert status == 0, failures(report)
    assert "failed" not in statuses(report).values()


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT)
def test_the_whole_suite_passes_through_mcp_over_stdio(tmp_path: Path) -> None:
    status, _out, report = conformance(tmp_path, "--mcp-command", STDIO, "--thorough")
    assert status == 0, failures(report)
    assert statuses(report)["FR-011"] == statuses(report)["FR-084"] == "passed"


def test_the_three_formats_report_a_broken_variant_with_the_request_and_response_that_failed(
        tmp_path: Path) -> None:
    junit, summary = tmp_path / "report.xml", tmp_path / "summary.txt"
    status, stdout, report = conformance(
        tmp_path, "--mcp-command", launch("no-version-check"), "--clause", "US4.7", "--clause", "X-rest-wire",
        "-k", "stale_version_is_a_version_conflict_naming or etag", "--junit", str(junit), "--output", str(summary))
    assert status == 1
    assert stdout == ""

    # JSON: the clause failed, with the request that was accepted and should not have been
    assert statuses(report)["US4.7"] == "failed" and statuses(report)["X-rest-wire"] == "not-applicable"
    clause = next(clause for clause in report["clauses"] if clause["id"] == "US4.7")
    failed = [test for test in clause["tests"] if test["outcome"] == "failed"]
    assert failed and all(test["door"] == "stdio-mcp-auto" for test in failed)
    exchange = failed[0]["exchange"]
    assert exchange["request"]["tool"] == "document_update_node"
    assert exchange["response"]["isError"] is False  # the stale write was accepted
    assert "version-conflict" in failed[0]["reason"]
    rest_only = next(clause for clause in report["clauses"] if clause["id"] == "X-rest-wire")
    assert {test["reason"] for test in rest_only["tests"]} == {"the target offers no door this test runs through"}
    assert report["summary"]["clauses"]["failed"] == sum(status == "failed" for status in statuses(report).values())

    # JUnit XML: one suite per clause, the failure carries the request and the response
    root = ElementTree.parse(junit).getroot()
    suites = {suite.get("name", "").split(" ")[0]: suite for suite in root.iter("testsuite")}
    assert set(suites) == set(statuses(report))
    assert int(suites["US4.7"].get("failures", "0")) == len(failed)
    failure = suites["US4.7"].find("testcase/failure")
    assert failure is not None and failure.text is not None
    assert "request (stdio-mcp-auto)" in failure.text and '"tool": "document_update_node"' in failure.text
    assert "response:" in failure.text
    skipped = suites["X-rest-wire"].findall("testcase/skipped")
    assert skipped and int(suites["X-rest-wire"].get("skipped", "0")) == len(skipped)

    # the readable summary
    text = summary.read_text(encoding="utf-8")
    assert "FAIL  [spec] US4.7" in text and "N/A   [full] X-rest-wire" in text
    assert "request (stdio-mcp-auto): " in text and "response: " in text
    assert f"{len(statuses(report))} clauses: " in text

    # the root causes come first, on one screen, each once however many tests it failed
    head = text.splitlines()[:12]
    assert any("root cause" in line for line in head), head
    assert report["causes"] and all(cause["tests"] for cause in report["causes"])
    assert sum(len(cause["tests"]) for cause in report["causes"]) == len(failed)


def test_a_feature_the_implementation_leaves_out_is_not_applicable_not_failed(tmp_path: Path) -> None:
    status, _out, report = conformance(tmp_path, "--mcp-command", launch("without-merge-patch"),
                                       "--clause", "X-merge-patch", "--clause", "US4.7", "-k", "merge or stale")
    assert status == 0, failures(report)
    assert statuses(report)["X-merge-patch"] == "not-applicable"
    assert statuses(report)["US4.7"] == "passed"
    merge = next(clause for clause in report["clauses"] if clause["id"] == "X-merge-patch")
    assert {test["reason"] for test in merge["tests"]} == {"the server declares no tool document_merge_patch"}


FAST_SAMPLE = ("ack-before-durable",)
"""The variant of the default suite: caught through a kill and a restart. That a variant is caught on the
clause it breaks is also shown by the three-formats test above; every variant runs in ``make conformance``."""


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=() if name in FAST_SAMPLE else pytest.mark.slow) for name in VARIANTS])
def test_each_broken_variant_is_caught_on_the_clause_it_breaks(tmp_path: Path, name: str) -> None:
    variant = VARIANTS[name]
    status, _out, report = conformance(tmp_path, "--mcp-command", launch(name),
                                       *[arg for clause in variant.clauses for arg in ("--clause", clause)],
                                       "-k", variant.keyword)
    assert status == 1, f"{name} ({variant.what}) was not caught: {statuses(report)}"
    assert {clause: statuses(report)[clause] for clause in variant.clauses} == dict.fromkeys(
        variant.clauses, "failed"), statuses(report)


@pytest.mark.slow
def test_a_property_based_failure_reports_the_shrunk_steps_and_the_exchange(tmp_path: Path) -> None:
    status, _out, report = conformance(tmp_path, "--mcp-command", launch("no-version-check"), "--clause", "US4.7",
                                       "-k", "random_edits")
    assert status == 1
    failed = [test for clause in report["clauses"] for test in clause["tests"] if test["outcome"] == "failed"]
    assert failed, statuses(report)
    reason = failed[0]["reason"]
    assert "state = DocumentMachine()" in reason and "state.stale_write(" in reason, reason
    assert failed[0]["exchange"]["request"]["tool"] == "document_update_node"
