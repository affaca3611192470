"""Results per contract clause: a pytest plugin that collects them, and the three ways to write them out.

Every test judges one or more clauses (:mod:`schemadoc.conformance.clauses`). A clause **fails** when one
of its tests fails (the failure names the request and the response that failed, and for a property-based
test the shrunk counterexample), **passes** when none fails and at least one passed, and is **not
applicable** when none of its tests could run against this server: the door or the optional feature is
not there (detected: the tool is not declared, the route does not exist, no command to restart the
server was given).
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from .clauses import CLAUSES, clauses_of

__all__ = ["Cause", "ClauseResult", "Report", "ReportPlugin", "TestResult", "causes", "render_json", "render_junit",
           "render_summary"]

PASSED, FAILED, NOT_APPLICABLE = "passed", "failed", "not-applicable"
NA_PREFIX = "not applicable: "


@dataclass
class TestResult:
    __test__ = False  # not a pytest test class

    test: str
    """The pytest node id."""
    name: str
    door: str | None
    clauses: list[str]
    outcome: str
    """``passed``, ``failed`` or ``not-applicable``."""
    reason: str = ""
    """Failed: the assertion and (property-based tests) the falsifying example. Not applicable: why."""
    exchange: dict[str, Any] | None = None
    """Failed: the last request and response before the failure."""
    exchanges: list[dict[str, Any]] = field(default_factory=list)
    """Failed: the exchanges leading up to it (oldest first, at most eight)."""
    seconds: float = 0.0


@dataclass
class ClauseResult:
    id: str
    title: str
    optional: bool
    status: str
    tests: list[TestResult]

    @property
    def profile(self) -> str:
        """``spec`` for the spec's own clauses, ``full`` for schemadoc's extensions."""
        return "full" if self.optional else "spec"

    @property
    def failures(self) -> list[TestResult]:
        return [test for test in self.tests if test.outcome == FAILED]


@dataclass
class Report:
    target: dict[str, Any]
    tests: list[TestResult] = field(default_factory=list)
    seconds: float = 0.0

    def clauses(self) -> list[ClauseResult]:
        by_clause: dict[str, list[TestResult]] = {}
        for test in self.tests:
            for clause in test.clauses:
                by_clause.setdefault(clause, []).append(test)
        results = []
        for clause_id in sorted(by_clause, key=_clause_order):
            tests = by_clause[clause_id]
            outcomes = {test.outcome for test in tests}
            status = FAILED if FAILED in outcomes else PASSED if PASSED in outcomes else NOT_APPLICABLE
            known = CLAUSES.get(clause_id)
            results.append(ClauseResult(clause_id, known.title if known else clause_id,
                                        known.optional if known else False, status, tests))
        return results

    def counts(self) -> dict[str, int]:
        counts = {PASSED: 0, FAILED: 0, NOT_APPLICABLE: 0}
        for clause in self.clauses():
            counts[clause.status] += 1
        return counts

    @property
    def failed(self) -> bool:
        return any(test.outcome == FAILED for test in self.tests)


def _clause_order(clause_id: str) -> tuple[int, str]:
    kind = 0 if clause_id.startswith("US") else 1 if clause_id.startswith(("FR", "SC", "EDGE")) else 2
    if clause_id.startswith("US"):
        story, _, scenario = clause_id[2:].partition(".")
        return kind, f"{int(story):03d}.{int(scenario):03d}"
    return kind, clause_id


# -- the pytest plugin ---------------------------------------------------------------------------------


class ReportPlugin:
    """Collects a :class:`Report` while pytest runs the suite; ``clauses`` keeps only those clauses' tests."""

    def __init__(self, target: dict[str, Any], clauses: Sequence[str] = (), *, profile: str = "full") -> None:
        self.report = Report(target)
        self.only = frozenset(clauses)
        self.profile = profile
        self._started = time.monotonic()
        self._items: dict[str, pytest.Item] = {}
        self._exchanges: dict[str, list[dict[str, Any]]] = {}

    def clauses_of(self, item: pytest.Item) -> tuple[str, ...]:
        """The clauses ``item`` judges in this profile (under ``spec``, its spec clauses only)."""
        marker = item.get_closest_marker("clause")
        marked = tuple(str(arg) for arg in marker.args) if marker else ()
        module = Path(str(item.fspath)).stem
        found = clauses_of(module, getattr(item, "originalname", item.name), marked)
        if self.profile == "spec":
            found = tuple(clause for clause in found if not (clause in CLAUSES and CLAUSES[clause].optional))
        return found

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        if self.only or self.profile == "spec":
            keep = [item for item in items if (self.only & set(self.clauses_of(item)) if self.only
                                               else self.clauses_of(item))]
            dropped = [item for item in items if item not in keep]
            if dropped:
                config.hook.pytest_deselected(items=dropped)
            items[:] = keep
        self._items = {item.nodeid: item for item in items}

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
        yield
        if call.excinfo is not None and call.when in ("setup", "call"):
            from .suite.doors import TRANSCRIPT

            self._exchanges[item.nodeid] = [dict(exchange) for exchange in TRANSCRIPT.exchanges]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        item = self._items.get(report.nodeid)
        if item is None:
            return
        outcome: str | None = None
        reason = ""
        if report.when == "call" or (report.when == "setup" and not report.passed):
            if report.skipped:
                outcome, reason = NOT_APPLICABLE, _skip_reason(report)
                if hasattr(report, "wasxfail"):
                    outcome, reason = FAILED, f"known bug: {report.wasxfail}"
            elif report.failed:
                outcome, reason = FAILED, _failure_text(report)
            else:
                outcome = PASSED
        if outcome is None:
            return
        exchanges = self._exchanges.get(report.nodeid, []) if outcome == FAILED else []
        callspec = getattr(item, "callspec", None)
        door = callspec.params.get("door_name") if callspec is not None else None
        self.report.tests.append(TestResult(
            test=report.nodeid, name=getattr(item, "originalname", item.name),
            door=str(door) if door is not None else None, clauses=list(self.clauses_of(item)),
            outcome=outcome, reason=reason, exchange=exchanges[-1] if exchanges else None,
            exchanges=exchanges, seconds=round(report.duration, 3)))

    def pytest_sessionfinish(self) -> None:
        self.report.seconds = round(time.monotonic() - self._started, 1)


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    text = text.removeprefix("Skipped: ")
    if "got empty parameter set" in text:
        return "the target offers no door this test runs through"
    return text.removeprefix(NA_PREFIX)


