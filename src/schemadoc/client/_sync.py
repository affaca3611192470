"""The synchronous client (:class:`Client`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import httpx

from schemadoc.client import _requests as r
from schemadoc.client import models as m
from schemadoc.client._sse import Event, EventParser
from schemadoc.client.errors import VersionConflictError, error_for

__all__ = ["Client"]

T = TypeVar("T")
DEFAULT_URL = "http://127.0.0.1:8080"


def _headers(token: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"} if token else {}


def _body(response: httpx.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:
        return response.text


class Client:
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
                                                                headers=_headers(token))

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._owned:
            self._http.close()

    def _send(self, call: r.Call[T]) -> T:
        response = self._http.request(call.method, call.path, params=call.query, headers=call.headers,
                                      json=call.json)
        if response.status_code >= 400:
            raise error_for(response.status_code, _body(response))
        return call.parse(_body(response))

    # -- documents ----------------------------------------------------------------------------

    def health(self) -> dict[str, Any]:
        return self._send(r.health())

    def create_document(self) -> m.CreateDocumentResult:
        """A new document built from the schema's defaults, at version 1."""
        return self._send(r.create_document())

    def list_documents(self, *, limit: int | None = None, offset: int | None = None) -> m.ListDocumentsResult:
        return self._send(r.list_documents(limit, offset))

    def read_node(self, doc_id: str, path: str = "/", *, at_version: int | None = None, max_depth: int | None = None,
                  offset: int | None = None, limit: int | None = None,
                  max_bytes: int | None = None) -> m.ReadNodeResult:
        """The node at ``path`` (``node_content``) and the document's ``version``; with a bound (``max_depth``,
        ``offset``/``limit``, ``max_bytes``) a :class:`~schemadoc.client.models.BoundedReadNodeResult`."""
        return self._send(r.read_node(doc_id, path, at_version, max_depth, offset, limit, max_bytes))

    def update_node(self, doc_id: str, path: str, node_data: Any, version: int, *,
                    dry_run: bool = False) -> m.UpdateNodeResult:
        return self._send(r.update_node(doc_id, path, node_data, version, dry_run))

    def create_node(self, doc_id: str, path: str, node_data: Any, version: int, *,
                    dry_run: bool = False) -> m.CreateNodeResult:
        """Create the node at ``path`` (``/items/-`` appends)."""
        return self._send(r.create_node(doc_id, path, node_data, version, dry_run))

    def delete_node(self, doc_id: str, path: str, version: int, *, dry_run: bool = False) -> m.DeleteNodeResult:
        return self._send(r.delete_node(doc_id, path, version, dry_run))

    def apply_patch(self, doc_id: str, patch: Sequence[dict[str, Any]], version: int, *,
                    dry_run: bool = False) -> m.ApplyPatchResult:
        """An RFC 6902 patch, applied atomically."""
        return self._send(r.apply_patch(doc_id, patch, version, dry_run))

    def merge_patch(self, doc_id: str, patch: Any, version: int, *, path: str = "/",
                    dry_run: bool = False) -> m.MergePatchResult:
        """An RFC 7396 merge patch at ``path`` (``None`` members delete)."""
        return self._send(r.merge_patch(doc_id, patch, path, version, dry_run))

    def move_node(self, doc_id: str, from_path: str, to_path: str, version: int, *,
                  dry_run: bool = False) -> m.MoveNodeResult:
        return self._send(r.move_node(doc_id, from_path, to_path, version, dry_run))

    def validate_node(self, doc_id: str, path: str, node_data: Any) -> m.ValidateNodeResult:
        """The verdict a write of ``node_data`` at ``path`` would get now; nothing is written."""
        return self._send(r.validate_node(doc_id, path, node_data))

    def delete_document(self, doc_id: str, version: int) -> m.DocumentStateResult:
        return self._send(r.delete_document(doc_id, version))

    def undelete_document(self, doc_id: str) -> m.DocumentStateResult:
        return self._send(r.undelete_document(doc_id))

    def purge_document(self, doc_id: str) -> m.PurgeResult:
        """Remove a deleted document and its history for good (no dry run: it cannot be undone)."""
        return self._send(r.purge_document(doc_id))

    # -- history ------------------------------------------------------------------------------

    def history(self, doc_id: str, *, since_version: int | None = None, limit: int | None = None) -> m.HistoryResult:
        return self._send(r.history(doc_id, since_version, limit))

    def read_version(self, doc_id: str, version: int) -> Any:
        """The whole document as it was at ``version``."""
        return self._send(r.read_version(doc_id, version))

    def diff(self, doc_id: str, from_version: int, to_version: int | None = None) -> m.DiffResult:
        return self._send(r.diff(doc_id, from_version, to_version))

    def revert(self, doc_id: str, to_version: int, version: int, *, dry_run: bool = False) -> m.RevertResult:
        return self._send(r.revert(doc_id, to_version, version, dry_run))

    def changes(self, *, since: int | None = None, limit: int | None = None) -> m.ChangesResult:
        """One page of the feed of every committed version, across documents."""
        return self._send(r.changes(since, limit))

    # -- schema, reading aids -----------------------------------------------------------------

    def get_schema(self, *, dereferenced: bool = False) -> m.RootSchemaResult:
        return self._send(r.get_schema(dereferenced))

    def get_node_schema(self, path: str, *, doc_id: str | None = None,
                        dereferenced: bool | None = None) -> m.NodeSchemaResult:
        return self._send(r.get_node_schema(path, doc_id, dereferenced))

    def error_catalog(self) -> m.ErrorCatalogResult:
        return self._send(r.error_catalog())

    def outline(self, doc_id: str, path: str = "/", *, depth: int | None = None, offset: int | None = None,
                limit: int | None = None, max_bytes: int | None = None) -> m.OutlineResult:
        return self._send(r.outline(doc_id, path, depth, offset, limit, max_bytes))

    def next_incomplete(self, doc_id: str, path: str = "/", *, limit: int | None = None) -> m.NextIncompleteResult:
        return self._send(r.next_incomplete(doc_id, path, limit))

    def search(self, query: str, *, path: str | None = None, doc_ids: Sequence[str] | None = None,
               limit: int | None = None, cursor: int | None = None) -> m.SearchResult:
        return self._send(r.search(query, path, doc_ids, limit, cursor))

    def stats(self, doc_id: str) -> m.StatsResult:
        return self._send(r.stats(doc_id))

    def render(self, doc_id: str, path: str = "/", *, offset: int | None = None, limit: int | None = None,
               max_bytes: int | None = None) -> m.RenderResult:
        """The node as Markdown, driven by the schema."""
        return self._send(r.render(doc_id, path, offset, limit, max_bytes))

    # -- helpers ------------------------------------------------------------------------------

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
        path = r._doc(doc_id, "/events")
        failures = 0
        while True:
            headers = {"Last-Event-ID": last_event_id} if last_event_id else {}
            query = {"since": since} if last_event_id is None and since is not None else {}
            try:
                with self._http.stream("GET", path, params=query, headers=headers,
                                       timeout=httpx.Timeout(self._http.timeout.connect, read=None)) as response:
                    if response.status_code >= 400:
                        response.read()
                        raise error_for(response.status_code, _body(response))
                    parser = EventParser()
                    for line in response.iter_lines():
                        event = parser.feed(line)
                        if event is None:
                            continue
                        failures = 0
                        error = event.error()
                        if error is not None:
                            raise error
                        if event.id is not None:
                            last_event_id = event.id
                        yield event
                        if event.event == "purged":
                            return
            except httpx.TransportError:
                failures += 1
                if not reconnect or failures > max_retries:
                    raise
            else:
                if not reconnect:
                    return
            time.sleep(retry_seconds)

