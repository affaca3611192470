"""The request limits of ops/limits.py: which strings are too long, and where the refusal says they are."""

from __future__ import annotations

from typing import Any

import pytest

from schemadoc.errors import SchemaDocError
from schemadoc.ops.limits import check_operation_count, check_pointer_length, check_string_lengths


def refusal(value: Any, limit: int, argument: str = "node_data") -> dict[str, Any]:
    with pytest.raises(SchemaDocError) as caught:
        check_string_lengths(value, limit, argument)
    assert caught.value.code == "request-too-large"
    return caught.value.details


def test_lengths_are_characters_not_bytes() -> None:
    check_string_lengths(["é" * 8, {"ü" * 8: "€" * 8}], 8, "node_data")  # 16 and 24 bytes of UTF-8 each
    assert refusal(["é" * 9], 8)["actual"] == 9


def test_the_refusal_points_at_the_offender_inside_a_value_bigger_than_the_limit() -> None:
    value = {"a/b": [{"fine": "x" * 10} for _ in range(50)] + [{"text": "y" * 11}], "other": 2**70}
    details = refusal(value, 10)
    assert details == {"limit": "max_string_length", "max_string_length": 10, "actual": 11, "argument": "node_data",
                       "at": "/a~1b/50/text", "kind": "string"}


def test_a_member_name_is_pointed_at_by_its_object() -> None:
    assert refusal({"outer": {"k" * 6: 1}}, 5, "merge_patch") == {
        "limit": "max_string_length", "max_string_length": 5, "actual": 6, "argument": "merge_patch",
        "at": "/outer", "kind": "member name"}


def test_values_within_the_limit_pass_however_big_the_whole() -> None:
    check_string_lengths([{"text": "z" * 100, "n": 2**70} for _ in range(1000)], 100, "patch")
    check_string_lengths("z" * 100, 100, "node_data")
    assert refusal("z" * 101, 100)["at"] == ""


def test_pointers_and_operation_counts() -> None:
    check_pointer_length("/" + "p" * 9, 10, "node_path")
    with pytest.raises(SchemaDocError) as long_path:
        check_pointer_length("/" + "p" * 10, 10, "node_path")
    assert (long_path.value.details["kind"], long_path.value.details["actual"]) == ("path", 11)
    check_operation_count(3, 3, "patch")
    with pytest.raises(SchemaDocError) as too_many:
        check_operation_count(4, 3, "merge_patch")
    assert too_many.value.details == {"limit": "max_patch_operations", "max_patch_operations": 3, "actual": 4,
                                      "argument": "merge_patch"}
    assert "compiles to" in too_many.value.message
