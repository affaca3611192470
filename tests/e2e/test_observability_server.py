"""What a real ``schemadoc serve`` tells the people who run it: ``/metrics`` (parsed with prometheus-client's own
parser) after a known workload at both doors, request ids in headers, error bodies and the one JSON log line of each
request, and who may scrape."""

from __future__ import annotations

import json
import random
import re
import string
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from http_server import Server, tokens_file
from prometheus_client.parser import text_string_to_metric_families

pytestmark = pytest.mark.timeout(180)

WRITER = "observe-writer-0123456789abcdef"
READER = "observe-reader-0123456789abcdef"
MODERN = {"mcp-protocol-version": "2026-07-28", "accept": "application/json, text/event-stream",
          "content-type": "application/json"}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
MISSING = "01ARZ3NDEKTSV4RRFFQ69G5FAV"
GENERATED = re.compile(r"[0-9a-f]{32}")


def _bearer(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


def _tool(server: Server, name: str, arguments: dict[str, Any], token: str | None = None,
          headers: dict[str, str] | None = None) -> tuple[httpx.Response, dict[str, Any]]:
    """A tools/call over MCP (the stateless era); the answer and its tool result."""
    body = {"jsonrpc": "2.0", "id": 7, "method": "tools/call",
            "params": {"name": name, "arguments": arguments, "_meta": META}}
    sent = {**MODERN, "mcp-method": "tools/call", "mcp-name": name, **_bearer(token), **(headers or {})}
    answer = httpx.post(f"{server.url}/mcp", content=orjson.dumps(body), headers=sent, timeout=60)
    assert answer.status_code == 200, answer.text[:500]
    text = answer.text
    data = text.split("data: ", 1)[1] if text.startswith("event:") else text
    result: dict[str, Any] = orjson.loads(data)["result"]
    return answer, result


def _tool_error(result: dict[str, Any]) -> dict[str, Any]:
    assert result["isError"] is True, result
    error: dict[str, Any] = orjson.loads(result["content"][0]["text"])["error"]
    return error


def _samples(server: Server, token: str | None = None) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    answer = httpx.get(f"{server.url}/metrics", headers=_bearer(token), timeout=30)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"].startswith("text/plain; version=")
    return {(sample.name, tuple(sorted(sample.labels.items()))): sample.value
            for family in text_string_to_metric_families(answer.text) for sample in family.samples}


def _value(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], name: str, **labels: str) -> float:
    return samples.get((name, tuple(sorted(labels.items()))), 0.0)


def _requests(samples: dict[tuple[str, tuple[tuple[str, str], ...]], float], door: str, operation: str, status: str,
              code: str = "") -> float:
    return _value(samples, "schemadoc_requests_total", door=door, operation=operation, status=status, code=code)


