"""``schemadoc migrate-documents``: apply one named migration to every stored document (or those selected), each
document's migration one journaled version carrying the migration's name (docs/schema-changes.md).

The migration is a JSON file (``{"name": ..., "patch" | "merge_patch" | "function": ...}``, :mod:`schemadoc.ops
.migration`) or the flags ``--name`` and ``--function``. The run itself: :mod:`schemadoc.service.migrating`.

Exit codes (the README's table): 0 every selected document was migrated, or skipped as already migrated, not
applicable or unchanged; 1 some were refused or failed (each one reported, the others migrated); 2 a migration
that cannot be run (``migration-invalid``, nothing changed) or bad arguments; 3 the schema; 4 storage.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import os
import sys
from collections.abc import Mapping
from typing import Any

import orjson

from schemadoc.config import load_settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    ProgressBar,
    configure_logging,
    create_service,
    overrides,
    read_json_file,
    use_example,
)

__all__ = ["add_command", "migrate_documents"]

_LABELS = {"valid": ("migrated, valid", "would become valid"),
           "invalid": ("migrated, still invalid", "would stay invalid"),
           "refused": ("refused by the schema", "would be refused"),
           "failed": ("failed", "would fail"),
           "not_applicable": ("not applicable (a test failed)", "not applicable (a test failed)"),
           "unchanged": ("unchanged (nothing to change)", "unchanged (nothing to change)"),
           "already_migrated": ("already migrated", "already migrated")}
_SHOWN_FAILURES = 20


def add_command(commands: Any) -> None:
    """The ``migrate-documents`` subcommand on ``commands`` (argparse's subparsers)."""
    command = commands.add_parser(
        "migrate-documents", help="apply one named migration (patch template, merge patch or Python function) to "
                                  "every stored document, one journaled version each; resumable")
    command.add_argument("migration", nargs="?", metavar="FILE",
                         help="the migration, a JSON file ('-' for stdin): {\"name\": ..., \"patch\": [...]} "
                              "or {\"name\": ..., \"merge_patch\": {...}} or {\"name\": ..., \"function\": "
                              "\"module:function\"}")
    command.add_argument("--name", metavar="NAME", help="the migration's name (with --function, instead of FILE)")
    command.add_argument("--function", metavar="MODULE:FUNCTION",
                         help="a Python function, document in, document out (importable from the current "
                              "directory or PYTHONPATH)")
    command.add_argument("--schema", dest="schema_path", metavar="PATH", help="the schema the store serves")
    command.add_argument("--example", metavar="NAME", help="a bundled example schema instead of --schema")
    command.add_argument("--storage-dir", metavar="DIR", help="the files store (default ./data)")
    command.add_argument("--storage-url", metavar="URL", help="the PostgreSQL store instead")
    command.add_argument("--config", dest="config_file", metavar="FILE", help="JSON config file")
    command.add_argument("--memory-budget", metavar="SIZE", help="bytes of documents kept in memory (e.g. 256MiB)")
    command.add_argument("--validation-level", metavar="LEVEL", help="moderate (default) or strict, as the server")
    command.add_argument("--doc-id", dest="doc_ids", action="append", metavar="ID",
                         help="migrate only this document (repeatable)")
    command.add_argument("--where", dest="where", action="append", metavar="POINTER=JSON",
                         help="migrate only documents whose node at POINTER equals the JSON value, e.g. "
                              "'/status=\"draft\"' (repeatable: all must hold)")
    command.add_argument("--dry-run", action="store_true",
                         help="write nothing; count what each document would become")
    command.add_argument("--json", action="store_true", help="print the summary as JSON")


def load_function(source: str) -> Any:
    """``module:function`` imported (the current directory first on the import path), or ``migration-invalid``."""
    module_name, _, attribute = source.partition(":")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as error:  # an import runs the user's code: any exception says it cannot be used
        raise SchemaDocError("migration-invalid", f"Cannot import {module_name}: {type(error).__name__}: {error}",
                             {"function": source, "problems": [f"import failed: {error}"]}) from None
    function = getattr(module, attribute, None)
    if not callable(function):
        raise SchemaDocError("migration-invalid", f"{source} is not a function of {module_name}.",
                             {"function": source, "problems": [f"{attribute} is missing or not callable"]})
    return function


def _migration_data(args: argparse.Namespace) -> Any:
    if args.migration is not None:
        if args.name is not None or args.function is not None:
            raise SchemaDocError("invalid-request", "Give the migration either as FILE or as --name and "
                                 "--function, not both.", {"argument": "migration"})
        return read_json_file(args.migration, "migration", invalid="migration-invalid")
    if args.function is None:
        raise SchemaDocError("invalid-request", "No migration: give a migration FILE, or --name and --function.",
                             {"argument": "migration"},
                             remediation="See docs/schema-changes.md ('schemadoc migrate-documents').")
    return {"name": args.name, "function": args.function}


def _where(given: list[str] | None) -> list[Any]:
    from schemadoc.service.migrating import Where

    selections = []
    for text in given or []:
        pointer, equals, value = text.partition("=")
        try:
            if not equals:
                raise ValueError("no '='")
            selections.append(Where(pointer, orjson.loads(value)))
        except (ValueError, orjson.JSONDecodeError) as error:
            raise SchemaDocError("invalid-request", f"--where {text!r} is not POINTER=JSON: {error}.",
                                 {"argument": "where", "value": text},
                                 remediation="Write it as /path=JSON, e.g. '/status=\"draft\"' or '/year=2024'."
                                 ) from None
    return selections


def migrate_documents(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    use_example(args)
    settings = load_settings(overrides(args), environ)
    configure_logging(logging.WARNING)
    data = _migration_data(args)
    where = _where(args.where)
    from schemadoc.interfaces.http.actors import command_actor
    from schemadoc.ops.migration import parse_migration
    from schemadoc.service.migrating import migrate_documents as run

    migration = parse_migration(data, load_function=load_function)  # before the store is opened: nothing changed
    service = create_service(settings)
    progress = ProgressBar(migration.name)
    try:
        summary = run(service, migration, args.doc_ids, dry_run=args.dry_run,
                      actor=command_actor("migrate-documents"), where=where, progress=progress)
    finally:
        progress.close()
        service.close()
    if args.json:
        print(orjson.dumps(summary.to_dict(), option=orjson.OPT_INDENT_2).decode())
    else:
        _print_summary(summary)
    return EXIT_OK if summary.ok else EXIT_FAILED


def _print_summary(summary: Any) -> None:
    dry = " (dry run: nothing written)" if summary.dry_run else ""
    lines = [f"migration {summary.migration} ({summary.kind.replace('_', ' ')}) on {summary.selected} "
             f"document(s){dry}" + (f"; {summary.not_selected} not selected by --where" if summary.not_selected
                                    else "")]
    for outcome, count in summary.counts.items():
        label = _LABELS[outcome][1 if summary.dry_run else 0]
        examples = summary.examples.get(outcome) or []
        shown = f"  e.g. {', '.join(examples)}" if examples and outcome != "already_migrated" else ""
        lines.append(f"  {label:<32}{count:>8}{shown}")
    for failure in summary.failures[:_SHOWN_FAILURES]:
        line = f"  {failure.doc_id}: {failure.code}: {failure.message}"
        if failure.violation:
            line += (f" (first violation: {failure.violation.get('path') or '/'} {failure.violation.get('code')}: "
                     f"{failure.violation.get('message')})")
        lines.append(" ".join(line.split()))
    total = sum(summary.counts[outcome] for outcome in ("refused", "failed"))
    if total > _SHOWN_FAILURES:
        lines.append(f"  ... and {total - _SHOWN_FAILURES} more (--json lists the first {len(summary.failures)})")
    print("\n".join(lines))
