"""The tables of the PostgreSQL store and their migrations, applied in order, each once.

:func:`migrate` applies what a schema has not had yet, in one transaction under an advisory lock
(servers starting together wait for each other), recorded in ``schema_migrations``. It creates
the PostgreSQL schema only when it does not exist yet (``CREATE SCHEMA`` checks the database
privilege even with ``IF NOT EXISTS``), so a role that owns an existing schema migrates it
without ``CREATE`` on the database. :func:`pending` tells, with nothing but ``SELECT``, whether a
schema is up to date: a server whose role may only read and write rows starts on a migrated
schema without attempting any DDL (``schemadoc migrate`` runs the migrations as the owning role).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Final

import psycopg
from psycopg import sql

from schemadoc import __version__
from schemadoc.errors import SchemaDocError

if TYPE_CHECKING:
    from schemadoc.storage.postgres.connections import Connections

__all__ = ["MIGRATIONS", "migrate", "migrate_or_explain", "pending"]

log = logging.getLogger("schemadoc.storage.postgres")

_MIGRATION_LOCK: Final = 0x5C4E_3ADC_0000_0001  # one bigint advisory key: migrations of any schema

MIGRATIONS: Final[list[tuple[int, str, str]]] = [
    (1, "documents, journal with its feed cursor, checkpoints", """
        CREATE TABLE {schema}.documents (
            doc_id             text PRIMARY KEY,
            version            integer NOT NULL CHECK (version >= 1),
            schema_uri         text NOT NULL,
            created_at         text NOT NULL,
            modified_at        text NOT NULL,
            content_size_bytes bigint NOT NULL,
            deleted_at         text,
            snapshot           bytea NOT NULL,
            snapshot_version   integer NOT NULL
        );
        CREATE TABLE {schema}.journal (
            doc_id  text NOT NULL,
            version integer NOT NULL,
            txid    xid8 NOT NULL DEFAULT pg_current_xact_id(),
            op      text NOT NULL,
            at      text NOT NULL,
            entry   bytea NOT NULL,
            PRIMARY KEY (doc_id, version)
        );
        CREATE INDEX journal_by_txid ON {schema}.journal (txid);
        CREATE TABLE {schema}.checkpoints (
            doc_id  text NOT NULL,
            version integer NOT NULL,
            content bytea NOT NULL,
            PRIMARY KEY (doc_id, version)
        );
    """),
    (2, "snapshots in their own table, so a lagging snapshot is written without holding up commits", """
        CREATE TABLE {schema}.snapshots (
            doc_id  text NOT NULL,
            version integer NOT NULL,
            content bytea NOT NULL,
            PRIMARY KEY (doc_id, version)
        );
        INSERT INTO {schema}.snapshots (doc_id, version, content)
            SELECT doc_id, snapshot_version, snapshot FROM {schema}.documents;
        ALTER TABLE {schema}.documents DROP COLUMN snapshot;
    """),
    (3, "snapshots, checkpoints and journal entries compressed with lz4 (pglz made a 1 MiB snapshot 6x slower)", """
        DO $$
        BEGIN
            ALTER TABLE {schema}.snapshots ALTER COLUMN content SET COMPRESSION lz4;
            ALTER TABLE {schema}.checkpoints ALTER COLUMN content SET COMPRESSION lz4;
            ALTER TABLE {schema}.journal ALTER COLUMN entry SET COMPRESSION lz4;
        EXCEPTION WHEN OTHERS THEN  -- a server built without lz4 (or before PostgreSQL 14): no compression
            ALTER TABLE {schema}.snapshots ALTER COLUMN content SET STORAGE EXTERNAL;
            ALTER TABLE {schema}.checkpoints ALTER COLUMN content SET STORAGE EXTERNAL;
        END
        $$;
    """),
    (4, "purges: recent purges, so that a process whose listening connection was down still hears of them", """
        CREATE TABLE {schema}.purges (
            doc_id    text NOT NULL,
            version   integer NOT NULL,
            txid      xid8 NOT NULL DEFAULT pg_current_xact_id(),
            purged_at timestamptz NOT NULL DEFAULT now(),
            PRIMARY KEY (txid, doc_id)
        );
    """),
    (5, "journal.actor: who made each version (also in the entry), so the change feed names it without reading "
        "entries", """
        ALTER TABLE {schema}.journal ADD COLUMN actor text;
    """),
    (6, "documents.schema_digest and documents.verdict: the schema each document was last judged by, and its "
        "verdict (the last write's, or a later check's of the same version)", """
        ALTER TABLE {schema}.documents ADD COLUMN schema_digest text;
        ALTER TABLE {schema}.documents ADD COLUMN verdict text;
    """),
]
"""(version, what, SQL with ``{schema}``): applied in order, each once; append, never edit."""


def _applied(conn: psycopg.Connection[Any], schema: str) -> int | None:
    """The newest migration applied to ``schema``; None when it has no ``schema_migrations`` table."""
    row = conn.execute("SELECT to_regclass(%s)", (f"{sql.Identifier(schema).as_string(conn)}.schema_migrations",)
                       ).fetchone()
    if row is None or row[0] is None:
        return None
    found = conn.execute(sql.SQL("SELECT coalesce(max(version), 0) FROM {}.schema_migrations").format(
        sql.Identifier(schema))).fetchone()
    return int(found[0]) if found else 0


def _refuse_newer(applied: int, schema: str) -> None:
    """``store-format-unsupported`` when ``schema`` has migrations this server does not know (a newer one ran)."""
    known = MIGRATIONS[-1][0]
    if applied > known:
        raise SchemaDocError(
            "store-format-unsupported",
            f"The PostgreSQL schema {schema} is at migration {applied}; this schemadoc {__version__} knows "
            f"migrations up to {known}.",
            {"schema": schema, "found_migration": applied, "known_migration": known, "server_version": __version__},
            remediation="Run the newer schemadoc that migrated it, or restore the database backup taken before "
                        "the upgrade (docs/deployment.md); nothing was changed.")


def pending(conn: psycopg.Connection[Any], schema: str) -> list[int]:
    """The migration versions ``schema`` still needs (all of them for a schema without tables), by SELECT only.

    Raises ``store-format-unsupported`` when a newer schemadoc migrated it beyond what this one knows.
    """
    applied = _applied(conn, schema) or 0
    _refuse_newer(applied, schema)
    return [version for version, _, _ in MIGRATIONS if version > applied]


def migrate(conn: psycopg.Connection[Any], schema: str) -> list[int]:
    """Apply the migrations ``schema`` has not had yet (creating it when missing); the versions applied.

    ``conn`` is in autocommit mode; everything happens in one transaction under an advisory lock.
    """
    name = sql.Identifier(schema)
    table = sql.SQL("{}.schema_migrations").format(name)
    done: list[int] = []
    with conn.transaction():
        conn.execute("SET LOCAL lock_timeout = 0")
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        exists = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,)).fetchone()
        if exists is None:
            conn.execute(sql.SQL("CREATE SCHEMA {}").format(name))
        if _applied(conn, schema) is None:
            conn.execute(sql.SQL("CREATE TABLE {} (version integer PRIMARY KEY, description text NOT NULL, "
                                 "applied_at timestamptz NOT NULL DEFAULT now())").format(table))
        applied = _applied(conn, schema) or 0
        _refuse_newer(applied, schema)
        for version, description, statements in MIGRATIONS:
            if version <= applied:
                continue
            conn.execute(sql.SQL(statements).format(schema=name))
            conn.execute(sql.SQL("INSERT INTO {} (version, description) VALUES (%s, %s)").format(table),
                         (version, description))
            done.append(version)
            log.info("storage schema %s migrated to version %d: %s", schema, version, description)
    return done


def migrate_or_explain(conn: psycopg.Connection[Any], schema: str, connections: Connections) -> None:
    """:func:`migrate`, or, when the role may not, ``storage-write-failed`` naming ``schemadoc migrate``."""
    try:
        migrate(conn, schema)
    except psycopg.errors.InsufficientPrivilege as error:
        needed = pending(conn, schema)
        raise SchemaDocError(
            "storage-write-failed",
            f"The PostgreSQL schema {schema} needs migration(s) {', '.join(map(str, needed))}, and this "
            f"role may not apply them: {connections.scrub(error)}",
            {"storage_url": connections.shown, "schema": schema, "pending_migrations": needed},
            remediation="Run `schemadoc migrate --storage-url URL` once with the role that owns the schema "
                        "(or may create it), then start the server again.") from None
