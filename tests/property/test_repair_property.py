"""The repair rule against an independent oracle: for random patches on a document that a tightened schema rejects,
the write is accepted exactly when python-jsonschema finds no violation after it that the document did not have
before. The oracle names each chapter by a key it carries (never by its index), so inserting, removing or moving
chapters cannot make a violation look new to it; it never sees how the server carries places through a patch."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import jsonschema
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore

CHAPTER_LOOSE = {"type": "object", "properties": {"key": {"type": "string"}, "title": {"type": "string"},
                                                   "isbn": {"type": "string"}}}
LOOSE: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
    "properties": {"title": {"type": "string"}, "isbn": {"type": "string"},
                   "chapters": {"type": "array", "items": CHAPTER_LOOSE}},
}
TIGHT: dict[str, Any] = json.loads(json.dumps(LOOSE))
TIGHT["required"] = ["title", "isbn", "chapters"]
TIGHT["properties"]["title"]["maxLength"] = 3
TIGHT["properties"]["chapters"]["items"]["required"] = ["key", "title", "isbn"]
TIGHT["properties"]["chapters"]["items"]["properties"]["title"]["maxLength"] = 5
TIGHT["properties"]["chapters"]["items"]["additionalProperties"] = False

ORACLE = jsonschema.Draft202012Validator(TIGHT)


def _services() -> tuple[DocumentService, DocumentService]:
    folder = Path(tempfile.mkdtemp(prefix="repair-property-"))
    (folder / "loose.schema.json").write_text(json.dumps(LOOSE))
    (folder / "tight.schema.json").write_text(json.dumps(TIGHT))
    store = MemoryDocumentStore()
    return (DocumentService(load_schema(folder / "loose.schema.json"), store),
            DocumentService(load_schema(folder / "tight.schema.json"), store))


LOOSE_SERVICE, TIGHT_SERVICE = _services()

titles = st.sampled_from(["Hi", "Hey", "Hello", "A longer title"])
maybe_isbn = st.sampled_from([None, "1"])


@st.composite
def chapters(draw: st.DrawFn, key: str) -> dict[str, Any]:
    chapter: dict[str, Any] = {"key": key}
    if draw(st.booleans()):
        chapter["title"] = draw(titles)
    if (isbn := draw(maybe_isbn)) is not None:
        chapter["isbn"] = isbn
    if draw(st.integers(0, 9)) == 0:
        chapter["extra"] = True  # an unexpected member under the tight schema
    return chapter


@st.composite
def documents(draw: st.DrawFn) -> dict[str, Any]:
    document: dict[str, Any] = {"title": draw(titles),
                                "chapters": [draw(chapters(f"k{n}")) for n in range(draw(st.integers(0, 4)))]}
    if draw(maybe_isbn) is not None:
        document["isbn"] = "1"
    return document


@st.composite
def operation(draw: st.DrawFn, document: dict[str, Any], fresh: str) -> dict[str, Any]:
    """One strict RFC 6902 operation that applies to ``document``, keeping every chapter's key."""
    count = len(document["chapters"])
    kinds = ["title", "isbn", "insert"] + (["remove", "move", "chapter-title", "chapter-isbn", "chapter-extra",
                                            "replace-chapter"] if count else [])
    kind = draw(st.sampled_from(kinds))
    at = draw(st.integers(0, max(count - 1, 0)))
    if kind == "title":
        return {"op": "replace", "path": "/title", "value": draw(titles)}
    if kind == "isbn":
        return {"op": "remove", "path": "/isbn"} if "isbn" in document else {"op": "add", "path": "/isbn",
                                                                               "value": "9"}
    if kind == "insert":
        return {"op": "add", "path": f"/chapters/{draw(st.integers(0, count))}", "value": draw(chapters(fresh))}
    if kind == "remove":
        return {"op": "remove", "path": f"/chapters/{at}"}
    if kind == "move":
        return {"op": "move", "from": f"/chapters/{at}", "path": f"/chapters/{draw(st.integers(0, count - 1))}"}
    chapter = document["chapters"][at]
    if kind == "replace-chapter":  # a new value at the same place, the same chapter (its key kept)
        return {"op": "replace", "path": f"/chapters/{at}", "value": draw(chapters(chapter["key"]))}
    member = {"chapter-title": "title", "chapter-isbn": "isbn", "chapter-extra": "extra"}[kind]
    if member in chapter and draw(st.booleans()):
        return {"op": "remove", "path": f"/chapters/{at}/{member}"}
    value: Any = draw(titles) if member == "title" else ("2" if member == "isbn" else True)
    return {"op": "add", "path": f"/chapters/{at}/{member}", "value": value}


def identities(document: dict[str, Any]) -> set[tuple[Any, ...]]:
    """python-jsonschema's violations, each named by validator, schema location, the place with chapters named
    by their key, and (one per member) the message of a missing or unexpected member."""
    found = set()
    for error in ORACLE.iter_errors(document):
        place = list(error.absolute_path)
        if len(place) >= 2 and place[0] == "chapters":
            place[1] = "key:" + document["chapters"][place[1]]["key"]
        named = error.message if error.validator in ("required", "additionalProperties") else None
        found.add((error.validator, tuple(error.absolute_schema_path), tuple(place), named))
    return found


def patch_on(data: st.DataObject, document: dict[str, Any], round_: int) -> tuple[list[dict[str, Any]], Any]:
    patch: list[dict[str, Any]] = []
    current = document
    for n in range(data.draw(st.integers(1, 3))):
        step = data.draw(operation(current, f"new{round_}-{n}"))
        patch.append(step)
        current = apply_patch(current, [step]).document
    return patch, current


def listed(report: Any) -> list[tuple[str, str, str, str]]:
    return [(v.code, v.schema_path, v.path, v.message) for v in report.violations]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_a_write_is_accepted_exactly_when_it_adds_no_violation_python_jsonschema_finds(data: st.DataObject) -> None:
    """Three writes in a row: the first to a document just loaded (its report made whole), the next ones to a
    document whose report is remembered (made from the change); each report equals whole validation's."""
    document = data.draw(documents())
    doc_id = LOOSE_SERVICE.create_document(document)[0]
    for round_ in range(3):
        patch, current = patch_on(data, document, round_)
        before, after = identities(document), identities(current)
        expected = after <= before if before else not after  # a valid document: judged as always
        version = TIGHT_SERVICE.version_of(doc_id)
        try:
            result = TIGHT_SERVICE.apply_patch(doc_id, patch, version)
        except SchemaDocError as refused:
            assert refused.code == "validation-failed"
            assert not expected, (document, patch, after - before)
            assert TIGHT_SERVICE.version_of(doc_id) == version
            continue
        assert expected, (document, patch, after - before)
        assert result.report.valid == (not after)
        whole = TIGHT_SERVICE.validator.validate(current)
        assert listed(result.report) == listed(whole), (document, patch)
        document = current
