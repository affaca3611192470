"""A store in PostgreSQL, for several server processes (on one or many machines) on one database.

The tables live in one PostgreSQL schema (``schemadoc`` unless the URL says ``?schema=NAME``),
created and migrated by the store itself or by ``schemadoc migrate`` (:mod:`~.migrations`; their
columns and the measured reasons for them are in docs/architecture.md). Snapshots are ``bytea``
compressed with lz4: kept byte for byte, and 3 to 10 times cheaper to write than ``jsonb`` or
``bytea`` with the default compression (benchmarks/postgres.py). A commit is one statement, so
one transaction (:data:`~.statements.COMMIT`), and with its notification and the lock's release one
round trip; taking the write lock reads the meta in the same round trip; a read of a document held in
memory and known current needs none (:mod:`~.current`). ``load`` is one statement, so it needs no lock.
A commit without content leaves the snapshot behind; :meth:`~PostgresDocumentStore.write_snapshot`
writes a newer one beside it and then switches ``snapshot_version`` in a short transaction.

Modules, one concern each: :mod:`~.migrations` (the tables), :mod:`~.statements` (the SQL of
writes, reads and the change feed), :mod:`~.notifications` (LISTEN / NOTIFY and the catch-up, through
a narrow :class:`~.notifications.ListenerSource`), :mod:`~.current` (the metas known current),
:mod:`~.locks` (the write locks), :mod:`~.connections` (the pool, outages and the URL),
:mod:`~.reading` (connections, statements and reads), :mod:`~.store` (:class:`PostgresDocumentStore`:
its life cycle and writes).
"""

from __future__ import annotations

from schemadoc.storage.postgres.migrations import MIGRATIONS
from schemadoc.storage.postgres.store import PostgresDocumentStore

__all__ = ["MIGRATIONS", "PostgresDocumentStore"]
