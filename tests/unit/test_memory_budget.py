"""The memory budget: documents and their caches held under one byte budget, evicted least recently used."""

from __future__ import annotations

import gc
import sys
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest

from schemadoc.config import load_settings, parse_size
from schemadoc.errors import SchemaDocError
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.service.memory import BYTES_PER_BLOCK, ResidentSet, default_budget
from schemadoc.service.models import DocState
from schemadoc.service.payloads import parse_stored
from schemadoc.storage.base import DocumentMeta
from schemadoc.storage.files import FileDocumentStore

BOOK = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
SCHEMA = load_schema(BOOK)
MIB = 1 << 20


def book(number: int, paragraphs: int = 1000) -> dict[str, Any]:
    text = f"Paragraph of book {number}, long enough to weigh something in memory. " * 3
    section = {"title": "S", "paragraphs": [{"text": f"{i} {text}"} for i in range(paragraphs)], "sections": []}
    return {"title": f"Book {number}", "metadata": {"language": "en", "status": "draft", "edition": 1},
            "chapters": [{"id": "ch-1", "title": "One", "sections": [section]}]}


def service_with(tmp_path: Path, budget: int) -> DocumentService:
    service = DocumentService(SCHEMA, FileDocumentStore(tmp_path), memory_budget=budget)
    service.open()
    return service


def filled(service: DocumentService, count: int) -> list[str]:
    ids = []
    for number in range(count):
        doc_id, *_ = service.create_document()
        service.update_node(doc_id, "", book(number), 1)
        ids.append(doc_id)
    return ids


def test_sizes_are_read_with_binary_and_decimal_units() -> None:
    assert parse_size("256MiB") == 256 * MIB
    assert parse_size("2GiB") == 2 << 30
    assert parse_size("1.5GB") == 1_500_000_000
    assert parse_size("4096") == 4096
    with pytest.raises(ValueError, match="256MiB"):
        parse_size("lots")


def test_the_budget_comes_from_the_flag_the_environment_or_the_file(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"schema_path": "s.json", "memory_budget": "1GiB"}')
    environ = {"CONFIG_FILE": str(config)}
    assert load_settings({}, environ).memory_budget == 1 << 30
    assert load_settings({}, {**environ, "MEMORY_BUDGET": "64MiB"}).memory_budget == 64 * MIB
    assert load_settings({"memory_budget": "2GiB"}, {**environ, "MEMORY_BUDGET": "64MiB"}).memory_budget == 2 << 30
    with pytest.raises(SchemaDocError) as caught:
        load_settings({}, {**environ, "MEMORY_BUDGET": "a lot"})
    assert caught.value.code == "config-invalid"
    assert caught.value.details["setting"] == "memory_budget"
    with pytest.raises(SchemaDocError, match="at least"):
        load_settings({}, {**environ, "MEMORY_BUDGET": "1000"})


