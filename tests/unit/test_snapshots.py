"""Journal-first writes: sizes from the patch alone, chunked snapshots, the background snapshotter."""

from __future__ import annotations

import time
import weakref
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch
from schemadoc.ops.sizes import patch_size
from schemadoc.pointer import format_pointer
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.snapshotter import SnapshotPolicy, dumps_chunked, iter_chunked
from schemadoc.storage.files import FileDocumentStore

BOOK = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
SCHEMA = load_schema(BOOK)
CHAPTER = {"id": "ch-1", "title": "One", "sections": [{"title": "S", "paragraphs": [{"text": "p"}], "sections": []}]}

scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | st.floats(allow_nan=False,
                                                                                allow_infinity=False) | st.text()
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=5),
                                                                                              inner, max_size=6),
                           max_leaves=40)


def pointers(document: Any, prefix: list[str | int] | None = None) -> list[list[str | int]]:
    prefix = prefix or []
    found = [prefix]
    if isinstance(document, dict):
        for key, value in document.items():
            found += pointers(value, [*prefix, key])
    elif isinstance(document, list):
        for index, value in enumerate(document):
            found += pointers(value, [*prefix, index])
    return found


@st.composite
def patches(draw: st.DrawFn) -> tuple[Any, list[dict[str, Any]]]:
    document = draw(st.dictionaries(st.text(max_size=5), json_values, min_size=1, max_size=5))
    patch: list[dict[str, Any]] = []
    current = document
    for _ in range(draw(st.integers(1, 4))):
        paths = pointers(current)
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]))
        pointer = format_pointer(path)
        operation: dict[str, Any]
        if op in ("add", "replace", "test"):
            if op == "add" and path and draw(st.booleans()):
                parent_path = path[:-1]
                parent: Any = current
                for token in parent_path:
                    parent = parent[token]
                tail = str(len(parent)) if isinstance(parent, list) else draw(st.text(max_size=4))
                pointer = format_pointer([*parent_path, tail])
            operation = {"op": op, "path": pointer, "value": draw(json_values)}
        elif op == "remove":
            if not path:
                continue
            operation = {"op": "remove", "path": pointer}
        else:
            source = draw(st.sampled_from(paths))
            operation = {"op": op, "from": format_pointer(source), "path": pointer}
        try:
            current = apply_patch(current, [operation]).document
        except SchemaDocError:
            continue
        patch.append(operation)
    return document, patch


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patches())
def test_the_size_after_a_patch_is_known_without_serialising_the_document(case: tuple[Any, list[Any]]) -> None:
    document, patch = case
    applied = apply_patch(document, patch)
    sized = patch_size(document, len(orjson.dumps(document)), applied.patch, "D")
    assert sized.size == len(orjson.dumps(applied.document))


@settings(max_examples=200, deadline=None)
@given(json_values)
def test_chunked_serialisation_gives_the_same_bytes(value: Any) -> None:
    assert dumps_chunked(value) == orjson.dumps(value)


def test_chunked_serialisation_pauses_between_pieces_of_a_big_document() -> None:
    document = {"chapters": [{"title": f"c{i}", "text": "x" * 1000} for i in range(2000)]}
    pauses: list[int] = []
    assert dumps_chunked(document, pause=lambda: pauses.append(1)) == orjson.dumps(document)
    assert len(pauses) >= 7  # ~2 MB in pieces of 256 KiB


