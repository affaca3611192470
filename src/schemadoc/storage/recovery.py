"""Start-up recovery of the files store, one document at a time (under its write lock).

- a creation that died before its meta file appeared (never acknowledged) is taken back;
- a snapshot switch a crash interrupted is completed or discarded (:mod:`.snapshots`);
- other temporary files are removed;
- a torn last journal line (never acknowledged) is cut off;
- a snapshot whose size disagrees with its meta, or a journal of the older format ahead of its
  meta, is rebuilt by replaying the whole journal.

Nothing else needs rolling forward: the journal is the truth, and reading a document replays
the entries after its snapshot.
"""

from __future__ import annotations

import logging
from dataclasses import replace

import orjson

from schemadoc.ops.journal import replay
from schemadoc.storage import disk, snapshots
from schemadoc.storage.base import DocumentMeta
from schemadoc.storage.journal import find_line_end, read_entries
from schemadoc.storage.layout import Corrupt, Paths, reason, write_failed

__all__ = ["clean_temporaries", "rebuild", "take_back_abandoned_creation"]

log = logging.getLogger("schemadoc.storage.files")


def take_back_abandoned_creation(paths: Paths) -> bool:
    """Remove a creation that died before renaming its meta file (its commit point); True if there was one.

    Only a creation leaves ``{id}.meta.tmp`` without ``{id}.meta.json``.
    """
    if not (paths.meta_tmp.exists() and not paths.meta.exists()):
        return False
    removed = [path.name for path in (paths.content, paths.journal, paths.content_tmp, paths.meta_tmp)
               if disk.remove_quietly(path)]
    log.warning("document %s: creation interrupted before it completed; removed %s", paths.doc_id,
                ", ".join(removed))
    return True


def clean_temporaries(paths: Paths) -> list[str]:
    """Complete or discard interrupted snapshot switches, then remove every other temporary file,
    history checkpoints' included."""
    names = snapshots.finish_or_discard(paths)
    for path in paths.temporaries():
        if disk.remove_quietly(path):
            names.append(path.name)
    for path in sorted(paths.checkpoints.glob("*.json.tmp")):  # a cache: an unfinished one is simply dropped
        if disk.remove_quietly(path):
            names.append(f"{path.parent.parent.name}/{path.parent.name}/{path.name}")
    return sorted(set(names))


def rebuild(paths: Paths, meta: DocumentMeta) -> DocumentMeta:
    """Replay the whole journal and make its last version the snapshot; returns the new snapshot meta.

    ``meta`` is the meta file's (for the fields the journal does not hold). Raises
    :class:`Corrupt` when the journal cannot rebuild the document and ``storage-write-failed``.
    """
    doc_id = paths.doc_id
    try:
        entries, _ = read_entries(paths.journal, since=0, upto=None)
    except OSError as error:
        raise Corrupt(f"cannot read the journal: {reason(error)}", paths.journal.name) from None
    try:
        content = orjson.dumps(replay(entries, copy=False))
    except (ValueError, TypeError) as error:
        raise Corrupt(f"the journal cannot rebuild the document: {error}", paths.journal.name) from None
    deleted_at = None
    for entry in entries:
        if entry.op == "delete_document":
            deleted_at = entry.at
        elif entry.op == "undelete_document":
            deleted_at = None
    last = entries[-1]
    rebuilt = replace(meta, version=last.version, snapshot_version=last.version, content_size_bytes=len(content),
                      deleted_at=deleted_at, modified_at=last.at if last.version > meta.version else meta.modified_at)
    token = snapshots.new_token()
    try:
        snapshots.write_content(paths.snapshot_tmp(token), content)
        snapshots.publish(paths, token, rebuilt, find_line_end(paths.journal, last.version, 0), sync_directory=True)
    except OSError as error:
        disk.remove_quietly(paths.snapshot_tmp(token), paths.snapshot_meta_tmp(token))
        raise write_failed(doc_id, "rebuilding the snapshot from the journal", error) from None
    return rebuilt
