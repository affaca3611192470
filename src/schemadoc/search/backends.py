"""Where the index lives: a SQLite file (FTS5, BM25) or tables in the PostgreSQL database (tsvector, GIN).

Both hold the same tables: ``search_docs`` (a row per document: the version indexed, created, modified,
the verdict, deleted, the label), ``search_fields`` (the indexed members' rows), ``search_units`` (the text
units) and ``search_state`` (what the index was built with). SQLite runs in WAL mode with
``synchronous=NORMAL`` and a bounded page cache: a crash of the process loses nothing committed, a crash
of the machine may lose the last transactions, which the start-up comparison of versions indexed with
the store's finds and indexes again.
"""

from __future__ import annotations

import logging
import re
import sqlite3
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

from schemadoc.errors import SchemaDocError
from schemadoc.search.text import TextQuery, words_of
from schemadoc.search.units import TextUnit

__all__ = ["Backend", "PostgresBackend", "SqliteBackend", "SqliteTransaction"]

log = logging.getLogger("schemadoc.search")

SQLITE_CACHE_KIB = 16 * 1024
_WINDOW_MARGIN = 1.25
"""How much larger than the estimate says a window of the newest units is taken (PostgreSQL's ``ranked_matches``):
the planner's frequency of a word in every book is from a sample of 30,000 units (about 10% off either way); a window
too small is widened, one more statement. At 100,000 books 1.5 held 3,362 matches for the 2,001 wanted, 1.25 about
2,800: a common word 55 → 47 ms, a phrase 59 → 51 ms."""
_WINDOW_FROM = 2
"""A window of the newest units is read only for a query the planner expects to match at least this many times as
often as a word found nowhere (:data:`_NO_WORD`); one it knows nothing of is read whole."""
_ESTIMATED_TERMS = 8
"""At most this many of a query's words are asked the planner's estimate of (each a round trip)."""
_READ_WORK_MEM = "32MB"
"""PostgreSQL's ``work_mem`` in the index's read transactions (each sort or bitmap of a statement may use this much of
the database server's memory): a search's bitmap of a word's matches stays exact up to about 400,000 of them (lossy
beyond, which is slower, not wrong), and its window of 2,000 newest matches sorts in memory."""
_NO_WORD = "'zqxjvkwno0word'"
"""A word no document is expected to hold: the planner's estimate for it is its guess for a word it has no
statistics of."""

_SQLITE_TABLES = """
CREATE TABLE IF NOT EXISTS search_state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS search_docs (doc_id TEXT PRIMARY KEY, version INTEGER NOT NULL, created TEXT NOT NULL,
  modified TEXT NOT NULL, valid INTEGER, deleted INTEGER NOT NULL, label TEXT);
CREATE INDEX IF NOT EXISTS search_docs_created ON search_docs (deleted, created, doc_id);
CREATE INDEX IF NOT EXISTS search_docs_modified ON search_docs (deleted, modified, doc_id);
CREATE INDEX IF NOT EXISTS search_docs_version ON search_docs (deleted, version, doc_id);
CREATE TABLE IF NOT EXISTS search_fields (doc_id TEXT NOT NULL, field TEXT NOT NULL, pos INTEGER NOT NULL,
  kind TEXT NOT NULL, rank INTEGER NOT NULL, num REAL, txt TEXT, PRIMARY KEY (doc_id, field, pos));
DROP INDEX IF EXISTS search_fields_num;
DROP INDEX IF EXISTS search_fields_txt;
CREATE INDEX IF NOT EXISTS search_fields_by_num ON search_fields (field, kind, num, doc_id);
CREATE INDEX IF NOT EXISTS search_fields_by_txt ON search_fields (field, kind, txt, doc_id);
CREATE INDEX IF NOT EXISTS search_docs_live ON search_docs (doc_id, deleted);
CREATE INDEX IF NOT EXISTS search_fields_sort ON search_fields (field, pos, rank, COALESCE(num, 0), COALESCE(txt, ''),
  doc_id);
CREATE TABLE IF NOT EXISTS search_units (id INTEGER PRIMARY KEY, doc_id TEXT NOT NULL, pointer TEXT NOT NULL,
  text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS search_units_doc ON search_units (doc_id, pointer);
CREATE VIRTUAL TABLE IF NOT EXISTS search_fts USING fts5(text, content='search_units', content_rowid='id',
  tokenize='unicode61 remove_diacritics 0');
DROP TRIGGER IF EXISTS search_units_in;
CREATE TRIGGER IF NOT EXISTS search_units_out AFTER DELETE ON search_units BEGIN
  INSERT INTO search_fts (search_fts, rowid, text) VALUES ('delete', old.id, old.text); END;
"""

