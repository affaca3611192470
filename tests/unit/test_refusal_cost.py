"""A refused write costs what its edit costs: its violations are found from what the write reached and its
suggested call is judged the same way, never by validating the whole document, and both say what whole-document
validation would say.

The oracle is a service with ``validation_level: strict`` that has forgotten every document it validated, so each of
its writes is judged whole (the path every write took before a document is known valid).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemadoc.errors import SchemaDocError
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore

SCHEMA = load_schema(Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json")
BOOK: dict[str, Any] = {
    "title": "A book", "tags": ["x"],
    "metadata": {"language": "en", "status": "draft", "edition": 1, "author": {"name": "A", "email": "a@b.org"}},
    "chapters": [
        {"id": f"ch-{n}", "title": f"Chapter {n}", "sections": [
            {"title": "S", "paragraphs": [{"text": f"p {n}.{i}", "style": "normal"} for i in range(3)]}]}
        for n in range(4)],
}


class Counting:
    """A whole-document validator that counts how often it is asked."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.calls = 0

    def is_valid(self, instance: Any) -> bool:
        self.calls += 1
        return bool(self.inner.is_valid(instance))

    def iter_errors(self, instance: Any) -> Any:
        self.calls += 1
        return self.inner.iter_errors(instance)


def served(level: str = "moderate") -> tuple[DocumentService, str, int, Counting]:
    service = DocumentService(SCHEMA, MemoryDocumentStore(), validation_level=level)
    counting = Counting(service.validator._validator)
    service.validator._validator = counting  # every whole-document validation of the validator passes here
    service.validator._changes.locations.whole = counting  # and the incremental walk's fallback
    service.open()
    doc_id, _, meta, _ = service.create_document()
    version = service.update_node(doc_id, "", copy.deepcopy(BOOK), meta.version).version
    return service, doc_id, version, counting


def forgetful(service: DocumentService) -> DocumentService:
    """``service`` with no document known valid: every write is validated whole."""
    service.validator._known = lambda document: False  # type: ignore[method-assign]
    return service


def write(service: DocumentService, doc_id: str, version: int, call: tuple[str, dict[str, Any]]) -> Any:
    tool, arguments = call
    if tool == "document_apply_patch":
        return service.apply_patch(doc_id, arguments["patch"], version, dry_run=arguments.get("dry_run", False))
    if tool == "document_merge_patch":
        return service.merge_patch(doc_id, arguments["node_path"], arguments["merge_patch"], version)
    method = service.update_node if tool == "document_update_node" else service.create_node
    return method(doc_id, arguments["node_path"], arguments["node_data"], version,
                  dry_run=arguments.get("dry_run", False), fill_defaults=arguments.get("fill_defaults", False))


def refusal(service: DocumentService, doc_id: str, version: int, call: tuple[str, dict[str, Any]]
            ) -> dict[str, Any] | None:
    """The code and details of the write's error, without the document's id; None when it is accepted."""
    try:
        write(service, doc_id, version, call)
    except SchemaDocError as error:
        details = copy.deepcopy(error.details)
        details["code"] = error.code
        details.pop("doc_id", None)
        if "suggested_call" in details and "arguments" in details["suggested_call"]:
            details["suggested_call"]["arguments"].pop("doc_id")
        return details
    return None


wrong = st.one_of(st.integers(-5, 5), st.booleans(), st.none(), st.text(max_size=4),
                  st.lists(st.integers(0, 3), max_size=2), st.dictionaries(st.sampled_from(["name", "x"]),
                                                                           st.text(max_size=3), max_size=2))
paragraph = st.fixed_dictionaries({}, optional={"text": wrong, "style": st.sampled_from(["normal", "quote", "Quote"]),
                                                "txet": st.text(max_size=3)})
CALLS = st.one_of(
    st.tuples(st.just("document_update_node"), st.fixed_dictionaries({
        "node_path": st.sampled_from(["/chapters/2/sections/0/paragraphs/1/text",
                                      "/chapters/1/sections/0/paragraphs/0/style", "/metadata/author",
                                      "/metadata/edition", "/metadata/status", "/title",
                                      "/chapters/3/id", "/tags/0", "/chapters/0/sections/0/paragraphs/2"]),
        "node_data": wrong})),
    st.tuples(st.just("document_create_node"), st.fixed_dictionaries({
        "node_path": st.sampled_from(["/chapters/1/sections/0/paragraphs/-", "/chapters/1/sections/0/paragraphs/0",
                                      "/tags/-"]),
        "node_data": paragraph})),
    st.tuples(st.just("document_apply_patch"), st.fixed_dictionaries({"patch": st.lists(st.one_of(
        st.builds(lambda i, v: {"op": "replace", "path": f"/chapters/{i}/title", "value": v}, st.integers(0, 3), wrong),
        st.builds(lambda i: {"op": "remove", "path": f"/chapters/{i}/id"}, st.integers(0, 3)),
        st.builds(lambda v: {"op": "add", "path": "/metadata/extra", "value": v}, wrong)), min_size=1, max_size=3)})),
    st.tuples(st.just("document_merge_patch"), st.fixed_dictionaries({
        "node_path": st.sampled_from(["/chapters/1", "/metadata"]),
        "merge_patch": st.dictionaries(st.sampled_from(["title", "status", "edition", "id", "extra"]), wrong,
                                       min_size=1, max_size=2)})),
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(call=CALLS)
def test_a_refusal_from_the_change_says_what_whole_validation_says_and_its_call_resolves_as_it_claims(
        call: tuple[str, dict[str, Any]]) -> None:
    service, doc_id, version, whole = served()
    oracle, oracle_id, oracle_version, _ = served("strict")
    forgetful(oracle)
    before = whole.calls
    found = refusal(service, doc_id, version, call)
    expected = refusal(oracle, oracle_id, oracle_version, call)
    assert found == expected
    if found is None or found["code"] != "validation-failed":
        return
    assert whole.calls == before  # neither the violations nor the suggested call validated the whole document
    suggested = found.get("suggested_call")
    if suggested is not None and "arguments" in suggested:
        arguments = {**suggested["arguments"], "dry_run": True}
        resolved = refusal(service, doc_id, version, (suggested["tool"], arguments)) is None
        assert suggested["resolves"] is resolved


def test_refusals_leave_the_document_known_valid_so_its_next_write_is_still_judged_from_the_change() -> None:
    service, doc_id, version, whole = served()
    before = whole.calls
    for n in range(200):  # more refusals than documents a validator remembers as valid
        with pytest.raises(SchemaDocError) as refused:
            service.update_node(doc_id, "/chapters/2/sections/0/paragraphs/1/text", n, version)
        assert refused.value.details["suggested_call"]["resolves"] is True
    version = service.update_node(doc_id, "/chapters/2/sections/0/paragraphs/1/text", "fine", version).version
    assert whole.calls == before
    assert service.read_node(doc_id, "/chapters/2/sections/0/paragraphs/1/text").node == "fine"


def test_a_wrong_author_is_refused_from_the_change_with_the_alternatives_whole_validation_gives() -> None:
    service, doc_id, version, whole = served()
    before = whole.calls
    with pytest.raises(SchemaDocError) as refused:
        service.update_node(doc_id, "/metadata/author", {"name": "x", "email": 5}, version)
    [violation] = refused.value.details["violations"]
    assert violation["constraint"] == "oneOf"
    assert [[alternative["path"] for alternative in branch] for branch in violation["alternatives"]] == [
        ["/metadata/author"], ["/metadata/author/email"]]
    assert whole.calls == before
