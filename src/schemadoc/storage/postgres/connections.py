"""Connections to PostgreSQL: the URL, the pool, and an outage told apart from a failed statement.

A database that is down, restarting, unreachable or refusing the login is an *outage*
(:func:`is_outage`): the store answers ``storage-unavailable`` (503, ``retry_after_seconds``)
at once instead of waiting for a pooled connection, and a write whose commit was sent when the
connection broke answers ``commit-outcome-unknown``. While the store is out, a request (or the
readiness check) probes the database with a fresh connection, at most one probe at a time and
one every :data:`PROBE_INTERVAL_SECONDS`; the first probe that gets in replaces the pool with a
new one, so service comes back within a probe interval of the database accepting connections,
whatever the outage's length (the pool's own reconnection backs off, doubling its delay).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Final, TypeVar
from urllib.parse import parse_qsl, unquote, urlencode, urlsplit, urlunsplit

import psycopg
from psycopg_pool import ConnectionPool, PoolTimeout

from schemadoc.errors import SchemaDocError

__all__ = ["PROBE_INTERVAL_SECONDS", "RETRY_AFTER_SECONDS", "Connections", "is_outage", "redact_url", "split_schema"]

log = logging.getLogger("schemadoc.storage.postgres")

RETRY_AFTER_SECONDS: Final = 2
"""What ``storage-unavailable`` asks clients to wait (``Retry-After``)."""
PROBE_INTERVAL_SECONDS: Final = 0.5
PROBE_CONNECT_TIMEOUT_SECONDS: Final = 2
_OUTAGE_STATES: Final = frozenset({"57P01", "57P02", "57P03", "53300", "3D000"})
"""admin/crash shutdown, cannot connect now, too many connections, the database does not exist."""

_R = TypeVar("_R")


def redact_url(url: str) -> str:
    """``url`` without its password (for logs and messages); never raises."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        netloc = parts.netloc.rsplit("@", 1)
        return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{netloc[-1]}"))
    except ValueError:
        scheme, _, rest = url.partition("://")
        return f"{scheme}://***@{rest.rsplit('@', 1)[-1]}" if "@" in url else url


def split_schema(url: str) -> tuple[str, str | None]:
    """The connection URL without schemadoc's own ``schema`` parameter, and that parameter.

    A URL that cannot be parsed is ``config-invalid`` naming it without its password.
    """
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - parses the port
    except ValueError as error:
        raise SchemaDocError("config-invalid", f"storage_url is not a valid URL: {error}.",
                             {"setting": "storage_url", "value": redact_url(url)},
                             remediation="Percent-encode special characters of the user and password "
                                         "(@ as %40, # as %23, / as %2F).") from None
    query = parse_qsl(parts.query, keep_blank_values=True)
    schema = next((value for key, value in query if key == "schema"), None)
    rest = [(key, value) for key, value in query if key != "schema"]
    return urlunsplit(parts._replace(query=urlencode(rest))), schema


def _secrets(url: str) -> list[str]:
    try:
        password = urlsplit(url).password
    except ValueError:
        return []
    return [secret for secret in {password or "", unquote(password or "")} if len(secret) >= 3]


def is_outage(error: BaseException, conn: psycopg.Connection[Any] | None = None) -> bool:
    """Whether ``error`` means the database cannot be used now (rather than that one statement failed)."""
    if isinstance(error, PoolTimeout):
        return True
    if conn is not None and conn.broken:
        return True
    if not isinstance(error, psycopg.OperationalError):
        return False
    state = error.sqlstate
    return state is None or state[:2] in ("08", "28") or state in _OUTAGE_STATES


