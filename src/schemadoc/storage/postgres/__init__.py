"""A store in PostgreSQL, for several server processes (on one or many machines) on one database.

Tables (in one PostgreSQL schema, ``schemadoc`` unless the URL says ``?schema=NAME``), created
and migrated by the store itself or by ``schemadoc migrate`` (:mod:`~.migrations`):
``documents`` (one small row per document: the meta, with ``snapshot_version``), ``snapshots``
(the JSON bytes at ``snapshot_version``, ``bytea`` compressed with lz4: kept byte for byte, and
measured 3 to 10 times cheaper to write than ``jsonb`` or ``bytea`` with the default compression,
see benchmarks/postgres.py), ``journal`` (one row per version, primary key ``(doc_id, version)``,
so two writers from one version can never both commit; ``txid``, the committing transaction's
id, is the change feed's cursor), ``checkpoints`` (a cache of past versions) and ``purges`` (the
purges of the last day, for a process whose listening connection was down).

A commit is one statement, so one transaction (:data:`~.statements.COMMIT`); ``load`` is one
statement, so it needs no lock. Journal-first: a commit without content leaves the snapshot
behind; :meth:`~PostgresDocumentStore.write_snapshot` writes a newer one beside it and then
switches ``snapshot_version`` in a short transaction, so commits are never held up by its bytes.

Modules, one concern each: :mod:`~.migrations` (the tables), :mod:`~.statements` (the SQL of
writes, reads and the change feed), :mod:`~.notifications` (LISTEN / NOTIFY and the catch-up),
:mod:`~.connections` (the pool, outages and the URL), :mod:`~.store`
(:class:`PostgresDocumentStore`, with its write locks).
"""

from __future__ import annotations

from schemadoc.storage.postgres.migrations import MIGRATIONS
from schemadoc.storage.postgres.store import PostgresDocumentStore

__all__ = ["MIGRATIONS", "PostgresDocumentStore"]
