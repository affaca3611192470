"""A rejected change reported from where it changed: the whole-document report, violation for violation.

Every case starts from a valid document, applies a patch on a structurally shared copy (as a
write does) and compares the report built from the places the change reached with
``validate(after)``. Where that report cannot be built exactly, ``change_report`` gives None and a
write is reported by validating the whole document.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_incremental_validation import CASES, REPO, validator_for

from schemadoc.ops.apply import apply_patch
from schemadoc.schema import load_schema
from schemadoc.validation import _MAX_VIOLATIONS, DocumentValidator, ValidationReport


def reports(validator: DocumentValidator, before: Any, patch: list[dict[str, Any]]
            ) -> tuple[ValidationReport, ValidationReport | None, ValidationReport | None]:
    """The whole report of the changed document, and the report built from the change (with the
    patch's paths, and found by scanning)."""
    assert validator.validate(before).valid
    applied = apply_patch(before, patch)
    whole = validator.validate(applied.document)
    assert not whole.valid
    by_patch = validator.change_report(before, applied.document, applied.patch)
    by_scan = validator.change_report(before, applied.document)
    written = validator.validate_change(before, applied.document, patch=applied.patch, keep=False)
    assert written.to_dict() == whole.to_dict()
    return whole, by_patch, by_scan


REJECTED = [case for case in CASES if not case[4]]


@pytest.mark.parametrize(("name", "schema", "before", "patch", "_verdict"), REJECTED, ids=[c[0] for c in REJECTED])
def test_each_keyword_family_reports_a_rejected_change_as_whole_validation(
        tmp_path: Path, name: str, schema: dict[str, Any], before: Any, patch: list[dict[str, Any]],
        _verdict: bool) -> None:
    whole, by_patch, by_scan = reports(validator_for(tmp_path, schema), before, patch)
    for report in (by_patch, by_scan):
        if report is not None:
            assert report.to_dict() == whole.to_dict()


def test_many_violations_below_an_edit_come_from_the_change_in_document_order(tmp_path: Path) -> None:
    validator = validator_for(tmp_path, {
        "properties": {"keep": {"type": "array"},
                       "rows": {"type": "array", "items": {"$ref": "#/$defs/row"}, "maxItems": 12}},
        "$defs": {"row": {"type": "object", "required": ["id"],
                          "properties": {"id": {"type": "integer"}, "tag": {"enum": ["a", "b"]}}}},
    })
    before = {"keep": list(range(1000)), "rows": [{"id": n} for n in range(12)]}
    rows = [{"id": str(n), "tag": "c"} if n in (2, 10) else {"id": n} for n in range(12)] + [{}]
    whole, by_patch, by_scan = reports(validator, before, [{"op": "replace", "path": "/rows", "value": rows}])
    assert by_patch is not None and by_scan is not None
    assert by_patch.to_dict() == whole.to_dict() == by_scan.to_dict()
    assert [(v.path, v.constraint) for v in by_patch.violations] == [
        ("/rows", "maxItems"),
        ("/rows/2/id", "type"), ("/rows/2/tag", "enum"),
        ("/rows/10/id", "type"), ("/rows/10/tag", "enum"),
        ("/rows/12", "required"),
    ]
    assert by_patch.violations[2].suggested_fix is not None  # suggestions as whole validation gives them


def test_a_rejected_write_on_the_example_book_is_reported_from_the_change(tmp_path: Path) -> None:
    validator = DocumentValidator(load_schema(REPO / "schemas" / "book.schema.json"))
    book = {"title": "T", "metadata": {"language": "en", "status": "draft", "edition": 1},
            "chapters": [{"id": "ch-1", "title": "One",
                          "sections": [{"title": "S", "paragraphs": [{"text": "p"}]}]}]}
    assert validator.validate(book).valid
    whole, by_patch, by_scan = reports(validator, book, [
        {"op": "add", "path": "/chapters/0/sections/0/paragraphs/0/style", "value": "nope"},
        {"op": "replace", "path": "/metadata/status", "value": "finished"},
    ])
    assert by_patch is not None and by_scan is not None
    assert by_patch.to_dict() == whole.to_dict() == by_scan.to_dict()
    assert [v.path for v in whole.violations] == ["/chapters/0/sections/0/paragraphs/0/style", "/metadata/status"]


@pytest.mark.parametrize(("schema", "before", "patch"), [
    ({"properties": {"p": {"oneOf": [{"required": ["a"]}, {"required": ["b"]}]}}}, {"p": {"a": 1}},
     [{"op": "add", "path": "/p/b", "value": 1}]),
    ({"properties": {"p": {"anyOf": [{"type": "string"}, {"type": "integer"}]}}}, {"p": 1},
     [{"op": "replace", "path": "/p", "value": []}]),
    ({"properties": {"q": {"properties": {"": {"properties": {"p": {
        "anyOf": [{"type": "string"}, {"items": {"oneOf": [{"type": "integer"}, {"required": ["n"]}]}}]}}}}}}},
     {"q": {"": {"p": "x"}}}, [{"op": "replace", "path": "/q//p", "value": [1, {"m": 1}, "s"]}]),
], ids=["oneOf, two alternatives valid", "anyOf, none valid", "nested alternatives, below an empty member name"])
def test_alternatives_errors_are_placed_in_the_document_as_whole_validation_places_them(
        tmp_path: Path, schema: dict[str, Any], before: Any, patch: list[dict[str, Any]]) -> None:
    whole, by_patch, by_scan = reports(validator_for(tmp_path, schema), before, patch)
    assert by_patch is not None and by_scan is not None
    assert by_patch.to_dict() == whole.to_dict() == by_scan.to_dict()
    assert any(v.alternatives is not None for v in whole.violations)


def test_a_wrong_author_of_the_example_book_is_reported_from_the_change_with_its_alternatives(
        tmp_path: Path) -> None:
    validator = DocumentValidator(load_schema(REPO / "schemas" / "book.schema.json"))
    book = {"title": "T", "metadata": {"language": "en", "status": "draft", "edition": 1, "author": "A"},
            "chapters": []}
    whole, by_patch, by_scan = reports(validator, book, [
        {"op": "replace", "path": "/metadata/author", "value": {"name": "x", "email": 5, "extra": 1}}])
    assert by_patch is not None and by_scan is not None
    assert by_patch.to_dict() == whole.to_dict() == by_scan.to_dict()
    [violation] = whole.violations
    assert violation.constraint == "oneOf" and violation.alternatives is not None
    assert ["/metadata/author/email" in [alt["path"] for alt in branch] for branch in violation.alternatives] \
        == [False, True]


@pytest.mark.parametrize(("schema", "before", "patch"), [
    ({"properties": {"e": {"$id": "https://example.com/e.json", "properties": {"q": {"type": "string"}}}}},
     {"e": {"q": "x"}}, [{"op": "replace", "path": "/e/q", "value": 1}]),
    ({"$defs": {"t": {"required": ["a"]}},
      "properties": {"p": {"allOf": [{"$ref": "#/$defs/t"}, {"$ref": "#/$defs/t"}]}}},
     {"p": {"a": 1}}, [{"op": "remove", "path": "/p/a"}]),
    ({"$dynamicAnchor": "n", "properties": {"k": {"items": {"$dynamicRef": "#n"}}, "v": {"type": "integer"}}},
     {"k": [{"v": 1}]}, [{"op": "replace", "path": "/k/0/v", "value": "x"}]),
], ids=["embedded $id", "a schema reached twice", "$dynamicRef"])
def test_what_cannot_be_reported_exactly_from_the_change_is_reported_whole(
        tmp_path: Path, schema: dict[str, Any], before: Any, patch: list[dict[str, Any]]) -> None:
    whole, by_patch, by_scan = reports(validator_for(tmp_path, schema), before, patch)
    assert by_patch is None and by_scan is None
    assert whole.violations


def test_more_violations_than_a_report_holds_are_reported_whole_and_truncated_alike(tmp_path: Path) -> None:
    validator = validator_for(tmp_path, {"properties": {"a": {"items": {"type": "integer"}}}})
    before = {"a": []}
    values = ["x"] * (_MAX_VIOLATIONS + 5)
    whole, by_patch, by_scan = reports(validator, before, [{"op": "replace", "path": "/a", "value": values}])
    assert whole.truncated and len(whole.violations) == _MAX_VIOLATIONS
    assert by_patch is None and by_scan is None
    fewer = ["x"] * (_MAX_VIOLATIONS - 1)
    whole, by_patch, _ = reports(validator, before, [{"op": "replace", "path": "/a", "value": fewer}])
    assert not whole.truncated and by_patch is not None
    assert by_patch.to_dict() == whole.to_dict()


def test_an_edit_below_an_empty_member_name_is_placed_as_whole_validation_places_it(tmp_path: Path) -> None:
    validator = validator_for(tmp_path, {"additionalProperties": {"additionalProperties": {"type": "string"}}})
    whole, by_patch, by_scan = reports(validator, {"": {"a": "x"}}, [{"op": "replace", "path": "//a", "value": 1}])
    assert by_patch is not None and by_scan is not None
    assert by_patch.to_dict() == whole.to_dict() == by_scan.to_dict()
