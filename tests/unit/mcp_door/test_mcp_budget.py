"""No MCP tool result exceeds the budget on a 10 MiB document, whatever the arguments.

The document is a generated 10 MiB book (benchmarks/generate.py). Hypothesis draws tool calls
with arguments anywhere in their accepted ranges; each result (success or error) is checked
against ``MCP_RESULT_BUDGET_BYTES`` as the JSON the client receives: the whole result, its text and
its structured content together.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

from schemadoc.interfaces.mcp_door.server import SchemaDocMCPServer, build_mcp_server
from schemadoc.operations.budget import MCP_RESULT_BUDGET_BYTES
from schemadoc.schema import LoadedSchema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore

_GENERATE = Path(__file__).resolve().parents[3] / "benchmarks" / "generate.py"


def _make_book(size_mib: float) -> Any:
    spec = importlib.util.spec_from_file_location("schemadoc_bench_generate", _GENERATE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.make_book(size_mib)


class Big:
    def __init__(self, schema: LoadedSchema) -> None:
        self.service = DocumentService(schema, MemoryDocumentStore())
        self.service.open()
        doc_id, _, meta, _ = self.service.create_document()
        book = _make_book(10)
        self.service.update_node(doc_id, "/", book, meta.version)
        self.service.update_node(doc_id, "/chapters/0/title", "A retitled first chapter", 2)
        self.doc_id = doc_id
        self.book = book
        self.server: SchemaDocMCPServer = build_mcp_server(self.service)


@pytest.fixture(scope="module")
def big(schema: LoadedSchema) -> Big:
    return Big(schema)


_POINTERS = ["/", "/chapters", "/chapters/0", "/chapters/-1/sections", "/chapters/3/sections/0/paragraphs",
             "/chapters/3/sections/0/paragraphs/0/text", "/metadata", "/title", "/tags"]


def _calls(doc_id: str) -> st.SearchStrategy[tuple[str, dict[str, Any]]]:
    pointer = st.sampled_from(_POINTERS)
    reads = st.fixed_dictionaries(
        {"doc_id": st.just(doc_id), "node_path": pointer},
        optional={"max_depth": st.integers(0, 255), "offset": st.integers(0, 5_000), "limit": st.integers(1, 10**6),
                  "max_bytes": st.integers(512, 10**9), "at_version": st.integers(1, 3)})
    outlines = st.fixed_dictionaries(
        {"doc_id": st.just(doc_id), "node_path": pointer},
        optional={"depth": st.integers(0, 32), "offset": st.integers(0, 500), "limit": st.integers(1, 10**6),
                  "max_bytes": st.integers(512, 10**9)})
    renders = st.fixed_dictionaries(
        {"doc_id": st.just(doc_id), "node_path": pointer},
        optional={"offset": st.integers(0, 500), "limit": st.integers(1, 10**6), "max_bytes": st.integers(512, 10**9)})
    writes = st.fixed_dictionaries(
        {"doc_id": st.just(doc_id), "node_path": st.sampled_from(["/", "/chapters", "/chapters/1"]),
         "version": st.just(3), "dry_run": st.just(True)})
    return st.one_of(
        st.tuples(st.just("document_read_node"), reads),
        st.tuples(st.just("document_outline"), outlines),
        st.tuples(st.just("document_render"), renders),
        st.tuples(st.just("document_next_incomplete"),
                  st.fixed_dictionaries({"doc_id": st.just(doc_id), "node_path": pointer,
                                         "limit": st.integers(1, 100)})),
        st.tuples(st.just("document_search"),
                  st.fixed_dictionaries({"query": st.sampled_from(["the", "harbour", "a", "e", "zzzz"]),
                                         "limit": st.integers(1, 100), "cursor": st.integers(0, 5_000)})),
        st.tuples(st.just("document_stats"), st.just({"doc_id": doc_id})),
        st.tuples(st.just("document_history"),
                  st.fixed_dictionaries({"doc_id": st.just(doc_id), "since_version": st.integers(0, 3),
                                         "limit": st.integers(1, 1000)})),
        st.tuples(st.just("document_diff"),
                  st.fixed_dictionaries({"doc_id": st.just(doc_id), "from_version": st.integers(1, 3),
                                         "to_version": st.integers(1, 3)})),
        st.tuples(st.just("document_update_node"), writes.map(lambda w: {**w, "node_data": {"oops": 1}})),
        st.tuples(st.just("document_delete_node"),
                  st.fixed_dictionaries({"doc_id": st.just(doc_id), "version": st.just(3), "dry_run": st.just(True),
                                         "node_path": st.sampled_from(["/chapters", "/chapters/1", "/tags"])})),
    )


def _received(result: Any) -> bytes:
    """The whole result as the client receives it: the text and the structured content, as JSON."""
    text = result.content[0].text
    structured = result.structured_content
    if structured is not None:
        assert orjson.loads(text) == structured
    return bytes(result.model_dump_json(by_alias=True, exclude_none=True).encode())


def _body(result: Any) -> Any:
    """What the result carries (checked to be within the budget as a whole)."""
    assert len(_received(result)) <= MCP_RESULT_BUDGET_BYTES
    return orjson.loads(result.content[0].text)


def test_no_result_exceeds_the_budget_whatever_the_arguments(big: Big) -> None:
    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
    @given(call=_calls(big.doc_id))
    def check(call: tuple[str, dict[str, Any]]) -> None:
        tool, arguments = call
        result = anyio.run(big.server.call_tool, tool, arguments)
        size = len(_received(result))
        assert size <= MCP_RESULT_BUDGET_BYTES, f"{tool} {arguments}: {size} bytes"

    check()


def test_a_root_read_of_a_big_document_is_a_bounded_view_that_says_where_to_go_on(big: Big) -> None:
    result = anyio.run(big.server.call_tool, "document_read_node", {"doc_id": big.doc_id, "node_path": "/"})
    body = _body(result)
    assert body["truncated"] is True
    assert body["node_size_bytes"] == len(orjson.dumps(big.service.read_node(big.doc_id, "/").node))
    assert body["continue_at"], "a truncated view names the pointers to read next"
    assert body["node_content"]["title"] == big.book["title"]


def test_a_write_too_big_to_echo_returns_sizes_and_pointers(big: Big) -> None:
    chapters = big.book["chapters"]
    result = anyio.run(big.server.call_tool, "document_update_node",
                       {"doc_id": big.doc_id, "node_path": "/chapters", "node_data": chapters, "version": 3,
                        "dry_run": True})
    body = _body(result)
    assert body["truncated"] is True
    assert body["updated_node"] == {"$stub": True, "type": "array", "count": len(chapters),
                                    "size_bytes": len(orjson.dumps(chapters)), "pointer": "/chapters"}
    assert body["patch"] == [] and body["patch_op_count"] == 1
    assert body["patch_size_bytes"] > MCP_RESULT_BUDGET_BYTES


def test_the_history_of_a_big_document_keeps_each_entry_and_the_size_of_big_patches(big: Big) -> None:
    result = anyio.run(big.server.call_tool, "document_history", {"doc_id": big.doc_id})
    body = _body(result)
    assert [entry["version"] for entry in body["entries"]] == [1, 2, 3]
    second = body["entries"][1]
    assert second["patch"] == [] and second["truncated"] is True and second["patch_size_bytes"] > 10 * 2**20
    assert body["entries"][2]["patch"] == [{"op": "replace", "path": "/chapters/0/title",
                                            "value": "A retitled first chapter"}]


def test_a_diff_with_the_most_and_longest_actor_names_beside_a_big_patch_stays_within_the_budget(
        schema: LoadedSchema) -> None:
    service = DocumentService(schema, MemoryDocumentStore())
    service.open()
    doc_id, _, meta, _ = service.create_document()
    version = service.update_node(doc_id, "/", _make_book(0.2), meta.version).version  # under 1 MiB
    names = [f"{n:02d}" + "\U0001F600\"" * 99 for n in range(25)]  # 200 characters, 4-byte and escaped ones
    for name in names:
        version = service.update_node(doc_id, "/title", name[:50], version, actor=name).version
    result = anyio.run(build_mcp_server(service).call_tool, "document_diff",
                       {"doc_id": doc_id, "from_version": 1, "to_version": version})
    body = _body(result)
    assert body["truncated"] is True and body["op_count"] > len(body["patch"])
    assert body["actors"] == {"names": names[:20], "complete": False, "through_version": 22}


@pytest.mark.anyio
async def test_through_a_client_the_read_of_a_big_root_stays_within_the_budget(big: Big) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        async with Client(big.server) as client:
            result = await client.call_tool("document_read_node", {"doc_id": big.doc_id, "node_path": "/"})
    assert len(_received(result)) <= MCP_RESULT_BUDGET_BYTES


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")
