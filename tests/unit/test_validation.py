"""Validation reports: formats asserted, every keyword mapped to its code, big values summarised."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from schemadoc.schema import load_schema
from schemadoc.validation import DocumentValidator

FORMATS = {
    "date-time": ("2025-01-01T12:00:00Z", "2025-01-01 noon"),
    "date": ("2025-01-31", "2025-02-30"),
    "time": ("12:00:00Z", "25:00:00Z"),
    "email": ("ada@example.com", "ada.example.com"),
    "uri": ("https://example.com/a?b=c", "not a uri"),
    "uuid": ("123e4567-e89b-12d3-a456-426614174000", "123e4567"),
    "ipv4": ("192.168.0.1", "192.168.0.300"),
    "ipv6": ("2001:db8::1", "2001:db8:::1"),
    "hostname": ("example.com", "-bad-.example..com"),
}


def validator_for(tmp_path: Path, schema: str) -> DocumentValidator:
    path = tmp_path / "s.schema.json"
    path.write_text(schema)
    return DocumentValidator(load_schema(path))


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_common_format_is_asserted(tmp_path: Path, fmt: str) -> None:
    validator = validator_for(tmp_path, '{"$schema": "https://json-schema.org/draft/2020-12/schema",'
                                        f' "type": "string", "format": "{fmt}"}}')
    good, bad = FORMATS[fmt]
    assert validator.validate(good).valid
    report = validator.validate(bad)
    assert not report.valid
    (violation,) = report.violations
    assert (violation.code, violation.constraint, violation.expected, violation.actual) == \
        ("format-invalid", "format", fmt, bad)


KEYWORD_CASES: list[tuple[str, Any, str]] = [
    ('{"const": 3}', 4, "const-mismatch"),
    ('{"multipleOf": 2}', 3, "multiple-of"),
    ('{"exclusiveMinimum": 2}', 2, "exclusive-minimum"),
    ('{"exclusiveMaximum": 2}', 2, "exclusive-maximum"),
    ('{"minProperties": 1}', {}, "min-properties"),
    ('{"maxProperties": 0}', {"a": 1}, "max-properties"),
    ('{"dependentRequired": {"a": ["b"]}}', {"a": 1}, "dependent-required"),
    ('{"propertyNames": {"maxLength": 1}}', {"ab": 1}, "property-names"),
    ('{"unevaluatedProperties": false}', {"a": 1}, "unevaluated-properties"),
    ('{"prefixItems": [{}], "unevaluatedItems": false}', [1, 2], "unevaluated-items"),
    ('{"prefixItems": [{}], "items": false}', [1, 2], "items-forbidden"),
    ('{"contains": {"type": "string"}}', [1], "contains-failed"),
    ('{"contains": {"type": "string"}, "minContains": 2}', ["a"], "min-contains"),
    ('{"contains": {"type": "string"}, "maxContains": 1}', ["a", "b"], "max-contains"),
    ('{"not": {"type": "string"}}', "s", "not-failed"),
    ('{"anyOf": [{"type": "string"}, {"type": "null"}]}', 1, "any-of-failed"),
    ('{"oneOf": [{"type": "integer"}, {"minimum": 0}]}', 1, "one-of-failed"),
    ('{"uniqueItems": true}', [1, 1], "unique-items"),
    ('{"properties": {"a": false}}', {"a": 1}, "false-schema"),
]


@pytest.mark.parametrize(("keywords", "instance", "code"), KEYWORD_CASES)
def test_each_assertion_keyword_reports_its_own_code(tmp_path: Path, keywords: str, instance: Any,
                                                     code: str) -> None:
    schema = '{"$schema": "https://json-schema.org/draft/2020-12/schema", ' + keywords[1:]
    report = validator_for(tmp_path, schema).validate(instance)
    assert [v.code for v in report.violations] == [code]
    assert report.violations[0].message


def test_a_huge_offending_value_is_summarised_not_copied(tmp_path: Path) -> None:
    validator = validator_for(tmp_path, '{"$schema": "https://json-schema.org/draft/2020-12/schema",'
                                        ' "type": "object", "properties": {"a": {"enum": [1]}}}')
    report = validator.validate({"a": {f"k{i}": "x" * 50 for i in range(1000)}})
    (violation,) = report.violations
    assert violation.actual["summary"] == "object with 1000 members"


def test_a_rejected_change_is_reported_as_whole_validation_reports_it(tmp_path: Path) -> None:
    validator = validator_for(tmp_path, '{"$schema": "https://json-schema.org/draft/2020-12/schema",'
                                        ' "type": "object", "required": ["n"],'
                                        ' "properties": {"n": {"type": "integer", "maximum": 3},'
                                        '                "tags": {"type": "array", "items": {"type": "string"}}}}')
    before = {"n": 1, "tags": ["a"]}
    assert validator.validate(before).valid
    after = {"tags": ["a", 2]}
    change = validator.validate_change(before, after, keep=False)
    assert not change.valid
    assert change == validator.validate(after)
    assert {(v.path, v.code) for v in change.violations} == {("", "required-missing"),
                                                             ("/tags/1", "type-mismatch")}


def test_a_change_judged_invalid_by_mistake_is_still_judged_by_whole_validation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    validator = validator_for(tmp_path, '{"$schema": "https://json-schema.org/draft/2020-12/schema",'
                                        ' "type": "object", "properties": {"n": {"type": "integer"}}}')
    before = {"n": 1}
    assert validator.validate(before).valid
    monkeypatch.setattr(validator, "change_is_valid", lambda *args, **kwargs: False)
    assert validator.validate_change(before, {"n": 2}, keep=False).valid
