"""Disk faults: a write that meets ENOSPC or EIO fails with ``storage-write-failed`` and changes nothing
(memory, every byte on disk, the version); reads keep working; writes succeed again once the disk does.

Two ways in: every OS call a write makes is failed in turn (EIO and ENOSPC injected at the ``os``
functions the store calls, whatever module makes them), and a real small filesystem (a size-limited
tmpfs, mounted when the machine allows it) is filled to every level of free space a write crosses.
A fault before the journal line is durable refuses the write; a fault after it (the inline snapshot,
a history checkpoint) only leaves the snapshot behind the journal, and the write stands.
"""

from __future__ import annotations

import builtins
import errno
import os
import shutil
import subprocess
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from schemadoc.config import Settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.app import create_service
from schemadoc.service import DocumentService

REPO = Path(__file__).resolve().parents[2]
BOOK = REPO / "schemas" / "book.schema.json"
_WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND


def open_service(storage_dir: Path) -> DocumentService:
    return create_service(Settings(schema_path=BOOK, storage_dir=storage_dir))


def close_service(service: DocumentService) -> None:
    close = getattr(service, "close", None)
    if callable(close):
        close()


def disk_state(storage_dir: Path) -> dict[str, bytes]:
    """Every byte a reader could see: each file but temporaries, lock files and the search index (derived from the
    documents, rebuilt from them), by relative path."""
    state: dict[str, bytes] = {}
    for path in sorted(storage_dir.rglob("*")):
        if path.is_file() and not path.name.endswith((".tmp", ".lock")) and not path.name.startswith("search-index."):
            state[str(path.relative_to(storage_dir))] = path.read_bytes()
    return state


class Faults:
    """Counts the OS calls that write below ``root`` and fails the ``fail_at``-th one with ``error``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, root: Path) -> None:
        self.root = str(root.resolve())
        self.calls: list[tuple[str, str]] = []
        self.fail_at: int | None = None
        self.fail_below: str | None = None
        self.error = errno.EIO
        self.failed: tuple[str, str] | None = None
        for name in ("write", "pwrite", "fsync", "fdatasync", "ftruncate"):
            if hasattr(os, name):
                self._wrap(monkeypatch, os, name, lambda *args: _fd_path(args[0]))
        for name in ("replace", "rename", "link"):
            self._wrap(monkeypatch, os, name, lambda *args: os.fspath(args[1]))
        self._wrap(monkeypatch, os, "open", lambda *args: os.fspath(args[0])
                   if len(args) > 1 and args[1] & _WRITE_FLAGS else None)
        self._wrap(monkeypatch, builtins, "open", lambda *args: os.fspath(args[0])
                   if isinstance(args[0], (str, os.PathLike)) and len(args) > 1 and set(str(args[1])) & set("wax+")
                   else None)

    def _wrap(self, monkeypatch: pytest.MonkeyPatch, owner: Any, name: str,
              path_of: Callable[..., str | None]) -> None:
        real = getattr(owner, name)

        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                path = path_of(*args)
            except (TypeError, IndexError, ValueError, OSError):
                path = None
            if path is not None and os.path.abspath(path).startswith(self.root):
                self.calls.append((name, path))
                if (self.fail_at is not None and len(self.calls) == self.fail_at) or (
                        self.fail_below is not None and self.fail_below in path):
                    self.failed = (name, path)
                    raise OSError(self.error, os.strerror(self.error), path)
            return real(*args, **kwargs)

        monkeypatch.setattr(owner, name, wrapper)

    def arm(self, at: int | None, error: int = errno.EIO, *, below: str | None = None) -> None:
        self.calls, self.fail_at, self.error, self.failed, self.fail_below = [], at, error, None, below


def _fd_path(fd: Any) -> str | None:
    return os.readlink(f"/proc/self/fd/{fd}") if isinstance(fd, int) else None


def _write(service: DocumentService, doc_id: str, version: int, text: str) -> int:
    return service.update_node(doc_id, "/title", text, version).version


def _check_unchanged(service: DocumentService, storage_dir: Path, doc_id: str, before: dict[str, bytes],
                     version: int, title: str) -> None:
    assert disk_state(storage_dir) == before
    assert service.version_of(doc_id) == version
    assert service.read_node(doc_id, "/title").node == title
    reopened = open_service(storage_dir)
    try:
        assert reopened.version_of(doc_id) == version
        assert reopened.read_node(doc_id, "/title").node == title
    finally:
        close_service(reopened)


@pytest.mark.parametrize("error", [errno.EIO, errno.ENOSPC], ids=["EIO", "ENOSPC"])
def test_a_write_whose_any_os_call_fails_changes_nothing_or_completes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: int
) -> None:
    storage_dir = tmp_path / "data"
    service = open_service(storage_dir)
    doc_id, *_ = service.create_document()
    version, title = _write(service, doc_id, 1, "start"), "start"
    faults = Faults(monkeypatch, storage_dir)
    faults.arm(None)
    _write(service, doc_id, version, "counted")  # how many OS calls a write makes
    version, title = version + 1, "counted"
    calls_per_write = len(faults.calls)
    assert calls_per_write > 0
    failures = 0
    for at in range(1, calls_per_write + 1):
        before = disk_state(storage_dir)
        faults.arm(at, error)
        try:
            version = _write(service, doc_id, version, f"fault at call {at}")
            title = f"fault at call {at}"
        except SchemaDocError as refused:
            failed = faults.failed
            faults.arm(None)
            failures += 1
            assert refused.code == "storage-write-failed", f"fault in {failed}: {refused.code} {refused.message}"
            assert refused.details["doc_id"] == doc_id
            _check_unchanged(service, storage_dir, doc_id, before, version, title)
        else:
            faults.arm(None)  # the fault hit work off the write path: the write stands, on disk too
            reopened = open_service(storage_dir)
            try:
                assert reopened.read_node(doc_id, "/title").node == title
            finally:
                close_service(reopened)
        faults.arm(None)
        version = _write(service, doc_id, version, f"after call {at}")
        title = f"after call {at}"
    assert failures > 0, "no fault reached the write path"
    close_service(service)


def test_a_failing_checkpoint_write_leaves_the_write_standing_and_history_readable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    storage_dir = tmp_path / "data"
    service = open_service(storage_dir)
    doc_id, *_ = service.create_document()
    faults = Faults(monkeypatch, storage_dir)
    faults.arm(None, errno.EIO, below="checkpoints")
    version = 1
    for number in range(300):  # crosses the persisted checkpoint of version 256
        version = _write(service, doc_id, version, f"title {number}")
    assert faults.failed is not None, "no checkpoint was attempted"
    faults.arm(None)
    assert service.read_version(doc_id, 256)["title"] == "title 254"
    close_service(service)
    reopened = open_service(storage_dir)
    try:
        assert reopened.version_of(doc_id) == version == 301
        assert reopened.read_version(doc_id, 257)["title"] == "title 255"
    finally:
        close_service(reopened)


# -- a real small filesystem ------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs of its own, or a visible skip where the machine does not let us mount one."""
    mount = tmp_path / f"disk-{uuid.uuid4().hex[:8]}"
    mount.mkdir()
    if shutil.which("mount") is None or os.geteuid() != 0:
        pytest.skip("a real full disk needs root to mount a size-limited tmpfs; the injected faults cover it")
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount)],
                          capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); the injected faults cover it")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, check=False)


