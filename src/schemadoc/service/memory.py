"""The memory budget: what the service keeps resident, in bytes, least recently used out first.

A server holds far more documents than its memory. Everything the service keeps of a document
(its content, its size cache, its node counts, its in-memory history checkpoints) lives in one
:class:`Resident` entry of one :class:`ResidentSet`, charged in bytes against one budget. When the
charges exceed the budget the least recently used entries are dropped; a document in the middle
of a write (pinned) is never dropped. Nothing dropped is lost: the journal is durable before a
write is acknowledged, and an evicted document is loaded again from its snapshot and journal
tail on its next use.

How bytes are measured and why (``json bytes + BYTES_PER_BLOCK * blocks``, the allocator blocks a
document's parse made, measured against ``tracemalloc``): docs/architecture.md, "Memory budget".
A write scales the charge with the content size (the same bytes per JSON byte).
"""

from __future__ import annotations

import ctypes.util
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from schemadoc.ops.history import Checkpoints
from schemadoc.reading import NodeCounts, SizeCache
from schemadoc.service.models import DocState

__all__ = ["BYTES_PER_BLOCK", "DEFAULT_BUDGET_FRACTION", "Resident", "ResidentSet", "default_budget"]

BYTES_PER_BLOCK = 72
"""Bytes charged per allocator block a parse made (object header, hash table or list slots; see above)."""
DEFAULT_BUDGET_FRACTION = 0.25
"""The default budget: a quarter of the machine's memory (or of the cgroup's limit, when lower)."""
_SIZE_ENTRY_BYTES = 160
"""One remembered container size: a dict slot, a tuple and an int."""
_SIZE_ENTRIES_PER_DOCUMENT = 20_000
_TRIM_EVERY_BYTES = 8 << 20
"""Evicted bytes after which the C heap's free pages are handed back (:data:`release_free_memory`)."""
_ENTRY_BYTES = 2_048
"""What an entry costs beside its content: the state, the meta, the caches' empty shells."""

def default_budget() -> int:
    """:data:`DEFAULT_BUDGET_FRACTION` of the machine's physical memory, or of the cgroup's limit if lower."""
    try:
        physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not a POSIX system
        physical = 4 << 30
    limit = physical
    try:
        raw = Path("/sys/fs/cgroup/memory.max").read_text().strip()
        if raw.isdigit():
            limit = min(limit, int(raw))
    except OSError:
        pass
    return max(int(limit * DEFAULT_BUDGET_FRACTION), 64 << 20)


try:
    _LIBC = ctypes.util.find_library("c")
    _MALLOC_TRIM = ctypes.CDLL(_LIBC).malloc_trim if _LIBC else None
except (OSError, AttributeError):  # pragma: no cover - not glibc
    _MALLOC_TRIM = None


def release_free_memory() -> None:
    """Hand the C heap's free pages back to the system (``malloc_trim(0)`` of glibc; evicted content freed many
    small blocks: without this, the heap keeps them and the process's RSS stays at its high-water mark)."""
    if _MALLOC_TRIM is not None:
        _MALLOC_TRIM(0)


@dataclass
class Resident:
    """What the service keeps of one document, and what it is charged."""

    state: DocState
    content_bytes: int
    sizes: SizeCache = field(default_factory=lambda: SizeCache(max_entries=_SIZE_ENTRIES_PER_DOCUMENT))
    counts: tuple[Any, NodeCounts] | None = None
    checkpoints: Checkpoints | None = None
    checkpoint_bytes: int = 0
    counted: int = 0
    """The charge last added to the set's total (see :meth:`ResidentSet.settle`)."""

    @property
    def charged(self) -> int:
        return self.content_bytes + self.checkpoint_bytes + len(self.sizes) * _SIZE_ENTRY_BYTES + _ENTRY_BYTES


