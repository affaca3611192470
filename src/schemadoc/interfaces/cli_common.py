"""What every ``schemadoc`` command shares: the exit codes (one per kind of failure), how a failure is
reported on stderr, logging, and the settings a command's flags override."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from schemadoc.errors import SchemaDocError

__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_OK", "EXIT_SCHEMA", "EXIT_STORAGE", "EXIT_USAGE", "configure_logging",
           "exit_code_for", "fail_line", "overrides", "problem_line", "report"]


EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_SCHEMA = 3
EXIT_STORAGE = 4
EXIT_INTERNAL = 5


def exit_code_for(error: SchemaDocError) -> int:
    """The exit code of a command that stops on ``error`` (the module docstring's table)."""
    if error.code in ("schema-load-failed", "schema-resolution-failed"):
        return EXIT_SCHEMA
    if error.code.startswith("storage-"):
        return EXIT_STORAGE
    if error.code == "internal-error":
        return EXIT_INTERNAL
    return EXIT_USAGE


def fail_line(error: SchemaDocError) -> str:
    remediation = error.remediation or error.entry.remediation
    line = f"schemadoc: {error.code}: {error.message} — {remediation}"
    return " ".join(line.split())


def report(error: SchemaDocError, *, as_json: bool = False) -> None:
    """The failure on stderr: one line (then one indented line per schema problem), or the error object as JSON."""
    problems: list[dict[str, Any]] = []
    if error.code.startswith("schema-"):  # the schema machinery is imported only when it has something to say
        from schemadoc.schema.loader import schema_problems

        problems = schema_problems(error)
    if as_json:
        import json

        body = error.to_dict()
        if problems:
            body["error"]["problems"] = problems
        print(json.dumps(body, ensure_ascii=False, default=str), file=sys.stderr, flush=True)
        return
    lines = [fail_line(error)]
    lines += [f"  {problem_line(problem)}" for problem in problems]
    print("\n".join(lines), file=sys.stderr, flush=True)


def problem_line(problem: Mapping[str, Any]) -> str:
    """``FILE POINTER [KEYWORD]: REASON`` on one line."""
    file = Path(str(problem.get("file") or "")).name
    where = " ".join(part for part in (file, problem.get("pointer") or "/") if part)
    keyword = f" [{problem['keyword']}]" if problem.get("keyword") else ""
    return " ".join(f"{where}{keyword}: {problem.get('reason', '')}".split())


def configure_logging(level: int) -> None:
    logging.basicConfig(level=level, stream=sys.stderr, force=True,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    quiet = max(level, logging.WARNING)
    for name in ("mcp", "sse_starlette", "httpx", "httpcore"):
        logging.getLogger(name).setLevel(level if level <= logging.DEBUG else quiet)


def overrides(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    return {name: getattr(args, name, None) for name in names}
