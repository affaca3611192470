"""OpenTelemetry spans of a real ``schemadoc serve``: with ``OTEL_TRACES_EXPORTER=console`` each span is one JSON
line on stdout, a write's request span is the child of the caller's ``traceparent`` and holds the operation, the
validation and the journal commit; without an exporter there is no span at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from http_server import Server, tokens_file

from schemadoc.interfaces.http.tracing import tracing_from_environment

pytestmark = pytest.mark.timeout(120)

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
SECRET = "tracing-writer-0123456789abcdef"
PARENT = "00f067aa0ba902b7"


def _spans(server: Server) -> list[dict[str, Any]]:
    return [json.loads(line) for line in server.stdout.splitlines() if line.startswith("{")]


def test_a_write_is_one_trace_under_the_callers_traceparent(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK (schemadoc[otel]) is not installed")
    server = Server(tmp_path / "data", tmp_path / "logs", settings={"OTEL_TRACES_EXPORTER": "console"})
    with server:
        api = f"{server.url}/api/v1"
        created = httpx.post(f"{api}/documents", timeout=30).json()
        written = httpx.put(f"{api}/documents/{created['doc_id']}", params={"path": "/title"},
                            json={"node_data": "Traced", "version": created["version"]},
                            headers={"traceparent": f"00-{TRACE}-{PARENT}-01"}, timeout=30)
        assert written.status_code == 200 and written.headers["x-request-id"] == TRACE
    spans = [span for span in _spans(server) if span["context"]["trace_id"] == f"0x{TRACE}"]
    by_name = {span["name"]: span for span in spans}
    assert set(by_name) == {"PUT document_update_node", "document_update_node", "validation", "journal commit"}
    request = by_name["PUT document_update_node"]
    assert request["parent_id"] == f"0x{PARENT}" and request["kind"] == "SpanKind.SERVER"
    assert request["attributes"]["schemadoc.request_id"] == TRACE
    assert request["attributes"]["schemadoc.doc_id"] == created["doc_id"]
    assert request["attributes"]["schemadoc.version"] == created["version"] + 1
    assert request["attributes"]["http.response.status_code"] == 200
    operation = by_name["document_update_node"]
    assert operation["parent_id"] == request["context"]["span_id"]
    for step in ("validation", "journal commit"):
        assert by_name[step]["parent_id"] == operation["context"]["span_id"], step
    others = [span for span in _spans(server) if span["context"]["trace_id"] != f"0x{TRACE}"]
    assert any(span["name"] == "POST document_create" for span in others)  # a trace of its own, no parent
    assert all(span["parent_id"] is None for span in others if span["kind"] == "SpanKind.SERVER")


def test_no_token_reaches_a_span_wherever_the_client_puts_it(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK (schemadoc[otel]) is not installed")
    tokens = tokens_file(tmp_path, {"name": "writer", "token": SECRET, "access": "read-write"})
    server = Server(tmp_path / "data", tmp_path / "logs", settings={"OTEL_TRACES_EXPORTER": "console"},
                    extra_args=("--tokens-file", str(tokens)))
    bearer = {"authorization": f"Bearer {SECRET}"}
    with server:
        api = f"{server.url}/api/v1"
        assert httpx.get(f"{api}/documents/{SECRET}", headers=bearer, timeout=30).status_code in (400, 404)
        assert httpx.get(f"{api}/documents", params={"token": SECRET}, headers={"x-request-id": SECRET},
                         timeout=30).status_code == 401
        assert httpx.get(f"{server.url}/{SECRET}", headers=bearer, timeout=30).status_code == 404
    spans = _spans(server)
    assert len([span for span in spans if span["kind"] == "SpanKind.SERVER"]) >= 4  # the health check's too
    assert SECRET not in server.stdout
    assert any("[token]" in json.dumps(span["attributes"]) for span in spans)


def test_without_an_exporter_there_is_no_span(tmp_path: Path) -> None:
    with Server(tmp_path / "data", tmp_path / "logs") as server:
        created = httpx.post(f"{server.url}/api/v1/documents", timeout=30)
        assert created.status_code == 201
    assert _spans(server) == []


def test_the_environment_decides_whether_there_is_tracing(caplog: pytest.LogCaptureFixture) -> None:
    assert tracing_from_environment({}) is None
    assert tracing_from_environment({"OTEL_TRACES_EXPORTER": "none",
                                     "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}) is None
    assert tracing_from_environment({"OTEL_TRACES_EXPORTER": "zipkin"}) is None
    assert "zipkin" in caplog.text
    pytest.importorskip("opentelemetry.sdk", reason="the OpenTelemetry SDK (schemadoc[otel]) is not installed")
    tracing = tracing_from_environment({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9"})
    assert tracing is not None  # an endpoint alone means OTLP
    tracing.close()