_SQLITE_LATEST = {"search_fields_by_num", "search_fields_by_txt", "search_docs_live", "search_fields_sort"}
"""The indexes of ``_SQLITE_TABLES`` added since its first version: an index file without them is an earlier one's."""

_POSTGRES_TABLES = [
    "CREATE TABLE IF NOT EXISTS search_state (key text PRIMARY KEY, value text NOT NULL)",
    "CREATE TABLE IF NOT EXISTS search_docs (doc_id text PRIMARY KEY, version bigint NOT NULL, created text "
    "COLLATE \"C\" NOT NULL, modified text COLLATE \"C\" NOT NULL, valid smallint, deleted smallint NOT NULL, "
    "label text)",
    "CREATE INDEX IF NOT EXISTS search_docs_created ON search_docs (deleted, created, doc_id)",
    "CREATE INDEX IF NOT EXISTS search_docs_modified ON search_docs (deleted, modified, doc_id)",
    "CREATE INDEX IF NOT EXISTS search_docs_version ON search_docs (deleted, version, doc_id)",
    "CREATE TABLE IF NOT EXISTS search_fields (doc_id text NOT NULL, field text NOT NULL, pos integer NOT NULL, "
    "kind text NOT NULL, rank integer NOT NULL, num double precision, txt text COLLATE \"C\", "
    "PRIMARY KEY (doc_id, field, pos))",
    # a filter's documents read from the index alone (a count of a third of 54,400 books: 60 → 40 ms); they replace
    # (field, kind, num) and (field, kind, txt), which a role that cannot create them keeps using
    "CREATE INDEX IF NOT EXISTS search_fields_by_num ON search_fields (field, kind, num, doc_id)",
    "CREATE INDEX IF NOT EXISTS search_fields_by_txt ON search_fields (field, kind, txt, doc_id)",
    "CREATE INDEX IF NOT EXISTS search_docs_live ON search_docs (doc_id, deleted)",
    "DROP INDEX IF EXISTS search_fields_num",
    "DROP INDEX IF EXISTS search_fields_txt",
    "CREATE INDEX IF NOT EXISTS search_fields_sort ON search_fields (field, pos, rank, COALESCE(num, 0), "
    "COALESCE(txt, ''), doc_id)",
    "CREATE TABLE IF NOT EXISTS search_units (id bigserial PRIMARY KEY, doc_id text NOT NULL, pointer text COLLATE "
    "\"C\" NOT NULL, text text NOT NULL, words text NOT NULL, "
    "tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', words)) STORED)",
    "CREATE INDEX IF NOT EXISTS search_units_doc ON search_units (doc_id, pointer)",
    "CREATE INDEX IF NOT EXISTS search_units_tsv ON search_units USING gin (tsv)",
    # the block ranges of the newest units: a search across every document ranks its newest matches (ranked_matches)
    # (summarised as the table grows: a range not summarised yet is read whole by every window; settle() after a build)
    "CREATE INDEX IF NOT EXISTS search_units_recent ON search_units USING brin (id) WITH (autosummarize = on)",
    # a filter's rows are (field, kind, value), three columns the planner took as independent: it expected 120 of
    # the 979 rows of a status a third of 3,000 books have, and chose plans for a few; their common combinations
    "CREATE STATISTICS IF NOT EXISTS search_fields_txts (dependencies, mcv) ON field, kind, txt FROM search_fields",
    "CREATE STATISTICS IF NOT EXISTS search_fields_nums (dependencies, mcv) ON field, kind, num FROM search_fields",
]