def test_pieces_of_the_serialisation_are_about_256_kib_and_the_pause_comes_after_each() -> None:
    document = {"chapters": [{"title": f"c{i}", "text": "x" * 1000} for i in range(2000)]}
    events: list[int] = []
    pieces = []
    for piece in iter_chunked(document, pause=lambda: events.append(-1)):
        events.append(len(piece))
        pieces.append(piece)
    assert b"".join(pieces) == orjson.dumps(document)
    assert all(256 << 10 <= size < 260 << 10 for size in events[:-1:2]) and len(pieces) >= 7
    assert events[1::2] == [-1] * (len(events) // 2)  # a pause after every full piece, none after the last


def test_pieces_refuse_what_orjson_refuses() -> None:
    with pytest.raises(orjson.JSONEncodeError):
        b"".join(iter_chunked({"a": [1, {2: "non-string key"}] * 40}))


def test_the_files_store_writes_a_snapshot_from_pieces_drawn_only_when_it_writes(tmp_path: Path) -> None:
    service = lazy_service(tmp_path, lag_versions=1000, interval_seconds=3600)
    doc_id, *_ = service.create_document()
    service.update_node(doc_id, "/title", "piece by piece", 1)
    content = service.read_document(doc_id)[0]
    store = service.store
    assert isinstance(store, FileDocumentStore)
    drawn: list[bytes] = []

    def pieces() -> Any:
        for piece in iter_chunked(content):
            drawn.append(piece)
            yield piece

    assert store.write_snapshot_pieces(doc_id, 1, pieces()) is False and drawn == []  # already there
    assert store.write_snapshot_pieces(doc_id, 2, pieces()) is True
    assert (tmp_path / f"{doc_id}.json").read_bytes() == orjson.dumps(content)
    meta = store.read_meta(doc_id)
    assert (meta.snapshot_version, meta.content_size_bytes) == (2, len(orjson.dumps(content)))
    service.snapshots.stop()


def test_a_piece_that_raises_leaves_the_snapshot_and_the_directory_as_they_were(tmp_path: Path) -> None:
    service = lazy_service(tmp_path, lag_versions=1000, interval_seconds=3600)
    doc_id, *_ = service.create_document()
    service.update_node(doc_id, "/title", "not yet", 1)
    store = service.store
    assert isinstance(store, FileDocumentStore)
    before = {path.name: path.read_bytes() for path in tmp_path.iterdir()  # but the derived search index
              if path.is_file() and not path.name.startswith("search-index.")}

    def broken() -> Any:
        yield b'{"title":'
        raise orjson.JSONEncodeError("not serialisable")

    with pytest.raises(orjson.JSONEncodeError):
        store.write_snapshot_pieces(doc_id, 2, broken())
    assert {path.name: path.read_bytes() for path in tmp_path.iterdir() if path.is_file()
            and not path.name.startswith("search-index.")} == before
    assert store.read_meta(doc_id).snapshot_version == 1
    service.snapshots.stop()


def test_the_background_snapshot_of_a_big_document_is_its_exact_bytes(tmp_path: Path) -> None:
    service = lazy_service(tmp_path, lag_versions=1, interval_seconds=3600)
    doc_id, *_ = service.create_document()
    paragraphs = [{"text": "t" * 2000} for _ in range(300)]  # ~0.6 MB: several pieces
    chapters = [{**CHAPTER, "sections": [{"title": "S", "paragraphs": paragraphs, "sections": []}]}]
    service.update_node(doc_id, "/chapters", chapters, 1)
    service.update_node(doc_id, "/title", "streamed", 2)
    assert service.snapshots.wait_idle()
    assert service.store.read_meta(doc_id).snapshot_version == 3
    assert (tmp_path / f"{doc_id}.json").read_bytes() == orjson.dumps(service.read_document(doc_id)[0])
    service.snapshots.stop()


def test_the_patch_check_refuses_exactly_what_serialising_the_document_refused() -> None:
    deep: Any = []
    for _ in range(251):  # 252 nested arrays: with the 3 containers above it, one level too many
        deep = [deep]
    document = {"a": {"b": []}}
    with pytest.raises(SchemaDocError) as raised:
        patch_size(document, len(orjson.dumps(document)), [{"op": "add", "path": "/a/b/0", "value": deep}], "D")
    assert raised.value.code == "document-too-deep"
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(apply_patch(document, [{"op": "add", "path": "/a/b/0", "value": deep}]).document)
    shallow = deep[0]  # one level less: exactly at the limit, accepted
    fits = apply_patch(document, [{"op": "add", "path": "/a/b/0", "value": shallow}]).document
    assert patch_size(document, len(orjson.dumps(document)), [{"op": "add", "path": "/a/b/0", "value": shallow}],
                      "D").size == len(orjson.dumps(fits))
    with pytest.raises(SchemaDocError) as raised:  # moving a deep subtree deeper is refused too
        patch_size(fits, len(orjson.dumps(fits)), [{"op": "copy", "from": "/a/b/0", "path": "/a/b/0/0"}],
                   "D")
    assert raised.value.code == "document-too-deep"
    with pytest.raises(SchemaDocError) as raised:
        patch_size(document, 0, [{"op": "replace", "path": "/a", "value": 2**64}], "D")
    assert raised.value.code == "number-out-of-range"


def lazy_service(tmp_path: Path, **policy: Any) -> DocumentService:
    service = DocumentService(SCHEMA, FileDocumentStore(tmp_path),
                              snapshot_policy=SnapshotPolicy(**{"mode": "lazy", "inline_below_bytes": 0, **policy}))
    service.open()
    return service


def test_a_lazy_write_is_journaled_and_its_snapshot_follows_at_close(tmp_path: Path) -> None:
    service = lazy_service(tmp_path, lag_versions=1000, interval_seconds=3600)
    doc_id, *_ = service.create_document()
    service.create_node(doc_id, "/chapters/-", CHAPTER, 1)
    service.update_node(doc_id, "/title", "Lazy", 2)
    meta = service.store.read_meta(doc_id)
    assert (meta.version, meta.snapshot_version) == (3, 1)
    assert orjson.loads((tmp_path / f"{doc_id}.json").read_bytes())["title"] != "Lazy"
    assert meta.content_size_bytes == len(orjson.dumps(service.read_document(doc_id)[0]))
    restarted = DocumentService(SCHEMA, FileDocumentStore(tmp_path))  # as after a crash: journal replayed
    restarted.open()
    assert restarted.read_document(doc_id)[0] == service.read_document(doc_id)[0]
    service.close()
    assert service.store.read_meta(doc_id).snapshot_version == 3
    assert orjson.loads((tmp_path / f"{doc_id}.json").read_bytes())["title"] == "Lazy"


def test_a_snapshot_starts_once_enough_versions_lag(tmp_path: Path) -> None:
    service = lazy_service(tmp_path, lag_versions=3, interval_seconds=3600)
    doc_id, *_ = service.create_document()
    for version in range(1, 6):
        service.update_node(doc_id, "/title", f"t{version}", version)
    assert service.snapshots.wait_idle()
    assert service.store.read_meta(doc_id).snapshot_version >= 4  # coalesced: the newest version at the time
    service.snapshots.stop()


def test_a_lagging_snapshot_is_written_after_the_interval(tmp_path: Path) -> None:
    service = lazy_service(tmp_path, lag_versions=1000, interval_seconds=0.2)
    doc_id, *_ = service.create_document()
    service.update_node(doc_id, "/title", "later", 1)
    assert service.store.read_meta(doc_id).snapshot_version == 1
    deadline = time.monotonic() + 10
    while service.store.read_meta(doc_id).snapshot_version < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert service.store.read_meta(doc_id).snapshot_version == 2
    assert service.read_node(doc_id, "/title").node == "later"
    service.snapshots.stop()


def test_documents_below_the_inline_size_keep_their_snapshot_current(tmp_path: Path) -> None:
    service = lazy_service(tmp_path, inline_below_bytes=1 << 20, interval_seconds=3600)
    doc_id, *_ = service.create_document()
    service.update_node(doc_id, "/title", "Now", 1)
    assert service.store.read_meta(doc_id).snapshot_version == 2
    assert orjson.loads((tmp_path / f"{doc_id}.json").read_bytes())["title"] == "Now"
    service.snapshots.stop()


def test_history_checkpoints_of_a_lazy_document_are_written_in_the_background(tmp_path: Path) -> None:
    service = lazy_service(tmp_path, lag_versions=100_000, interval_seconds=3600)
    doc_id, *_ = service.create_document()
    for version in range(1, 300):
        service.update_node(doc_id, "/title", f"t{version + 1}", version)
    assert service.snapshots.wait_idle()
    assert service.store.read_checkpoint(doc_id, 299) == (256, orjson.dumps(service.read_version(doc_id, 256)))
    service.snapshots.stop()


def test_a_service_dropped_without_close_is_freed_with_its_documents(tmp_path: Path) -> None:
    """Its snapshot thread lives on; it must not keep the service (and every document) alive."""
    service = lazy_service(tmp_path, lag_versions=1000, interval_seconds=3600)
    doc_id, *_ = service.create_document()
    service.update_node(doc_id, "/title", "lagging", 1)  # a lagging snapshot: the thread is running
    snapshots = service.snapshots
    gone = weakref.ref(service)
    del service
    assert gone() is None  # freed at once, by reference counting (no cycle for gc.freeze() to pin)
    snapshots.stop()


def test_a_checkpoint_is_written_from_pieces_and_a_piece_that_raises_leaves_nothing(tmp_path: Path) -> None:
    store = FileDocumentStore(tmp_path)
    store.open()
    service = DocumentService(SCHEMA, store)
    doc_id, *_ = service.create_document()
    content = {"title": "t" * 600_000, "chapters": [CHAPTER] * 500}
    store.write_checkpoint_pieces(doc_id, 1, iter_chunked(content))
    assert store.read_checkpoint(doc_id, 1) == (1, orjson.dumps(content))

    def broken() -> Any:
        yield b'{"title":'
        raise orjson.JSONEncodeError("not serialisable")

    with pytest.raises(orjson.JSONEncodeError):
        store.write_checkpoint_pieces(doc_id, 2, broken())
    assert store.read_checkpoint(doc_id, 2) == (1, orjson.dumps(content))
    assert sorted(path.name for path in (tmp_path / "checkpoints" / doc_id).iterdir()) == ["1.json"]
