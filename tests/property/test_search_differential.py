"""document_list's filters and order against a plain in-memory evaluation (tests/search_reference.py), over random
documents and random writes (members set, removed, array items inserted in front so later ones shift; documents
deleted, restored, purged), through restarts, simulated crashes of the index and eviction from memory.

A simulated crash abandons the index with its pending changes unapplied and puts back an older copy of its file
(or none at all): the next start must find every document whose version indexed is behind the store's and bring
it up to date from its journal. The memory budget is one byte, so every document is evicted as soon as another
is used: the index never depends on what the service holds. A real ``kill -9`` of a server is in
tests/e2e/test_search_server.py.

The text units a patch changes are checked the same way: the units left after removing those below the patch's
prefixes and adding the new ones equal the units of the new document, whatever the patch.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from search_reference import Doc, expected

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch, check_patch
from schemadoc.schema import load_schema
from schemadoc.search.fields import field_rows, members_reached
from schemadoc.search.opening import INDEX_FILE
from schemadoc.search.units import changed_units, is_below, text_units
from schemadoc.service import DocumentService
from schemadoc.storage.files import FileDocumentStore

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "s": {"type": "string"}, "n": {"type": "number"}, "b": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "mixed": {"type": ["string", "number", "boolean", "null", "array", "object"]},
        "o": {"type": "object", "properties": {"k": {"enum": ["a", "b", "c"]},
                                               "deep": {"type": "object", "properties": {"x": {"type": "integer"}}}}},
    },
}
MEMBERS = ["/s", "/n", "/b", "/tags", "/mixed", "/o/k", "/o/deep/x"]
OPS = ["eq", "ne", "lt", "gt", "le", "ge", "in", "exists", "prefix", "contains"]

texts = st.one_of(st.sampled_from(["", "a", "ab", "b", "A", "é"]), st.text(alphabet="abA é", max_size=3))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2, 2), st.sampled_from([0.5, -1.5, 2.0]), texts)
values = st.one_of(scalars, st.lists(st.one_of(scalars, st.just({"z": 1})), max_size=3), st.just({"k": "a"}))
members = st.fixed_dictionaries({}, optional={
    "s": texts, "n": st.integers(-2, 2), "b": st.booleans(), "tags": st.lists(texts, max_size=3),
    "mixed": values,
    "o": st.fixed_dictionaries({}, optional={"k": st.sampled_from(["a", "b", "c"]),
                                             "deep": st.fixed_dictionaries({}, optional={"x": st.integers(-2, 2)})}),
})
steps = st.lists(st.one_of(
    st.tuples(st.just("create"), members),
    st.tuples(st.just("set"), st.integers(0, 20), st.sampled_from(["/s", "/n", "/mixed", "/o"]), values),
    st.tuples(st.just("remove"), st.integers(0, 20), st.sampled_from(["/s", "/tags", "/mixed", "/o"])),
    st.tuples(st.just("insert"), st.integers(0, 20), texts),
    st.tuples(st.just("delete"), st.integers(0, 20)),
    st.tuples(st.just("undelete"), st.integers(0, 20)),
    st.tuples(st.just("purge"), st.integers(0, 20)),
    st.tuples(st.just("keep-index-copy")),
    st.tuples(st.just("crash")),
    st.tuples(st.just("restart")),
), min_size=1, max_size=25)
terms = st.lists(st.tuples(st.sampled_from([*MEMBERS, "version", "valid", "created"]), st.sampled_from(OPS), scalars,
                           st.lists(scalars, min_size=1, max_size=3)), max_size=2)
SORTS = ["created", "-modified", "version", "-version", "doc_id", "valid", *MEMBERS, *("-" + m for m in MEMBERS)]
sorts = st.sampled_from(SORTS)


PROBES = [None, True, False, 0, 1, -1.5, 2.0, "", "a", "ab", "A"]


def _battery() -> list[list[list[Any]]]:
    found = []
    for key in [*MEMBERS, "version", "valid", "created", "doc_id"]:
        for op in OPS:
            for value in PROBES:
                found.append([_filter(key, op, value, [value, "b"])])
    unique = {json.dumps(where): where for where in found}
    return list(unique.values())


def _filter(key: str, op: str, value: Any, several: list[Any]) -> list[Any]:
    """A filter the service takes (each operator with a value of the kind it accepts)."""
    if key == "valid" and op not in ("eq", "ne", "exists"):
        return [key, "eq", True]
    if op == "exists":
        return [key, op, bool(value)]
    if op == "in":
        return [key, op, several]
    if op in ("prefix", "contains"):
        return [key, op, value if isinstance(value, str) else "a"]
    if op in ("lt", "gt", "le", "ge") and (value is None or isinstance(value, bool)):
        return [key, op, 1]
    return [key, op, value]


BATTERY = _battery()


class World:
    """The service under test and what the documents are, kept apart from it."""

    def __init__(self, directory: Path, schema_path: Path) -> None:
        self.directory = directory
        self.schema = load_schema(schema_path)
        self.contents: dict[str, Any] = {}
        self.deleted: set[str] = set()
        self.order: list[str] = []
        self.service = self._open()

    def _open(self) -> DocumentService:
        service = DocumentService(self.schema, FileDocumentStore(self.directory), memory_budget=1)
        service.open()
        return service

    def version(self, doc_id: str) -> int:
        return self.service.store.read_meta(doc_id).version

    def pick(self, index: int) -> str | None:
        return self.order[index % len(self.order)] if self.order else None

    def write(self, doc_id: str, patch: list[dict[str, Any]]) -> None:
        if doc_id in self.deleted:
            return
        try:
            after = apply_patch(self.contents[doc_id], check_patch(patch)).document
        except SchemaDocError:
            return
        try:
            self.service.apply_patch(doc_id, patch, self.version(doc_id))
        except SchemaDocError as refused:  # the schema refuses it: nothing changed
            assert refused.code == "validation-failed"
            return
        self.contents[doc_id] = after

    def step(self, step: tuple[Any, ...]) -> None:
        kind = step[0]
        if kind == "create":
            doc_id = self.service.create_document(step[1])[0]
            self.contents[doc_id] = self.service.read_document(doc_id)[0]
            self.order.append(doc_id)
            return
        if kind in ("keep-index-copy", "crash", "restart"):
            getattr(self, kind.replace("-", "_"))()
            return
        doc_id = self.pick(step[1])
        if doc_id is None:
            return
        if kind == "set":
            self.write(doc_id, [{"op": "add", "path": step[2], "value": step[3]}])
        elif kind == "remove":
            self.write(doc_id, [{"op": "remove", "path": step[2]}])
        elif kind == "insert":
            self.write(doc_id, [{"op": "add", "path": "/tags", "value": []}] if "tags" not in self.contents[doc_id]
                       else [{"op": "add", "path": "/tags/0", "value": step[2]}])
        elif kind == "delete" and doc_id not in self.deleted:
            self.service.delete_document(doc_id, self.version(doc_id))
            self.deleted.add(doc_id)
        elif kind == "undelete" and doc_id in self.deleted:
            self.service.undelete_document(doc_id)
            self.deleted.discard(doc_id)
        elif kind == "purge" and doc_id in self.deleted:
            self.service.purge_document(doc_id)
            self.deleted.discard(doc_id)
            self.order.remove(doc_id)
            del self.contents[doc_id]

    def keep_index_copy(self) -> None:
        self.service.search_index.sync()
        with sqlite3.connect(self.directory / INDEX_FILE) as source, \
                sqlite3.connect(self.directory / "kept.sqlite3") as kept:
            source.backup(kept)

    def crash(self) -> None:
        """The index dies with its pending changes; an older copy of its file (or none) is what is left."""
        index = self.service._search
        assert index is not None
        self.service._search = None
        index._close_thread()
        with index._pending_lock:
            index._pending.clear()
        index.backend.close()
        self.service.close()
        for suffix in ("", "-wal", "-shm"):
            (self.directory / (INDEX_FILE + suffix)).unlink(missing_ok=True)
        if (self.directory / "kept.sqlite3").exists():
            shutil.copy(self.directory / "kept.sqlite3", self.directory / INDEX_FILE)
        self.service = self._open()

    def restart(self) -> None:
        self.service.close()
        self.service = self._open()

    def reference(self) -> list[Doc]:
        docs = []
        for doc_id, content in self.contents.items():
            if doc_id not in self.deleted:
                meta = self.service.store.read_meta(doc_id)
                docs.append(Doc(doc_id, content, meta.created_at, meta.modified_at, meta.version,
                                self.service._valid_now(meta)))
        return docs


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(first=st.lists(members, min_size=1, max_size=8), steps=steps,
       queries=st.lists(st.tuples(terms, sorts), min_size=1, max_size=8))
def test_filters_and_order_agree_with_a_plain_evaluation_through_writes_restarts_and_crashes(
        first: list[Any], steps: list[tuple[Any, ...]], queries: list[tuple[list[tuple[Any, ...]], str]]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        schema_path = Path(scratch) / "schema.json"
        schema_path.write_text(json.dumps(SCHEMA))
        world = World(Path(scratch) / "docs", schema_path)
        try:
            assert sorted(world.service.search_members) == sorted(MEMBERS)
            for step in [("create", content) for content in first] + steps:
                world.step(step)
            docs = world.reference()
            for where in BATTERY:
                listed = world.service.list_documents(where=where, limit=1000)
                got = [meta.doc_id for meta in listed.documents]
                assert got == expected(docs, where), where
                assert listed.total == len(got), where
            for sort in SORTS:
                listed = world.service.list_documents(sort=sort, limit=1000)
                got = [meta.doc_id for meta in listed.documents]
                assert got == expected(docs, [], sort), sort
                assert listed.total == len(got), sort
            for raw_terms, sort in queries:
                where = [_filter(*term) for term in raw_terms]
                page = world.service.list_documents(where=where, sort=sort, limit=1000)
                got = [meta.doc_id for meta in page.documents]
                assert got == expected(docs, where, sort), (where, sort)
                assert page.total == len(got), (where, sort)
                for plan in (False, True):  # pages by cursor, collected and sorted, or walked in the order's index
                    assert _paged(world.service, where, sort, plan) == got, (where, sort, plan)
        finally:
            world.service.close()


def _paged(service: DocumentService, where: list[Any], sort: str, plan: bool) -> list[str]:
    index = service.search_index
    index.walk_plan = plan
    try:
        found: list[str] = []
        totals: set[int] = set()
        cursor = None
        while True:
            page = service.list_documents(where=where, sort=sort, limit=3, cursor=cursor)
            found += [meta.doc_id for meta in page.documents]
            totals.add(page.total)
            cursor = page.next_cursor
            if cursor is None:
                assert totals == {len(found)}, (totals, len(found))
                return found
    finally:
        index.walk_plan = None


units_documents = st.recursive(
    st.one_of(st.text(alphabet="ab ~/", max_size=3), st.integers(0, 2)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["a", "b", "~", "/", "0", "1"]), inner, max_size=3)),
    max_leaves=12)


def _paths(node: Any, here: str = "") -> list[str]:
    found = [here]
    if isinstance(node, dict):
        for key, child in node.items():
            found += _paths(child, f"{here}/{key.replace('~', '~0').replace('/', '~1')}")
    elif isinstance(node, list):
        for i, child in enumerate(node):
            found += _paths(child, f"{here}/{i}")
    return found


def _random_patch(document: Any, data: st.DataObject) -> tuple[Any, list[dict[str, Any]]]:
    """A patch of one to three operations of every kind that apply to ``document``, and what it makes."""
    patch = []
    current = document
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(_paths(current)))
        op = data.draw(st.sampled_from(["add", "remove", "replace", "move", "copy"]))
        operation: dict[str, Any] = {"op": op, "path": path}
        if op in ("add", "replace"):
            operation["value"] = data.draw(units_documents)
        if op in ("move", "copy"):
            operation["from"] = data.draw(st.sampled_from(_paths(current)))
        try:
            current = apply_patch(current, check_patch([operation])).document
        except SchemaDocError:
            continue
        patch.append(operation)
    return current, patch


@settings(max_examples=300, deadline=None)
@given(document=units_documents, data=st.data())
def test_the_units_a_patch_changes_rebuild_the_new_documents_units(document: Any, data: st.DataObject) -> None:
    current, patch = _random_patch(document, data)
    change = changed_units(current, patch)
    kept = [unit for unit in text_units(document) if not any(is_below(unit.pointer, p) for p in change.removed)]
    assert sorted(kept + list(change.added)) == sorted(text_units(current))


@settings(max_examples=300, deadline=None)
@given(document=units_documents, data=st.data())
def test_the_field_rows_of_the_members_a_patch_reached_rebuild_the_new_documents_rows(
        document: Any, data: st.DataObject) -> None:
    """What the index does on an edit: the rows of the members the patch did not reach are kept, those of the
    members it reached are made again from the new document; together they are the new document's rows. The
    members are every place of either document (parents, children and array items of one another included)."""
    current, patch = _random_patch(document, data)
    members = sorted(set(_paths(document)) | set(_paths(current)) - {""})
    reached = members_reached(members, patch)
    kept = [row for row in field_rows(document, members) if row.field not in reached]
    assert sorted(kept + field_rows(current, reached), key=repr) == sorted(field_rows(current, members), key=repr)
