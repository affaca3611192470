"""What every ``schemadoc`` command shares: the exit codes (one per kind of failure), how a failure is
reported on stderr, logging, the settings a command's flags override, and the service the settings describe
(without importing FastAPI or mcp, so that start-up failures are reported sooner).

Exit codes, one per kind of failure and the same for every command (the README's table):
0 success; 1 what was checked is not right (``validate``: the document is invalid; ``check``: some stored
documents are invalid; ``replay``: journal and snapshot differ; ``import``: documents the schema refuses, the
others imported; ``migrate-documents``: documents refused or failed, the others migrated); 2 usage:
bad arguments or settings, an unreadable input, an unknown document, a damaged archive, doc_ids an
import finds already stored, a migration that cannot be run (``config-invalid``, ``invalid-request``,
``document-not-found``, ``archive-invalid``, ``import-conflict``, ``migration-invalid``); 3 the schema cannot be
used (``schema-load-failed``, ``schema-resolution-failed``); 4 storage (``storage-*``,
``store-format-unsupported``); 5 anything
else (``internal-error``). ``migrate`` exits 0 when the schema is migrated or up to date, else by the same table.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from schemadoc.config import Settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.startup import create_service

__all__ = ["EXIT_FAILED", "EXIT_INTERNAL", "EXIT_OK", "EXIT_SCHEMA", "EXIT_STORAGE", "EXIT_USAGE", "configure_logging",
           "create_service", "exit_code_for", "fail_line", "overrides", "problem_line", "report"]


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
    if error.code.startswith("storage-") or error.code == "store-format-unsupported":
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


def configure_logging(level: int, tokens_file: Path | None = None, log_format: str = "text") -> None:
    """Every record at ``level`` or above to stderr, one line each (``log_format``: ``text``, or ``json``: one JSON
    object per line), with no secret (:mod:`.logs`): query values, bearer credentials and the tokens of
    ``tokens_file`` redacted; a client that went away logged at INFO."""
    from schemadoc.interfaces.http.logs import FORMATTERS, ClientGoneFilter, LogHandler, TokenSecrets

    handler = LogHandler(sys.stderr)
    handler.setFormatter(FORMATTERS[log_format](TokenSecrets(tokens_file) if tokens_file is not None else None))
    handler.addFilter(ClientGoneFilter(level))
    logging.basicConfig(level=level, handlers=[handler], force=True)
    quiet = max(level, logging.WARNING)
    for name in ("mcp", "sse_starlette", "httpx", "httpcore"):
        logging.getLogger(name).setLevel(level if level <= logging.DEBUG else quiet)


def overrides(args: argparse.Namespace) -> dict[str, Any]:
    """The settings a command's flags give (``None``: not given); its other arguments are not settings."""
    names = {field.name for field in dataclasses.fields(Settings)}
    return {name: value for name, value in vars(args).items() if name in names}


class ProgressBar:
    """A progress bar (tqdm) labelled ``label`` on stderr when stderr is a terminal, nothing otherwise: call it with
    ``(done, total)`` as the work goes, :meth:`close` it at the end. Commands that walk a whole store use it."""

    def __init__(self, label: str) -> None:
        self.label = label
        self._bar: Any = None
        self._shown = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        if not self._shown:
            return
        if self._bar is None:
            from tqdm import tqdm

            try:  # a terminal that reports no size (0 x 0: tqdm would hide its bar) gets 80 x 24
                size = os.get_terminal_size(sys.stderr.fileno())
                columns, rows = size.columns or 80, size.lines or 24
            except OSError:
                columns, rows = 80, 24
            self._bar = tqdm(total=total, unit="doc", desc=self.label, file=sys.stderr, ncols=columns, nrows=rows,
                             leave=False)
        self._bar.update(done - self._bar.n)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()


def read_json_file(name: str, argument: str, *, invalid: str = "invalid-request") -> Any:
    """The JSON value in the file ``name`` (``-``: stdin) a command was given as ``argument``: an unreadable file is
    ``invalid-request``, text that is not JSON the code ``invalid`` (the command's own, e.g. ``migration-invalid``)."""
    try:
        data = sys.stdin.buffer.read() if name == "-" else Path(name).read_bytes()
    except OSError as error:
        raise SchemaDocError("invalid-request", f"Cannot read {name}: {error.strerror or error}.",
                             {"argument": argument, "path": name},
                             remediation="Name a readable JSON file.") from None
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as error:
        raise SchemaDocError(invalid, f"{name} is not valid JSON: {error}.",
                             {"argument": argument, "path": name, "problems": [str(error)]},
                             remediation="Fix the JSON syntax at the position given.") from None


def use_example(args: argparse.Namespace) -> bool:
    """Point ``args.schema_path`` at the bundled example ``--example`` names (``config-invalid`` beside
    ``--schema``); True when it only asked for the list (``serve --example`` with no name prints it)."""
    name = getattr(args, "example", None)
    if name is None:
        return False
    from schemadoc.examples import example_names, example_path

    if name == "":
        for known in example_names():
            print(f"{known}\t{example_path(known)}")
        return True
    if args.schema_path is not None:
        raise SchemaDocError("config-invalid", "Give either --schema or --example, not both.",
                             {"setting": "example", "value": name},
                             remediation="Drop one of the two flags.")
    args.schema_path = str(example_path(name))
    return False
