"""The repair rule (validation_level moderate): a write to a document the served schema already rejects is accepted
when it adds no violation, and says what remains; strict keeps every write to the whole schema."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from schemadoc.errors import SchemaDocError
from schemadoc.ops.carry import carry
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore

LOOSE: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "title": {"type": "string", "default": "Untitled"},
        "isbn": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "string"}, "default": []},
        "chapters": {"type": "array", "default": [], "items": {
            "type": "object",
            "properties": {"key": {"type": "string"}, "title": {"type": "string"}, "isbn": {"type": "string"}},
        }},
    },
}


def tightened() -> dict[str, Any]:
    """LOOSE with a required isbn (no default) and short titles, at the root and in each chapter."""
    schema = json.loads(json.dumps(LOOSE))
    schema["required"] = ["title", "isbn"]
    schema["properties"]["title"]["maxLength"] = 3
    chapter = schema["properties"]["chapters"]["items"]
    chapter["required"] = ["key", "title", "isbn"]
    chapter["properties"]["title"]["maxLength"] = 5
    return schema


def write_schema(folder: Path, name: str, schema: dict[str, Any]) -> Path:
    path = folder / f"{name}.schema.json"
    path.write_text(json.dumps(schema))
    return path


THREE_WRONG = {"title": "Hello", "tags": [], "chapters": [{"key": "a", "title": "One"}]}
"""Under the tightened schema: isbn missing at the root, /title too long, isbn missing in /chapters/0."""


@pytest.fixture
def served(tmp_path: Path) -> tuple[MemoryDocumentStore, Path, Path]:
    return (MemoryDocumentStore(), write_schema(tmp_path, "loose", LOOSE), write_schema(tmp_path, "tight", tightened()))


def stored_then_tightened(served: tuple[MemoryDocumentStore, Path, Path], content: Any, *,
                          level: str = "moderate") -> tuple[DocumentService, str]:
    """A document written under the loose schema, and a service of the tightened one over the same store."""
    store, loose, tight = served
    doc_id = DocumentService(load_schema(loose), store).create_document(content)[0]
    return DocumentService(load_schema(tight), store, validation_level=level), doc_id


def codes(violations: Any) -> list[tuple[str, str]]:
    return sorted((v["code"] if isinstance(v, dict) else v.code, v["path"] if isinstance(v, dict) else v.path)
                  for v in violations)


def test_a_write_fixing_one_of_three_violations_is_accepted_and_reports_the_two_left(served: Any) -> None:
    service, doc_id = stored_then_tightened(served, THREE_WRONG)
    result = service.update_node(doc_id, "/title", "Hi", 1)
    assert result.version == 2 and not result.report.valid and result.accepted
    assert result.report.count == 2 and result.repair is not None and result.repair.resolved == 1
    assert codes(result.report.violations) == [("required-missing", ""), ("required-missing", "/chapters/0")]
    assert service.read_node(doc_id, "/title").node == "Hi"


def test_a_write_leaving_every_violation_where_it_was_is_accepted(served: Any) -> None:
    service, doc_id = stored_then_tightened(served, THREE_WRONG)
    result = service.update_node(doc_id, "/tags", ["x"], 1)
    assert result.version == 2 and result.report.count == 3 and result.repair is not None
    assert result.repair.resolved == 0


def test_a_write_adding_a_violation_is_refused_naming_only_the_new_one(served: Any) -> None:
    service, doc_id = stored_then_tightened(served, THREE_WRONG)
    with pytest.raises(SchemaDocError) as refused:
        service.create_node(doc_id, "/chapters/-", {"key": "b", "title": "Far too long", "isbn": "1"}, 1)
    details = refused.value.details
    assert refused.value.code == "validation-failed"
    assert codes(details["violations"]) == [("max-length", "/chapters/1/title")]
    assert details["already_invalid"]["violation_count_before"] == 3
    assert details["already_invalid"]["still_there_count"] == 3
    assert service.version_of(doc_id) == 1  # nothing changed


def test_a_dry_run_answers_what_the_write_would(served: Any) -> None:
    service, doc_id = stored_then_tightened(served, THREE_WRONG)
    preview = service.update_node(doc_id, "/title", "Hi", 1, dry_run=True)
    assert preview.dry_run and preview.accepted and preview.report.count == 2 and service.version_of(doc_id) == 1
    with pytest.raises(SchemaDocError) as refused:
        service.update_node(doc_id, "/tags", [7], 1, dry_run=True)
    assert refused.value.details["dry_run"] is True
    assert codes(refused.value.details["violations"]) == [("type-mismatch", "/tags/0")]


def test_strict_refuses_the_repairing_write_with_every_violation(served: Any) -> None:
    service, doc_id = stored_then_tightened(served, THREE_WRONG, level="strict")
    with pytest.raises(SchemaDocError) as refused:
        service.update_node(doc_id, "/title", "Hi", 1)
    assert refused.value.code == "validation-failed" and "already_invalid" not in refused.value.details
    assert codes(refused.value.details["violations"]) == [("required-missing", ""),
                                                          ("required-missing", "/chapters/0")]


def test_a_write_to_a_valid_document_is_judged_as_without_the_rule(served: Any) -> None:
    valid = {"title": "Hi", "isbn": "1", "tags": [], "chapters": [{"key": "a", "title": "One", "isbn": "2"}]}
    moderate, doc_id = stored_then_tightened(served, valid)
    strict = DocumentService(moderate.schema, served[0], validation_level="strict")
    answers = []
    for service in (moderate, strict):
        with pytest.raises(SchemaDocError) as refused:
            service.update_node(doc_id, "/title", "Hello", 1)
        answers.append((refused.value.code, refused.value.message, refused.value.details))
    assert answers[0] == answers[1] and "already_invalid" not in answers[0][2]
    assert moderate.update_node(doc_id, "/title", "Yo", 1).report.valid


def test_consecutive_repairs_reach_a_valid_document(served: Any) -> None:
    service, doc_id = stored_then_tightened(served, THREE_WRONG)
    assert service.update_node(doc_id, "/title", "Hi", 1).report.count == 2
    assert service.create_node(doc_id, "/isbn", "978", 2).report.count == 1
    last = service.create_node(doc_id, "/chapters/0/isbn", "1", 3)
    assert last.report.valid and last.repair is not None and last.repair.resolved == 1
    with pytest.raises(SchemaDocError):  # valid now: every write is held to the whole schema again
        service.update_node(doc_id, "/title", "Hello", 4)


def test_inserting_an_item_before_an_invalid_one_keeps_its_violation_the_same(served: Any) -> None:
    service, doc_id = stored_then_tightened(served, THREE_WRONG)
    result = service.create_node(doc_id, "/chapters/0", {"key": "z", "title": "New", "isbn": "9"}, 1)
    assert codes(result.report.violations) == [("max-length", "/title"), ("required-missing", ""),
                                               ("required-missing", "/chapters/1")]


def test_moving_and_deleting_around_an_invalid_item_adds_nothing(served: Any) -> None:
    content = {**THREE_WRONG, "chapters": [{"key": "v", "title": "Ok", "isbn": "1"}, {"key": "a", "title": "One"}]}
    service, doc_id = stored_then_tightened(served, content)
    moved = service.move_node(doc_id, "/chapters/1", "/chapters/0", 1)
    assert ("required-missing", "/chapters/0") in codes(moved.report.violations)
    deleted = service.delete_node(doc_id, "/chapters/1", 2)  # the valid one, before... now after it
    assert deleted.report.count == 3
    removed = service.delete_node(doc_id, "/chapters/0", 3)  # removing the invalid subtree repairs it
    assert removed.repair is not None and removed.repair.resolved == 1 and removed.report.count == 2


def test_a_second_item_with_the_same_fault_is_a_new_violation(served: Any) -> None:
    service, doc_id = stored_then_tightened(served, THREE_WRONG)
    with pytest.raises(SchemaDocError) as refused:
        service.apply_patch(doc_id, [{"op": "copy", "from": "/chapters/0", "path": "/chapters/-"}], 1)
    assert codes(refused.value.details["violations"]) == [("required-missing", "/chapters/1")]


def test_another_missing_member_at_the_same_place_is_a_new_violation(served: Any) -> None:
    service, doc_id = stored_then_tightened(served, THREE_WRONG)
    with pytest.raises(SchemaDocError) as refused:
        service.delete_node(doc_id, "/chapters/0/key", 1)
    assert codes(refused.value.details["violations"]) == [("required-missing", "/chapters/0")]
    assert refused.value.details["violations"][0]["expected"] == "key"


def test_places_are_carried_through_inserts_removals_and_moves() -> None:
    document = {"a": [{"x": 1}, {"x": 2}, {"x": 3}], "b": {"0": 1}}
    pointers = ["/a/0", "/a/1/x", "/a/2", "/b/0"]
    assert carry(document, [{"op": "add", "path": "/a/1", "value": {}}], pointers) == \
        {"/a/0": "/a/0", "/a/1/x": "/a/2/x", "/a/2": "/a/3", "/b/0": "/b/0"}
    assert carry(document, [{"op": "remove", "path": "/a/1"}], pointers) == \
        {"/a/0": "/a/0", "/a/1/x": None, "/a/2": "/a/1", "/b/0": "/b/0"}
    assert carry(document, [{"op": "move", "from": "/a/2", "path": "/a/0"}], pointers) == \
        {"/a/0": "/a/1", "/a/1/x": "/a/2/x", "/a/2": "/a/0", "/b/0": "/b/0"}
    # a member removed leaves its place (written again, it is the same place); "0" in an object is no index
    assert carry(document, [{"op": "remove", "path": "/b/0"}, {"op": "replace", "path": "/a/0", "value": 1}],
                 pointers) == {"/a/0": "/a/0", "/a/1/x": "/a/1/x", "/a/2": "/a/2", "/b/0": "/b/0"}
    assert carry(document, [{"op": "remove", "path": "/a/0"}, {"op": "add", "path": "/a/0", "value": {}}],
                 pointers) == {"/a/0": None, "/a/1/x": "/a/1/x", "/a/2": "/a/2", "/b/0": "/b/0"}


def test_next_incomplete_names_each_place_that_still_violates_and_never_says_complete(served: Any) -> None:
    service, doc_id = stored_then_tightened(served, THREE_WRONG)
    _, items, _, count = service.next_incomplete(doc_id, "/", 10)
    violations = [(item.pointer, item.code) for item in items if item.reason == "violation"]
    assert count == 3 and violations == [("/", "required-missing"), ("/chapters/0", "required-missing"),
                                         ("/title", "max-length")]
    assert items[0].reason == "violation" and items[0].message  # the violations come first
    _, below, _, _ = service.next_incomplete(doc_id, "/chapters", 10)
    assert [(item.pointer, item.reason) for item in below if item.reason == "violation"] == \
        [("/chapters/0", "violation")]
    title = next(item for item in items if item.pointer == "/title")
    assert not title.has_example  # no call can be made up for a title too long: it is the author's to shorten
    isbn = next(item for item in items if item.pointer == "/chapters/0")
    assert isbn.has_example and isbn.tool == "document_create_node" and isbn.node_path == "/chapters/0/isbn"
    # the example call is a write the repair rule accepts, and it fixes that violation
    assert service.create_node(doc_id, isbn.node_path, isbn.example, 1).report.count == 2
    _, items, more, count = service.next_incomplete(doc_id, "/", 1)
    assert count == 2 and more and len(items) == 1 and items[0].reason == "violation"


def test_next_incomplete_on_a_valid_document_lists_no_violation(served: Any) -> None:
    valid = {"title": "Hi", "isbn": "1", "tags": [], "chapters": [{"key": "a", "title": "One", "isbn": "2"}]}
    service, doc_id = stored_then_tightened(served, valid)
    _, items, _, count = service.next_incomplete(doc_id, "/", 10)
    assert count == 0 and all(item.reason != "violation" for item in items)


def test_after_repair_writes_every_violation_shown_still_comes_with_its_fix(served: Any) -> None:
    eight = {**THREE_WRONG, "chapters": [{"key": f"k{n}", "title": "One"} for n in range(8)]}
    service, doc_id = stored_then_tightened(served, eight)
    first = service.update_node(doc_id, "/tags", ["a"], 1)
    second = service.update_node(doc_id, "/tags", ["b"], 2)  # its report was made knowing the document invalid
    assert first.report.count == second.report.count == 10
    _, items, _, _ = service.next_incomplete(doc_id, "/chapters", 20)
    assert [item.pointer for item in items if item.reason == "violation"] == [f"/chapters/{n}" for n in range(8)]
    assert all(item.has_example and item.node_path == f"{item.pointer}/isbn" for item in items[:8])
    with pytest.raises(SchemaDocError) as refused:
        service.delete_node(doc_id, "/chapters/7/key", 3)
    fix = refused.value.details["suggested_call"]["arguments"]["patch"][-1]
    assert (fix["op"], fix["path"]) == ("add", "/chapters/7/key")  # the new violation's fix, found after the fact
    assert refused.value.details["suggested_call"]["resolves"] is True  # the repair rule would accept it


def test_the_answers_say_what_remains_and_validate_node_what_would_be_accepted(served: Any) -> None:
    from schemadoc.operations.catalogue import BY_NAME
    from schemadoc.operations.operation import Call, invoke

    eight = {**THREE_WRONG, "chapters": [{"key": f"k{n}", "title": "One"} for n in range(8)]}
    service, doc_id = stored_then_tightened(served, eight)
    call = Call(service, max_depth=64)

    def answer(tool: str, **arguments: Any) -> dict[str, Any]:
        return invoke(call, BY_NAME[tool], {"doc_id": doc_id, **arguments}).model_dump(mode="json")

    checked = answer("document_validate_node", node_path="/title", node_data="Hi")
    assert checked["valid"] is True and checked["validation_report"]["error_count"] == 9
    assert answer("document_validate_node", node_path="/tags", node_data=[1])["valid"] is False
    written = answer("document_update_node", node_path="/title", node_data="Hi", version=1)
    report = written["validation_report"]
    assert (report["valid"], report["error_count"], report["resolved_count"], report["truncated"]) == \
        (False, 9, 1, True)
    assert [error["path"] for error in report["errors"]] == ["", "/chapters/0", "/chapters/1", "/chapters/2",
                                                             "/chapters/3"]
    assert all(error["suggested_fix"] for error in report["errors"])
    incomplete = answer("document_next_incomplete", node_path="/", limit=2)
    assert (incomplete["complete"], incomplete["violation_count"], incomplete["has_more"]) == (False, 9, True)
    assert incomplete["items"][1]["example_call"]["arguments"]["node_path"] == "/chapters/0/isbn"
    assert incomplete["items"][1]["code"] == "required-missing"


def test_strict_refuses_with_every_fix_also_after_the_report_was_remembered(served: Any) -> None:
    eight = {**THREE_WRONG, "chapters": [{"key": f"k{n}", "title": "One"} for n in range(8)]}
    service, doc_id = stored_then_tightened(served, eight, level="strict")
    service.next_incomplete(doc_id, "/", 5)  # the report of version 1 is remembered (fixes for the first only)
    with pytest.raises(SchemaDocError) as refused:
        service.update_node(doc_id, "/tags", ["x"], 1)
    patch = refused.value.details["suggested_call"]["arguments"]["patch"]
    assert {operation["path"] for operation in patch} >= {f"/chapters/{n}/isbn" for n in range(8)} | {"/isbn"}
    assert len(refused.value.details["violations"]) == 10


def test_beyond_the_violations_a_report_lists_every_one_is_still_compared(served: Any) -> None:
    many = {**THREE_WRONG, "chapters": [{"key": f"k{n}", "title": "One"} for n in range(1200)]}
    service, doc_id = stored_then_tightened(served, many)
    fixed = service.create_node(doc_id, "/chapters/1100/isbn", "1", 1)  # beyond the first 1,000 listed
    assert fixed.report.truncated and fixed.report.count == 1201 and fixed.repair is not None
    assert fixed.repair.resolved == 1
    with pytest.raises(SchemaDocError) as refused:
        service.delete_node(doc_id, "/chapters/1150/key", 2)
    assert codes(refused.value.details["violations"]) == [("required-missing", "/chapters/1150")]
    moved = service.move_node(doc_id, "/chapters/1199", "/chapters/0", 2)  # every index shifts, nothing is new
    assert moved.report.count == 1201


def test_a_repair_write_records_what_remains_as_the_version_s_verdict_and_the_last_fix_records_valid(
        served: Any) -> None:
    store, _, tight = served
    service, doc_id = stored_then_tightened(served, THREE_WRONG)
    digest = load_schema(tight).digest
    service.update_node(doc_id, "/title", "Hi", 1)
    verdict = store.read_meta(doc_id).verdict
    assert verdict is not None and (verdict.version, verdict.digest, verdict.valid, verdict.violation_count) == (
        2, digest, False, 2)
    assert sorted((v["code"], v["path"]) for v in verdict.violations) == [
        ("required-missing", ""), ("required-missing", "/chapters/0")]
    assert [item.doc_id for item in service.list_documents(valid=False).documents] == [doc_id]
    service.create_node(doc_id, "/isbn", "978-0", 2)
    last = service.create_node(doc_id, "/chapters/0/isbn", "978-1", 3)
    assert last.report.valid
    verdict = store.read_meta(doc_id).verdict
    assert verdict is not None and (verdict.version, verdict.valid, verdict.violation_count) == (4, True, 0)
    assert [item.doc_id for item in service.list_documents(valid=True).documents] == [doc_id]


@pytest.mark.parametrize("patch", [
    [{"op": "move", "from": "/chapters/0", "path": "/chapters/1"}],
    [{"op": "add", "path": "/chapters/0", "value": {"key": "n", "title": "Hi", "isbn": "1", "extra": True}},
     {"op": "remove", "path": "/chapters/1"}],
])
def test_a_write_that_moves_items_reports_what_whole_validation_finds(tmp_path: Path, patch: list[Any]) -> None:
    """Two items with the same unexpected member (the same ``True`` object in both): after a move, or an insert and a
    removal in one patch, the report made from the change once missed one of them (the items compared by position, a
    member the same object in both skipped, and its old violation carried away with the item it belonged to)."""
    tight = tightened()
    tight["properties"]["chapters"]["items"]["additionalProperties"] = False
    loose = write_schema(tmp_path, "loose", LOOSE)
    store = MemoryDocumentStore()
    content = {"title": "Hi", "tags": [], "chapters": [{"key": "a", "extra": True}, {"key": "b", "title": "Ok",
                                                                                      "isbn": "1", "extra": True}]}
    doc_id = DocumentService(load_schema(loose), store).create_document(content)[0]
    service = DocumentService(load_schema(write_schema(tmp_path, "tight", tight)), store)
    first = service.update_node(doc_id, "/tags", ["x"], 1)  # the report is remembered from here on
    try:
        result = service.apply_patch(doc_id, patch, first.version)
    except SchemaDocError as refused:  # the insert adds a violation: refused, naming it
        assert len(patch) == 2 and refused.code == "validation-failed", refused.details
        assert codes(refused.details["violations"]) == [("additional-properties-forbidden", "/chapters/0")]
        return
    whole = service.validator.validate(service.read_document(doc_id)[0])
    assert codes(result.report.violations) == codes(whole.violations)
    assert ("additional-properties-forbidden", "/chapters/0") in codes(whole.violations)
