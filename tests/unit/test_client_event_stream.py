"""The client's event stream (``schemadoc.client._sse.EventStream``): an ``error`` event that ends a connection but
not the stream (``shutting-down``, ``subscriber-too-slow``, both naming ``details.last_version``) is resumed after
that version; any other error event is raised, and so are those two when the caller asked for no reconnection."""

from __future__ import annotations

import json
from typing import Any

import pytest

from schemadoc.client._sse import EventStream
from schemadoc.client.errors import ClientError


def _feed(stream: EventStream, event: str, data: Any, event_id: str | None = None) -> Any:
    lines = [f"event: {event}", f"data: {json.dumps(data)}", *([f"id: {event_id}"] if event_id else []), ""]
    results = [stream.feed(line) for line in lines]
    return results[-1]


def _error(code: str, **details: Any) -> dict[str, Any]:
    return {"error": {"code": code, "category": "503", "message": "m", "details": details}}


@pytest.mark.parametrize("code", ["shutting-down", "subscriber-too-slow"])
def test_a_resumable_error_ends_the_connection_and_resumes_after_the_last_version_delivered(code: str) -> None:
    stream = EventStream(since=0, last_event_id=None, max_retries=3)
    assert _feed(stream, "version", {"version": 1}, "1").version == 1
    assert _feed(stream, "error", _error(code, last_version=7)) is None
    assert stream.dropped and not stream.ended
    query, headers = stream.connect()
    assert (query, headers, stream.dropped) == ({}, {"Last-Event-ID": "7"}, False)


@pytest.mark.parametrize("error", [_error("document-not-found"), _error("shutting-down"),
                                   _error("shutting-down", last_version="7"), _error("subscriber-too-slow",
                                                                                    last_version=-1)])
def test_other_errors_and_ones_naming_no_version_are_raised(error: dict[str, Any]) -> None:
    stream = EventStream(since=0, last_event_id=None, max_retries=3)
    with pytest.raises(ClientError) as raised:
        _feed(stream, "error", error)
    assert raised.value.code == error["error"]["code"]


def test_without_reconnection_a_resumable_error_is_raised_too() -> None:
    stream = EventStream(since=0, last_event_id=None, max_retries=3, reconnect=False)
    with pytest.raises(ClientError, match="shutting-down"):
        _feed(stream, "error", _error("shutting-down", last_version=2))
