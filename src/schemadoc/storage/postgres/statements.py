"""The SQL of the PostgreSQL store's writes and reads: the commit in one statement, the meta columns, the
tables of a schema and the keys of advisory locks (the change feed's SQL is in
:mod:`~schemadoc.storage.postgres.feed`).

Texts use ``{documents}``, ``{journal}``, ``{snapshots}``, ``{purges}`` for the tables of a
schema (:func:`tables`) and ``%(name)s`` for values; nothing in them comes from a document.
"""

from __future__ import annotations

import hashlib
from typing import Any, Final

from psycopg import sql

from schemadoc.storage.base import DocumentMeta

__all__ = ["COMMIT", "KINDS", "META_COLUMNS", "TABLES", "lock_key", "meta", "meta_values", "tables"]

TABLES: Final = ("documents", "journal", "snapshots", "checkpoints", "purges", "schema_migrations")

META_COLUMNS: Final = ("version, schema_uri, created_at, modified_at, content_size_bytes, deleted_at, "
                        "snapshot_version")

COMMIT: Final = """
WITH moved AS (
    UPDATE {documents} SET version = %(version)s::integer, schema_uri = %(schema_uri)s::text,
        created_at = %(created_at)s::text, modified_at = %(modified_at)s::text,
        content_size_bytes = %(size)s::bigint, deleted_at = %(deleted_at)s::text,
        snapshot_version = CASE WHEN %(inline)s::boolean THEN %(version)s::integer ELSE snapshot_version END
    WHERE doc_id = %(doc_id)s::text AND version = %(version)s::integer - 1
    RETURNING doc_id),
journaled AS (
    INSERT INTO {journal} (doc_id, version, op, at, entry)
    SELECT doc_id, %(version)s::integer, %(op)s::text, %(at)s::text, %(entry)s::bytea FROM moved
    RETURNING txid),
snapshot AS (
    INSERT INTO {snapshots} (doc_id, version, content)
    SELECT doc_id, %(version)s::integer, %(content)s::bytea FROM moved WHERE %(inline)s::boolean
    ON CONFLICT (doc_id, version) DO UPDATE SET content = excluded.content),
dropped AS (
    DELETE FROM {snapshots} s USING moved
    WHERE %(inline)s::boolean AND s.doc_id = moved.doc_id AND s.version <> %(version)s::integer),
notified AS (
    SELECT pg_notify(%(channel)s::text, %(payload)s::text) FROM moved)
SELECT (SELECT count(*) FROM moved), (SELECT count(*) FROM notified),
    (SELECT txid::text::bigint FROM journaled)
"""
"""A commit in one statement (one round trip, its own transaction): the documents row moves from
version n-1 to n, or nothing happens at all; then the journal row, the snapshot when given, and
the notification (sent at commit)."""

KINDS: Final = {"create": "created", "delete_document": "deleted", "undelete_document": "undeleted"}


def lock_key(schema: str, doc_id: str) -> tuple[int, int]:
    """The two-int advisory lock key of a document (the two-int form never meets the bigint form)."""
    digest = hashlib.sha256(f"{schema}/{doc_id}".encode()).digest()
    return int.from_bytes(digest[:4], "big", signed=True), int.from_bytes(digest[4:8], "big", signed=True)


def meta(doc_id: str, row: tuple[Any, ...]) -> DocumentMeta:
    version, schema_uri, created_at, modified_at, size, deleted_at, snapshot_version = row[:7]
    return DocumentMeta(doc_id, version, schema_uri, created_at, modified_at, size, deleted_at, snapshot_version)


def meta_values(meta: DocumentMeta) -> tuple[Any, ...]:
    """The values of the meta columns but ``snapshot_version`` (the store decides that one)."""
    return (meta.version, meta.schema_uri, meta.created_at, meta.modified_at, meta.content_size_bytes,
            meta.deleted_at)


def tables(schema: str) -> dict[str, sql.Composable]:
    """Each table of :data:`TABLES`, qualified with ``schema`` (quoted as an identifier)."""
    return {name: sql.SQL(".").join([sql.Identifier(schema), sql.Identifier(name)]) for name in TABLES}
