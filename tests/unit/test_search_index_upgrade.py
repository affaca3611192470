"""An index file an earlier version wrote (its filter indexes without the document, no sort index) is brought up to
this version's indexes when a service opens it, with the planner's statistics of them, and answers alike."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from schemadoc.schema import load_schema
from schemadoc.search.opening import INDEX_FILE
from schemadoc.service import DocumentService
from schemadoc.storage import store_for

BOOK = Path(__file__).resolve().parents[2] / "src" / "schemadoc" / "examples" / "book.schema.json"
NEW = {"search_fields_by_num", "search_fields_by_txt", "search_docs_live", "search_fields_sort"}


def _open(directory: Path) -> DocumentService:
    service = DocumentService(load_schema(BOOK), store_for(directory, None), memory_budget=1 << 20)
    service.open()
    return service


def _indexes(connection: sqlite3.Connection) -> set[str]:
    return {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'index' AND name "
                                                 "LIKE 'search_%'")}


def test_an_earlier_index_file_gains_the_new_indexes_and_their_statistics(tmp_path: Path) -> None:
    directory = tmp_path / "docs"
    service = _open(directory)
    for i, edition in enumerate([3, 1, 2, 5, 4]):
        service.create_document({"title": f"Book {i}", "metadata": {"edition": edition}})
    service.close()
    with sqlite3.connect(directory / INDEX_FILE) as connection:  # as the earlier version left it
        for name in NEW:
            connection.execute(f"DROP INDEX {name}")
        connection.execute("CREATE INDEX search_fields_num ON search_fields (field, kind, num)")
        connection.execute("CREATE INDEX search_fields_txt ON search_fields (field, kind, txt)")
        if connection.execute("SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone():
            connection.execute("DELETE FROM sqlite_stat1")
        assert not NEW & _indexes(connection)
    connection.close()

    service = _open(directory)
    try:
        with sqlite3.connect(directory / INDEX_FILE) as connection:
            names = _indexes(connection)
            analysed = {row[0] for row in connection.execute("SELECT idx FROM sqlite_stat1")} if connection.execute(
                "SELECT 1 FROM sqlite_master WHERE name = 'sqlite_stat1'").fetchone() else set()
        connection.close()
        assert names >= NEW and not {"search_fields_num", "search_fields_txt"} & names
        assert analysed >= NEW
        service.search_index.walk_plan = True  # the page walks the new sort index
        editions, cursor = [], None
        while True:
            page = service.list_documents(sort="-/metadata/edition", where=[["/metadata/edition", "ge", 2]], limit=2,
                                          cursor=cursor)
            editions += [service.read_node(m.doc_id, "/metadata/edition").node for m in page.documents]
            cursor = page.next_cursor
            if cursor is None:
                break
        assert editions == [5, 4, 3, 2]
    finally:
        service.close()


PG_NEW = {"search_fields_by_num", "search_fields_by_txt", "search_docs_live"}
PG_OLD = {"search_fields_num": "(field, kind, num)", "search_fields_txt": "(field, kind, txt)"}


def _pg_indexes(url: str, schema: str) -> set[str]:
    import psycopg

    with psycopg.connect(url) as connection:
        return {row[0] for row in connection.execute("SELECT indexname FROM pg_indexes WHERE schemaname = %s",
                                                     [schema])}


def _editions(service: DocumentService) -> list[int]:
    page = service.list_documents(where=[["/metadata/edition", "ge", 2], ["/title", "prefix", "Book"]],
                                  sort="created", limit=10)
    assert page.total == 4
    return [service.read_node(m.doc_id, "/metadata/edition").node for m in page.documents]


def test_postgres_tables_of_an_earlier_version_gain_the_covering_filter_indexes() -> None:
    """The filter indexes of an earlier version's tables, (field, kind, value), give way to (field, kind, value,
    doc_id) when the owner opens them; one that may not create indexes keeps them and answers alike."""
    import psycopg
    from pg_support import URL, throwaway_schema

    with throwaway_schema() as url:
        if "://postgres@" not in url:
            pytest.skip("the row-only role's URL is made from the test URL's user postgres (trust authentication)")
        service = DocumentService(load_schema(BOOK), store_for(None, url), memory_budget=1 << 20)
        service.open()
        for i, edition in enumerate([3, 1, 2, 5, 4]):
            service.create_document({"title": f"Book {i}", "metadata": {"edition": edition}})
        service.close()
        schema = url.rsplit("schema=", 1)[1]
        assert _pg_indexes(URL, schema) >= PG_NEW and not set(PG_OLD) & _pg_indexes(URL, schema)
        with psycopg.connect(URL, autocommit=True) as connection:  # as the earlier version left them
            for name in PG_NEW:
                connection.execute(f'DROP INDEX "{schema}".{name}')
            for name, columns in PG_OLD.items():
                connection.execute(f'CREATE INDEX {name} ON "{schema}".search_fields {columns}')
            role = f"row_only_{schema}"[:63]
            connection.execute(f'CREATE ROLE "{role}" LOGIN')
        try:
            with psycopg.connect(URL, autocommit=True) as connection:
                connection.execute(f'GRANT USAGE ON SCHEMA "{schema}" TO "{role}"')
                connection.execute(f'GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA "{schema}" '
                                   f'TO "{role}"')
                connection.execute(f'GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA "{schema}" TO "{role}"')
            as_role = url.replace("postgres@", f"{role}@", 1)
            row_only = DocumentService(load_schema(BOOK), store_for(None, as_role), memory_budget=1 << 20)
            row_only.open()
            try:
                assert _editions(row_only) == [3, 2, 5, 4]
            finally:
                row_only.close()
            names = _pg_indexes(URL, schema)
            assert set(PG_OLD) <= names and not PG_NEW & names  # neither created nor dropped
        finally:
            with psycopg.connect(URL, autocommit=True) as connection:
                connection.execute(f'DROP OWNED BY "{role}"')
                connection.execute(f'DROP ROLE "{role}"')
        service = DocumentService(load_schema(BOOK), store_for(None, url), memory_budget=1 << 20)
        service.open()
        try:
            names = _pg_indexes(URL, schema)
            assert names >= PG_NEW and not set(PG_OLD) & names
            assert _editions(service) == [3, 2, 5, 4]
        finally:
            service.close()
