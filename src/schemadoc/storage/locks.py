"""Per-document write locks of the files and memory stores: a thread lock, then ``flock`` for other processes."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from schemadoc.storage.base import check_doc_id, lock_timeout
from schemadoc.storage.layout import write_failed

__all__ = ["DocumentLock", "WriteLocks"]

_POLL_MIN_SECONDS = 0.001
_POLL_MAX_SECONDS = 0.05


class DocumentLock:
    """Re-entrant per-document lock: an ``RLock`` for threads, then ``flock`` on ``path`` for processes
    (none without a path: the memory store).

    ``flock`` locks belong to an open file description, so the process takes it once (depth 0
    → 1) and re-entry only counts. The OS drops it when the process dies. Without ``create`` (a
    reader that writes nothing) the lock file is opened read-only and never made: where it is
    missing, no writer holds it, and only the thread lock is taken.
    """

    def __init__(self, path: Path | None, *, create: bool = True) -> None:
        self._path = path
        self._create = create
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None
        self.users = 0
        """The threads holding it or waiting for it (counted by :class:`WriteLocks`, under its guard)."""

    def acquire(self, timeout: float) -> bool:
        """True once held; False when ``timeout`` seconds passed. Raises :exc:`OSError` (lock file)."""
        deadline = time.monotonic() + max(timeout, 0.0)
        if not (self._thread_lock.acquire(timeout=timeout) if timeout > 0 else self._thread_lock.acquire(False)):
            return False
        if self._depth > 0 or self._path is None:
            self._depth += 1
            return True
        try:
            flags = os.O_RDWR | os.O_CREAT if self._create else os.O_RDONLY
            fd = os.open(self._path, flags, 0o644)
        except FileNotFoundError:
            if self._create:
                self._thread_lock.release()
                raise
            self._depth = 1
            return True
        except OSError:
            self._thread_lock.release()
            raise
        delay = _POLL_MIN_SECONDS
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    os.close(fd)
                    self._thread_lock.release()
                    return False
                time.sleep(min(delay, remaining))
                delay = min(delay * 2, _POLL_MAX_SECONDS)
            except OSError:
                os.close(fd)
                self._thread_lock.release()
                raise
        self._fd = fd
        self._depth = 1
        return True

    def release(self) -> None:
        """Release once; the last release of the holding thread drops the ``flock`` and closes the file."""
        self._depth -= 1
        if self._depth == 0 and self._fd is not None:
            fd, self._fd = self._fd, None
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)
        self._thread_lock.release()


class WriteLocks:
    """A store's write locks: one :class:`DocumentLock` per document, made when a thread wants it and dropped when
    none holds or waits for it (a lock kept for every document ever written grew with the store: three objects a
    document for the interpreter's collections to walk)."""

    def __init__(self, lock_file: Callable[[str], Path | None], *, create: bool = True) -> None:
        self._lock_file = lock_file
        self._create = create
        self._locks: dict[str, DocumentLock] = {}
        self._guard = threading.Lock()

    @contextmanager
    def hold(self, doc_id: str, timeout: float) -> Iterator[None]:
        """The document's lock for the block, polled until ``timeout`` (``DocumentStore.write_lock``); also
        ``storage-write-failed`` when the lock file cannot be opened."""
        doc_id = check_doc_id(doc_id)
        with self._guard:
            lock = self._locks.get(doc_id)
            if lock is None:
                lock = self._locks[doc_id] = DocumentLock(self._lock_file(doc_id), create=self._create)
            lock.users += 1
        try:
            try:
                acquired = lock.acquire(timeout)
            except OSError as error:
                raise write_failed(doc_id, "opening the lock file", error) from None
            if not acquired:
                raise lock_timeout(doc_id, timeout)
            try:
                yield
            finally:
                lock.release()
        finally:
            with self._guard:
                lock.users -= 1
                if lock.users == 0:
                    del self._locks[doc_id]
