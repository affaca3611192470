"""The schema of a node found by its path: dereferenced, polymorphic, recursive, and not found."""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

import pytest

from schemadoc.errors import SchemaDocError
from schemadoc.schema import LoadedSchema, load_schema

REPO = Path(__file__).resolve().parents[2]
BOOK = REPO / "schemas" / "book.schema.json"
SCHEMAS = REPO / "tests" / "schemas"
BOOK_ID = "https://schemadoc.dev/schemas/book.schema.json"
PARAGRAPH = {
    "type": "object",
    "additionalProperties": False,
    "required": ["text"],
    "properties": {
        "text": {"type": "string", "maxLength": 20000},
        "style": {
            "type": "string",
            "enum": ["normal", "quote", "code", "aside", "epigraph"],
            "default": "normal",
        },
    },
}


@pytest.fixture(scope="module")
def book() -> LoadedSchema:
    return load_schema(BOOK)


def inline(tmp_path: Path, schema: dict[str, Any]) -> LoadedSchema:
    path = tmp_path / "inline.schema.json"
    path.write_text(json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}))
    return load_schema(path)


def not_found(schema: LoadedSchema, tokens: list[str]) -> dict[str, Any]:
    with pytest.raises(SchemaDocError) as caught:
        schema.node_schema(tokens)
    assert caught.value.code == "path-not-found"
    return caught.value.details


def refs_in(value: Any) -> list[str]:
    if isinstance(value, dict):
        found = [value["$ref"]] if isinstance(value.get("$ref"), str) else []
        return found + [ref for item in value.values() for ref in refs_in(item)]
    if isinstance(value, list):
        return [ref for item in value for ref in refs_in(item)]
    return []


# -- found ------------------------------------------------------------------------------


def test_metadata_is_the_dereferenced_metadata_definition_with_every_constraint(book: LoadedSchema) -> None:
    metadata = book.node_schema(["metadata"])
    assert metadata["type"] == "object"
    assert metadata["additionalProperties"] is False
    assert metadata["required"] == ["language", "status", "edition"]
    assert list(metadata["properties"]) == [
        "language",
        "status",
        "author",
        "created",
        "homepage",
        "contact",
        "edition",
        "isbn",
        "keywords",
    ]
    assert metadata["properties"]["language"]["pattern"] == "^[a-z]{2}(-[A-Z]{2})?$"
    assert metadata["properties"]["status"]["enum"] == ["draft", "review", "published"]
    assert metadata["properties"]["status"]["default"] == "draft"
    assert metadata["properties"]["created"]["format"] == "date-time"
    assert metadata["properties"]["edition"] == {
        "type": "integer",
        "minimum": 1,
        "maximum": 100,
        "default": 1,
    }
    assert refs_in(metadata) == []


def test_the_description_next_to_a_ref_is_kept(book: LoadedSchema) -> None:
    metadata = book.node_schema(["metadata"])
    assert metadata["description"] == "Who wrote the book, in which language, and where it stands."


def test_an_array_item_gets_the_items_schema(book: LoadedSchema) -> None:
    chapter = book.node_schema(["chapters", "0"])
    assert chapter["required"] == ["id", "title", "sections"]
    assert chapter["properties"]["id"] == {"type": "string", "pattern": "^ch-[0-9]+$"}
    assert chapter["properties"]["sections"]["minItems"] == 1
    assert chapter["properties"]["sections"]["items"]["properties"]["paragraphs"]["items"] == PARAGRAPH


def test_every_array_position_form_gets_the_same_item_schema(book: LoadedSchema) -> None:
    first = book.node_schema(["chapters", "0"])
    assert book.node_schema(["chapters", "1795"]) == first
    assert book.node_schema(["chapters", "-1"]) == first
    assert book.node_schema(["chapters", "-"]) == first


def test_a_deep_leaf_through_recursive_sections_and_a_negative_index(book: LoadedSchema) -> None:
    tokens = ["chapters", "-1", "sections", "0", "sections", "2", "paragraphs", "0", "text"]
    assert book.node_schema(tokens) == {"type": "string", "maxLength": 20000}


