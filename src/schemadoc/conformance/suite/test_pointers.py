"""RFC 6901 evaluation on reads, updates and deletes (FR-021, and the spec's edge cases on paths).

A pointer can be well formed and still name nothing: an array's ``-`` (RFC 6901: "the (nonexistent)
member after the last array element", so only an append may use it), an index past the end, a member
missing in the middle of the path. Each is ``path-not-found`` (404) with the deepest existing ancestor,
wherever the path is used. A pointer can also be malformed: a ``~`` not followed by ``0`` or ``1``, an
array index with a leading zero or that is no number at all (the spec's ``path-invalid``: "invalid array
index"). Escapes are decoded in each reference token after the pointer is split (``~1`` is a ``/`` inside
a member name, never a step down). No such call changes the document.
"""

from __future__ import annotations

import pytest

from ..readings import same_pointer
from .doors import Doc, Door, Outcome, book_doc, failed, sample_book

pytestmark = pytest.mark.anyio


async def _every_way(doc: Doc, node_path: str) -> list[tuple[str, Outcome]]:
    """A read, an update and a delete of ``node_path`` (the update writes a value valid for a chapter title)."""
    return [("read", await doc.read(node_path)),
            ("update", await doc.update(node_path, "A title")),
            ("delete", await doc.delete(node_path))]


# (path, deepest existing ancestor, the array's length when an index was the missing step)
NAMING_NOTHING: list[tuple[str, str, int | None]] = [
    ("/chapters/-", "/chapters", 3),
    ("/chapters/-/title", "/chapters", 3),
    ("/tags/-", "/tags", 1),
    ("/chapters/0/sections/-", "/chapters/0/sections", 2),
    ("/chapters/3", "/chapters", 3),
    ("/chapters/3/title", "/chapters", 3),
    ("/chapters/99/sections/0", "/chapters", 3),
    ("/chapters/1/sections/1/title", "/chapters/1/sections", 1),
    ("/metadata/publisher/name", "/metadata", None),
    ("/chapters/0/summary/text", "/chapters/0", None),
    ("/metadata/author/name/first", "/metadata/author/name", None),
]


async def test_a_pointer_to_nothing_is_path_not_found_on_reads_updates_and_deletes(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    for node_path, ancestor, length in NAMING_NOTHING:
        for way, outcome in await _every_way(doc, node_path):
            error = failed(outcome, "path-not-found")
            assert outcome.status == 404, (node_path, way, outcome)
            assert error["details"]["path"] == node_path, (node_path, way, error)
            assert same_pointer(error["details"]["deepest_ancestor"], ancestor), (node_path, way, error)
            if length is not None and "array_length" in error["details"]:
                assert error["details"]["array_length"] == length, (node_path, way, error)
            assert error["remediation"], (node_path, way)
    assert await doc.snapshot() == before


async def test_a_dash_in_the_middle_of_a_path_is_path_not_found_also_for_a_creation(door: Door) -> None:
    """Only the last token of a creation may be ``-``: earlier, it names nothing to create below."""
    doc = await book_doc(door)
    before = await doc.snapshot()
    for node_path in ("/chapters/-/sections/-", "/chapters/-/title"):
        error = failed(await doc.create(node_path, {"title": "x", "paragraphs": []}), "path-not-found")
        assert same_pointer(error["details"]["deepest_ancestor"], "/chapters"), error
    assert await doc.snapshot() == before


async def test_reading_an_arrays_dash_never_returns_an_item(door: Door) -> None:
    """``-`` is the position after the last item: reading it is an error, never the last (or any) item, also
    on an array of one item and on an empty one."""
    doc = await book_doc(door)
    for node_path, items in (("/chapters/-", sample_book()["chapters"]), ("/tags/-", ["test"]),
                             ("/chapters/0/sections/0/sections/0/sections/-", [])):
        outcome = await doc.read(node_path)
        assert not outcome.ok, f"{node_path} read as {outcome!r}"
        assert outcome.code == "path-not-found", outcome
        assert outcome.body.get("node_content") not in items


MALFORMED = ["/chapters/01", "/chapters/00/title", "/chapters/one", "/chapters/1.0", "/chapters/+1",
             "/chapters/0x1", "/metadata/a~2b", "/metadata/keywords~", "/title~3"]


async def test_a_malformed_pointer_is_path_invalid_on_reads_updates_and_deletes(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    for node_path in MALFORMED:
        for way, outcome in await _every_way(doc, node_path):
            error = failed(outcome, "path-invalid")
            assert outcome.status == 400, (node_path, way, outcome)
            assert error["details"]["path"] == node_path, (node_path, way, error)
            assert error["remediation"], (node_path, way)
    assert await doc.snapshot() == before


async def test_escapes_are_decoded_in_each_token_after_the_path_is_split(door: Door) -> None:
    """``~1`` is a ``/`` inside one member's name and ``~01`` is ``~1``: neither is a step into ``author``."""
    doc = await book_doc(door)
    before = await doc.snapshot()
    for node_path in ("/metadata/author~1name", "/metadata/author~01name", "/metadata/author~1email"):
        for way, outcome in await _every_way(doc, node_path):
            error = failed(outcome, "path-not-found")
            assert error["details"]["path"] == node_path, (way, error)
            assert same_pointer(error["details"]["deepest_ancestor"], "/metadata"), (way, error)
    assert await doc.snapshot() == before
    error = failed(await doc.create("/metadata/a~1b", "x"), "validation-failed")  # the member "a/b", not a/b
    assert [violation["code"] for violation in error["details"]["violations"]] == ["additional-properties-forbidden"]
    assert await doc.snapshot() == before

