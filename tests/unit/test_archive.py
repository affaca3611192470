"""Export and import in one process: what an archive keeps, how a damaged one is refused with nothing written,
what happens to doc_ids already stored, and to documents the served schema refuses (docs/backup.md)."""

from __future__ import annotations

import io
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemadoc.archive import export_store, import_archive
from schemadoc.archive.format import MANIFEST, SUMS
from schemadoc.errors import SchemaDocError
from schemadoc.examples import example_path
from schemadoc.ops.journal import replay
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage import FileDocumentStore, MemoryDocumentStore
from schemadoc.storage.base import DocumentStore
from schemadoc.validation import DocumentValidator

BOOK = load_schema(example_path("book"))
VALIDATOR = DocumentValidator(BOOK)


def _service(store: DocumentStore) -> DocumentService:
    service = DocumentService(BOOK, store)
    service.open()
    return service


def _populate(store: DocumentStore, documents: int = 3) -> list[str]:
    """Documents with a few versions each: updates, an added tag, a revert; the last one deleted."""
    service = _service(store)
    doc_ids = []
    for number in range(documents):
        doc_id, _, meta, _ = service.create_document()
        version = meta.version
        for step in range(3):
            version = service.update_node(doc_id, "/title", f"Book {number}, draft {step}", version).version
        version = service.apply_patch(doc_id, [{"op": "add", "path": "/tags/0", "value": f"t{number}"}],
                                      version).version
        version = service.revert(doc_id, 2, version).version
        if number == documents - 1:
            service.delete_document(doc_id, version)
        doc_ids.append(doc_id)
    service.close()
    return doc_ids


def _archive(store: DocumentStore, *, history: bool = True, gzip: bool = False) -> bytes:
    out = io.BytesIO()
    export_store(store, out, history=history, gzip=gzip, source={"kind": "test"})
    return out.getvalue()


def _import(archive: bytes, store: DocumentStore, *, existing: str = "fail",
            validator: DocumentValidator = VALIDATOR, actor: str | None = None) -> tuple[Any, list[str]]:
    lines: list[str] = []
    summary = import_archive(io.BytesIO(archive), store, validator, existing=existing, report=lines.append,
                             actor=actor)
    return summary, lines


def _state(store: DocumentStore) -> dict[str, Any]:
    """Everything an archive keeps of every document: meta (but the store's snapshot_version), journal, content."""
    state = {}
    for meta in store.list_metas():
        stored = store.load(meta.doc_id)
        content = replay(stored.entries, start=orjson.loads(stored.content),
                         start_version=meta.snapshot_version) if stored.entries else orjson.loads(stored.content)
        state[meta.doc_id] = ({**meta.to_dict(), "snapshot_version": None},
                              [entry.to_dict() for entry in store.read_journal(meta.doc_id)], content)
    return state


def _members(archive: bytes) -> dict[str, bytes]:
    with tarfile.open(fileobj=io.BytesIO(archive), mode="r:*") as tar:
        return {info.name: tar.extractfile(info).read() for info in tar.getmembers()}  # type: ignore[union-attr]


