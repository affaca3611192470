"""What only the files store does: the directory, its layout, crash recovery and inter-process locks.

The behaviour every store shares is in the contract suite (tests/contract/test_storage_contract.py).
"""

from __future__ import annotations

import errno
import os
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from contract.storage import commit_patch, create_document, current_content, new_doc_id

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry, replay, utc_now
from schemadoc.storage import disk
from schemadoc.storage.base import DocumentMeta, Verdict, journal_line
from schemadoc.storage.files import FileDocumentStore
from schemadoc.storage.journal import Tail, fold
from schemadoc.storage.layout import Corrupt
from schemadoc.storage.store_format import FORMAT_FILE

SRC = Path(__file__).resolve().parents[2] / "src"


@pytest.fixture
def directory(tmp_path: Path) -> Path:
    return tmp_path / "documents"


@pytest.fixture
def store(directory: Path) -> FileDocumentStore:
    store = FileDocumentStore(directory)
    store.open()
    return store


def reopen(directory: Path) -> tuple[FileDocumentStore, Any]:
    """A new store on the same directory (a restarted server) and its recovery report."""
    store = FileDocumentStore(directory)
    return store, store.open()


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as file:
        file.write(data)


def journal_versions(path: Path) -> list[int]:
    return [orjson.loads(line)["version"] for line in path.read_bytes().splitlines()]


def a_document_at_version_2(store: FileDocumentStore) -> DocumentMeta:
    meta = create_document(store, {"title": "t", "items": ["a"]})
    return commit_patch(store, meta, [{"op": "add", "path": "/items/1", "value": "b"}])


def failing(original: Callable[..., Any], when: Callable[..., bool]) -> Callable[..., Any]:
    """``original``, except that it raises ENOSPC when ``when(*args)`` holds."""

    def call(*args: Any, **kwargs: Any) -> Any:
        if when(*args):
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(*args, **kwargs)

    return call


# -- the directory ---------------------------------------------------------------------------------


def test_open_creates_a_missing_storage_directory(directory: Path) -> None:
    assert not directory.exists()
    report = FileDocumentStore(directory).open()
    assert directory.is_dir()
    assert (report.removed_tmp, report.rolled_forward, report.corrupt) == ([], {}, {})


def test_open_fails_clearly_when_the_parent_is_a_regular_file(tmp_path: Path) -> None:
    parent = tmp_path / "a-file"
    parent.write_text("not a directory")
    with pytest.raises(SchemaDocError) as raised:
        FileDocumentStore(parent / "documents").open()
    assert raised.value.code == "storage-write-failed"
    assert raised.value.details["storage_dir"] == str(parent / "documents")
    assert raised.value.details["reason"]


def test_open_fails_clearly_when_the_storage_path_is_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "documents"
    path.write_text("not a directory")
    with pytest.raises(SchemaDocError) as raised:
        FileDocumentStore(path).open()
    assert raised.value.code == "storage-write-failed"
    assert set(raised.value.details) == {"storage_dir", "reason"}


def test_open_does_not_create_missing_parents(tmp_path: Path) -> None:
    with pytest.raises(SchemaDocError) as raised:
        FileDocumentStore(tmp_path / "missing" / "documents").open()
    assert raised.value.code == "storage-write-failed"
    assert not (tmp_path / "missing").exists()


def test_the_files_of_a_document_follow_the_layout(store: FileDocumentStore, directory: Path) -> None:
    meta = a_document_at_version_2(store)
    doc_id = meta.doc_id
    assert sorted(path.name for path in directory.iterdir()) == sorted(
        [f"{doc_id}.json", f"{doc_id}.meta.json", f"{doc_id}.journal.jsonl", f"{doc_id}.lock", FORMAT_FILE])
    assert orjson.loads((directory / f"{doc_id}.json").read_bytes()) == {"title": "t", "items": ["a", "b"]}
    assert orjson.loads((directory / f"{doc_id}.meta.json").read_bytes()) == {
        "doc_id": doc_id, "version": 2, "schema_uri": meta.schema_uri, "created_at": meta.created_at,
        "modified_at": meta.modified_at, "content_size_bytes": meta.content_size_bytes, "deleted_at": None,
        "snapshot_version": 2, "journal_offset": len((directory / f"{doc_id}.journal.jsonl").read_bytes())}
    assert journal_versions(directory / f"{doc_id}.journal.jsonl") == [1, 2]


def test_a_restarted_store_sees_every_committed_version(store: FileDocumentStore, directory: Path) -> None:
    meta = a_document_at_version_2(store)
    again, report = reopen(directory)
    assert (report.removed_tmp, report.rolled_forward, report.corrupt) == ([], {}, {})
    assert again.load(meta.doc_id).meta == meta
    assert [entry.version for entry in again.read_journal(meta.doc_id)] == [1, 2]


def test_files_of_other_programs_are_left_alone(store: FileDocumentStore, directory: Path) -> None:
    meta = create_document(store)
    for name in ("README.txt", "notes.json", "01arz3ndektsv4rrffq69g5fav.json", "backup.meta.json"):
        (directory / name).write_text("{}")
    again, report = reopen(directory)
    assert report.corrupt == {}
    assert [m.doc_id for m in again.list_metas()] == [meta.doc_id]
    assert (directory / "README.txt").exists() and (directory / "notes.json").exists()