class Connections:
    """The pool of one store, with what it knows about the database being out (see the module docstring)."""

    def __init__(self, url: str, *, name: str, pool_size: int) -> None:
        self.url = url
        self.shown = redact_url(url)
        self._secrets = _secrets(url)
        self._name = name
        self._pool_size = max(pool_size, 2)
        self._pool: ConnectionPool[psycopg.Connection[Any]] | None = None
        self._guard = threading.Lock()
        self._probing = threading.Lock()
        self._down: str | None = None  # why the database is out, None while it answers
        self._down_since = 0.0
        self._last_probe = 0.0
        self._waits_before = 0  # requests that waited in the pools replaced after an outage

    # -- life cycle ------------------------------------------------------------------------------

    def connect_options(self) -> dict[str, Any]:
        """``connect_timeout`` of 10 seconds unless the URL gives one (libpq waits forever by default)."""
        try:
            given = psycopg.conninfo.conninfo_to_dict(self.url)
        except psycopg.Error as error:
            raise SchemaDocError("config-invalid", f"storage_url is not a valid PostgreSQL URL: {self.scrub(error)}",
                                 {"setting": "storage_url", "value": self.shown}) from None
        return {} if "connect_timeout" in given else {"connect_timeout": 10}

    def connect(self, **options: Any) -> psycopg.Connection[Any]:
        """A new connection of its own (autocommit), outside the pool."""
        return psycopg.connect(self.url, autocommit=True, **{**self.connect_options(), **options})

    @property
    def is_open(self) -> bool:
        return self._pool is not None

    def open(self) -> None:
        """Open the pool and wait for its first connection (raises psycopg or pool errors)."""
        pool = self._new_pool()
        try:
            pool.open(wait=True, timeout=10)
        except BaseException:
            pool.close(timeout=0)
            raise
        with self._guard:
            self._pool = pool

    def close(self) -> None:
        with self._guard:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.close()

    def _new_pool(self) -> ConnectionPool[psycopg.Connection[Any]]:
        return ConnectionPool(self.url, min_size=1, max_size=self._pool_size,
                              kwargs={"autocommit": True, **self.connect_options()}, open=False, name=self._name)

    # -- using it --------------------------------------------------------------------------------

    @contextmanager
    def connection(self, timeout: float) -> Iterator[psycopg.Connection[Any]]:
        """A pooled connection; ``storage-unavailable`` at once while the database is out (after a probe)."""
        pool = self._pool
        if pool is None:
            raise SchemaDocError("storage-unavailable", "The PostgreSQL store is not open.",
                                 {"reason": "the store is not open", "retry_after_seconds": RETRY_AFTER_SECONDS})
        if self._down is not None:
            self.probe()  # raises storage-unavailable while still out; reopens the pool when back
            pool = self._pool
            assert pool is not None
        try:
            conn = pool.getconn(timeout=timeout)
        except PoolTimeout as error:
            self.probe(force=True)  # out (raises), or every connection is busy
            raise self.unavailable(f"no pooled connection came free within {timeout:g} seconds (every one is "
                                   "busy)") from error
        try:
            yield conn
        finally:
            pool.putconn(conn)

    def failed(self, error: BaseException, conn: psycopg.Connection[Any] | None = None) -> bool:
        """Note a failure; True (and the store marked out) when it is an outage."""
        if not is_outage(error, conn):
            return False
        self._mark_down(self.scrub(error))
        return True

    def _mark_down(self, reason: str) -> None:
        with self._guard:
            if self._down is None:
                self._down_since = time.monotonic()
                log.error("PostgreSQL at %s cannot be used: %s", self.shown, reason)
            self._down = reason

    def unavailable(self, reason: str | None = None, doc_id: str | None = None) -> SchemaDocError:
        why = reason or self._down or "the database does not answer"
        return SchemaDocError(
            "storage-unavailable", f"The PostgreSQL database cannot be used now: {why}",
            {"reason": why, "retry_after_seconds": RETRY_AFTER_SECONDS, **({"doc_id": doc_id} if doc_id else {})})

    def probe(self, *, force: bool = False) -> None:
        """While out: try a fresh connection (one thread at a time, one every :data:`PROBE_INTERVAL_SECONDS`);
        on success replace the pool and mark the store in; raise ``storage-unavailable`` otherwise."""
        if self._down is None and not force:
            return
        if not self._probing.acquire(blocking=False):
            if self._down is None:
                return
            raise self.unavailable()
        try:
            if self._down is not None and time.monotonic() - self._last_probe < PROBE_INTERVAL_SECONDS:
                raise self.unavailable()
            self._last_probe = time.monotonic()
            try:
                with self.connect(connect_timeout=PROBE_CONNECT_TIMEOUT_SECONDS) as conn:
                    conn.execute("SELECT 1")
            except psycopg.Error as error:
                self._mark_down(self.scrub(error))
                raise self.unavailable() from None
            if self._down is not None:
                self._reopen()
        finally:
            self._probing.release()

    def _reopen(self) -> None:
        """The database answers again: a new pool (the old one's connections are dead, its reconnection backs
        off), the old one closed in the background; connections in use return to it and are closed."""
        fresh = self._new_pool()
        fresh.open(wait=False)
        with self._guard:
            old, self._pool = self._pool, fresh
            if old is not None:
                self._waits_before += old.get_stats().get("requests_queued", 0)
            outage = time.monotonic() - self._down_since
            self._down = None
        log.warning("PostgreSQL at %s answers again (after %.1f s); connections reopened", self.shown, outage)
        if old is not None:
            threading.Thread(target=old.close, kwargs={"timeout": 5}, daemon=True,
                             name=f"{self._name}-close").start()

    def retrying(self, attempt: Callable[[], _R]) -> _R:
        """Run a read; when it meets an outage nobody had noticed (the pooled connections died with a database
        that is back by now: a probe gets in at once), run it once more on the reopened pool."""
        was_up = self._down is None
        try:
            return attempt()
        except SchemaDocError as error:
            if not was_up or error.code != "storage-unavailable":
                raise
            try:
                self.probe()
            except SchemaDocError:
                raise error from None
            return attempt()

    def stats(self) -> dict[str, int]:
        """The pool now, for the metrics: connections ``idle`` and ``used``, its ``max``, ``waits`` (requests that
        waited for a connection, since the start) and ``available`` (0 during an outage, else 1). No round trip."""
        pool = self._pool
        measured = pool.get_stats() if pool is not None else {}
        size, idle = measured.get("pool_size", 0), measured.get("pool_available", 0)
        return {"idle": idle, "used": max(size - idle, 0), "max": self._pool_size,
                "waits": self._waits_before + measured.get("requests_queued", 0),
                "available": int(pool is not None and self._down is None)}

    def problem(self) -> SchemaDocError | None:
        """``storage-unavailable`` with the cause while the database cannot be used, else None (a round trip)."""
        if self._pool is None:
            return self.unavailable("the store is not open")
        try:
            if self._down is not None:
                self.probe()
                return None
            with self.connection(PROBE_CONNECT_TIMEOUT_SECONDS) as conn:
                try:
                    conn.execute("SELECT 1")
                except psycopg.Error as error:
                    return self.unavailable() if self.failed(error, conn) else self.unavailable(self.scrub(error))
        except SchemaDocError as error:
            return error
        return None

    def unusable(self, error: BaseException) -> SchemaDocError:
        """The start-up error for ``error``: ``storage-unavailable`` for an outage (nothing logged: the command
        prints it as its one line), else ``storage-write-failed`` about the role's privileges."""
        reason = self.scrub(error)
        if is_outage(error):
            return SchemaDocError(
                "storage-unavailable", f"The PostgreSQL database at {self.shown} cannot be used: {reason}",
                {"storage_url": self.shown, "reason": reason, "retry_after_seconds": RETRY_AFTER_SECONDS},
                remediation="Check that the database server runs and answers at that URL, and that the user and "
                            "password are right.")
        return SchemaDocError("storage-write-failed", f"The PostgreSQL store {self.shown} cannot be used: {reason}",
                              {"storage_url": self.shown, "reason": reason},
                              remediation="Check the role's privileges: the server needs to read and write the rows "
                                          "of the schema's tables; `schemadoc migrate` (as the owning role) creates "
                                          "or migrates them.")

    def scrub(self, error: BaseException) -> str:
        """The first line of an error's message, without the URL's password (libpq may echo the URL)."""
        text = str(error).strip() or type(error).__name__
        for secret in self._secrets:
            text = text.replace(secret, "***")
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        return " ".join(lines[:2]) if lines else type(error).__name__