def test_the_default_budget_is_a_quarter_of_the_machines_memory() -> None:
    import os

    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    assert 64 * MIB <= default_budget() <= max(physical // 4, 64 * MIB)


def test_the_charge_of_a_parsed_document_follows_its_measured_memory() -> None:
    """json bytes + BYTES_PER_BLOCK per allocator block: close to what tracemalloc sees, for prose and numbers."""
    shapes = [book(1, 3000), {"values": list(range(1000, 200_000))}, {"items": [{} for _ in range(100_000)]}]
    for shape in shapes:
        data = orjson.dumps(shape)
        gc.disable()  # as the service does around a parse
        before = sys.getallocatedblocks()
        parsed = parse_stored(data)
        charged = len(data) + BYTES_PER_BLOCK * (sys.getallocatedblocks() - before)
        gc.enable()
        del parsed
        tracemalloc.start()
        parsed = parse_stored(data)
        traced = tracemalloc.get_traced_memory()[0]
        tracemalloc.stop()
        del parsed
        assert 0.9 * traced <= charged <= 2.5 * traced  # never much under; over on numbers (28-byte ints)


def test_a_stored_document_parses_to_what_orjson_and_json_read() -> None:
    """The cold-read parser beside orjson: the same values; integers beyond 64 bits exact, as json reads them."""
    import json

    data = orjson.dumps(book(3, 50))
    assert parse_stored(data) == orjson.loads(data)
    assert parse_stored(b'{"n":123456789012345678901234567890}') == {"n": 123456789012345678901234567890}
    assert parse_stored(b'[0.1,5e-324,-0.0,1E5]') == json.loads(b'[0.1,5e-324,-0.0,1E5]')
    with pytest.raises(orjson.JSONDecodeError):
        parse_stored(b'{"a": ')


def test_documents_beyond_the_budget_are_evicted_and_read_back_exactly(tmp_path: Path) -> None:
    service = service_with(tmp_path, 2 * MIB)
    ids = filled(service, 12)
    assert service.memory.charged <= 2 * MIB
    assert service.memory.evictions > 0
    assert len(service.memory) < 12
    for number, doc_id in enumerate(ids):  # every evicted one reloads from snapshot + journal tail
        content, meta = service.read_document(doc_id)
        assert content == book(number)
        assert meta.version == 2
    service.close()


def test_an_evicted_document_takes_writes_and_keeps_its_history(tmp_path: Path) -> None:
    service = service_with(tmp_path, 2 * MIB)
    ids = filled(service, 8)
    first = ids[0]
    assert first not in service.memory
    result = service.update_node(first, "/title", "Renamed", 2)
    assert result.version == 3
    filled(service, 6)  # pushes it out again
    assert first not in service.memory
    assert service.read_node(first, "/title").node == "Renamed"
    assert service.read_version(first, 2) == book(0)
    assert service.diff(first, 2, 3) == [{"op": "replace", "path": "/title", "value": "Renamed"}]
    service.close()


def test_a_lagging_snapshot_of_an_evicted_document_is_still_written_at_shutdown(tmp_path: Path) -> None:
    service = service_with(tmp_path, 2 * MIB)
    ids = filled(service, 8)
    assert ids[0] not in service.memory
    service.close()
    store = FileDocumentStore(tmp_path)
    store.open()
    assert all(store.read_meta(doc_id).snapshot_version == 2 for doc_id in ids)


def test_a_document_in_the_middle_of_a_write_is_never_evicted() -> None:
    evicted: list[str] = []
    held = ResidentSet(1000, lambda doc_id, entry: evicted.append(doc_id))

    def state(doc_id: str) -> DocState:
        return DocState(DocumentMeta(doc_id=doc_id, version=1, schema_uri="s", created_at="t", modified_at="t",
                                     content_size_bytes=10), {})

    held.put("a", state("a"), 10)
    with held.pinned("a"):
        held.put("b", state("b"), 600)
        held.put("c", state("c"), 600)  # over the budget: b goes, a is pinned
        assert "a" in held
        assert evicted == ["b"]
    held.put("d", state("d"), 600)  # a is no longer pinned: least recently used, so it goes
    assert evicted[1:] == ["a", "c"]
    assert "d" in held  # the newest stays, even alone over the budget


def test_concurrent_reads_and_writes_under_a_small_budget_stay_correct(tmp_path: Path) -> None:
    service = service_with(tmp_path, 2 * MIB)
    ids = filled(service, 10)
    errors: list[BaseException] = []

    def work(offset: int) -> None:
        try:
            for turn in range(20):
                doc_id = ids[(offset + turn) % len(ids)]
                assert service.read_node(doc_id, "/chapters/0/id").node == "ch-1"
                if turn % 5 == offset % 5:
                    version = service.version_of(doc_id)
                    try:
                        service.update_node(doc_id, "/chapters/0/title", f"t{offset}-{turn}", version)
                    except SchemaDocError as error:
                        assert error.code == "version-conflict"
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert service.memory.charged <= 2 * MIB
    for doc_id in ids:
        content, meta = service.read_document(doc_id)
        replayed = service.read_version(doc_id, meta.version)
        assert content == replayed
    service.close()


def test_the_same_budget_holds_on_the_postgresql_store() -> None:
    from pg_support import throwaway_schema

    from schemadoc.storage.postgres import PostgresDocumentStore

    with throwaway_schema() as url:
        service = DocumentService(SCHEMA, PostgresDocumentStore(url), memory_budget=2 * MIB)
        service.open()
        try:
            ids = filled(service, 12)
            assert service.memory.evictions > 0
            assert service.memory.charged <= 2 * MIB
            for number, doc_id in enumerate(ids):
                content, meta = service.read_document(doc_id)
                assert content == book(number)
                assert meta.version == 2
            assert service.update_node(ids[0], "/title", "Again", 2).version == 3
            assert service.read_version(ids[0], 2) == book(0)
        finally:
            service.close()

