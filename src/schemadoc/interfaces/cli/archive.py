"""``schemadoc export`` (every document of a store into an archive) and ``schemadoc import`` (an archive into a
store); the archive and what each does: :mod:`schemadoc.archive`, ``docs/backup.md``.

Exit codes (the README's table): 0 done; 1 some documents were refused by the schema (the others
were imported); 2 a damaged archive (``archive-invalid``), doc_ids already stored
(``import-conflict``) or bad arguments; 3 the schema cannot be used; 4 storage.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import logging
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any, BinaryIO

from schemadoc.config import Settings, load_settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.cli.common import EXIT_FAILED, EXIT_OK, configure_logging, overrides, use_example

__all__ = ["add_commands", "export", "import_"]


def add_commands(commands: Any) -> None:
    """The ``export`` and ``import`` subcommands on ``commands`` (argparse's subparsers)."""
    export = commands.add_parser("export", help="write every document of a store (and with --history its "
                                                "journal) to an archive: a backup, or the way to another store")
    export.add_argument("output", metavar="FILE",
                        help="the archive to write, '-' for stdout; a name ending in .gz or .tgz is gzipped")
    export.add_argument("--storage-dir", metavar="DIR", help="the files store (default ./data)")
    export.add_argument("--storage-url", metavar="URL", help="the PostgreSQL store instead")
    export.add_argument("--history", action="store_true", help="add each document's journal (versions 1 to the "
                                                               "archived one): history, diffs and reverts survive")
    export.add_argument("--gzip", action="store_true", help="gzip the archive (also for '-')")
    export.add_argument("--schema", dest="schema_path", metavar="PATH",
                        help="record this schema's SHA-256 in the manifest (the schema the documents were served by)")
    export.add_argument("--example", metavar="NAME", help="a bundled example schema instead of --schema")
    export.add_argument("--config", dest="config_file", metavar="FILE", help="JSON config file")

    import_ = commands.add_parser("import", help="write the documents of an archive into a store, after "
                                                 "checking the whole archive and validating every document")
    import_.add_argument("archive", metavar="FILE", help="the archive to read, '-' for stdin")
    import_.add_argument("--schema", dest="schema_path", metavar="PATH", help="the schema the store serves")
    import_.add_argument("--example", metavar="NAME", help="a bundled example schema instead of --schema")
    import_.add_argument("--storage-dir", metavar="DIR", help="the files store (default ./data)")
    import_.add_argument("--storage-url", metavar="URL", help="the PostgreSQL store instead")
    import_.add_argument("--existing", choices=("fail", "skip", "replace"), default="fail",
                         help="doc_ids the store already holds: fail (default: stop before writing anything), "
                              "skip (keep the stored document) or replace (only with no server running)")
    import_.add_argument("--config", dest="config_file", metavar="FILE", help="JSON config file")


def _schema_manifest(path: Path | None) -> dict[str, Any] | None:
    """The manifest's ``schema``: the file's name and the SHA-256 of its bytes (``None`` when not given)."""
    if path is None:
        return None
    try:
        data = path.read_bytes()
    except OSError as error:
        raise SchemaDocError("schema-load-failed", f"The schema file {path} cannot be read: {error.strerror}.",
                             {"path": str(path), "reason": str(error.strerror)}) from None
    return {"file": path.name, "sha256": hashlib.sha256(data).hexdigest()}


def _store_manifest(settings: Settings) -> dict[str, Any]:
    if settings.storage_url is not None:
        from schemadoc.storage.postgres.connections import redact_url

        return {"kind": "postgresql", "url": redact_url(settings.storage_url)}
    return {"kind": "files", "storage_dir": str(settings.storage_dir.resolve())}


def _close(store: Any) -> None:
    close = getattr(store, "close", None)
    if callable(close):
        close()


@contextlib.contextmanager
def _output(name: str) -> Iterator[BinaryIO]:
    """stdout, or a temporary file beside ``name`` renamed onto it only when the export completed."""
    if name == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    target = Path(name)
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or ".")
    except OSError as error:
        raise SchemaDocError("invalid-request", f"Cannot write {name}: {error.strerror or error}.",
                             {"argument": "output", "path": name},
                             remediation="Name a file in a directory you can write.") from None
    try:
        with os.fdopen(handle, "wb") as file:
            yield file
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


def export(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    use_example(args)
    settings = load_settings(overrides(args), environ, require_schema=False)
    configure_logging(logging.WARNING)
    from schemadoc.archive import export_store
    from schemadoc.storage.current import open_for_reading

    schema = _schema_manifest(settings.schema_path)
    store = open_for_reading(settings.storage_dir, settings.storage_url)  # an export writes nothing to the store
    gzip = args.gzip or args.output.endswith((".gz", ".tgz"))
    try:
        with _output(args.output) as out:
            summary = export_store(store, out, history=args.history, gzip=gzip, source=_store_manifest(settings),
                                   schema=schema, progress=lambda line: print(line, file=sys.stderr))
    finally:
        _close(store)
    where = "stdout" if args.output == "-" else args.output
    print(f"exported {summary.documents} document(s) ({summary.deleted} deleted){' with history' * args.history} "
          f"to {where}" + (f"; {summary.vanished} purged meanwhile" if summary.vanished else ""),
          file=sys.stderr if args.output == "-" else sys.stdout)
    return EXIT_OK


@contextlib.contextmanager
def _input(name: str) -> Iterator[BinaryIO]:
    """The archive, seekable: a file, or stdin copied to a temporary file first (it is read twice)."""
    if name == "-":
        with tempfile.TemporaryFile() as spool:
            shutil.copyfileobj(sys.stdin.buffer, spool, 1 << 20)
            spool.seek(0)
            yield spool
        return
    try:
        file: IO[bytes] = open(name, "rb")  # noqa: SIM115 - closed below
    except OSError as error:
        raise SchemaDocError("invalid-request", f"Cannot read {name}: {error.strerror or error}.",
                             {"argument": "archive", "path": name}, remediation="Name a readable archive.") from None
    with file:
        yield file  # type: ignore[misc]


def _index(settings: Settings) -> None:
    """The search index brought up to date with what the import wrote (it wrote beside the service, which keeps the
    index): opening a service on the store catches the index up, so a running server lists and finds them."""
    from schemadoc.interfaces.startup import create_service

    create_service(settings).close()


def import_(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    use_example(args)
    settings = load_settings(overrides(args), environ)
    configure_logging(logging.WARNING)
    from schemadoc.archive import import_archive
    from schemadoc.interfaces.http.actors import command_actor
    from schemadoc.schema import load_schema
    from schemadoc.storage import store_for
    from schemadoc.validation import DocumentValidator

    assert settings.schema_path is not None
    validator = DocumentValidator(load_schema(settings.schema_path))
    served = _schema_manifest(settings.schema_path)
    with _input(args.archive) as archive:
        store = store_for(settings.storage_dir, settings.storage_url)
        store.open()
        try:
            summary = import_archive(archive, store, validator, existing=args.existing, report=print,
                                     actor=command_actor("import"))
        finally:
            _close(store)
    if summary.imported:
        _index(settings)
    archived = summary.manifest.get("schema")
    if isinstance(archived, dict) and served is not None and archived.get("sha256") != served["sha256"]:
        print(f"note: the archive was exported beside another schema ({archived.get('file')}); every imported "
              "document was validated against this one")
    print(f"imported {summary.imported} of {summary.documents} document(s) ({summary.replaced} replaced), "
          f"skipped {summary.skipped} (already in the store), invalid {summary.invalid} (refused by the schema)")
    return EXIT_FAILED if summary.invalid else EXIT_OK