def _log_records(server: Server) -> list[dict[str, Any]]:
    """Every line of the server's log as JSON (each line must be one JSON object)."""
    return [json.loads(line) for line in server.stderr.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("observe")
    tokens = tokens_file(root, {"name": "writer", "token": WRITER, "access": "read-write"},
                         {"name": "reader", "token": READER, "access": "read-only"})
    with Server(root / "data", root / "logs",
                extra_args=("--tokens-file", str(tokens), "--log-format", "json")) as running:
        yield running


@pytest.fixture(scope="module")
def doc_id(server: Server) -> str:
    answer = httpx.post(f"{server.url}/api/v1/documents", headers=_bearer(WRITER), timeout=30)
    assert answer.status_code == 201, answer.text
    return str(answer.json()["doc_id"])


def test_metrics_count_a_known_workload_at_both_doors_exactly(tmp_path: Path) -> None:
    with Server(tmp_path / "data", tmp_path / "logs", extra_args=("--log-format", "json")) as server:
        api = f"{server.url}/api/v1"
        created = httpx.post(f"{api}/documents", timeout=30)
        assert created.status_code == 201
        doc = created.json()["doc_id"]
        for _ in range(3):
            assert httpx.get(f"{api}/documents/{doc}", timeout=30).status_code == 200
        for _ in range(2):
            assert httpx.get(f"{api}/documents/{MISSING}", timeout=30).status_code == 404
        # refused: the title too short (min-length), twice; a wrong type once; a dry run that would pass
        for _ in range(2):
            refused = httpx.put(f"{api}/documents/{doc}", params={"path": "/title"},
                                json={"node_data": "", "version": 1}, timeout=30)
            assert refused.status_code == 422 and refused.json()["error"]["code"] == "validation-failed"
        refused = httpx.put(f"{api}/documents/{doc}", params={"path": "/title"}, json={"node_data": 5, "version": 1},
                            timeout=30)
        assert refused.status_code == 422
        dry = httpx.put(f"{api}/documents/{doc}", params={"path": "/title", "dry_run": "true"},
                        json={"node_data": "Dry", "version": 1}, timeout=30)
        assert dry.status_code == 200, dry.text
        written = httpx.put(f"{api}/documents/{doc}", params={"path": "/title"},
                            json={"node_data": "Metrics", "version": 1}, timeout=30)
        assert written.status_code == 200 and written.json()["version"] == 2
        # MCP: two reads, a missing document, a committed write, a refused one (pattern-failed)
        for _ in range(2):
            assert _tool(server, "document_read_node", {"doc_id": doc, "node_path": "/title"})[1]["isError"] is False
        _, result = _tool(server, "document_read_node", {"doc_id": MISSING, "node_path": "/"})
        assert _tool_error(result)["code"] == "document-not-found"
        _, result = _tool(server, "document_update_node",
                          {"doc_id": doc, "node_path": "/title", "node_data": "By MCP", "version": 2})
        assert result["isError"] is False and result["structuredContent"]["version"] == 3
        _, result = _tool(server, "document_update_node",
                          {"doc_id": doc, "node_path": "/metadata/language", "node_data": "English", "version": 3})
        assert _tool_error(result)["code"] == "validation-failed"

        samples = _samples(server)
        assert _requests(samples, "rest", "document_create", "201") == 1
        assert _requests(samples, "rest", "document_read_node", "200") == 3
        assert _requests(samples, "rest", "document_read_node", "404", "document-not-found") == 2
        assert _requests(samples, "rest", "document_update_node", "422", "validation-failed") == 3
        assert _requests(samples, "rest", "document_update_node", "200") == 2  # the dry run and the write
        assert _requests(samples, "mcp", "document_read_node", "200") == 2
        assert _requests(samples, "mcp", "document_read_node", "200", "document-not-found") == 1
        assert _requests(samples, "mcp", "document_update_node", "200") == 1
        assert _requests(samples, "mcp", "document_update_node", "200", "validation-failed") == 1
        writes = {labels: value for (name, labels), value in samples.items() if name == "schemadoc_writes_total"}
        assert writes == {(("operation", "document_create"), ("outcome", "committed")): 1,
                          (("operation", "document_update_node"), ("outcome", "committed")): 2,
                          (("operation", "document_update_node"), ("outcome", "dry_run")): 1,
                          (("operation", "document_update_node"), ("outcome", "refused")): 4}
        violations = {labels: value for (name, labels), value in samples.items()
                      if name == "schemadoc_write_violations_total"}
        assert violations == {(("code", "min-length"),): 2, (("code", "type-mismatch"),): 1,
                              (("code", "pattern-failed"),): 1}
        assert _value(samples, "schemadoc_request_duration_seconds_count", door="rest",
                      operation="document_read_node") == 5
        assert _value(samples, "schemadoc_request_duration_seconds_count", door="mcp",
                      operation="document_update_node") == 2
        assert _value(samples, "schemadoc_documents") == 1
        assert _value(samples, "schemadoc_memory_documents") == 1
        assert 0 < _value(samples, "schemadoc_memory_used_bytes") <= _value(samples, "schemadoc_memory_budget_bytes")
        assert _value(samples, "schemadoc_snapshot_lag_versions") == 2  # the two writes, not yet snapshotted
        assert _value(samples, "schemadoc_snapshot_lag_bytes") > 0
        assert _value(samples, "schemadoc_subscribers") == 0
        assert _value(samples, "process_resident_memory_bytes") > 0
        assert ("python_info", ()) not in samples  # the platform collector labels it
        assert not any(name == "schemadoc_worker_info" for name, _ in samples)  # one server: no worker named
        assert any(name == "python_info" for name, _ in samples)


def test_unknown_paths_and_tool_names_create_no_new_series(server: Server) -> None:
    rng = random.Random(20261127)

    def junk() -> str:
        return "".join(rng.choice(string.ascii_letters + string.digits + "-_") for _ in range(rng.randint(1, 40)))

    def hostile_round() -> None:
        for _ in range(15):
            assert httpx.get(f"{server.url}/{junk()}/{junk()}", headers=_bearer(READER), timeout=30).status_code == 404
            _, result = _tool(server, junk(), {"doc_id": junk()}, token=WRITER)
            assert _tool_error(result)["code"] == "invalid-request"

    hostile_round()  # their one series each (operation "other") exist from here on
    _samples(server, READER)  # and the scrapes' own
    before = set(_samples(server, READER))
    hostile_round()
    after = set(_samples(server, READER))
    assert after == before
    assert any(dict(labels).get("operation") == "other" for name, labels in after
               if name == "schemadoc_requests_total")


def test_any_token_may_scrape_and_none_may_not(server: Server) -> None:
    assert httpx.get(f"{server.url}/metrics", headers=_bearer(READER), timeout=30).status_code == 200
    assert httpx.get(f"{server.url}/metrics", headers=_bearer(WRITER), timeout=30).status_code == 200
    refused = httpx.get(f"{server.url}/metrics", timeout=30)
    assert refused.status_code == 401 and refused.json()["error"]["code"] == "token-missing"
    wrong = httpx.get(f"{server.url}/metrics", headers=_bearer("not-a-token-0123456789"), timeout=30)
    assert wrong.status_code == 401 and wrong.json()["error"]["code"] == "token-invalid"


def test_metrics_off_is_no_route_and_nothing_counted(tmp_path: Path) -> None:
    with Server(tmp_path / "data", tmp_path / "logs", settings={"METRICS": "false"}) as server:
        answer = httpx.get(f"{server.url}/metrics", timeout=30)
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "route-not-found"
        assert "x-request-id" in answer.headers  # the request log works all the same


def _lines_with(server: Server, request_id: str) -> list[dict[str, Any]]:
    """The log records naming ``request_id``, once the request's line is there (it is written as the answer ends,
    which the client may see first)."""
    deadline = time.monotonic() + 10
    while True:
        records = [record for record in _log_records(server) if request_id in json.dumps(record)]
        if any(record["logger"] == "schemadoc.request" for record in records) or time.monotonic() > deadline:
            time.sleep(0.2)  # a second line would come at once
            return [record for record in _log_records(server) if request_id in json.dumps(record)]
        time.sleep(0.05)


def test_a_rest_request_id_is_in_the_header_the_error_body_and_one_log_line(server: Server) -> None:
    sent = "rest-req-" + "".join(random.choices(string.ascii_lowercase, k=12))
    answer = httpx.get(f"{server.url}/api/v1/documents/{MISSING}", headers={**_bearer(READER), "x-request-id": sent},
                       timeout=30)
    assert answer.status_code == 404
    assert answer.headers["x-request-id"] == sent
    assert answer.json()["error"]["request_id"] == sent
    lines = _lines_with(server, sent)
    assert len(lines) == 1, lines
    line = lines[0]
    assert line["request_id"] == sent and line["logger"] == "schemadoc.request" and line["level"] == "INFO"
    assert (line["door"], line["operation"], line["status"], line["code"]) == (
        "rest", "document_read_node", "404", "document-not-found")
    assert line["doc_id"] == MISSING and line["token"] == "reader" and line["duration_ms"] >= 0


def test_an_mcp_request_id_is_in_the_header_the_tool_error_and_the_line_that_names_the_write(
        server: Server, doc_id: str) -> None:
    sent = "mcp-req-" + "".join(random.choices(string.ascii_lowercase, k=12))
    answer, result = _tool(server, "document_read_node", {"doc_id": MISSING, "node_path": "/"}, token=WRITER,
                           headers={"x-request-id": sent})
    assert answer.headers["x-request-id"] == sent
    assert _tool_error(result)["request_id"] == sent
    lines = _lines_with(server, sent)
    assert len(lines) == 1, lines
    assert (lines[0]["door"], lines[0]["tool"], lines[0]["code"]) == ("mcp", "document_read_node",
                                                                      "document-not-found")
    current = httpx.get(f"{server.url}/api/v1/documents/{doc_id}", headers=_bearer(WRITER), timeout=30).json()
    write_id = sent + "-write"
    _, result = _tool(server, "document_update_node", {"doc_id": doc_id, "node_path": "/title", "node_data": "Traced",
                                                       "version": current["version"]},
                      token=WRITER, headers={"x-request-id": write_id})
    new_version = result["structuredContent"]["version"]
    assert new_version == current["version"] + 1
    lines = _lines_with(server, write_id)
    assert len(lines) == 1, lines
    assert (lines[0]["operation"], lines[0]["doc_id"], lines[0]["version"], lines[0]["token"]) == (
        "document_update_node", doc_id, new_version, "writer")


def test_a_request_id_is_generated_replaced_when_malformed_and_taken_from_traceparent(server: Server) -> None:
    url = f"{server.url}/api/v1/documents/{MISSING}"
    generated = httpx.get(url, headers=_bearer(READER), timeout=30)
    assert GENERATED.fullmatch(generated.headers["x-request-id"])
    assert generated.json()["error"]["request_id"] == generated.headers["x-request-id"]
    for malformed in ("x" * 129, "has space", "tab\there", "é-accent"):
        answer = httpx.get(url, headers={**_bearer(READER), "x-request-id": malformed.encode("utf-8")}, timeout=30)
        assert GENERATED.fullmatch(answer.headers["x-request-id"]), malformed
        assert answer.json()["error"]["request_id"] == answer.headers["x-request-id"]
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    traced = httpx.get(url, headers={**_bearer(READER), "traceparent": f"00-{trace}-00f067aa0ba902b7-01"}, timeout=30)
    assert traced.headers["x-request-id"] == trace and traced.json()["error"]["request_id"] == trace
    bad = httpx.get(url, headers={**_bearer(READER), "traceparent": f"00-{'0' * 32}-00f067aa0ba902b7-01"}, timeout=30)
    assert bad.headers["x-request-id"] != "0" * 32 and GENERATED.fullmatch(bad.headers["x-request-id"])
    both = httpx.get(url, headers={**_bearer(READER), "x-request-id": "mine",
                                   "traceparent": f"00-{trace}-00f067aa0ba902b7-01"}, timeout=30)
    assert both.headers["x-request-id"] == "mine"


def test_access_refusals_carry_the_request_id(server: Server) -> None:
    refused = httpx.get(f"{server.url}/api/v1/documents", headers={"x-request-id": "refused-1"}, timeout=30)
    assert refused.status_code == 401
    assert refused.headers["x-request-id"] == "refused-1" and refused.json()["error"]["request_id"] == "refused-1"
    lines = _lines_with(server, "refused-1")
    assert len(lines) == 1 and lines[0]["code"] == "token-missing" and "token" not in lines[0]
    unread = httpx.post(f"{server.url}/mcp", headers={**_bearer(WRITER), "x-request-id": "unread-1",
                                                      "content-type": "text/plain"}, content=b"{}", timeout=30)
    assert unread.status_code == 415 and unread.headers["x-request-id"] == "unread-1"
    assert unread.json()["error"]["data"]["error"]["request_id"] == "unread-1"  # a JSON-RPC error at /mcp


def test_the_json_log_holds_no_token_and_every_line_is_one_json_object(server: Server) -> None:
    httpx.get(f"{server.url}/api/v1/documents", params={"token": WRITER, "q": READER}, headers=_bearer(READER),
              timeout=30)
    httpx.get(f"{server.url}/{WRITER}/x%0aforged", headers=_bearer(READER), timeout=30)
    httpx.get(f"{server.url}/api/v1/documents", headers={"authorization": f"Bearer {WRITER}x"}, timeout=30)
    text = server.stderr
    assert WRITER not in text and READER not in text
    records = _log_records(server)  # every line parses: a forged line feed stays inside its record
    forged = [record for record in records if "forged" in record.get("path", "")]
    assert forged and all("\n" not in record["path"] for record in forged)
    assert any(record.get("path", "").startswith("/[token]/") for record in records)


def test_a_tool_call_in_a_session_of_the_earlier_era_is_tied_to_its_own_request(server: Server) -> None:
    headers = {**_bearer(WRITER), "accept": "application/json, text/event-stream", "content-type": "application/json"}
    opened = httpx.post(f"{server.url}/mcp", headers={**headers, "x-request-id": "legacy-open"}, timeout=30, json={
        "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "era", "version": "1"}}})
    assert opened.status_code == 200, opened.text
    headers.update({"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"})
    httpx.post(f"{server.url}/mcp", headers=headers, timeout=30,
               json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    answer = httpx.post(f"{server.url}/mcp", headers={**headers, "x-request-id": "legacy-call"}, timeout=30, json={
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "document_read_node", "arguments": {"doc_id": MISSING, "node_path": "/"}}})
    text = answer.text
    result = orjson.loads(text.split("data: ", 1)[1] if text.startswith("event:") else text)["result"]
    assert _tool_error(result)["request_id"] == "legacy-call"
    call, = _lines_with(server, "legacy-call")
    assert (call["operation"], call["code"], call["token"]) == ("document_read_node", "document-not-found", "writer")
    opening, = _lines_with(server, "legacy-open")
    assert opening["operation"] == "mcp-protocol" and "code" not in opening