# -- crash recovery at start-up --------------------------------------------------------------------


def test_open_removes_leftover_tmp_files(store: FileDocumentStore, directory: Path) -> None:
    meta = a_document_at_version_2(store)
    for name in (f"{meta.doc_id}.tmp", f"{meta.doc_id}.meta.tmp", "stray.tmp"):
        (directory / name).write_bytes(b'{"half-written')
    again, report = reopen(directory)
    assert sorted(report.removed_tmp) == sorted([f"{meta.doc_id}.tmp", f"{meta.doc_id}.meta.tmp", "stray.tmp"])
    assert not list(directory.glob("*.tmp"))
    assert again.load(meta.doc_id).meta == meta


def test_open_removes_a_checkpoint_a_crash_cut_short_and_keeps_the_finished_ones(store: FileDocumentStore,
                                                                                directory: Path) -> None:
    meta = a_document_at_version_2(store)
    store.write_checkpoint(meta.doc_id, 1, b'{"title": "v1"}')
    checkpoints = directory / "checkpoints" / meta.doc_id
    (checkpoints / "2.json.tmp").write_bytes(b'{"half-written')
    again, report = reopen(directory)
    assert report.removed_tmp == [f"checkpoints/{meta.doc_id}/2.json.tmp"]
    assert sorted(path.name for path in checkpoints.iterdir()) == ["1.json"]
    assert again.load(meta.doc_id).meta == meta


def test_open_rolls_forward_a_journal_ahead_of_its_snapshot(store: FileDocumentStore, directory: Path) -> None:
    meta = a_document_at_version_2(store)
    entry = JournalEntry(3, "update_node", [{"op": "replace", "path": "/title", "value": "new"}], utc_now(),
                         {"node_path": "/title"})
    append(directory / f"{meta.doc_id}.journal.jsonl", entry.to_line())  # crashed before the snapshot
    again, report = reopen(directory)
    assert report.rolled_forward == {meta.doc_id: (2, 3)}
    stored = again.load(meta.doc_id)
    assert orjson.loads(stored.content) == {"title": "new", "items": ["a", "b"]}
    assert stored.meta == replace(meta, version=3, modified_at=entry.at, content_size_bytes=len(stored.content),
                                  snapshot_version=3)
    assert replay(again.read_journal(meta.doc_id)) == orjson.loads(stored.content)


def test_roll_forward_does_not_apply_a_patch_twice_when_the_content_was_already_renamed(
    store: FileDocumentStore, directory: Path
) -> None:
    meta = a_document_at_version_2(store)
    patch = [{"op": "add", "path": "/items/0", "value": "first"}]
    new_content = orjson.dumps({"title": "t", "items": ["first", "a", "b"]})
    append(directory / f"{meta.doc_id}.journal.jsonl", JournalEntry(3, "patch", patch, utc_now()).to_line())
    (directory / f"{meta.doc_id}.json").write_bytes(new_content)  # crashed between the two renames
    again, report = reopen(directory)
    assert report.rolled_forward == {meta.doc_id: (2, 3)}
    assert orjson.loads(again.load(meta.doc_id).content) == {"title": "t", "items": ["first", "a", "b"]}


def test_roll_forward_records_a_whole_document_delete(store: FileDocumentStore, directory: Path) -> None:
    meta = a_document_at_version_2(store)
    entry = JournalEntry(3, "delete_document", [], utc_now())
    append(directory / f"{meta.doc_id}.journal.jsonl", entry.to_line())
    again, _ = reopen(directory)
    assert again.read_meta(meta.doc_id).deleted_at == entry.at


def test_open_truncates_a_torn_last_journal_line(store: FileDocumentStore, directory: Path) -> None:
    meta = a_document_at_version_2(store)
    journal = directory / f"{meta.doc_id}.journal.jsonl"
    intact = journal.read_bytes()
    torn = JournalEntry(3, "patch", [{"op": "add", "path": "/x", "value": 1}], utc_now()).to_line()[:25]
    append(journal, torn)  # crashed mid-append: never acknowledged
    again, report = reopen(directory)
    assert journal.read_bytes() == intact
    assert report.corrupt == {} and report.rolled_forward == {}
    commit_patch(again, meta, [{"op": "add", "path": "/x", "value": 1}])
    assert journal_versions(journal) == [1, 2, 3]


def test_open_truncates_an_unreadable_last_journal_line(store: FileDocumentStore, directory: Path) -> None:
    meta = a_document_at_version_2(store)
    journal = directory / f"{meta.doc_id}.journal.jsonl"
    intact = journal.read_bytes()
    append(journal, b"\x00\x00\x00\x00\n")
    again, report = reopen(directory)
    assert journal.read_bytes() == intact
    assert report.corrupt == {}
    assert again.load(meta.doc_id).meta == meta


