"""The store contract: the write lock between threads."""

from __future__ import annotations

import threading
import time

import orjson
import pytest
from contract.storage.helpers import (
    SHORT_TIMEOUT,
    codes,
    commit_patch,
    create_document,
    in_thread,
    new_doc_id,
)

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import replay
from schemadoc.storage.base import DocumentStore

__all__ = ["LocksContract"]


class LocksContract:
    """The per-document write lock."""

    # -- write lock ------------------------------------------------------------------------------

    def test_write_lock_excludes_a_second_thread(self, store: DocumentStore) -> None:
        doc_id = new_doc_id()
        with store.write_lock(doc_id):
            started = time.monotonic()
            raised = _take_in_another_thread(store, doc_id)
            waited = time.monotonic() - started
        assert codes(raised) == ["lock-timeout"]
        assert isinstance(raised[0], SchemaDocError)
        assert raised[0].details == {"doc_id": doc_id, "timeout_seconds": SHORT_TIMEOUT}
        assert waited >= SHORT_TIMEOUT * 0.9

    def test_write_lock_is_released_after_the_block(self, store: DocumentStore) -> None:
        doc_id = new_doc_id()
        with store.write_lock(doc_id):
            pass
        assert _take_in_another_thread(store, doc_id) == []

    def test_write_lock_is_released_after_an_exception(self, store: DocumentStore) -> None:
        doc_id = new_doc_id()
        with pytest.raises(RuntimeError), store.write_lock(doc_id):
            raise RuntimeError("the write failed")
        assert _take_in_another_thread(store, doc_id) == []

    def test_a_waiting_writer_gets_the_lock_when_it_is_released(self, store: DocumentStore) -> None:
        doc_id = new_doc_id()
        holding = threading.Event()
        release = threading.Event()

        def hold() -> None:
            with store.write_lock(doc_id):
                holding.set()
                release.wait(10)

        holder = threading.Thread(target=hold)
        holder.start()
        assert holding.wait(10)
        threading.Timer(0.1, release.set).start()
        with store.write_lock(doc_id, timeout=10):
            assert release.is_set()
        holder.join(10)

    def test_write_lock_is_reentrant_in_the_holding_thread(self, store: DocumentStore) -> None:
        meta = create_document(store, {"a": 1})
        with store.write_lock(meta.doc_id), store.write_lock(meta.doc_id, timeout=SHORT_TIMEOUT):
            commit_patch(store, meta, [{"op": "replace", "path": "/a", "value": 2}])  # takes it once more
        assert store.read_meta(meta.doc_id).version == 2

    def test_write_locks_of_different_documents_are_independent(self, store: DocumentStore) -> None:
        first, second = new_doc_id(), new_doc_id()

        def take_second() -> None:
            with store.write_lock(second, timeout=SHORT_TIMEOUT):
                pass

        with store.write_lock(first):
            assert in_thread(take_second) == []

    def test_a_write_lock_alone_does_not_create_a_document(self, store: DocumentStore) -> None:
        doc_id = new_doc_id()
        with store.write_lock(doc_id):
            pass
        assert store.list_metas() == []
        with pytest.raises(SchemaDocError) as raised:
            store.load(doc_id)
        assert raised.value.code == "document-not-found"

    def test_writers_in_many_threads_never_lose_or_repeat_a_version(self, store: DocumentStore) -> None:
        meta = create_document(store, {"log": []})
        threads, rounds = 4, 8

        def write(name: str) -> None:
            for n in range(rounds):
                with store.write_lock(meta.doc_id):
                    current = store.read_meta(meta.doc_id)
                    commit_patch(store, current, [{"op": "add", "path": f"/log/{current.version - 1}",
                                                   "value": f"{name}{n}"}])

        workers = [threading.Thread(target=write, args=(f"t{i}-",)) for i in range(threads)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(60)
        stored = store.load(meta.doc_id)
        assert stored.meta.version == 1 + threads * rounds
        entries = store.read_journal(meta.doc_id)
        assert [entry.version for entry in entries] == list(range(1, 2 + threads * rounds))
        assert replay(entries) == orjson.loads(stored.content)
        assert len(orjson.loads(stored.content)["log"]) == threads * rounds


def _take_in_another_thread(store: DocumentStore, doc_id: str) -> list[BaseException]:
    """Take and release ``doc_id``'s write lock in another thread; what that raised."""

    def take() -> None:
        with store.write_lock(doc_id, timeout=SHORT_TIMEOUT):
            pass

    return in_thread(take)
