"""For any schema, every write example :mod:`schemadoc.reading.request_examples` documents succeeds on a
document just created from that schema (Hypothesis generates the schemas: nested objects, strings with
lengths, patterns, formats and enums, bounded numbers, booleans, arrays, required members with and
without defaults)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemadoc.reading.request_examples import request_examples
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore

NAMES = st.sampled_from(["a", "b", "title", "count", "tags", "meta", "x y", "ok~1"])


def _with_default(schema: dict[str, Any], default: Any) -> st.SearchStrategy[dict[str, Any]]:
    return st.sampled_from([schema, {**schema, "default": default}])


LEAVES: st.SearchStrategy[dict[str, Any]] = st.one_of(
    st.integers(0, 5).flatmap(lambda n: _with_default({"type": "string", "minLength": n}, "d" * n)),
    st.just({"type": "string", "pattern": "^[a-z]{2,4}$"}),
    st.just({"type": "string", "format": "date"}),
    st.lists(st.text("abc", min_size=1, max_size=3), min_size=1, max_size=3, unique=True).flatmap(
        lambda values: _with_default({"enum": values}, values[-1])),
    st.tuples(st.integers(-5, 5), st.integers(0, 5)).flatmap(
        lambda r: _with_default({"type": "integer", "minimum": r[0], "maximum": r[0] + r[1]}, r[0] + r[1])),
    st.booleans().flatmap(lambda b: _with_default({"type": "boolean"}, b)),
    st.just({"type": "number", "exclusiveMinimum": 0}),
)


def _objects(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    def build(members: dict[str, dict[str, Any]], required: list[str], closed: bool) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object", "properties": members,
                                  "required": [name for name in required if name in members]}
        if closed:
            schema["additionalProperties"] = False
        return schema

    return st.builds(build, st.dictionaries(NAMES, children, min_size=1, max_size=4),
                     st.lists(NAMES, max_size=3, unique=True), st.booleans())


def _arrays(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    return st.builds(lambda items, n: {"type": "array", "items": items, "minItems": n, "default": []} if n == 0
                     else {"type": "array", "items": items, "minItems": n}, children, st.integers(0, 1))


SCHEMAS = st.recursive(LEAVES, lambda children: st.one_of(_objects(children), _arrays(children)), max_leaves=8)
ROOTS = _objects(SCHEMAS)

WRITES = ("document_update_node", "document_create_node", "document_delete_node", "document_apply_patch",
          "document_merge_patch", "document_merge_patch_post", "document_move_node", "document_revert",
          "document_delete")


def _send(service: DocumentService, doc_id: str, operation: str, example: dict[str, Any]) -> None:
    path = example.get("parameters", {}).get("path")
    body = example.get("body")
    if operation == "document_update_node":
        service.update_node(doc_id, path, body["node_data"], body["version"])
    elif operation == "document_create_node":
        service.create_node(doc_id, path, body["node_data"], body["version"])
    elif operation == "document_delete_node":
        service.delete_node(doc_id, path, body["version"])
    elif operation == "document_apply_patch":
        service.apply_patch(doc_id, body["patch"], body["version"])
    elif operation == "document_merge_patch":
        service.merge_patch(doc_id, path, body, 1)
    elif operation == "document_merge_patch_post":
        service.merge_patch(doc_id, path, body["merge_patch"], body["version"])
    elif operation == "document_move_node":
        service.move_node(doc_id, body["from_path"], body["to_path"], body["version"])
    elif operation == "document_revert":
        service.revert(doc_id, body["to_version"], body["version"])
    elif operation == "document_delete":
        service.delete_document(doc_id, body["version"])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ROOTS)
def test_every_write_example_succeeds_on_a_new_document_of_any_schema(root: dict[str, Any]) -> None:
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "generated.schema.json"
        path.write_text(json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", **root}))
        schema = load_schema(path)
    examples = request_examples(schema)
    service = DocumentService(schema, MemoryDocumentStore())
    service.open()
    try:
        writes = [name for name in WRITES if name in examples]
        can_create = True
        try:
            service.create_document()
        except Exception:
            can_create = False
        assert bool(writes) == can_create, (examples, can_create)
        for operation in writes:
            doc_id = service.create_document()[0]
            _send(service, doc_id, operation, examples[operation])  # raises if the schema refuses it
    finally:
        service.close()
