"""JSON bodies in and out of both HTTP doors: the strict parse of a request body (integers beyond 64 bits read
exactly, a clear refusal for what is not JSON or nests too deeply), the depth check, and the bytes of a result
or error body (orjson without copying the document content; the stdlib for what orjson cannot write).

The REST door reads its bodies with these (:mod:`schemadoc.interfaces.rest.wire`), and so does the one reading
of a message posted to ``/mcp`` (:class:`~schemadoc.interfaces.http.guards.McpReader`), so that both doors
accept and refuse the same JSON.
"""

from __future__ import annotations

import functools
import json
import math
from typing import Any

import orjson
from pydantic import BaseModel

from schemadoc.errors import SchemaDocError
from schemadoc.ops.limits import deeper_than

__all__ = ["READ_BODY", "check_depth", "dump_body", "parse_json"]


READ_BODY = "schemadoc.body"
"""The scope key under which the body limits leave the request body they read (it is replayed too), so that
the REST door does not read it a second time through Starlette's stream."""


# -- responses -------------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """A result model as plain JSON data, sharing (not copying) the document content it holds.

    A model's ``__dict__`` holds its fields in declaration order (its extra members apart), which is
    what ``model_fields`` would list, without pydantic's attribute machinery."""
    if isinstance(value, BaseModel):
        out = {name: _plain(member) if isinstance(member, (BaseModel, list)) else member
               for name, member in value.__dict__.items()}
        extra = value.__pydantic_extra__
        if extra:
            out.update(extra)
        return out
    if isinstance(value, list) and value and isinstance(value[0], BaseModel):
        return [_plain(item) for item in value]
    return value


def dump_body(content: Any) -> bytes:
    """JSON bytes of a result model or plain data (orjson; the stdlib for integers beyond 64 bits)."""
    data = _plain(content)
    try:
        return orjson.dumps(data)
    except TypeError:
        try:
            return json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
        except UnicodeEncodeError:  # a lone surrogate: escaped, as JSON allows
            return json.dumps(data, separators=(",", ":"), allow_nan=False).encode()


# -- requests ----------------------------------------------------------------------------------


def parse_json(raw: bytes, argument: str = "body") -> Any:
    """The JSON value of ``raw``: ``invalid-request`` when it is not JSON (or holds a number the server cannot
    represent), ``request-too-deep`` past orjson's limit."""
    exact = _DIGIT_RUN in raw.translate(_DIGITS)
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as error:
        if "depth" in str(error) or "recursion" in str(error):
            raise SchemaDocError("request-too-deep", f"The request {argument} is nested too deeply to parse.",
                                 {"argument": argument}) from None
        if not (exact and "infinity" in str(error)):  # orjson reads an integer of 309 digits and more as infinite
            raise SchemaDocError("invalid-request", f"The request {argument} is not valid JSON: {error}.",
                                 {"argument": argument, "reason": str(error)}) from None
    if exact:
        # orjson reads integers beyond 64 bits as floats; the stdlib keeps them exact, as MCP does
        try:
            value = json.loads(raw, parse_constant=_no_constant, parse_int=functools.partial(_exact_int, argument),
                               parse_float=functools.partial(_finite, argument))
        except RecursionError:
            raise SchemaDocError("request-too-deep", f"The request {argument} is nested too deeply to parse.",
                                 {"argument": argument}) from None
    return value


_LONGEST_INTEGER = 4300
"""The most digits an integer may have (Python's own limit on reading one from text)."""


def _exact_int(argument: str, text: str) -> int:
    digits = len(text) - text.startswith("-")
    if digits > _LONGEST_INTEGER:
        raise SchemaDocError("invalid-request", f"The request {argument} holds an integer of {digits:,} digits; the "
                                                f"server reads integers of at most {_LONGEST_INTEGER:,} digits.",
                             {"argument": argument, "reason": "integer too long", "digits": digits})
    return int(text)


def _finite(argument: str, text: str) -> float:
    number = float(text)
    if math.isinf(number):
        raise SchemaDocError("invalid-request", f"The request {argument} holds a number beyond the range of a double "
                                                f"({text[:40]}).", {"argument": argument, "reason": "number too large"})
    return number


_DIGITS = bytes(0x30 if 0x30 <= byte <= 0x39 else 0x20 for byte in range(256))
_DIGIT_RUN = b"0" * 20
"""Twenty digits in a row (a number orjson may have read approximately): every digit mapped to ``0``
and looked for as one substring, 9 ms on 10 MiB where the regular expression ``[0-9]{20,}`` took 84 ms."""


def _no_constant(name: str) -> Any:  # pragma: no cover - orjson already refused NaN and Infinity
    raise ValueError(f"{name} is not JSON")


def check_depth(value: Any, limit: int, argument: str, raw: bytes | None = None) -> None:
    """``request-too-deep`` when ``value`` nests containers more than ``limit`` levels deep.

    ``raw`` (the JSON text ``value`` came from) allows a fast pass: fewer brackets than the limit
    cannot nest deeper than it.
    """
    if raw is not None and raw.count(b"[") + raw.count(b"{") <= limit:
        return
    if deeper_than(value, limit):
        raise SchemaDocError("request-too-deep", f"The {argument} is nested more than {limit} levels deep.",
                             {"argument": argument, "max_json_depth": limit})
