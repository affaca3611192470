"""The shipped conformance suite's bookkeeping: clauses, tolerant readings, the shipped schema."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from schemadoc.conformance import readings
from schemadoc.conformance.clauses import CLAUSES, MODULES, TESTS, clauses_of
from schemadoc.conformance.stdio import command_line
from schemadoc.conformance.target import BOOK_SCHEMA

SUITE = Path(__file__).resolve().parents[2] / "src" / "schemadoc" / "conformance" / "suite"


def _suite_tests() -> dict[str, list[str]]:
    tests: dict[str, list[str]] = {}
    for path in sorted(SUITE.glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = [node for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)]
        tests[path.stem] = [node.name for node in functions if node.name.startswith("test_")]
    return tests


def test_every_suite_module_has_a_default_clause_and_every_test_known_clauses() -> None:
    for module, names in _suite_tests().items():
        assert module in MODULES, f"{module} has no default clause in clauses.MODULES"
        for name in names:
            assert set(clauses_of(module, name)) <= set(CLAUSES), (module, name)


def test_every_mapped_test_exists_in_the_suite() -> None:
    existing = {name for names in _suite_tests().values() for name in names}
    assert set(TESTS) - existing == set(), "clauses.TESTS names tests that are gone (renamed? rename them there)"


def test_the_shipped_schemas_are_the_repositorys() -> None:
    repository = Path(__file__).resolve().parents[2]
    assert BOOK_SCHEMA.read_bytes() == (repository / "schemas" / "book.schema.json").read_bytes()
    shipped = sorted((BOOK_SCHEMA.parent / "schemas").glob("*.schema.json"))
    assert [path.name for path in shipped] == [
        "nested_defaults.schema.json", "nested_defaults_deep.schema.json", "nested_defaults_missing.schema.json"]
    for path in shipped:
        assert path.read_bytes() == (repository / "tests" / "schemas" / path.name).read_bytes(), path.name


@pytest.mark.parametrize(("category", "status", "accepted"), [
    ("409", 409, True), (409, 409, True), ("4xx", 409, True), ("4XX", 404, True), (" 422 ", 422, True),
    ("5xx", 409, False), ("404", 409, False), (True, 1, False), (None, 404, False), ("4", 404, False),
])
def test_a_category_is_the_status_or_its_class(category: object, status: int, accepted: bool) -> None:
    assert readings.category_matches(category, status) is accepted


def test_a_class_category_stands_for_the_catalog_status() -> None:
    assert readings.status_of("4xx", 409) == 409
    assert readings.status_of("404", 409) == 404
    assert readings.status_of("client", None) == 0


def test_the_root_is_spelled_either_way_and_nothing_else_is() -> None:
    assert readings.same_pointer("", "/") and readings.same_pointer("/", "")
    assert readings.same_pointer("/a", "/a")
    assert not readings.same_pointer("/a", "/") and not readings.same_pointer("", "/a")


def test_expected_is_the_value_an_object_holding_it_or_a_text_naming_it() -> None:
    assert readings.expected_matches(1, 1)
    assert readings.expected_matches({"minimum": 1}, 1)
    assert readings.expected_matches("minimum 1", 1)
    assert readings.expected_matches(["title"], "title")
    assert not readings.expected_matches(2, 1)
    assert not readings.expected_matches(True, 1)
    assert not readings.expected_matches({"minimum": 2}, 1)


def test_actual_is_the_value_its_json_or_its_type_name() -> None:
    assert readings.value_matches(0, 0) and readings.value_matches("0", 0)
    assert readings.value_matches("null", None) and readings.value_matches("integer", 0)
    assert readings.value_matches("bogus", "bogus") and readings.value_matches('"bogus"', "bogus")
    assert not readings.value_matches(1, 0) and not readings.value_matches(False, 0)
    assert not readings.value_matches("string", None)


def test_placeholders_are_replaced_after_splitting_so_paths_with_spaces_stay_one_argument() -> None:
    argv = command_line("srv --schema {schema} --dir={storage_dir} 'a b'", Path("/x y/s.json"), Path("/d d"))
    assert argv == ["srv", "--schema", "/x y/s.json", "--dir=/d d", "a b"]
