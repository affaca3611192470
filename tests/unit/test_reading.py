"""The read side for agents: sizes, bounded views, outlines, examples and suggested fixes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonpatch
import orjson
from hypothesis import given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from schemadoc.pointer import parse, resolve
from schemadoc.reading import SizeCache, bounded_view, is_stub, next_incomplete, outline
from schemadoc.reading.examples import example_for
from schemadoc.reading.schemas import NodeSchemas
from schemadoc.schema import load_schema
from schemadoc.validation import DocumentValidator

BOOK = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**63), 2**63 - 1),
                     st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=300))
# member names are never empty here: the tools read "/" as the whole document, not the member ""
_json = st.recursive(_scalars, lambda children: st.one_of(
    st.lists(children, max_size=8), st.dictionaries(st.text(min_size=1, max_size=8), children, max_size=8)),
    max_leaves=80)


def _size(value: Any) -> int:
    return len(orjson.dumps(value))


def _fill(view: Any, whole: Any) -> Any:
    """The view with every stub replaced by what its pointer names in ``whole``."""
    if is_stub(view):
        pointer = view["pointer"]
        node, _ = resolve(whole, parse("" if pointer == "/" else pointer))
        assert _size(node) == view["size_bytes"]
        return node
    if isinstance(view, dict):
        return {key: _fill(value, whole) for key, value in view.items()}
    if isinstance(view, list):
        return [_fill(value, whole) for value in view]
    return view


@given(_json)
def test_a_size_is_the_length_of_the_compact_json(value: Any) -> None:
    sizes = SizeCache()
    assert sizes.size(value) == _size(value)
    assert sizes.size(value) == _size(value)  # and again from the cache


@given(st.integers(40, 60), st.text(min_size=1, max_size=10), st.data())
def test_after_a_write_that_shares_structure_sizes_stay_exact(count: int, seed: str, data: st.DataObject) -> None:
    items = [{"a": seed * 100 + str(i), "b": [seed * 30] * (i % 7), "c": {"d": i}} for i in range(count)]
    sizes = SizeCache()
    document = {"items": items}
    assert sizes.size(document) == _size(document)
    index = data.draw(st.integers(0, len(items) - 1))
    changed = {**items[index], "new": data.draw(st.text(max_size=50))}
    document = {"items": [*items[:index], changed, *items[index + 1:]]}  # a path copy, as writes make them
    assert sizes.size(document) == _size(document)


@settings(max_examples=150)
@given(_json, st.integers(512, 5000), st.one_of(st.none(), st.integers(0, 6)))
def test_a_bounded_view_fits_and_its_stubs_give_back_the_whole_node(value: Any, max_bytes: int,
                                                                      max_depth: int | None) -> None:
    view = bounded_view(value, "", SizeCache(), max_bytes=max_bytes, max_depth=max_depth)
    if view.window is not None and view.window.count < view.window.total:
        return  # shortened: the rest is read with next_offset (checked below)
    if not (isinstance(value, str) and view.truncated):
        assert _fill(view.content, value) == value
    if not is_stub(view.content):
        assert _size(view.content) <= max_bytes or isinstance(value, int | float | bool) or value is None


@given(st.lists(st.text(min_size=50, max_size=200), min_size=1, max_size=200), st.integers(512, 4000))
def test_windows_shortened_by_the_budget_page_through_every_item(items: list[str], max_bytes: int) -> None:
    seen: list[Any] = []
    offset = 0
    while True:
        view = bounded_view(items, "", SizeCache(), offset=offset, max_bytes=max_bytes)
        assert _size(view.content) <= max_bytes
        seen += _fill(view.content, items)
        assert view.window is not None
        if view.window.next_offset is None:
            break
        assert view.window.next_offset > offset
        offset = view.window.next_offset
    assert seen == items


def test_a_string_over_the_budget_is_cut_and_says_where_to_go_on() -> None:
    text = "é" * 5000
    view = bounded_view(text, "/t", SizeCache(), max_bytes=1000)
    assert view.truncated and _size(view.content) <= 1000
    assert view.window is not None and text.startswith(view.content)
    assert view.window.next_offset == len(view.content)


def test_node_schemas_of_every_book_node_give_examples_that_validate() -> None:
    schema = load_schema(BOOK)
    for tokens in ([], ["title"], ["metadata"], ["metadata", "author"], ["metadata", "created"],
                   ["metadata", "isbn"], ["metadata", "language"], ["chapters", "0"], ["chapters", "0", "id"],
                   ["chapters", "0", "sections", "0"], ["chapters", "0", "sections", "0", "paragraphs", "0"]):
        node_schema = schema.node_schema(tokens)
        found, value = example_for(node_schema)
        assert found, tokens
        DocumentValidator(schema).validate_fragment(node_schema, value).raise_if_invalid()


def test_an_example_replacing_a_default_differs_from_it() -> None:
    schema = load_schema(BOOK)
    for tokens, default in ((["metadata", "status"], "draft"), (["metadata", "edition"], 1), (["title"], "Untitled"),
                            (["metadata", "language"], "en")):
        found, value = example_for(schema.node_schema(tokens), default)
        assert found and value != default
        Draft202012Validator(schema.node_schema(tokens)).validate(value)


def test_outline_and_next_incomplete_walk_a_defaults_document() -> None:
    schema = load_schema(BOOK)
    document = schema.defaults()
    found = outline(document, [], "", SizeCache(), NodeSchemas(schema), depth=1)
    assert [entry["pointer"] for entry in found.root["children"]] == [f"/{name}" for name in document]
    validator = DocumentValidator(schema)
    items, more = next_incomplete(document, [], "", NodeSchemas(schema),
                                  lambda s, v: validator.validate_fragment(s, v).valid, limit=3)
    assert items[0].pointer == "/chapters" and more
    assert all(item.reason != "default-value" for item in items), "a value equal to its default is not unfinished"
    items, more = next_incomplete(document, [], "", NodeSchemas(schema),
                                  lambda s, v: validator.validate_fragment(s, v).valid, limit=3,
                                  include_defaults=True)
    assert [item.pointer for item in items] == ["/title", "/chapters", "/tags"] and more
    assert items[0].reason == "default-value" and not items[0].has_example, "no example overwrites a set value"


def test_every_suggested_fix_repairs_its_violation() -> None:
    schema = load_schema(BOOK)
    validator = DocumentValidator(schema)
    document = schema.defaults()
    document["metadata"] = {**document["metadata"], "status": "Review", "edition": "3", "authr": "Ada"}
    document["chapters"] = [{"id": "ch-1", "sections": [{"title": "S", "paragraphs": []}]}]
    del document["tags"]
    document["tagz"] = ["x"]
    report = validator.validate(document)
    fixed = [v for v in report.violations if v.suggested_fix is not None]
    assert {v.constraint for v in fixed} == {"enum", "type", "required", "additionalProperties"}
    assert all(v.schema_excerpt for v in report.violations)
    patch = [operation for v in fixed for operation in v.suggested_fix or []]
    repaired = jsonpatch.apply_patch(document, patch)
    assert validator.validate(repaired).valid, validator.validate(repaired).to_dict()
    assert repaired["metadata"]["status"] == "review" and repaired["metadata"]["edition"] == 3
    assert repaired["metadata"]["author"] == "Ada" and repaired["tags"] == ["x"]
