"""The journal model: entries as lines, and replay."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

import orjson
import pytest

from schemadoc.ops.journal import OPS, JournalEntry, peek_version, replay, utc_now

AT = "2025-01-02T03:04:05.678Z"


def entries_of(*patches: list[dict[str, Any]], first: Any = None) -> list[JournalEntry]:
    """Version 1 creates ``first``; version n+1 applies patches[n-1]."""
    value = first if first is not None else {}
    created = JournalEntry(1, "create", [{"op": "add", "path": "", "value": value}], AT)
    return [created] + [JournalEntry(n, "patch", patch, AT) for n, patch in enumerate(patches, start=2)]


# -- entries as lines ----------------------------------------------------------------------------


def test_a_line_is_one_json_object_ending_in_a_newline() -> None:
    line = JournalEntry(3, "update_node", [{"op": "replace", "path": "/a", "value": "x\ny"}], AT,
                        {"node_path": "/a"}).to_line()
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1  # newlines inside values are escaped
    assert orjson.loads(line) == {"version": 3, "op": "update_node",
                                  "patch": [{"op": "replace", "path": "/a", "value": "x\ny"}],
                                  "at": AT, "info": {"node_path": "/a"}}


def test_a_line_starts_with_the_version() -> None:
    assert JournalEntry(12, "patch", [], AT).to_line().startswith(b'{"version":12,')


def test_an_empty_info_is_left_out_of_the_line() -> None:
    assert "info" not in orjson.loads(JournalEntry(2, "delete_document", [], AT).to_line())


@pytest.mark.parametrize("entry", [
    JournalEntry(1, "create", [{"op": "add", "path": "", "value": {"a": [1, 2.5, None, True, "é"]}}], AT),
    JournalEntry(7, "merge_patch", [{"op": "remove", "path": "/a~1b"}], AT, {"node_path": "/", "n": [1]}),
    JournalEntry(9, "undelete_document", [], AT),
], ids=["create", "with-info", "empty-patch"])
def test_an_entry_survives_a_round_trip_through_its_line(entry: JournalEntry) -> None:
    assert JournalEntry.from_line(entry.to_line()) == entry
    assert JournalEntry.from_line(entry.to_line().rstrip(b"\n")) == entry


def test_unknown_members_of_a_line_are_ignored() -> None:
    line = b'{"version":2,"op":"patch","patch":[],"at":"' + AT.encode() + b'","later":1}\n'
    assert JournalEntry.from_line(line) == JournalEntry(2, "patch", [], AT)


@pytest.mark.parametrize("line", [
    b"",
    b"not json",
    b'{"version":2,"op":"patch","patch":[],"at":"2025-01-0',  # torn mid-append
    b"[1, 2]",
    b'{"op":"patch","patch":[],"at":"x"}',
    b'{"version":"2","op":"patch","patch":[],"at":"x"}',
    b'{"version":true,"op":"patch","patch":[],"at":"x"}',
    b'{"version":0,"op":"patch","patch":[],"at":"x"}',
    b'{"version":2,"op":"frobnicate","patch":[],"at":"x"}',
    b'{"version":2,"op":"patch","patch":{},"at":"x"}',
    b'{"version":2,"op":"patch","patch":[{"path":"/a"}],"at":"x"}',
    b'{"version":2,"op":"patch","patch":[7],"at":"x"}',
    b'{"version":2,"op":"patch","patch":[],"at":5}',
    b'{"version":2,"op":"patch","patch":[],"at":"x","info":[]}',
], ids=repr)
def test_a_line_that_is_not_an_entry_raises_value_error(line: bytes) -> None:
    with pytest.raises(ValueError):
        JournalEntry.from_line(line)


def test_every_kind_of_write_is_a_known_op() -> None:
    assert {"create", "update_node", "create_node", "delete_node", "patch", "merge_patch", "revert",
            "delete_document", "undelete_document", "move_node"} == OPS


def test_an_entry_cannot_be_built_with_a_wrong_version_or_op() -> None:
    with pytest.raises(ValueError):
        JournalEntry(0, "patch", [], AT)
    with pytest.raises(ValueError):
        JournalEntry(2, "rename", [], AT)


def test_peek_version_reads_the_version_without_parsing_the_rest() -> None:
    assert peek_version(b'{"version":42,"op":"patch","patch":[{"op":"add", THIS IS NOT JSON') == 42
    assert peek_version(b'{"op":"patch","version":42}') is None
    assert peek_version(b"garbage") is None


def test_utc_now_is_iso_8601_utc_with_milliseconds() -> None:
    now = utc_now()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", now)
    assert datetime.fromisoformat(now).utcoffset() is not None


# -- replay --------------------------------------------------------------------------------------


def test_replay_from_nothing_rebuilds_the_last_version() -> None:
    entries = entries_of(
        [{"op": "add", "path": "/items", "value": []}],
        [{"op": "add", "path": "/items/0", "value": "a"}, {"op": "add", "path": "/items/1", "value": "b"}],
        [{"op": "move", "from": "/items/0", "path": "/items/1"}],
    )
    assert replay(entries) == {"items": ["b", "a"]}


def test_replay_upto_stops_after_that_version() -> None:
    entries = entries_of([{"op": "add", "path": "/a", "value": 1}],
                         [{"op": "replace", "path": "/a", "value": 2}])
    assert replay(entries, upto=1) == {}
    assert replay(entries, upto=2) == {"a": 1}
    assert replay(entries, upto=3) == {"a": 2}


def test_replay_upto_beyond_the_journal_raises() -> None:
    with pytest.raises(ValueError, match="ends at version 1"):
        replay(entries_of(), upto=2)


def test_replay_from_a_start_applies_the_later_entries_only() -> None:
    entries = entries_of([{"op": "add", "path": "/a", "value": 1}], [{"op": "add", "path": "/b", "value": 2}])
    assert replay(entries[2:], start={"a": 1}, start_version=2) == {"a": 1, "b": 2}
    assert replay(entries[2:], start={"a": 1}) == {"a": 1, "b": 2}  # the first entry sets the pace
    assert replay([], start={"a": 1}, start_version=2) == {"a": 1}


def test_replay_from_a_null_document_needs_its_version() -> None:
    entry = JournalEntry(4, "update_node", [{"op": "replace", "path": "", "value": 5}], AT)
    assert replay([entry], start=None, start_version=3) == 5


def test_replay_refuses_versions_that_are_not_consecutive() -> None:
    entries = entries_of([{"op": "add", "path": "/a", "value": 1}], [{"op": "add", "path": "/b", "value": 2}])
    with pytest.raises(ValueError, match="expected version 2, found version 3"):
        replay([entries[0], entries[2]])
    with pytest.raises(ValueError, match="expected version 1"):
        replay(entries[1:])
    with pytest.raises(ValueError, match="expected version 3"):
        replay(entries[1:], start={}, start_version=2)


def test_replay_of_nothing_from_nothing_raises() -> None:
    with pytest.raises(ValueError):
        replay([])


def test_replay_names_the_version_whose_patch_does_not_apply() -> None:
    entries = entries_of([{"op": "remove", "path": "/missing"}])
    with pytest.raises(ValueError, match="version 2"):
        replay(entries)
    failing_test = entries_of([{"op": "test", "path": "", "value": {"x": 1}}])
    with pytest.raises(ValueError, match="version 2"):
        replay(failing_test)


def test_delete_and_undelete_entries_leave_the_content_unchanged() -> None:
    entries = [*entries_of(first={"a": 1}), JournalEntry(2, "delete_document", [], AT),
               JournalEntry(3, "undelete_document", [], AT)]
    assert replay(entries) == {"a": 1}


def test_replay_modifies_neither_the_start_nor_the_entries() -> None:
    start = {"list": [1]}
    entries = [JournalEntry(2, "patch", [{"op": "add", "path": "/list/1", "value": {"x": []}}], AT),
               JournalEntry(3, "patch", [{"op": "add", "path": "/list/1/x/0", "value": 9}], AT)]
    first = replay(entries, start=start, start_version=1)
    assert start == {"list": [1]}
    assert entries[0].patch[0]["value"] == {"x": []}
    assert replay(entries, start=start, start_version=1) == first == {"list": [1, {"x": [9]}]}


def test_replay_accepts_any_iterable_once() -> None:
    entries = entries_of([{"op": "add", "path": "/a", "value": 1}])
    assert replay(iter(entries), copy=False) == {"a": 1}
