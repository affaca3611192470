"""DocumentService: the use cases, and the only place that combines schema, ops, validation and storage.

One module per concern, over the shared state of :mod:`.core` (documents in memory, locks,
loading, the commit and its change event):

- :mod:`.reading`: nodes, schemas and the bounded reads for agents;
- :mod:`.history`: journal pages, past versions, diffs and the change feed (:mod:`.feed`);
- :mod:`.nodes`: the writes to a document's content (each one RFC 6902 patch through one pipeline);
- :mod:`.documents`: creation, listing, delete, undelete and purge of whole documents;
- :mod:`.inventory`: each document's verdict under the served schema, checks on demand and the background
  inventory;
- :mod:`.models`: the values they return; :mod:`.checks`: the argument checks they share.
"""

from __future__ import annotations

from schemadoc.service.core import MAX_JSON_DEPTH
from schemadoc.service.documents import Documents
from schemadoc.service.inventory import Inventory
from schemadoc.service.models import (
    ChangeEvent,
    ChangesPage,
    DiffActors,
    DocumentList,
    HistoryPage,
    NodeRead,
    NodeSchema,
    NodeView,
    SearchPage,
    Stats,
    WriteResult,
)
from schemadoc.service.nodes import NodeWrites
from schemadoc.service.reading import Reading
from schemadoc.storage.base import check_doc_id

__all__ = [
    "MAX_JSON_DEPTH",
    "ChangeEvent",
    "ChangesPage",
    "DiffActors",
    "DocumentList",
    "DocumentService",
    "HistoryPage",
    "NodeRead",
    "NodeSchema",
    "NodeView",
    "SearchPage",
    "Stats",
    "WriteResult",
    "check_doc_id",
]


class DocumentService(Reading, NodeWrites, Documents, Inventory):
    """The engine behind every door. Thread-safe; one instance per server process.

    Constructed as :class:`~schemadoc.service.core.ServiceCore` (schema, store, limits); every
    use case is a method of one of the concern classes it combines.
    """
