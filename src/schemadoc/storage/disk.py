"""The file operations the files store's modules share: synced writes and appends, stat, removal.

Each function raises :exc:`OSError` as the OS reports it (tests inject disk faults at the
:mod:`os` functions these and the other modules call).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable
from pathlib import Path

__all__ = ["append_synced", "fsync_directory", "read_from", "remove_in_background", "remove_quietly", "stat_or_none",
           "write_all", "write_synced"]


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


_SYNC_EVERY_BYTES = 8 << 20


def write_synced(path: Path, data: bytes | Iterable[bytes], *, exclusive: bool = False) -> int:
    """Write ``path`` whole from ``data`` or its pieces as they come (never holding them all), fsync it;
    returns its size (``exclusive``: fail if it exists).

    Every 8 MiB the data written so far is synced, so the disk never has a whole big file to
    flush at once in front of other files' fsyncs (a journal append waiting behind it).
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | (os.O_EXCL if exclusive else os.O_TRUNC), 0o644)
    try:
        size = unsynced = 0
        for piece in (data,) if isinstance(data, bytes) else data:
            if unsynced >= _SYNC_EVERY_BYTES:  # before the next piece: the last one is synced by fsync
                os.fdatasync(fd)
                unsynced = 0
            write_all(fd, piece)
            size += len(piece)
            unsynced += len(piece)
        os.fsync(fd)
        return size
    finally:
        os.close(fd)


def append_synced(path: Path, line: bytes, expected_size: int | None = None) -> int:
    """Append ``line`` and fdatasync; returns the size before.

    ``expected_size``: bytes beyond it (a torn line left by a writer that died) are cut off
    first. On failure the file is truncated back to the size before, then the error is raised.
    """
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        size = os.fstat(fd).st_size
        if expected_size is not None and size > expected_size:
            os.ftruncate(fd, expected_size)
            size = expected_size
        try:
            write_all(fd, line)
            os.fdatasync(fd)
        except OSError:
            try:
                os.ftruncate(fd, size)
                os.fdatasync(fd)
            except OSError:
                pass  # the reader ignores a line that does not end in a newline; recovery cuts it
            raise
        return size
    finally:
        os.close(fd)


def read_from(path: Path, offset: int) -> tuple[bytes, int, int]:
    """The bytes of ``path`` from ``offset`` to its end, with the file's inode and size."""
    with open(path, "rb") as file:
        status = os.fstat(file.fileno())
        if status.st_size <= offset:
            return b"", status.st_ino, status.st_size
        return os.pread(file.fileno(), status.st_size - offset, offset), status.st_ino, status.st_size


def stat_or_none(path: Path) -> os.stat_result | None:
    try:
        return os.stat(path)
    except FileNotFoundError:
        return None


def fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def remove_quietly(*paths: Path) -> bool:
    """Remove the files that exist; True when at least one was removed."""
    removed = False
    for path in paths:
        try:
            os.unlink(path)
            removed = True
        except OSError:
            continue
    return removed


def remove_in_background(path: Path) -> None:
    """Unlink in a daemon thread: freeing a big file's blocks takes ~50 ms per 100 MB."""
    threading.Thread(target=remove_quietly, args=(path,), name="schemadoc-unlink", daemon=True).start()
