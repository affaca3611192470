"""PostgreSQL for tests: the server at ``SCHEMADOC_TEST_POSTGRES_URL`` (default the local ``test``
database), and a throwaway PostgreSQL schema per store so that concurrent runs never collide.

When nothing answers, tests that need it are skipped with the reason.
"""

from __future__ import annotations

import functools
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

DEFAULT_URL = "postgresql://postgres@127.0.0.1:5432/test"
URL = os.environ.get("SCHEMADOC_TEST_POSTGRES_URL", DEFAULT_URL)


@functools.cache
def unavailable() -> str | None:
    """Why PostgreSQL cannot be used for tests, or ``None`` when it can."""
    try:
        import psycopg
    except ImportError as error:  # pragma: no cover - a dependency
        return f"psycopg is not installed: {error}"
    try:
        with psycopg.connect(URL, connect_timeout=3) as conn:
            conn.execute("SELECT 1")
    except psycopg.Error as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        return f"no PostgreSQL at SCHEMADOC_TEST_POSTGRES_URL={URL} ({first})"
    return None


def require_postgres() -> None:
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)


def fresh_schema_name() -> str:
    """A PostgreSQL schema name no other test run uses."""
    return f"test_{os.getpid()}_{uuid.uuid4().hex[:12]}"


def url_with_schema(schema: str) -> str:
    separator = "&" if "?" in URL else "?"
    return f"{URL}{separator}schema={schema}"


def drop_schema(schema: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(URL, autocommit=True) as conn:
        conn.execute(sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema)))


def empty_tables(url: str) -> None:
    """Remove every document from the store's tables (keeps the tables and their migrations)."""
    import psycopg
    from psycopg import sql

    from schemadoc.storage.postgres.connections import split_schema

    plain, schema = split_schema(url)
    assert schema is not None
    tables = [sql.SQL(".").join([sql.Identifier(schema), sql.Identifier(name)])
              for name in ("documents", "journal", "snapshots", "checkpoints", "purges")]
    with psycopg.connect(plain, autocommit=True) as conn:
        conn.execute(sql.SQL("TRUNCATE {}").format(sql.SQL(", ").join(tables)))


@contextmanager
def throwaway_schema() -> Iterator[str]:
    """A store URL on a fresh PostgreSQL schema, dropped afterwards."""
    require_postgres()
    schema = fresh_schema_name()
    try:
        yield url_with_schema(schema)
    finally:
        drop_schema(schema)
