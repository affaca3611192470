"""A scripted agent builds a document through MCP the way the tools suggest, breadth first.

From document_create it repeats next_incomplete -> schema_get_node -> the example call (create
or update), writing real content where a value the server made up is listed (reason placeholder),
until nothing is incomplete or 200 steps pass. Every version validates against the
schema (checked with the reference validator), each step makes exactly one new version, and the
document never shrinks.
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from guidance_agent import real_value
from jsonschema import Draft202012Validator
from mcp import Client
from mcp_support import call

from schemadoc.service import DocumentService

pytestmark = pytest.mark.anyio

_MAX_STEPS = 200


@pytest.mark.parametrize("client", ["auto"], indirect=True)  # the door itself is covered in both eras elsewhere
async def test_an_agent_following_next_incomplete_grows_a_valid_document(client: Client,
                                                                         service: DocumentService) -> None:
    reference = Draft202012Validator(service.schema.root, format_checker=Draft202012Validator.FORMAT_CHECKER)
    created = await call(client, "document_create")
    doc_id, version = created["doc_id"], created["version"]
    size = len(orjson.dumps(created["initial_tree"]))
    reasons: set[str] = set()
    steps = 0
    while steps < _MAX_STEPS:
        found = await call(client, "document_next_incomplete", {"doc_id": doc_id, "limit": 10})
        assert found["version"] == version
        items = [item for item in found["items"] if item["example_call"] is not None]
        if not found["items"]:
            break
        made_up = [item for item in found["items"] if item["reason"] == "placeholder"]
        if made_up and (not items or steps % 2):  # real content where a made-up value stands, as an agent would
            written = await call(client, "document_update_node", {
                "doc_id": doc_id, "node_path": made_up[0]["pointer"], "version": version,
                "node_data": real_value(made_up[0]["node_schema"], steps)})
            version = written["version"]
            steps += 1
            continue
        assert items, f"no place comes with an example call: {found['items']}"
        item = items[0]
        reasons.add(item["reason"])
        example: dict[str, Any] = item["example_call"]
        node_path = example["arguments"]["node_path"]
        schema_path = node_path[:-1] + "0" if node_path.endswith("/-") else node_path
        node_schema = await call(client, "schema_get_node", {"node_path": schema_path, "doc_id": doc_id})
        assert node_schema["node_schema"] == item["node_schema"]
        written = await call(client, example["tool"], example["arguments"])
        assert written["version"] == version + 1
        version = written["version"]
        document = service.read_document(doc_id)[0]
        assert not list(reference.iter_errors(document)), f"step {steps}: invalid after {example}"
        grown = len(orjson.dumps(document))
        assert grown >= size, f"step {steps}: {example} shrank the document"
        size = grown
        steps += 1
    assert steps == _MAX_STEPS  # the book's sections nest without end: there is always more to write
    assert reasons == {"absent", "empty-array"}  # values equal to their default are not unfinished
    assert size > 5 * len(orjson.dumps(created["initial_tree"]))
