"""RFC 6902 operations on structurally shared copies, and request compilation."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch, apply_patches, check_patch, json_equal
from schemadoc.ops.compile import compile_create, compile_delete, compile_update


def doc() -> dict[str, Any]:
    return {"a": {"b": [1, 2, 3], "c": {"d": "x"}}, "e": [{"f": 1}, {"f": 2}], "g": "h"}


def test_applying_a_patch_never_mutates_the_original() -> None:
    original = doc()
    snapshot = copy.deepcopy(original)
    apply_patch(original, [
        {"op": "replace", "path": "/a/c/d", "value": "y"},
        {"op": "add", "path": "/a/b/-", "value": 4},
        {"op": "remove", "path": "/e/0"},
        {"op": "move", "from": "/g", "path": "/a/g"},
        {"op": "copy", "from": "/a/c", "path": "/z"},
    ])
    assert original == snapshot


def test_untouched_subtrees_are_shared_not_copied() -> None:
    original = doc()
    result = apply_patch(original, [{"op": "replace", "path": "/a/c/d", "value": "y"}]).document
    assert result["e"] is original["e"]
    assert result["a"]["b"] is original["a"]["b"]
    assert result["a"] is not original["a"]


def test_dash_is_normalised_to_the_concrete_index() -> None:
    applied = apply_patch(doc(), [{"op": "add", "path": "/a/b/-", "value": 4}])
    assert applied.patch == [{"op": "add", "path": "/a/b/3", "value": 4}]
    assert applied.document["a"]["b"] == [1, 2, 3, 4]


def test_add_inserts_into_arrays_and_replace_overwrites() -> None:
    applied = apply_patch(doc(), [{"op": "add", "path": "/a/b/0", "value": 0},
                                  {"op": "replace", "path": "/a/b/3", "value": 9}])
    assert applied.document["a"]["b"] == [0, 1, 2, 9]


def test_replacing_the_root_returns_the_new_value() -> None:
    assert apply_patch(doc(), [{"op": "replace", "path": "", "value": {"x": 1}}]).document == {"x": 1}


def test_removing_the_root_is_refused() -> None:
    with pytest.raises(SchemaDocError) as caught:
        apply_patch(doc(), [{"op": "remove", "path": ""}])
    assert caught.value.code == "root-not-deletable"


def test_failed_test_operation_names_the_path_and_values() -> None:
    with pytest.raises(SchemaDocError) as caught:
        apply_patch(doc(), [{"op": "test", "path": "/g", "value": "nope"}])
    assert caught.value.code == "patch-test-failed"
    assert caught.value.details["actual"] == "h"


def test_json_equality_distinguishes_booleans_from_numbers() -> None:
    assert not json_equal(True, 1)
    assert json_equal(1, 1.0)
    assert json_equal({"a": [1, {"b": None}]}, {"a": [1.0, {"b": None}]})
    assert not json_equal({"a": 1}, {"a": 1, "b": 2})


def test_move_into_own_child_is_patch_invalid() -> None:
    with pytest.raises(SchemaDocError) as caught:
        apply_patch(doc(), [{"op": "move", "from": "/a", "path": "/a/c/x"}])
    assert caught.value.code == "patch-invalid"


def test_copy_produces_an_independent_value() -> None:
    applied = apply_patch(doc(), [{"op": "copy", "from": "/a/c", "path": "/z"},
                                  {"op": "replace", "path": "/z/d", "value": "changed"}])
    assert applied.document["a"]["c"]["d"] == "x"
    assert applied.document["z"]["d"] == "changed"


def test_a_later_operation_on_a_value_added_earlier_in_the_same_patch_works() -> None:
    applied = apply_patch(doc(), [{"op": "add", "path": "/n", "value": {"k": [1]}},
                                  {"op": "add", "path": "/n/k/-", "value": 2}])
    assert applied.document["n"] == {"k": [1, 2]}


def test_an_error_names_the_failing_operation_index() -> None:
    with pytest.raises(SchemaDocError) as caught:
        apply_patch(doc(), [{"op": "replace", "path": "/g", "value": 1},
                            {"op": "replace", "path": "/missing/x", "value": 1}])
    assert caught.value.code == "path-not-found"
    assert caught.value.details["operation_index"] == 1


@pytest.mark.parametrize("patch", [
    {"op": "add"},
    [{"op": "frobnicate", "path": "/a"}],
    [{"op": "add", "path": "/a"}],
    [{"op": "move", "path": "/a"}],
    [{"op": "replace", "path": 3, "value": 1}],
    ["not an object"],
])
def test_malformed_patches_are_patch_invalid(patch: Any) -> None:
    with pytest.raises(SchemaDocError) as caught:
        check_patch(patch)
    assert caught.value.code == "patch-invalid"


# -- compilation ---------------------------------------------------------------------------


def test_update_compiles_to_replace_at_the_concrete_index() -> None:
    compiled = compile_update(doc(), "/e/-1/f", 5)
    assert compiled.patch == [{"op": "replace", "path": "/e/1/f", "value": 5}]


def test_update_of_the_root_replaces_it() -> None:
    assert compile_update(doc(), "/", {"x": 1}).patch == [{"op": "replace", "path": "", "value": {"x": 1}}]


def test_create_on_an_existing_member_is_a_conflict() -> None:
    with pytest.raises(SchemaDocError) as caught:
        compile_create(doc(), "/g", "again")
    assert caught.value.code == "conflict"


def test_create_appends_with_dash_at_the_array_length() -> None:
    compiled = compile_create(doc(), "/e/-", {"f": 3})
    assert compiled.patch == [{"op": "add", "path": "/e/2", "value": {"f": 3}}]
    assert compiled.node_path == "/e/2"


def test_create_beyond_the_array_end_is_path_not_found_with_the_length() -> None:
    with pytest.raises(SchemaDocError) as caught:
        compile_create(doc(), "/e/7", {})
    assert caught.value.code == "path-not-found"
    assert caught.value.details["array_length"] == 2


def test_create_never_builds_intermediate_paths() -> None:
    with pytest.raises(SchemaDocError) as caught:
        compile_create(doc(), "/x/y/z", 1)
    assert caught.value.code == "path-not-found"
    assert caught.value.details["create_first"] == "/x"


def test_delete_of_the_root_is_refused_and_delete_resolves_negative_indices() -> None:
    with pytest.raises(SchemaDocError) as caught:
        compile_delete(doc(), "/")
    assert caught.value.code == "root-not-deletable"
    assert compile_delete(doc(), "/a/b/-1").patch == [{"op": "remove", "path": "/a/b/2"}]


# -- the reference implementation agrees ------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-5, 5) | st.text(max_size=3),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text("abc", max_size=2), children, max_size=3),
    max_leaves=12,
)


@st.composite
def document_and_patch(draw: st.DrawFn) -> tuple[Any, list[dict[str, Any]]]:
    document = draw(st.dictionaries(st.text("abc", min_size=1, max_size=2), json_values, max_size=4))
    paths = _paths(document)
    patch: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["add", "replace", "remove", "copy", "move", "test"]))
        if op in ("add", "replace", "test"):
            patch.append({"op": op, "path": path, "value": draw(json_values)})
        elif op == "remove":
            patch.append({"op": op, "path": path})
        else:
            patch.append({"op": op, "from": draw(st.sampled_from(paths)), "path": path})
    return document, patch


def _paths(value: Any, prefix: str = "") -> list[str]:
    out = [prefix]
    if isinstance(value, dict):
        for key, child in value.items():
            out += _paths(child, f"{prefix}/{key}")
        out.append(f"{prefix}/new")
    elif isinstance(value, list):
        for index, child in enumerate(value):
            out += _paths(child, f"{prefix}/{index}")
        out.append(f"{prefix}/-")
    return out


@settings(max_examples=300, deadline=None)
@given(document_and_patch())
def test_our_patches_agree_with_jsonpatch_and_our_normalised_patch_replays_identically(
        case: tuple[Any, list[dict[str, Any]]]) -> None:
    document, patch = case
    frozen = copy.deepcopy(document)
    try:
        expected = jsonpatch.apply_patch(copy.deepcopy(document), patch)
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError, KeyError, IndexError):
        expected = None
    try:
        applied = apply_patch(document, patch)
    except SchemaDocError:
        assert document == frozen
        # jsonpatch accepts `test` with Python equality (1 == True); we follow JSON equality instead.
        if expected is not None:
            assert any(op["op"] in ("test", "remove") for op in patch)
        return
    assert document == frozen
    if expected is not None:
        assert json_equal(applied.document, expected)
    replayed = jsonpatch.apply_patch(copy.deepcopy(document), applied.patch)
    assert json_equal(replayed, applied.document)


@settings(max_examples=200, deadline=None)
@given(st.lists(document_and_patch(), min_size=1, max_size=4))
def test_patches_applied_in_one_workspace_give_what_applying_them_one_by_one_gives(
        cases: list[tuple[Any, list[dict[str, Any]]]]) -> None:
    """Replaying a journal copies each container once; the result and the untouched input agree."""
    document = cases[0][0]
    frozen = copy.deepcopy(document)
    patches: list[list[dict[str, Any]]] = []
    expected = document
    for _, patch in cases:  # keep the patches that apply in turn: a journal holds only those
        try:
            expected = apply_patch(expected, patch).document
        except SchemaDocError:
            continue
        patches.append(patch)
    kept = copy.deepcopy(patches)
    assert json_equal(apply_patches(document, patches), expected)
    assert document == frozen and patches == kept


def test_one_workspace_copies_a_shared_container_once_and_leaves_the_original_alone() -> None:
    original = doc()
    result = apply_patches(original, [[{"op": "replace", "path": "/a/c/d", "value": str(i)}] for i in range(5)]
                           + [[{"op": "add", "path": "/a/b/-", "value": 9}]])
    assert result["a"]["c"]["d"] == "4" and result["a"]["b"] == [1, 2, 3, 9]
    assert original == doc() and result["e"] is original["e"]


def test_a_patch_that_does_not_apply_in_a_replay_names_its_operation() -> None:
    with pytest.raises(SchemaDocError) as caught:
        apply_patches(doc(), [[{"op": "remove", "path": "/g"}], [{"op": "test", "path": "/g", "value": "h"}]])
    assert caught.value.code == "path-not-found" and caught.value.details["operation_index"] == 0


_SCALAR = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5)
_JSON = st.recursive(_SCALAR, lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=8)
_OPERATION = st.dictionaries(st.sampled_from(["op", "path", "from", "value"]), _JSON, max_size=4) | _JSON


@given(st.lists(_OPERATION, max_size=4) | _JSON)
@settings(max_examples=300, deadline=None)
def test_any_json_as_a_patch_is_applied_or_refused_with_a_catalogued_code(patch: Any) -> None:
    """An 'op' that is an object or an array once escaped as a TypeError (internal-error)."""
    document = {"a": [1, {"b": 2}], "c": "x"}
    try:
        apply_patch(document, check_patch(patch))
    except SchemaDocError as error:
        assert error.code in {"patch-invalid", "path-not-found", "path-invalid", "patch-test-failed",
                              "root-not-deletable", "conflict"}
    assert document == {"a": [1, {"b": 2}], "c": "x"}


@pytest.mark.parametrize("op", [{"a": 1}, ["add"], 7, None])
def test_an_op_that_is_not_a_string_is_patch_invalid(op: Any) -> None:
    with pytest.raises(SchemaDocError) as caught:
        check_patch([{"op": op, "path": "/c", "value": 1}])
    assert caught.value.code == "patch-invalid"
    assert "'op' must be a string" in caught.value.details["problems"][0]["reason"]
