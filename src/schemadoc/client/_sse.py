"""Server-Sent Events as the document event stream sends them (``text/event-stream``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from schemadoc.client.errors import ClientError, error_for
from schemadoc.client.models import JournalEntryBody

__all__ = ["Event", "EventStream"]


@dataclass(frozen=True)
class Event:
    """One event: ``event`` is ``version`` (``data`` the journal entry, ``id`` the version), ``purged`` (``data``
    the purge result; the stream ends) or ``error`` (``data`` the error object; the stream ends)."""

    event: str
    data: Any
    id: str | None = None

    @property
    def version(self) -> int | None:
        return int(self.id) if self.id is not None and self.id.isdigit() else None

    def error(self) -> ClientError | None:
        """The exception an ``error`` event stands for (its data is the error object), else ``None``."""
        if self.event != "error":
            return None
        status = int(self.data.get("error", {}).get("category", 500)) if isinstance(self.data, dict) else 500
        return error_for(status, self.data)

    @property
    def entry(self) -> JournalEntryBody | None:
        """A version event's journal entry (its ``version``, ``op``, ``patch``, ``at``, ``info``)."""
        return JournalEntryBody.model_validate(self.data) if self.event == "version" else None


@dataclass
class EventStream:
    """One document's event stream across reconnections, apart from the transport that reads it: what the next
    connection asks for (resuming after the last event seen), the event each blank line ends, and whether a
    dropped connection is tried again (up to ``max_retries`` failures in a row)."""

    since: int | None
    last_event_id: str | None
    max_retries: int
    reconnect: bool = True
    failures: int = 0
    ended: bool = False
    dropped: bool = False
    """The server ended this connection with a resumable error (it stops, or this reader fell behind): the next
    connection resumes after the last version it delivered."""
    _event: str = "message"
    _data: list[str] = field(default_factory=list)
    _id: str | None = None

    def connect(self) -> tuple[dict[str, Any], dict[str, str]]:
        """The query and the headers of the next connection."""
        self._event, self._data, self._id = "message", [], None
        self.dropped = False
        headers = {"Last-Event-ID": self.last_event_id} if self.last_event_id else {}
        query = {"since": self.since} if self.last_event_id is None and self.since is not None else {}
        return query, headers

    def feed(self, line: str) -> Event | None:
        """The event a line ends, if any; an ``error`` event is raised. After ``purged`` the stream has ``ended``."""
        if line == "":
            return self._dispatch()
        if line.startswith(":"):  # a comment: keep-alive
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            self._id = value
        return None

    def _dispatch(self) -> Event | None:
        text = "\n".join(self._data)
        event = Event(self._event, _json_or_text(text), self._id) if self._data else None
        self._event, self._data, self._id = "message", [], None
        if event is None:
            return None
        self.failures = 0
        error = event.error()
        if error is not None:
            last = _resume_after(event.data) if self.reconnect else None
            if last is None:
                raise error
            # shutting-down or subscriber-too-slow: nothing was lost; resume after the last version delivered
            self.last_event_id, self.dropped = str(last), True
            return None
        if event.id is not None:
            self.last_event_id = event.id
        self.ended = event.event == "purged"
        return event

    def retry(self) -> bool:
        """Whether to connect again after a dropped connection."""
        self.failures += 1
        return self.failures <= self.max_retries


RESUMABLE = frozenset({"shutting-down", "subscriber-too-slow"})
"""The codes of ``error`` events that end a connection, not the stream: the server stops (another, or the restarted
one, answers the next connection) or the reader fell behind (it reads the rest on the next connection)."""


def _resume_after(data: Any) -> int | None:
    """The version to resume after when ``data`` (an ``error`` event's) is a resumable error naming one."""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict) or error.get("code") not in RESUMABLE:
        return None
    details = error.get("details")
    last = details.get("last_version") if isinstance(details, dict) else None
    return last if isinstance(last, int) and not isinstance(last, bool) and last >= 0 else None


def _json_or_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
