"""The asynchronous client (:class:`AsyncClient`): :class:`~schemadoc.client.Client`'s methods, awaited."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import TypeVar

import httpx

from schemadoc.client import models as m
from schemadoc.client._operations import DEFAULT_URL, Operations, Request, auth_headers, body_of, document_path
from schemadoc.client._sse import Event, EventStream
from schemadoc.client.errors import VersionConflictError, error_for

__all__ = ["AsyncClient"]

T = TypeVar("T")


class AsyncClient(Operations):
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
        stream = EventStream(since, last_event_id, max_retries)
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
            except httpx.TransportError:
                if not reconnect or not stream.retry():
                    raise
            else:
                if not reconnect:
                    return
            await asyncio.sleep(retry_seconds)
