"""Diffs, merge patches and point-in-time content, without storage."""

from __future__ import annotations

import copy
from typing import Any

import jsonpatch
from hypothesis import given, settings
from hypothesis import strategies as st

from schemadoc.ops.apply import apply_patch, json_equal
from schemadoc.ops.history import (
    CHECKPOINT_EVERY,
    Checkpoints,
    compile_merge_patch,
    diff,
    merge_patch_value,
    replay_from,
)
from schemadoc.ops.journal import JournalEntry

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False, allow_infinity=False, width=16)
    | st.text("xyz", max_size=2),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text("abc", max_size=2), children, max_size=4),
    max_leaves=16,
)


@settings(max_examples=400, deadline=None)
@given(json_values, json_values)
def test_a_diff_applied_to_its_source_gives_its_target_exactly(source: Any, target: Any) -> None:
    patch = diff(source, target)
    assert json_equal(apply_patch(source, patch).document, target)
    assert json_equal(jsonpatch.apply_patch(copy.deepcopy(source), patch), target)


def test_diff_of_a_shared_structure_only_visits_what_changed() -> None:
    big = {"chapters": [{"n": i, "text": "x" * 10} for i in range(1000)], "title": "a"}
    changed = apply_patch(big, [{"op": "replace", "path": "/title", "value": "b"}]).document
    assert diff(big, changed) == [{"op": "replace", "path": "/title", "value": "b"}]


def test_diff_tells_true_from_one() -> None:
    assert diff({"a": 1}, {"a": True}) == [{"op": "replace", "path": "/a", "value": True}]


def test_diff_of_an_append_is_one_add_and_of_a_front_removal_one_remove() -> None:
    assert diff([1, 2, 3], [1, 2, 3, 4]) == [{"op": "add", "path": "/3", "value": 4}]
    assert diff([1, 2, 3], [2, 3]) == [{"op": "remove", "path": "/0"}]


def test_merge_patch_follows_rfc_7396_appendix_a() -> None:
    cases = [
        ({"a": "b"}, {"a": "c"}, {"a": "c"}),
        ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
        ({"a": "b"}, {"a": None}, {}),
        ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
        ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
        ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
        ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
        ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
        (["a", "b"], ["c", "d"], ["c", "d"]),
        ({"a": "b"}, ["c"], ["c"]),
        ({"a": "foo"}, None, None),
        ({"a": "foo"}, "bar", "bar"),
        ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
        ([1, 2], {"a": "b", "c": None}, {"a": "b"}),
        ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
    ]
    for target, patch, expected in cases:
        assert merge_patch_value(target, patch) == expected
        compiled = compile_merge_patch(target, patch, [])
        assert apply_patch(target, compiled).document == expected


def test_compiled_merge_patch_paths_are_below_the_node() -> None:
    patch = compile_merge_patch({"title": "a", "n": 1}, {"title": "b", "n": None}, ["metadata"])
    assert patch == [{"op": "remove", "path": "/metadata/n"},
                     {"op": "replace", "path": "/metadata/title", "value": "b"}]


def _entries(count: int) -> list[JournalEntry]:
    entries = [JournalEntry(1, "create", [{"op": "add", "path": "", "value": {"n": 0, "log": []}}], "t")]
    for version in range(2, count + 1):
        entries.append(JournalEntry(version, "patch", [
            {"op": "replace", "path": "/n", "value": version},
            {"op": "add", "path": f"/log/{version - 2}", "value": version},
        ], "t"))
    return entries


def test_replay_rebuilds_every_version_and_remembers_a_checkpoint_every_64() -> None:
    entries = _entries(3 * CHECKPOINT_EVERY + 5)
    checkpoints = Checkpoints()
    final = replay_from(None, entries, checkpoints)
    assert final["n"] == 3 * CHECKPOINT_EVERY + 5
    assert final["log"] == list(range(2, 3 * CHECKPOINT_EVERY + 6))
    for multiple in (1, 2, 3):
        version, content = checkpoints.nearest(multiple * CHECKPOINT_EVERY + 3) or (0, None)
        assert version == multiple * CHECKPOINT_EVERY
        assert content["n"] == version and content["log"] == list(range(2, version + 1))
    assert checkpoints.nearest(CHECKPOINT_EVERY - 1) is None
    # replaying on from a checkpoint gives the same result as from the start
    version, content = checkpoints.nearest(2 * CHECKPOINT_EVERY + 10) or (0, None)
    assert replay_from(content, entries[version: 2 * CHECKPOINT_EVERY + 10]) == \
        replay_from(None, entries[: 2 * CHECKPOINT_EVERY + 10])
