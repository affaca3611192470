"""Server-Sent Events as the document event stream sends them (``text/event-stream``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from schemadoc.client.errors import ClientError, error_for
from schemadoc.client.models import JournalEntryBody

__all__ = ["Event", "EventParser"]


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
class EventParser:
    """Feed it the stream's lines; it returns an :class:`Event` at each blank line that ends one."""

    _event: str = "message"
    _data: list[str] = field(default_factory=list)
    _id: str | None = None

    def feed(self, line: str) -> Event | None:
        if line == "":
            if not self._data:
                self._event, self._id = "message", None
                return None
            text = "\n".join(self._data)
            try:
                data: Any = json.loads(text)
            except ValueError:
                data = text
            event = Event(self._event, data, self._id)
            self._event, self._data, self._id = "message", [], None
            return event
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
