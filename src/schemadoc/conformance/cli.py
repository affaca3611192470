"""``schemadoc-conformance``: run the conformance suite against an implementation and report per clause.

Examples::

    schemadoc-conformance --url http://127.0.0.1:8080                 # REST + MCP of one server
    schemadoc-conformance --rest-url http://127.0.0.1:8080
    schemadoc-conformance --mcp-url http://127.0.0.1:8080/mcp
    schemadoc-conformance --mcp-command "my-server --schema {schema} --data {storage_dir}"
    schemadoc-conformance --mcp-command "..." --format junit --output conformance.xml
    schemadoc-conformance --mcp-command "..." --profile spec         # the spec's clauses only

The server must serve the schema the suite ships (``schemadoc-conformance --print-schema`` writes it out;
with ``--mcp-command`` it is passed in as ``{schema}``). Exit status: 0 when no clause failed, 1 when one
did, 2 when the run could not start (a usage error, a target that cannot be reached or does not speak the
protocol, a selection of no test); the reason goes to standard error within seconds.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shutil
import sys
import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from .clauses import CLAUSES
from .preflight import Refused, check_command, check_report_path, reach
from .target import BOOK_SCHEMA, ENV, PROFILES

__all__ = ["main"]

FORMATS = ("summary", "json", "junit")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="schemadoc-conformance", description=__doc__.split("\n\n")[0] if __doc__ else None,
        epilog="Placeholders in --mcp-command: {schema} (the shipped schema's path), {storage_dir} (a fresh "
               "directory; the same one when the suite restarts the server).")
    where = parser.add_argument_group("the implementation under test (one or more)")
    where.add_argument("--url", help="one server: REST at URL/api/v1 and MCP streamable HTTP at URL/mcp")
    where.add_argument("--rest-url", help="REST base URL (the API under URL/api/v1)")
    where.add_argument("--mcp-url", help="MCP streamable HTTP endpoint")
    where.add_argument("--mcp-command", help="command serving MCP on stdio, with {schema} and {storage_dir}")
    where.add_argument("--mcp-mode", choices=("auto", "legacy", "both"), default=None,
                       help="MCP protocol era: auto (2026-07-28 if offered), legacy (initialize handshake), or "
                            "both (default: both with --url, else auto)")
    out = parser.add_argument_group("output")
    out.add_argument("--format", choices=FORMATS, default="summary", help="what to write to --output (default "
                                                                         "summary)")
    out.add_argument("--output", "-o", help="file for --format (default: standard output)")
    out.add_argument("--json", dest="json_path", metavar="FILE", help="also write the JSON report here")
    out.add_argument("--junit", dest="junit_path", metavar="FILE", help="also write the JUnit XML report here")
    out.add_argument("--verbose", "-v", action="store_true", help="summary: say why each clause is not applicable")
    run = parser.add_argument_group("what to run")
    run.add_argument("--profile", choices=PROFILES, default="full",
                     help="spec: the spec's clauses only, judged on its tools, arguments, result members and "
                          "codes; full (default): also schemadoc's extensions (X-... clauses), each not "
                          "applicable where the server lacks it")
    run.add_argument("--thorough", action="store_true", help="five times the property-based examples")
    run.add_argument("--clause", action="append", default=[], metavar="ID",
                     help="only the tests of this clause (repeatable), e.g. US4.7 or FR-011")
    run.add_argument("-k", dest="keyword", help="only tests matching this pytest -k expression")
    run.add_argument("--list-clauses", action="store_true", help="list the clauses and exit")
    run.add_argument("--print-schema", action="store_true", help="write the schema the server must serve and exit")
    return parser


def _environment(args: argparse.Namespace) -> dict[str, str]:
    env = {ENV["url"]: args.url or "", ENV["rest_url"]: args.rest_url or "", ENV["mcp_url"]: args.mcp_url or "",
           ENV["mcp_command"]: args.mcp_command or "", ENV["thorough"]: "1" if args.thorough else "",
           ENV["profile"]: args.profile}
    mode = args.mcp_mode or ("both" if args.url else "auto")
    env[ENV["mcp_modes"]] = "auto,legacy" if mode == "both" else mode
    return env


def _refuse(reason: str) -> int:
    print(f"schemadoc-conformance: {reason}", file=sys.stderr)
    return 2


def _check_options(args: argparse.Namespace) -> None:
    """Everything about the options that can be refused before a target is even reached."""
    if args.mcp_command:
        check_command(args.mcp_command)
    for option, path in (("--output", args.output), ("--json", args.json_path), ("--junit", args.junit_path)):
        if path:
            check_report_path(option, path)
    unknown = [clause for clause in args.clause if clause not in CLAUSES]
    if unknown:
        raise Refused(f"unknown clause(s) {unknown}; see --list-clauses")
    beyond = [clause for clause in args.clause if CLAUSES[clause].optional and args.profile == "spec"]
    if beyond:
        raise Refused(f"clause(s) {beyond} are schemadoc's extensions, not in --profile spec")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.list_clauses:
        for clause in CLAUSES.values():
            print(f"{clause.id:<18} {'full' if clause.optional else 'spec'}  {clause.title}")
        return 0
    if args.print_schema:
        sys.stdout.write(BOOK_SCHEMA.read_text(encoding="utf-8"))
        return 0
    if not (args.url or args.rest_url or args.mcp_url or args.mcp_command):
        _parser().print_usage(sys.stderr)
        print("schemadoc-conformance: give --url, --rest-url, --mcp-url or --mcp-command", file=sys.stderr)
        return 2
    try:
        _check_options(args)
        os.environ.update(_environment(args))
        from .target import current

        target = current()
        reached = reach(rest_url=target.rest_url, mcp_url=target.mcp_url, mcp_command=target.mcp_command,
                        mode=target.mcp_modes[0], schema=BOOK_SCHEMA)
    except Refused as refused:
        return _refuse(str(refused))
    print(f"schemadoc-conformance: reached {reached}", file=sys.stderr)
    scratch = Path(tempfile.mkdtemp(prefix="schemadoc-conformance-"))
    try:
        return _run(args, target, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _run(args: argparse.Namespace, target: Any, scratch: Path) -> int:
    """Run the suite (nothing written to the working directory: Hypothesis keeps no database, pytest no
    cache) and write the reports."""
    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = str(scratch / "hypothesis")
    import pytest
    from hypothesis import settings

    from .report import ReportPlugin, render_json, render_junit, render_summary

    settings.register_profile("schemadoc-conformance", database=None)
    settings.load_profile("schemadoc-conformance")
    plugin = ReportPlugin({"rest_url": target.rest_url, "mcp_url": target.mcp_url,
                           "mcp_command": target.mcp_command, "mcp_modes": ",".join(target.mcp_modes),
                           "thorough": target.thorough, "profile": target.profile}, args.clause,
                          profile=target.profile)
    suite = Path(str(resources.files("schemadoc.conformance") / "suite"))
    ini = Path(str(resources.files("schemadoc.conformance") / "conformance.ini"))
    pytest_args = [str(suite), "-c", str(ini), "--rootdir", str(suite), "-p", "no:cacheprovider",
                   "-q", "--no-header", "-p", "no:randomly", "--basetemp", str(scratch / "tmp")]
    if args.keyword:
        pytest_args += ["-k", args.keyword]
    with contextlib.redirect_stdout(sys.stderr):  # pytest's progress must not mix with a report on stdout
        status = pytest.main(pytest_args, plugins=[plugin])
    if status == pytest.ExitCode.NO_TESTS_COLLECTED or (status == pytest.ExitCode.OK and not plugin.report.tests):
        selection = " ".join(([f"-k {args.keyword!r}"] if args.keyword else [])
                             + [f"--clause {clause}" for clause in args.clause] + [f"--profile {args.profile}"])
        return _refuse(f"{selection} selects no test; see --list-clauses")
    if status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return _refuse(f"the suite could not run (pytest exit status {int(status)})")
    report = plugin.report
    renderers = {"summary": lambda: render_summary(report, verbose=args.verbose),
                 "json": lambda: render_json(report), "junit": lambda: render_junit(report)}
    text = renderers[args.format]()
    if args.output:
        Path(args.output).write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    if args.json_path:
        Path(args.json_path).write_text(render_json(report), encoding="utf-8")
    if args.junit_path:
        Path(args.junit_path).write_text(render_junit(report), encoding="utf-8")
    if args.format != "summary" or args.output:
        print(render_summary(report).rstrip().splitlines()[-1], file=sys.stderr)
    return 1 if report.failed else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