def test_a_paragraph_ten_sections_deep_is_still_a_paragraph(book: LoadedSchema) -> None:
    tokens = ["chapters", "3", *["sections", "1"] * 10, "paragraphs", "4"]
    assert book.node_schema(tokens) == PARAGRAPH


def test_a_oneof_node_comes_back_with_every_alternative(book: LoadedSchema) -> None:
    author = book.node_schema(["metadata", "author"])
    assert author["oneOf"][0] == {"type": "string", "minLength": 1}
    person = author["oneOf"][1]
    assert person["required"] == ["name"]
    assert person["properties"]["email"] == {"type": "string", "format": "email"}
    assert len(author["oneOf"]) == 2


def test_a_member_of_one_oneof_alternative_is_found_in_that_alternative(book: LoadedSchema) -> None:
    assert book.node_schema(["metadata", "author", "name"]) == {"type": "string", "minLength": 1}


def test_alternatives_that_all_allow_a_member_are_returned_as_anyof(tmp_path: Path) -> None:
    schema = inline(
        tmp_path,
        {
            "properties": {
                "x": {
                    "oneOf": [
                        {"type": "object", "properties": {"a": {"type": "string"}}},
                        {"type": "object", "properties": {"a": {"type": "integer"}}},
                        {"type": "string"},
                    ]
                }
            }
        },
    )
    assert schema.node_schema(["x", "a"]) == {"anyOf": [{"type": "string"}, {"type": "integer"}]}


def test_allof_members_apply_together(tmp_path: Path) -> None:
    schema = inline(
        tmp_path,
        {
            "allOf": [
                {"properties": {"a": {"minLength": 1}}},
                {"$ref": "#/$defs/b"},
            ],
            "$defs": {"b": {"properties": {"a": {"maxLength": 3}}}},
        },
    )
    assert schema.node_schema(["a"]) == {"allOf": [{"minLength": 1}, {"maxLength": 3}]}


def test_pattern_and_additional_properties_schemas_are_walked(tmp_path: Path) -> None:
    schema = inline(
        tmp_path,
        {
            "type": "object",
            "properties": {"fixed": {"type": "boolean"}},
            "patternProperties": {"^x-": {"type": "string"}},
            "additionalProperties": {"type": "integer"},
        },
    )
    assert schema.node_schema(["fixed"]) == {"type": "boolean"}
    assert schema.node_schema(["x-note"]) == {"type": "string"}
    assert schema.node_schema(["anything"]) == {"type": "integer"}


def test_prefix_items_give_each_position_its_schema(tmp_path: Path) -> None:
    schema = inline(
        tmp_path,
        {
            "type": "array",
            "prefixItems": [{"type": "string"}, {"type": "integer"}],
            "items": {"type": "null"},
        },
    )
    assert schema.node_schema(["0"]) == {"type": "string"}
    assert schema.node_schema(["1"]) == {"type": "integer"}
    assert schema.node_schema(["7"]) == {"type": "null"}
    assert schema.node_schema(["-1"]) == {
        "anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]
    }


def test_an_unconstrained_member_has_the_empty_schema(tmp_path: Path) -> None:
    schema = inline(tmp_path, {"type": "object", "properties": {"free": True}})
    assert schema.node_schema(["free"]) == {}
    assert schema.node_schema(["other", "deeper", "0"]) == {}