class Backend:
    """One database of the index: transactions and the full-text statement."""

    dialect: str

    def transaction(self, *, write: bool = True) -> Any:  # a context manager of an IndexTransaction
        raise NotImplementedError

    def text_statement(self, query: TextQuery, scope: str, scope_params: Sequence[Any], after: Sequence[Any] | None,
                       limit: int, *, candidates: int | None = None,
                       in_documents: bool = False) -> tuple[str, list[Any]]:
        """Units matching ``query`` within ``scope`` (a condition on ``u``), best first: id, doc_id, pointer,
        score (higher better), text, label. ``candidates``: only the most recently indexed matches, at most this
        many, are ranked (the cost of a query matching in every document stays bounded). ``in_documents``: the
        scope names a few documents (their units may bound what the database reads)."""
        raise NotImplementedError

    def matches_more_than(self, tx: Any, query: TextQuery, count: int) -> bool:
        """Whether more than ``count`` units match ``query`` (reading at most ``count + 1`` of them, unranked)."""
        raise NotImplementedError

    def ranked_matches(self, tx: Any, query: TextQuery, scope: str, scope_params: Sequence[Any],
                       after: Sequence[Any] | None, limit: int, *, candidates: int | None = None,
                       in_documents: bool = False, tell_more: bool = True) -> tuple[list[tuple[Any, ...]], bool]:
        """The rows of :meth:`text_statement`, and whether more than ``candidates`` units match (then only the
        newest ``candidates`` were ranked); False when ``candidates`` is None, no row is returned, or the caller
        does not ask (``tell_more``: a count of its own on SQLite)."""
        rows = tx.execute(*self.text_statement(query, scope, scope_params, after, limit, candidates=candidates,
                                               in_documents=in_documents))
        return rows, (tell_more and candidates is not None and bool(rows)
                      and self.matches_more_than(tx, query, candidates))

    def settle(self, tx: Any) -> None:
        """After a build or a catch-up at start-up: the planner's statistics of the tables, taken again."""
        for table in ("search_docs", "search_fields", "search_units"):
            tx.execute(f"ANALYZE {table}")

    def tidy(self) -> None:
        """After :meth:`settle`, outside a transaction: what the database keeps for its indexes to be read alone."""

    def generation(self, tx: Any) -> Any:
        """Within a read transaction, after its first statement: a value equal in two transactions only when
        they see the same index (nothing committed in between); None when the backend cannot tell."""
        return None

    def lock_document(self, tx: Any, doc_id: str) -> None:
        """Keep other writers of the index off this document until the transaction ends (SQLite: its write
        transaction already does)."""

    def insert_units(self, tx: Any, doc_id: str, units: Sequence[TextUnit]) -> None:
        tx.executemany("INSERT INTO search_units (doc_id, pointer, text) VALUES (?, ?, ?)",
                       [(doc_id, unit.pointer, unit.text) for unit in units])

    def close(self) -> None:
        raise NotImplementedError


class SqliteTransaction:
    dialect = "sqlite"

    def __init__(self, connection: sqlite3.Connection) -> None:
        self.connection = connection

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        return self.connection.execute(sql, params).fetchall()

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        self.connection.executemany(sql, rows)