def _failure_text(report: pytest.TestReport, limit: int = 6000) -> str:
    """The assertion and, for a property-based test, the falsifying (shrunk) example: the lines that say
    what failed, not the whole traceback."""
    text = report.longreprtext
    lines = text.splitlines()
    keep = [line for line in lines if line.startswith("E ") or line.startswith("E\t") or line == "E"]
    notes_at = next((index for index, line in enumerate(lines) if "Falsifying example" in line), None)
    if notes_at is not None:
        keep += ["", *lines[notes_at:notes_at + 60]]
    result = "\n".join(keep) if keep else text
    return result if len(result) <= limit else result[:limit] + "\n…"


# -- first causes ------------------------------------------------------------------------------------------


@dataclass
class Cause:
    """Failed tests that went wrong the same way first: one root cause, however many clauses it fails."""

    text: str
    tests: list[TestResult]

    @property
    def clauses(self) -> list[str]:
        return sorted({clause for test in self.tests for clause in test.clauses}, key=_clause_order)

    @property
    def example(self) -> TestResult:
        return self.tests[0]


_ULID_TEXT = re.compile(r"\b[0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{26}\b")


def _error_code(response: Any) -> str | None:
    """The error code (or the JSON-RPC error) of a recorded response, ``None`` for a success."""
    if not isinstance(response, dict):
        return None
    if isinstance(response.get("jsonrpc_error"), dict):
        return f"JSON-RPC error {response['jsonrpc_error'].get('code')}"
    body: Any = None
    if response.get("isError"):
        try:
            body = json.loads(str(response.get("text") or ""))
        except ValueError:
            return "an error result that is no JSON error object"
    elif isinstance(response.get("status"), int) and response["status"] >= 400:
        body = response.get("body")
    else:
        return None
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return str(code) if code else "an error without a code"


