"""RFC 6901 parsing and resolution, including the section 5 examples and our extensions."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

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


# -- negative indices everywhere, and indices beyond 64 bits (hypothesis) ---------------------------------


@given(items=st.lists(st.integers(), max_size=12), k=st.integers(min_value=1, max_value=20))
def test_a_negative_index_reads_and_inserts_where_python_counts_from_the_end(items: list[int], k: int) -> None:
    from schemadoc.ops.apply import apply_patch
    from schemadoc.ops.compile import compile_create, compile_delete, compile_move, compile_update

    document = {"a": items}
    if k > len(items):  # beyond the array: path-not-found, as an index past its end
        path = f"/a/-{k}"
        for compile_write in (lambda: resolve(document, ["a", f"-{k}"]), lambda: compile_create(document, path, 0),
                              lambda: compile_update(document, path, 0), lambda: compile_delete(document, path),
                              lambda: compile_move(document, path, "/a/0"),
                              lambda: compile_move(document, "/a/0", path)):
            with pytest.raises(SchemaDocError) as raised:
                compile_write()
            assert raised.value.code == "path-not-found"
        return
    node, concrete = resolve(document, ["a", f"-{k}"])
    assert (node, concrete) == (items[-k], ["a", len(items) - k])
    created = compile_create(document, f"/a/-{k}", "new")
    expected = list(items)
    expected.insert(-k, "new")  # type: ignore[arg-type]  # list.insert: before the k-th item from the end
    assert apply_patch(document, created.patch).document == {"a": expected}
    assert created.patch == [{"op": "add", "path": f"/a/{len(items) - k}", "value": "new"}]
    assert compile_delete(document, f"/a/-{k}").patch == [{"op": "remove", "path": f"/a/{len(items) - k}"}]
    moved = compile_move(document, "/a/0", f"/a/-{k}") if k < len(items) else None
    if moved is not None:  # the target counts in the array without the moved item, as RFC 6902's add sees it
        rest = items[1:]
        assert moved == [{"op": "move", "from": "/a/0", "path": f"/a/{len(rest) - k}"}]
        rest.insert(-k, items[0])
        assert apply_patch(document, moved).document == {"a": rest}


@given(digits=st.text("0123456789", min_size=1, max_size=5000), sign=st.sampled_from(["", "-"]))
def test_any_run_of_digits_is_an_index_or_path_invalid_never_a_failure(digits: str, sign: str) -> None:
    largest = 2**63 - 1  # a signed 64-bit integer
    token = sign + digits
    for allow_negative in (True, False):
        try:
            node, concrete = resolve({"a": [1, 2, 3]}, ["a", token], allow_negative=allow_negative)
        except SchemaDocError as error:
            canonical = digits == "0" or digits[0] != "0"
            if not canonical or (sign and (not allow_negative or digits == "0")):
                assert error.code == "path-invalid"
            elif len(digits) > 19 or int(digits) > largest:
                assert error.code == "path-invalid" and error.details["reason"] == "beyond the largest array index"
            else:
                assert error.code == "path-not-found"
        else:
            assert node == [1, 2, 3][int(token)] and concrete == ["a", int(token) % 3]
