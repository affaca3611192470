"""A fuzz run at /mcp with a read-only token against a real ``schemadoc serve``: not one write gets through.

Generated hostile messages (``tests/mcp_near_json.py``: JSON and near-JSON, ``NaN`` and ``Infinity``
literals, repeated ``method`` and ``name`` members, batches, notifications, replies, unknown methods),
whose tool calls name the server's real documents and versions, are posted with a read-only token and
the headers of either protocol era: modern (``Mcp-Protocol-Version: 2026-07-28`` with ``Mcp-Method`` and
``Mcp-Name``), handshake era inside a session the reader opened, without a session, or a version the
server does not know. After every message the documents' versions, the document list and the files of
the storage directory are those of before. Named examples replay the attacks found by hand.

Bounded: ``SCHEMADOC_FUZZ_READ_ONLY_EXAMPLES`` messages (default 150, a few seconds); ``make fuzz``
may raise it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from e2e.http_server import Server, tokens_file
from hypothesis import HealthCheck, Phase, event, example, given, settings
from hypothesis import strategies as st
from mcp_near_json import METHODS, READ_TOOLS, WRITE_TOOLS, bodies

EXAMPLES = int(os.environ.get("SCHEMADOC_FUZZ_READ_ONLY_EXAMPLES", "150"))
pytestmark = pytest.mark.timeout(max(120, EXAMPLES // 2))
READER = "reader-token-0123456789abcdef"
WRITER = "writer-token-0123456789abcdef"
LEGACY = "2025-11-25"
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN, "io.modelcontextprotocol/clientCapabilities": {}}
ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}


@dataclass
class Target:
    """The running server, its documents (one of them deleted), the reader's session, and the state to keep."""

    server: Server
    http: httpx.Client
    documents: list[str]
    session: str
    state: Any

    @property
    def storage(self) -> Path:
        return self.server.stdout_path.parents[1] / "data"

    def read_state(self) -> Any:
        writer = {"authorization": f"Bearer {WRITER}"}
        listed = self.http.get(f"{self.server.url}/api/v1/documents", headers=writer).json()
        each = [(doc_id, (answer := self.http.get(f"{self.server.url}/api/v1/documents/{doc_id}", headers=writer))
                 .status_code, answer.json().get("version")) for doc_id in self.documents]
        # the documents' files, less the locks and a snapshot being written in the background (a checkpoint of a
        # journal that already holds its versions, not a write; it appears as a .tmp file for a moment)
        files = sorted(str(path.relative_to(self.storage)) for path in self.storage.rglob("*")
                       if path.is_file() and not path.name.endswith((".lock", ".tmp")))
        return sorted((item["doc_id"], item["version"]) for item in listed["documents"]), each, files


