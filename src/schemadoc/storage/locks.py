"""Per-document write locks of the files store: a thread lock, then ``flock`` for other processes."""

from __future__ import annotations

import fcntl
import os
import threading
import time
from pathlib import Path

__all__ = ["DocumentLock"]

_POLL_MIN_SECONDS = 0.001
_POLL_MAX_SECONDS = 0.05


class DocumentLock:
    """Re-entrant per-document lock: an ``RLock`` for threads, then ``flock`` for processes.

    ``flock`` locks belong to an open file description, so the process takes it once (depth 0
    → 1) and re-entry only counts. The OS drops it when the process dies.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None

    def acquire(self, timeout: float) -> bool:
        """True once held; False when ``timeout`` seconds passed. Raises :exc:`OSError` (lock file)."""
        deadline = time.monotonic() + max(timeout, 0.0)
        if timeout > 0:
            acquired = self._thread_lock.acquire(timeout=timeout)
        else:
            acquired = self._thread_lock.acquire(blocking=False)
        if not acquired:
            return False
        if self._depth > 0:
            self._depth += 1
            return True
        try:
            fd = os.open(self._path, os.O_RDWR | os.O_CREAT, 0o644)
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
