"""The result bodies of the operations that help agents read large documents: bounded reads, outlines,
next-incomplete, search, stats, render, and the newer node operations (move, validate).

Part of the result models of :mod:`schemadoc.operations.results`, split off by concern.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from schemadoc.operations.results import (
    Body,
    ReadNodeResult,
    ValidationReportBody,
    WriteBody,
    report_body,
    write_fields,
)
from schemadoc.reading import Incomplete, Outline, Rendered, Window
from schemadoc.service import NodeRead, NodeView, SearchPage, Stats, WriteResult

__all__ = [
    "BoundedReadNodeResult",
    "ExampleCall",
    "IncompleteItem",
    "MoveNodeResult",
    "NextIncompleteResult",
    "OutlineResult",
    "RenderResult",
    "SearchHitBody",
    "SearchResult",
    "StatsResult",
    "ValidateNodeResult",
    "move_node_result",
    "next_incomplete_result",
    "outline_result",
    "read_view_result",
    "render_result",
    "search_result",
    "stats_result",
    "validate_node_result",
]


# -- agents on large documents: bounded reads, outline, guided building, search, stats, render ----


class BoundedReadNodeResult(ReadNodeResult):
    """A read with bounds (max_depth, offset/limit, max_bytes, or the MCP budget that cut it)."""

    truncated: bool = Field(description="true when node_content is not the whole node: stubs "
                                        '({"$stub": true, "type", "count" or "length", "size_bytes", "pointer"}) '
                                        "stand in for parts, or the budget shortened the window.")
    node_size_bytes: int = Field(description="Bytes of the whole node as compact JSON.")
    total_count: int | None = Field(default=None, description="Members, items or characters the node has.")
    offset: int | None = Field(default=None, description="The first member, item or character shown.")
    returned_count: int | None = Field(default=None, description="How many members, items or characters are shown.")
    next_offset: int | None = Field(default=None, description="Read again with this offset to see what follows.")
    continue_at: list[str] = Field(default_factory=list,
                                   description="Pointers of the stubs, shallowest first (at most 20): read them "
                                               "to see what they stand for.")


class OutlineResult(Body):
    success: bool = True
    doc_id: str
    version: int
    node_path: str
    outline: dict[str, Any] = Field(description='The node\'s entry: {"pointer", "type", "count", "size_bytes", '
                                                '"title" (the schema\'s), "label" (its title or name member), '
                                                '"children": [entries], "more": {"count", "next_offset"}}.')
    truncated: bool = Field(description="true when some children were left out for the budget (see 'more').")
    total_count: int | None = Field(default=None, description="Members or items of the node.")
    offset: int | None = None
    returned_count: int | None = None
    next_offset: int | None = Field(default=None, description="Ask again with this offset for the next children.")
    continue_at: list[str] = Field(default_factory=list, description="Entries with more children than shown.")


class ExampleCall(Body):
    tool: str = Field(description="document_create_node or document_update_node.")
    arguments: dict[str, Any] = Field(description="Arguments that would fill the place (checked against its schema).")
    placeholder: bool = Field(default=False, description="true: node_data holds made-up values (not the schema's "
                                                         "default, enum or examples); put real content there.")


class IncompleteItem(Body):
    pointer: str
    reason: str = Field(description="absent (an optional property not there yet), empty-array (items the schema "
                                    "describes), or default-value (equal to the schema default; only with "
                                    "include_defaults, and never with an example_call: the value is set).")
    node_schema: dict[str, Any] = Field(description="The schema of the value to write (for empty-array: of one item).")
    example_call: ExampleCall | None = Field(default=None, description="A call that would fill it, when one "
                                                                       "could be built from the schema.")


class NextIncompleteResult(Body):
    success: bool = True
    doc_id: str
    version: int
    node_path: str
    items: list[IncompleteItem] = Field(description="Breadth first, in a stable order; empty when finished.")
    has_more: bool
    complete: bool = Field(default=False, description="true: nothing is left to fill below node_path.")


class SearchHitBody(Body):
    doc_id: str
    pointer: str
    snippet: str


class SearchResult(Body):
    success: bool = True
    query: str
    hits: list[SearchHitBody]
    has_more: bool
    next_cursor: int | None = Field(default=None, description="Pass as cursor for the next page.")


class StatsResult(Body):
    success: bool = True
    doc_id: str
    version: int
    size_bytes: int = Field(description="The document as compact JSON.")
    node_counts: dict[str, int] = Field(description="Nodes by JSON type (object, array, string, number, boolean, "
                                                    "null), the root included.")
    node_total: int
    depth: int = Field(description="Container levels: 1 for a flat object.")
    journal_length: int = Field(description="Versions in the journal.")


class RenderResult(Body):
    success: bool = True
    doc_id: str
    version: int
    node_path: str
    format: str
    text: str
    truncated: bool = Field(description="true when the budget stopped the rendering before the window's end.")
    total_count: int | None = None
    offset: int | None = None
    returned_count: int | None = Field(default=None, description="Children of the node rendered (whole).")
    next_offset: int | None = Field(default=None, description="Render again from this child (of a string node: "
                                                              "this character) to go on.")
    continue_at: str | None = Field(default=None, description=(
        "When the first child alone is over the budget: its beginning is shown; render this pointer for the "
        "rest (a level deeper), then go on from next_offset."))


class MoveNodeResult(WriteBody):
    from_path: str
    node_path: str = Field(description="The concrete new path of the moved node.")
    moved_node: Any


def _window_fields(window: Window | None) -> dict[str, Any]:
    if window is None:
        return {}
    return {"total_count": window.total, "offset": window.offset, "returned_count": window.count,
            "next_offset": window.next_offset}


def read_view_result(read: NodeView, bounded: bool) -> ReadNodeResult:
    """The plain read when nothing bounded it, else the bounded read with its window and stubs."""
    view = read.view
    if not bounded and not view.truncated:
        return ReadNodeResult(doc_id=read.doc_id, node_path=read.node_path or "/", node_content=view.content,
                              version=read.version, node_type=view.node_type)
    return BoundedReadNodeResult(doc_id=read.doc_id, node_path=read.node_path or "/", node_content=view.content,
                                 version=read.version, node_type=view.node_type, truncated=view.truncated,
                                 node_size_bytes=view.size_bytes, continue_at=view.continue_at,
                                 **_window_fields(view.window))


def outline_result(read: NodeRead, found: Outline) -> OutlineResult:
    return OutlineResult(doc_id=read.doc_id, version=read.version, node_path=read.node_path or "/",
                         outline=found.root, truncated=found.truncated, continue_at=found.continue_at,
                         **_window_fields(found.window))


def next_incomplete_result(read: NodeRead, items: list[Incomplete], has_more: bool) -> NextIncompleteResult:
    bodies = []
    for item in items:
        call = None
        if item.has_example:
            arguments = {"doc_id": read.doc_id, "node_path": item.node_path, "node_data": item.example,
                         "version": read.version}
            call = ExampleCall(tool=item.tool, arguments=arguments, placeholder=item.placeholder)
        bodies.append(IncompleteItem(pointer=item.pointer, reason=item.reason, node_schema=item.node_schema,
                                     example_call=call))
    return NextIncompleteResult(doc_id=read.doc_id, version=read.version, node_path=read.node_path or "/",
                                items=bodies, has_more=has_more, complete=not bodies and not has_more)


def search_result(query: str, page: SearchPage) -> SearchResult:
    return SearchResult(query=query, hits=[SearchHitBody(doc_id=h.doc_id, pointer=h.pointer, snippet=h.snippet)
                                           for h in page.hits],
                        has_more=page.has_more, next_cursor=page.next_cursor)


def stats_result(stats: Stats) -> StatsResult:
    counts = stats.counts
    return StatsResult(doc_id=stats.doc_id, version=stats.version, size_bytes=stats.size_bytes,
                       node_counts=counts.by_type, node_total=sum(counts.by_type.values()), depth=counts.depth,
                       journal_length=stats.journal_length)


def render_result(read: NodeRead, rendered: Rendered, format: str) -> RenderResult:
    return RenderResult(doc_id=read.doc_id, version=read.version, node_path=read.node_path or "/", format=format,
                        text=rendered.text, truncated=rendered.truncated, continue_at=rendered.continue_at,
                        **_window_fields(rendered.window))


class ValidateNodeResult(Body):
    success: bool = True
    doc_id: str
    node_path: str = Field(description="The concrete path the value was checked at.")
    version: int = Field(description="The version it was checked against (nothing was written).")
    valid: bool = Field(description="Whether writing the value there would be accepted.")
    write: str = Field(description="The tool that would write it: document_update_node where the node exists, "
                                   "else document_create_node.")
    validation_report: ValidationReportBody


def validate_node_result(result: WriteResult, write: str) -> ValidateNodeResult:
    return ValidateNodeResult(doc_id=result.doc_id, node_path=result.node_path or "/", version=result.version,
                              valid=result.report.valid, write=write, validation_report=report_body(result.report))


def move_node_result(result: WriteResult, from_path: str) -> MoveNodeResult:
    return MoveNodeResult(from_path=from_path, node_path=result.node_path or "/", moved_node=result.node,
                          **write_fields(result))
