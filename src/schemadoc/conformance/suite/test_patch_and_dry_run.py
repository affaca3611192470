"""Every write is an RFC 6902 patch: the one each write returns, raw patches, and dry runs."""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

import jsonpatch
import pytest

from .doors import Doc, Door, Outcome, book_doc, chapter, failed, not_applicable, ok, sample_book

pytestmark = pytest.mark.anyio


def _applied(document: Any, patch: list[dict[str, Any]]) -> Any:
    return jsonpatch.apply_patch(copy.deepcopy(document), patch)


# -- the patch of every write --------------------------------------------------------------------------


async def test_every_write_returns_the_strict_patch_that_replays_it(door: Door) -> None:
    doc = await book_doc(door)
    content = sample_book()
    writes: list[Callable[[], Awaitable[Outcome]]] = [
        lambda: doc.update("/chapters/-1/title", "Last"),
        lambda: doc.create("/chapters/-", chapter(4)),
        lambda: doc.create("/tags/0", "first"),
        lambda: doc.delete("/chapters/-2"),
        lambda: doc.patch([{"op": "copy", "from": "/chapters/0/title", "path": "/title"}]),
    ]
    for write in writes:
        body = ok(await write())
        if "patch" not in body:
            not_applicable("the server's write results carry no patch (an extension member)")
        patch = body["patch"]
        for operation in patch:
            tokens = operation["path"].split("/")
            assert "-" not in tokens, f"{operation} is not concrete"
            assert not any(token.startswith("-") and token[1:].isdigit() for token in tokens), operation
        content = _applied(content, patch)
        assert await doc.content() == content


# -- raw patches ---------------------------------------------------------------------------------------


async def test_a_patch_with_all_six_operations_is_one_atomic_write(door: Door) -> None:
    doc = await book_doc(door)
    before = doc.version
    patch: list[dict[str, Any]] = [
        {"op": "test", "path": "/title", "value": "The Conformance Book"},
        {"op": "replace", "path": "/title", "value": "Patched"},
        {"op": "add", "path": "/chapters/-", "value": chapter(4)},
        {"op": "remove", "path": "/metadata/keywords"},
        {"op": "move", "from": "/chapters/0", "path": "/chapters/3"},
        {"op": "copy", "from": "/chapters/0/sections/0", "path": "/chapters/1/sections/-"},
        {"op": "test", "path": "/chapters/3/id", "value": "ch-1"},
    ]
    body = ok(await doc.patch(patch))
    assert body["version"] == before + 1
    assert body["validation_report"]["valid"] is True
    expected = _applied(sample_book(), patch)
    assert await doc.content() == expected
    assert _applied(sample_book(), body["patch"]) == expected


