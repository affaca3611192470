"""What ``schemadoc check`` stands on: a files store opened read-only writes nothing (no recovery, no marker, no
lock file, a damaged snapshot reported rather than rebuilt, every write refused); a document is read at its
journal's version whatever its snapshot's; path patterns; and, as a property, the verdicts and the tallies of
:class:`StoreCheck` are python-jsonschema's on documents written in random versions with a lagging snapshot."""

from __future__ import annotations

import json
import re
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry
from schemadoc.schema import load_schema
from schemadoc.storage import FileDocumentStore
from schemadoc.storage.base import DocumentMeta
from schemadoc.storage.current import list_documents, open_for_reading, read_current
from schemadoc.store_check import StoreCheck, path_pattern
from schemadoc.validation import DocumentValidator, Violation

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "maxLength": 3},
        "items": {"type": "array", "items": {"type": "object", "required": ["id"],
                                             "properties": {"id": {"type": "integer", "minimum": 0}}}},
        "by_key": {"type": "object", "additionalProperties": {"type": "integer", "maximum": 5}},
    },
}
DOC_ID = "01JD0000000000000000000000"
OTHER_ID = "01JD0000000000000000000001"


def _violation(path: str, constraint: str = "maxLength", expected: Any = 3) -> Violation:
    return Violation("x", "x", path, constraint, expected)


def test_array_indices_become_stars_and_member_names_stay() -> None:
    document = {"chapters": [{"0": {"t": 1}}, {}], "7": [[1]]}
    assert path_pattern(document, _violation("/chapters/1/0/t")) == "/chapters/*/0/t"
    assert path_pattern(document, _violation("/7/0/0")) == "/7/*/*"
    assert path_pattern(document, _violation("")) == "/"
    # a missing required member is placed at the member
    assert path_pattern(document, _violation("/chapters/1", "required", "isbn")) == "/chapters/*/isbn"
    assert path_pattern(document, _violation("", "required", "a/b")) == "/a~1b"


def _write(store: FileDocumentStore, doc_id: str, versions: list[Any], snapshot_at: int = 1) -> None:
    """``versions`` as the journal of ``doc_id`` (version 1 created, each later one a replacement of the root),
    the snapshot left at ``snapshot_at``."""
    first = orjson.dumps(versions[0])
    meta = DocumentMeta(doc_id, 1, "urn:test", "2026-01-01T00:00:00.000Z", "2026-01-01T00:00:00.000Z", len(first))
    store.create(meta, JournalEntry(1, "create", [{"op": "add", "path": "", "value": versions[0]}], meta.created_at),
                 first)
    for version, content in enumerate(versions[1:], start=2):
        data = orjson.dumps(content)
        meta = DocumentMeta(doc_id, version, "urn:test", meta.created_at, meta.modified_at, len(data))
        store.commit(meta, JournalEntry(version, "patch", [{"op": "replace", "path": "", "value": content}],
                                        meta.modified_at))
        if version == snapshot_at:
            store.write_snapshot(doc_id, version, data)


def _files(directory: Path) -> dict[str, tuple[int, int]]:
    return {str(path.relative_to(directory)): (path.stat().st_size, path.stat().st_mtime_ns)
            for path in sorted(directory.rglob("*")) if path.is_file()}


def test_a_read_only_store_reads_the_journals_version_and_writes_nothing(tmp_path: Path) -> None:
    writable = FileDocumentStore(tmp_path)
    writable.open()
    _write(writable, DOC_ID, [{"name": "one"}, {"name": "two"}, {"name": "three"}], snapshot_at=2)
    _write(writable, OTHER_ID, [{"name": "a"}, {"name": "b"}])
    (tmp_path / f"{OTHER_ID}.lock").unlink()
    (tmp_path / "left-by-a-crash.tmp").write_bytes(b"x")  # recovery would remove it
    before = _files(tmp_path)
    store = open_for_reading(tmp_path)
    assert read_current(store, DOC_ID).content == {"name": "three"}
    assert read_current(store, DOC_ID).meta.version == 3
    assert read_current(store, OTHER_ID).content == {"name": "b"}
    meta = store.read_meta(DOC_ID)
    with pytest.raises(SchemaDocError) as refused:
        store.commit(DocumentMeta(DOC_ID, 4, "urn:test", meta.created_at, meta.modified_at, 2),
                     JournalEntry(4, "patch", [], meta.modified_at))
    assert refused.value.code == "storage-write-failed"
    for write in (lambda: store.write_snapshot(DOC_ID, 3, b'{"name":"three"}'), lambda: store.purge(DOC_ID)):
        with pytest.raises(SchemaDocError):
            write()
    assert _files(tmp_path) == before
    # a damaged snapshot is reported, not rebuilt
    (tmp_path / f"{DOC_ID}.json").write_bytes(b'{"name":"tw"}')
    damaged = _files(tmp_path)
    with pytest.raises(SchemaDocError) as unreadable:
        read_current(open_for_reading(tmp_path), DOC_ID)
    assert unreadable.value.code == "storage-read-failed"
    assert _files(tmp_path) == damaged


