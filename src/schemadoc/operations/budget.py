"""The MCP result budget: every tool result an agent receives stays within ``MCP_RESULT_BUDGET_BYTES``.

40,000 bytes of JSON, about 10-13k tokens (JSON runs 3-4 bytes a token), measured on the *whole*
result: the body as structured content, the same body again as text content (escaped inside the
message: quotes and backslashes take two bytes) and the members around them. An agent's context
pays for all of it. A body is therefore first fitted to :func:`body_budget` (a little under half),
and a result still over the budget (a body heavy in quotes) is fitted again, smaller
(:func:`result_size` measures it). Nothing is cut silently and nothing fails for being big:

- reads (``document_read_node``, outline, render) are bounded views whose ``max_bytes`` is capped
  by the budget: stubs, ``truncated: true``, ``next_offset`` and ``continue_at`` say where to go on;
- a write echoes its node and patch only while they fit; otherwise the node becomes a stub (its
  type, count, size and pointer) and the patch its size and operation count, with
  ``truncated: true``;
- pages (history, list, changes, search, next-incomplete, a diff's patch) keep the entries that
  fit and say ``truncated: true`` with the cursor or offset of the next page; a single history
  entry whose patch alone is too big keeps its version, op and time, with the patch's size;
- an error's ``details.violations`` keeps the violations that fit, with ``violations_truncated``
  and ``violation_count``.

REST is not bounded unless asked: it answers with the whole node, as the spec requires.
"""

from __future__ import annotations

from typing import Any

import orjson
from pydantic import BaseModel

from schemadoc.reading import SizeCache, json_size, stub

__all__ = ["MCP_RESULT_BUDGET_BYTES", "body_budget", "error_budget", "fit_error", "fit_model", "fit_result",
           "fit_write", "read_budget", "result_size"]

MCP_RESULT_BUDGET_BYTES = 40_000
"""The largest MCP tool result as a whole (text and structured content), in bytes of JSON (about 10-13k tokens)."""
_RESULT_FRAME = 128
"""The members around the two copies (``content``, ``type``, ``text``, ``structuredContent``, ``isError``)."""


def body_budget(budget: int = MCP_RESULT_BUDGET_BYTES) -> int:
    """The first budget of a result's body: the result carries it twice, the text copy escaped (~10 % more)."""
    return (budget - _RESULT_FRAME) * 10 // 21


def error_budget(budget: int = MCP_RESULT_BUDGET_BYTES) -> int:
    """The budget of an error object: an error result carries it once, as escaped text."""
    return (budget - _RESULT_FRAME) * 4 // 5


def result_size(structured: Any, *, text_only: bool = False) -> int:
    """Bytes of the whole MCP result carrying ``structured`` as text (escaped) and, unless ``text_only``,
    as structured content."""
    body = _dumps(structured)
    text = _dumps(body.decode())
    return _RESULT_FRAME + len(text) + (0 if text_only else len(body))
_ENVELOPE_RESERVE = 4_000
"""Room kept for the members around a bounded view (ids, window, the pointers to continue)."""

_PATCH_SUMMARY = 400
_WRITE_NODE_FIELDS = ("updated_node", "created_node", "deleted_node", "moved_node")


