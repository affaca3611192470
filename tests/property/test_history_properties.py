"""History invariants over random write sequences: diffs, reverts and replay agree with every version."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonpatch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import json_equal
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore

BOOK = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
SCHEMA = load_schema(BOOK)

paragraph = st.fixed_dictionaries({"text": st.text(max_size=8)},
                                  optional={"style": st.sampled_from(["normal", "quote", "code"])})
write = st.one_of(
    st.tuples(st.just("title"), st.text(min_size=1, max_size=8)),
    st.tuples(st.just("chapter"), st.lists(paragraph, max_size=3)),
    st.tuples(st.just("paragraph"), paragraph),
    st.tuples(st.just("drop"), st.integers(0, 3)),
    st.tuples(st.just("merge"), st.fixed_dictionaries({}, optional={
        "status": st.sampled_from(["draft", "review", "published"]),
        "isbn": st.none() | st.just("9780000000001"),
        "edition": st.integers(1, 5),
    })),
)


def _apply(service: DocumentService, doc_id: str, action: tuple[str, Any]) -> None:
    kind, value = action
    version = service.version_of(doc_id)
    chapters = service.read_node(doc_id, "/chapters").node
    try:
        if kind == "title":
            service.update_node(doc_id, "/title", value, version)
        elif kind == "chapter":
            chapter = {"id": f"ch-{version}", "title": "T",
                       "sections": [{"title": "S", "paragraphs": value, "sections": []}]}
            service.create_node(doc_id, "/chapters/-", chapter, version)
        elif kind == "paragraph" and chapters:
            service.create_node(doc_id, "/chapters/-1/sections/0/paragraphs/0", value, version)
        elif kind == "drop" and chapters:
            service.delete_node(doc_id, f"/chapters/{value % len(chapters)}", version)
        elif kind == "merge":
            service.merge_patch(doc_id, "/metadata", value, version)
    except SchemaDocError as error:  # e.g. a duplicate chapter id is fine to reject
        assert error.code == "validation-failed", error.to_dict()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(write, min_size=1, max_size=12), st.data())
def test_diffs_reverts_and_replay_agree_with_every_version(actions: list[tuple[str, Any]],
                                                           data: st.DataObject) -> None:
    service = DocumentService(SCHEMA, MemoryDocumentStore())
    service.open()
    doc_id, *_ = service.create_document()
    for action in actions:
        _apply(service, doc_id, action)
    latest = service.version_of(doc_id)
    versions = {v: copy.deepcopy(service.read_version(doc_id, v)) for v in range(1, latest + 1)}

    # history replay with an independent RFC 6902 implementation equals every stored version
    page = service.history(doc_id, limit=1000)
    replayed: Any = {}
    for entry in page.entries:
        replayed = jsonpatch.apply_patch(replayed, entry.patch)
        assert json_equal(replayed, versions[entry.version])

    # diff(a, b) applied to a gives b, in both directions
    a = data.draw(st.integers(1, latest))
    b = data.draw(st.integers(1, latest))
    patch = service.diff(doc_id, a, b)
    assert json_equal(jsonpatch.apply_patch(copy.deepcopy(versions[a]), patch), versions[b])

    # reverting to v gives v's content at a new version, and the history keeps everything
    target = data.draw(st.integers(1, latest))
    result = service.revert(doc_id, target, latest)
    assert result.version == latest + 1
    content, meta = service.read_document(doc_id)
    assert json_equal(content, versions[target])
    assert meta.version == latest + 1
    assert json_equal(service.read_version(doc_id, latest), versions[latest])