class ResidentSet:
    """The documents a service holds, under one byte budget (thread-safe).

    ``on_evict`` is called (outside the set's lock) with each dropped entry, so the service can
    forget what other caches remember of its content.
    """

    def __init__(self, budget_bytes: int, on_evict: Callable[[str, Resident], None] | None = None) -> None:
        if budget_bytes < 1:
            raise ValueError("the memory budget must be at least 1 byte")
        self.budget_bytes = budget_bytes
        self._on_evict = on_evict
        self._entries: OrderedDict[str, Resident] = OrderedDict()
        self._lock = threading.Lock()
        self._pins: dict[str, int] = {}
        self._total = 0
        self.evictions = 0
        """Entries dropped to stay within the budget (for benchmarks and tests)."""
        self._freed = 0
        self.loads = 0
        """Documents loaded from the store (first reads and reloads after an eviction)."""

    def __contains__(self, doc_id: object) -> bool:
        with self._lock:
            return doc_id in self._entries

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    @property
    def charged(self) -> int:
        """Bytes charged by every entry, as last counted."""
        with self._lock:
            return self._total

    def get(self, doc_id: str) -> DocState | None:
        """The held state of ``doc_id`` (now the most recently used), or ``None``."""
        entry = self.entry(doc_id)
        return entry.state if entry is not None else None

    def entry(self, doc_id: str) -> Resident | None:
        with self._lock:
            entry = self._entries.get(doc_id)
            if entry is not None:
                self._entries.move_to_end(doc_id)
            return entry

    def put(self, doc_id: str, state: DocState, content_bytes: int | None = None) -> Resident:
        """Hold ``state`` (replacing the held one, keeping its caches), then keep within the budget.

        ``content_bytes``: what the content costs in memory; ``None`` scales the held entry's charge
        with the new content size (a new version of the same document).
        """
        with self._lock:
            entry = self._entries.get(doc_id)
            if content_bytes is None:
                content_bytes = _scaled(entry, state)
            if entry is None:
                entry = self._entries[doc_id] = Resident(state, content_bytes)
            else:
                if entry.state.content is not state.content:
                    entry.counts = None
                entry.state, entry.content_bytes = state, content_bytes
                self._entries.move_to_end(doc_id)
            self._recount(entry)
        self.settle()
        return entry

    def drop(self, doc_id: str) -> Resident | None:
        with self._lock:
            entry = self._entries.pop(doc_id, None)
            if entry is not None:
                self._total -= entry.counted
            return entry

    def _recount(self, entry: Resident) -> None:
        charged = entry.charged
        self._total += charged - entry.counted
        entry.counted = charged

    @contextmanager
    def pinned(self, doc_id: str) -> Iterator[None]:
        """Never evict ``doc_id`` inside this block (a write in progress)."""
        with self._lock:
            self._pins[doc_id] = self._pins.get(doc_id, 0) + 1
        try:
            yield
        finally:
            with self._lock:
                left = self._pins[doc_id] - 1
                if left:
                    self._pins[doc_id] = left
                else:
                    del self._pins[doc_id]
            self.settle()

    def settle(self, doc_id: str | None = None) -> None:
        """Count ``doc_id``'s charge again (its caches grew), then drop least recently used entries
        until the charges fit the budget. Costs nothing more while they fit.

        The most recently used entry and pinned ones stay, even alone over the budget (a document
        bigger than the budget is served, and dropped as soon as another one is used).
        """
        dropped: list[tuple[str, Resident]] = []
        with self._lock:
            held = self._entries.get(doc_id) if doc_id is not None else None
            if held is not None:
                self._recount(held)
            if self._total > self.budget_bytes:
                newest = next(reversed(self._entries), None)
                victims = []
                total = self._total
                for key in self._entries:  # least recently used first; stops as soon as it fits
                    if total <= self.budget_bytes:
                        break
                    if key == newest or key in self._pins:
                        continue
                    victims.append(key)
                    total -= self._entries[key].counted
                for key in victims:
                    entry = self._entries.pop(key)
                    self._total -= entry.counted
                    dropped.append((key, entry))
                self.evictions += len(dropped)
        if self._on_evict is not None:
            for doc_id, entry in dropped:
                self._on_evict(doc_id, entry)
        if dropped:
            freed = sum(entry.charged for _, entry in dropped)
            del dropped
            with self._lock:
                self._freed += freed
                trim = self._freed >= _TRIM_EVERY_BYTES
                if trim:
                    self._freed = 0
            if trim:
                release_free_memory()


def _scaled(entry: Resident | None, state: DocState) -> int:
    size = state.meta.content_size_bytes
    if entry is None or entry.state.meta.content_size_bytes <= 0:
        return size * 2
    ratio = entry.content_bytes / entry.state.meta.content_size_bytes
    return int(size * ratio)