def read_budget(max_bytes: int | None, budget: int = MCP_RESULT_BUDGET_BYTES) -> int:
    """The ``max_bytes`` of a bounded view inside an MCP result: the caller's, capped by the budget."""
    cap = max(budget - min(_ENVELOPE_RESERVE, budget // 4), 512)
    return cap if max_bytes is None else min(max_bytes, cap)


def fit_write(body: BaseModel, sizes: SizeCache, budget: int = MCP_RESULT_BUDGET_BYTES) -> BaseModel:
    """A write result whose node and patch are replaced by their sizes and pointers when they do not fit."""
    field = next((name for name in _WRITE_NODE_FIELDS if name in type(body).model_fields), None)
    node = getattr(body, field) if field is not None else None
    patch = getattr(body, "patch", [])
    node_size = sizes.size(node)
    patch_size = sizes.size(patch)
    light = body.model_copy(update={"patch": [], **({field: None} if field else {})})
    envelope = len(_dumps(light.model_dump(mode="json")))
    if envelope + node_size + patch_size <= budget:
        return body
    update: dict[str, Any] = {"truncated": True}
    if field is not None and envelope + node_size + _PATCH_SUMMARY > budget and isinstance(node, dict | list | str):
        pointer = getattr(body, "node_path", None) or getattr(body, "created_node_path", None) or "/"
        update[field] = stub(node, "" if pointer == "/" else pointer, sizes)
        update["node_size_bytes"] = node_size
        node_size = json_size(update[field])
    if envelope + node_size + patch_size > budget:
        update["patch"] = []
        update["patch_op_count"] = len(patch)
        update["patch_size_bytes"] = patch_size
        update["patch_note"] = ("The patch is too big for one result; document_diff from version - 1 to "
                                "version, or the REST history, has it whole.")
    return body.model_copy(update=update)


def fit_model(body: BaseModel, sizes: SizeCache, budget: int = MCP_RESULT_BUDGET_BYTES) -> BaseModel:
    """History entries and a diff's patch measured with the size cache before anything is serialised
    (a 10 MiB patch costs a second to dump): big entry patches become their sizes, a diff keeps the
    operations that fit."""
    fields = type(body).model_fields
    if "entries" in fields:
        entries = getattr(body, "entries")  # noqa: B009 - any result model with entries
        light = []
        changed = False
        for entry in entries:
            patch = getattr(entry, "patch", None)
            size = sizes.size(patch) if isinstance(patch, list) else 0
            if size > budget // 4 and isinstance(patch, list):
                entry = entry.model_copy(update={"patch": [], "patch_op_count": len(patch), "patch_size_bytes": size,
                                                 "truncated": True})
                changed = True
            light.append(entry)
        return body.model_copy(update={"entries": light}) if changed else body
    if "patch" in fields and "validation_report" not in fields:
        patch = getattr(body, "patch")  # noqa: B009 - any result model with a patch
        if isinstance(patch, list) and sizes.size(patch) > budget:
            kept, used = [], 0
            for operation in patch:
                used += sizes.size(operation) + 1
                if used > budget - _ENVELOPE_RESERVE:
                    break
                kept.append(operation)
            return body.model_copy(update={"patch": kept, "truncated": True, "op_count": len(patch)})
    return body


_PAGES: tuple[str, ...] = ("entries", "documents", "changes", "hits", "items", "patch")


def fit_result(structured: dict[str, Any], arguments: dict[str, Any],
               budget: int = MCP_RESULT_BUDGET_BYTES) -> dict[str, Any]:
    """The last guard before a result leaves: pages shortened (saying where the next page starts). History
    entries whose patch alone is too big were made light by :func:`fit_model`, measured the same way."""
    if len(_dumps(structured)) <= budget:
        return structured
    for name in _PAGES:
        page = structured.get(name)
        if isinstance(page, list) and page:
            return _shorten(structured, name, arguments, budget)
    return structured


def _shorten(structured: dict[str, Any], name: str, arguments: dict[str, Any], budget: int) -> dict[str, Any]:
    page: list[Any] = structured[name]
    low, high = 0, len(page)  # the longest prefix that fits: binary search on its length
    while low < high:
        middle = (low + high + 1) // 2
        if len(_dumps(_page_of(structured, name, page[:middle], arguments))) <= budget:
            low = middle
        else:
            high = middle - 1
    return _page_of(structured, name, page[:low], arguments)


def _page_of(structured: dict[str, Any], name: str, kept: list[Any], arguments: dict[str, Any]) -> dict[str, Any]:
    out = {**structured, name: kept, "truncated": True}
    dropped = len(structured[name]) - len(kept)
    if name == "patch":
        out["op_count"] = len(structured[name])
        return out
    if "has_more" in structured:
        out["has_more"] = True
    if name == "entries":
        out["next_since_version"] = kept[-1]["version"] if kept else arguments.get("since_version", 0)
    elif name == "changes":
        out["next_cursor"] = kept[-1]["cursor"] if kept else arguments.get("since", 0)
    elif name == "hits":
        out["next_cursor"] = arguments.get("cursor", 0) + len(kept)
    elif name == "documents":
        out["next_offset"] = arguments.get("offset", 0) + len(kept)
    elif dropped:
        out["omitted_count"] = dropped
    return out


def fit_error(error: dict[str, Any], budget: int = MCP_RESULT_BUDGET_BYTES) -> dict[str, Any]:
    """An error object whose ``details.violations`` keeps what fits (``violations_truncated``)."""
    if len(_dumps(error)) <= budget:
        return error
    inner = error.get("error")
    details = inner.get("details") if isinstance(inner, dict) else None
    violations = details.get("violations") if isinstance(details, dict) else None
    if not isinstance(inner, dict) or not isinstance(details, dict) or not isinstance(violations, list):
        return error
    kept: list[Any] = []
    used = len(_dumps({**error, "error": {**inner, "details": {**details, "violations": []}}})) + 100
    for violation in violations:
        size = len(_dumps(violation)) + 1
        if used + size > budget:
            break
        kept.append(violation)
        used += size
    counted = details.get("violation_count")
    count = counted if isinstance(counted, int) and counted > len(violations) else len(violations)
    details = {**details, "violations": kept, "violations_truncated": True, "violation_count": count,
               "violations_listed": len(kept), "violations_not_listed": count - len(kept)}
    return {**error, "error": {**inner, "details": details}}


def _dumps(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:
        import json

        try:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
        except UnicodeEncodeError:  # a lone surrogate: escaped, as JSON allows
            return json.dumps(value, separators=(",", ":")).encode()
