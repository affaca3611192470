"""Verdict invariants over random sequences of writes, schema changes and checks: whatever the served schema, a
document's known verdict is python-jsonschema's on its current version, and a check never moves a version."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemadoc.errors import SchemaDocError
from schemadoc.schema import LoadedSchema, load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore

BOOK = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"


def _schemas() -> list[LoadedSchema]:
    """The book schema, then titles of at most 3 and at most 6 characters, then an isbn required as well."""
    folder = Path(tempfile.mkdtemp(prefix="verdict-schemas-"))
    base = json.loads(BOOK.read_text(encoding="utf-8"))
    base["properties"]["isbn"] = {"type": "string", "minLength": 4}
    variants = [base]
    for limit in (3, 6):
        variant = json.loads(json.dumps(base))
        variant["properties"]["title"]["maxLength"] = limit
        variants.append(variant)
    required = json.loads(json.dumps(base))
    required["required"] = [*required["required"], "isbn"]
    variants.append(required)
    loaded = []
    for number, schema in enumerate(variants):
        (folder / str(number)).mkdir()
        path = folder / str(number) / "book.schema.json"
        path.write_text(json.dumps(schema), encoding="utf-8")
        loaded.append(load_schema(path))
    return loaded


SCHEMAS = _schemas()
REFERENCES = [schema.make_reference_validator() for schema in SCHEMAS]

action = st.one_of(
    st.tuples(st.just("create"), st.text(alphabet="abcdefgh", min_size=1, max_size=8)),
    st.tuples(st.just("title"), st.integers(0, 5), st.text(alphabet="abcdefgh", min_size=1, max_size=8)),
    st.tuples(st.just("isbn"), st.integers(0, 5)),
    st.tuples(st.just("serve"), st.integers(0, len(SCHEMAS) - 1)),
    st.tuples(st.just("check"), st.integers(0, 5)),
    st.tuples(st.just("inventory"),),
)


def _write(service: DocumentService, doc_ids: list[str], step: tuple[Any, ...]) -> str | None:
    """The document a write reached (``None`` when refused or there was none)."""
    kind = step[0]
    try:
        if kind == "create":
            doc_ids.append(service.create_document({"title": step[1]})[0])
            return doc_ids[-1]
        if kind in ("title", "isbn") and doc_ids:
            doc_id = doc_ids[step[1] % len(doc_ids)]
            version = service.version_of(doc_id)
            if kind == "title":
                service.update_node(doc_id, "/title", step[2], version)
            else:
                service.create_node(doc_id, "/isbn", "978-0", version)
            return doc_id
    except SchemaDocError as error:  # a write the served schema refuses changes nothing
        assert error.code in ("validation-failed", "path-already-exists", "conflict"), error.code
    return None


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(action, max_size=25))
def test_a_known_verdict_is_always_the_reference_validators_on_the_current_version(steps: list[Any]) -> None:
    store = MemoryDocumentStore()
    served = 0
    service = DocumentService(SCHEMAS[served], store)
    service.open()
    doc_ids: list[str] = []
    for step in steps:
        kind = step[0]
        if kind == "serve":
            service.close()
            served = step[1]
            service = DocumentService(SCHEMAS[served], store)
            service.open()
        elif kind == "check" and doc_ids:
            doc_id = doc_ids[step[1] % len(doc_ids)]
            before = store.read_meta(doc_id)
            meta, _ = service.check_document(doc_id)
            assert meta.version == before.version and service.document_status(meta) != "unchecked"
        elif kind == "inventory":
            service.close()
            service = DocumentService(SCHEMAS[served], store)
            service.open()
            service.start_inventory().join(30)
            assert service.verdict_counts()["unchecked"] == 0
        else:
            written = _write(service, doc_ids, step)
            if written is not None:  # a write records the served schema's verdict: nothing left to check
                assert service.document_status(store.read_meta(written)) != "unchecked"
        for doc_id in doc_ids:
            meta = store.read_meta(doc_id)
            status = service.document_status(meta)
            if status == "unchecked":
                continue
            errors = sum(1 for _ in REFERENCES[served].iter_errors(service.read_node(doc_id, "").node))
            assert meta.verdict is not None and meta.verdict.violation_count == errors, (status, meta.verdict)
    service.close()
