"""The journal: one entry per version, each a strict RFC 6902 patch, and ``replay``.

A document's journal is its history. Version 1 is the whole initial document as one ``add``
at the root, and every later version is the patch that produced it, so replaying the journal
from nothing rebuilds any version. Entries are stored one per line (JSON Lines)::

    {"version": 2, "op": "update_node", "patch": [...], "at": "2025-01-01T12:00:00.000Z", "info": {...}}

``info.actor`` names who made the version (:attr:`JournalEntry.actor`); entries written before it
was recorded have none.

``version`` always comes first on the line, so a reader can skip entries without parsing
their (possibly large) patches: see :func:`peek_version`.

Patches are strict RFC 6902 (concrete indices, no ``-``), so any implementation replays them
identically; :func:`replay` uses ``jsonpatch``. Nothing here touches the disk.
"""

from __future__ import annotations

import copy as _copy
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import jsonpatch
import jsonpointer
import orjson

__all__ = ["OPS", "JournalEntry", "peek_version", "replay", "utc_now"]

OPS: frozenset[str] = frozenset({"create", "update_node", "create_node", "delete_node", "patch", "merge_patch",
                                 "revert", "delete_document", "undelete_document", "move_node"})
"""Every ``op`` a journal entry may record (what kind of write produced the version)."""

_FIELDS = ("version", "op", "patch", "at")
_VERSION_PREFIX = re.compile(rb'\{\s*"version"\s*:\s*([1-9][0-9]{0,17})\s*[,}]')


