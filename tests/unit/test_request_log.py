"""The request log and request ids without a server process: the slow-request warning (with a clock the test turns),
the JSON log format's escaping and redaction, the request id rule (Hypothesis), and the line of an MCP tool call over
stdio."""

from __future__ import annotations

import json
import logging
import re
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.types import Receive, Scope, Send

from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.http.logs import JsonLogFormatter, LogFormatter, TokenSecrets
from schemadoc.interfaces.http.request_context import CURRENT, RequestRecord, error_object, request_id_of
from schemadoc.interfaces.http.request_log import RequestObserver
from schemadoc.interfaces.mcp_door.server import build_mcp_server
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.storage.memory import MemoryDocumentStore

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
SECRET = "unit-secret-token-0123456789abcdef"
PRINTABLE_ID = re.compile(r"[\x21-\x7e]{1,128}")


class Clock:
    """A clock that moves only when told: each reading returns the next of ``readings``."""

    def __init__(self, *readings: float) -> None:
        self.readings = list(readings)

    def __call__(self) -> float:
        return self.readings.pop(0)


async def _answer_404(scope: Scope, receive: Receive, send: Send) -> None:
    error = SchemaDocError("document-not-found", "No such document.", {"doc_id": "x"})
    body = orjson.dumps(error_object(error))
    await send({"type": "http.response.start", "status": 404, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})


def _run(observer: RequestObserver, headers: list[tuple[bytes, bytes]] | None = None) -> list[dict[str, Any]]:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Any) -> None:
        sent.append(message)

    scope = {"type": "http", "method": "GET", "path": "/api/v1/documents/x", "query_string": b"path=%2Ftitle",
             "headers": headers or [], "root_path": ""}
    anyio.run(observer, scope, receive, send)
    return sent


def _lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if record.name == "schemadoc.request"]


@pytest.mark.parametrize(("threshold", "seconds", "level"), [
    (1, 0.0015, logging.WARNING), (1, 0.0009, logging.INFO), (1000, 1.0005, logging.WARNING),
    (1000, 0.999, logging.INFO), (0, 3600.0, logging.INFO)])
def test_a_request_slower_than_slow_request_ms_is_one_warning(caplog: pytest.LogCaptureFixture, threshold: int,
                                                              seconds: float, level: int) -> None:
    caplog.set_level(logging.INFO, logger="schemadoc.request")
    counted: list[tuple[RequestRecord, float]] = []
    observer = RequestObserver(_answer_404, slow_request_ms=threshold, clock=Clock(100.0, 100.0 + seconds),
                               on_request=lambda record, took: counted.append((record, took)))
    sent = _run(observer)
    lines = _lines(caplog)
    assert len(lines) == 1
    assert lines[0].levelno == level
    fields = lines[0].request  # type: ignore[attr-defined]
    assert fields.get("slow", False) is (level == logging.WARNING)
    assert fields["duration_ms"] == pytest.approx(seconds * 1000)
    assert fields["status"] == "404" and fields["code"] == "document-not-found"
    assert fields["path"] == "/api/v1/documents/x?path=%2Ftitle"
    assert len(counted) == 1 and counted[0][1] == pytest.approx(seconds)
    header = dict(sent[0]["headers"])[b"x-request-id"].decode()
    assert json.loads(sent[1]["body"])["error"]["request_id"] == header == fields["request_id"]


def test_the_request_id_sent_is_the_one_answered_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="schemadoc.request")
    sent = _run(RequestObserver(_answer_404, slow_request_ms=0), [(b"x-request-id", b"abc-42")])
    assert dict(sent[0]["headers"])[b"x-request-id"] == b"abc-42"
    assert [line.request["request_id"] for line in _lines(caplog)] == ["abc-42"]  # type: ignore[attr-defined]


@given(st.binary(max_size=200))
def test_a_request_id_is_always_1_to_128_printable_characters(sent: bytes) -> None:
    chosen = request_id_of([(b"x-request-id", sent)])
    assert PRINTABLE_ID.fullmatch(chosen)
    if PRINTABLE_ID.fullmatch(sent.strip().decode("latin-1")):
        assert chosen == sent.strip().decode("ascii")


