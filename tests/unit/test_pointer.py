"""RFC 6901 parsing and resolution, including the section 5 examples and our extensions."""

from __future__ import annotations

from typing import Any

import pytest

from schemadoc.errors import SchemaDocError
from schemadoc.pointer import escape, format_pointer, parse, parse_node_path, resolve

RFC_DOCUMENT: dict[str, Any] = {
    "foo": ["bar", "baz"],
    "": 0,
    "a/b": 1,
    "c%d": 2,
    "e^f": 3,
    "g|h": 4,
    "i\\j": 5,
    'k"l': 6,
    " ": 7,
    "m~n": 8,
}

RFC_SECTION_5 = [
    ("", RFC_DOCUMENT),
    ("/foo", ["bar", "baz"]),
    ("/foo/0", "bar"),
    ("/", 0),
    ("/a~1b", 1),
    ("/c%d", 2),
    ("/e^f", 3),
    ("/g|h", 4),
    ("/i\\j", 5),
    ('/k"l', 6),
    ("/ ", 7),
    ("/m~0n", 8),
]


@pytest.mark.parametrize(("pointer", "expected"), RFC_SECTION_5)
def test_every_rfc_6901_section_5_example_resolves_strictly(pointer: str, expected: Any) -> None:
    node, _ = resolve(RFC_DOCUMENT, parse(pointer))
    assert node == expected


@pytest.mark.parametrize(("pointer", "_"), RFC_SECTION_5)
def test_parse_and_format_round_trip(pointer: str, _: Any) -> None:
    assert format_pointer(parse(pointer)) == pointer


def test_escape_replaces_tilde_before_slash() -> None:
    assert escape("~1") == "~01"
    assert parse("/" + escape("~1")) == ["~1"]


def test_node_path_treats_slash_and_empty_as_the_root() -> None:
    assert parse_node_path("/") == []
    assert parse_node_path("") == []
    assert parse("/") == [""]


@pytest.mark.parametrize("bad", ["foo", "~0", "/a~2b", "/a~", "a/b"])
def test_malformed_pointers_are_path_invalid(bad: str) -> None:
    with pytest.raises(SchemaDocError) as caught:
        parse(bad)
    assert caught.value.code == "path-invalid"
    assert caught.value.details["path"] == bad


@pytest.mark.parametrize("token", ["01", "+1", "1.0", "x", " 1"])
def test_array_indices_with_leading_zeros_or_signs_are_path_invalid(token: str) -> None:
    with pytest.raises(SchemaDocError) as caught:
        resolve({"a": [1, 2, 3]}, ["a", token])
    assert caught.value.code == "path-invalid"


def test_negative_index_counts_from_the_end_and_is_reported_concretely() -> None:
    node, concrete = resolve({"a": [10, 20, 30]}, ["a", "-1"])
    assert node == 30
    assert concrete == ["a", 2]


def test_negative_index_is_refused_in_strict_mode() -> None:
    with pytest.raises(SchemaDocError) as caught:
        resolve({"a": [10]}, ["a", "-1"], allow_negative=False)
    assert caught.value.code == "path-invalid"


def test_missing_intermediate_path_names_the_deepest_ancestor_and_what_to_create_first() -> None:
    with pytest.raises(SchemaDocError) as caught:
        resolve({"a": {"b": {}}}, ["a", "b", "c", "d"])
    details = caught.value.details
    assert caught.value.code == "path-not-found"
    assert details["path"] == "/a/b/c/d"
    assert details["deepest_ancestor"] == "/a/b"
    assert details["create_first"] == "/a/b/c"


def test_out_of_range_index_reports_the_array_length() -> None:
    with pytest.raises(SchemaDocError) as caught:
        resolve({"a": [1, 2]}, ["a", "5"])
    assert caught.value.details["array_length"] == 2
    assert caught.value.details["deepest_ancestor"] == "/a"


def test_too_negative_index_is_path_not_found() -> None:
    with pytest.raises(SchemaDocError) as caught:
        resolve({"a": [1, 2]}, ["a", "-3"])
    assert caught.value.code == "path-not-found"


def test_descending_into_a_scalar_is_path_not_found() -> None:
    with pytest.raises(SchemaDocError) as caught:
        resolve({"title": "x"}, ["title", "0"])
    assert caught.value.code == "path-not-found"
    assert caught.value.details["deepest_ancestor"] == "/title"


def test_dash_cannot_be_read() -> None:
    with pytest.raises(SchemaDocError) as caught:
        resolve({"a": [1]}, ["a", "-"])
    assert caught.value.code == "path-not-found"