def _fill(disk: Path, leave: int) -> Path:
    """A filler file taking all the free space but ``leave`` bytes (rounded to the filesystem's blocks).

    The one filler is shrunk or grown in place, never removed and made again: the search index's thread writes on
    the same disk whenever it likes, and took the space freed between a removal and a new file (whose creation
    then failed for want of room). Writes are unbuffered OS calls: a buffered file that met ENOSPC kept the bytes it
    could not write and raised again when it was closed."""
    filler = disk / "filler.bin"
    descriptor = os.open(filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        stats = os.statvfs(disk)
        size = os.fstat(descriptor).st_size
        target = max(0, size + stats.f_bavail * stats.f_frsize - leave)
        if target <= size:
            os.ftruncate(descriptor, target)
            return filler
        remaining = target - size
        chunk = b"\0" * (1 << 20)
        while remaining > 0:
            try:
                remaining -= os.write(descriptor, chunk[:remaining])
            except OSError as error:
                assert error.errno == errno.ENOSPC
                break
    finally:
        os.close(descriptor)
    return filler


def _chapter(number: int, text: str) -> dict[str, Any]:
    return {"id": f"ch-{number}", "title": f"Chapter {number}",
            "sections": [{"title": "S", "paragraphs": [{"text": text}, {"text": text}], "sections": []}]}


def test_a_full_disk_refuses_writes_changing_nothing_until_space_returns(small_disk: Path) -> None:
    storage_dir = small_disk / "data"
    service = open_service(storage_dir)
    doc_id, *_ = service.create_document()
    version = 1
    text = "x" * 19_000  # a chapter of ~40 KB: its journal line (and, inline, its snapshot) needs room
    refused = accepted = 0
    for number, leave in enumerate(range(0, 160_000, 8_192)):
        filler = _fill(small_disk, leave)
        before = disk_state(storage_dir)
        content_before = service.read_node(doc_id, "/chapters").node
        try:
            version = service.create_node(doc_id, "/chapters/-", _chapter(number, text), version).version
            accepted += 1
        except SchemaDocError as error:
            refused += 1
            assert error.code == "storage-write-failed", error.message
            assert disk_state(storage_dir) == before
            assert service.version_of(doc_id) == version
            assert service.read_node(doc_id, "/chapters").node == content_before
        os.truncate(filler, 0)  # room again (the file stays: making it again needs room the index may have taken)
        version = service.update_node(doc_id, "/title", f"room again after {leave}", version).version
    assert refused > 0 and accepted > 0, (refused, accepted)
    served = service.read_node(doc_id, "/").node
    close_service(service)
    reopened = open_service(storage_dir)
    try:
        assert reopened.version_of(doc_id) == version
        assert reopened.read_node(doc_id, "/").node == served
    finally:
        close_service(reopened)
