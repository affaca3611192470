"""A scripted agent, with nothing but what an MCP client shows, builds a course syllabus whose required fields have
no defaults. It makes the mistakes agents make (create without content, a module missing a member and a misspelt
one, an exercise without its defaulted members, a member the schema forbids, a stale write, invalid dry runs) and
recovers from each by sending what the server suggested, until document_next_incomplete answers complete.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from mcp import Client
from mcp_support import call, fail

from schemadoc.interfaces.mcp_door.server import build_mcp_server
from schemadoc.pointer import parse
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore

COURSE = Path(__file__).resolve().parents[2] / "schemas" / "course.schema.json"

pytestmark = pytest.mark.anyio


@pytest.fixture
def service() -> DocumentService:
    service = DocumentService(load_schema(COURSE), MemoryDocumentStore())
    service.open()
    return service


@pytest.fixture
async def agent(service: DocumentService) -> AsyncIterator[Client]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(build_mcp_server(service)) as client:
            yield client


def _real_content(value: Any, marked: list[str], text: str) -> Any:
    """``value`` with the made-up values at the ``marked`` pointers (relative to it) replaced by real text."""
    for pointer in marked:
        tokens = parse(pointer)
        if not tokens:
            return text
        parent = value
        for token in tokens[:-1]:
            parent = parent[int(token) if isinstance(parent, list) else token]
        parent[int(tokens[-1]) if isinstance(parent, list) else tokens[-1]] = text
    return value


async def test_an_agent_recovers_from_every_mistake_by_sending_what_the_server_suggests(
        agent: Client, service: DocumentService) -> None:
    reference = Draft202012Validator(json.loads(COURSE.read_text()))

    # 1. create without content: refused, and the remediation says content can be given (not "change the schema")
    error = await fail(agent, "document_create")
    assert error["code"] == "required-field-without-default"
    assert error["details"]["paths"] == ["/title", "/code", "/modules"]
    assert "`content`" in error["remediation"]
    # ... the agent sends content with two mistakes; the server's one call fixes them
    error = await fail(agent, "document_create", {"content": {"title": "Physics", "code": "PHY101",
                                                              "modules": [], "assessment": {"passMark": "60"}}})
    suggested = error["details"]["suggested_call"]
    assert suggested["tool"] == "document_create" and suggested["resolves"] is True
    created = await call(agent, suggested["tool"], suggested["arguments"])
    doc_id, version = created["doc_id"], created["version"]
    assert created["initial_tree"]["assessment"] == {"passMark": 60}

    # 2. next-incomplete never lists a value because it equals its default, and proposes no overwrite
    await call(agent, "document_update_node", {"doc_id": doc_id, "node_path": "/assessment/passMark",
                                               "node_data": 50, "version": version})
    version += 1
    found = await call(agent, "document_next_incomplete", {"doc_id": doc_id, "limit": 100})
    assert found["complete"] is False
    assert all(item["reason"] != "default-value" for item in found["items"])
    assert all(item["example_call"]["tool"] == "document_create_node"
               for item in found["items"] if item["example_call"])

    # 3. a module missing its summary, with a lesson whose prompt is misspelt: one suggested call fixes both
    module = {"title": "Motion", "lessons": [{"title": "Speed", "promt": "How fast is fast?", "exercises": []}]}
    arguments = {"doc_id": doc_id, "node_path": "/modules/-", "node_data": module, "version": version}
    error = await fail(agent, "document_create_node", arguments)
    assert {v["code"] for v in error["details"]["violations"]} >= {"required-missing",
                                                                   "additional-properties-forbidden"}
    assert all("suggested_fix" not in v for v in error["details"]["violations"]), "no patch into nowhere"
    suggested = error["details"]["suggested_call"]
    assert suggested["tool"] == "document_create_node" and suggested["resolves"] is True
    fixed = suggested["arguments"]["node_data"]
    assert fixed["lessons"][0]["prompt"] == "How fast is fast?", "the renamed text is kept, never overwritten"
    assert "promt" not in fixed["lessons"][0]
    assert suggested["placeholders"] == ["/summary"], "only the made-up value is marked"
    # 4. one dry-run shape: the same error as the write, marked, with the preview
    dry = await fail(agent, "document_create_node", {**arguments, "dry_run": True})
    assert dry["code"] == error["code"] and dry["details"]["dry_run"] is True and dry["details"]["patch"]
    assert dry["details"]["violations"] == error["details"]["violations"]
    sent = {**suggested["arguments"], "node_data": _real_content(fixed, suggested["placeholders"], "Kinematics.")}
    written = await call(agent, suggested["tool"], sent)
    assert written["created_node_path"] == "/modules/0"
    version = written["version"]

    # 5. a member the schema forbids: the answer says so and names the allowed members
    error = await fail(agent, "document_update_node", {"doc_id": doc_id, "node_path": "/modules/0/lessons/0/notes",
                                                       "node_data": "x", "version": version})
    assert error["code"] == "path-not-found" and error["details"]["forbidden"] is True
    assert error["details"]["allowed"] == ["title", "prompt", "exercises"]
    assert "document_create_node" not in error["remediation"]

    # 6. an exercise without its defaulted members: the suggested call restates the defaults, no placeholder
    exercise_path = "/modules/0/lessons/0/exercises/-"
    error = await fail(agent, "document_create_node", {"doc_id": doc_id, "node_path": exercise_path,
                                                       "node_data": {"question": "v = ?"}, "version": version})
    suggested = error["details"]["suggested_call"]
    assert suggested["arguments"]["node_data"] == {"question": "v = ?", "difficulty": "medium", "points": 10}
    assert "placeholders" not in suggested and suggested["resolves"] is True
    version = (await call(agent, suggested["tool"], suggested["arguments"]))["version"]
    # ... or asks for the defaults on insert
    filled = await call(agent, "document_create_node", {"doc_id": doc_id, "node_path": exercise_path,
                                                        "node_data": {"question": "a = ?", "difficulty": "hard"},
                                                        "fill_defaults": True, "version": version})
    assert filled["created_node"] == {"question": "a = ?", "difficulty": "hard", "points": 10}
    version = filled["version"]

    # 7. a stale write: version-conflict names the version to send
    error = await fail(agent, "document_update_node", {"doc_id": doc_id, "node_path": "/title",
                                                       "node_data": "Physics I", "version": version - 1})
    assert error["code"] == "version-conflict" and error["details"]["actual_version"] == version

    # 8. an invalid merge patch dry run has the write's shape too
    error = await fail(agent, "document_merge_patch", {"doc_id": doc_id, "node_path": "/assessment",
                                                       "merge_patch": {"passMark": 500}, "version": version,
                                                       "dry_run": True})
    assert error["code"] == "validation-failed" and error["details"]["dry_run"] is True

    # 9. next-incomplete to the end: each place filled with its example call (made-up text made real)
    for step in range(30):
        found = await call(agent, "document_next_incomplete", {"doc_id": doc_id})
        if found["complete"]:
            break
        example = found["items"][0]["example_call"]
        assert example is not None, found["items"][0]
        arguments = {**example["arguments"], "version": version}
        if example["placeholder"]:
            arguments["node_data"] = _fill_text(arguments["node_data"], f"Real text {step}")
        version = (await call(agent, example["tool"], arguments))["version"]
    assert found["complete"] is True and found["items"] == [] and found["has_more"] is False
    assert step >= 2, "the summary and the learning outcomes were filled first"
    document = service.read_document(doc_id)[0]
    assert not list(reference.iter_errors(document))
    assert document["assessment"] == {"passMark": 50}, "a value equal to its default was never overwritten"


def _fill_text(value: Any, text: str) -> Any:
    if isinstance(value, str):
        return text
    if isinstance(value, list):
        return [_fill_text(item, text) for item in value]
    if isinstance(value, dict):
        return {name: _fill_text(member, text) for name, member in value.items()}
    return value


async def test_what_an_agent_reads_names_itself(agent: Client, service: DocumentService) -> None:
    created = await call(agent, "document_create", {"content": {"title": "Physics", "code": "PHY101", "modules": []}})
    doc_id = created["doc_id"]
    listed = await call(agent, "document_list")
    assert [(d["doc_id"], d["label"]) for d in listed["documents"]] == [(doc_id, "Physics")]
    resources = {str(resource.uri): resource for resource in (await agent.list_resources()).resources}
    assert resources[f"schema://{doc_id}"].title == "Physics"
    # the schema_uri results carry is a resource that reads the schema
    schema_uri = created["schema_uri"]
    assert schema_uri == "https://example.org/schemas/course.schema.json"
    read = await agent.read_resource(schema_uri)
    assert json.loads(read.contents[0].text)["title"] == "Course syllabus"  # type: ignore[union-attr]
    # a document resource carries the version it was read at, and the served schema's verdict on it
    read = await agent.read_resource(f"schema://{doc_id}")
    assert read.contents[0].meta == {"version": 1, "modified_at": created_at(service, doc_id),
                                     "schema_digest": service.schema.digest, "valid": True, "violation_count": 0}
    assert json.loads(read.contents[0].text)["title"] == "Physics"  # type: ignore[union-attr]
    # the history's summary form, as the tool description recommends
    history = await call(agent, "document_history", {"doc_id": doc_id, "summary": True})
    assert history["entries"][0]["op"] == "create" and "patch" not in history["entries"][0]


def created_at(service: DocumentService, doc_id: str) -> str:
    return service.read_document(doc_id)[1].modified_at
