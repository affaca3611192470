"""``schemadoc check``: every document of a store judged against a schema, from the command line
(:mod:`schemadoc.store_check`; ``docs/schema-changes.md``).

Safe beside running servers: the store is opened to be read only (no recovery, no format marker, no snapshot,
no lock file made; a document's lock is held only while its files are read), and each document is judged at
its current version (the journal replayed on the snapshot). A progress bar goes to stderr when stderr is a
terminal. The summary goes to stdout, or with ``--json`` one JSON object and nothing else.

Exit codes (the README's table): 0 every document checked is valid; 1 some are invalid; 2 bad arguments or
settings; 3 the schema cannot be used; 4 storage: the store cannot be opened, or documents could not be read
(the summary names them; this wins over 1).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping
from typing import Any

import orjson

from schemadoc.config import Settings, load_settings
from schemadoc.interfaces.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_STORAGE,
    ProgressBar,
    configure_logging,
    overrides,
    use_example,
)

__all__ = ["add_command", "check"]

_LISTED_INVALID = 20
"""Invalid documents listed by the text summary (``--json`` lists every one)."""


def add_command(commands: Any) -> None:
    """The ``check`` subcommand on ``commands`` (argparse's subparsers)."""
    check = commands.add_parser("check", help="judge every document of a store against a schema (e.g. a changed "
                                              "one), at its current version; writes nothing")
    check.add_argument("--schema", dest="schema_path", metavar="PATH", help="the JSON Schema to judge by")
    check.add_argument("--example", metavar="NAME", help="a bundled example schema instead of --schema")
    check.add_argument("--storage-dir", metavar="DIR", help="the files store (default ./data)")
    check.add_argument("--storage-url", metavar="URL", help="the PostgreSQL store instead")
    check.add_argument("--config", dest="config_file", metavar="FILE", help="JSON config file")
    check.add_argument("--include-deleted", action="store_true",
                       help="check deleted documents too (by default they are only counted)")
    check.add_argument("--json", action="store_true",
                       help="print one JSON object: the summary and every invalid document")


def _storage_shown(settings: Settings) -> str:
    if settings.storage_url is None:
        return str(settings.storage_dir)
    from schemadoc.storage.postgres.connections import redact_url

    return redact_url(settings.storage_url)


def _tally_lines(title: str, tallies: Mapping[str, Mapping[str, Any]]) -> list[str]:
    if not tallies:
        return []
    width = min(max(len(name) for name in tallies), 48)
    lines = [f"{title}:"]
    for name, tally in tallies.items():
        count = tally["violations"]
        lines.append(f"  {name:<{width}}  {count} violation{'s' if count != 1 else ''} in {tally['documents']} "
                     f"document{'s' if tally['documents'] != 1 else ''}, e.g. {', '.join(tally['examples'])}")
    return lines


def _text(result: Mapping[str, Any]) -> str:
    deleted = result["deleted"]
    lines = [f"checked {result['checked']} document{'s' if result['checked'] != 1 else ''} of {result['storage']} "
             f"against {result['schema']} ({result['schema_digest']}): {result['valid']} valid, "
             f"{result['invalid']} invalid" + (f", {result['unreadable']} unreadable" if result["unreadable"] else "")]
    if deleted:
        lines.append(f"{deleted} deleted document{'s' if deleted != 1 else ''} "
                     + ("checked with the others" if result["deleted_checked"]
                        else "not checked (--include-deleted checks them)"))
    lines += _tally_lines("by violation code", result["by_code"])
    lines += _tally_lines("by path", result["by_path"])
    invalid = result["invalid_documents"]
    if invalid:
        more = f" (the first {_LISTED_INVALID}; --json lists all)" if len(invalid) > _LISTED_INVALID else ""
        lines.append(f"invalid documents{more}:")
        for verdict in invalid[:_LISTED_INVALID]:
            first = verdict["violations"][0]
            count = verdict["violation_count"]
            lines.append(f"  {verdict['doc_id']} v{verdict['version']}"
                         f"{' (deleted)' if verdict.get('deleted') else ''}: {count} violation"
                         f"{'s' if count != 1 else ''}, first {first['code']}: {first['message']}")
    for unreadable in result["unreadable_documents"]:
        lines.append(f"  {unreadable['doc_id']}: {unreadable['code']}: {unreadable['message']}")
    return "\n".join(lines)


def check(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    use_example(args)
    settings = load_settings(overrides(args), environ)
    configure_logging(logging.WARNING)
    from schemadoc.schema import load_schema
    from schemadoc.storage.current import open_for_reading
    from schemadoc.store_check import StoreCheck
    from schemadoc.validation import DocumentValidator

    assert settings.schema_path is not None  # load_settings requires one
    schema = load_schema(settings.schema_path)
    store = open_for_reading(settings.storage_dir, settings.storage_url)
    inventory = StoreCheck(DocumentValidator(schema), include_deleted=bool(args.include_deleted))
    progress = ProgressBar("checking")
    try:
        inventory.run(store, progress)
    finally:
        progress.close()
        close = getattr(store, "close", None)
        if close is not None:
            close()
    result = {"schema": str(settings.schema_path), "schema_digest": schema.digest,
              "storage": _storage_shown(settings), **inventory.summary()}
    if args.json:
        sys.stdout.write(orjson.dumps(result, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE).decode())
    else:
        print(_text(result))
    sys.stdout.flush()
    if inventory.unreadable:
        return EXIT_STORAGE
    return EXIT_FAILED if inventory.invalid else EXIT_OK
