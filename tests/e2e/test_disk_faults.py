"""Disk faults: a write that meets ENOSPC or EIO fails with ``storage-write-failed`` and changes nothing
(memory, every byte on disk, the version); reads keep working; writes succeed again once the disk does.

A real small filesystem (a size-limited tmpfs, mounted when the machine allows it) is filled to
every level of free space a write crosses.
"""

from __future__ import annotations

import errno
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from schemadoc.config import Settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.app import create_service
from schemadoc.service import DocumentService

REPO = Path(__file__).resolve().parents[2]
BOOK = REPO / "schemas" / "book.schema.json"


def open_service(storage_dir: Path) -> DocumentService:
    return create_service(Settings(schema_path=BOOK, storage_dir=storage_dir))


def close_service(service: DocumentService) -> None:
    close = getattr(service, "close", None)
    if callable(close):
        close()


def disk_state(storage_dir: Path) -> dict[str, bytes]:
    """Every byte a reader could see: each file but temporaries and lock files, by relative path."""
    state: dict[str, bytes] = {}
    for path in sorted(storage_dir.rglob("*")):
        if path.is_file() and not path.name.endswith((".tmp", ".lock")):
            state[str(path.relative_to(storage_dir))] = path.read_bytes()
    return state


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
    """A filler file taking all the free space but ``leave`` bytes (rounded to the filesystem's blocks)."""
    filler = disk / "filler.bin"
    filler.unlink(missing_ok=True)
    stats = os.statvfs(disk)
    size = max(0, stats.f_bavail * stats.f_frsize - leave)
    with filler.open("wb") as file:
        chunk = b"\0" * (1 << 20)
        while size > 0:
            try:
                size -= file.write(chunk[:size])
            except OSError as error:
                assert error.errno == errno.ENOSPC
                break
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
        filler.unlink()
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
