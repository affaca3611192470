"""What the log handler writes (``schemadoc.interfaces.http.logs``): one line per record whatever its arguments carry,
tracebacks readable and indented, no query value, bearer credential or token of the tokens file, and a client
that went away at INFO without a traceback; ``ErrorGuard`` answers nothing to a client that went away."""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from starlette.requests import ClientDisconnect
from starlette.types import Message, Receive, Scope, Send

from schemadoc.interfaces.cli.common import configure_logging
from schemadoc.interfaces.http.guards import ErrorGuard
from schemadoc.interfaces.http.logs import ClientGoneFilter, LogFormatter, TokenSecrets, client_gone, redact_queries

RECORD_START = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} [A-Z]+ ")
FORGED = "2026-01-01 00:00:00,000 INFO schemadoc.access: FORGED"


def _record(msg: str, *args: Any, level: int = logging.INFO, exc: BaseException | None = None,
            name: str = "test") -> logging.LogRecord:
    exc_info = (type(exc), exc, exc.__traceback__) if exc is not None else None
    return logging.LogRecord(name, level, __file__, 1, msg, args or None, exc_info)


def _raised(error: BaseException) -> BaseException:
    try:
        raise error
    except BaseException as caught:
        return caught


def _lines(text: str) -> list[str]:
    return text.split("\n")


@pytest.mark.parametrize("hostile", [
    "\r\n" + FORGED, "\n" + FORGED, "\r" + FORGED, "\x1b[31mred\x1b[0m", "\x1b]0;title\x07", "\x00\x08\x0b\x0c",
    "\x7f", "\x85" + FORGED, "\x9b31m", "\u2028" + FORGED, "\u202eevil", "\t",
], ids=["crlf", "lf", "cr", "csi", "osc", "c0", "del", "nel", "c1 csi", "line separator", "bidi", "tab"])
def test_an_argument_cannot_start_a_line_or_reach_the_terminal(hostile: str) -> None:
    text = LogFormatter().format(_record("refused %s: %s", f"/api/v1/x{hostile}y", "token-missing"))
    assert len(_lines(text)) == 1
    assert not re.search(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202e]", text), text
    assert text.endswith(": token-missing") and "/api/v1/x" in text


def test_escapes_are_shown_as_python_would_write_them() -> None:
    text = LogFormatter().format(_record("%s", "a\r\nb\tc\x1bd\x7fe\x85f\u2028g"))
    assert text.endswith(r"a\r\nb\tc\x1bd\x7fe\x85f\u2028g")


def test_an_argument_bringing_a_line_feed_makes_the_whole_message_one_line() -> None:
    text = LogFormatter().format(_record("first\nsecond %s", "\n" + FORGED))
    assert _lines(text) == [text]
    assert text.endswith(r"first\nsecond \n" + FORGED)


def test_the_servers_own_multi_line_messages_stay_readable_and_indented() -> None:
    text = LogFormatter().format(_record("WARNING: it will fail:\n  a.json /name [required]: missing\nlast",
                                         level=logging.WARNING))
    first, *rest = _lines(text)
    assert RECORD_START.match(first) and first.endswith("WARNING: it will fail:")
    assert rest == ["    a.json /name [required]: missing", "  last"]


def test_a_traceback_stays_multi_line_every_line_indented_its_controls_escaped() -> None:
    error = _raised(ValueError(f"bad path /x\n{FORGED}\x1b[2J"))
    text = LogFormatter().format(_record("unexpected error in %s", "GET /x", level=logging.ERROR, exc=error))
    first, *rest = _lines(text)
    assert RECORD_START.match(first)
    assert rest[0] == "  Traceback (most recent call last):"
    assert any(line.startswith("    File ") for line in rest)
    assert f"  {FORGED}\\x1b[2J" in rest
    assert all(line.startswith("  ") for line in rest)
    assert not any(RECORD_START.match(line) for line in rest)


