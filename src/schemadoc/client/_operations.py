"""Every REST operation as a typed method, declared once for both clients.

A method's parameters are the operation's arguments as REST spells them (``path`` for ``node_path``); its
body names the catalogue entry (:data:`schemadoc.operations.catalogue.BY_NAME`), whose route says where each
argument goes (as the server reads it): path parameters into the URL; on ``GET`` the rest into the query;
otherwise ``path`` and ``dry_run`` into the query, the version into ``If-Match`` (the ETag of the read the
write is based on) and the rest into the JSON body. The answer is parsed with the operation's result model.
:class:`Endpoint` sends the request through the client's transport: a method returns the result on
:class:`~schemadoc.client.Client` and an awaitable of it on :class:`~schemadoc.client.AsyncClient`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Concatenate, Generic, ParamSpec, Self, TypeVar, overload
from urllib.parse import quote

from pydantic import TypeAdapter

from schemadoc.client import models as m
from schemadoc.operations.catalogue import BY_NAME
from schemadoc.operations.operation import Route

P = ParamSpec("P")
T = TypeVar("T")
API = "/api/v1"


@dataclass(frozen=True)
class Request(Generic[T]):
    method: str
    path: str
    parse: Callable[[Any], T]
    query: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    json: Any = None


def _raw(body: Any) -> Any:
    return body


def _marks(placeholders: Sequence[str] | None) -> dict[str, Any]:
    """The ``placeholders`` argument when given (a suggested call's marks of made-up values)."""
    return {} if placeholders is None else {"placeholders": list(placeholders)}


def document_path(doc_id: str, tail: str = "") -> str:
    return f"{API}/documents/{quote(doc_id, safe='')}{tail}"


@functools.cache
def _route(operation: str) -> tuple[Route, bool, Callable[[Any], Any]]:
    """The route the client sends (the one taking a JSON body, if any), whether it carries a body (as the server
    reads one: some argument besides the path's and ``node_path``), and the parser of its result."""
    entry = BY_NAME[operation]
    route = next(route for route in entry.routes if route.whole is None)
    body = route.method != "GET" and any(route.carries(name) != "path" and name != "node_path"
                                         for name in entry.args.model_fields)
    return route, body, TypeAdapter(entry.rest_result or entry.result).validate_python


def request(operation: str, /, **given: Any) -> Request[Any]:
    """The request of ``operation`` (a catalogue name) with the ``given`` arguments. A query parameter that is
    ``None``, ``False`` or an empty list is left out: the server assumes its default."""
    route, has_body, parse = _route(operation)
    path, query, headers, body = route.path, {}, {}, {}
    for name, value in given.items():
        where = route.carries("node_path" if name == "path" else name)
        if where == "path":
            path = path.replace(f"{{{name}}}", quote(str(value), safe=""))
        elif name == "version":
            headers["If-Match"] = f'"{value}"'
        elif where == "query":
            if value is not None and value is not False and value != []:
                query[name] = str(value).lower() if isinstance(value, bool) else value
        else:
            body[name] = value
    return Request(route.method, API + path, parse, query, headers, body if has_body else None)


class Endpoint(Generic[P, T]):
    """A method of both clients: ``build`` makes its request, the client it is called on sends it."""

    def __init__(self, build: Callable[Concatenate[Any, P], Request[T]]) -> None:
        self._build = build
        self.__doc__ = build.__doc__

    @overload
    def __get__(self, client: None, owner: type[Any]) -> Self: ...

    @overload
    def __get__(self, client: AsyncOperations, owner: type[Any]) -> Callable[P, Awaitable[T]]: ...

    @overload
    def __get__(self, client: SyncOperations, owner: type[Any]) -> Callable[P, T]: ...

    def __get__(self, client: Any, owner: type[Any]) -> Any:
        if client is None:
            return self
        build = self._build

        @functools.wraps(build)
        def method(*args: P.args, **kwargs: P.kwargs) -> Any:
            return client._send(build(client, *args, **kwargs))

        return method


class Operations:
    """The methods :class:`~schemadoc.client.Client` and :class:`~schemadoc.client.AsyncClient` share."""

    # -- documents ----------------------------------------------------------------------------

    @Endpoint
    def health(self) -> Request[dict[str, Any]]:
        return Request("GET", "/health", _raw)

    @Endpoint
    def create_document(self, content: Any = None, *,
                        placeholders: Sequence[str] | None = None) -> Request[m.CreateDocumentResult]:
        """A new document at version 1: ``content`` with the schema's defaults filled in, or built from the defaults
        alone when it is ``None`` (left out of the request); ``placeholders``: as a suggested call gives them."""
        return request("document_create", **({} if content is None else {"content": content}),
                       **_marks(placeholders))

    @Endpoint
    def list_documents(self, *, limit: int | None = None, offset: int | None = None,
                       valid: bool | None = None, where: Sequence[str | Sequence[Any]] | None = None,
                       sort: str | None = None, cursor: str | None = None) -> Request[m.ListDocumentsResult]:
        """Documents a page at a time: ``valid`` only those the schema accepts (``True``) or refuses (``False``);
        ``where`` filters (``"key op value"`` or ``[key, op, value]``), ``sort`` a key (``-`` first: descending),
        ``cursor`` the ``next_cursor`` of the page before (docs/search.md)."""
        spelled = [item if isinstance(item, str) else f"{item[0]} {item[1]} {json.dumps(item[2])}" if len(item) == 3
                   else f"{item[0]} {item[1]}" for item in where or ()]
        return request("document_list", limit=limit, offset=offset, valid=None if valid is None else str(valid).lower(),
                       where=spelled, sort=sort, cursor=cursor)

    @Endpoint
    def read_node(self, doc_id: str, path: str = "/", *, at_version: int | None = None, max_depth: int | None = None,
                  offset: int | None = None, limit: int | None = None,
                  max_bytes: int | None = None) -> Request[m.ReadNodeResult]:
        """The node at ``path`` (``node_content``) and the document's ``version``; with a bound (``max_depth``,
        ``offset``/``limit``, ``max_bytes``) a :class:`~schemadoc.client.models.BoundedReadNodeResult`."""
        return request("document_read_node", doc_id=doc_id, path=path, at_version=at_version, max_depth=max_depth,
                       offset=offset, limit=limit, max_bytes=max_bytes)

    @Endpoint
    def update_node(self, doc_id: str, path: str, node_data: Any, version: int, *, dry_run: bool = False,
                    fill_defaults: bool = False,
                    placeholders: Sequence[str] | None = None) -> Request[m.UpdateNodeResult]:
        """``placeholders``: as a suggested call gives them (the values the server made up in ``node_data``)."""
        return request("document_update_node", doc_id=doc_id, path=path, node_data=node_data, version=version,
                       dry_run=dry_run, fill_defaults=fill_defaults, **_marks(placeholders))

    @Endpoint
    def create_node(self, doc_id: str, path: str, node_data: Any, version: int, *, dry_run: bool = False,
                    fill_defaults: bool = False,
                    placeholders: Sequence[str] | None = None) -> Request[m.CreateNodeResult]:
        """Create the node at ``path`` (``/items/-`` appends)."""
        return request("document_create_node", doc_id=doc_id, path=path, node_data=node_data, version=version,
                       dry_run=dry_run, fill_defaults=fill_defaults, **_marks(placeholders))

    @Endpoint
    def delete_node(self, doc_id: str, path: str, version: int, *,
                    dry_run: bool = False) -> Request[m.DeleteNodeResult]:
        return request("document_delete_node", doc_id=doc_id, path=path, version=version, dry_run=dry_run)

    @Endpoint
    def apply_patch(self, doc_id: str, patch: Sequence[dict[str, Any]], version: int, *, dry_run: bool = False,
                    placeholders: Sequence[str] | None = None) -> Request[m.ApplyPatchResult]:
        """An RFC 6902 patch, applied atomically."""
        return request("document_apply_patch", doc_id=doc_id, patch=list(patch), version=version, dry_run=dry_run,
                       **_marks(placeholders))

    @Endpoint
    def merge_patch(self, doc_id: str, patch: Any, version: int, *, path: str = "/",
                    dry_run: bool = False) -> Request[m.MergePatchResult]:
        """An RFC 7396 merge patch at ``path`` (``None`` members delete)."""
        return request("document_merge_patch", doc_id=doc_id, path=path, merge_patch=patch, version=version,
                       dry_run=dry_run)

    @Endpoint
    def move_node(self, doc_id: str, from_path: str, to_path: str, version: int, *,
                  dry_run: bool = False) -> Request[m.MoveNodeResult]:
        return request("document_move_node", doc_id=doc_id, from_path=from_path, to_path=to_path, version=version,
                       dry_run=dry_run)

    @Endpoint
    def validate_node(self, doc_id: str, path: str, node_data: Any, *,
                      fill_defaults: bool = False) -> Request[m.ValidateNodeResult]:
        """The verdict a write of ``node_data`` at ``path`` would get now; nothing is written."""
        return request("document_validate_node", doc_id=doc_id, path=path, node_data=node_data,
                       fill_defaults=fill_defaults)

    @Endpoint
    def delete_document(self, doc_id: str, version: int) -> Request[m.DocumentStateResult]:
        return request("document_delete", doc_id=doc_id, version=version)

    @Endpoint
    def undelete_document(self, doc_id: str) -> Request[m.DocumentStateResult]:
        return request("document_undelete", doc_id=doc_id)

    @Endpoint
    def purge_document(self, doc_id: str) -> Request[m.PurgeResult]:
        """Remove a deleted document and its history for good (no dry run: it cannot be undone)."""
        return request("document_purge", doc_id=doc_id)

    # -- history ------------------------------------------------------------------------------

    @Endpoint
    def history(self, doc_id: str, *, since_version: int | None = None, limit: int | None = None,
                summary: bool = False, actor: str | None = None) -> Request[m.HistoryResult]:
        """The journal, oldest first; ``summary``: each version's op, path, time and patch size instead of its
        patch; ``actor``: only the versions that actor (a token's name, a door) made."""
        return request("document_history", doc_id=doc_id, since_version=since_version, limit=limit, summary=summary,
                       actor=actor)

    @Endpoint
    def read_version(self, doc_id: str, version: int) -> Request[Any]:
        """The whole document as it was at ``version``."""
        return Request("GET", document_path(doc_id, f"/versions/{int(version)}"), _raw)

    @Endpoint
    def diff(self, doc_id: str, from_version: int, to_version: int) -> Request[m.DiffResult]:
        return request("document_diff", doc_id=doc_id, from_version=from_version, to_version=to_version)

    @Endpoint
    def revert(self, doc_id: str, to_version: int, version: int, *,
               dry_run: bool = False) -> Request[m.RevertResult]:
        return request("document_revert", doc_id=doc_id, to_version=to_version, version=version, dry_run=dry_run)

    @Endpoint
    def changes(self, *, since: int | None = None, limit: int | None = None) -> Request[m.ChangesResult]:
        """One page of the feed of every committed version, across documents."""
        return request("document_changes", since=since, limit=limit)

    # -- schema, reading aids -----------------------------------------------------------------

    @Endpoint
    def get_schema(self, *, dereferenced: bool = False) -> Request[m.RootSchemaResult]:
        return request("schema_get_root", dereferenced=dereferenced)

    @Endpoint
    def get_node_schema(self, path: str = "/", *, doc_id: str | None = None,
                        dereferenced: bool | None = None) -> Request[m.NodeSchemaResult]:
        # dereferenced=False is said (the server's default is true), so it is sent as text
        return request("schema_get_node", path=path, doc_id=doc_id,
                       dereferenced=None if dereferenced is None else str(dereferenced).lower())

    @Endpoint
    def error_catalog(self) -> Request[m.ErrorCatalogResult]:
        return Request("GET", f"{API}/errors", m.ErrorCatalogResult.model_validate)

    @Endpoint
    def outline(self, doc_id: str, path: str = "/", *, depth: int | None = None, offset: int | None = None,
                limit: int | None = None, max_bytes: int | None = None) -> Request[m.OutlineResult]:
        return request("document_outline", doc_id=doc_id, path=path, depth=depth, offset=offset, limit=limit,
                       max_bytes=max_bytes)

    @Endpoint
    def next_incomplete(self, doc_id: str, path: str = "/", *, limit: int | None = None,
                        include_defaults: bool = False) -> Request[m.NextIncompleteResult]:
        """``include_defaults``: also list values equal to their schema default."""
        return request("document_next_incomplete", doc_id=doc_id, path=path, limit=limit,
                       include_defaults=include_defaults)

    @Endpoint
    def search(self, query: str, *, path: str | None = None, doc_ids: Sequence[str] | None = None,
               limit: int | None = None, cursor: str | None = None,
               ranking: str | None = None) -> Request[m.SearchResult]:
        """``ranking``: ``text``, ``semantic`` or ``hybrid`` (None: the server's default, docs/search.md)."""
        return request("document_search", query=query, path=path, doc_ids=list(doc_ids or ()), limit=limit,
                       cursor=cursor, ranking=ranking)

    @Endpoint
    def stats(self, doc_id: str) -> Request[m.StatsResult]:
        return request("document_stats", doc_id=doc_id)

    @Endpoint
    def render(self, doc_id: str, path: str = "/", *, format: str = "markdown", offset: int | None = None,
               limit: int | None = None, max_bytes: int | None = None) -> Request[m.RenderResult]:
        """The node as Markdown (the only ``format``), driven by the schema."""
        return request("document_render", doc_id=doc_id, path=path, format=format, offset=offset, limit=limit,
                       max_bytes=max_bytes)


class SyncOperations(Operations):
    """What :class:`~schemadoc.client.Client` is: each method returns its result."""


class AsyncOperations(Operations):
    """What :class:`~schemadoc.client.AsyncClient` is: each method returns an awaitable of its result."""