def test_content_without_meta_is_corrupt_while_other_documents_stay_readable(
    store: FileDocumentStore, directory: Path
) -> None:
    broken, fine = create_document(store), create_document(store)
    (directory / f"{broken.doc_id}.meta.json").unlink()
    again, report = reopen(directory)
    assert set(report.corrupt) == {broken.doc_id}
    assert "meta" in report.corrupt[broken.doc_id]
    for read in (again.load, again.read_meta):
        with pytest.raises(SchemaDocError) as raised:
            read(broken.doc_id)
        assert raised.value.code == "storage-read-failed"
        assert raised.value.details["doc_id"] == broken.doc_id
    assert again.list_metas() == [fine]
    assert again.load(fine.doc_id).meta == fine


def test_meta_without_content_is_corrupt_while_other_documents_stay_readable(
    store: FileDocumentStore, directory: Path
) -> None:
    broken, fine = create_document(store), create_document(store)
    (directory / f"{broken.doc_id}.json").unlink()
    again, report = reopen(directory)
    assert set(report.corrupt) == {broken.doc_id}
    with pytest.raises(SchemaDocError) as raised:
        again.load(broken.doc_id)
    assert raised.value.code == "storage-read-failed"
    assert f"{broken.doc_id}.json" in raised.value.details["files"]
    assert again.list_metas() == [fine]


def test_a_corrupt_document_can_be_purged(store: FileDocumentStore, directory: Path) -> None:
    broken = create_document(store)
    (directory / f"{broken.doc_id}.json").unlink()
    again, _ = reopen(directory)
    again.purge(broken.doc_id)
    assert [path.name for path in directory.iterdir()] == [FORMAT_FILE]
    assert reopen(directory)[1].corrupt == {}


def test_a_damaged_snapshot_is_rebuilt_from_the_journal(store: FileDocumentStore, directory: Path) -> None:
    meta = a_document_at_version_2(store)
    (directory / f"{meta.doc_id}.json").write_bytes(b'{"title": "t", "ite')
    again, report = reopen(directory)
    assert report.rolled_forward == {meta.doc_id: (2, 2)}
    assert again.load(meta.doc_id).content == orjson.dumps({"title": "t", "items": ["a", "b"]})


def test_a_snapshot_damaged_while_running_is_rebuilt_when_loaded(
    store: FileDocumentStore, directory: Path
) -> None:
    meta = a_document_at_version_2(store)
    (directory / f"{meta.doc_id}.json").write_bytes(b"\x00" * 3)
    assert orjson.loads(store.load(meta.doc_id).content) == {"title": "t", "items": ["a", "b"]}


def test_a_damaged_snapshot_that_the_journal_cannot_rebuild_is_corrupt(
    store: FileDocumentStore, directory: Path
) -> None:
    meta = a_document_at_version_2(store)
    journal = directory / f"{meta.doc_id}.journal.jsonl"
    first = journal.read_bytes().splitlines(keepends=True)[0]
    bad = JournalEntry(2, "patch", [{"op": "remove", "path": "/nowhere"}], utc_now()).to_line()
    journal.write_bytes(first + bad)
    (directory / f"{meta.doc_id}.json").write_bytes(b"garbage")
    again, report = reopen(directory)
    assert "cannot rebuild" in report.corrupt[meta.doc_id]
    with pytest.raises(SchemaDocError) as raised:
        again.load(meta.doc_id)
    assert raised.value.code == "storage-read-failed"


def test_a_journal_behind_its_meta_is_corrupt(store: FileDocumentStore, directory: Path) -> None:
    meta = a_document_at_version_2(store)
    journal = directory / f"{meta.doc_id}.journal.jsonl"
    journal.write_bytes(journal.read_bytes().splitlines(keepends=True)[0])
    _, report = reopen(directory)
    assert "ends at version 1" in report.corrupt[meta.doc_id]


def test_a_journal_damaged_in_the_middle_cannot_be_read(store: FileDocumentStore, directory: Path) -> None:
    meta = a_document_at_version_2(store)
    meta = commit_patch(store, meta, [{"op": "replace", "path": "/title", "value": "u"}])
    journal = directory / f"{meta.doc_id}.journal.jsonl"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(lines[0] + b"{broken}\n" + lines[2])
    with pytest.raises(SchemaDocError) as raised:
        store.read_journal(meta.doc_id)
    assert raised.value.code == "storage-read-failed"


# -- recovery while running (another process sharing the directory died) ----------------------------


def test_a_commit_after_a_writer_died_mid_append_drops_the_torn_line(
    store: FileDocumentStore, directory: Path
) -> None:
    meta = a_document_at_version_2(store)
    append(directory / f"{meta.doc_id}.journal.jsonl", b'{"version":3,"op":"pat')
    commit_patch(store, meta, [{"op": "replace", "path": "/title", "value": "mine"}])
    assert journal_versions(directory / f"{meta.doc_id}.journal.jsonl") == [1, 2, 3]
    assert store.read_journal(meta.doc_id)[-1].patch[0]["value"] == "mine"


