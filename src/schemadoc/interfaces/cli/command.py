"""The ``schemadoc`` command: ``serve``, ``validate``, ``check``, ``replay``, ``migrate``, ``export``, ``import``
and ``migrate-documents``.

A start-up failure (no schema, a missing or invalid schema, a ``$ref`` cycle, a storage
directory that cannot be written, a bad setting, a port in use) ends the process at once with
one line on stderr, ``schemadoc: <code>: <message> — <remediation>``, and no traceback.
Logs go to stderr through :mod:`logging`; with ``--transport stdio`` stdout carries nothing
but MCP messages.

A schema that cannot be loaded is followed by one indented line per problem (file, JSON Pointer,
keyword, reason); ``--json`` prints the error object with ``problems`` as JSON on stderr instead.

Exit codes, one per kind of failure and the same for every command: :mod:`~schemadoc.interfaces.cli.common`.

Heavy imports (FastAPI, uvicorn, mcp, the schema machinery) happen only in the subcommand
that needs them, so failures are reported quickly.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from schemadoc import __version__
from schemadoc.config import TRANSPORTS, Settings, load_settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.cli.archive import add_commands as add_archive_commands
from schemadoc.interfaces.cli.archive import export, import_
from schemadoc.interfaces.cli.check import add_command as add_check_command
from schemadoc.interfaces.cli.check import check
from schemadoc.interfaces.cli.common import (
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_OK,
    EXIT_USAGE,
    configure_logging,
    create_service,
    exit_code_for,
    overrides,
    problem_line,
    read_json_file,
    report,
    use_example,
)
from schemadoc.interfaces.cli.listening import graceful_server_class, listen, listen_beside
from schemadoc.interfaces.cli.migrate import add_command as add_migrate_documents
from schemadoc.interfaces.cli.migrate import migrate_documents
from schemadoc.interfaces.cli.store import migrate, replay

if TYPE_CHECKING:
    from schemadoc.interfaces.http.shutdown import Stopping
    from schemadoc.interfaces.workers import Channel
    from schemadoc.service import DocumentService

__all__ = ["main"]

log = logging.getLogger("schemadoc")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="schemadoc",
        description="A document server that keeps JSON documents valid against one JSON Schema.",
        epilog="Settings: flags > environment variables (SCHEMA_PATH, STORAGE_DIR, …) > config file > defaults.")
    parser.add_argument("--version", action="version", version=f"schemadoc {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    serve = commands.add_parser("serve", help="serve REST + MCP over HTTP, or MCP over stdio")
    serve.add_argument("--schema", dest="schema_path", metavar="PATH", help="the JSON Schema (Draft 2020-12)")
    serve.add_argument("--example", nargs="?", const="", metavar="NAME",
                       help="serve a bundled example schema instead (book, ...); alone, list them")
    serve.add_argument("--storage-dir", metavar="DIR", help="where documents are stored (default ./data)")
    serve.add_argument("--storage-url", metavar="URL",
                       help="store documents in PostgreSQL instead (postgresql://user@host:5432/dbname)")
    serve.add_argument("--transport", choices=TRANSPORTS, help="http (default) or stdio")
    serve.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", help="port to listen on (default 8080; 0 picks a free one)")
    serve.add_argument("--workers", metavar="N",
                       help="HTTP server processes on the one listening socket (default 1; docs/deployment.md)")
    serve.add_argument("--config", dest="config_file", metavar="FILE", help="JSON config file (default ./config.json)")
    serve.add_argument("--log-level", metavar="LEVEL", help="debug, info (default), warning or error")
    serve.add_argument("--log-format", metavar="FORMAT", help="text (default) or json: one JSON object per line")
    serve.add_argument("--validation-level", metavar="LEVEL",
                       help="moderate (default): a write to a document the schema change made invalid is accepted "
                            "when it adds no violation; strict: every write must leave the document valid")
    serve.add_argument("--allowed-hosts", metavar="HOSTS",
                       help="comma-separated host names the server answers for (name, name:port, *.domain, *); "
                            "default: loopback names on a loopback address, any elsewhere")
    serve.add_argument("--tokens-file", metavar="FILE",
                       help="JSON file of named access tokens, read-only or read-write (docs/security.md)")
    serve.add_argument("--unsafe-no-auth", action="store_true", default=None,
                       help="serve a non-loopback address without access tokens (anyone who reaches it may write)")
    serve.add_argument("--json", action="store_true", help="print a start-up failure as a JSON error object")
    serve.add_argument("--memory-budget", metavar="SIZE",
                       help="bytes of documents and caches kept in memory, e.g. 256MiB or 2GiB "
                            "(default a quarter of the machine's memory)")

    validate = commands.add_parser("validate", help="check a schema, or a JSON file against it")
    validate.add_argument("--schema", dest="schema_path", metavar="PATH", help="the JSON Schema (Draft 2020-12)")
    validate.add_argument("--example", metavar="NAME", help="a bundled example schema instead of --schema")
    validate.add_argument("--config", dest="config_file", metavar="FILE", help="JSON config file")
    validate.add_argument("--json", action="store_true", help="print the validation report as JSON")
    validate.add_argument("file", nargs="?", metavar="FILE", help="a JSON document to validate ('-' for stdin)")

    migrate = commands.add_parser("migrate", help="create or migrate the PostgreSQL tables, then exit")
    migrate.add_argument("--storage-url", metavar="URL", help="the PostgreSQL database (a role that owns the schema)")
    migrate.add_argument("--config", dest="config_file", metavar="FILE", help="JSON config file")

    replay = commands.add_parser("replay", help="rebuild a document from its journal and compare with its snapshot")
    replay.add_argument("doc_id", metavar="DOC_ID")
    replay.add_argument("--storage-dir", metavar="DIR", help="where documents are stored (default ./data)")
    replay.add_argument("--storage-url", metavar="URL", help="the server's PostgreSQL database, when it uses one")
    replay.add_argument("--schema", dest="schema_path", metavar="PATH",
                        help="also validate the rebuilt document against this schema")
    replay.add_argument("--config", dest="config_file", metavar="FILE", help="JSON config file")
    add_check_command(commands)
    add_archive_commands(commands)
    add_migrate_documents(commands)
    return parser


def _check_schema_file(settings: Settings) -> Path:
    """The schema path, checked for existence before the (slow) schema machinery is imported."""
    path = settings.schema_path
    assert path is not None
    if not path.is_file():
        what = "is not a file" if path.exists() else "does not exist"
        raise SchemaDocError("schema-load-failed", f"The schema file {path} {what}.",
                             {"path": str(path), "reason": what})
    return path


def _storage_shown(settings: Settings) -> str:
    """Where documents are stored, for the log (a URL without its password)."""
    if settings.storage_url is None:
        return str(settings.storage_dir)
    from schemadoc.storage.postgres.connections import redact_url

    return redact_url(settings.storage_url)


def _check_access(settings: Settings) -> None:
    """Refuse to serve a non-loopback address without tokens unless told it is meant (``unsafe_no_auth``);
    read the tokens file once, so that a bad one stops the start."""
    from schemadoc.interfaces.http.access import TokensFile, is_loopback

    if settings.tokens_file is not None:
        TokensFile(settings.tokens_file)
    elif not is_loopback(settings.host):
        if not settings.unsafe_no_auth:
            raise SchemaDocError(
                "config-invalid", f"Serving {settings.host}, an address other machines can reach, without access "
                "tokens would let anyone who reaches the port read and change every document.",
                {"setting": "tokens_file", "host": settings.host},
                remediation="Give --tokens-file FILE (docs/security.md), or listen on 127.0.0.1, or say "
                            "--unsafe-no-auth (UNSAFE_NO_AUTH=1) if another layer controls access.")
        log.warning("serving %s without access tokens (unsafe_no_auth): anyone who reaches it may write",
                    settings.host)


def _near_miss_lines(near_misses: list[dict[str, str]], lead: str = "warning: ") -> list[str]:
    return [f"{lead}{len(near_misses)} member(s) of the schema look like misspelt keywords; JSON Schema ignores "
            "them, so they check nothing:"] + [f"  {problem_line(miss)}" for miss in near_misses]


def _warn_if_create_fails(service: DocumentService) -> None:
    """A loud warning on stderr when ``document_create`` can never succeed on the served schema; another for each
    near-miss of a keyword in it (``requird``)."""
    from schemadoc.validation import creation_problems

    if service.schema.near_misses:
        log.warning("\n".join(_near_miss_lines(service.schema.near_misses, lead="")))
    problems = creation_problems(service.schema)
    if not problems:
        return
    lines = [f"WARNING: document_create (POST /api/v1/documents) will always fail on this schema: the document "
             f"built from its defaults is refused ({len(problems)} problem(s)). Documents can still be read, but "
             "none can be created until the schema gives these a default:"]
    lines += [f"  {problem_line(problem)}" for problem in problems]
    log.warning("\n".join(lines))


def _serve(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    if use_example(args):
        return EXIT_OK
    settings = load_settings(overrides(args), environ)
    configure_logging(settings.log_level_number, settings.tokens_file, settings.log_format)
    _check_schema_file(settings)
    if settings.workers > 1 and settings.transport == "stdio":
        raise SchemaDocError(
            "config-invalid", f"--workers {settings.workers} needs the HTTP transport: over stdio one client speaks "
            "to one process on its stdin and stdout.", {"setting": "workers", "value": settings.workers,
                                                        "transport": "stdio"},
            remediation="Leave --workers out (or give 1) with --transport stdio, or serve HTTP.")
    if settings.transport == "stdio":
        return _serve_stdio(settings)
    if settings.workers > 1 and not hasattr(os, "fork"):
        raise SchemaDocError(
            "config-invalid", f"--workers {settings.workers} needs os.fork, which this platform lacks.",
            {"setting": "workers", "value": settings.workers, "platform": sys.platform},
            remediation="Leave --workers out, and run several servers on one PostgreSQL database instead.")
    _check_access(settings)
    # several workers: each listens on a socket of its own beside the one reserved here (SO_REUSEPORT, Linux,
    # which spreads connections evenly; one shared socket elsewhere goes mostly to whichever worker wakes first)
    own_sockets = settings.workers > 1 and hasattr(socket, "SO_REUSEPORT") and sys.platform.startswith("linux")
    sock = listen(settings, reuse_port=own_sockets)
    try:
        if settings.workers == 1:
            return _serve_http(settings, sock)
        from schemadoc.interfaces.workers import supervise

        json_errors = bool(getattr(args, "json", False))

        def serve_worker(channel: Channel) -> int:
            try:
                if not own_sockets:
                    return _serve_http(settings, sock, channel)
                mine = listen_beside(sock)
                sock.close()
                return _serve_http(settings, mine, channel)
            except SchemaDocError as error:
                report(error, as_json=json_errors)
                return exit_code_for(error)
            except KeyboardInterrupt:
                return 130
            except Exception as error:
                log.debug("unexpected error", exc_info=True)
                report(SchemaDocError("internal-error", f"{type(error).__name__}: {error}"), as_json=json_errors)
                return EXIT_INTERNAL

        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        log.info("schemadoc %s: serving http://%s:%d with %d workers, storage %s", __version__, shown, port,
                 settings.workers, _storage_shown(settings))
        # the files store does not tell one process of another's commits: the supervisor passes them on
        return supervise(settings.workers, sock, serve_worker, grace_seconds=settings.shutdown_grace_seconds,
                         relay=settings.storage_url is None, internal_code=EXIT_INTERNAL)
    finally:
        sock.close()


def _serve_http(settings: Settings, sock: socket.socket, channel: Channel | None = None) -> int:
    """One HTTP server on ``sock`` until SIGTERM/SIGINT: the whole server, or one worker of ``serve --workers``."""
    service = create_service(settings)
    try:
        if channel is None or channel.index == 1:
            _warn_if_create_fails(service)  # once, not once per worker
        if settings.check_documents_on_start and (channel is None or channel.index == 1):
            service.start_inventory()
        if channel is not None and settings.storage_url is None:
            channel.relay(service)
        import uvicorn

        from schemadoc.interfaces.app import build_app
        from schemadoc.interfaces.http.protocol import TransportLimits, bounded_protocol
        from schemadoc.interfaces.http.shutdown import STOPPING

        app = build_app(service, settings, worker=None if channel is None else channel.index)
        # httptools parses HTTP in C, bounded against hostile clients (http_protocol); "auto" takes uvloop
        # wherever it is installed (not on Windows)
        limits = TransportLimits(
            max_header_bytes=settings.max_header_bytes, header_timeout_seconds=settings.header_timeout_seconds,
            body_timeout_seconds=settings.body_timeout_seconds, max_connections=settings.max_connections,
            max_connections_per_client=settings.max_connections_per_client)
        stopping: Stopping = getattr(app.state, STOPPING)
        # uvicorn waits this long for requests in flight and streams; the rest of the grace is for the lifespan's
        # end and the snapshots (Stopping ends the process when the whole grace has passed)
        config = uvicorn.Config(app, http=bounded_protocol(limits), loop="auto", log_config=None,
                                log_level=settings.log_level_number,
                                timeout_graceful_shutdown=stopping.connections_timeout(), lifespan="on",
                                access_log=False,  # the request log writes each request's line (request_log)
                                server_header=False)
        server = graceful_server_class(stopping, None if channel is None else channel.ready)(config)
        host, port = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        worker = "" if channel is None else f" (worker {channel.index} of {channel.count}, pid {os.getpid()})"
        log.info("schemadoc %s: serving http://%s:%d (REST /api/v1, MCP /mcp, docs /docs)%s, schema %s, storage %s",
                 __version__, shown, port, worker, service.schema_uri, _storage_shown(settings))
        server.run(sockets=[sock])
    finally:
        if channel is not None:
            channel.close()
        service.close()
    if not server.started:
        print("schemadoc: internal-error: the HTTP server did not start — see the log lines above.",
              file=sys.stderr, flush=True)
        return EXIT_INTERNAL
    if stopping.is_stopping:
        stopping.finish(", wrote lagging snapshots")
    else:
        log.info("schemadoc stopped")
    return EXIT_OK


def _serve_stdio(settings: Settings) -> int:
    """MCP on stdin/stdout until the end of input, SIGTERM or SIGINT; then lagging snapshots are written."""
    from schemadoc.interfaces.http.shutdown import Stopping

    service = create_service(settings)
    _warn_if_create_fails(service)
    if settings.check_documents_on_start:
        service.start_inventory()
    from schemadoc.interfaces.http.subscribers import slots_of
    from schemadoc.interfaces.mcp_door.server import build_mcp_server

    mcp_server = build_mcp_server(service, subscribers=slots_of(settings), slow_request_ms=settings.slow_request_ms)
    from schemadoc.interfaces.http.tracing import tracing_from_environment

    tracing = mcp_server.tracing = tracing_from_environment(console=sys.stderr,  # stdout carries the protocol
                                                            tokens_file=settings.tokens_file)
    if tracing is not None:
        service.span = tracing.span
    log.info("schemadoc %s: MCP on stdio, schema %s, storage %s", __version__, service.schema_uri,
             _storage_shown(settings))
    stopping = Stopping(settings.shutdown_grace_seconds, refusing="no further MCP message is read")

    async def run() -> None:
        import anyio
        import anyio.to_thread

        async with anyio.create_task_group() as group:
            async def on_signal() -> None:
                # tool calls run in worker threads; one more is the SDK's reader, blocked on stdin (it cannot be
                # cancelled, so the process exits below without waiting for it)
                threads = anyio.to_thread.current_default_thread_limiter()
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for number in signals:
                        stopping.in_flight = max(0, int(threads.borrowed_tokens) - 1)
                        stopping.begin(number)
                        break
                deadline = anyio.current_time() + stopping.connections_timeout()
                while threads.borrowed_tokens > 1 and anyio.current_time() < deadline:
                    await anyio.sleep(0.02)
                await anyio.to_thread.run_sync(service.close, abandon_on_cancel=True)
                if tracing is not None:
                    tracing.close()  # the spans still waiting are exported
                stopping.finish(", wrote lagging snapshots")
                logging.shutdown()
                sys.stderr.flush()
                os._exit(EXIT_OK)

            group.start_soon(on_signal)
            await mcp_server.run_stdio_async()  # returns at the end of input
            group.cancel_scope.cancel()

    try:
        import anyio

        anyio.run(run)
    finally:
        service.close()
        if tracing is not None:
            tracing.close()
    log.info("schemadoc stopped: end of input, lagging snapshots written")
    return EXIT_OK


def _validate(args: argparse.Namespace, environ: Mapping[str, str]) -> int:
    use_example(args)
    settings = load_settings(overrides(args), environ)
    configure_logging(logging.WARNING)
    schema_path = _check_schema_file(settings)
    document = read_json_file(args.file, "file") if args.file is not None else None  # before the slow schema load
    from schemadoc.schema import load_schema
    from schemadoc.validation import DocumentValidator, creation_problems

    schema = load_schema(schema_path)
    validator = DocumentValidator(schema)
    if args.file is None:
        problems = creation_problems(schema)
        if args.json:
            print(orjson.dumps({"schema": str(settings.schema_path), "uri": schema.uri, "valid": True,
                                "document_create": {"succeeds": not problems, "problems": problems},
                                "warnings": schema.near_misses}, option=orjson.OPT_INDENT_2).decode())
            return EXIT_OK
        print(f"schema ok: {settings.schema_path} ({schema.uri})")
        if schema.near_misses:
            print("\n".join(_near_miss_lines(schema.near_misses)))
        if not problems:
            print("a new document built from the schema's defaults is valid")
            return EXIT_OK
        print(f"warning: document_create will always fail: the document built from the defaults is refused "
              f"({len(problems)} problem(s)):")
        for problem in problems:
            print(f"  {problem_line(problem)}")
        return EXIT_OK
    report = validator.validate(document)
    if schema.near_misses:  # stdout holds the report
        print("\n".join(_near_miss_lines(schema.near_misses)), file=sys.stderr)
    if args.json:
        print(orjson.dumps(report.to_dict(), option=orjson.OPT_INDENT_2).decode())
    elif report.valid:
        print(f"{args.file}: valid")
    else:
        for violation in report.violations:
            item = violation.to_dict()
            print(f"{item.get('path') or '/'}\t{item.get('code')}\t{item.get('message')}")
        count = len(report.violations)
        print(f"{args.file}: invalid, {count}{'+' if report.truncated else ''} violation{'s' if count != 1 else ''}")
    return EXIT_OK if report.valid else EXIT_FAILED


_COMMANDS = {"serve": _serve, "validate": _validate, "check": check, "replay": replay, "migrate": migrate,
             "export": export, "import": import_, "migrate-documents": migrate_documents}


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``schemadoc`` command; returns the exit code."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exit_:  # argparse: --help, --version, usage errors
        return exit_.code if isinstance(exit_.code, int) else EXIT_USAGE
    command = _COMMANDS[args.command]
    try:
        return command(args, os.environ)
    except SchemaDocError as error:
        report(error, as_json=bool(getattr(args, "json", False)))
        return exit_code_for(error)
    except KeyboardInterrupt:
        return 130
    except Exception as error:
        log.debug("unexpected error", exc_info=True)
        report(SchemaDocError("internal-error", f"{type(error).__name__}: {error}"),
                as_json=bool(getattr(args, "json", False)))
        return EXIT_INTERNAL