async def test_a_failing_test_operation_rejects_the_whole_patch(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    outcome = await doc.patch([
        {"op": "replace", "path": "/title", "value": "Changed"},
        {"op": "test", "path": "/metadata/edition", "value": 2},
    ])
    error = failed(outcome, "patch-test-failed")
    assert outcome.status == 409
    assert error["details"]["path"] == "/metadata/edition"
    assert await doc.snapshot() == before


async def test_a_patch_that_breaks_the_schema_changes_nothing(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    error = failed(await doc.patch([
        {"op": "replace", "path": "/title", "value": "Fine"},
        {"op": "replace", "path": "/metadata/status", "value": "lost"},
    ]), "validation-failed")
    assert [v["path"] for v in error["details"]["violations"]] == ["/metadata/status"]
    assert await doc.snapshot() == before


@pytest.mark.parametrize("patch", [
    [{"op": "frobnicate", "path": "/title"}],
    [{"op": "replace", "path": "/title"}],
    [{"op": "move", "path": "/chapters/0"}],
    [{"path": "/title", "value": "x"}],
], ids=["unknown-op", "replace-without-value", "move-without-from", "no-op"])
async def test_a_malformed_patch_is_patch_invalid(door: Door, patch: list[dict[str, Any]]) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    outcome = await doc.patch(patch)
    failed(outcome, "patch-invalid")
    assert outcome.status == 400
    assert await doc.snapshot() == before


async def test_a_patch_removing_the_root_is_root_not_deletable(door: Door) -> None:
    doc = await book_doc(door)
    failed(await doc.patch([{"op": "remove", "path": ""}]), "root-not-deletable")


async def test_a_patch_into_a_missing_path_is_path_not_found(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    failed(await doc.patch([{"op": "replace", "path": "/chapters/9/title", "value": "x"}]), "path-not-found")
    assert await doc.snapshot() == before


async def test_a_patch_with_a_stale_version_is_a_version_conflict(door: Door) -> None:
    doc = await book_doc(door)
    failed(await doc.patch([{"op": "replace", "path": "/title", "value": "x"}], version=1), "version-conflict")


# -- dry runs ------------------------------------------------------------------------------------------


_DRY_WRITES: dict[str, tuple[str, dict[str, Any], list[dict[str, Any]]]] = {
    "update": ("document_update_node", {"node_path": "/title", "node_data": "Dry"},
               [{"op": "replace", "path": "/title", "value": "Dry"}]),
    "create": ("document_create_node", {"node_path": "/chapters/-", "node_data": chapter(4)},
               [{"op": "add", "path": "/chapters/3", "value": chapter(4)}]),
    "delete": ("document_delete_node", {"node_path": "/chapters/0"},
               [{"op": "remove", "path": "/chapters/0"}]),
    "patch": ("document_apply_patch", {"patch": [{"op": "add", "path": "/metadata/homepage",
                                                  "value": "https://example.org"}]},
              [{"op": "add", "path": "/metadata/homepage", "value": "https://example.org"}]),
}


@pytest.mark.parametrize("write", list(_DRY_WRITES))
async def test_a_dry_run_returns_patch_and_report_and_changes_nothing(door: Door, write: str) -> None:
    tool, args, patch = _DRY_WRITES[write]
    doc = await book_doc(door)
    before = await doc.snapshot()
    body = ok(await doc.write(tool, dry_run=True, **args))
    assert body["dry_run"] is True
    assert body["patch"] == patch
    assert body["validation_report"] == {"valid": True, "error_count": 0, "errors": []}
    assert body["version"] == before[0]
    assert body.get("would_be_version", before[0] + 1) == before[0] + 1
    assert await doc.snapshot() == before
    ok(await doc.write(tool, **args))
    assert doc.version == before[0] + 1, "the real write after the dry run must take the next version"


async def test_a_dry_run_of_an_invalid_write_fails_like_the_write_with_the_violations(door: Door) -> None:
    doc = await book_doc(door)
    before = await doc.snapshot()
    real = failed(await doc.update("/metadata/edition", 500), "validation-failed")
    error = failed(await doc.update("/metadata/edition", 500, dry_run=True), "validation-failed")
    details = error["details"]
    assert details["dry_run"] is True, "a dry run's answer says it is one"
    assert [(v["path"], v["code"]) for v in details["violations"]] == [("/metadata/edition", "maximum")]
    assert details["violations"] == real["details"]["violations"], "the same error as the write"
    assert details["patch"] == [{"op": "replace", "path": "/metadata/edition", "value": 500}], "with the preview"
    assert await doc.snapshot() == before


async def test_a_dry_run_still_checks_the_version_and_the_path(door: Door) -> None:
    doc = await book_doc(door)
    failed(await doc.update("/title", "x", version=1, dry_run=True), "version-conflict")
    failed(await doc.update("/nothing/here", "x", dry_run=True), "path-not-found")
    failed(await doc.create("/title", "x", dry_run=True), "conflict")


async def test_dry_runs_and_failures_leave_the_version_sequence_unbroken(door: Door) -> None:
    doc = await book_doc(door)
    start = doc.version
    await _noise(doc)
    ok(await doc.update("/title", "After the noise"))
    assert doc.version == start + 1


async def _noise(doc: Doc) -> None:
    ok(await doc.update("/title", "dry", dry_run=True))
    failed(await doc.update("/title", 5), "validation-failed")
    failed(await doc.update("/title", "stale", version=1), "version-conflict")
    failed(await doc.delete("/"), "root-not-deletable")
