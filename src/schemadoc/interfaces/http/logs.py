"""What reaches the log, whoever logs it (schemadoc, uvicorn, the MCP SDK, any library): one formatter and one
filter on the one handler :func:`schemadoc.interfaces.cli.common.configure_logging` installs.

- **A record's first line is the only line that starts at column 0.** Control characters (C0, DEL, C1, the
  Unicode line and paragraph separators and the bidirectional overrides) are escaped as ``\\xNN``, ``\\r``,
  ``\\n``, ``\\t``, ``\\uNNNN``: in the arguments of a record always, so a request's path or header can never
  start a line; in its message and traceback all but the line feed, so the server's own multi-line messages and
  tracebacks stay readable, and every line after a record's first is indented by two spaces. A message whose
  arguments bring a line feed is written on one line, its line feeds escaped too.
- **No secret.** Every query value in a URL or path (``/api?name=value`` becomes ``/api?name=[redacted]``; the
  names stay), every ``Bearer`` credential, and every token of the tokens file (its secret wherever it stands,
  percent-encoded or not; a token given only as a SHA-256 digest wherever it stands as a word between URL
  delimiters) is replaced before the line is written. Headers are never logged.
- **A client that went away is not an error.** A record carrying an exception that says the client hung up
  (:func:`client_gone`) is written at INFO, without its traceback, saying so.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote, unquote

import orjson

from schemadoc.interfaces.http.request_context import REQUEST_FIELDS, current_request_id

__all__ = ["FORMAT", "FORMATTERS", "ClientGoneFilter", "JsonLogFormatter", "LogFormatter", "LogHandler", "TokenSecrets",
           "client_gone",
           "escape_controls", "redact_queries", "safe_message"]

FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

_ESCAPED = "\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069"  # and C0 (below)
_CONTROLS = re.compile(f"[\x00-\x1f{_ESCAPED}]")
_CONTROLS_BUT_LF = re.compile(f"[\x00-\x09\x0b-\x1f{_ESCAPED}]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape_one(found: re.Match[str]) -> str:
    char = found.group()
    if char in _NAMED:
        return _NAMED[char]
    return f"\\x{ord(char):02x}" if ord(char) <= 0xff else f"\\u{ord(char):04x}"


def escape_controls(text: str, *, keep_newlines: bool = False) -> str:
    """``text`` with every control character escaped (line feeds kept when ``keep_newlines``)."""
    pattern = _CONTROLS_BUT_LF if keep_newlines else _CONTROLS
    return pattern.sub(_escape_one, text) if pattern.search(text) else text


REDACTED = "[redacted]"
TOKEN = "[token]"
# a "?" and the query that follows it (after a URL, a path or any request target: "*", "%2A"): whatever follows up
# to a space, a quote or a fragment; a "?" followed by a space (as in prose) starts none
_QUERY = re.compile(r"""\?([^\s"'#<>]+)""")
_NAME = re.compile(r"[A-Za-z0-9_.\-\[\]]{1,64}")
_BEARER = re.compile(r"(?i)\b(bearer)\s+[^\s\"',;]{16,}")


def _redacted_query(query: str) -> str:
    items: list[str] = []
    for item in query.split("&"):
        name, equals, _value = item.partition("=")
        if not item:
            items.append(item)
        elif equals and _NAME.fullmatch(name):
            items.append(f"{name}={REDACTED}")
        else:
            items.append(REDACTED)  # a bare value, or a name that may itself be a secret
    return "&".join(items)


def redact_queries(text: str) -> str:
    """``text`` with the value of every query parameter of every URL, path or word in it replaced by
    ``[redacted]`` (a question mark ending a word, as in prose, is left alone).

    Every value, not only those of names that look like credentials: the log cannot know every name a
    credential travels under (RFC 6750's ``access_token``, but also ``t``, ``sig``, a proxy's own), and the
    values of this server's own parameters (pointers, versions, cursors) are not what a log is read for.
    """
    if "?" not in text:
        return text
    return _QUERY.sub(lambda found: f"?{_redacted_query(found[1])}", text)


# the words a token given as a digest is looked for as: runs between whitespace, quotes and URL delimiters
_WORD = re.compile(r"""[^\s"'<>()\[\]{}/?&#,;:\\=]{16,}""")


class TokenSecrets:
    """The tokens of a tokens file, as the log hides them: their secrets, and the digests of those given as SHA-256.

    The file is read again whenever its size, time or inode changes; every token ever read stays hidden (a
    revoked token is still a secret). A file that does not parse adds nothing; it never stops the log.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._guard = threading.Lock()
        self._seen: tuple[int, int, int] | None = None
        self.secrets: frozenset[str] = frozenset()
        self.digests: frozenset[bytes] = frozenset()
        self._refresh()

    def _refresh(self) -> None:
        try:
            status = os.stat(self.path)
        except OSError:
            return
        signature = (status.st_mtime_ns, status.st_size, status.st_ino)
        if signature == self._seen:
            return
        with self._guard:
            secrets, digests = set(self.secrets), set(self.digests)
            try:
                entries = json.loads(self.path.read_bytes()).get("tokens")
            except (OSError, ValueError, AttributeError):
                entries = None
            for entry in entries if isinstance(entries, list) else ():
                secret = entry.get("token") if isinstance(entry, dict) else None
                digest = entry.get("sha256") if isinstance(entry, dict) else None
                if isinstance(secret, str) and secret:
                    secrets.update({secret, quote(secret, safe="/")})  # as written, and as uvicorn shows a path
                elif isinstance(digest, str):
                    with contextlib.suppress(ValueError):
                        digests.add(bytes.fromhex(digest))
            self.secrets, self.digests, self._seen = frozenset(secrets), frozenset(digests), signature

    def hide(self, text: str) -> str:
        """``text`` with every token of the file replaced by ``[token]``."""
        self._refresh()
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, TOKEN)
        if self.digests:
            text = _WORD.sub(self._hide_word, text)
        return text

    def _hide_word(self, found: re.Match[str]) -> str:
        word = found.group()
        for candidate in (word, word.rstrip(".")):  # a word may end a sentence
            for form in (candidate, unquote(candidate)) if "%" in candidate else (candidate,):
                if hashlib.sha256(form.encode("utf-8", "surrogateescape")).digest() in self.digests:
                    return TOKEN + word[len(candidate):]
        return word


def safe_message(record: logging.LogRecord) -> str:
    """The record's message with its arguments, control characters escaped: its own line breaks stay, unless an
    argument brought one too (then the message is one line)."""
    message = record.getMessage()
    if _CONTROLS.search(message) is None:
        return message  # the common case: nothing to escape, not even a line feed
    own_lines = record.msg.count("\n") if isinstance(record.msg, str) else 0
    return escape_controls(message, keep_newlines=message.count("\n") == own_lines)


class LogFormatter(logging.Formatter):
    """``FORMAT``, each record made safe to write (the module docstring): escaped, indented, redacted."""

    def __init__(self, tokens: TokenSecrets | None = None) -> None:
        super().__init__(FORMAT)
        self.tokens = tokens

    def format(self, record: logging.LogRecord) -> str:
        record.message = self.redact(safe_message(record))
        record.asctime = self.formatTime(record, self.datefmt)
        text = self.formatMessage(record)
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            text += "\n" + self.redact(escape_controls(record.exc_text, keep_newlines=True))
        if record.stack_info:
            text += "\n" + self.redact(escape_controls(self.formatStack(record.stack_info), keep_newlines=True))
        return text.replace("\n", "\n  ") if "\n" in text else text

    def redact(self, text: str) -> str:
        """``text`` without query values, bearer credentials and the tokens of the tokens file."""
        text = redact_queries(text)
        if "earer" in text or "EARER" in text:
            text = _BEARER.sub(rf"\1 {REDACTED}", text)
        return self.tokens.hide(text) if self.tokens is not None else text


class JsonLogFormatter(LogFormatter):
    """One JSON object per line (``--log-format json``), made safe as :class:`LogFormatter` makes a line: every
    string escaped and redacted the same way.

    Members: ``time`` (UTC, ISO 8601 with milliseconds), ``level``, ``logger``, ``message``; the request line's
    members (``request_id``, ``door``, ``operation``, ``status``, ... see docs/operations.md); ``request_id`` on every
    other record logged while a request is answered; ``exception`` with the traceback, if any.
    """

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname, "logger": self._clean(record.name),
            "message": self.redact(safe_message(record)),
        }
        fields = getattr(record, REQUEST_FIELDS, None)
        if isinstance(fields, dict):
            for name, value in fields.items():
                data[name] = self._clean(value) if isinstance(value, str) else value
        else:
            request_id = current_request_id()
            if request_id is not None:
                data["request_id"] = request_id
        if record.exc_info and not record.exc_text:
            record.exc_text = self.formatException(record.exc_info)
        if record.exc_text:
            data["exception"] = self.redact(escape_controls(record.exc_text, keep_newlines=True))
        if record.stack_info:
            data["stack"] = self.redact(escape_controls(self.formatStack(record.stack_info), keep_newlines=True))
        try:
            return orjson.dumps(data, default=str).decode()
        except TypeError:  # a lone surrogate (orjson refuses them): escaped, as JSON allows
            return json.dumps(data, default=str)

    def _clean(self, text: str) -> str:
        return self.redact(escape_controls(text))


FORMATTERS: dict[str, type[LogFormatter]] = {"text": LogFormatter, "json": JsonLogFormatter}
"""The formatter of each ``log_format``."""


class LogHandler(logging.StreamHandler[TextIO]):
    """A stream handler whose own failures are one line naming the logger and the exception, never the record:
    :class:`logging.Handler` would print the record's message and arguments as they are (a request's path, a
    token) and a traceback."""

    def handleError(self, record: logging.LogRecord) -> None:
        error = sys.exc_info()[1]
        with contextlib.suppress(Exception):  # the stream itself failed: nothing is left to tell
            self.stream.write(f"{self.formatter.formatTime(record) if self.formatter else record.created} ERROR "
                              f"schemadoc: a log record of {escape_controls(record.name)} could not be written "
                              f"({type(error).__name__})\n")
            self.flush()


def client_gone(error: BaseException, *, disconnected: bool = False) -> bool:
    """Whether ``error`` only says that the client went away (hung up, reset the connection, left a stream).

    Starlette's ``ClientDisconnect``, uvicorn's ``ClientDisconnected`` and the ``ConnectionError`` family
    (reset, broken pipe, aborted) always do; anyio's ``EndOfStream``, ``BrokenResourceError`` and
    ``ClosedResourceError`` (a stream whose other end went) only when ``disconnected`` (the request's
    client is known to have gone), else they may be a fault of the server. A group of exceptions says so
    when all its members do.
    """
    if isinstance(error, BaseExceptionGroup):
        return all(client_gone(member, disconnected=disconnected) for member in error.exceptions)
    if isinstance(error, ConnectionError):
        return True
    starlette = sys.modules.get("starlette.requests")
    if starlette is not None and isinstance(error, starlette.ClientDisconnect):
        return True
    uvicorn = sys.modules.get("uvicorn.protocols.utils")
    if uvicorn is not None and isinstance(error, uvicorn.ClientDisconnected):
        return True
    anyio = sys.modules.get("anyio")
    return disconnected and anyio is not None and isinstance(
        error, anyio.EndOfStream | anyio.BrokenResourceError | anyio.ClosedResourceError)


class ClientGoneFilter(logging.Filter):
    """A record whose exception says the client went away loses its traceback and says so; above INFO it becomes
    INFO (and is dropped when the log shows only warnings and errors)."""

    def __init__(self, level: int) -> None:
        super().__init__()
        self.level = level

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if error is None or not client_gone(error):
            return True
        if record.levelno > logging.INFO:
            if self.level > logging.INFO:
                return False
            record.levelno, record.levelname = logging.INFO, logging.getLevelName(logging.INFO)
        record.msg = f"{safe_message(record)} (the client went away: {type(error).__name__})"
        record.args = None
        record.exc_info, record.exc_text = None, None
        return True
