"""The service's guidance for agents: smaller answers (history summaries, the smallest revert patch), renders for
readers, fixes that never conflict and values that are placeholders marked as such."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemadoc.errors import SchemaDocError
from schemadoc.operations import results as r
from schemadoc.ops.apply import apply_patch
from schemadoc.reading.examples import fill_defaults, is_placeholder
from schemadoc.reading.render import words
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore
from schemadoc.validation.suggestions import combined_fix

COURSE = Path(__file__).resolve().parents[1] / "schemas" / "course.schema.json"
MODULE = {"title": "Motion", "summary": "How things move.", "lessons": []}


@pytest.fixture
def service() -> DocumentService:
    service = DocumentService(load_schema(COURSE), MemoryDocumentStore())
    service.open()
    return service


def _course(service: DocumentService, **extra: Any) -> str:
    doc_id, *_ = service.create_document({"title": "Physics", "code": "PHY101", "modules": [], **extra})
    return doc_id


def test_reverting_a_move_answers_one_move(service: DocumentService) -> None:
    doc_id = _course(service, modules=[{**MODULE, "title": f"M{i}", "lessons": [
        {"title": f"L{j}", "prompt": "Why?" * 20, "exercises": []} for j in range(5)]} for i in range(4)])
    service.move_node(doc_id, "/modules/0", "/modules/3", 1)
    reverted = service.revert(doc_id, 1, 2)
    assert reverted.patch == [{"op": "move", "from": "/modules/3", "path": "/modules/0"}]
    assert service.read_version(doc_id, 3) == service.read_version(doc_id, 1)


def test_revert_takes_the_inverse_of_several_writes_or_the_diff_whichever_is_smaller(service: DocumentService) -> None:
    doc_id = _course(service, summary="Short.")
    service.update_node(doc_id, "/summary", "Longer " * 50, 1)
    service.update_node(doc_id, "/summary", "Longest " * 60, 2)
    service.delete_node(doc_id, "/summary", 3)
    service.create_node(doc_id, "/learningOutcomes", ["Speed"], 4)
    reverted = service.revert(doc_id, 1, 5)
    assert reverted.patch == [{"op": "remove", "path": "/learningOutcomes"},
                              {"op": "add", "path": "/summary", "value": "Short."}]
    assert service.read_version(doc_id, 6) == service.read_version(doc_id, 1)


def test_the_history_summary_names_the_op_path_and_size_without_the_patch(service: DocumentService) -> None:
    doc_id = _course(service)
    service.create_node(doc_id, "/modules/-", MODULE, 1)
    page = service.history(doc_id)
    full, summary = r.history_result(page), r.history_result(page, summary=True)
    assert all(not hasattr(e, "patch") for e in summary.entries)
    assert [(e.version, e.op, getattr(e, "path", None)) for e in summary.entries] == [(1, "create", "/"),
                                                                    (2, "create_node", "/modules/0")]
    assert all(getattr(e, "patch_size_bytes", 0) and getattr(e, "patch_op_count", 0) == 1 for e in summary.entries)
    assert len(summary.model_dump_json()) < len(full.model_dump_json())


def test_render_labels_from_titles_else_words_in_schema_order_with_headings_for_arrays(
        service: DocumentService) -> None:
    exercises = [{"points": 5, "question": "v = ?", "difficulty": "easy"}, {"question": "a = ?", "difficulty": "hard",
                                                                         "points": 10}]
    doc_id = _course(service, assessment={"passMark": 60}, learningOutcomes=["Speed"],
                     modules=[{"lessons": [{"exercises": exercises, "prompt": "Why?", "title": "Speed"}],
                               "summary": "How things move." * 8, "title": "Motion"}])
    _, rendered = service.render(doc_id)
    text = rendered.text
    assert text.startswith("# Physics")
    assert "**Pass mark**: 60" in text and "**Learning outcomes**" in text and "Passmark" not in text
    assert "**Code**: PHY101" in text
    assert "## Motion" in text and "### Speed" in text, "titled items are their own headings"
    assert "#### Exercises\n\n##### Exercises 1\n\n**Question**: v = ?" in text, "untitled items get one"
    assert "**Summary**\n\nHow things move." in text, "long text is labelled like every other member"
    # the schema's order, whatever the order the content was sent in
    assert text.index("**Code**") < text.index("**Learning outcomes**") < text.index("## Motion") \
        < text.index("**Assessment**")
    assert text.index("## Motion") < text.index("**Summary**") < text.index("### Speed")
    assert text.index("**Question**: v = ?") < text.index("**Difficulty**: easy") < text.index("**Points**: 5")


@pytest.mark.parametrize(("key", "label"), [("learningOutcomes", "Learning outcomes"), ("passMark", "Pass mark"),
                                            ("due_date", "Due date"), ("ISBNCode", "ISBN code"), ("x", "X")])
def test_words_of_a_key(key: str, label: str) -> None:
    assert words(key) == label


def test_a_forbidden_member_is_reported_as_forbidden_with_the_allowed_members(service: DocumentService) -> None:
    doc_id = _course(service, modules=[MODULE])
    with pytest.raises(SchemaDocError) as caught:
        service.update_node(doc_id, "/modules/0/notes/x", "n", 1)
    details = caught.value.details
    assert caught.value.code == "path-not-found" and details["forbidden"] is True
    assert details["allowed"] == ["title", "summary", "lessons"]
    with pytest.raises(SchemaDocError) as caught:  # a member the schema allows: the usual advice stays
        service.update_node(doc_id, "/summary", "s", 1)
    assert "forbidden" not in caught.value.details and "document_create_node" in (caught.value.remediation or "")


def test_defaults_on_insert_fill_what_the_schema_gives_and_keep_what_is_sent(service: DocumentService) -> None:
    doc_id = _course(service, modules=[{**MODULE, "lessons": [{"title": "L", "prompt": "P", "exercises": []}]}])
    written = service.create_node(doc_id, "/modules/0/lessons/0/exercises/-", {"question": "Q", "points": 3}, 1,
                                  fill_defaults=True)
    assert written.node == {"question": "Q", "points": 3, "difficulty": "medium"}
    with pytest.raises(SchemaDocError) as caught:  # not asked: refused, with the defaults in the suggested call
        service.create_node(doc_id, "/modules/0/lessons/0/exercises/-", {"question": "Q"}, 2)
    suggested = caught.value.details["suggested_call"]
    assert suggested["arguments"]["node_data"] == {"question": "Q", "difficulty": "medium", "points": 10}
    assert "placeholders" not in suggested


def test_a_renamed_member_is_never_also_added_with_an_example() -> None:
    violations = [{"suggested_fix": [{"op": "move", "from": "/x/promt", "path": "/x/prompt"}]},
                  {"suggested_fix": [{"op": "add", "path": "/x/prompt", "value": "Example text"}]},
                  {"suggested_fix": [{"op": "replace", "path": "/x/n", "value": 1}]},
                  {"suggested_fix": [{"op": "replace", "path": "/x/n", "value": 2}]}]
    assert combined_fix(violations) == [{"op": "move", "from": "/x/promt", "path": "/x/prompt"},
                                        {"op": "replace", "path": "/x/n", "value": 1}]


@settings(max_examples=50, deadline=None)
@given(st.dictionaries(st.sampled_from(["question", "difficulty", "points", "other"]),
                       st.one_of(st.text(max_size=5), st.integers(0, 20)), max_size=4))
def test_filling_defaults_never_replaces_what_is_sent(sent: dict[str, Any]) -> None:
    schema = load_schema(COURSE)
    tokens = ["modules", "0", "lessons", "0", "exercises", "0"]
    filled = fill_defaults(sent, tokens, schema)
    assert {name: filled[name] for name in sent} == sent
    assert filled.get("difficulty", "medium") == sent.get("difficulty", "medium")
    assert set(filled) == set(sent) | {"difficulty", "points"}


def test_placeholders_are_values_the_schema_does_not_give() -> None:
    exercise = {"properties": {"difficulty": {"enum": ["easy", "medium"], "default": "medium"},
                               "question": {"type": "string"}}}
    assert is_placeholder({"type": "string"}, "Example text")
    assert not is_placeholder({"enum": ["a", "b"]}, "b") and not is_placeholder({"default": 3}, 3)
    assert is_placeholder(exercise, {"difficulty": "medium", "question": "Example text"})
    assert not is_placeholder(exercise, {"difficulty": "medium"})


def test_a_suggested_call_too_big_for_an_error_omits_the_agents_own_value_and_fixes_it_relative_to_it(
        service: DocumentService) -> None:
    doc_id = _course(service, modules=[{**MODULE, "lessons": [{"title": "L", "prompt": "P", "exercises": []}]}])
    sent = {"question": "Q" * 20_000}
    with pytest.raises(SchemaDocError) as caught:
        service.create_node(doc_id, "/modules/0/lessons/0/exercises/-", sent, 1)
    suggested = caught.value.details["suggested_call"]
    assert suggested["tool"] == "document_create_node" and suggested["omitted"] == "node_data"
    assert suggested["arguments"] == {"doc_id": doc_id, "node_path": "/modules/0/lessons/0/exercises/-", "version": 1}
    assert suggested["arguments_size_bytes"] > 20_000
    assert suggested["omitted_fix"] == [{"op": "add", "path": "/difficulty", "value": "medium"},
                                        {"op": "add", "path": "/points", "value": 10}]
    # the agent applies the fix to its own value and sends the call: it passes
    corrected = apply_patch(sent, suggested["omitted_fix"]).document
    written = service.create_node(**{**suggested["arguments"], "node_data": corrected})
    assert written.node == {"question": "Q" * 20_000, "difficulty": "medium", "points": 10}


def test_a_too_big_patch_suggestion_appends_the_fixes_to_the_patch_sent(service: DocumentService) -> None:
    doc_id = _course(service, modules=[{**MODULE, "lessons": [{"title": "L", "prompt": "P", "exercises": []}]}])
    patch = [{"op": "add", "path": "/modules/0/lessons/0/exercises/-", "value": {"question": "Q" * 20_000}}]
    with pytest.raises(SchemaDocError) as caught:
        service.apply_patch(doc_id, patch, 1)
    suggested = caught.value.details["suggested_call"]
    assert suggested["tool"] == "document_apply_patch" and suggested["omitted"] == "patch"
    assert "patch" not in suggested["arguments"]
    corrected = apply_patch(patch, suggested["omitted_fix"]).document
    written = service.apply_patch(**{**suggested["arguments"], "patch": corrected})
    assert written.version == 2


def test_a_marked_value_the_agent_replaced_before_sending_is_real_content(service: DocumentService) -> None:
    doc_id = _course(service)
    module = {"title": "Example text", "summary": "How things move.", "lessons": []}
    service.create_node(doc_id, "/modules/-", module, 1, placeholders=["/title", "/summary"])
    _, items, _, _ = service.next_incomplete(doc_id, limit=100)
    assert [item.pointer for item in items if item.reason == "placeholder"] == ["/modules/0/title"]
    assert service.history(doc_id).entries[-1].info["placeholders"] == ["/modules/0/title"]
    service.move_node(doc_id, "/modules/0", "/modules/-", 2)  # carried along by a move (here: to the same place)
    service.create_node(doc_id, "/modules/0", {**module, "title": "Forces"}, 3)  # an insert before it shifts it
    _, items, _, _ = service.next_incomplete(doc_id, limit=100)
    assert [item.pointer for item in items if item.reason == "placeholder"] == ["/modules/1/title"]
    service.delete_node(doc_id, "/modules/1", 4)
    _, items, _, _ = service.next_incomplete(doc_id, limit=100)
    assert not [item for item in items if item.reason == "placeholder"]
    assert "placeholders" not in service.history(doc_id).entries[-1].info
