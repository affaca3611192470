"""The made-up values a document holds are carried through every write (service/placeholders.py over
ops/carry.py with ``forget_written``): a place still remembered after a patch holds exactly the value it held
before, at its new pointer; a place the patch wrote over or removed is forgotten. Generated documents and patches
(inserts and removals that shift array items, moves, replacements at and above the places)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch
from schemadoc.ops.carry import carry
from schemadoc.pointer import parse, resolve

_ITEM = st.fixed_dictionaries({"t": st.text(max_size=3), "n": st.integers(0, 9)})
_DOCS = st.fixed_dictionaries({"a": st.lists(_ITEM, max_size=5),
                               "b": st.fixed_dictionaries({"x": st.text(max_size=3)})})


def _leaves(value: Any, pointer: str = "") -> list[str]:
    if isinstance(value, dict):
        return [leaf for key, child in value.items() for leaf in _leaves(child, f"{pointer}/{key}")]
    if isinstance(value, list):
        return [leaf for index, child in enumerate(value) for leaf in _leaves(child, f"{pointer}/{index}")]
    return [pointer]


def _at(document: Any, pointer: str) -> Any:
    return resolve(document, parse(pointer), allow_negative=False)[0]


@st.composite
def _patch(draw: st.DrawFn, document: dict[str, Any]) -> list[dict[str, Any]]:
    size = len(document["a"])
    ops: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(1, 4))):
        kinds = ["add", "replace-b", "replace-a", "add-b"] + (["remove", "move", "replace-item", "replace-leaf"]
                                                             if size else [])
        kind = draw(st.sampled_from(kinds))
        if kind == "add":
            ops.append({"op": "add", "path": f"/a/{draw(st.integers(0, size))}", "value": draw(_ITEM)})
            size += 1
        elif kind == "remove":
            ops.append({"op": "remove", "path": f"/a/{draw(st.integers(0, size - 1))}"})
            size -= 1
        elif kind == "move":
            ops.append({"op": "move", "from": f"/a/{draw(st.integers(0, size - 1))}",
                        "path": f"/a/{draw(st.integers(0, size - 1))}"})
        elif kind == "replace-item":
            ops.append({"op": "replace", "path": f"/a/{draw(st.integers(0, size - 1))}", "value": draw(_ITEM)})
        elif kind == "replace-leaf":
            ops.append({"op": "replace", "path": f"/a/{draw(st.integers(0, size - 1))}/t", "value": "new"})
        elif kind == "replace-a":
            items = draw(st.lists(_ITEM, max_size=3))
            ops.append({"op": "replace", "path": "/a", "value": items})
            size = len(items)
        elif kind == "replace-b":
            ops.append({"op": "replace", "path": "/b/x", "value": "new"})
        else:
            ops.append({"op": "add", "path": "/b", "value": {"x": "new"}})
    return ops


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_a_remembered_place_holds_the_value_it_held_and_a_written_one_is_forgotten(data: st.DataObject) -> None:
    document = data.draw(_DOCS)
    patch = data.draw(_patch(document))
    try:
        after = apply_patch(document, patch).document
    except SchemaDocError:
        return
    places = _leaves(document)
    carried = carry(document, patch, places, forget_written=True)
    for before, now in carried.items():
        if now is not None:
            assert _at(after, now) == _at(document, before), (before, now, patch)
    written = {op["path"] for op in patch if op["op"] == "replace"}
    for before, now in carried.items():  # a single replacement at or above a place forgets it
        if len(patch) == 1 and any(before == w or before.startswith(w + "/") for w in written):
            assert now is None, (before, patch)
