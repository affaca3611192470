"""Persisted history checkpoints of the files store: ``checkpoints/{doc_id}/{version}.json``.

A cache for rebuilding past versions, not a commit: written through a temporary file and a
rename but not fsynced (a torn one is detected by the reader and skipped), and bounded by
:func:`~schemadoc.storage.base.keep_checkpoints` after every write.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterable
from pathlib import Path

from schemadoc.storage import disk
from schemadoc.storage.base import keep_checkpoints

__all__ = ["CheckpointDirectory"]


class CheckpointDirectory:
    """The checkpoints of one document."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory

    def versions(self) -> list[int]:
        try:
            names = os.listdir(self.directory)
        except OSError:
            return []
        return [int(name[:-5]) for name in names if name.endswith(".json") and name[:-5].isdigit()]

    def write(self, version: int, content: bytes | Iterable[bytes]) -> None:
        """Write the checkpoint from its bytes, or from pieces of them written as they come.

        Raises :exc:`OSError`, and whatever drawing a piece raises (then nothing is left behind).
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        temporary = self.directory / f"{version}.json.tmp"
        try:
            with open(temporary, "wb") as file:
                for piece in (content,) if isinstance(content, bytes) else content:
                    file.write(piece)
        except BaseException:
            disk.remove_quietly(temporary)
            raise
        disk.replace(temporary, self.directory / f"{version}.json")
        versions = self.versions()
        for stale in set(versions) - set(keep_checkpoints(versions)):
            disk.remove_quietly(self.directory / f"{stale}.json")

    def read(self, at_most: int) -> tuple[int, bytes] | None:
        for version in sorted((v for v in self.versions() if v <= at_most), reverse=True):
            try:
                return version, disk.read_bytes(self.directory / f"{version}.json")
            except OSError:
                continue
        return None

    def size_bytes(self) -> int:
        total = 0
        for version in self.versions():
            status = disk.stat_or_none(self.directory / f"{version}.json")
            total += status.st_size if status is not None else 0
        return total

    def remove(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
