"""What a store may do beyond the contract of :mod:`schemadoc.storage.base`: order the commits of several processes
(:class:`SharedStore`, PostgreSQL), and write a snapshot from pieces of its bytes as they come
(:class:`StreamedSnapshots`, the files store). The service and the snapshotter ask a store for them with
``isinstance``."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

__all__ = ["SharedStore", "StoreNotice", "StoredChange", "StreamedSnapshots"]


@dataclass(frozen=True)
class StoredChange:
    """One committed version in a shared store's change feed; ``cursor`` orders the feed."""

    cursor: int
    doc_id: str
    version: int
    op: str
    at: str
    actor: str | None = None
    """Who made the version (its journal entry's ``info.actor``), ``None`` when unrecorded."""


@dataclass(frozen=True)
class StoreNotice:
    """A commit (``kind``: created, updated, deleted, undeleted) or a purge made by another process."""

    doc_id: str
    version: int
    kind: str


@runtime_checkable
class SharedStore(Protocol):
    """A store that several server processes share (PostgreSQL): it orders their commits itself.

    The files and memory stores are not shared stores; for them the service keeps the change feed
    of its own process. For a shared store the service reads the feed from the store, so every
    process lists every commit once, and hears other processes' commits through :meth:`watch`.
    """

    def read_changes(self, since: int, limit: int) -> list[StoredChange]:
        """Committed versions of every document after cursor ``since`` (0: from the start), oldest
        first, at most ``limit``, except that a page ends with the whole of the last transaction it
        reaches (one commit is one version; a ``restore`` writes a whole journal in one). A commit
        still in flight holds back every later cursor, so a reader that moves its cursor past what it
        was given never skips a commit that lands late.
        """
        ...

    def watch(self, listener: Callable[[StoreNotice], None]) -> Callable[[], None]:
        """Call ``listener`` (from a store thread; it must not block) for every commit or purge made by
        another process; returns the function that stops it."""
        ...

    def close(self) -> None:
        """Stop watching and release connections."""
        ...


@runtime_checkable
class StreamedSnapshots(Protocol):
    """A store that writes a snapshot or a checkpoint from pieces of its bytes as they come (the files store).

    Serialising a big document piece by piece and writing each piece at once never holds the
    whole serialisation in memory, and lets other threads run between pieces.
    """

    def write_snapshot_pieces(self, doc_id: str, version: int, content: bytes | Iterable[bytes]) -> bool:
        """:meth:`DocumentStore.write_snapshot` from ``content``'s pieces; the same guarantees and errors,
        plus whatever drawing a piece raises (then nothing changed)."""
        ...

    def write_checkpoint_pieces(self, doc_id: str, version: int, content: bytes | Iterable[bytes]) -> None:
        """:meth:`DocumentStore.write_checkpoint` from ``content``'s pieces (whatever drawing one raises
        leaves nothing behind)."""
        ...
