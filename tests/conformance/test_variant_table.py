"""The catalogue's bookkeeping and the report's grouping, without starting a server."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from blackbox import CATALOGUE, MCP_VARIANTS, REST_VARIANTS
from variant_table import DOCS, END, START, UNBREAKABLE, covered, table, uncovered

from schemadoc.conformance.clauses import CLAUSES
from schemadoc.conformance.preflight import Refused, check_command, check_report_path
from schemadoc.conformance.report import FAILED, PASSED, Report, TestResult, causes, render_summary


def test_the_docs_hold_the_generated_table_of_variants() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert f"{START}\n{table()}{END}" in text, "run: python tests/conformance/variant_table.py --write"


def test_every_variant_is_made_and_judged_on_a_spec_clause() -> None:
    names = [entry.name for entry in CATALOGUE]
    assert len(names) == len(set(names))
    for entry in CATALOGUE:
        assert entry.name in (MCP_VARIANTS if entry.door == "mcp" else REST_VARIANTS)
        assert all(not CLAUSES[clause].optional for clause in entry.clauses), entry
        assert len(set(entry.clauses)) == len(entry.clauses), entry
    assert {entry.name for entry in CATALOGUE if entry.clause is None} >= {"spec-only", "core-tools-only",
                                                                          "lower-case-ids", "rest-lower-case-ids"}


def test_every_spec_clause_has_a_breaking_variant_or_a_written_reason() -> None:
    assert uncovered() == [], "give each a broken variant (blackbox.py, variants.py) or a reason in UNBREAKABLE"
    assert not set(UNBREAKABLE) & covered(), "a clause with a breaking variant needs no reason"
    assert all(not CLAUSES[clause].optional and reason for clause, reason in UNBREAKABLE.items())


@pytest.mark.parametrize(("command", "accepted"), [
    ("server --schema {schema} --data {storage_dir}", True),
    ("server --schema '{schema}' --json '{\"a\": 1}'", True),
    ("server --data {storage-dir}", False),
    ("server --data {storagedir}", False),
    ("server 'unclosed", False),
    ("", False),
])
def test_a_command_may_use_the_known_placeholders_only(command: str, accepted: bool) -> None:
    if accepted:
        check_command(command)
    else:
        with pytest.raises(Refused):
            check_command(command)


def test_a_report_path_must_be_writable_before_the_run(tmp_path: Path) -> None:
    check_report_path("--json", str(tmp_path / "report.json"))
    for path in (tmp_path, tmp_path / "missing" / "report.json"):
        with pytest.raises(Refused):
            check_report_path("--json", str(path))


def _failed(name: str, clauses: list[str], reason: str, tool: str, response: dict[str, object]) -> TestResult:
    return TestResult(test=f"test_x.py::{name}", name=name, door="stdio-mcp-auto", clauses=clauses, outcome=FAILED,
                      reason=reason, exchange={"door": "stdio-mcp-auto", "request": {"tool": tool, "arguments": {}},
                                               "response": response})


def test_failures_are_grouped_by_the_call_that_failed_first() -> None:
    create_failed = {"isError": True, "text": '{"error": {"code": "invalid-request", "message": "schema_id"}}'}
    report = Report({"mcp_command": "server"}, [
        _failed(f"test_{n}", [f"US{n}.1"], "E   AssertionError: expected success, got Outcome(...)",
                "document_create", create_failed) for n in range(1, 6)
    ] + [
        _failed("test_version", ["US4.7"], "E   AssertionError: expected version-conflict, got Outcome(ok=True)",
                "document_update_node", {"isError": False, "structuredContent": {"version": 3}, "text": None}),
        TestResult(test="test_x.py::test_ok", name="test_ok", door=None, clauses=["US8.1"], outcome=PASSED),
    ])
    found = causes(report)
    assert [len(cause.tests) for cause in found] == [5, 1]
    assert found[0].text == "document_create failed with invalid-request where the test needed it to succeed"
    assert found[0].clauses == ["US1.1", "US2.1", "US3.1", "US4.1", "US5.1"]
    assert found[1].text.startswith("AssertionError: expected version-conflict")
    screen = render_summary(report).splitlines()
    assert "6 failed tests, 2 root causes" in screen[3], screen[:6]
    assert found[0].text in screen[4]
    assert screen[-1].startswith("7 clauses: 1 passed, 6 failed")
