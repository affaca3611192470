"""The error catalog is complete, documented, and every raised code is in it."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from schemadoc.errors import CATALOG, KEYWORD_CODES, SchemaDocError, catalog_markdown, keyword_code

ROOT = Path(__file__).resolve().parents[2]
SOURCE = ROOT / "src" / "schemadoc"


def _raised_codes() -> dict[str, list[str]]:
    """Every string literal passed as the first argument of SchemaDocError(...) in the source."""
    found: dict[str, list[str]] = {}
    for path in SOURCE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "SchemaDocError" and node.args
                    and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                found.setdefault(node.args[0].value, []).append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_every_code_raised_in_the_source_is_in_the_catalog() -> None:
    raised = _raised_codes()
    assert raised, "the scan found no SchemaDocError calls at all"
    missing = {code: where for code, where in raised.items() if code not in CATALOG}
    assert not missing


def test_docs_errors_md_is_generated_from_the_catalog() -> None:
    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert page == catalog_markdown(), "run `make docs` to regenerate docs/errors.md"


def test_every_entry_has_status_description_causes_and_remediation() -> None:
    for entry in CATALOG.values():
        assert 400 <= entry.status < 600
        assert entry.description and entry.causes and entry.remediation
        assert entry.code == entry.code.lower() and " " not in entry.code


@pytest.mark.parametrize("keyword", [
    "const", "oneOf", "anyOf", "not", "uniqueItems", "contains", "multipleOf", "exclusiveMinimum",
    "exclusiveMaximum", "minProperties", "maxProperties", "dependentRequired", "propertyNames",
    "unevaluatedProperties", "unevaluatedItems", "type", "required", "pattern", "format", "enum",
    "minLength", "maxLength", "minItems", "maxItems", "minimum", "maximum", "additionalProperties",
])
def test_every_draft_2020_12_assertion_keyword_has_its_own_code(keyword: str) -> None:
    assert keyword_code(keyword) in CATALOG
    assert keyword_code(keyword) != "schema-constraint"


def test_keyword_codes_all_point_into_the_catalog() -> None:
    assert set(KEYWORD_CODES.values()) <= set(CATALOG)


def test_an_unknown_code_cannot_be_raised() -> None:
    with pytest.raises(ValueError):
        SchemaDocError("no-such-code", "x")


def test_the_wire_form_carries_code_category_details_and_remediation() -> None:
    error = SchemaDocError("version-conflict", "changed", {"expected_version": 1, "actual_version": 2})
    wire = error.to_dict()["error"]
    assert wire["code"] == "version-conflict"
    assert wire["category"] == "409"
    assert wire["details"] == {"expected_version": 1, "actual_version": 2}
    assert wire["remediation"] == CATALOG["version-conflict"].remediation