def test_a_missing_directory_is_a_storage_failure_and_is_not_made(tmp_path: Path) -> None:
    with pytest.raises(SchemaDocError) as missing:
        open_for_reading(tmp_path / "nowhere")
    assert missing.value.code == "storage-read-failed"
    assert not (tmp_path / "nowhere").exists()


def test_a_document_whose_meta_cannot_be_read_is_listed_as_a_failure(tmp_path: Path) -> None:
    writable = FileDocumentStore(tmp_path)
    writable.open()
    _write(writable, DOC_ID, [{"name": "one"}])
    _write(writable, OTHER_ID, [{"name": "two"}])
    (tmp_path / f"{OTHER_ID}.meta.json").write_bytes(b"{")
    metas, failures = list_documents(open_for_reading(tmp_path))
    assert [meta.doc_id for meta in metas] == [DOC_ID]
    assert [(error.code, error.details["doc_id"]) for error in failures] == [("storage-read-failed", OTHER_ID)]


def _expected_patterns(document: Any, errors: list[Any]) -> Counter[str]:
    patterns: Counter[str] = Counter()
    for error in errors:
        parts = ["*" if isinstance(part, int) else str(part).replace("~", "~0").replace("/", "~1")
                 for part in error.absolute_path]
        if error.validator == "required":
            match = re.fullmatch(r"'(.*)' is a required property", error.message)
            assert match is not None
            parts.append(match.group(1))
        patterns["".join("/" + part for part in parts) or "/"] += 1
    return patterns


_documents = st.fixed_dictionaries({}, optional={
    "name": st.text(max_size=5),
    "items": st.lists(st.fixed_dictionaries({}, optional={"id": st.integers(-2, 2), "x": st.booleans()}), max_size=3),
    "by_key": st.dictionaries(st.sampled_from(["0", "1", "a"]), st.integers(0, 8), max_size=3),
})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(books=st.lists(st.tuples(st.lists(_documents, min_size=1, max_size=4), st.integers(1, 4)),
                      min_size=1, max_size=4))
def test_verdicts_and_tallies_are_python_jsonschemas_at_the_current_version(
        books: list[tuple[list[Any], int]]) -> None:
    oracle = jsonschema.Draft202012Validator(SCHEMA)
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        schema_path = root / "schema.json"
        schema_path.write_text(json.dumps(SCHEMA))
        store = FileDocumentStore(root / "data")
        store.open()
        last: dict[str, Any] = {}
        for number, (versions, snapshot_at) in enumerate(books):
            doc_id = f"01JD{number:022d}"
            _write(store, doc_id, versions, snapshot_at)
            last[doc_id] = versions[-1]
        inventory = StoreCheck(DocumentValidator(load_schema(schema_path)))
        inventory.run(open_for_reading(root / "data"))
    errors = {doc_id: list(oracle.iter_errors(document)) for doc_id, document in last.items()}
    assert {verdict.doc_id: verdict.violation_count for verdict in inventory.invalid} == {
        doc_id: len(found) for doc_id, found in errors.items() if found}
    assert inventory.valid == sum(1 for found in errors.values() if not found)
    expected: Counter[str] = Counter()
    for doc_id, found in errors.items():
        expected += _expected_patterns(last[doc_id], found)
    assert {pattern: tally.violations for pattern, tally in inventory.by_pattern.items()} == dict(expected)
