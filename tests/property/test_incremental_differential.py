"""Incremental validation gives the whole-document verdict, every time.

A valid document is changed by a patch applied on a structurally shared copy (as every write
is); the verdict that looks only where the patch reached must equal validating the whole result
with the runtime validator, and a rejected change must carry the whole-document report, also
when that report is built from the places the change reached (``change_report``). The
schemas are the official JSON-Schema-Test-Suite (draft 2020-12, optional tests included), our
example schemas, and generated ones:

* every valid/invalid pair of the suite is replayed as "start from the valid instance, patch it
  into the other" (with several patches per pair: minimal edits, jsonpatch's diff, a root replace);
* Hypothesis draws random patches (add, remove, replace, move, copy; values taken from the
  schema's own test instances) on valid documents of every schema.

The default run keeps example counts small; ``-m slow`` runs many more.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from official_suite import Group, groups, suite_root

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch, json_equal
from schemadoc.pointer import format_pointer
from schemadoc.schema import load_schema
from schemadoc.validation import DocumentValidator

REPO = Path(__file__).resolve().parents[2]
FAST = settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
SLOW = settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))


@dataclass
class Case:
    name: str
    validator: DocumentValidator
    valid: list[Any]          # instances the whole-document validator accepts
    values: list[Any]         # values to put into documents (valid or not)


def _validator(schema: Any, directory: Path, name: str) -> DocumentValidator | None:
    path = directory / f"{name}.schema.json"
    path.write_text(json.dumps(schema))
    try:
        return DocumentValidator(load_schema(path))
    except SchemaDocError:
        return None  # not loadable here (a remote $ref, another draft's meta-schema, a cycle)


def _subvalues(value: Any) -> Iterator[Any]:
    yield value
    if isinstance(value, dict):
        for child in value.values():
            yield from _subvalues(child)
    elif isinstance(value, list):
        for child in value:
            yield from _subvalues(child)


@cache
def _suite_groups() -> tuple[Group, ...] | str:
    try:
        return tuple(groups(suite_root()))
    except RuntimeError as error:  # no package index reachable
        return str(error)


def _loaded_groups() -> tuple[Group, ...]:
    found = _suite_groups()
    if isinstance(found, str):
        if os.environ.get("CI"):
            pytest.fail(f"the official JSON-Schema-Test-Suite is needed on CI: {found}")
        pytest.skip(f"the official JSON-Schema-Test-Suite cannot be downloaded here: {found}")
    return found


@cache
def suite_cases() -> tuple[Case, ...]:
    directory = Path(tempfile.mkdtemp(prefix="suite-schemas-"))
    out: list[Case] = []
    for index, group in enumerate(_loaded_groups()):
        validator = _validator(group.schema, directory, f"g{index}")
        if validator is None:
            continue
        instances = [instance for _, instance, _ in group.tests]
        valid = [instance for instance in instances if validator.validate(instance).valid]
        values = [each for instance in instances for each in _subvalues(instance)]
        out.append(Case(group.name, validator, valid, [*values, None, 0, "", [], {}]))
    return tuple(out)


# -- patches -----------------------------------------------------------------------------------


def _edits(before: Any, after: Any, tokens: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
    """A patch from ``before`` to ``after`` that edits as deep as it can (JSON equality, not Python's)."""
    path = format_pointer(list(tokens)) if tokens else ""
    if isinstance(before, dict) and isinstance(after, dict):
        for name in before:
            if name not in after:
                yield {"op": "remove", "path": format_pointer([*tokens, name])}
        for name, value in after.items():
            if name not in before:
                yield {"op": "add", "path": format_pointer([*tokens, name]), "value": value}
            else:
                yield from _edits(before[name], value, (*tokens, name))
    elif isinstance(before, list) and isinstance(after, list):
        common = min(len(before), len(after))
        for position in range(common):
            yield from _edits(before[position], after[position], (*tokens, str(position)))
        for position in range(len(before) - 1, common - 1, -1):
            yield {"op": "remove", "path": format_pointer([*tokens, str(position)])}
        for position in range(common, len(after)):
            yield {"op": "add", "path": format_pointer([*tokens, str(position)]), "value": after[position]}
    elif not json_equal(before, after):
        yield {"op": "replace", "path": path, "value": after}


def _front_edits(before: Any, after: Any) -> list[dict[str, Any]] | None:
    """For two arrays: remove from the front and insert at the front (items shift)."""
    if not (isinstance(before, list) and isinstance(after, list)):
        return None
    ops = [{"op": "remove", "path": "/0"} for _ in before]
    ops += [{"op": "add", "path": "/0", "value": value} for value in reversed(after)]
    return ops


def shifts(document: Any) -> Iterator[list[dict[str, Any]]]:
    """Inserts and removals at the front of every array: the items after them change position."""
    for tokens in _paths(document):
        node = _resolve(document, tokens)
        if isinstance(node, list) and node:
            first, last = format_pointer([*tokens, "0"]), format_pointer([*tokens, str(len(node) - 1)])
            yield [{"op": "remove", "path": first}]
            yield [{"op": "copy", "from": last, "path": first}]
            yield [{"op": "move", "from": last, "path": first}]
            yield [{"op": "add", "path": first, "value": None}]


def patches_between(before: Any, after: Any) -> list[list[dict[str, Any]]]:
    out = [list(_edits(before, after)), [{"op": "replace", "path": "", "value": after}]]
    front = _front_edits(before, after)
    if front is not None:
        out.append(front)
    with contextlib.suppress(Exception):  # jsonpatch cannot diff every pair; the others still run
        out.append(jsonpatch.make_patch(before, after).patch)
    return out


# -- the property --------------------------------------------------------------------------------


def assert_incremental_equals_whole(validator: DocumentValidator, before: Any, patch: list[dict[str, Any]]) -> None:
    """Apply ``patch`` to the valid ``before`` and compare the incremental verdict with the whole one."""
    try:
        applied = apply_patch(before, patch)
    except SchemaDocError:
        return  # a patch that does not apply never reaches validation
    after = applied.document
    assert validator.validate(before).valid  # also: the validator now knows ``before`` is valid
    whole = validator.validate(after)
    assert validator.change_is_valid(before, after) is whole.valid, (before, patch, after)
    assert validator.change_is_valid(before, after, applied.patch) is whole.valid, (before, patch, after)
    report = validator.validate_change(before, after, patch=applied.patch, keep=False)
    assert report.to_dict() == whole.to_dict(), (report.to_dict(), whole.to_dict())
    if whole.valid:
        return
    # a rejected change: the report built where the change is, when it is built, is the whole one
    for paths in (applied.patch, None):
        incremental = validator.change_report(before, after, paths)
        if incremental is not None:
            assert incremental.to_dict() == whole.to_dict(), (before, patch, after)
            INCREMENTAL_REPORTS[paths is None] += 1


INCREMENTAL_REPORTS = [0, 0]  # rejected changes reported from the change: with the patch's paths, found by scanning


def test_the_official_suite_is_available_and_mostly_loads() -> None:
    cases = suite_cases()
    total = len(_loaded_groups())
    assert total > 300
    assert len(cases) > 0.8 * total, f"only {len(cases)} of {total} suite schemas load"


def test_every_valid_invalid_pair_of_the_suite_replays_through_the_incremental_path() -> None:
    pairs = 0
    reported_before = min(INCREMENTAL_REPORTS)
    for case in suite_cases():
        for before in case.valid:
            for target in _targets(case):
                for patch in patches_between(before, target):
                    assert_incremental_equals_whole(case.validator, before, patch)
                    pairs += 1
            for patch in shifts(before):
                assert_incremental_equals_whole(case.validator, before, patch)
    assert pairs > 1000
    assert min(INCREMENTAL_REPORTS) - reported_before > 500  # the incremental report really ran


def _targets(case: Case) -> list[Any]:
    """The suite's own instances of this group (every one, valid or not)."""
    return _instances_by_name()[case.name]


@cache
def _instances_by_name() -> dict[str, list[Any]]:
    return {group.name: [instance for _, instance, _ in group.tests] for group in _loaded_groups()}


# -- random patches ----------------------------------------------------------------------------------


def _paths(document: Any, tokens: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    yield tokens
    if isinstance(document, dict):
        for name, value in document.items():
            yield from _paths(value, (*tokens, name))
    elif isinstance(document, list):
        for position, value in enumerate(document):
            yield from _paths(value, (*tokens, str(position)))


def _resolve(document: Any, tokens: tuple[str, ...]) -> Any:
    for token in tokens:
        document = document[token] if isinstance(document, dict) else document[int(token)]
    return document


@st.composite
def random_patch(draw: st.DrawFn, document: Any, values: list[Any]) -> list[dict[str, Any]]:
    """One to four operations, each valid on the document as the previous ones left it."""
    patch: list[dict[str, Any]] = []
    current = document
    for _ in range(draw(st.integers(1, 4))):
        paths = list(_paths(current))
        target = draw(st.sampled_from(paths))
        value = draw(st.sampled_from(values)) if values else None
        containers = [path for path in paths if isinstance(_resolve(current, path), dict | list)]
        kind = draw(st.sampled_from(["add", "remove", "replace", "move", "copy"]))
        operation: dict[str, Any]
        if kind == "add" and containers:
            parent = draw(st.sampled_from(containers))
            node = _resolve(current, parent)
            if isinstance(node, list):
                token = str(draw(st.integers(0, len(node))))
            else:
                token = draw(st.sampled_from([*node, "extra", "foo", "bar", "a"]))
            operation = {"op": "add", "path": format_pointer([*parent, token]), "value": value}
        elif kind in ("move", "copy") and len(paths) > 1:
            source = draw(st.sampled_from(paths[1:]))
            parent = draw(st.sampled_from(containers))
            node = _resolve(current, parent)
            token = str(draw(st.integers(0, len(node)))) if isinstance(node, list) else draw(
                st.sampled_from([*node, "extra", "foo"]))
            operation = {"op": kind, "from": format_pointer(list(source)), "path": format_pointer([*parent, token])}
        elif kind == "remove" and target:
            operation = {"op": "remove", "path": format_pointer(list(target))}
        else:
            operation = {"op": "replace", "path": format_pointer(list(target)) if target else "", "value": value}
        try:
            current = apply_patch(current, [operation]).document
        except SchemaDocError:
            continue
        patch.append(operation)
    return patch


@st.composite
def suite_change(draw: st.DrawFn) -> tuple[Case, Any, list[dict[str, Any]]]:
    cases = [case for case in suite_cases() if case.valid]
    case = draw(st.sampled_from(cases))
    before = draw(st.sampled_from(case.valid))
    return case, before, draw(random_patch(before, case.values))


def _check_suite_change(change: tuple[Case, Any, list[dict[str, Any]]]) -> None:
    case, before, patch = change
    assert_incremental_equals_whole(case.validator, before, patch)


@FAST
@given(suite_change())
def test_random_patches_on_suite_schemas_get_the_whole_document_verdict(
        change: tuple[Case, Any, list[dict[str, Any]]]) -> None:
    _check_suite_change(change)


@pytest.mark.slow
@SLOW
@given(suite_change())
def test_many_random_patches_on_suite_schemas_get_the_whole_document_verdict(
        change: tuple[Case, Any, list[dict[str, Any]]]) -> None:
    _check_suite_change(change)


# -- our example schemas ---------------------------------------------------------------------------

EXAMPLES: dict[str, Any] = {
    "schemas/book.schema.json": {
        "title": "T",
        "metadata": {"language": "en", "status": "draft", "edition": 1, "author": {"name": "Ada"},
                     "keywords": ["a", "b"], "created": "2025-01-01T00:00:00Z"},
        "chapters": [{"id": f"ch-{i}", "title": f"c{i}", "sections": [
            {"title": "s", "paragraphs": [{"text": "p", "style": "quote"}, {"text": "q"}],
             "sections": [{"title": "t", "paragraphs": []}]}]} for i in range(3)],
        "tags": ["x", "y"],
    },
    "tests/schemas/tree.schema.json": {"name": "r", "parent": {"name": "p"},
                                       "children": [{"name": "c", "children": [{"name": "d"}]}]},
    "tests/schemas/oracle.schema.json": {"id": "ch-1", "when": "2025-01-01T00:00:00Z", "level": 2,
                                         "style": "quote", "tags": ["a", "b"], "who": {"name": "x"}},
    "tests/schemas/sibling_ref_with_id.schema.json": {"author": {"name": "a", "email": "a@b.co"},
                                                      "reviewers": [{"name": "b"}, {"name": "c"}]},
}
ODD_VALUES: list[Any] = ["", -1, 7, "x@", "ch-x", "bold", "2025-02-30", {"name": ""}, {"nick": "x"}, [1, 1], ["a", "a"],
                         {"title": "s", "paragraphs": []}, {"id": "ch-9", "title": "n", "sections": []}]


@cache
def example_cases() -> tuple[Case, ...]:
    out = []
    for relative, document in EXAMPLES.items():
        validator = DocumentValidator(load_schema(REPO / relative))
        assert validator.validate(document).valid, relative
        out.append(Case(relative, validator, [document], [*_subvalues(document), *ODD_VALUES]))
    return tuple(out)


@st.composite
def example_change(draw: st.DrawFn) -> tuple[Case, Any, list[dict[str, Any]]]:
    case = draw(st.sampled_from(example_cases()))
    before = case.valid[0]
    return case, before, draw(random_patch(before, case.values))


@FAST
@given(example_change())
def test_random_patches_on_our_example_schemas_get_the_whole_document_verdict(
        change: tuple[Case, Any, list[dict[str, Any]]]) -> None:
    _check_suite_change(change)


# -- generated schemas -----------------------------------------------------------------------------

NAMES = st.sampled_from(["a", "b", "c", "1"])
SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-2, 3), st.sampled_from(["", "a", "ab", "abc"]))
JSON = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                     st.dictionaries(NAMES, inner, max_size=3)), max_leaves=8)
LEAF_SCHEMAS = st.sampled_from([
    True, {}, {"type": "integer"}, {"type": "string"}, {"minimum": 0}, {"maxLength": 2}, {"enum": [1, "a", None]},
    {"const": 1}, {"type": ["array", "object"]}, {"not": {"type": "string"}}, {"format": "date"},
])