def test_a_commit_after_a_writer_died_before_its_snapshot_is_a_version_conflict(
    store: FileDocumentStore, directory: Path
) -> None:
    meta = a_document_at_version_2(store)
    theirs = JournalEntry(3, "patch", [{"op": "replace", "path": "/title", "value": "theirs"}], utc_now())
    append(directory / f"{meta.doc_id}.journal.jsonl", theirs.to_line())
    with pytest.raises(SchemaDocError) as raised:
        commit_patch(store, meta, [{"op": "replace", "path": "/title", "value": "mine"}])
    assert raised.value.code == "version-conflict"
    assert raised.value.details["actual_version"] == 3
    assert current_content(store, meta.doc_id)["title"] == "theirs"
    assert journal_versions(directory / f"{meta.doc_id}.journal.jsonl") == [1, 2, 3]


def test_two_stores_on_one_directory_see_each_others_commits(store: FileDocumentStore, directory: Path) -> None:
    other, _ = reopen(directory)
    meta = create_document(store, {"n": 0})
    assert other.read_meta(meta.doc_id) == meta
    commit_patch(other, meta, [{"op": "replace", "path": "/n", "value": 1}])
    assert store.read_meta(meta.doc_id).version == 2
    with pytest.raises(SchemaDocError) as raised:  # a commit from the stale version 1
        commit_patch(store, meta, [{"op": "replace", "path": "/n", "value": 2}])
    assert raised.value.code == "version-conflict"


# -- failed writes -----------------------------------------------------------------------------------


def assert_unchanged(store: FileDocumentStore, directory: Path, meta: DocumentMeta, content: bytes) -> None:
    assert store.load(meta.doc_id) == type(store.load(meta.doc_id))(meta, content)
    assert journal_versions(directory / f"{meta.doc_id}.journal.jsonl") == list(range(1, meta.version + 1))
    assert not list(directory.glob("*.tmp"))