@given(st.from_regex(r"[0-9a-f]{32}", fullmatch=True), st.from_regex(r"[0-9a-f]{16}", fullmatch=True))
def test_a_traceparent_gives_its_trace_id(trace: str, parent: str) -> None:
    chosen = request_id_of([(b"traceparent", f"00-{trace}-{parent}-01".encode())])
    assert chosen == trace or (trace == "0" * 32 and chosen != trace)


def _format(formatter: logging.Formatter, message: str, *args: Any, exc: bool = False) -> str:
    record = logging.LogRecord("schemadoc.test", logging.ERROR, __file__, 1, message, args, None)
    if exc:
        try:
            raise ValueError(f"failed with {SECRET}")
        except ValueError:
            import sys
            record.exc_info = sys.exc_info()
    return formatter.format(record)


def test_the_json_format_escapes_and_redacts_as_the_text_format_does(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.json"
    tokens.write_text(json.dumps({"tokens": [{"name": "n", "token": SECRET, "access": "read-write"}]}))
    secrets = TokenSecrets(tokens)
    for formatter in (JsonLogFormatter(secrets), LogFormatter(secrets)):
        hostile = _format(formatter, "GET %s from %s\u2028%s", f"/x/{SECRET}?access_token=v4lue\r\nFORGED",
                          f"Bearer {'b' * 20}", "\x1b[31m", exc=True)
        assert SECRET not in hostile and "v4lue" not in hostile and "b" * 20 not in hostile
        assert "\x1b" not in hostile and "\u2028" not in hostile and "\r" not in hostile
        if isinstance(formatter, JsonLogFormatter):
            assert "\n" not in hostile
            data = json.loads(hostile)
            assert data["logger"] == "schemadoc.test" and data["level"] == "ERROR"
            assert "[token]" in data["message"] and "access_token=[redacted]" in data["message"]
            assert "ValueError" in data["exception"] and "[token]" in data["exception"]
            assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", data["time"])


def test_every_record_logged_during_a_request_carries_its_id_in_json() -> None:
    formatter = JsonLogFormatter()
    assert "request_id" not in json.loads(_format(formatter, "outside"))
    reset = CURRENT.set(RequestRecord("inside-1", "rest"))
    try:
        assert json.loads(_format(formatter, "inside"))["request_id"] == "inside-1"
    finally:
        CURRENT.reset(reset)


def test_an_mcp_tool_call_over_stdio_is_one_line_with_its_own_request_id(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    service = DocumentService(load_schema(BOOK_SCHEMA), MemoryDocumentStore())
    service.open()
    server = build_mcp_server(service, slow_request_ms=0)

    async def calls() -> tuple[Any, Any]:
        created = await server.call_tool("document_create", {})
        missing = await server.call_tool("document_read_node", {"doc_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV",
                                                                "node_path": "/"})
        return created, missing

    created, missing = anyio.run(calls)
    lines = _lines(caplog)
    assert len(lines) == 2
    first, second = (line.request for line in lines)  # type: ignore[attr-defined]
    doc_id = created.structured_content["doc_id"]
    assert (first["door"], first["operation"], first["doc_id"], first["version"], first["status"]) == (
        "stdio", "document_create", doc_id, 1, "ok")
    error = orjson.loads(missing.content[0].text)["error"]
    assert (second["status"], second["code"], second["request_id"]) == ("error", "document-not-found",
                                                                        error["request_id"])
    assert first["request_id"] != second["request_id"]
    assert not [record for record in caplog.records if record.levelno >= logging.INFO
                and record.name != "schemadoc.request" and "tool" in record.getMessage()]


def test_a_lone_surrogate_in_a_record_still_makes_one_json_line() -> None:
    line = _format(JsonLogFormatter(), "odd %s", "\ud800 value")
    assert "\n" not in line and json.loads(line)["message"] == "odd \ud800 value"
