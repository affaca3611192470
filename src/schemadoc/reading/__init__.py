"""The read side for agents on large documents: bounded views, outlines, next-incomplete, search,
stats and rendering. Pure functions over immutable content (no I/O); they import only the
schema, pointer and error modules, and the service wires them to documents.
"""

from schemadoc.reading.incomplete import Incomplete, next_incomplete
from schemadoc.reading.inspect import NodeCounts, count_nodes
from schemadoc.reading.outline import Outline, outline
from schemadoc.reading.render import Rendered, render_markdown
from schemadoc.reading.schemas import NodeSchemas
from schemadoc.reading.sizes import SizeCache, json_size
from schemadoc.reading.views import BoundedView, Window, bounded_view, is_stub, stub

__all__ = ["BoundedView", "Incomplete", "NodeCounts", "NodeSchemas", "Outline", "Rendered", "SizeCache",
           "Window", "bounded_view", "count_nodes", "is_stub", "json_size", "next_incomplete", "outline",
           "render_markdown", "stub"]
