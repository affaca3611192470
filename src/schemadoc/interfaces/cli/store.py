"""``schemadoc replay`` (rebuild a document from its journal and compare) and ``schemadoc migrate`` (create or
migrate the PostgreSQL tables as their owning role)."""

from __future__ import annotations

import argparse
import logging
from collections.abc import Mapping
from typing import Any

from schemadoc.config import load_settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.cli.common import EXIT_FAILED, EXIT_OK, configure_logging, overrides

__all__ = ["migrate", "replay"]


def _differences(left: Any, right: Any, path: str = "", limit: int = 10) -> list[str]:
    """JSON Pointers where two JSON values differ (types included: 1, 1.0 and true all differ)."""
    out: list[str] = []

    def walk(a: Any, b: Any, where: str) -> None:
        if len(out) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b)):
                child = f"{where}/{key.replace('~', '~0').replace('/', '~1')}"
                if key not in a or key not in b:
                    out.append(child)
                else:
                    walk(a[key], b[key], child)
                if len(out) >= limit:
                    return
        elif isinstance(a, list) and isinstance(b, list):
            for index in range(max(len(a), len(b))):
                if index >= len(a) or index >= len(b):
                    out.append(f"{where}/{index}")
                else:
                    walk(a[index], b[index], f"{where}/{index}")
                if len(out) >= limit:
                    return
        elif type(a) is not type(b) or a != b:
            out.append(where or "/")

    walk(left, right, path)
    return out


def replay(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    settings = load_settings(overrides(args), environ, require_schema=False)
    configure_logging(logging.WARNING)
    import orjson

    from schemadoc.ops.journal import replay
    from schemadoc.storage.base import check_doc_id
    from schemadoc.storage.current import open_for_reading

    doc_id = check_doc_id(args.doc_id)
    store = open_for_reading(settings.storage_dir, settings.storage_url)  # replay writes nothing to the store
    stored = store.load(doc_id)
    entries = store.read_journal(doc_id)
    at = stored.meta.snapshot_version
    try:
        rebuilt = replay(entries, copy=False)
        at_snapshot = replay(store.read_journal(doc_id, until_version=at), copy=False)
    except ValueError as error:
        print(f"{doc_id}: the journal does not replay: {error}")
        return EXIT_FAILED
    try:
        snapshot = orjson.loads(stored.content)
    except orjson.JSONDecodeError as error:
        print(f"{doc_id}: the snapshot is not valid JSON: {error}")
        return EXIT_FAILED
    last = entries[-1].version if entries else 0
    print(f"{doc_id}: replayed {len(entries)} journal entries (versions 1..{last}); "
          f"snapshot at version {at}, {stored.meta.version - at} journal entries after it")
    same = last == stored.meta.version
    if not same:
        print(f"versions differ: journal ends at {last}, meta says {stored.meta.version}")
    differences = _differences(at_snapshot, snapshot)
    if differences:
        same = False
        print("content differs at: " + ", ".join(differences))
    if settings.schema_path is not None:
        from schemadoc.schema import load_schema
        from schemadoc.validation import DocumentValidator

        report = DocumentValidator(load_schema(settings.schema_path)).validate(rebuilt)
        print("the rebuilt document is valid" if report.valid
              else f"the rebuilt document has {len(report.violations)} violation(s)")
        same = same and report.valid
    print("equal" if same else "different")
    return EXIT_OK if same else EXIT_FAILED


def _create_search_tables(store: Any) -> None:
    """The search index's tables (and its extensions'), created by the owner who migrates, so that a server whose
    role may only read and write rows finds them there."""
    from schemadoc.search.backends import PostgresBackend
    from schemadoc.search.hybrid import default_extensions

    store.open()
    try:
        backend = PostgresBackend(store)
        with backend.transaction() as tx:
            for extension in default_extensions():
                extension.create_tables(tx)
    finally:
        store.close()


def migrate(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    settings = load_settings(overrides(args), environ, require_schema=False)
    configure_logging(logging.INFO)
    if settings.storage_url is None:
        raise SchemaDocError("config-invalid", "migrate needs a PostgreSQL database: files need no migration.",
                             {"setting": "storage_url"},
                             remediation="Give --storage-url postgresql://OWNER@HOST:5432/DBNAME (or STORAGE_URL).")
    from schemadoc.storage.postgres import PostgresDocumentStore

    store = PostgresDocumentStore(settings.storage_url)
    applied = store.migrate()
    _create_search_tables(store)
    if applied:
        print(f"schema {store.schema}: applied migration(s) {', '.join(str(v) for v in applied)}")
    else:
        print(f"schema {store.schema}: up to date")
    return EXIT_OK