class SqliteBackend(Backend):
    """The index of the files store (a file in the storage directory) or of the memory store (in memory)."""

    dialect = "sqlite"

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._connection = sqlite3.connect(":memory:" if path is None else str(path), check_same_thread=False,
                                           isolation_level=None, timeout=30)
        self._lock = threading.RLock()
        self._commits = 0
        """Write transactions this connection committed (``PRAGMA data_version`` counts the others')."""
        with self._lock:
            if path is not None:
                self._connection.execute("PRAGMA journal_mode=WAL")
                self._connection.execute("PRAGMA synchronous=NORMAL")
            self._connection.execute(f"PRAGMA cache_size=-{SQLITE_CACHE_KIB}")
            earlier = {row[0] for row in self._connection.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'search_%'")}
            self._connection.executescript(_SQLITE_TABLES)
            if "search_docs_created" in earlier and not _SQLITE_LATEST.issubset(earlier):
                # an index file of an earlier version, its new indexes just built: the planner's statistics of them
                # (without, it may take a filter's index for a sort's)
                self._connection.execute("ANALYZE search_fields")
                self._connection.execute("ANALYZE search_docs")

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[SqliteTransaction]:
        with self._lock:
            self._connection.execute("BEGIN IMMEDIATE" if write else "BEGIN")
            try:
                yield SqliteTransaction(self._connection)
            except BaseException:
                self._connection.execute("ROLLBACK")
                raise
            self._connection.execute("COMMIT")
            if write:
                self._commits += 1

    def generation(self, tx: Any) -> Any:
        """This connection's commits and ``PRAGMA data_version`` (moved on by every other connection's commit,
        this process's or another's on the same file), read inside the transaction: its snapshot's."""
        return self._commits, tx.execute("PRAGMA data_version")[0][0]

    def insert_units(self, tx: Any, doc_id: str, units: Sequence[TextUnit]) -> None:
        """The units with the ids after the largest (the write transaction holds the table), then the same rows
        into FTS5 from the values in hand: an ``INSERT ... SELECT`` from ``search_units`` took 4 times as long
        (about 13 ms for a book of 260 units, against 3), a trigger per row 2-3 times."""
        if not units:
            return
        first = tx.execute("SELECT coalesce(max(id), 0) FROM search_units")[0][0] + 1
        tx.executemany("INSERT INTO search_units (id, doc_id, pointer, text) VALUES (?, ?, ?, ?)",
                       [(first + i, doc_id, unit.pointer, unit.text) for i, unit in enumerate(units)])
        tx.executemany("INSERT INTO search_fts (rowid, text) VALUES (?, ?)",
                       [(first + i, unit.text) for i, unit in enumerate(units)])

    def text_statement(self, query: TextQuery, scope: str, scope_params: Sequence[Any], after: Sequence[Any] | None,
                       limit: int, *, candidates: int | None = None,
                       in_documents: bool = False) -> tuple[str, list[Any]]:
        bound = ""
        params: list[Any] = [query.fts5()]
        if in_documents:  # FTS5 cannot see the scope, but reads only the rowids between its units' first and last
            bound = (f" AND rowid BETWEEN (SELECT min(u.id) FROM search_units u WHERE {scope}) AND "
                     f"(SELECT max(u.id) FROM search_units u WHERE {scope})")
            params += [*scope_params, *scope_params]
        if candidates is not None:  # FTS5 walks its rowids downwards and scores only those it keeps
            bound += " ORDER BY rowid DESC LIMIT ?"
            params.append(candidates)
        params += scope_params
        keyset = ""
        if after is not None:
            keyset = " AND (m.score < ? OR (m.score = ? AND u.id > ?))"
            params += [after[0], after[0], after[1]]
        return ("SELECT u.id, u.doc_id, u.pointer, m.score, u.text, d.label FROM "
                f"(SELECT rowid AS id, -bm25(search_fts) AS score FROM search_fts WHERE search_fts MATCH ?{bound}) m "
                "JOIN search_units u ON u.id = m.id JOIN search_docs d ON d.doc_id = u.doc_id "
                f"WHERE d.deleted = 0 AND {scope}{keyset} ORDER BY m.score DESC, u.id LIMIT ?", [*params, limit])

    def matches_more_than(self, tx: Any, query: TextQuery, count: int) -> bool:
        rows = tx.execute("SELECT count(*) FROM (SELECT 1 FROM search_fts WHERE search_fts MATCH ? LIMIT ?)",
                          [query.fts5(), count + 1])
        return bool(rows[0][0] > count)

    def close(self) -> None:
        with self._lock:
            self._connection.close()


_CREATED = re.compile(r"CREATE (?:UNIQUE )?(TABLE|INDEX|STATISTICS) IF NOT EXISTS (\w+)")
"""The object a ``CREATE ... IF NOT EXISTS`` names."""


class PostgresTransaction:
    dialect = "postgres"

    def __init__(self, connection: Any) -> None:
        self.connection = connection
        self._locked = False

    def execute(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if sql.startswith("CREATE "):
            self._create(sql)
            return []
        if sql.startswith("DROP INDEX IF EXISTS "):
            self._drop(sql)
            return []
        # a query is planned for its values each time (never prepared): the generic plan PostgreSQL settles on for a
        # statement run five times ignores them, and walked a member's order 20 times slower (42 ms against 2 ms)
        cursor = self.connection.execute(sql.replace("?", "%s"), _no_nul(params),
                                         prepare=False if sql.startswith(("SELECT", "EXPLAIN")) else None)
        return list(cursor.fetchall()) if cursor.description is not None else []

    def _create(self, sql: str) -> None:
        """``CREATE ... IF NOT EXISTS``, one server at a time (servers starting together), and by a role without the
        right to create (a server's row-only role) only when the object is there already: ``schemadoc migrate``, run
        by the schema's owner, creates the index's tables."""
        if not self._locked:
            self.connection.execute("SELECT pg_advisory_xact_lock(7265636172)")
            self._locked = True
        named = _CREATED.match(sql)
        if named is not None:
            there = self.connection.execute(
                "SELECT to_regclass(%s)" if named.group(1) != "STATISTICS" else
                "SELECT 1 FROM pg_statistic_ext WHERE stxname = %s AND stxnamespace = current_schema()::regnamespace",
                [named.group(2)]).fetchone()
            if there is not None and there[0] is not None:
                return
        import psycopg  # only with the PostgreSQL store, which has it

        try:
            with self.connection.transaction():  # a savepoint: a refusal leaves the transaction usable
                self.connection.execute(sql)
        except psycopg.errors.InsufficientPrivilege as error:
            if named is not None and (named.group(1) == "STATISTICS" or named.group(2) in _POSTGRES_OPTIONAL):
                # the planner's help, not the index's: without, the queries answer alike, some slower
                log.info("search index: %s not created (%s); `schemadoc migrate` creates it", named.group(2),
                         str(error).splitlines()[0])
                return
            raise SchemaDocError(
                "storage-write-failed", f"The search index's tables are missing and this role cannot create them: "
                f"{str(error).splitlines()[0]}.", {"sql": sql.split("(")[0].strip()},
                remediation="Run `schemadoc migrate --storage-url ...` as the schema's owner, then start the server "
                            "again.") from None

    def _drop(self, sql: str) -> None:
        """An index another replaced, dropped once its replacement is there (a role that may not drop it, and so
        could not have created the replacement either, keeps it)."""
        replaced = sql.rsplit(" ", 1)[1]
        replacement = _REPLACED_BY[replaced]
        found = self.connection.execute("SELECT to_regclass(%s)", [replacement]).fetchone()
        if found is not None and found[0] is not None and not self.if_permitted(sql):
            log.info("search index: %s left beside %s (this role may not drop it)", replaced, replacement)

    def if_permitted(self, sql: str) -> bool:
        """Run ``sql`` unless this role may not (an owner's statement); False when refused, the transaction usable."""
        import psycopg  # only with the PostgreSQL store, which has it

        try:
            with self.connection.transaction():  # a savepoint
                self.connection.execute(sql)
        except psycopg.errors.InsufficientPrivilege:
            return False
        return True

    def executemany(self, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.connection.cursor() as cursor:
            cursor.executemany(sql.replace("?", "%s"), [_no_nul(row) for row in rows])


_POSTGRES_OPTIONAL = {"search_fields_sort", "search_units_recent", "search_fields_by_num", "search_fields_by_txt",
                      "search_docs_live"}
"""Indexes added since the first version of the tables: a server's row-only role starts without them (the queries
walk another way) until ``schemadoc migrate`` creates them."""


_REPLACED_BY = {"search_fields_num": "search_fields_by_num", "search_fields_txt": "search_fields_by_txt"}
"""The indexes of an earlier version's tables, and the index each is dropped for once it exists."""


def _window_matches(query: TextQuery, driver: str | None, floor: int) -> tuple[str, list[Any]]:
    """The condition on a unit ``c`` of matching ``query`` above ``floor``: ``driver`` (one of its words) as what the
    index finds, the query as a filter of what it found (the planner then reads the index of the newest units, sized
    from the word's frequency, where it expected the query's to make a window not worth reading)."""
    if driver is None:
        return "c.tsv @@ to_tsquery('simple', ?) AND c.id > ?", [query.tsquery(), floor]
    return ("c.tsv @@ to_tsquery('simple', ?) AND c.id > ? AND ts_match_vq(c.tsv, to_tsquery('simple', ?))",
            [driver, floor, query.tsquery()])


def _no_nul(params: Sequence[Any]) -> list[Any]:
    """PostgreSQL's text holds no NUL character: one in a document's string is indexed as U+FFFD."""
    return [p.replace("\x00", "\ufffd") if isinstance(p, str) and "\x00" in p else p for p in params]


class PostgresBackend(Backend):
    """The index of the PostgreSQL store: tables in its schema, shared by every server on the database."""

    dialect = "postgres"

    def __init__(self, store: Any, *, timeout: float = 30.0) -> None:
        self._store = store
        self._timeout = timeout
        with self.transaction() as tx:
            tx.execute("SELECT pg_advisory_xact_lock(7265636172)")  # servers starting together: one creates
            for statement in _POSTGRES_TABLES:
                tx.execute(statement)

    @contextmanager
    def _connection(self) -> Iterator[Any]:
        """A pooled connection of the store (autocommit); an outage said as the store says one."""
        import psycopg  # only with the PostgreSQL store, which has it

        from schemadoc.storage.postgres.connections import is_outage

        connections = self._store.connections
        try:
            with connections.connection(self._timeout) as connection:
                yield connection
        except psycopg.Error as error:  # an outage, said as the store says one (storage-unavailable), no traceback;
            if is_outage(error):  # the store itself finds out on its next call, and probes as it does
                raise connections.unavailable(connections.scrub(error)) from None
            raise

    @contextmanager
    def transaction(self, *, write: bool = True) -> Iterator[PostgresTransaction]:
        with self._connection() as connection, connection.transaction():
            schema = self._store.schema.replace('"', '""')
            # a read: one snapshot for every statement (a page, its count and generation agree); one round trip
            # no JIT: past its thresholds (a plan's cost over 100,000, 500,000 for inlining, reached at 100,000
            # books) compiling took 2.6 s of a 40 ms search; the index's statements are all short
            # a read's bitmaps and sorts in memory up to _READ_WORK_MEM: at the default 4 MB a word in each of
            # 100,000 books made a lossy bitmap and a window sorted on disk (55 ms; 34 ms in memory)
            connection.execute((f"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY; SET LOCAL work_mem = "
                                f"'{_READ_WORK_MEM}'; " if not write else "")
                               + f'SET LOCAL search_path TO "{schema}"; SET LOCAL jit = off')
            yield PostgresTransaction(connection)

    def text_statement(self, query: TextQuery, scope: str, scope_params: Sequence[Any], after: Sequence[Any] | None,
                       limit: int, *, candidates: int | None = None,
                       in_documents: bool = False) -> tuple[str, list[Any]]:
        """Every match ranked (``candidates`` set, :meth:`ranked_matches` reads a window of the newest units instead;
        ``in_documents`` changes nothing here: the planner reads the documents' units by their index)."""
        params: list[Any] = [query.tsquery(), *scope_params]
        keyset = ""
        if after is not None:
            keyset = " AND (m.score < ? OR (m.score = ? AND m.id > ?))"
            params += [after[0], after[0], after[1]]
        return ("SELECT m.id, m.doc_id, m.pointer, m.score, m.text, m.label FROM (SELECT u.id, u.doc_id, u.pointer, "
                "ts_rank_cd(u.tsv, q, 1)::float8 AS score, u.text, d.label FROM search_units u "
                "JOIN search_docs d ON d.doc_id = u.doc_id, to_tsquery('simple', ?) q "
                f"WHERE u.tsv @@ q AND d.deleted = 0 AND {scope}) m WHERE 1 = 1{keyset} "
                "ORDER BY m.score DESC, m.id LIMIT ?", [*params, limit])

    def matches_more_than(self, tx: Any, query: TextQuery, count: int) -> bool:
        rows = tx.execute("SELECT count(*) FROM (SELECT 1 FROM search_units WHERE tsv @@ to_tsquery('simple', ?) "
                          "LIMIT ?) s", [query.tsquery(), count + 1])
        return bool(rows[0][0] > count)

    def ranked_matches(self, tx: Any, query: TextQuery, scope: str, scope_params: Sequence[Any],
                       after: Sequence[Any] | None, limit: int, *, candidates: int | None = None,
                       in_documents: bool = False, tell_more: bool = True) -> tuple[list[tuple[Any, ...]], bool]:
        """The newest ``candidates`` matches are found in a window of the newest units (``id >`` a floor) sized from
        the planner's estimate of how many units match, and widened until it holds more than ``candidates`` of them
        or every unit: a GIN index gives its matches in no order, and walking the ids downwards to find the newest
        read 1.4 million units for a word in every book; the window reads the pages of its matches only (with the
        block-range index on ``id``). Each try ranks its window's newest matches and counts them in one statement."""
        if candidates is None:
            return super().ranked_matches(tx, query, scope, scope_params, after, limit, in_documents=in_documents,
                                          tell_more=tell_more)
        top = tx.execute("SELECT max(id) FROM search_units")[0][0]
        if top is None:
            return [], False
        # several words: the planner multiplies their frequencies as if independent, and expected 8 units of a phrase
        # in 46,231 (a window of all, 3.6 s), then read a window's matches without its range (47,079 pages, 527 ms):
        # the rarest word bounds the matches and drives the window, the query itself is a filter there (153 ms)
        terms = sorted({f"'{w}'" + (":*" if p.prefix and i == len(p.words) - 1 else "")
                        for p in query.parts for i, w in enumerate(p.words)})
        if len(terms) > 1:
            estimate, driver = min((self._estimate(tx, term), term) for term in terms[:_ESTIMATED_TERMS])
        else:
            estimate, driver = self._estimate(tx, query.tsquery()), None
        # a query whose words the planner's statistics hold no frequency for (most words: it then guesses as for a
        # word that is nowhere, 3,246 units at 20,000 books for 20 there) is read whole: its bitmap costs what its
        # matches are, a window's what its range is
        window = top if estimate < _WINDOW_FROM * self._estimate(tx, _NO_WORD) else \
            int(_WINDOW_MARGIN * (candidates + 1) * top / estimate) + 1
        while True:
            floor = top - window if window < top // 2 else 0  # a window of most units: all (its bitmap costs more)
            matching, params = _window_matches(query, driver if floor else None, floor)
            rows = tx.execute(*self._window_statement(query, matching, params, scope, scope_params, after, limit,
                                                      candidates))
            if not rows:  # nothing after the cursor (or every match in the window deleted): counted apart
                counted = f"SELECT count(*) FROM (SELECT 1 FROM search_units c WHERE {matching} LIMIT ?) s"
                found = int(tx.execute(counted, [*params, candidates + 1])[0][0])
            else:
                found = int(rows[0][-1])
            if found > candidates or floor == 0:
                return [row[:-1] for row in rows], found > candidates and bool(rows)
            window = int(window * max(_WINDOW_MARGIN, min(64.0, _WINDOW_MARGIN * (candidates + 1) / max(found, 1))))

    def _estimate(self, tx: Any, tsquery: str) -> float:
        """How many units the planner expects ``tsquery`` to match (its statistics: often far off for several words,
        which it takes as independent; the window is widened when it holds too few)."""
        plan = tx.execute("EXPLAIN (FORMAT JSON) SELECT 1 FROM search_units WHERE tsv @@ to_tsquery('simple', ?)",
                          [tsquery])[0][0]
        return float((plan if isinstance(plan, list) else orjson.loads(plan))[0]["Plan"]["Plan Rows"])

    def _window_statement(self, query: TextQuery, matching: str, matching_params: Sequence[Any], scope: str,
                          scope_params: Sequence[Any], after: Sequence[Any] | None, limit: int,
                          candidates: int) -> tuple[str, list[Any]]:
        """:meth:`text_statement` over the newest ``candidates`` units ``c`` ``matching`` (:func:`_window_matches`),
        each row ending with how many match (``ORDER BY c.id + 0``: the window's matches sorted, never the ids
        walked)."""
        params: list[Any] = [*matching_params, candidates, query.tsquery(), *scope_params]
        keyset = ""
        if after is not None:
            keyset = " AND (m.score < ? OR (m.score = ? AND m.id > ?))"
            params += [after[0], after[0], after[1]]
        return ("SELECT m.id, m.doc_id, m.pointer, m.score, m.text, m.label, m.found FROM (SELECT u.id, u.doc_id, "
                "u.pointer, ts_rank_cd(u.tsv, q, 1)::float8 AS score, u.text, d.label, u.found FROM (SELECT c.*, "
                f"count(*) OVER () AS found FROM search_units c WHERE {matching} "
                "ORDER BY c.id + 0 DESC LIMIT ?) u JOIN search_docs d ON d.doc_id = u.doc_id, "
                "to_tsquery('simple', ?) q "
                f"WHERE u.tsv @@ q AND d.deleted = 0 AND {scope}) m WHERE 1 = 1{keyset} "
                "ORDER BY m.score DESC, m.id LIMIT ?", [*params, limit])

    def tidy(self) -> None:
        """``VACUUM`` of the documents' and the members' rows after a build (outside a transaction): their pages
        marked all-visible, a count of a filter reads the covering indexes alone (autovacuum does the same later, when
        it runs; a role that does not own the tables leaves it to autovacuum, with a warning of the database's)."""
        schema = self._store.schema.replace('"', '""')
        with self._connection() as connection:
            connection.execute(f'VACUUM "{schema}".search_docs, "{schema}".search_fields')

    def settle(self, tx: Any) -> None:
        """The statistics, and the block ranges of the units written since the last summary: a build writes them
        faster than autovacuum summarises (its requests overflow), and a window over ranges not summarised reads
        them all (a search for a word in every book at 37,000 books: 37,342 pages checked again, 779 ms; 4,368
        and 196 ms once summarised). A role that does not own the index leaves that to autovacuum."""
        super().settle(tx)
        if tx.execute("SELECT to_regclass('search_units_recent')")[0][0] is not None and not tx.if_permitted(
                "SELECT brin_summarize_new_values('search_units_recent'::regclass)"):
            log.info("search index: the new block ranges of search_units_recent are left to autovacuum")

    def generation(self, tx: Any) -> Any:
        """The transaction's snapshot (repeatable read): two equal snapshots see the same committed
        transactions, so the same index. Any commit in the database moves it on, the documents' own included."""
        return tx.execute("SELECT pg_current_snapshot()::text")[0][0]

    def lock_document(self, tx: Any, doc_id: str) -> None:
        """Servers indexing one document at once take turns (documents in doc_id order in every batch: no deadlock)."""
        tx.execute("SELECT pg_advisory_xact_lock(72656361, hashtext(?))", [doc_id])

    def insert_units(self, tx: Any, doc_id: str, units: Sequence[TextUnit]) -> None:
        """With the words as this module finds them (PostgreSQL's own parser would read ``<b>`` as a tag, an
        e-mail address as one token): both databases index the same words (in the order of ``units``: their ids
        break ties between equal scores)."""
        if not units:
            return
        # one statement of arrays, not a statement per unit: a book's 260 units took 130 ms of round trips
        tx.execute("INSERT INTO search_units (doc_id, pointer, text, words) SELECT ?, u.pointer, u.text, u.words "
                   "FROM unnest(?::text[], ?::text[], ?::text[]) WITH ORDINALITY AS u(pointer, text, words, n) "
                   "ORDER BY u.n", [doc_id, _no_nul([unit.pointer for unit in units]),
                                    _no_nul([unit.text for unit in units]),
                                    [" ".join(words_of(unit.text)) for unit in units]])

    def close(self) -> None:
        """The connections are the store's: nothing of its own to release."""
