"""Every REST operation as a request description, shared by the sync and the async client.

Each function returns a :class:`Call`: the method, the path under ``/api/v1``, the query, the headers
(a write's version travels as ``If-Match``, the ETag of the read it is based on), the body, and how to turn
the answer into a typed result. The clients only send it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar
from urllib.parse import quote

from pydantic import BaseModel

from schemadoc.client import models as m

T = TypeVar("T")
API = "/api/v1"


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str
    parse: Callable[[Any], T]
    query: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    json: Any = None
    content: bytes | None = None


def _model(model: type[BaseModel]) -> Callable[[Any], Any]:
    return model.model_validate


def _raw(body: Any) -> Any:
    return body


def _doc(doc_id: str, tail: str = "") -> str:
    return f"{API}/documents/{quote(doc_id, safe='')}{tail}"


def _query(**values: Any) -> dict[str, Any]:
    """Query parameters that were given (booleans as true/false)."""
    return {name: (str(value).lower() if isinstance(value, bool) else value)
            for name, value in values.items() if value is not None and value is not False}


def if_match(version: int | None) -> dict[str, str]:
    return {} if version is None else {"If-Match": f'"{version}"'}


def _read_result(body: Any) -> m.ReadNodeResult:
    bounded = isinstance(body, dict) and "truncated" in body
    return (m.BoundedReadNodeResult if bounded else m.ReadNodeResult).model_validate(body)


def health() -> Call[dict[str, Any]]:
    return Call("GET", "/health", _raw)


def create_document() -> Call[m.CreateDocumentResult]:
    return Call("POST", f"{API}/documents", _model(m.CreateDocumentResult), json={})


def list_documents(limit: int | None, offset: int | None) -> Call[m.ListDocumentsResult]:
    return Call("GET", f"{API}/documents", _model(m.ListDocumentsResult), _query(limit=limit, offset=offset))


def read_node(doc_id: str, path: str, at_version: int | None, max_depth: int | None, offset: int | None,
              limit: int | None, max_bytes: int | None) -> Call[m.ReadNodeResult]:
    return Call("GET", _doc(doc_id), _read_result, _query(path=path, at_version=at_version, max_depth=max_depth,
                                                           offset=offset, limit=limit, max_bytes=max_bytes))


def _write(method: str, url: str, parse: Callable[[Any], T], version: int | None, dry_run: bool,
           body: dict[str, Any], **query: Any) -> Call[T]:
    return Call(method, url, parse, _query(dry_run=dry_run, **query), if_match(version), json=body)


def update_node(doc_id: str, path: str, node_data: Any, version: int | None,
                dry_run: bool) -> Call[m.UpdateNodeResult]:
    return _write("PUT", _doc(doc_id), _model(m.UpdateNodeResult), version, dry_run, {"node_data": node_data},
                  path=path)


def create_node(doc_id: str, path: str, node_data: Any, version: int | None,
                dry_run: bool) -> Call[m.CreateNodeResult]:
    return _write("POST", _doc(doc_id, "/nodes"), _model(m.CreateNodeResult), version, dry_run,
                  {"node_data": node_data}, path=path)


def delete_node(doc_id: str, path: str, version: int | None, dry_run: bool) -> Call[m.DeleteNodeResult]:
    return _write("DELETE", _doc(doc_id, "/nodes"), _model(m.DeleteNodeResult), version, dry_run, {}, path=path)


def apply_patch(doc_id: str, patch: Sequence[dict[str, Any]], version: int | None,
                dry_run: bool) -> Call[m.ApplyPatchResult]:
    return _write("POST", _doc(doc_id, "/patch"), _model(m.ApplyPatchResult), version, dry_run,
                  {"patch": list(patch)})


def merge_patch(doc_id: str, patch: Any, path: str, version: int | None, dry_run: bool) -> Call[m.MergePatchResult]:
    return _write("POST", _doc(doc_id, "/merge"), _model(m.MergePatchResult), version, dry_run,
                  {"merge_patch": patch}, path=path)


def move_node(doc_id: str, from_path: str, to_path: str, version: int | None,
              dry_run: bool) -> Call[m.MoveNodeResult]:
    return _write("POST", _doc(doc_id, "/move"), _model(m.MoveNodeResult), version, dry_run,
                  {"from_path": from_path, "to_path": to_path})


def revert(doc_id: str, to_version: int, version: int | None, dry_run: bool) -> Call[m.RevertResult]:
    return _write("POST", _doc(doc_id, "/revert"), _model(m.RevertResult), version, dry_run,
                  {"to_version": to_version})


def delete_document(doc_id: str, version: int | None) -> Call[m.DocumentStateResult]:
    return _write("DELETE", _doc(doc_id), _model(m.DocumentStateResult), version, False, {})


def undelete_document(doc_id: str) -> Call[m.DocumentStateResult]:
    return Call("POST", _doc(doc_id, "/undelete"), _model(m.DocumentStateResult))


def purge_document(doc_id: str) -> Call[m.PurgeResult]:
    return Call("POST", _doc(doc_id, "/purge"), _model(m.PurgeResult))


def history(doc_id: str, since_version: int | None, limit: int | None) -> Call[m.HistoryResult]:
    return Call("GET", _doc(doc_id, "/history"), _model(m.HistoryResult),
                _query(since_version=since_version, limit=limit))


def read_version(doc_id: str, version: int) -> Call[Any]:
    return Call("GET", _doc(doc_id, f"/versions/{int(version)}"), _raw)


def diff(doc_id: str, from_version: int, to_version: int | None) -> Call[m.DiffResult]:
    return Call("GET", _doc(doc_id, "/diff"), _model(m.DiffResult),
                _query(from_version=from_version, to_version=to_version))


def changes(since: int | None, limit: int | None) -> Call[m.ChangesResult]:
    return Call("GET", f"{API}/changes", _model(m.ChangesResult), _query(since=since, limit=limit))


def get_schema(dereferenced: bool) -> Call[m.RootSchemaResult]:
    return Call("GET", f"{API}/schema", _model(m.RootSchemaResult), _query(dereferenced=dereferenced))


def get_node_schema(path: str, doc_id: str | None, dereferenced: bool | None) -> Call[m.NodeSchemaResult]:
    query = _query(path=path, doc_id=doc_id)
    if dereferenced is not None:
        query["dereferenced"] = str(dereferenced).lower()
    return Call("GET", f"{API}/schema/node", _model(m.NodeSchemaResult), query)


def error_catalog() -> Call[m.ErrorCatalogResult]:
    return Call("GET", f"{API}/errors", _model(m.ErrorCatalogResult))


def outline(doc_id: str, path: str, depth: int | None, offset: int | None, limit: int | None,
            max_bytes: int | None) -> Call[m.OutlineResult]:
    return Call("GET", _doc(doc_id, "/outline"), _model(m.OutlineResult),
                _query(path=path, depth=depth, offset=offset, limit=limit, max_bytes=max_bytes))


def next_incomplete(doc_id: str, path: str, limit: int | None) -> Call[m.NextIncompleteResult]:
    return Call("GET", _doc(doc_id, "/incomplete"), _model(m.NextIncompleteResult), _query(path=path, limit=limit))


def search(query: str, path: str | None, doc_ids: Sequence[str] | None, limit: int | None,
           cursor: int | None) -> Call[m.SearchResult]:
    params = _query(query=query, path=path, limit=limit, cursor=cursor)
    if doc_ids:
        params["doc_ids"] = list(doc_ids)
    return Call("GET", f"{API}/search", _model(m.SearchResult), params)


def validate_node(doc_id: str, path: str, node_data: Any) -> Call[m.ValidateNodeResult]:
    return Call("POST", _doc(doc_id, "/validate"), _model(m.ValidateNodeResult), _query(path=path),
                json={"node_data": node_data})


def stats(doc_id: str) -> Call[m.StatsResult]:
    return Call("GET", _doc(doc_id, "/stats"), _model(m.StatsResult))


def render(doc_id: str, path: str, offset: int | None, limit: int | None,
           max_bytes: int | None) -> Call[m.RenderResult]:
    return Call("GET", _doc(doc_id, "/render"), _model(m.RenderResult),
                _query(path=path, format="markdown", offset=offset, limit=limit, max_bytes=max_bytes))
