"""The two clients, one per httpx transport: :class:`Client` and :class:`AsyncClient` (asyncio or anyio).

Both have every method of :class:`~schemadoc.client._operations.Operations`; what differs is only how a request
is sent, and the helpers that send several (re-reading on a conflict, walking the change feed, following the
event stream, whose resuming both share in :class:`~schemadoc.client._sse.EventStream`).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from typing import Any, TypeVar

import httpx

from schemadoc.client import models as m
from schemadoc.client._operations import AsyncOperations, Request, SyncOperations, document_path
from schemadoc.client._sse import Event, EventStream
from schemadoc.client.errors import ClientError, VersionConflictError, error_for

__all__ = ["AsyncClient", "Client"]

T = TypeVar("T")
DEFAULT_URL = "http://127.0.0.1:8080"


def auth_headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def body_of(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text


class Client(SyncOperations):
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
        ``max_retries`` failures in a row, and so is one the server ends with ``shutting-down`` (it stops) or
        ``subscriber-too-slow`` (this reader fell behind); any other ``error`` event is raised as
        :class:`ClientError`, and those two too when ``reconnect`` is false."""
        stream = EventStream(since, last_event_id, max_retries, reconnect)
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
                        if stream.dropped:
                            break
            except httpx.TransportError:
                if not reconnect or not stream.retry():
                    raise
            except ClientError as error:  # a server that is stopping answers 503 until it has stopped
                if not (reconnect and error.code == "shutting-down" and stream.retry()):
                    raise
            else:
                if not reconnect:
                    return
            time.sleep(retry_seconds)


class AsyncClient(AsyncOperations):
    """A schemadoc server's REST API (``/api/v1``) for asyncio (and anyio) code: :class:`~schemadoc.client.Client`'s
    methods, each awaited, with the same errors and versions.

    ``http`` is an ``httpx.AsyncClient`` of your own (its base URL is then used as is). Use it as an async context
    manager, or await :meth:`close`.
    """

    def __init__(self, base_url: str = DEFAULT_URL, *, token: str | None = None, timeout: float = 30.0,
                 http: httpx.AsyncClient | None = None) -> None:
        self._owned = http is None
        self._http = http if http is not None else httpx.AsyncClient(base_url=base_url, timeout=timeout,
                                                                     headers=auth_headers(token))

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        if self._owned:
            await self._http.aclose()

    async def _send(self, call: Request[T]) -> T:
        response = await self._http.request(call.method, call.path, params=call.query, headers=call.headers,
                                            json=call.json)
        if response.status_code >= 400:
            raise error_for(response.status_code, body_of(response))
        return call.parse(body_of(response))

    async def retry_on_conflict(self, doc_id: str, write: Callable[[m.ReadNodeResult], Awaitable[T]], *,
                                path: str = "/", attempts: int = 5) -> T:
        """:meth:`Client.retry_on_conflict <schemadoc.client.Client.retry_on_conflict>` with an awaited ``write``."""
        for attempt in range(attempts):
            read = await self.read_node(doc_id, path)
            try:
                return await write(read)
            except VersionConflictError:
                if attempt == attempts - 1:
                    raise
        raise ValueError("attempts must be at least 1")

    async def iter_changes(self, *, since: int = 0, limit: int = 100, follow: bool = False,
                           poll_seconds: float = 1.0) -> AsyncIterator[m.ChangeBody]:
        """:meth:`Client.iter_changes <schemadoc.client.Client.iter_changes>`, asynchronously."""
        while True:
            page = await self.changes(since=since, limit=limit)
            for change in page.changes:
                yield change
            since = page.next_cursor
            if not page.changes:
                if not follow:
                    return
                await asyncio.sleep(poll_seconds)

    async def events(self, doc_id: str, *, since: int | None = None, last_event_id: str | None = None,
                     reconnect: bool = True, retry_seconds: float = 1.0, max_retries: int = 5) -> AsyncIterator[Event]:
        """:meth:`Client.events <schemadoc.client.Client.events>`, asynchronously."""
        stream = EventStream(since, last_event_id, max_retries, reconnect)
        timeout = httpx.Timeout(self._http.timeout.connect, read=None)
        while True:
            query, headers = stream.connect()
            try:
                async with self._http.stream("GET", document_path(doc_id, "/events"), params=query, headers=headers,
                                             timeout=timeout) as response:
                    if response.status_code >= 400:
                        await response.aread()
                        raise error_for(response.status_code, body_of(response))
                    async for line in response.aiter_lines():
                        event = stream.feed(line)
                        if event is not None:
                            yield event
                        if stream.ended:
                            return
                        if stream.dropped:
                            break
            except httpx.TransportError:
                if not reconnect or not stream.retry():
                    raise
            except ClientError as error:  # a server that is stopping answers 503 until it has stopped
                if not (reconnect and error.code == "shutting-down" and stream.retry()):
                    raise
            else:
                if not reconnect:
                    return
            await asyncio.sleep(retry_seconds)