def utc_now() -> str:
    """The current time as ISO 8601 UTC with millisecond precision and ``Z``: ``2025-01-01T12:00:00.000Z``."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class JournalEntry:
    """One version of a document: the patch that produced it from the previous version.

    Raises :exc:`ValueError` on construction when ``version`` is not an integer >= 1, ``op``
    is not one of :data:`OPS`, ``patch`` is not a list of operation objects (each with string
    ``op`` and ``path``), ``at`` is not a string or ``info`` is not an object.

    ``delete_document`` and ``undelete_document`` entries carry an empty patch: the content
    does not change, the document's meta records the deletion.
    """

    version: int
    op: str
    patch: list[dict[str, Any]]
    at: str
    info: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if isinstance(self.version, bool) or not isinstance(self.version, int) or self.version < 1:
            raise ValueError(f"journal entry version must be an integer >= 1, got {self.version!r}")
        if self.op not in OPS:
            raise ValueError(f"journal entry op must be one of {sorted(OPS)}, got {self.op!r}")
        if not isinstance(self.patch, list):
            raise ValueError(f"journal entry patch must be a list, got {type(self.patch).__name__}")
        for index, operation in enumerate(self.patch):
            if not (isinstance(operation, dict) and isinstance(operation.get("op"), str)
                    and isinstance(operation.get("path"), str)):
                raise ValueError(f"journal entry patch[{index}] is not an RFC 6902 operation: {operation!r}")
        if not isinstance(self.at, str):
            raise ValueError(f"journal entry 'at' must be a string, got {type(self.at).__name__}")
        if not isinstance(self.info, dict):
            raise ValueError(f"journal entry info must be an object, got {type(self.info).__name__}")

    @property
    def actor(self) -> str | None:
        """Who made this version (``info.actor``: a token's name, a door or a command), ``None`` when unrecorded."""
        actor = self.info.get("actor")
        return actor if isinstance(actor, str) else None

    def to_dict(self) -> dict[str, Any]:
        """The entry as JSON data: ``version``, ``op``, ``patch``, ``at`` and ``info`` only when not empty."""
        data: dict[str, Any] = {"version": self.version, "op": self.op, "patch": self.patch, "at": self.at}
        if self.info:
            data["info"] = self.info
        return data

    def to_line(self) -> bytes:
        """One JSON line ending in ``b"\\n"``, ``version`` first (see :func:`peek_version`); :exc:`TypeError`
        (``orjson.JSONEncodeError``) when the patch or info holds a value JSON cannot represent."""
        return orjson.dumps(self.to_dict(), option=orjson.OPT_APPEND_NEWLINE)

    @classmethod
    def from_dict(cls, data: Any) -> JournalEntry:
        """The entry for JSON data as :meth:`to_dict` makes it (unknown members ignored); :exc:`ValueError` when
        a member is missing or has the wrong type."""
        if not isinstance(data, dict):
            raise ValueError(f"a journal entry must be a JSON object, got {type(data).__name__}")
        missing = [name for name in _FIELDS if name not in data]
        if missing:
            raise ValueError(f"journal entry lacks {', '.join(missing)}")
        return cls(version=data["version"], op=data["op"], patch=data["patch"], at=data["at"],
                   info=data.get("info", {}))

    @classmethod
    def from_line(cls, line: bytes) -> JournalEntry:
        """Parse one line written by :meth:`to_line` (the trailing newline optional); :exc:`ValueError` on
        anything else: invalid JSON, a torn line, missing or wrongly typed members."""
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError as error:
            raise ValueError(f"journal line is not JSON: {error}") from None
        return cls.from_dict(data)


def peek_version(line: bytes | memoryview) -> int | None:
    """The ``version`` of a journal line from its first 64 bytes, without parsing the patch; ``None`` when
    the line does not start like :meth:`JournalEntry.to_line` writes it (then use :meth:`JournalEntry.from_line`)."""
    match = _VERSION_PREFIX.match(bytes(line[:64]))
    return int(match.group(1)) if match else None


def replay(entries: Iterable[JournalEntry], *, upto: int | None = None, start: Any = None,
           start_version: int | None = None, copy: bool = True) -> Any:
    """Rebuild a document by applying each entry's patch in order (with ``jsonpatch``).

    From nothing (``start`` and ``start_version`` both ``None``) the entries begin at version 1; from a known
    version, ``start`` is the document and ``start_version`` its version (needed when the document is ``null``;
    otherwise the first entry sets the pace). Versions must be consecutive; ``upto`` stops after that version,
    without reading further. With ``copy`` (the default) neither ``start`` nor the entries are modified and the
    result shares nothing with them; ``copy=False`` is faster for entries and a start the caller throws away
    (a replayed document's containers may then be the entries' own patch values).

    Returns the document at the last version applied. Raises :exc:`ValueError` when versions are not
    consecutive or do not start where they should, when there is nothing to replay from nothing, when ``upto``
    lies outside the versions available, or when a patch does not apply (the message names the version).
    """
    if upto is not None and (isinstance(upto, bool) or not isinstance(upto, int) or upto < 1):
        raise ValueError(f"upto must be an integer >= 1, got {upto!r}")
    from_scratch = start is None and start_version is None
    base: int | None = 0 if from_scratch else start_version
    document = _copy.deepcopy(start) if copy else start
    if upto is not None and base is not None and upto < base:
        raise ValueError(f"cannot replay up to version {upto}: the start is already at version {base}")
    last = base
    for entry in entries:
        if upto is not None and last is not None and last >= upto:
            break
        expected = entry.version if last is None else last + 1
        if entry.version != expected:
            raise ValueError(f"journal versions are not consecutive: expected version {expected}, "
                             f"found version {entry.version}")
        patch = _copy.deepcopy(entry.patch) if copy else entry.patch
        try:
            document = jsonpatch.apply_patch(document, patch, in_place=True)
        except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException,
                KeyError, IndexError, TypeError, ValueError) as error:
            raise ValueError(f"the patch of version {entry.version} does not apply: {error}") from None
        last = entry.version
    if from_scratch and last == 0:
        raise ValueError("no journal entries to replay")
    if upto is not None and last is not None and last < upto:
        raise ValueError(f"cannot replay up to version {upto}: the journal ends at version {last}")
    return document