def _operation(request: Any) -> str:
    if not isinstance(request, dict):
        return "a request"
    if "tool" in request:
        return str(request["tool"])
    if "resources/read" in request:
        return "resources/read"
    url = re.sub(r"^https?://[^/]+", "", str(request.get("url", ""))).split("?")[0]
    return f"{request.get('method', '')} {_ULID_TEXT.sub('{doc_id}', url)}".strip()


def _first_cause(test: TestResult) -> str:
    """What went wrong first: a call the test needed that failed, else its first assertion line."""
    line = next((text.strip() for text in (raw.removeprefix("E").strip() for raw in test.reason.splitlines())
                 if text), "failed")
    exchange = test.exchange
    if exchange is not None:
        code = _error_code(exchange.get("response"))
        operation = _operation(exchange.get("request"))
        if code is not None and line.startswith("AssertionError: expected success"):
            return f"{operation} failed with {code} where the test needed it to succeed"
        line = f"{line} (after {operation})"
    line = _ULID_TEXT.sub("{doc_id}", line)
    return line if len(line) <= 200 else line[:200] + "…"


def causes(report: Report) -> list[Cause]:
    """The failed tests grouped by first cause, the cause failing most tests first."""
    grouped: dict[str, Cause] = {}
    for test in report.tests:
        if test.outcome == FAILED:
            text = _first_cause(test)
            grouped.setdefault(text, Cause(text, [])).tests.append(test)
    return sorted(grouped.values(), key=lambda cause: -len(cause.tests))


# -- writing it out ---------------------------------------------------------------------------------------


def _compact(value: Any, limit: int = 3000) -> str:
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[:limit] + "…"


def render_json(report: Report) -> str:
    clauses = report.clauses()
    document = {
        "target": report.target,
        "seconds": report.seconds,
        "summary": {"clauses": report.counts(),
                    "tests": {outcome: sum(test.outcome == outcome for test in report.tests)
                              for outcome in (PASSED, FAILED, NOT_APPLICABLE)}},
        "causes": [{"cause": cause.text, "tests": [test.test for test in cause.tests], "clauses": cause.clauses,
                    "example": {"test": cause.example.test, "reason": cause.example.reason,
                                "exchange": cause.example.exchange}}
                   for cause in causes(report)],
        "clauses": [
            {"id": clause.id, "title": clause.title, "optional": clause.optional, "profile": clause.profile,
             "status": clause.status, "tests": [asdict(test) for test in clause.tests]}
            for clause in clauses
        ],
    }
    return json.dumps(document, indent=2, ensure_ascii=False, default=str) + "\n"


def render_junit(report: Report) -> str:
    """JUnit XML: one ``testsuite`` per clause, one ``testcase`` per test and door of that clause."""
    suites = ElementTree.Element("testsuites", name="schemadoc-conformance", time=str(report.seconds))
    for clause in report.clauses():
        suite = ElementTree.SubElement(
            suites, "testsuite", name=f"{clause.id} {clause.title}", tests=str(len(clause.tests)),
            failures=str(len(clause.failures)), errors="0",
            skipped=str(sum(test.outcome == NOT_APPLICABLE for test in clause.tests)),
            time=str(round(sum(test.seconds for test in clause.tests), 3)))
        for test in clause.tests:
            case = ElementTree.SubElement(suite, "testcase", classname=clause.id,
                                          name=f"{test.name}[{test.door}]" if test.door else test.name,
                                          time=str(test.seconds))
            if test.outcome == FAILED:
                failure = ElementTree.SubElement(case, "failure", message=test.reason.splitlines()[0][:500]
                                                 if test.reason else "failed")
                failure.text = _failure_body(test)
            elif test.outcome == NOT_APPLICABLE:
                ElementTree.SubElement(case, "skipped", message=f"not applicable: {test.reason}")
    ElementTree.indent(suites)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ElementTree.tostring(suites, encoding="unicode") + "\n"


