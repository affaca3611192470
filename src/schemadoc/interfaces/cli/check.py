"""``schemadoc check``: every document of a store judged against a schema, from the command line
(:mod:`schemadoc.store_check`; ``docs/schema-changes.md``).

Safe beside running servers: the store is opened to be read only (no recovery, no format marker, no snapshot,
no lock file made; a document's lock is held only while its files are read), and each document is judged at
its current version (the journal replayed on the snapshot). A progress bar goes to stderr when stderr is a
terminal. The summary goes to stdout, or with ``--json`` one JSON object and nothing else.

``--record`` (an extension) records each verdict in the store as a server's check does (no content, no version,
no journal entry), where the store does not know the schema's verdict on that version yet, and writes it into
the shared search index (:func:`~schemadoc.search.index.index_verdicts`), so that the running servers'
``valid`` filters show it at once. It is refused when the index says its servers serve another schema: the
verdicts of a schema not served would replace theirs.

Exit codes (the README's table): 0 every document checked is valid; 1 some are invalid; 2 bad arguments or
settings; 3 the schema cannot be used; 4 storage: the store cannot be opened, or documents could not be read
(the summary names them; this wins over 1).
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from schemadoc.config import Settings, load_settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.cli.common import (
    EXIT_FAILED,
    EXIT_OK,
    EXIT_STORAGE,
    ProgressBar,
    configure_logging,
    overrides,
    use_example,
)

if TYPE_CHECKING:  # imported when a check runs: every command's start-up reads this module
    from schemadoc.search.backends import Backend
    from schemadoc.storage.base import DocumentStore
    from schemadoc.store_check import StoreCheck

__all__ = ["add_command", "check"]

_LISTED_INVALID = 20
"""Invalid documents listed by the text summary (``--json`` lists every one)."""


def add_command(commands: Any) -> None:
    """The ``check`` subcommand on ``commands`` (argparse's subparsers)."""
    check = commands.add_parser("check", help="judge every document of a store against a schema (e.g. a changed "
                                              "one), at its current version; writes nothing (unless --record)")
    check.add_argument("--schema", dest="schema_path", metavar="PATH", help="the JSON Schema to judge by")
    check.add_argument("--example", metavar="NAME", help="a bundled example schema instead of --schema")
    check.add_argument("--storage-dir", metavar="DIR", help="the files store (default ./data)")
    check.add_argument("--storage-url", metavar="URL", help="the PostgreSQL store instead")
    check.add_argument("--config", dest="config_file", metavar="FILE", help="JSON config file")
    check.add_argument("--include-deleted", action="store_true",
                       help="check deleted documents too (by default they are only counted)")
    check.add_argument("--json", action="store_true",
                       help="print one JSON object: the summary and every invalid document")
    check.add_argument("--record", action="store_true",
                       help="record each verdict in the store and the search index, as a server's check does (the "
                            "schema must be the one the servers serve); writes no content")


def _recording(*args: Any, **kwargs: Any) -> StoreCheck:
    """A :class:`~schemadoc.store_check.StoreCheck` that records each verdict it reaches in the store, and in
    batches in the shared index (``--record``)."""
    from schemadoc.storage.current import CurrentDocument
    from schemadoc.store_check import DocumentVerdict, StoreCheck

    class _Recording(StoreCheck):
        def __init__(self, *args: Any, store: DocumentStore, digest: str, backend: Backend | None,
                     **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.store = store
            self.digest = digest
            self.backend = backend
            self.recorded = 0
            self.known = 0
            """Verdicts the store knew already (a write's or a server's check of the same version, by this schema)."""
            self.moved = 0
            """Documents written (or purged) since they were read: the write recorded its own verdict."""
            self.indexed = 0
            self.not_recorded: list[dict[str, Any]] = []
            self._to_index: list[str] = []

        def judge(self, document: CurrentDocument) -> DocumentVerdict:
            from schemadoc.ops.journal import utc_now
            from schemadoc.search.verdicts import verdict_status
            from schemadoc.storage.verdict import Verdict

            judged = super().judge(document)
            meta = document.meta
            if verdict_status(meta, self.digest) is not None:
                self.known += 1
                return judged
            verdict = Verdict.of(meta.version, self.digest, judged.violations, judged.violation_count,
                                 checked_at=utc_now())
            try:
                recorded = self.store.record_verdict(meta.doc_id, verdict)
            except SchemaDocError as error:
                if error.code == "document-not-found":
                    self.moved += 1
                else:
                    self.not_recorded.append({"doc_id": meta.doc_id, "code": error.code, "message": error.message})
                return judged
            if not recorded:
                self.moved += 1
                return judged
            self.recorded += 1
            self._to_index.append(meta.doc_id)
            if len(self._to_index) >= _INDEX_BATCH:
                self.flush()
            return judged

        def flush(self) -> None:
            """Write the verdicts recorded so far into the shared index (one transaction per batch)."""
            from schemadoc.search.opening import stored_metas
            from schemadoc.search.verdicts import index_verdicts

            doc_ids, self._to_index = self._to_index, []
            if self.backend is not None and doc_ids:
                self.indexed += index_verdicts(self.backend, doc_ids, lambda ids: stored_metas(self.store, ids))

        def summary(self) -> dict[str, Any]:
            return {**super().summary(), "recorded": self.recorded, "already_recorded": self.known,
                    "written_meanwhile": self.moved, "indexed": self.indexed, "not_recorded": list(self.not_recorded)}

    return _Recording(*args, **kwargs)


_INDEX_BATCH = 200
"""Verdicts recorded before they are written into the index (a running server's filter shows them then)."""


def _served_index(store: DocumentStore, digest: str) -> Backend | None:
    """The store's search index, when a server made one; refused when its servers serve another schema."""
    from schemadoc.search.opening import existing_backend
    from schemadoc.search.verdicts import served_digest

    backend = existing_backend(store)
    if backend is None:
        return None
    served = served_digest(backend)
    if served is not None and served != digest:
        backend.close()
        raise SchemaDocError(
            "config-invalid", f"--record records the verdicts of the schema the servers serve ({served}); this "
            f"schema is {digest}.", {"setting": "record", "served_digest": served, "schema_digest": digest},
            remediation="Check without --record (nothing is written), or give the served schema.")
    return backend


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
    if "recorded" in result:
        lines.append(f"recorded {result['recorded']} verdict{'s' if result['recorded'] != 1 else ''} in the store "
                     f"({result['already_recorded']} known already, {result['written_meanwhile']} written meanwhile); "
                     f"{result['indexed']} changed in the search index")
        for failed in result["not_recorded"]:
            lines.append(f"  not recorded: {failed['doc_id']}: {failed['code']}: {failed['message']}")
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
    backend: Backend | None = None
    progress: ProgressBar | None = None
    try:
        inventory: StoreCheck
        if args.record:
            backend = _served_index(store, schema.digest)
            inventory = _recording(DocumentValidator(schema), include_deleted=bool(args.include_deleted), store=store,
                                   digest=schema.digest, backend=backend)
        else:
            inventory = StoreCheck(DocumentValidator(schema), include_deleted=bool(args.include_deleted))
        progress = ProgressBar("checking")
        inventory.run(store, progress)
        flush = getattr(inventory, "flush", None)
        if flush is not None:
            flush()
    finally:
        if progress is not None:
            progress.close()
        if backend is not None:
            backend.close()
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
    if inventory.unreadable or getattr(inventory, "not_recorded", None):
        return EXIT_STORAGE
    return EXIT_FAILED if inventory.invalid else EXIT_OK