@pytest.fixture(scope="module")
def target(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    root = tmp_path_factory.mktemp("read-only-fuzz")
    tokens = tokens_file(root, {"name": "ci", "token": WRITER, "access": "read-write"},
                         {"name": "dash", "token": READER, "access": "read-only"})
    with Server(root / "data", root / "logs", extra_args=("--tokens-file", str(tokens))) as server, \
            httpx.Client(timeout=30) as http:
        writer = {"authorization": f"Bearer {WRITER}"}
        documents = [http.post(f"{server.url}/api/v1/documents", headers=writer).json()["doc_id"] for _ in range(3)]
        assert http.put(f"{server.url}/api/v1/documents/{documents[0]}", params={"path": "/title"}, headers=writer,
                        json={"node_data": "kept", "version": 1}).status_code == 200
        deleted = http.delete(f"{server.url}/api/v1/documents/{documents[2]}", headers={**writer, "if-match": '"1"'})
        assert deleted.status_code == 200, deleted.text
        opened = http.post(f"{server.url}/mcp", headers={**ACCEPT, "authorization": f"Bearer {READER}"}, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": LEGACY, "capabilities": {}, "clientInfo": {"name": "fuzz", "version": "1"}}})
        assert opened.status_code == 200, opened.text
        found = Target(server, http, documents, opened.headers["mcp-session-id"], None)
        found.state = found.read_state()
        yield found
        assert "Traceback" not in server.stderr


def _arguments(target: Target) -> Any:
    """Arguments that would make each write tool write: the real documents, their versions, real paths."""
    doc = st.sampled_from(target.documents)
    version = st.sampled_from([1, 2, 3])
    common = {"doc_id": doc, "version": version}
    by_tool: dict[str, dict[str, Any]] = {
        "document_create": {"content": st.just({"title": "by a reader"})},
        "document_update_node": {**common, "node_path": st.just("/title"), "node_data": st.just("by a reader")},
        "document_create_node": {**common, "node_path": st.just("/subtitle"), "node_data": st.just("by a reader")},
        "document_delete_node": {**common, "node_path": st.just("/title")},
        "document_apply_patch": {**common, "patch": st.just([{"op": "replace", "path": "/title", "value": "x"}])},
        "document_revert": {**common, "to_version": st.just(1)},
        "document_merge_patch": {**common, "node_path": st.just("/"), "merge_patch": st.just({"title": "x"})},
        "document_delete": common,
        "document_undelete": {"doc_id": doc},
        "document_purge": {"doc_id": doc},
        "document_move_node": {**common, "from_path": st.just("/title"), "to_path": st.just("/subtitle")},
    }

    def arguments(tool: str) -> st.SearchStrategy[Any]:
        fields = by_tool.get(tool, {"doc_id": doc})
        return st.fixed_dictionaries(fields)

    return arguments


@st.composite
def headers(draw: st.DrawFn, session: str) -> dict[str, str]:
    era = draw(st.sampled_from(["modern", "session", "no session", "unknown version"]))
    if era == "modern":
        method = draw(st.sampled_from(["tools/call", *METHODS]))
        named = {"mcp-name": draw(st.sampled_from([*WRITE_TOOLS, *sorted(READ_TOOLS)]))} if draw(st.booleans()) else {}
        return {"mcp-protocol-version": MODERN, "mcp-method": method, **named}
    if era == "session":
        return {"mcp-protocol-version": LEGACY, "mcp-session-id": session}
    if era == "unknown version":
        version = draw(st.sampled_from(["1999-01-01", "", "2025-11-25,2026-07-28", "2026-07-28x"]))
        return {"mcp-protocol-version": version}
    return {}


PURGE_HEADERS = {"mcp-protocol-version": MODERN, "mcp-method": "tools/call", "mcp-name": "document_purge"}
ATTACKS = [
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"document_purge","arguments":{"doc_id":"DOC"},'
    b'"_meta":{"x":NaN}}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"document_delete","arguments":{"doc_id":"DOC",'
    b'"version":2,"x":Infinity}}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"document_list","name":"document_purge",'
    b'"arguments":{"doc_id":"DOC"}}}',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call","params":{"name":"document_purge",'
    b'"arguments":{"doc_id":"DOC"}}}',
    b'[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","id":2,"method":"tools/call","params":'
    b'{"name":"document_purge","arguments":{"doc_id":"DOC"}}}]',
    b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"document_purge","arguments":{"doc_id":"DOC"}},'
    b'"_meta":-Infinity}',
]


@settings(max_examples=EXAMPLES, deadline=None, database=None, phases=[Phase.explicit, Phase.generate, Phase.shrink],
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(data=st.data())
@example(data=None)
def test_a_read_only_token_writes_nothing_at_mcp_whatever_it_sends(target: Target, data: st.DataObject | None) -> None:
    posts: list[tuple[bytes, dict[str, str]]]
    if data is None:  # the attacks found by hand, in both eras
        posts = [(attack.replace(b"DOC", doc_id.encode()), era)
                 for attack in ATTACKS for doc_id in target.documents
                 for era in ({"mcp-protocol-version": LEGACY, "mcp-session-id": target.session}, PURGE_HEADERS)]
    else:
        posts = [(data.draw(bodies(_arguments(target)), "body"), data.draw(headers(target.session), "headers"))]
    for body, era in posts:
        if era.get("mcp-protocol-version") == MODERN and body.startswith(b"{") and b'"params":{' in body:
            body = body.replace(b'"params":{', b'"params":{"_meta":' + json.dumps(META).encode() + b",", 1)
        answer = target.http.post(f"{target.server.url}/mcp", content=body,
                                  headers={**ACCEPT, **era, "authorization": f"Bearer {READER}"})
        event(f"status {answer.status_code}")
        assert answer.status_code < 500 or answer.status_code == 503, (body, answer.text)
        assert target.read_state() == target.state, (body, era, answer.status_code, answer.text[:500])
