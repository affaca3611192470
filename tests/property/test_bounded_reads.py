"""Bounded reads never stall: following them always terminates, and rebuilds the node exactly.

Over generated documents and budgets, an agent that follows every pointer a bounded result gives
(``next_offset`` of a window, the ``pointer`` of each stub, ``continue_at`` of a rendering) makes
progress at every call and stops; what it collected from ``document_read_node`` equals the node.
Through the MCP door, no result is over the budget as a whole (text and structured content).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemadoc.interfaces.mcp_door.server import build_mcp_server
from schemadoc.operations.budget import MCP_RESULT_BUDGET_BYTES
from schemadoc.pointer import parse
from schemadoc.reading import is_stub
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore

ANY_OBJECT = Path(__file__).resolve().parents[1] / "schemas" / "any_object.schema.json"
SCHEMA = load_schema(ANY_OBJECT)

# member names without "$": a member named "$stub" would be content that looks like a stub
keys = st.text(st.characters(blacklist_characters="$", blacklist_categories=("Cs",)), max_size=12)
scalars = (st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False, allow_infinity=False)
           | st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)
           | st.text(st.characters(blacklist_categories=("Cs",)), min_size=300, max_size=1500))
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=12) | st.dictionaries(keys, inner, max_size=10),
                      max_leaves=120)
# no empty member name at the root: node paths say "/" for the root itself
documents = st.dictionaries(keys.filter(bool), values, max_size=10)


class Reader:
    """An agent reading one node through bounded reads only, counting its calls."""

    def __init__(self, service: DocumentService, doc_id: str, max_bytes: int, calls: int) -> None:
        self.service, self.doc_id, self.max_bytes, self.left = service, doc_id, max_bytes, calls

    def read(self, pointer: str) -> Any:
        """The node at ``pointer``, rebuilt from bounded views (windows, stubs, character pages)."""
        offset = 0
        parts: list[Any] = []
        while True:
            self.left -= 1
            assert self.left >= 0, "the bounded reads did not terminate"
            view = self.service.read_view(self.doc_id, pointer, offset=offset, max_bytes=self.max_bytes).view
            assert not (view.truncated and view.window is not None and view.window.count == 0
                        and view.continue_at == [pointer or "/"]), "a result that makes no progress"
            content = view.content
            if is_stub(content):  # the node itself as a stub: only when asked for max_depth 0
                raise AssertionError(f"the node {pointer!r} came back as its own stub")
            parts.append(self.resolve(content))
            window = view.window
            if window is None or window.next_offset is None:
                break
            assert window.next_offset > offset, "next_offset does not move on"
            offset = window.next_offset
        if isinstance(parts[0], str):
            return "".join(parts)
        if isinstance(parts[0], dict):
            merged: dict[str, Any] = {}
            for part in parts:
                merged.update(part)
            return merged
        if isinstance(parts[0], list):
            return [item for part in parts for item in part]
        assert len(parts) == 1
        return parts[0]

    def resolve(self, value: Any) -> Any:
        """``value`` with every stub in it replaced by the node it stands for."""
        if is_stub(value):
            pointer = value["pointer"]
            assert len(orjson.dumps(value)) < self.node_size(pointer) or value["type"] == "string", \
                "a stub no smaller than what it stands for"
            return self.read("" if pointer == "/" else pointer)
        if isinstance(value, dict):
            return {key: self.resolve(member) for key, member in value.items()}
        if isinstance(value, list):
            return [self.resolve(item) for item in value]
        return value

    def node_size(self, pointer: str) -> int:
        node = self.service.read_node(self.doc_id, pointer).node
        return len(orjson.dumps(node))


def stored(document: dict[str, Any]) -> tuple[DocumentService, str]:
    service = DocumentService(SCHEMA, MemoryDocumentStore())
    service.open()
    doc_id, *_ = service.create_document()
    service.update_node(doc_id, "", document, 1)
    return service, doc_id


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(documents, st.integers(512, 4096))
def test_following_bounded_reads_terminates_and_rebuilds_the_node_exactly(document: dict[str, Any],
                                                                          max_bytes: int) -> None:
    service, doc_id = stored(document)
    size = len(orjson.dumps(document))
    reader = Reader(service, doc_id, max_bytes, calls=20 + 4 * size)
    assert reader.read("") == document
    assert orjson.dumps(reader.read("")) == orjson.dumps(document)  # the members' order too


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(documents, st.integers(512, 4096))
def test_following_a_rendering_terminates(document: dict[str, Any], max_bytes: int) -> None:
    service, doc_id = stored(document)
    pending = [("", 0)]
    seen: set[tuple[str, int]] = set()
    calls = 0
    while pending:
        pointer, offset = pending.pop()
        assert (pointer, offset) not in seen, f"rendering {pointer!r} from {offset} again: no progress"
        seen.add((pointer, offset))
        calls += 1
        assert calls <= 20 + 4 * len(orjson.dumps(document)), "the renderings did not terminate"
        _, rendered = service.render(doc_id, pointer or "/", offset=offset, max_bytes=max_bytes)
        assert len(rendered.text.encode()) <= max_bytes + 3 or rendered.continue_at is not None
        window = rendered.window
        if window is not None and window.next_offset is not None:
            assert window.count > 0 or rendered.continue_at is not None, "a page with nothing and nowhere to go"
            pending.append((pointer, window.next_offset))
        if rendered.continue_at is not None:
            assert len(parse(rendered.continue_at)) == len(parse(pointer)) + 1  # one level deeper
            pending.append((rendered.continue_at, 0))


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(documents)
def test_no_mcp_result_is_over_the_budget_as_a_whole(document: dict[str, Any]) -> None:
    service, doc_id = stored(document)
    server = build_mcp_server(service)
    for tool, arguments in [("document_read_node", {"doc_id": doc_id, "node_path": "/"}),
                            ("document_outline", {"doc_id": doc_id, "node_path": "/", "depth": 3}),
                            ("document_render", {"doc_id": doc_id, "node_path": "/"}),
                            ("document_history", {"doc_id": doc_id})]:
        result = anyio.run(server.call_tool, tool, arguments)
        whole = len(result.model_dump_json(by_alias=True, exclude_none=True).encode())
        assert whole <= MCP_RESULT_BUDGET_BYTES, f"{tool}: {whole} bytes"
