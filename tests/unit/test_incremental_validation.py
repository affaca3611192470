"""Incremental validation: each keyword family that can see an edit is re-checked, and nothing else.

Every case starts from a valid document, applies a patch on a structurally shared copy (as a
write does) and asserts the verdict both as the keyword's meaning gives it and as the whole
document validator gives it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from schemadoc.ops.apply import apply_patch
from schemadoc.schema import load_schema
from schemadoc.validation import DocumentValidator

REPO = Path(__file__).resolve().parents[2]
DRAFT = "https://json-schema.org/draft/2020-12/schema"


def validator_for(tmp_path: Path, schema: dict[str, Any]) -> DocumentValidator:
    path = tmp_path / "s.schema.json"
    path.write_text(json.dumps({"$schema": DRAFT, **schema}))
    return DocumentValidator(load_schema(path))


def verdict(validator: DocumentValidator, before: Any, patch: list[dict[str, Any]]) -> bool:
    assert validator.validate(before).valid
    applied = apply_patch(before, patch)
    incremental = validator.change_is_valid(before, applied.document)
    assert incremental is validator.validate(applied.document).valid
    assert validator.change_is_valid(before, applied.document, applied.patch) is incremental
    return incremental


# (schema, valid document, patch, verdict): each keyword whose verdict the edit can change.
CASES: list[tuple[str, dict[str, Any], Any, list[dict[str, Any]], bool]] = [
    ("required sees a removal", {"required": ["a"]}, {"a": 1}, [{"op": "remove", "path": "/a"}], False),
    ("additionalProperties false sees a new member",
     {"properties": {"a": {}}, "additionalProperties": False}, {"a": 1}, [{"op": "add", "path": "/b", "value": 1}],
     False),
    ("additionalProperties checks a new member's value",
     {"additionalProperties": {"type": "string"}}, {}, [{"op": "add", "path": "/b", "value": 1}], False),
    ("patternProperties match as ECMA-262 (\\d is ASCII only)",
     {"patternProperties": {"^\\d+$": {"type": "integer"}}, "additionalProperties": False}, {"1": 1},
     [{"op": "add", "path": "/\u0661", "value": 1}], False),
    ("patternProperties check the value", {"patternProperties": {"^x": {"type": "integer"}}}, {"x1": 1},
     [{"op": "replace", "path": "/x1", "value": "one"}], False),
    ("propertyNames sees a new name", {"propertyNames": {"maxLength": 2}}, {"ab": 1},
     [{"op": "add", "path": "/abc", "value": 1}], False),
    ("maxProperties", {"maxProperties": 1}, {"a": 1}, [{"op": "add", "path": "/b", "value": 1}], False),
    ("minProperties", {"minProperties": 1}, {"a": 1}, [{"op": "remove", "path": "/a"}], False),
    ("dependentRequired", {"dependentRequired": {"a": ["b"]}}, {"c": 1}, [{"op": "add", "path": "/a", "value": 1}],
     False),
    ("dependentSchemas triggered by a new member apply to old members",
     {"dependentSchemas": {"a": {"properties": {"b": {"type": "string"}}}}}, {"b": 1},
     [{"op": "add", "path": "/a", "value": 1}], False),
    ("dependentSchemas already triggered apply to an edited member",
     {"dependentSchemas": {"a": {"properties": {"b": {"type": "string"}}}}}, {"a": 1, "b": "x"},
     [{"op": "replace", "path": "/b", "value": 2}], False),
    ("maxItems", {"maxItems": 1}, [1], [{"op": "add", "path": "/0", "value": 0}], False),
    ("minItems", {"minItems": 1}, [1], [{"op": "remove", "path": "/0"}], False),
    ("uniqueItems sees a change deep inside an item",
     {"uniqueItems": True}, [{"a": [1]}, {"a": [2]}], [{"op": "replace", "path": "/1/a/0", "value": 1.0}], False),
    ("contains sees its only match change deep inside",
     {"contains": {"properties": {"a": {"const": 1}}, "required": ["a"]}}, [{"a": 1}, {"b": 1}],
     [{"op": "replace", "path": "/0/a", "value": 2}], False),
    ("maxContains sees a new match", {"contains": {"type": "integer"}, "maxContains": 1}, [1, "a"],
     [{"op": "replace", "path": "/1", "value": 2}], False),
    ("const on a container sees a deep change", {"const": {"a": [1]}}, {"a": [1]},
     [{"op": "replace", "path": "/a/0", "value": 2}], False),
    ("enum on a container sees a deep change", {"enum": [{"a": [1]}, {"a": [3]}]}, {"a": [1]},
     [{"op": "replace", "path": "/a/0", "value": 3}], True),
    ("prefixItems after an insert: items change positions", {"prefixItems": [{"type": "integer"}, {"type": "string"}]},
     [1, "a"], [{"op": "remove", "path": "/0"}], False),
    ("items false after prefixItems sees a shift", {"prefixItems": [{}], "items": False}, [1],
     [{"op": "add", "path": "/0", "value": 0}], False),
    ("oneOf above the edit", {"properties": {"p": {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}}},
     {"p": {"a": 1}}, [{"op": "add", "path": "/p/b", "value": 1}], False),
    ("anyOf above the edit", {"anyOf": [{"properties": {"a": {"type": "string"}}}, {"required": ["b"]}]},
     {"a": "x"}, [{"op": "replace", "path": "/a", "value": 1}], False),
    ("not above the edit", {"not": {"required": ["b"]}}, {"a": 1}, [{"op": "add", "path": "/b", "value": 1}], False),
    ("if/then above the edit", {"if": {"required": ["a"]}, "then": {"required": ["b"]}}, {"c": 1},
     [{"op": "add", "path": "/a", "value": 1}], False),
    ("unevaluatedProperties above the edit",
     {"allOf": [{"properties": {"a": {}}}], "unevaluatedProperties": False}, {"a": 1},
     [{"op": "add", "path": "/b", "value": 1}], False),
    ("unevaluatedItems above the edit", {"prefixItems": [{}], "unevaluatedItems": False}, [1],
     [{"op": "add", "path": "/1", "value": 2}], False),
    ("$ref and allOf add their keywords", {"$ref": "#/$defs/t", "allOf": [{"required": ["a"]}],
                                            "$defs": {"t": {"properties": {"a": {"maximum": 3}}}}},
     {"a": 1}, [{"op": "replace", "path": "/a", "value": 4}], False),
    ("a valid edit far below local keywords",
     {"properties": {"a": {"items": {"properties": {"b": {"type": "integer"}}}}}}, {"a": [{"b": 1}, {"b": 2}]},
     [{"op": "replace", "path": "/a/1/b", "value": 3}], True),
    ("a new item is validated whole", {"items": {"required": ["id"]}}, [{"id": 1}],
     [{"op": "add", "path": "/1", "value": {}}], False),
    ("a replaced container is validated whole", {"properties": {"a": {"minItems": 2}}}, {"a": [1, 2]},
     [{"op": "replace", "path": "/a", "value": [1]}], False),
    ("a replaced object is checked below, not only by its own keywords",
     {"properties": {"a": {"properties": {"x": {"type": "integer"}}}}}, {"a": {"x": 1}},
     [{"op": "replace", "path": "/a", "value": {"x": "s"}}], False),
    ("a replaced array is checked item by item", {"properties": {"a": {"items": {"type": "integer"}}}},
     {"a": [1, 2]}, [{"op": "replace", "path": "/a", "value": [1, "s"]}], False),
    ("a type change is caught", {"properties": {"a": {"type": "object"}}}, {"a": {"b": 1}},
     [{"op": "replace", "path": "/a", "value": [1]}], False),
    ("formats are asserted in new values", {"properties": {"d": {"format": "date"}}}, {"d": "2025-01-31"},
     [{"op": "replace", "path": "/d", "value": "2025-02-30"}], False),
    ("a relative $ref inside an embedded $id resolves against it",
     {"$defs": {"s": {"type": "number"}},
      "properties": {"e": {"$id": "https://example.com/e.json", "$defs": {"s": {"type": "string"}},
                           "properties": {"q": {"$ref": "#/$defs/s"}}}}},
     {"e": {"q": "x"}}, [{"op": "replace", "path": "/e/q", "value": 1}], False),
    ("names needing escapes in pointers", {"properties": {"a/b~c d%": {"type": "integer"}}}, {"a/b~c d%": 1},
     [{"op": "replace", "path": "/a~1b~0c d%", "value": "x"}], False),
    ("$dynamicRef: the whole document is validated",
     {"$dynamicAnchor": "node", "properties": {"kids": {"items": {"$dynamicRef": "#node"}}, "n": {"type": "integer"}}},
     {"kids": [{"n": 1}]}, [{"op": "replace", "path": "/kids/0/n", "value": "x"}], False),
]


@pytest.mark.parametrize(("name", "schema", "before", "patch", "expected"), CASES, ids=[case[0] for case in CASES])
def test_each_keyword_that_sees_an_edit_is_checked_again(tmp_path: Path, name: str, schema: dict[str, Any],
                                                        before: Any, patch: list[dict[str, Any]],
                                                        expected: bool) -> None:
    assert verdict(validator_for(tmp_path, schema), before, patch) is expected


def _book() -> dict[str, Any]:
    paragraphs = [{"text": f"p{i}", "style": "normal"} for i in range(3)]
    sections = [{"title": f"s{i}", "paragraphs": paragraphs, "sections": []} for i in range(2)]
    return {"title": "T", "metadata": {"language": "en", "status": "draft", "edition": 1, "author": "Ada"},
            "chapters": [{"id": f"ch-{i}", "title": f"c{i}", "sections": sections} for i in range(3)],
            "tags": ["a", "b"]}


@pytest.fixture
def book_validator() -> DocumentValidator:
    return DocumentValidator(load_schema(REPO / "schemas" / "book.schema.json"))


@pytest.mark.parametrize("patch", [
    [{"op": "replace", "path": "/chapters/1/sections/0/paragraphs/2/style", "value": "bold"}],
    [{"op": "add", "path": "/chapters/0", "value": {"id": "x", "title": "", "sections": []}}],
    [{"op": "remove", "path": "/title"}, {"op": "add", "path": "/extra", "value": 1}],
    [{"op": "add", "path": "/tags/-", "value": "a"}],
    [{"op": "replace", "path": "/metadata/author", "value": {"name": "", "nick": "x"}}],
])
def test_a_rejected_change_carries_the_whole_document_report(book_validator: DocumentValidator,
                                                             patch: list[dict[str, Any]]) -> None:
    before = _book()
    assert book_validator.validate(before).valid
    after = apply_patch(before, patch).document
    report = book_validator.validate_change(before, after)
    assert not report.valid
    assert report.to_dict() == book_validator.validate(after).to_dict()


def test_a_valid_change_is_accepted_without_validating_the_whole_document(
        book_validator: DocumentValidator, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _book()
    assert book_validator.validate(before).valid
    after = apply_patch(before, [{"op": "replace", "path": "/chapters/2/sections/1/paragraphs/0/text",
                                  "value": "new"}]).document
    calls: list[Any] = []
    monkeypatch.setattr(book_validator, "_validator", _Spy(book_validator._validator, calls))
    locations = book_validator._changes.locations
    monkeypatch.setattr(locations, "whole", _Spy(locations.whole, calls))
    assert book_validator.validate_change(before, after).valid
    assert calls == []


def test_a_document_this_validator_never_found_valid_is_validated_whole(book_validator: DocumentValidator) -> None:
    before = _book()
    before["metadata"] = {**before["metadata"], "edition": 0}   # invalid, and never validated here
    after = apply_patch(before, [{"op": "replace", "path": "/title", "value": "U"}]).document
    assert not book_validator.change_is_valid(before, after)
    assert not book_validator.validate_change(before, after).valid


def test_a_dry_run_preview_is_not_remembered_but_a_kept_write_is(
        book_validator: DocumentValidator, monkeypatch: pytest.MonkeyPatch) -> None:
    before = _book()
    assert book_validator.validate(before).valid
    edit = [{"op": "replace", "path": "/title", "value": "U"}]
    preview = apply_patch(before, edit).document
    assert book_validator.validate_change(before, preview, keep=False).valid
    kept = apply_patch(before, edit).document
    assert book_validator.validate_change(before, kept).valid
    calls: list[Any] = []
    monkeypatch.setattr(book_validator, "_validator", _Spy(book_validator._validator, calls))
    again = [{"op": "replace", "path": "/title", "value": "V"}]
    book_validator.change_is_valid(preview, apply_patch(preview, again).document)
    assert calls == ["is_valid"]         # the preview was never stored: checked whole
    calls.clear()
    book_validator.change_is_valid(kept, apply_patch(kept, again).document)
    assert calls == []                   # the kept write is the next write's starting point


class _Spy:
    def __init__(self, inner: Any, calls: list[Any]) -> None:
        self._inner = inner
        self._calls = calls

    def is_valid(self, instance: Any) -> bool:
        self._calls.append("is_valid")
        return bool(self._inner.is_valid(instance))

    def iter_errors(self, instance: Any) -> Any:
        self._calls.append("iter_errors")
        return self._inner.iter_errors(instance)
