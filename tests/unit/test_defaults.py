"""The initial document: built from explicit defaults only, or refused with every missing field."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from schemadoc.errors import SchemaDocError
from schemadoc.schema import LoadedSchema, load_schema

REPO = Path(__file__).resolve().parents[2]
BOOK = REPO / "schemas" / "book.schema.json"
SCHEMAS = REPO / "tests" / "schemas"

BOOK_DEFAULTS = {
    "title": "Untitled",
    "metadata": {"language": "en", "status": "draft", "edition": 1, "keywords": []},
    "chapters": [],
    "tags": [],
}


@pytest.fixture(scope="module")
def book() -> LoadedSchema:
    return load_schema(BOOK)


def inline(tmp_path: Path, schema: dict[str, Any]) -> LoadedSchema:
    path = tmp_path / "inline.schema.json"
    path.write_text(json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}))
    return load_schema(path)


def missing_paths(schema: LoadedSchema) -> list[str]:
    with pytest.raises(SchemaDocError) as caught:
        schema.defaults()
    assert caught.value.code == "required-field-without-default"
    paths: list[str] = caught.value.details["paths"]
    return paths


# -- the book ---------------------------------------------------------------------------


def test_book_defaults_are_the_documented_initial_document(book: LoadedSchema) -> None:
    assert book.defaults() == BOOK_DEFAULTS


def test_book_defaults_keep_the_schema_property_order(book: LoadedSchema) -> None:
    document = book.defaults()
    assert list(document) == ["title", "metadata", "chapters", "tags"]
    assert list(document["metadata"]) == ["language", "status", "edition", "keywords"]


def test_book_defaults_validate_with_both_validators(book: LoadedSchema) -> None:
    document = book.defaults()
    assert book.make_validator().is_valid(document)
    assert book.make_reference_validator().is_valid(document)
    assert list(book.make_reference_validator().iter_errors(document)) == []


def test_a_required_object_without_default_is_built_from_its_nested_defaults(book: LoadedSchema) -> None:
    assert "default" not in book.root["properties"]["metadata"]
    assert book.defaults()["metadata"]["language"] == "en"


def test_a_default_behind_a_ref_is_used(book: LoadedSchema) -> None:
    assert book.root["$defs"]["metadata"]["properties"]["status"] == {"$ref": "#/$defs/status"}
    assert book.defaults()["metadata"]["status"] == "draft"


def test_optional_members_take_their_default_or_are_left_out(book: LoadedSchema) -> None:
    document = book.defaults()
    assert "tags" not in book.root["required"]
    assert document["tags"] == []
    for optional_without_default in ("author", "created", "homepage", "contact", "isbn"):
        assert optional_without_default not in document["metadata"]


def test_each_call_returns_a_fresh_document(book: LoadedSchema) -> None:
    first = book.defaults()
    first["metadata"]["keywords"].append("changed")
    first["chapters"].append({"id": "ch-1"})
    assert book.defaults() == BOOK_DEFAULTS
    assert book.defaults() is not book.defaults()


def test_defaults_never_share_objects_with_the_schema(book: LoadedSchema) -> None:
    document = book.defaults()
    document["chapters"].append("x")
    assert book.root["properties"]["chapters"]["default"] == []


# -- refusals ---------------------------------------------------------------------------


def test_every_required_field_without_a_default_is_listed() -> None:
    schema = load_schema(SCHEMAS / "required_no_default.schema.json")
    assert missing_paths(schema) == ["/owner", "/settings/level", "/count", "/extra"]


def test_the_refusal_is_the_same_every_time() -> None:
    schema = load_schema(SCHEMAS / "required_no_default.schema.json")
    assert missing_paths(schema) == missing_paths(schema)


def test_no_implicit_empty_values_are_invented(tmp_path: Path) -> None:
    schema = inline(
        tmp_path,
        {
            "type": "object",
            "required": ["text", "number", "list", "flag", "anything"],
            "properties": {
                "text": {"type": "string"},
                "number": {"type": "integer"},
                "list": {"type": "array"},
                "flag": {"type": "boolean"},
                "anything": {},
            },
        },
    )
    assert missing_paths(schema) == ["/text", "/number", "/list", "/flag", "/anything"]


def test_a_required_oneof_without_default_is_not_guessed(tmp_path: Path) -> None:
    schema = inline(
        tmp_path,
        {
            "type": "object",
            "required": ["who"],
            "properties": {"who": {"oneOf": [{"type": "string"}, {"type": "object"}]}},
        },
    )
    assert missing_paths(schema) == ["/who"]


def test_a_required_object_that_contains_itself_is_reported_not_looped(tmp_path: Path) -> None:
    schema = inline(
        tmp_path,
        {
            "$ref": "#/$defs/node",
            "$defs": {
                "node": {
                    "type": "object",
                    "required": ["label", "child"],
                    "properties": {
                        "label": {"type": "string", "default": "n"},
                        "child": {"$ref": "#/$defs/node"},
                    },
                }
            },
        },
    )
    assert missing_paths(schema) == ["/child/child"]


def test_a_root_without_default_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    assert missing_paths(inline(tmp_path, {"type": "array"})) == ["/"]


# -- where defaults come from -----------------------------------------------------------


def test_a_property_default_wins_over_the_default_of_its_ref_target(tmp_path: Path) -> None:
    schema = inline(
        tmp_path,
        {
            "type": "object",
            "properties": {
                "mode": {"$ref": "#/$defs/mode", "default": "manual"},
                "other": {"$ref": "#/$defs/mode"},
            },
            "$defs": {"mode": {"enum": ["auto", "manual"], "default": "auto"}},
        },
    )
    assert schema.defaults() == {"mode": "manual", "other": "auto"}


def test_defaults_inside_allof_are_used(tmp_path: Path) -> None:
    schema = inline(
        tmp_path,
        {
            "type": "object",
            "required": ["settings"],
            "allOf": [
                {"properties": {"settings": {"$ref": "#/$defs/settings"}}},
                {"properties": {"version": {"type": "integer", "default": 3}}},
            ],
            "$defs": {
                "settings": {
                    "type": "object",
                    "required": ["a"],
                    "allOf": [{"properties": {"a": {"default": 1}}}, {"properties": {"b": {"default": 2}}}],
                }
            },
        },
    )
    assert schema.defaults() == {"settings": {"a": 1, "b": 2}, "version": 3}


def test_required_objects_are_built_recursively_through_several_levels(tmp_path: Path) -> None:
    schema = inline(
        tmp_path,
        {
            "type": "object",
            "required": ["a"],
            "properties": {
                "a": {
                    "type": "object",
                    "required": ["b"],
                    "properties": {
                        "b": {"$ref": "#/$defs/b"},
                        "optional_object": {"type": "object", "properties": {"x": {"default": 1}}},
                    },
                }
            },
            "$defs": {"b": {"type": "object", "required": ["c"], "properties": {"c": {"default": "deep"}}}},
        },
    )
    assert schema.defaults() == {"a": {"b": {"c": "deep"}}}


def test_an_explicit_object_default_is_the_start_and_its_absent_members_are_filled(tmp_path: Path) -> None:
    schema = inline(
        tmp_path,
        {
            "type": "object",
            "required": ["settings"],
            "properties": {
                "settings": {
                    "type": "object",
                    "default": {"theme": "dark"},
                    "properties": {"theme": {"default": "light"}, "size": {"default": 12}, "font": {"type": "string"}},
                }
            },
        },
    )
    assert schema.defaults() == {"settings": {"theme": "dark", "size": 12}}


NESTED = SCHEMAS / "nested_defaults.schema.json"


def test_defaults_inside_a_defaulted_object_behind_ref_are_filled() -> None:
    schema = load_schema(NESTED)
    document = schema.defaults()
    assert document == {"metadata": {"title": "Untitled", "language": "en"}}
    assert schema.make_validator().is_valid(document)
    assert list(schema.make_reference_validator().iter_errors(document)) == []


def test_two_levels_of_defaulted_objects_keep_what_the_outer_default_spells_out() -> None:
    schema = load_schema(SCHEMAS / "nested_defaults_deep.schema.json")
    document = schema.defaults()
    assert document["settings"] == {"display": {"theme": "dark", "size": 12}, "locale": {"language": "en"}}
    assert schema.make_reference_validator().is_valid(document)


def test_a_recursive_defaulted_object_is_expanded_once_and_terminates() -> None:
    schema = load_schema(SCHEMAS / "nested_defaults_deep.schema.json")
    assert schema.defaults()["tree"] == {"name": "node"}


def test_required_members_of_a_defaulted_object_without_any_default_are_all_listed() -> None:
    schema = load_schema(SCHEMAS / "nested_defaults_missing.schema.json")
    assert missing_paths(schema) == ["/metadata/title", "/metadata/isbn", "/metadata/owner/name"]


def test_a_defaulted_object_that_lists_a_required_member_needs_no_other_default(tmp_path: Path) -> None:
    schema = inline(
        tmp_path,
        {
            "type": "object",
            "required": ["owner"],
            "properties": {
                "owner": {
                    "type": "object",
                    "default": {"name": "me"},
                    "required": ["name", "role"],
                    "properties": {"name": {"type": "string"}, "role": {"type": "string", "default": "author"}},
                }
            },
        },
    )
    assert schema.defaults() == {"owner": {"name": "me", "role": "author"}}


def test_a_default_that_is_not_an_object_is_taken_as_written(tmp_path: Path) -> None:
    schema = inline(
        tmp_path,
        {
            "type": "object",
            "properties": {
                "items": {"type": "array", "default": [{}], "items": {"properties": {"x": {"default": 1}}}},
                "anything": {"default": None, "properties": {"y": {"default": 2}}},
            },
        },
    )
    assert schema.defaults() == {"items": [{}], "anything": None}


def test_a_root_default_is_the_whole_document(tmp_path: Path) -> None:
    schema = inline(
        tmp_path, {"type": "object", "default": {"x": 1}, "required": ["x"], "properties": {"x": {}}}
    )
    assert schema.defaults() == {"x": 1}


def test_defaults_reach_through_sibling_files() -> None:
    schema = load_schema(SCHEMAS / "sibling_ref.schema.json")
    document = schema.defaults()
    assert document == {"settings": {"theme": "light", "font_size": 12}}
    assert schema.make_validator().is_valid(document)
    assert schema.make_reference_validator().is_valid(document)


def test_a_recursive_tree_gets_its_root_node_defaults() -> None:
    schema = load_schema(SCHEMAS / "tree.schema.json")
    assert schema.defaults() == {"name": "root", "children": []}
    assert schema.make_validator().is_valid(schema.defaults())