def _repack(members: Iterator[tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return out.getvalue()


@pytest.fixture
def source(tmp_path: Path) -> FileDocumentStore:
    store = FileDocumentStore(tmp_path / "source")
    store.open()
    _populate(store)
    return store


def _refused(archive: bytes, store: DocumentStore) -> SchemaDocError:
    before = _state(store)
    with pytest.raises(SchemaDocError) as raised:
        _import(archive, store)
    assert _state(store) == before, "a refused archive changed the store"
    return raised.value


# -- what an archive keeps -------------------------------------------------------------------------


def test_an_imported_store_has_every_document_s_meta_journal_and_content_as_exported(
        source: FileDocumentStore, tmp_path: Path) -> None:
    target = FileDocumentStore(tmp_path / "target")
    target.open()
    summary, lines = _import(_archive(source), target)
    assert (summary.documents, summary.imported, summary.skipped, summary.invalid, lines) == (3, 3, 0, 0, [])
    assert _state(target) == _state(source)
    assert _archive(target) != b"" and _members(_archive(target)).keys() == _members(_archive(source)).keys()
    for name, data in _members(_archive(target)).items():
        if name not in (MANIFEST, SUMS):
            assert data == _members(_archive(source))[name], name


def test_history_diffs_and_reverts_work_on_imported_documents(source: FileDocumentStore) -> None:
    target = MemoryDocumentStore()
    _import(_archive(source), target)
    service, original = _service(target), _service(source)
    doc_id = source.list_metas()[0].doc_id
    for version in range(1, 7):
        assert service.read_version(doc_id, version) == original.read_version(doc_id, version)
    assert service.diff(doc_id, 2, 5) == original.diff(doc_id, 2, 5)
    page = service.history(doc_id)
    assert [entry.version for entry in page.entries] == [1, 2, 3, 4, 5, 6]
    result = service.revert(doc_id, 3, 6)
    assert result.version == 7 and service.read_document(doc_id)[0] == original.read_version(doc_id, 3)


def test_deleted_documents_are_archived_and_imported_deleted(source: FileDocumentStore) -> None:
    deleted = [meta for meta in source.list_metas() if meta.deleted_at is not None]
    assert len(deleted) == 1
    manifest = orjson.loads(_members(_archive(source))[MANIFEST])
    assert (manifest["documents"], manifest["deleted_documents"], manifest["history"]) == (3, 1, True)
    target = MemoryDocumentStore()
    _import(_archive(source), target)
    assert target.read_meta(deleted[0].doc_id).deleted_at == deleted[0].deleted_at
    service = _service(target)
    service.undelete_document(deleted[0].doc_id)  # the journal's delete is there to be undone
    assert target.read_meta(deleted[0].doc_id).version == deleted[0].version + 1


def test_without_history_a_document_keeps_content_and_times_and_starts_a_journal_at_version_one(
        source: FileDocumentStore) -> None:
    archive = _archive(source, history=False)
    assert not [name for name in _members(archive) if name.endswith("journal.jsonl")]
    target = MemoryDocumentStore()
    _import(archive, target, actor="cli:import")
    for meta in source.list_metas():
        imported = target.read_meta(meta.doc_id)
        assert (imported.version, imported.created_at, imported.modified_at, imported.deleted_at) == (
            1, meta.created_at, meta.modified_at, meta.deleted_at)
        [entry] = target.read_journal(meta.doc_id)
        assert entry.info == {"archived_version": meta.version, "actor": "cli:import"}
        assert _state(target)[meta.doc_id][2] == _state(source)[meta.doc_id][2]


def test_a_gzipped_archive_imports_like_a_plain_one(source: FileDocumentStore) -> None:
    archive = _archive(source, gzip=True)
    assert archive[:2] == b"\x1f\x8b"
    target = MemoryDocumentStore()
    _import(archive, target)
    assert _state(target) == _state(source)


def test_the_archive_is_content_when_read_with_plain_tar_and_its_checksums(source: FileDocumentStore) -> None:
    import hashlib

    members = _members(_archive(source))
    sums = members.pop(SUMS).decode().splitlines()
    assert sums == [f"{hashlib.sha256(data).hexdigest()}  {name}" for name, data in members.items()]
    for name, data in members.items():
        if name.endswith("content.json"):
            meta = orjson.loads(members[name.replace("content.json", "meta.json")])
            assert meta["content_size_bytes"] == len(data) and "snapshot_version" not in meta
            assert orjson.loads(data) == _state(source)[meta["doc_id"]][2]


# -- damaged archives: refused whole, nothing written ---------------------------------------------


@pytest.mark.parametrize("keep", [0.0, 0.1, 0.5, 0.9, 0.99, -1])
def test_a_truncated_archive_is_refused_and_nothing_is_written(source: FileDocumentStore, keep: float) -> None:
    archive = _archive(source)
    cut = archive[:len(archive) - 1024 * 2 - 1] if keep == -1 else archive[:int(len(archive) * keep)]
    assert _refused(cut, MemoryDocumentStore()).code == "archive-invalid"


@pytest.mark.parametrize("gzip", [False, True])
def test_a_truncated_gzipped_archive_is_refused(source: FileDocumentStore, gzip: bool) -> None:
    archive = _archive(source, gzip=gzip)
    assert _refused(archive[: len(archive) * 3 // 4], MemoryDocumentStore()).code == "archive-invalid"


@pytest.mark.parametrize("member", ["meta.json", "content.json", "journal.jsonl", MANIFEST, SUMS])
def test_one_byte_changed_in_any_member_is_refused_and_nothing_is_written(
        source: FileDocumentStore, member: str) -> None:
    archive = _archive(source)
    members = _members(archive)
    name = next(name for name in members if name.endswith(member))
    data = members[name]
    at = archive.index(data) + len(data) // 2  # the member's data in the tar stream, its middle byte
    changed = archive[:at] + bytes([archive[at] ^ 0x01]) + archive[at + 1:]
    target = MemoryDocumentStore()
    _populate(target, 1)  # a store with a document in it: it stays as it was
    assert _refused(changed, target).code == "archive-invalid"


@pytest.mark.parametrize("which", ["a meta", "a content", "a journal", "the manifest", "the checksums"])
def test_a_member_missing_is_refused(source: FileDocumentStore, which: str) -> None:
    ending = {"a meta": "meta.json", "a content": "content.json", "a journal": "journal.jsonl",
              "the manifest": MANIFEST, "the checksums": SUMS}[which]
    members = list(_members(_archive(source)).items())
    dropped = next(index for index, (name, _) in enumerate(members) if name.endswith(ending))
    archive = _repack(iter(members[:dropped] + members[dropped + 1:]))
    assert _refused(archive, MemoryDocumentStore()).code == "archive-invalid"


def test_a_whole_document_missing_is_refused_by_the_manifest_s_count_and_the_checksums(
        source: FileDocumentStore) -> None:
    members = [(name, data) for name, data in _members(_archive(source)).items()
               if not name.startswith(f"documents/{source.list_metas()[0].doc_id}/")]
    assert _refused(_repack(iter(members)), MemoryDocumentStore()).code == "archive-invalid"


def test_a_member_added_or_two_swapped_is_refused(source: FileDocumentStore) -> None:
    members = list(_members(_archive(source)).items())
    added = _repack(iter([*members[:3], ("documents/notes.txt", b"hello"), *members[3:]]))
    assert _refused(added, MemoryDocumentStore()).code == "archive-invalid"
    swapped = _repack(iter([*members[3:6], *members[:3], *members[6:]]))
    assert _refused(swapped, MemoryDocumentStore()).code == "archive-invalid"


def test_something_that_is_not_an_archive_is_refused() -> None:
    for data in (b"", b"{}", b"\x1f\x8b not really gzip", b"\0" * 10240):
        assert _refused(data, MemoryDocumentStore()).code == "archive-invalid"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(where=st.floats(min_value=0, max_value=1, exclude_max=True), flip=st.integers(min_value=1, max_value=255))
def test_any_byte_changed_is_refused_or_changes_nothing_that_is_imported(
        source: FileDocumentStore, where: float, flip: int) -> None:
    """Tar padding and the end-of-archive blocks carry no data: a change there may pass, and then the
    import is exactly the original's; anywhere else it is refused."""
    archive = _archive_cache.setdefault(str(source.storage_dir), _archive(source))
    at = int(len(archive) * where)
    changed = archive[:at] + bytes([archive[at] ^ flip]) + archive[at + 1:]
    target = MemoryDocumentStore()
    try:
        _import(changed, target)
    except SchemaDocError as error:
        assert error.code == "archive-invalid"
        assert target.list_metas() == []
    else:
        assert _state(target) == _state(source)


_archive_cache: dict[str, bytes] = {}  # one export per source store, not one per example


def test_a_journal_that_does_not_replay_to_the_content_is_refused(source: FileDocumentStore) -> None:
    import hashlib

    members = _members(_archive(source))
    name = next(name for name in members if name.endswith("journal.jsonl"))
    lines = members[name].splitlines(keepends=True)
    members[name] = b"".join(lines[:-1])  # the last version's entry gone, the checksums made to agree
    members[SUMS] = "".join(f"{hashlib.sha256(data).hexdigest()}  {member}\n"
                            for member, data in members.items() if member != SUMS).encode()
    error = _refused(_repack(iter(members.items())), MemoryDocumentStore())
    assert error.code == "archive-invalid" and "journal" in error.message


# -- doc_ids already stored ------------------------------------------------------------------------


def _half_present(source: FileDocumentStore) -> tuple[bytes, MemoryDocumentStore, str, str]:
    """An archive of three documents and a store holding the first of them, changed since."""
    archive = _archive(source)
    target = MemoryDocumentStore()
    first, second = (meta.doc_id for meta in source.list_metas()[:2])
    _import(archive, target)  # then all but the first purged, and the first written to
    for meta in target.list_metas():
        if meta.doc_id != first:
            target.purge(meta.doc_id)
    service = _service(target)
    service.update_node(first, "/title", "Changed since the backup", target.read_meta(first).version)
    service.close()
    return archive, target, first, second


def test_existing_fail_refuses_before_anything_is_written(source: FileDocumentStore) -> None:
    archive, target, first, _ = _half_present(source)
    error = _refused(archive, target)
    assert error.code == "import-conflict"
    assert error.details["doc_ids"] == [first] and error.details["count"] == 1
    assert [meta.doc_id for meta in target.list_metas()] == [first]


def test_existing_skip_keeps_the_stored_document_and_imports_the_others(source: FileDocumentStore) -> None:
    archive, target, first, second = _half_present(source)
    summary, lines = _import(archive, target, existing="skip")
    assert (summary.imported, summary.skipped, summary.replaced) == (2, 1, 0)
    assert lines == [f"{first}: already in the store, kept as it is"]
    assert _service(target).read_document(first)[0]["title"] == "Changed since the backup"
    assert _state(target)[second] == _state(source)[second]


def test_existing_replace_puts_the_archive_s_document_in_place(source: FileDocumentStore) -> None:
    archive, target, first, _ = _half_present(source)
    summary, lines = _import(archive, target, existing="replace")
    assert (summary.imported, summary.skipped, summary.replaced) == (3, 0, 1)
    assert lines == [f"{first}: replaced by the archive's version 6"]
    assert _state(target) == _state(source)


def test_replace_works_on_the_files_store_too(source: FileDocumentStore, tmp_path: Path) -> None:
    target = FileDocumentStore(tmp_path / "target")
    target.open()
    _import(_archive(source), target)
    service = _service(target)
    doc_id = source.list_metas()[0].doc_id
    service.update_node(doc_id, "/title", "Changed", target.read_meta(doc_id).version)
    service.close()
    _import(_archive(source), target, existing="replace")
    assert _state(target) == _state(source)
    reopened = FileDocumentStore(tmp_path / "target")
    report = reopened.open()
    assert (report.corrupt, report.abandoned) == ({}, [])
    assert _state(reopened) == _state(source)


# -- documents the served schema refuses -----------------------------------------------------------


def test_documents_the_schema_refuses_are_reported_and_the_others_imported(
        source: FileDocumentStore, tmp_path: Path) -> None:
    strict = tmp_path / "strict.schema.json"
    strict.write_bytes(orjson.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                                     "properties": {"tags": {"maxItems": 0}}}))
    validator = DocumentValidator(load_schema(strict))
    service = _service(source)
    tagged = source.list_metas()[1].doc_id
    service.apply_patch(tagged, [{"op": "add", "path": "/tags/0", "value": "x"}], source.read_meta(tagged).version)
    service.close()
    target = MemoryDocumentStore()
    summary, lines = _import(_archive(source), target, validator=validator)
    assert (summary.documents, summary.imported, summary.invalid) == (3, 2, 1)
    assert len(lines) == 1 and lines[0].startswith(f"{tagged}: refused by the schema, not imported (1 violation(s))")
    assert "/tags" in lines[0]
    assert sorted(target_meta.doc_id for target_meta in target.list_metas()) == sorted(
        meta.doc_id for meta in source.list_metas() if meta.doc_id != tagged)