def _compound(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    optional = {
        "object": st.fixed_dictionaries({}, optional={
            "properties": st.dictionaries(NAMES, children, max_size=3),
            "patternProperties": st.dictionaries(st.sampled_from(["^a", "^\\d$", "b$"]), children, max_size=2),
            "additionalProperties": children,
            "required": st.lists(NAMES, unique=True, max_size=2),
            "minProperties": st.integers(0, 2), "maxProperties": st.integers(1, 3),
            "dependentRequired": st.dictionaries(NAMES, st.lists(NAMES, unique=True, max_size=2), max_size=2),
            "dependentSchemas": st.dictionaries(NAMES, children, max_size=2),
            "propertyNames": st.sampled_from([{"maxLength": 1}, {"pattern": "^[a-c]$"}, True]),
            "unevaluatedProperties": children,
        }),
        "array": st.fixed_dictionaries({}, optional={
            "items": children, "prefixItems": st.lists(children, min_size=1, max_size=2),
            "uniqueItems": st.booleans(), "contains": children, "minContains": st.integers(0, 2),
            "maxContains": st.integers(1, 3), "minItems": st.integers(0, 2), "maxItems": st.integers(1, 4),
            "unevaluatedItems": children,
        }),
    }
    return st.one_of(
        optional["object"], optional["array"],
        st.builds(lambda members: {"oneOf": members}, st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda members: {"anyOf": members}, st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda members: {"allOf": members}, st.lists(children, min_size=1, max_size=3)),
        st.builds(lambda a, b, c: {"if": a, "then": b, "else": c}, children, children, children),
        st.builds(lambda inner: {"$ref": "#/$defs/shared", "$defs": {"shared": inner}}, children),
    )


SCHEMAS = st.recursive(LEAF_SCHEMAS, _compound, max_leaves=10)


@st.composite
def generated_change(draw: st.DrawFn) -> tuple[Case, Any, list[dict[str, Any]]] | None:
    schema = draw(SCHEMAS)
    if not isinstance(schema, dict):
        schema = {"allOf": [schema]}
    validator = _generated_validator(json.dumps(schema, sort_keys=True))
    if validator is None:
        return None
    candidates = draw(st.lists(JSON, min_size=4, max_size=8))
    valid = [each for each in candidates if validator.validate(each).valid]
    if not valid:
        return None
    before = draw(st.sampled_from(valid))
    values = [each for candidate in candidates for each in _subvalues(candidate)]
    case = Case("generated", validator, valid, values)
    return case, before, draw(random_patch(before, values))


_GENERATED_DIR = Path(tempfile.mkdtemp(prefix="generated-schemas-"))


@cache
def _generated_validator(text: str) -> DocumentValidator | None:
    return _validator(json.loads(text), _GENERATED_DIR, f"s{abs(hash(text))}")


@FAST
@given(generated_change())
def test_random_patches_on_generated_schemas_get_the_whole_document_verdict(
        change: tuple[Case, Any, list[dict[str, Any]]] | None) -> None:
    event("checked" if change is not None else "no valid document for the schema")
    if change is not None:
        _check_suite_change(change)


@pytest.mark.slow
@SLOW
@given(generated_change())
def test_many_random_patches_on_generated_schemas_get_the_whole_document_verdict(
        change: tuple[Case, Any, list[dict[str, Any]]] | None) -> None:
    if change is not None:
        _check_suite_change(change)