def _failure_body(test: TestResult) -> str:
    parts = [test.reason]
    if test.exchange is not None:
        parts += [f"request ({test.exchange['door']}): {_compact(test.exchange['request'])}",
                  f"response: {_compact(test.exchange['response'])}"]
    return "\n".join(parts)


_MARK = {PASSED: "PASS", FAILED: "FAIL", NOT_APPLICABLE: "N/A "}


def render_summary(report: Report, *, verbose: bool = False, max_causes: int = 8) -> str:
    """One screen first (the counts and the root causes), then every clause, then each cause in detail with
    one request and its whole response."""
    clauses = report.clauses()
    counts = report.counts()
    total = (f"{len(clauses)} clauses: {counts[PASSED]} passed, {counts[FAILED]} failed, "
             f"{counts[NOT_APPLICABLE]} not applicable ({len(report.tests)} tests, {report.seconds} s)")
    lines = ["schemadoc conformance: " + ", ".join(f"{key} {value}" for key, value in report.target.items()
                                                    if value), total]
    found = causes(report)
    if found:
        failed_tests = sum(len(cause.tests) for cause in found)
        lines += ["", f"{failed_tests} failed tests, {len(found)} root cause{'s' if len(found) != 1 else ''} "
                      "(tests grouped by what went wrong first):"]
        for number, cause in enumerate(found[:max_causes], 1):
            shown = ", ".join(cause.clauses[:6]) + (", …" if len(cause.clauses) > 6 else "")
            lines.append(f"  [{number}] {len(cause.tests)} test{'s' if len(cause.tests) != 1 else ''} "
                         f"({shown}): {cause.text}")
        if len(found) > max_causes:
            lines.append(f"  … and {len(found) - max_causes} more causes (below)")
    lines += ["", "Clauses ([spec]: the spec's own; [full]: schemadoc's extensions):"]
    for clause in clauses:
        tally = {outcome: sum(test.outcome == outcome for test in clause.tests)
                 for outcome in (PASSED, FAILED, NOT_APPLICABLE)}
        detail = f"{tally[PASSED]} passed" + (f", {tally[FAILED]} failed" if tally[FAILED] else "") + (
            f", {tally[NOT_APPLICABLE]} n/a" if tally[NOT_APPLICABLE] else "")
        lines.append(f"{_MARK[clause.status]}  [{clause.profile}] {clause.id:<18} {clause.title}  ({detail})")
        if clause.status == NOT_APPLICABLE and (verbose or not clause.optional):
            reasons = sorted({test.reason for test in clause.tests})
            lines += [f"        not applicable: {reason}" for reason in reasons[:3]]
    if found:
        lines += ["", "Causes in detail:"]
    for number, cause in enumerate(found, 1):
        test = cause.example
        names = sorted({item.test for item in cause.tests})
        lines += ["", f"[{number}] {cause.text}",
                  f"     {len(cause.tests)} failed tests; clauses: {', '.join(cause.clauses)}",
                  f"     e.g. FAIL {test.test}" + (f" (and {len(names) - 1} more)" if len(names) > 1 else "")]
        lines += ["     " + line for line in test.reason.splitlines()[:40]]
        if test.exchange is not None:
            lines += [f"     request ({test.exchange['door']}): {_compact(test.exchange['request'], 3000)}",
                      f"     response: {_compact(test.exchange['response'], 6000)}"]
    lines += ["", total]
    return "\n".join(lines) + "\n"