@pytest.mark.parametrize(("logged", "shown"), [
    ('"GET /api/v1/documents?access_token=s3cret HTTP/1.1" 401',
     '"GET /api/v1/documents?access_token=[redacted] HTTP/1.1" 401'),
    ("GET /a?path=/title&version=3&dry_run", "GET /a?path=[redacted]&version=[redacted]&[redacted]"),
    ("GET /a?s3cr%2Bet=1&=x&&", "GET /a?[redacted]&[redacted]&&"),
    ("proxy https://user@example.com:8443/x/y?sig=abc#frag said no",
     "proxy https://user@example.com:8443/x/y?sig=[redacted]#frag said no"),
    ("url=/cb?code=xyz", "url=/cb?code=[redacted]"),
    ("is this a question? /a and HTTP/1.1?", "is this a question? /a and HTTP/1.1?"),
    ('"GET %2A?access_token=s3cret HTTP/1.1" 404', '"GET %2A?access_token=[redacted] HTTP/1.1" 404'),
    ("?token=s3cret at the start", "?token=[redacted] at the start"),
], ids=["access log", "every value", "names that are not names", "url", "after =", "prose", "any target", "start"])
def test_every_query_value_is_redacted_the_names_kept(logged: str, shown: str) -> None:
    assert redact_queries(logged) == shown


def test_a_bearer_credential_is_never_written() -> None:
    text = LogFormatter().format(_record("headers: %s", "{'authorization': 'Bearer abcdefghijklmnop0123'}"))
    assert "abcdefghijklmnop0123" not in text and "Bearer [redacted]" in text
    assert LogFormatter().format(_record("send a bearer token")).endswith("send a bearer token")


@pytest.fixture
def tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens.json"
    path.write_text(json.dumps({"tokens": [
        {"name": "plain", "token": "plain+secret/0123456789", "access": "read-write"},
        {"name": "hashed", "sha256": hashlib.sha256(b"hashed-secret-0123456789").hexdigest(), "access": "read-only"},
    ]}), encoding="utf-8")
    return path


@pytest.mark.parametrize("where", [
    "refused /api/v1/documents/{}: token-missing", '"GET /{}/api HTTP/1.1" 404', "x {} y", "/a/{}",
    "No endpoint at POST /mcp/{}.",
    '"GET /api/v1/{}?access_token={} HTTP/1.1" 401',
], ids=["path", "first segment", "word", "last segment", "end of a sentence", "path and query"])
@pytest.mark.parametrize(("secret", "shown"), [
    ("plain+secret/0123456789", "plain+secret/0123456789"),
    ("plain+secret/0123456789", "plain%2Bsecret/0123456789"),
    ("hashed-secret-0123456789", "hashed-secret-0123456789"),
    ("hashed-secret-0123456789", "hashed%2Dsecret-0123456789"),
], ids=["secret", "secret percent-encoded", "digest", "digest percent-encoded"])
def test_a_token_of_the_tokens_file_is_never_written(tokens_file: Path, where: str, secret: str,
                                                     shown: str) -> None:
    text = LogFormatter(TokenSecrets(tokens_file)).format(_record("%s", where.format(shown, shown)))
    assert shown not in text and secret not in text and "[token]" in text


def test_a_token_removed_from_the_file_stays_hidden_and_a_new_one_is_hidden_at_once(tokens_file: Path) -> None:
    formatter = LogFormatter(TokenSecrets(tokens_file))
    tokens_file.write_text(json.dumps({"tokens": [{"name": "new", "token": "brand-new-0123456789abcdef",
                                                   "access": "read-write"}, {"bad": True}]}), encoding="utf-8")
    text = formatter.format(_record("%s %s %s", "plain+secret/0123456789", "brand-new-0123456789abcdef",
                                    "hashed-secret-0123456789"))
    assert text.endswith("[token] [token] [token]")
    tokens_file.write_text("{not json", encoding="utf-8")
    assert formatter.format(_record("%s", "brand-new-0123456789abcdef")).endswith("[token]")


def test_a_client_that_went_away_is_told_apart_from_a_fault() -> None:
    assert client_gone(ClientDisconnect())
    assert client_gone(ConnectionResetError()) and client_gone(BrokenPipeError())
    assert client_gone(ExceptionGroup("tasks", [ClientDisconnect(), ConnectionResetError()]))
    assert not client_gone(ExceptionGroup("tasks", [ClientDisconnect(), ValueError()]))
    for error in (anyio.EndOfStream(), anyio.BrokenResourceError(), anyio.ClosedResourceError()):
        assert not client_gone(error)  # may be the server's own fault ...
        assert client_gone(error, disconnected=True)  # ... unless the client is known to have gone
    assert not client_gone(ValueError("boom"), disconnected=True)