def test_a_commit_that_cannot_write_its_files_changes_nothing(
    store: FileDocumentStore, directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    meta = a_document_at_version_2(store)
    content = store.load(meta.doc_id).content
    monkeypatch.setattr(os, "fsync", failing(os.fsync, lambda fd: True))
    with pytest.raises(SchemaDocError) as raised:
        commit_patch(store, meta, [{"op": "replace", "path": "/title", "value": "lost"}])
    assert raised.value.code == "storage-write-failed"
    assert "No space left" in raised.value.details["reason"]
    monkeypatch.undo()
    assert_unchanged(store, directory, meta, content)
    commit_patch(store, meta, [{"op": "replace", "path": "/title", "value": "kept"}])


def test_a_lazy_commit_whose_journal_append_fails_changes_nothing(
    store: FileDocumentStore, directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    meta = a_document_at_version_2(store)
    stored = store.load(meta.doc_id)
    monkeypatch.setattr(os, "fdatasync", failing(os.fdatasync, lambda fd: True))
    with pytest.raises(SchemaDocError) as raised:
        commit_patch(store, meta, [{"op": "replace", "path": "/title", "value": "lost"}], inline=False)
    assert raised.value.code == "storage-write-failed"
    monkeypatch.undo()
    assert store.load(meta.doc_id) == stored
    assert journal_versions(directory / f"{meta.doc_id}.journal.jsonl") == [1, 2]
    commit_patch(store, meta, [{"op": "replace", "path": "/title", "value": "kept"}], inline=False)
    assert current_content(store, meta.doc_id)["title"] == "kept"


def test_a_journaled_commit_whose_snapshot_cannot_be_switched_stands_with_a_lagging_snapshot(
    store: FileDocumentStore, directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    meta = a_document_at_version_2(store)
    content = store.load(meta.doc_id).content
    monkeypatch.setattr(os, "replace", failing(os.replace, lambda source, target: str(target).endswith(".json")))
    commit_patch(store, meta, [{"op": "replace", "path": "/title", "value": "journaled"}])
    monkeypatch.undo()
    stored = store.load(meta.doc_id)
    assert (stored.meta.version, stored.meta.snapshot_version, stored.content) == (3, 2, content)
    assert current_content(store, meta.doc_id)["title"] == "journaled"
    assert not list(directory.glob("*.tmp"))
    again, _ = reopen(directory)
    assert current_content(again, meta.doc_id)["title"] == "journaled"


def test_a_snapshot_renamed_without_its_meta_is_repaired_not_replayed_twice(
    store: FileDocumentStore, directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    meta = a_document_at_version_2(store)
    calls: list[str] = []

    def once_for_meta(source: Any, target: Any) -> bool:
        calls.append(str(target))
        return str(target).endswith(".meta.json") and len(calls) == 2

    monkeypatch.setattr(os, "replace", failing(os.replace, once_for_meta))
    commit_patch(store, meta, [{"op": "add", "path": "/items/-", "value": "c"}])
    monkeypatch.undo()
    assert current_content(store, meta.doc_id) == {"title": "t", "items": ["a", "b", "c"]}
    assert replay(store.read_journal(meta.doc_id)) == {"title": "t", "items": ["a", "b", "c"]}


def test_a_crash_between_the_snapshot_and_meta_renames_is_completed_at_start_up(
    store: FileDocumentStore, directory: Path
) -> None:
    meta = a_document_at_version_2(store)
    meta = commit_patch(store, meta, [{"op": "add", "path": "/items/-", "value": "c"}], inline=False)
    # what a crash right after the snapshot's rename leaves: the new snapshot, its meta still a tmp
    snapshot = replace(meta, snapshot_version=3)
    journal_size = (directory / f"{meta.doc_id}.journal.jsonl").stat().st_size
    (directory / f"{meta.doc_id}.0123456789abcdef.meta.tmp").write_bytes(
        orjson.dumps({**snapshot.to_dict(), "journal_offset": journal_size}))
    (directory / f"{meta.doc_id}.json").write_bytes(orjson.dumps({"title": "t", "items": ["a", "b", "c"]}))
    again, report = reopen(directory)
    assert f"{meta.doc_id}.0123456789abcdef.meta.tmp" in report.removed_tmp
    stored = again.load(meta.doc_id)
    assert (stored.meta.snapshot_version, stored.entries) == (3, ())
    assert current_content(again, meta.doc_id) == {"title": "t", "items": ["a", "b", "c"]}


def test_a_snapshot_switch_interrupted_before_the_rename_is_discarded(
    store: FileDocumentStore, directory: Path
) -> None:
    meta = a_document_at_version_2(store)
    meta = commit_patch(store, meta, [{"op": "add", "path": "/items/-", "value": "c"}], inline=False)
    token = "fedcba9876543210"
    (directory / f"{meta.doc_id}.{token}.tmp").write_bytes(b'{"title":"t","items":["a","b","c"]}')
    pending = replace(meta, snapshot_version=3).to_dict()
    (directory / f"{meta.doc_id}.{token}.meta.tmp").write_bytes(orjson.dumps(pending))
    again, _ = reopen(directory)
    assert not list(directory.glob("*.tmp"))
    assert again.load(meta.doc_id).meta.snapshot_version == 2
    assert current_content(again, meta.doc_id) == {"title": "t", "items": ["a", "b", "c"]}


def test_another_process_catches_up_from_the_journal_tail_without_a_snapshot(
    store: FileDocumentStore, directory: Path
) -> None:
    other, _ = reopen(directory)
    meta = create_document(store, {"n": 0})
    assert other.read_meta(meta.doc_id).version == 1
    for n in range(1, 6):
        meta = commit_patch(store, meta, [{"op": "replace", "path": "/n", "value": n}], inline=False)
    seen = other.read_meta(meta.doc_id)
    assert (seen.version, seen.snapshot_version) == (6, 1)
    assert [entry.version for entry in other.load(meta.doc_id).entries] == [2, 3, 4, 5, 6]
    assert store.write_snapshot(meta.doc_id, 4, orjson.dumps({"n": 3}))
    assert other.read_meta(meta.doc_id).snapshot_version == 4
    assert current_content(other, meta.doc_id) == {"n": 5}


def test_a_create_that_fails_leaves_no_document(
    store: FileDocumentStore, directory: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc_id = new_doc_id()
    monkeypatch.setattr(os, "replace", failing(os.replace, lambda source, target: True))
    with pytest.raises(SchemaDocError) as raised:
        create_document(store, doc_id=doc_id)
    assert raised.value.code == "storage-write-failed"
    monkeypatch.undo()
    assert [path.name for path in directory.iterdir() if not path.name.endswith(".lock")] == [FORMAT_FILE]
    assert store.list_metas() == []
    create_document(store, doc_id=doc_id)


# -- the write lock across processes ---------------------------------------------------------------

HOLD_LOCK = """
import sys, time
from schemadoc.storage import disk
from schemadoc.storage.files import FileDocumentStore
from schemadoc.storage.journal import Tail, fold
from schemadoc.storage.layout import Corrupt
store = FileDocumentStore(sys.argv[1])
with store.write_lock(sys.argv[2]):
    print("locked", flush=True)
    time.sleep(120)
"""


@pytest.mark.timeout(60)
def test_the_write_lock_excludes_another_process_until_it_dies(store: FileDocumentStore, directory: Path) -> None:
    meta = create_document(store)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    child = subprocess.Popen([sys.executable, "-c", HOLD_LOCK, str(directory), meta.doc_id],
                             stdout=subprocess.PIPE, env=env)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == b"locked"
        with pytest.raises(SchemaDocError) as raised, store.write_lock(meta.doc_id, timeout=0.3):
            pass
        assert raised.value.code == "lock-timeout"
        assert raised.value.details == {"doc_id": meta.doc_id, "timeout_seconds": 0.3}
    finally:
        child.kill()
        child.wait(10)
    with store.write_lock(meta.doc_id, timeout=5):  # the OS released the dead process's lock
        commit_patch(store, meta, [{"op": "add", "path": "/after", "value": True}])
    assert store.read_meta(meta.doc_id).version == 2


COMMIT_IN_A_LOOP = """
import sys, time
from pathlib import Path
from schemadoc.storage import disk
from schemadoc.storage.files import FileDocumentStore
from schemadoc.storage.journal import Tail, fold
from schemadoc.storage.layout import Corrupt
from contract.storage import commit_patch
store = FileDocumentStore(sys.argv[1])
store.open()
while not Path(sys.argv[5]).exists():  # start together
    time.sleep(0.005)
for n in range(int(sys.argv[3])):
    with store.write_lock(sys.argv[2]):
        meta = store.read_meta(sys.argv[2])
        commit_patch(store, meta, [{"op": "add", "path": f"/log/{meta.version - 1}", "value": sys.argv[4]}])
"""


@pytest.mark.timeout(120)
def test_writers_in_several_processes_never_lose_or_repeat_a_version(
    store: FileDocumentStore, directory: Path, tmp_path: Path
) -> None:
    meta = create_document(store, {"log": []})
    processes, rounds = 3, 20
    go = tmp_path / "go"
    paths = [str(SRC), str(SRC.parent / "tests"), os.environ.get("PYTHONPATH")]  # tests/: contract.storage
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, paths))}
    children = [subprocess.Popen([sys.executable, "-c", COMMIT_IN_A_LOOP, str(directory), meta.doc_id,
                                  str(rounds), f"p{i}", str(go)], env=env) for i in range(processes)]
    time.sleep(0.5)
    go.touch()
    assert [child.wait(100) for child in children] == [0] * processes
    stored = store.load(meta.doc_id)
    assert stored.meta.version == 1 + processes * rounds
    assert journal_versions(directory / f"{meta.doc_id}.journal.jsonl") == list(range(1, 2 + processes * rounds))
    log = orjson.loads(stored.content)["log"]
    assert sorted(log) == sorted(f"p{i}" for i in range(processes) for _ in range(rounds))
    assert replay(store.read_journal(meta.doc_id)) == orjson.loads(stored.content)


@pytest.mark.parametrize("crash_point", ["before-journal", "after-journal", "torn-journal", "between-renames"])
def test_a_creation_interrupted_before_its_meta_file_is_taken_back(
    store: FileDocumentStore, directory: Path, crash_point: str
) -> None:
    fine = create_document(store)
    meta = create_document(store)
    files = {suffix: directory / f"{meta.doc_id}{suffix}" for suffix in (".json", ".meta.json", ".journal.jsonl")}
    files[".meta.json"].rename(directory / f"{meta.doc_id}.meta.tmp")  # the commit point was never reached
    if crash_point != "between-renames":
        files[".json"].rename(directory / f"{meta.doc_id}.tmp")
    if crash_point == "before-journal":
        files[".journal.jsonl"].unlink()
    if crash_point == "torn-journal":
        files[".journal.jsonl"].write_bytes(files[".journal.jsonl"].read_bytes()[:20])
    again, report = reopen(directory)
    assert report.abandoned == [meta.doc_id]
    assert report.corrupt == {}
    assert sorted(path.name for path in directory.iterdir() if path.suffix != ".lock") == sorted(
        [*(f"{fine.doc_id}{suffix}" for suffix in (".json", ".meta.json", ".journal.jsonl")), FORMAT_FILE])
    assert again.list_metas() == [fine]
    with pytest.raises(SchemaDocError) as raised:
        again.load(meta.doc_id)
    assert raised.value.code == "document-not-found"


def test_a_big_snapshot_replaced_by_a_commit_leaves_no_second_name_behind(tmp_path: Path) -> None:
    """Snapshots of 8 MiB and more are unlinked in the background after the rename; nothing lingers."""
    store = FileDocumentStore(tmp_path)
    store.open()
    doc_id = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
    big = b'"' + b"x" * (9 << 20) + b'"'
    meta = DocumentMeta(doc_id, 1, "urn:s", "t", "t", len(big))
    store.create(meta, JournalEntry(1, "create", [{"op": "add", "path": "", "value": "x"}], "t"), big)
    bigger = b'"' + b"y" * (9 << 20) + b'"'
    store.commit(DocumentMeta(doc_id, 2, "urn:s", "t", "t", len(bigger)),
                 JournalEntry(2, "update_node", [{"op": "replace", "path": "", "value": "y"}], "t"), bigger)
    assert store.load(doc_id).content == bigger
    deadline = time.monotonic() + 5
    while list(tmp_path.glob(".retired-*")) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".retired-*"))


