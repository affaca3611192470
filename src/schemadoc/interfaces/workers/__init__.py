"""``schemadoc serve --workers N``: N server processes on one listening socket, and the process that supervises them.

:mod:`.supervisor` forks and watches the workers, :mod:`.channel` is a worker's end of its channel to the
supervisor, :mod:`.feed` the change feed the workers keep between them.

The supervisor (the process ``serve`` started as) binds the address, then forks N workers before it has opened
the store, loaded anything big or started a thread; each worker builds its own service on the same store and
serves the address. On Linux each worker listens on a socket of its own bound with ``SO_REUSEPORT`` beside the
supervisor's (bound, never listening: it holds the address while workers come and go), and the kernel spreads
new connections over them by a hash of the connection's addresses; elsewhere the workers accept on the one
inherited socket (measured on Linux, 32 connections opened one after the other went 25 / 7 to two idle
workers that way, 19 / 13 at worst over three tries with ``SO_REUSEPORT``). A connection stays on the worker
that accepted it. A
worker is one of several servers on one store, as several ``serve`` processes on one storage directory or
PostgreSQL schema are: every commit checks the stored version under the document's write lock (a ``flock`` on
the files store, an advisory lock on PostgreSQL), so writes through different workers never lose one another.

What the supervisor adds (docs/deployment.md, "Several worker processes"):

- **Change events and the change feed between workers** on a store that does not carry them itself (the files
  store): each worker tells the supervisor of its own commits over its channel, a ``SOCK_SEQPACKET`` socket
  pair, and the supervisor tells every other worker. A notice (document, version, kind) is published as
  PostgreSQL's ``LISTEN`` publishes another server's commits: event streams and MCP subscribers hear every
  worker's writes, reading the entries from the journal. The change feed's messages (:class:`WorkersFeed`)
  make every worker's feed list every worker's commits without ever passing one still on its way. A message
  never waits: one a worker cannot take at once (its channel full) is dropped and counted in the log; a
  stream catches up at that document's next event, and a feed that sees the gap in the sender's sequence
  numbers is read again from the journals. PostgreSQL needs no relay (each worker listens to the database,
  which orders the feed).
- **The stop**: SIGTERM or SIGINT to the supervisor sends SIGTERM to every worker, which stops as one server
  does (new requests refused, event streams ended, requests in flight finished within the grace); the
  supervisor closes its own socket at once (so new connections are refused once the workers closed
  theirs), waits for every worker, kills one still running ``grace + 5`` seconds later, and exits 0 when every
  worker stopped cleanly.
- **A worker that ends** unexpectedly (killed, crashed, exited) after it served is logged with its exit status and
  replaced by a new one at once (after a second when it had lived less than ten); more than five ends within a
  minute stop the whole server with ``EXIT_INTERNAL``. A worker that exits before it served (a start-up failure:
  the store cannot be opened, the port's socket is gone) stops the whole server with that worker's exit code;
  one killed by a signal while it started is replaced as above.
- **Workers end with the supervisor**: each asks the kernel for SIGTERM when its parent dies (``PR_SET_PDEATHSIG``
  on Linux), so a supervisor killed with SIGKILL leaves no server behind.

POSIX only (``os.fork``); the command refuses ``--workers`` above 1 elsewhere, and on the stdio transport.
"""

from __future__ import annotations

from schemadoc.interfaces.workers.channel import READY, Channel
from schemadoc.interfaces.workers.feed import TICK_SECONDS, WorkersFeed
from schemadoc.interfaces.workers.supervisor import supervise

__all__ = ["READY", "TICK_SECONDS", "Channel", "WorkersFeed", "supervise"]
