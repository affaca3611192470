"""The metas this process knows to be current, so that a read of a document held in memory needs no round trip.

A meta is *known current* while nothing can have moved the document without this process hearing of it:

- this process's own commits, purges, verdicts and snapshot switches put or drop the entry themselves, after
  they succeeded;
- another process's commit, purge, verdict or snapshot switch sends a notification
  (:mod:`~.notifications`); the listening thread drops the entry when it hears it, and remembers the newest
  version it heard of, so that a meta read from the database before that commit and put afterwards is refused
  (:meth:`CurrentMetas.put` only ever moves forward);
- while the listening connection is down (and until ``LISTEN`` is in force again and the catch-up read what
  was committed meanwhile) nothing is known current: :meth:`CurrentMetas.lost` forgets every entry and
  :meth:`CurrentMetas.listening` trusts again. Every change of that state starts a new *epoch*; a meta read
  from the database in an earlier epoch is not kept.

What stays: another server's commit reaches this process's reads when its notification arrived, a fraction
of a millisecond after the commit on one machine (PostgreSQL signals the listening session at commit).
Writes never rely on it: under the write lock the store reads the meta from the database in the same round
trip as the lock (:mod:`~.locks`), and a commit is conditional on the version it replaces.
"""

from __future__ import annotations

import threading
from typing import Final

from schemadoc.storage.base import DocumentMeta
from schemadoc.storage.recent import Recent

__all__ = ["CurrentMetas"]

_PURGED: Final = 2**31
"""The version a purge is remembered at: nothing read before it may come back."""
KEPT: Final = 8192
"""At most this many metas are kept (the oldest put out first), and as many versions heard of (past that they are
forgotten and a new epoch begins: no meta read before is kept). Kept for every document, a listing of 100,000 books
held two objects a document for every collection of the interpreter to walk."""


class CurrentMetas:
    """Metas known current (see the module docstring). Thread-safe; untrusted until :meth:`listening`."""

    def __init__(self, kept: int = KEPT) -> None:
        self._guard = threading.Lock()
        self._metas: Recent[str, DocumentMeta] = Recent(kept)
        self._heard: dict[str, int] = {}  # doc_id -> the newest version another process announced
        self._heard_kept = kept
        self._trusted = False
        self.epoch = 0
        """Changes whenever trust is lost or regained; take it before a database read, give it to :meth:`put`."""

    def get(self, doc_id: str) -> DocumentMeta | None:
        """The meta of ``doc_id`` when it is known current, else None (read it from the database)."""
        if not self._trusted:
            return None
        return self._metas.get(doc_id)

    def put(self, meta: DocumentMeta, epoch: int) -> None:
        """Keep ``meta``, read or written in ``epoch``, unless trust changed since or a newer version was heard of."""
        with self._guard:
            if not self._trusted or epoch != self.epoch:
                return
            doc_id = meta.doc_id
            heard = self._heard.get(doc_id)
            if heard is not None:
                if meta.version < heard:
                    return
                del self._heard[doc_id]
            known = self._metas.get(doc_id)
            if known is None or known.version <= meta.version:
                self._metas[doc_id] = meta

    def drop(self, doc_id: str) -> None:
        """Forget ``doc_id``'s meta: something a meta holds besides the version changed (a verdict, the snapshot).

        A new epoch begins, so a meta read before the change and put after it is not kept (rare: at most
        one per background snapshot or recorded verdict)."""
        with self._guard:
            self._metas.pop(doc_id, None)
            self.epoch += 1

    def heard(self, doc_id: str, version: int, kind: str) -> None:
        """Another process committed ``version`` of ``doc_id`` (``kind`` ``purged``: removed it, ``meta``: changed
        its verdict or snapshot at ``version``, see :meth:`drop`)."""
        if kind == "meta":
            self.drop(doc_id)
            return
        with self._guard:
            self._metas.pop(doc_id, None)
            newest = _PURGED if kind == "purged" else version
            self._heard[doc_id] = max(self._heard.get(doc_id, 0), newest)
            if len(self._heard) > self._heard_kept:  # forgotten: no meta read before now is kept either
                self._heard.clear()
                self.epoch += 1

    def lost(self) -> None:
        """The listening connection is down: nothing is known current any more."""
        with self._guard:
            self._trusted = False
            self.epoch += 1
            self._metas.clear()
            self._heard.clear()

    def listening(self) -> None:
        """``LISTEN`` is in force and what was missed has been announced: metas read from now on can be kept."""
        with self._guard:
            self._trusted = True
            self.epoch += 1

    def __len__(self) -> int:
        return len(self._metas)
