"""Near-misses of JSON Schema keywords (``requird``, ``minLenght``) are reported with their likely intent, wherever
a keyword is expected and nowhere else; unknown keywords stay legal (the schema loads and validates as before)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from schemadoc.schema import load_schema
from schemadoc.schema.near_misses import KEYWORDS, closest_keyword, near_misses


def _misses(schema: Any) -> list[tuple[str, str]]:
    return [(miss["pointer"], miss["suggestion"]) for miss in near_misses([("s.json", schema)])]


def test_the_issue_s_examples_name_their_intent() -> None:
    assert closest_keyword("requird") == "required"
    assert closest_keyword("minLenght") == "minLength"
    assert closest_keyword("Required") == "required"  # case
    assert closest_keyword("readonly") == "readOnly"
    assert closest_keyword("ref") == "$ref"  # a missing $
    assert closest_keyword("tpye") == "type"  # neighbours swapped
    assert closest_keyword("additionalProperty") == "additionalProperties"


def test_known_keywords_extensions_and_ordinary_words_are_not_near_misses() -> None:
    assert all(closest_keyword(keyword) is None for keyword in KEYWORDS)
    for name in ("x-requird", "name", "label", "data", "nullable", "version", "units", "exclusiveMin", "id_"):
        assert closest_keyword(name) is None, name


def test_a_near_miss_is_found_at_any_depth_where_a_keyword_is_expected() -> None:
    schema = {
        "requird": ["a"],
        "properties": {"a": {"type": "string", "minLenght": 1},
                       "b": {"type": "array", "items": {"Pattern": "^x"}, "prefixItems": [{"maxLenght": 2}]},
                       "c": {"allOf": [{"tpye": "object"}], "not": {"enums": [1]}},
                       "d": {"additionalProperties": {"formats": "email"}}},
        "$defs": {"e": {"propertis": {}}},
        "patternProperties": {"^f": {"minimun": 0}},
        "if": {"const": 1}, "then": {"descripton": "t"},
    }
    assert sorted(_misses(schema)) == sorted([
        ("/requird", "required"), ("/properties/a/minLenght", "minLength"),
        ("/properties/b/items/Pattern", "pattern"), ("/properties/b/prefixItems/0/maxLenght", "maxLength"),
        ("/properties/c/allOf/0/tpye", "type"), ("/properties/c/not/enums", "enum"),
        ("/properties/d/additionalProperties/formats", "format"), ("/$defs/e/propertis", "properties"),
        ("/patternProperties/^f/minimun", "minimum"), ("/then/descripton", "description")])


def test_names_and_values_chosen_by_the_author_are_not_keywords() -> None:
    schema = {"properties": {"requird": {"type": "string"}, "minLenght": {"type": "integer"}},
              "required": ["requird"], "dependentRequired": {"requird": ["minLenght"]},
              "const": {"requird": 1}, "enum": [{"minLenght": 1}], "default": {"Pattern": "x"},
              "examples": [{"tpye": 1}], "x-extra": {"requird": 1}, "$comment": "requird"}
    assert _misses(schema) == []


_VALUE_KEYWORDS = ("const", "enum", "default", "examples")
_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda children: st.lists(children, max_size=3)
                     | st.dictionaries(st.sampled_from(["requird", "minLenght", "tpye", "a"]), children, max_size=3),
                     max_leaves=10)


@given(st.dictionaries(st.sampled_from(_VALUE_KEYWORDS), _json, min_size=1),
       st.lists(st.sampled_from(["properties", "items", "allOf"]), max_size=3))
def test_nothing_inside_a_value_keyword_is_ever_reported(values: dict[str, Any], path: list[str]) -> None:
    schema: dict[str, Any] = dict(values)
    for container in path:  # nest the values somewhere a schema is expected
        schema = {"properties": {"p": schema}} if container == "properties" else \
            {"items": schema} if container == "items" else {"allOf": [schema]}
    assert _misses(schema) == []


@given(st.sampled_from(sorted(keyword for keyword in KEYWORDS if len(keyword.lstrip("$")) >= 5)),
       st.data())
def test_one_slip_of_a_long_keyword_is_traced_back_to_a_keyword(keyword: str, data: st.DataObject) -> None:
    """One character dropped, doubled or two neighbours swapped in a keyword of five letters or more: the slip is
    reported (as that keyword, or another equally close one), never taken for a keyword itself."""
    at = data.draw(st.integers(1, len(keyword) - 2))
    slip = data.draw(st.sampled_from(["drop", "double", "swap"]))
    name = (keyword[:at] + keyword[at + 1:] if slip == "drop" else keyword[:at] + keyword[at] + keyword[at:]
            if slip == "double" else keyword[:at] + keyword[at + 1] + keyword[at] + keyword[at + 2:])
    if name in KEYWORDS or name == keyword:
        return
    assert closest_keyword(name) is not None, name


def test_a_loaded_schema_lists_its_near_misses_and_still_validates_as_json_schema_says(tmp_path: Path) -> None:
    path = tmp_path / "typo.schema.json"
    path.write_text(json.dumps({"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
                                "properties": {"title": {"type": "string", "minLenght": 3}},
                                "requird": ["title"]}))
    schema = load_schema(path)
    assert [(miss["file"], miss["pointer"], miss["keyword"], miss["suggestion"]) for miss in schema.near_misses] == [
        (str(path), "/requird", "requird", "required"), (str(path), "/properties/title/minLenght", "minLenght",
                                                          "minLength")]
    assert "did you mean 'required'?" in next(m["reason"] for m in schema.near_misses if m["keyword"] == "requird")
    validator = schema.make_validator()
    assert validator.is_valid({}) and validator.is_valid({"title": ""})  # legal, and ignored: nothing enforced


def test_a_sibling_file_s_near_misses_name_that_file(tmp_path: Path) -> None:
    (tmp_path / "part.schema.json").write_text(json.dumps({"type": "string", "maxLenght": 3}))
    root = tmp_path / "root.schema.json"
    root.write_text(json.dumps({"type": "object", "properties": {"p": {"$ref": "part.schema.json"}}}))
    assert [(miss["file"], miss["pointer"]) for miss in load_schema(root).near_misses] == [
        (str(tmp_path / "part.schema.json"), "/maxLenght")]