def test_a_record_saying_the_client_went_away_is_one_info_line() -> None:
    record = _record("Error handling POST request %s", "/mcp", level=logging.ERROR, exc=_raised(ClientDisconnect()))
    assert ClientGoneFilter(logging.INFO).filter(record)
    text = LogFormatter().format(record)
    assert _lines(text) == [text] and " INFO test: " in text
    assert text.endswith("Error handling POST request /mcp (the client went away: ClientDisconnect)")
    quiet = _record("x", level=logging.ERROR, exc=_raised(ConnectionResetError()))
    assert not ClientGoneFilter(logging.WARNING).filter(quiet)  # --log-level warning: not shown at all
    detail = _record("stream ended", level=logging.DEBUG, exc=_raised(ExceptionGroup("tasks", [BrokenPipeError()])))
    assert ClientGoneFilter(logging.DEBUG).filter(detail)
    assert LogFormatter().format(detail).endswith(" DEBUG test: stream ended (the client went away: ExceptionGroup)")
    fault = _record("x", level=logging.ERROR, exc=_raised(ValueError("boom")))
    assert ClientGoneFilter(logging.INFO).filter(fault) and fault.levelno == logging.ERROR and fault.exc_info


@pytest.fixture
def root_logging() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:], root.level = handlers, level


@pytest.mark.usefixtures("root_logging")
@pytest.mark.parametrize("level", [logging.DEBUG, logging.INFO, logging.WARNING])
def test_configure_logging_keeps_the_level_and_installs_the_safe_handler(
        level: int, tokens_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    configure_logging(level, tokens_file)
    log = logging.getLogger("schemadoc.test")
    log.debug("debug line")
    log.info("info %s", "/x?access_token=hashed-secret-0123456789\r\nforged")
    log.warning("warning line")
    try:
        raise ClientDisconnect()
    except ClientDisconnect:
        log.exception("unexpected")
    lines = stderr.getvalue().splitlines()
    assert ("debug line" in lines[0]) == (level == logging.DEBUG)
    assert any("warning line" in line for line in lines)
    assert len(lines) == (4 if level == logging.DEBUG else 3 if level == logging.INFO else 1), lines
    assert "hashed-secret" not in stderr.getvalue() and "Traceback" not in stderr.getvalue()
    assert all(RECORD_START.match(line) for line in lines)


def _guarded(app: Any) -> ErrorGuard:
    return ErrorGuard(app)


async def _call(guard: ErrorGuard, messages: list[Message]) -> list[Message]:
    sent: list[Message] = []
    queue = list(messages)

    async def receive() -> Message:
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        sent.append(message)

    await guard({"type": "http", "method": "PUT", "path": "/api/v1/documents/x", "headers": []}, receive, send)
    return sent


def test_error_guard_answers_nothing_to_a_client_that_went_away(caplog: pytest.LogCaptureFixture) -> None:
    async def reads_body(scope: Scope, receive: Receive, send: Send) -> None:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnect()

    async def stream_broke(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()
        raise anyio.BrokenResourceError()

    caplog.set_level(logging.DEBUG, "schemadoc.http")
    assert anyio.run(_call, _guarded(reads_body), [{"type": "http.disconnect"}]) == []
    assert anyio.run(_call, _guarded(stream_broke), [{"type": "http.disconnect"}]) == []
    assert [(record.levelno, record.exc_info) for record in caplog.records] == [(logging.INFO, None)] * 2
    assert caplog.records[0].getMessage() == "PUT /api/v1/documents/x: the client went away (ClientDisconnect)"


def test_error_guard_still_answers_a_fault_with_internal_error(caplog: pytest.LogCaptureFixture) -> None:
    async def stream_broke(scope: Scope, receive: Receive, send: Send) -> None:
        await receive()  # the client is still there: a broken stream is the server's own fault
        raise anyio.BrokenResourceError()

    sent = anyio.run(_call, _guarded(stream_broke), [{"type": "http.request", "body": b"", "more_body": False}])
    assert sent[0]["status"] == 500 and b"internal-error" in sent[1]["body"]
    assert caplog.records[-1].levelno == logging.ERROR and caplog.records[-1].exc_info


@pytest.mark.usefixtures("root_logging")
def test_a_record_that_cannot_be_written_is_one_line_without_its_arguments(monkeypatch: pytest.MonkeyPatch) -> None:
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    configure_logging(logging.INFO)
    logging.getLogger("a.library").info("%d bytes from %s", "many", f"/x?access_token=s3cret\r\n{FORGED}")
    lines = stderr.getvalue().splitlines()
    assert len(lines) == 1 and RECORD_START.match(lines[0]), lines
    assert lines[0].endswith(" ERROR schemadoc: a log record of a.library could not be written (TypeError)")
