"""The format version of a files store's directory, recorded in ``{storage_dir}/schemadoc-store.json``.

Format 1 is the layout of :mod:`~schemadoc.storage.layout`. A directory without the marker was written
before formats were recorded, and is format 1. :func:`settle` runs when a store opens, under an
exclusive ``flock`` on the directory itself (processes opening it at once take turns, and all of them
find the one format the first one recorded):

- a marker of a newer format than :data:`CURRENT_FORMAT` is refused with ``store-format-unsupported``
  before anything in the directory is touched;
- an older format is upgraded one step at a time (:data:`UPGRADES`: the step from format *n* is the
  function ``UPGRADES[n]``), the marker rewritten after each step, so an interrupted upgrade resumes
  at the step it was in;
- a directory without the marker gets one (atomically: written to a temporary file, synced, renamed).

A later format is one new function in :data:`UPGRADES` and :data:`CURRENT_FORMAT` one higher.
"""

from __future__ import annotations

import fcntl
import logging
import os
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Final

import orjson

from schemadoc import __version__
from schemadoc.errors import SchemaDocError
from schemadoc.storage import disk

__all__ = ["CURRENT_FORMAT", "FORMAT_FILE", "UPGRADES", "FormatCheck", "check_readable", "read_format", "refuse_newer",
           "settle"]

log = logging.getLogger(__name__)

FORMAT_FILE: Final = "schemadoc-store.json"
"""The marker's name in the storage directory (never a document's: ids are 26 letters and digits)."""

CURRENT_FORMAT: Final = 1
"""The store format this server writes."""

UPGRADES: Final[Mapping[int, Callable[[Path], None]]] = {}
"""``UPGRADES[n](directory)`` turns a format-``n`` directory into format ``n + 1``, under the directory's lock;
it must be safe to run again on a directory it already upgraded in part (a crash in the middle)."""


@dataclass(frozen=True)
class FormatCheck:
    """What :func:`settle` found and left: ``found`` None for a directory without a marker."""

    found: int | None
    format: int
    upgraded: bool


def refuse_newer(found: int, where: str, details: Mapping[str, object]) -> SchemaDocError:
    """``store-format-unsupported``: ``where`` holds format ``found``, newer than this server knows."""
    return SchemaDocError(
        "store-format-unsupported",
        f"{where} has store format {found}; this schemadoc {__version__} knows formats up to {CURRENT_FORMAT}.",
        {**details, "found_format": found, "known_format": CURRENT_FORMAT, "server_version": __version__},
        remediation="Run the newer schemadoc that wrote it, or restore the backup taken before the upgrade "
                    "(docs/deployment.md); nothing was changed.")


def _unreadable(directory: Path, why: str) -> SchemaDocError:
    return SchemaDocError(
        "storage-read-failed", f"The store format marker {directory / FORMAT_FILE} cannot be read: {why}.",
        {"storage_dir": str(directory), "reason": why, "file": FORMAT_FILE},
        remediation=f"Restore {FORMAT_FILE} from a backup, or write {{\"format\": {CURRENT_FORMAT}}} into it "
                    "if the directory was written by this version.")


def read_format(directory: Path) -> int | None:
    """The format recorded in ``directory`` (None: no marker). Raises ``storage-read-failed`` for a damaged
    marker and :exc:`OSError` when it cannot be read."""
    try:
        data = (directory / FORMAT_FILE).read_bytes()
    except FileNotFoundError:
        return None
    try:
        found = orjson.loads(data).get("format")
    except (orjson.JSONDecodeError, AttributeError):
        raise _unreadable(directory, "it is not a JSON object") from None
    if type(found) is not int or found < 1:
        raise _unreadable(directory, f"its \"format\" is {found!r}, not a positive integer")
    return found


def _record(directory: Path, version: int) -> None:
    """Write the marker atomically: a synced temporary file renamed over it, then the directory synced."""
    body = orjson.dumps({"format": version, "written_by": f"schemadoc {__version__}",
                         "recorded_at": datetime.now(UTC).isoformat(timespec="seconds")},
                        option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)
    temporary = directory / f"{FORMAT_FILE}.{secrets.token_hex(8)}.tmp"
    try:
        disk.write_synced(temporary, body, exclusive=True)
        os.replace(temporary, directory / FORMAT_FILE)
    except OSError:
        disk.remove_quietly(temporary)
        raise
    disk.fsync_directory(directory)


def settle(directory: Path) -> FormatCheck:
    """Bring ``directory`` (which exists) to :data:`CURRENT_FORMAT` or refuse it (module docstring).

    Raises ``store-format-unsupported`` (nothing touched), ``storage-read-failed`` (a damaged marker) and
    :exc:`OSError` (the caller reports it as the directory's failure).
    """
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # released when fd closes
        found = read_format(directory)
        if found is not None and found > CURRENT_FORMAT:
            raise refuse_newer(found, f"The storage directory {directory}", {"storage_dir": str(directory)})
        at = 1 if found is None else found
        while at < CURRENT_FORMAT:
            UPGRADES[at](directory)
            at += 1
            if at < CURRENT_FORMAT:  # the last step's marker is written below
                _record(directory, at)
            log.warning("storage directory %s: upgraded from store format %d to %d", directory, at - 1, at)
        if found != CURRENT_FORMAT:
            _record(directory, CURRENT_FORMAT)
            log.info("storage directory %s: store format %d recorded in %s (found %s)", directory, CURRENT_FORMAT,
                     FORMAT_FILE, "no marker" if found is None else f"format {found}")
        return FormatCheck(found, CURRENT_FORMAT, found != CURRENT_FORMAT)
    finally:
        os.close(fd)


def check_readable(directory: Path) -> int:
    """The format of ``directory`` for a command that only reads it (``replay``): nothing is written.

    Raises ``store-format-unsupported`` for a newer format and for an older one that needs an upgrade
    first (a server start upgrades it), ``storage-read-failed`` for a damaged marker.
    """
    try:
        found = read_format(directory)
    except OSError as error:
        raise _unreadable(directory, error.strerror or str(error)) from None
    at = 1 if found is None else found
    if at > CURRENT_FORMAT:
        raise refuse_newer(at, f"The storage directory {directory}", {"storage_dir": str(directory)})
    if at < CURRENT_FORMAT:
        raise SchemaDocError(
            "store-format-unsupported",
            f"The storage directory {directory} has store format {at}; this command reads format {CURRENT_FORMAT} "
            "only and does not upgrade.",
            {"storage_dir": str(directory), "found_format": at, "known_format": CURRENT_FORMAT,
             "server_version": __version__},
            remediation="Start `schemadoc serve` on it once (that upgrades it), then run this command again.")
    return at
