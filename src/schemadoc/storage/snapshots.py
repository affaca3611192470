"""Snapshots of the files store: ``{id}.json`` and the meta file that describes it, switched together.

A snapshot is written under a fresh token: ``{id}.{token}.tmp`` (the content) and
``{id}.{token}.meta.tmp`` (its meta), both fsynced, then renamed over ``{id}.json`` and
``{id}.meta.json`` in that order. A crash between the two renames leaves the meta tmp without
its content tmp: recovery (:func:`finish_or_discard`) then completes the switch. A meta tmp whose
content tmp still exists was never switched, and both are discarded. So ``{id}.json`` and the
meta file always describe the same version, whatever the instant of a crash.
"""

from __future__ import annotations

import logging
import os
import secrets
from dataclasses import replace
from pathlib import Path

import orjson

from schemadoc.errors import SchemaDocError
from schemadoc.storage import disk
from schemadoc.storage.base import DocumentMeta, document_not_found
from schemadoc.storage.layout import Paths, read_failed, reason

__all__ = ["SwitchIncomplete", "finish_or_discard", "meta_bytes", "publish", "read_meta_file"]

log = logging.getLogger("schemadoc.storage.files")

_RETIRE_ABOVE_BYTES = 8 << 20  # snapshots this big are unlinked in the background after a switch


class SwitchIncomplete(OSError):
    """The snapshot was renamed into place but its meta was not: they disagree until recovery completes it."""


def meta_bytes(meta: DocumentMeta, journal_offset: int) -> bytes:
    """The meta file: the snapshot's meta (``version == snapshot_version``) and where its journal line ends."""
    data = {**meta.to_dict(), "journal_offset": journal_offset}
    return orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE)


def _parse_meta(doc_id: str, data: bytes, name: str) -> tuple[DocumentMeta, int]:
    try:
        parsed = orjson.loads(data)
        meta = DocumentMeta.from_dict(parsed)
    except ValueError as error:  # orjson.JSONDecodeError is a ValueError
        raise read_failed(doc_id, f"the meta file is invalid: {error}", name) from None
    if meta.doc_id != doc_id:
        raise read_failed(doc_id, f"the meta file names document {meta.doc_id!r}", name)
    offset = parsed.get("journal_offset")
    # the meta file describes the snapshot: its version is the snapshot's
    return replace(meta, snapshot_version=meta.version), offset if isinstance(offset, int) else 0


def read_meta_file(doc_id: str, paths: Paths) -> tuple[DocumentMeta, int, tuple[int, int, int]]:
    """The snapshot's meta, the journal offset after its version and the file's key (inode, mtime, size).

    Raises ``document-not-found`` and ``storage-read-failed`` (content without meta, unreadable meta).
    """
    try:
        with open(paths.meta, "rb") as file:
            status = os.fstat(file.fileno())
            data = file.read()
    except FileNotFoundError:
        if paths.content.exists():
            raise read_failed(doc_id, "the content file has no meta file", paths.content.name,
                              paths.meta.name) from None
        raise document_not_found(doc_id) from None
    except OSError as error:
        raise read_failed(doc_id, f"cannot read the meta file: {reason(error)}", paths.meta.name) from None
    meta, offset = _parse_meta(doc_id, data, paths.meta.name)
    return meta, offset, (status.st_ino, status.st_mtime_ns, status.st_size)


def publish(paths: Paths, token: str, meta: DocumentMeta, journal_offset: int, *, sync_directory: bool) -> None:
    """Switch to the snapshot in ``{id}.{token}.tmp`` described by ``meta``; the caller holds the write lock.

    Raises :exc:`OSError`; then the old snapshot stays (or the switch completes at recovery when
    the crash-safe point, the content rename, was passed).
    """
    meta_tmp = paths.snapshot_meta_tmp(token)
    disk.write_synced(meta_tmp, meta_bytes(meta, journal_offset))
    retired = _retire(paths) if meta.content_size_bytes >= _RETIRE_ABOVE_BYTES else None
    try:
        os.replace(paths.snapshot_tmp(token), paths.content)
    except OSError:
        disk.remove_quietly(meta_tmp, *([retired] if retired else []))
        raise
    try:
        os.replace(meta_tmp, paths.meta)
    except OSError as error:
        raise SwitchIncomplete(error.errno, error.strerror) from None
    if retired is not None:
        disk.remove_in_background(retired)
    if sync_directory:
        disk.fsync_directory(paths.directory)


def _retire(paths: Paths) -> Path | None:
    """A second name for the snapshot about to be replaced, so that the rename does not free it."""
    retired = paths.directory / f".retired-{secrets.token_hex(8)}.tmp"
    try:
        os.link(paths.content, retired)
    except OSError:
        return None
    return retired


def finish_or_discard(paths: Paths) -> list[str]:
    """Complete or take back snapshot switches a crash interrupted; the caller holds the write lock.

    Returns the names of the temporary files removed or renamed.
    """
    done: list[str] = []
    for meta_tmp in sorted(paths.directory.glob(f"{paths.doc_id}.*.meta.tmp")):
        token = meta_tmp.name[len(paths.doc_id) + 1: -len(".meta.tmp")]
        content_tmp = paths.snapshot_tmp(token)
        if content_tmp.exists() or not paths.meta.exists():
            disk.remove_quietly(meta_tmp, content_tmp)
        else:  # the content was renamed: its meta must follow
            try:
                _parse_meta(paths.doc_id, meta_tmp.read_bytes(), meta_tmp.name)
                os.replace(meta_tmp, paths.meta)
                log.warning("document %s: a snapshot switch interrupted by a crash was completed", paths.doc_id)
            except (OSError, SchemaDocError):
                disk.remove_quietly(meta_tmp)
        done.append(meta_tmp.name)
    return done
