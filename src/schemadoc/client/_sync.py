"""The synchronous client (:class:`Client`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import TypeVar

import httpx

from schemadoc.client import models as m
from schemadoc.client._operations import DEFAULT_URL, Operations, Request, auth_headers, body_of, document_path
from schemadoc.client._sse import Event, EventStream
from schemadoc.client.errors import VersionConflictError, error_for

__all__ = ["Client"]

T = TypeVar("T")


class Client(Operations):
    """A schemadoc server's REST API (``/api/v1``), one method per operation, typed results.

    Errors are raised as :class:`~schemadoc.client.ClientError` (``version-conflict`` as
    :class:`~schemadoc.client.VersionConflictError`) carrying the server's error object. A write's ``version``
    travels as ``If-Match``; every result carries the version to pass to the next write.

    ``base_url`` is the server (``http://127.0.0.1:8080``); ``token`` a bearer token when the server asks for one;
    ``http`` an ``httpx.Client`` of your own (its base URL is then used as is). Use it as a context manager, or
    call :meth:`close`.
    """

    def __init__(self, base_url: str = DEFAULT_URL, *, token: str | None = None, timeout: float = 30.0,
                 http: httpx.Client | None = None) -> None:
        self._owned = http is None
        self._http = http if http is not None else httpx.Client(base_url=base_url, timeout=timeout,
                                                                headers=auth_headers(token))

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owned:
            self._http.close()

    def _send(self, call: Request[T]) -> T:
        response = self._http.request(call.method, call.path, params=call.query, headers=call.headers,
                                      json=call.json)
        if response.status_code >= 400:
            raise error_for(response.status_code, body_of(response))
        return call.parse(body_of(response))

    def retry_on_conflict(self, doc_id: str, write: Callable[[m.ReadNodeResult], T], *, path: str = "/",
                          attempts: int = 5) -> T:
        """Read the node at ``path``, call ``write(read)`` (which writes against ``read.version``, usually from
        ``read.node_content``), and when that fails with ``version-conflict`` read again and call it again, at
        most ``attempts`` times; the last conflict is raised."""
        for attempt in range(attempts):
            read = self.read_node(doc_id, path)
            try:
                return write(read)
            except VersionConflictError:
                if attempt == attempts - 1:
                    raise
        raise ValueError("attempts must be at least 1")

    def iter_changes(self, *, since: int = 0, limit: int = 100, follow: bool = False,
                     poll_seconds: float = 1.0) -> Iterator[m.ChangeBody]:
        """Every change after the cursor ``since``, page after page. ``follow``: keep polling for new ones
        (every ``poll_seconds`` while there are none) instead of stopping at the end. Resume later from the
        last change's ``cursor``."""
        while True:
            page = self.changes(since=since, limit=limit)
            yield from page.changes
            since = page.next_cursor
            if not page.changes:
                if not follow:
                    return
                time.sleep(poll_seconds)

    def events(self, doc_id: str, *, since: int | None = None, last_event_id: str | None = None,
               reconnect: bool = True, retry_seconds: float = 1.0, max_retries: int = 5) -> Iterator[Event]:
        """The document's event stream: a ``version`` event per committed version after ``since`` (or after
        ``last_event_id``; neither: from now), then ``purged`` if it is purged (the iteration ends there).
        A dropped connection is resumed with ``Last-Event-ID`` (nothing missed, nothing twice), up to
        ``max_retries`` failures in a row; an ``error`` event is raised as :class:`ClientError`."""
        stream = EventStream(since, last_event_id, max_retries)
        timeout = httpx.Timeout(self._http.timeout.connect, read=None)
        while True:
            query, headers = stream.connect()
            try:
                with self._http.stream("GET", document_path(doc_id, "/events"), params=query, headers=headers,
                                       timeout=timeout) as response:
                    if response.status_code >= 400:
                        response.read()
                        raise error_for(response.status_code, body_of(response))
                    for line in response.iter_lines():
                        event = stream.feed(line)
                        if event is not None:
                            yield event
                        if stream.ended:
                            return
            except httpx.TransportError:
                if not reconnect or not stream.retry():
                    raise
            else:
                if not reconnect:
                    return
            time.sleep(retry_seconds)