def test_readers_revalidating_while_a_writer_appends_never_fold_a_line_twice(store: FileDocumentStore) -> None:
    import threading

    meta = create_document(store, {"n": 0})
    stop = threading.Event()
    seen: list[BaseException] = []

    def read() -> None:
        while not stop.is_set():
            try:
                store.read_meta(meta.doc_id)
            except BaseException as error:  # handed to the test
                seen.append(error)
                return

    readers = [threading.Thread(target=read) for _ in range(2)]
    for reader in readers:
        reader.start()
    try:
        for n in range(1, 150):
            meta = commit_patch(store, meta, [{"op": "replace", "path": "/n", "value": n}], inline=False)
    finally:
        stop.set()
        for reader in readers:
            reader.join()
    assert seen == []
    assert store.read_meta(meta.doc_id).version == 150
    assert current_content(store, meta.doc_id) == {"n": 149}


# -- folding journal lines into the current meta ---------------------------------------------------


def _tail_at_1() -> Tail:
    snapshot = DocumentMeta(new_doc_id(), 1, "urn:s", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z", 2)
    return Tail(snapshot, 0, (0, 0, 0), 0, 0)


def _line(version: int, value: Any, meta: DocumentMeta, *, info: dict[str, Any] | None = None) -> bytes:
    entry = JournalEntry(version, "update_node", [{"op": "replace", "path": "/a", "value": value}], meta.modified_at,
                         info or {})
    return journal_line(meta.doc_id, entry, meta)


@pytest.mark.parametrize("filler", [0, 10_000], ids=["short line", "long line"])
def test_folding_reads_the_meta_of_the_line_not_a_meta_inside_its_patch_or_info(filler: int) -> None:
    tail = _tail_at_1()
    decoy = {"meta": {"modified_at": "decoy", "content_size_bytes": 1, "deleted_at": None}}
    meta = replace(tail.snapshot, version=2, modified_at="2026-02-02T00:00:00.000Z", content_size_bytes=12_345)
    second = replace(meta, version=3, modified_at="2026-03-03T00:00:00.000Z", deleted_at="2026-03-03T00:00:00.000Z")
    data = (_line(2, {"x": "y" * filler, **decoy}, meta, info=decoy)
            + _line(3, ["z" * filler, decoy], second))
    fold(tail, data, Path("j"))
    assert [(m.version, m.modified_at, m.content_size_bytes, m.deleted_at) for m in tail.marks] == [
        (2, "2026-02-02T00:00:00.000Z", 12_345, None),
        (3, "2026-03-03T00:00:00.000Z", 12_345, "2026-03-03T00:00:00.000Z")]
    assert tail.offset == len(data) and tail.marks[0].end == data.index(b"\n") + 1


def test_folding_a_line_written_by_another_tool_parses_it_whole() -> None:
    tail = _tail_at_1()
    pretty = orjson.loads(_line(2, "v" * 10_000, replace(tail.snapshot, version=2, content_size_bytes=7)))
    data = orjson.dumps(pretty, option=orjson.OPT_INDENT_2).replace(b"\n", b" ") + b"\n"
    legacy = orjson.dumps({"version": 3, "op": "delete_document", "patch": [],
                           "at": "2026-04-04T00:00:00.000Z"}) + b"\n"
    decoy = {"meta": {"modified_at": "decoy", "content_size_bytes": 1, "deleted_at": None}}
    nested = orjson.dumps({"version": 4, "op": "update_node",
                           "patch": [{"op": "add", "path": "/b", "value": "w" * 5000}],
                           "at": "2026-05-05T00:00:00.000Z", "info": decoy}) + b"\n"
    fold(tail, data + legacy + nested, Path("j"))
    assert [(m.version, m.modified_at, m.content_size_bytes, m.deleted_at) for m in tail.marks] == [
        (2, tail.snapshot.modified_at, 7, None), (3, "2026-04-04T00:00:00.000Z", -1, "2026-04-04T00:00:00.000Z"),
        (4, "2026-05-05T00:00:00.000Z", -1, "2026-04-04T00:00:00.000Z")]


@pytest.mark.parametrize("line", [
    b'{"version":2,"op":"update_node","patch":[{"op":"replace","path":"/a","value":' + b"1" * 5000 + b'],"meta":{}}',
    b"not json at all",
    b'{"version":3,"op":"update_node","patch":[],"at":"x"}',
], ids=["long line torn inside", "garbage", "version gap"])
def test_folding_a_line_that_cannot_be_read_or_skips_a_version_is_corrupt(line: bytes) -> None:
    with pytest.raises(Corrupt):
        fold(_tail_at_1(), line + b"\n", Path("j"))


def test_a_big_file_written_from_pieces_is_synced_as_it_grows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """So that other files' fsyncs never wait behind the whole of it at the end."""
    synced: list[int] = []
    real = os.fdatasync
    monkeypatch.setattr(os, "fdatasync", lambda fd: (synced.append(os.fstat(fd).st_size), real(fd))[1])
    pieces = [bytes([65 + i % 26]) * (1 << 20) for i in range(20)]
    assert disk.write_synced(tmp_path / "big.tmp", iter(pieces)) == 20 << 20
    assert (tmp_path / "big.tmp").read_bytes() == b"".join(pieces)
    assert synced == [8 << 20, 16 << 20]


# -- verdicts of checks, several processes -------------------------------------------------------------

RECORD_VERDICTS = """
import sys
from schemadoc.storage.base import Verdict
from schemadoc.storage.files import FileDocumentStore
store = FileDocumentStore(sys.argv[1])
store.open()
for count in sys.argv[3:]:
    problems = [{"code": "max-length", "path": "/title", "message": "too long"}] * int(count)
    assert store.record_verdict(sys.argv[2], Verdict.of(1, "sha256:" + "c" * 64, problems, int(count)))
    print(count, flush=True)
    sys.stdin.readline()  # the parent reads between two checks
"""


def verdict_stats(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Every ``stat`` of a verdict file from now on."""
    seen: list[Path] = []
    original = disk.stat_or_none

    def counting(path: Path) -> os.stat_result | None:
        if path.parent.name == "verdicts":
            seen.append(path)
        return original(path)

    monkeypatch.setattr(disk, "stat_or_none", counting)
    return seen


def test_reads_and_writes_find_a_checks_verdict_without_a_stat_of_its_file(
        store: FileDocumentStore, monkeypatch: pytest.MonkeyPatch) -> None:
    meta = create_document(store, {"title": "t", "items": []})
    store.read_meta(meta.doc_id)
    stats = verdict_stats(monkeypatch)
    for n in range(20):
        store.read_meta(meta.doc_id)
        meta = commit_patch(store, meta, [{"op": "add", "path": "/items/-", "value": n}], inline=False)
    assert stats == []
    store.record_verdict(meta.doc_id, replace(meta.verdict or Verdict(meta.version, "sha256:" + "d" * 64),
                                               violation_count=1))
    for _ in range(5):
        verdict = store.read_meta(meta.doc_id).verdict
        assert verdict is not None and verdict.violation_count == 1
    assert len(stats) == 1  # the check moved the meta file on: looked at once, then known again


def test_a_check_recorded_by_another_process_is_seen_at_the_next_read_even_within_one_clock_tick(
        store: FileDocumentStore, directory: Path) -> None:
    meta = create_document(store, {"title": "t"})
    assert store.read_meta(meta.doc_id).verdict == meta.verdict  # known, before any check
    counts = [3, 1, 4, 1, 5, 9, 2, 6]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    child = subprocess.Popen([sys.executable, "-c", RECORD_VERDICTS, str(directory), meta.doc_id,
                              *map(str, counts)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
    assert child.stdin is not None and child.stdout is not None
    try:
        for count in counts:
            assert int(child.stdout.readline()) == count
            verdict = store.read_meta(meta.doc_id).verdict
            assert verdict is not None and verdict.violation_count == count
            assert store.load(meta.doc_id).meta.verdict == verdict
            child.stdin.write(b"\n")
            child.stdin.flush()
    finally:
        child.stdin.close()
        assert child.wait(30) == 0


def test_checks_in_quick_succession_are_each_seen_by_another_store_on_the_directory(
        store: FileDocumentStore, directory: Path) -> None:
    other, _ = reopen(directory)
    meta = create_document(store, {"title": "t"})
    problem = [{"code": "max-length", "path": "/title", "message": "too long"}]
    for count in range(1, 200):  # many within one tick of the file system's clock
        other.record_verdict(meta.doc_id, Verdict.of(1, "sha256:" + "e" * 64, problem * count, count))
        verdict = store.read_meta(meta.doc_id).verdict
        assert verdict is not None and verdict.violation_count == count


def test_the_store_keeps_per_document_state_for_recent_documents_only(
        directory: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What the process knows of a document (its tail) is kept for the latest ones read or written, and a write lock
    only while a thread holds or waits for it: kept for every document, a listing of 100,000 books held five objects
    each for every collection of the interpreter to walk (573 ms). A tail forgotten is read again, right."""
    from schemadoc.storage import checked
    from schemadoc.storage import directory as directory_module

    monkeypatch.setattr(directory_module, "_TAILS_KEPT", 4)
    monkeypatch.setattr(checked, "KNOWN_KEPT", 4)
    store = FileDocumentStore(directory)
    store.open()
    metas = [create_document(store, {"title": f"Book {i}"}) for i in range(12)]
    metas[0] = commit_patch(store, metas[0], [{"op": "replace", "path": "/title", "value": "First"}], inline=False)
    metas[1] = commit_patch(store, metas[1], [{"op": "replace", "path": "/title", "value": "Second"}])
    for meta in [*metas, *reversed(metas)]:  # the second time, read again after their tails were forgotten
        assert store.read_meta(meta.doc_id).version == meta.version
    assert len(store._tails) == len(store._verdicts._known) == 4
    assert store._locks._locks == {}
    verdict = Verdict(metas[2].version, "digest", 0, (), "2026-01-01T00:00:00Z")
    assert store.record_verdict(metas[2].doc_id, verdict)
    for meta in metas:  # its verdict's key forgotten on the way, read again
        store.read_meta(meta.doc_id)
    assert store.read_meta(metas[2].doc_id).verdict == verdict
    assert current_content(store, metas[0].doc_id) == {"title": "First"}
    assert len(store._tails) == 4
    metas[0] = commit_patch(store, metas[0], [{"op": "replace", "path": "/title", "value": "Again"}], inline=False)
    assert store.read_meta(metas[0].doc_id).version == 3
    assert current_content(store, metas[0].doc_id) == {"title": "Again"}

    order: list[str] = []

    def second() -> None:
        with store.write_lock(metas[5].doc_id, 5.0):
            order.append("second")

    with store.write_lock(metas[5].doc_id, 5.0):
        waiter = threading.Thread(target=second)
        waiter.start()
        while store._locks._locks[metas[5].doc_id].users < 2:  # the waiter is counted: its lock is kept
            time.sleep(0.001)
        order.append("first")
    waiter.join(5.0)
    assert order == ["first", "second"]
    assert store._locks._locks == {}
