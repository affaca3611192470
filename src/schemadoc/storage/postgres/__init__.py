"""A store in PostgreSQL, for several server processes (on one or many machines) on one database.

Tables (in one PostgreSQL schema, ``schemadoc`` unless the URL says ``?schema=NAME``), created
and migrated by the store itself or by ``schemadoc migrate`` (:mod:`~.migrations`: applied in
order under an advisory lock, each version once, recorded in ``schema_migrations``):

- ``documents``: one small row per document: the meta, with ``snapshot_version``;
- ``snapshots``: the snapshot of each document (its JSON bytes at ``snapshot_version``,
  ``bytea`` compressed with lz4: kept byte for byte, and measured 3 to 10 times cheaper to
  write than ``jsonb`` or ``bytea`` with the default compression, see benchmarks/postgres.py;
  read back in binary format, 4 times faster than hex text). Journal-first: a commit without content leaves it behind;
  :meth:`~PostgresDocumentStore.write_snapshot` writes a newer one beside it and then switches
  ``snapshot_version`` in a short transaction, so commits are never held up by its bytes;
- ``journal``: one row per version, primary key ``(doc_id, version)``, so two writers from one
  version can never both commit. ``entry`` is the JSON line the files store would write; ``txid``
  is the committing transaction's id, the cursor of the change feed;
- ``checkpoints``: the content of some past versions (a cache for past reads);
- ``purges``: the documents purged in the last day (id, last version, transaction id), so that
  a process whose listening connection was down hears of them after it reconnects.

A commit is one statement, so one transaction (:data:`~.statements.COMMIT`): the ``documents``
row moves from version n-1 to n (a conditional update: another writer's commit makes it match nothing, a
``version-conflict``), the journal row is inserted (with the snapshot when the commit carries
one), and a notification is sent (delivered at commit, to every process). A process that
missed notifications while its listening connection was down reads what it missed from the
change feed and ``purges`` once it listens again (:meth:`PostgresDocumentStore.watch`).
:meth:`~PostgresDocumentStore.load` is one statement, so meta, snapshot and the journal after it
come from one consistent view without a lock.

Write locks are session advisory locks held on a connection of the pool for the ``with`` block
(released by the server when the process dies). Everything the holding thread does to that
document inside the block uses the same connection.

The change feed (:meth:`PostgresDocumentStore.read_changes`) orders commits by transaction id
and only shows transactions below the oldest one still running (``pg_snapshot_xmin``): a commit
that started earlier but lands later holds the feed back until it lands, so no reader ever skips
it. A transaction left open elsewhere on the same PostgreSQL server delays the feed (never loses
a change); ``idle_in_transaction_session_timeout`` bounds that.

Modules, one concern each: :mod:`~.migrations` (the tables), :mod:`~.statements` (the SQL of
writes and reads), :mod:`~.feed` (the change feed's cursor), :mod:`~.notifications` (LISTEN /
NOTIFY and the catch-up), :mod:`~.locks` (write locks), :mod:`~.connections` (the pool, outages
and the URL), :mod:`~.store` (:class:`PostgresDocumentStore`).
"""

from __future__ import annotations

from schemadoc.storage.postgres.connections import redact_url
from schemadoc.storage.postgres.connections import split_schema as _split_schema  # noqa: F401 - imported by name
from schemadoc.storage.postgres.migrations import MIGRATIONS
from schemadoc.storage.postgres.store import DEFAULT_SCHEMA, PostgresDocumentStore

__all__ = ["DEFAULT_SCHEMA", "MIGRATIONS", "PostgresDocumentStore", "redact_url"]