def test_the_root_node_is_the_dereferenced_root(book: LoadedSchema) -> None:
    root = book.node_schema([])
    assert root == book.dereferenced_root()
    assert root["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert "$defs" not in root
    assert "$id" not in root
    assert list(root["properties"]) == ["title", "metadata", "chapters", "tags"]
    assert root["properties"]["metadata"]["properties"]["status"]["default"] == "draft"


def test_sibling_file_refs_are_inlined(tmp_path: Path) -> None:
    schema = load_schema(SCHEMAS / "sibling_ref.schema.json")
    assert schema.node_schema(["author", "email"]) == {"type": "string", "format": "email"}
    assert schema.node_schema(["length", "unit"]) == {"enum": ["mm", "cm", "m"], "default": "mm"}
    assert refs_in(schema.dereferenced_root()) == []


# -- recursion stays finite -------------------------------------------------------------


def test_a_recursive_ref_is_left_in_place_as_an_absolute_ref(book: LoadedSchema) -> None:
    root = book.dereferenced_root()
    assert set(refs_in(root)) == {BOOK_ID + "#/$defs/section"}
    section = root["properties"]["chapters"]["items"]["properties"]["sections"]["items"]
    assert section["properties"]["sections"]["items"] == {"$ref": BOOK_ID + "#/$defs/section"}
    assert len(json.dumps(root)) < 10_000


def test_a_tree_recursing_through_properties_stays_finite_at_any_depth() -> None:
    schema = load_schema(SCHEMAS / "tree.schema.json")
    node_ref = (SCHEMAS / "tree.schema.json").as_uri() + "#/$defs/node"
    deep = schema.node_schema(["parent"] * 200 + ["children", "3"])
    assert deep["properties"]["parent"] == {"$ref": node_ref}
    assert deep["properties"]["children"]["items"] == {"$ref": node_ref}
    assert schema.node_schema(["parent"] * 200 + ["name"]) == {"type": "string", "default": "root"}


# -- as written -------------------------------------------------------------------------


def test_dereferenced_false_returns_the_subschema_as_written(book: LoadedSchema) -> None:
    assert book.node_schema(["metadata"], dereferenced=False) == {
        "description": "Who wrote the book, in which language, and where it stands.",
        "$ref": "#/$defs/metadata",
    }
    assert book.node_schema(["chapters", "0"], dereferenced=False) == {"$ref": "#/$defs/chapter"}
    assert book.node_schema(["metadata", "author"], dereferenced=False) == {"$ref": "#/$defs/personOrName"}
    assert book.node_schema([], dereferenced=False) == book.root


def test_results_are_fresh_objects_the_caller_may_change(book: LoadedSchema) -> None:
    first = book.node_schema(["metadata"])
    first["properties"].clear()
    assert book.node_schema(["metadata"])["properties"]
    raw = book.node_schema([], dereferenced=False)
    raw["properties"].clear()
    assert book.root["properties"]


# -- not found --------------------------------------------------------------------------


def test_an_undeclared_member_under_additional_properties_false_is_not_found(book: LoadedSchema) -> None:
    assert not_found(book, ["nope"]) == {
        "path": "/nope",
        "deepest_valid_path": "/",
        "allowed": ["title", "metadata", "chapters", "tags"],
    }


def test_a_child_of_a_string_is_not_found(book: LoadedSchema) -> None:
    assert not_found(book, ["title", "0"]) == {
        "path": "/title/0",
        "deepest_valid_path": "/title",
        "allowed": [],
    }


def test_not_found_names_the_deepest_valid_node_and_what_it_allows(book: LoadedSchema) -> None:
    details = not_found(book, ["chapters", "2", "sections", "0", "paragraph"])
    assert details["deepest_valid_path"] == "/chapters/2/sections/0"
    assert details["allowed"] == ["title", "paragraphs", "sections"]


def test_a_member_name_on_an_array_is_not_found(book: LoadedSchema) -> None:
    details = not_found(book, ["chapters", "first"])
    assert details["deepest_valid_path"] == "/chapters"
    assert details["allowed"] == ["items"]


def test_an_index_into_an_object_is_not_found(book: LoadedSchema) -> None:
    assert not_found(book, ["metadata", "0"])["deepest_valid_path"] == "/metadata"


def test_a_member_no_oneof_alternative_allows_is_not_found(book: LoadedSchema) -> None:
    details = not_found(book, ["metadata", "author", "nickname"])
    assert details["deepest_valid_path"] == "/metadata/author"
    assert details["allowed"] == ["name", "email"]


def test_the_false_schema_allows_nothing(tmp_path: Path) -> None:
    schema = inline(tmp_path, {"type": "object", "properties": {"gone": False, "tuple": {"items": False}}})
    assert not_found(schema, ["gone"])["deepest_valid_path"] == "/"
    assert not_found(schema, ["tuple", "0"])["deepest_valid_path"] == "/tuple"


def test_pointer_tokens_are_escaped_in_the_details(tmp_path: Path) -> None:
    schema = inline(tmp_path, {"type": "object", "additionalProperties": False, "properties": {"a/b": {}}})
    assert schema.node_schema(["a/b"]) == {}
    assert not_found(schema, ["c~d"])["path"] == "/c~0d"


def test_an_index_with_a_leading_zero_or_a_sign_is_an_invalid_path(book: LoadedSchema) -> None:
    for token in ("01", "+1", "-0"):
        with pytest.raises(SchemaDocError) as caught:
            book.node_schema(["chapters", token])
        assert caught.value.code == "path-invalid"
        assert caught.value.details == {"path": f"/chapters/{token}", "token": token}


# -- speed ------------------------------------------------------------------------------


def test_a_deep_leaf_schema_takes_well_under_a_millisecond(book: LoadedSchema) -> None:
    tokens = ["chapters", "1795", "sections", "5", "paragraphs", "9", "text"]
    fresh = load_schema(BOOK)
    started = time.perf_counter()
    fresh.node_schema(tokens)
    assert time.perf_counter() - started < 0.05  # first walk, nothing cached yet
    timings = []
    for _ in range(200):
        started = time.perf_counter()
        fresh.node_schema(tokens)
        timings.append(time.perf_counter() - started)
    assert statistics.median(timings) < 0.001


# -- merge patches ----------------------------------------------------------------------


MERGE_PATCHES_AT_METADATA = [
    ({}, True),
    ({"status": "published"}, True),
    ({"author": None, "isbn": None}, True),
    ({"author": {"email": "ada@example.org"}}, True),
    ({"author": "Ada"}, True),
    ({"keywords": ["a", "b"]}, True),
    ({"keywords": ["a", "a"]}, False),
    ({"keywords": None}, True),
    ({"edition": 0}, False),
    ({"status": "drafted"}, False),
    ({"nickname": "x"}, False),
    ({"author": {"nickname": "x"}}, False),
    ("metadata", False),
]


@pytest.mark.parametrize(("patch", "valid"), MERGE_PATCHES_AT_METADATA)
def test_a_merge_patch_schema_accepts_partial_objects_and_null_deletions(
    book: LoadedSchema, patch: Any, valid: bool
) -> None:
    patch_schema = book.merge_patch_schema(["metadata"])
    assert book.make_validator(patch_schema).is_valid(patch) is valid
    assert book.make_reference_validator(patch_schema).is_valid(patch) is valid


def test_a_merge_patch_replaces_arrays_wholesale_so_items_must_be_complete(book: LoadedSchema) -> None:
    patch_schema = book.merge_patch_schema([])
    validator = book.make_validator(patch_schema)
    chapter = {"id": "ch-1", "title": "One", "sections": [{"title": "S", "paragraphs": [], "sections": []}]}
    assert validator.is_valid({"chapters": [chapter]})
    assert not validator.is_valid({"chapters": [{"id": "ch-1"}]})
    assert validator.is_valid({"metadata": {"language": "de"}, "title": "Neu"})
    assert not validator.is_valid({"title": ""})


def test_the_merge_patch_schema_drops_required_and_keeps_additional_properties_false(
    book: LoadedSchema,
) -> None:
    patch_schema = book.merge_patch_schema(["metadata"])
    assert "required" not in patch_schema
    assert patch_schema["additionalProperties"] is False
    assert patch_schema["properties"]["language"]["anyOf"][0] == {"type": "null"}
    author = patch_schema["properties"]["author"]["anyOf"][1]
    assert "oneOf" not in author
    assert len(author["anyOf"]) == 2


def test_the_merge_patch_schema_of_a_scalar_is_its_full_schema(book: LoadedSchema) -> None:
    assert book.merge_patch_schema(["title"]) == book.node_schema(["title"])
