"""The operation catalogue: every operation of schemadoc, declared once.

One :class:`~schemadoc.operations.operation.Operation` per operation: its name (the MCP tool name and
the REST operationId), what it says to agents and in the API reference, its arguments and result
models, its REST routes and its traits, and the function that runs it (a service call, its result
built once for both doors). Both doors, the OpenAPI document, ``docs/tools.md`` and the Python client
are built by walking :data:`CATALOGUE`, and both doors call
:func:`~schemadoc.operations.operation.invoke`: one argument check, one limits scan, one error wording.

Adding an operation: an arguments model, a result model, a run function and one ``Operation(...)``
entry below.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from schemadoc.errors import SchemaDocError
from schemadoc.operations import arguments as a
from schemadoc.operations import results as r
from schemadoc.operations.operation import Call, Operation, Route
from schemadoc.service import DocumentService
from schemadoc.storage.base import DocumentMeta, check_doc_id

__all__ = ["BY_NAME", "CATALOGUE"]

# -- what each operation does --------------------------------------------------------------------


def _create_document(call: Call, args: a.CreateDocumentArgs) -> BaseModel:
    given = args.content is not None or "content" in args.model_fields_set
    doc_id, content, meta, report = (call.service.create_document(args.content, actor=call.actor,
                                                                  placeholders=args.placeholders or ()) if given
                                     else call.service.create_document(actor=call.actor))
    return r.CreateDocumentResult(doc_id=doc_id, version=meta.version, document_uri=call.document_uri(doc_id),
                                  schema_uri=meta.schema_uri, initial_tree=content,
                                  validation_report=r.report_body(report))


def _read_node(call: Call, args: a.ReadNodeArgs) -> BaseModel:
    service = call.service
    if call.budget is None and not args.bounded:
        read = service.read_node(args.doc_id, args.node_path, at_version=args.at_version)
        return r.ReadNodeResult(doc_id=read.doc_id, node_path=read.node_path or "/", node_content=read.node,
                                version=read.version, node_type=read.node_type)
    view = service.read_view(args.doc_id, args.node_path, at_version=args.at_version, max_depth=args.max_depth,
                             offset=args.offset, limit=args.limit, max_bytes=call.max_bytes(args.max_bytes))
    return r.read_view_result(view, args.bounded)


def _update_node(call: Call, args: a.UpdateNodeArgs) -> BaseModel:
    result = call.service.update_node(args.doc_id, args.node_path, args.node_data, args.version, dry_run=args.dry_run,
                                      scanned=call.scanned("node_data"), fill_defaults=args.fill_defaults,
                                      actor=call.actor, placeholders=args.placeholders or ())
    return r.UpdateNodeResult(node_path=result.node_path or "/", updated_node=result.node, **r.write_fields(result))


def _create_node(call: Call, args: a.CreateNodeArgs) -> BaseModel:
    result = call.service.create_node(args.doc_id, args.node_path, args.node_data, args.version, dry_run=args.dry_run,
                                      scanned=call.scanned("node_data"), fill_defaults=args.fill_defaults,
                                      actor=call.actor, placeholders=args.placeholders or ())
    return r.CreateNodeResult(created_node_path=result.node_path, created_node=result.node, **r.write_fields(result))


def _delete_node(call: Call, args: a.DeleteNodeArgs) -> BaseModel:
    result = call.service.delete_node(args.doc_id, args.node_path, args.version, dry_run=args.dry_run,
                                      actor=call.actor)
    return r.DeleteNodeResult(node_path=result.node_path, deleted_node=result.node, **r.write_fields(result))


def _apply_patch(call: Call, args: a.PatchArgs) -> BaseModel:
    result = call.service.apply_patch(args.doc_id, args.patch, args.version, dry_run=args.dry_run,
                                      scanned=call.scanned("patch"), actor=call.actor,
                                      placeholders=args.placeholders or ())
    return r.ApplyPatchResult(**r.write_fields(result))


def _move_node(call: Call, args: a.MoveNodeArgs) -> BaseModel:
    result = call.service.move_node(args.doc_id, args.from_path, args.to_path, args.version, dry_run=args.dry_run,
                                    actor=call.actor)
    moved = next((operation for operation in result.patch if operation.get("op") == "move"), None)
    from_path = moved["from"] if moved is not None else args.from_path  # concrete, as journaled
    return r.MoveNodeResult(from_path=from_path, node_path=result.node_path or "/", moved_node=result.node,
                            **r.write_fields(result))


def _merge_patch(call: Call, args: a.MergePatchArgs) -> BaseModel:
    result = call.service.merge_patch(args.doc_id, args.node_path, args.merge_patch, args.version,
                                      dry_run=args.dry_run, scanned=call.scanned("merge_patch"), actor=call.actor)
    return r.MergePatchResult(node_path=result.node_path or "/", updated_node=result.node, **r.write_fields(result))


def _revert(call: Call, args: a.RevertArgs) -> BaseModel:
    result = call.service.revert(args.doc_id, args.to_version, args.version, dry_run=args.dry_run,
                                 actor=call.actor)
    return r.RevertResult(to_version=args.to_version, **r.write_fields(result))


def _document_state(meta: DocumentMeta) -> BaseModel:
    return r.DocumentStateResult(doc_id=meta.doc_id, version=meta.version, deleted=meta.deleted_at is not None,
                                 deleted_at=meta.deleted_at)


def _delete_document(call: Call, args: a.DeleteDocumentArgs) -> BaseModel:
    return _document_state(call.service.delete_document(args.doc_id, args.version, actor=call.actor))


def _undelete_document(call: Call, args: a.DocumentArgs) -> BaseModel:
    return _document_state(call.service.undelete_document(args.doc_id, actor=call.actor))


def _purge_document(call: Call, args: a.DocumentArgs) -> BaseModel:
    call.service.purge_document(args.doc_id, actor=call.actor)
    return r.PurgeResult(doc_id=check_doc_id(args.doc_id))


def _list_documents(call: Call, args: a.ListArgs) -> BaseModel:
    service = call.service
    listing = service.list_documents(limit=args.limit, offset=args.offset, valid=args.valid, where=args.where,
                                     sort=args.sort, cursor=args.cursor)
    documents = []
    for meta in listing.documents:
        verdict = service.current_verdict(meta)
        documents.append(r.DocumentSummary(
            doc_id=meta.doc_id, label=listing.labels.get(meta.doc_id), version=meta.version,
            created_at=meta.created_at, modified_at=meta.modified_at, tree_size_bytes=meta.content_size_bytes,
            snapshot_version=meta.snapshot_version, valid=None if verdict is None else verdict.valid,
            violation_count=None if verdict is None else verdict.violation_count, schema_digest=meta.schema_digest))
    return r.ListDocumentsResult(schema_uri=service.schema_uri, documents=documents, total_documents=listing.total,
                                 has_more=listing.has_more, limit=listing.limit, offset=listing.offset,
                                 next_cursor=listing.next_cursor)


def _root_schema(call: Call, args: a.RootSchemaArgs) -> BaseModel:
    service = call.service
    root = service.root_schema(dereferenced=args.dereferenced)
    return r.RootSchemaResult(schema_uri=service.schema_uri, root_schema=root,
                              schema_version=service.schema.schema_version)


def _node_schema(call: Call, args: a.NodeSchemaArgs) -> BaseModel:
    node = call.service.node_schema(args.node_path, args.doc_id, dereferenced=args.dereferenced)
    return r.NodeSchemaResult(node_path=node.node_path or "/", node_schema=node.schema, node_exists=node.node_exists)


def _history(call: Call, args: a.HistoryArgs) -> BaseModel:
    page = call.service.history(args.doc_id, since_version=args.since_version, limit=args.limit, actor=args.actor)
    return r.history_result(page, summary=args.summary)


def _diff(call: Call, args: a.DiffArgs) -> BaseModel:
    patch = call.service.diff(args.doc_id, args.from_version, args.to_version)
    who = call.service.diff_actors(args.doc_id, args.from_version, args.to_version)
    return r.DiffResult(doc_id=check_doc_id(args.doc_id), from_version=args.from_version, to_version=args.to_version,
                        patch=patch, actors=r.DiffActorsBody(names=who.actors, complete=who.complete,
                                                             through_version=who.through_version))


def _changes(call: Call, args: a.ChangesArgs) -> BaseModel:
    page = call.service.changes(since=args.since, limit=args.limit)
    return r.ChangesResult.model_validate(page, from_attributes=True)


def _outline(call: Call, args: a.OutlineArgs) -> BaseModel:
    read, found = call.service.outline(args.doc_id, args.node_path, args.depth, offset=args.offset,
                                       limit=args.limit, max_bytes=call.max_bytes(args.max_bytes))
    return r.OutlineResult(doc_id=read.doc_id, version=read.version, node_path=read.node_path or "/",
                           outline=found.root, truncated=found.truncated, continue_at=found.continue_at,
                           **r.window_fields(found.window))


def _next_incomplete(call: Call, args: a.NextIncompleteArgs) -> BaseModel:
    return r.next_incomplete_result(*call.service.next_incomplete(args.doc_id, args.node_path, args.limit,
                                                                  include_defaults=args.include_defaults))


def _search(call: Call, args: a.SearchArgs) -> BaseModel:
    page = call.service.search(args.query, args.node_path, args.doc_ids, limit=args.limit, cursor=args.cursor,
                               ranking=args.ranking)
    hits = [r.SearchHitBody.model_validate(hit, from_attributes=True) for hit in page.hits]
    # ``note`` (docs/search.md: meaning still being indexed) only when there is one: an extra member, which keeps the
    # declared answer (and tools/list) as it was
    body: dict[str, Any] = {"query": args.query, "hits": hits, "has_more": page.has_more,
                            "next_cursor": page.next_cursor}
    if page.note is not None:
        body["note"] = page.note
    return r.SearchResult.model_validate(body)


def _stats(call: Call, args: a.DocumentArgs) -> BaseModel:
    stats = call.service.stats(args.doc_id)
    counts = stats.counts.by_type
    return r.StatsResult(doc_id=stats.doc_id, version=stats.version, size_bytes=stats.size_bytes, node_counts=counts,
                         node_total=sum(counts.values()), depth=stats.counts.depth, journal_length=stats.journal_length)


def _render(call: Call, args: a.RenderArgs) -> BaseModel:
    read, rendered = call.service.render(args.doc_id, args.node_path, args.format, offset=args.offset,
                                         limit=args.limit, max_bytes=call.max_bytes(args.max_bytes))
    return r.RenderResult(doc_id=read.doc_id, version=read.version, node_path=read.node_path or "/", format=args.format,
                          text=rendered.text, truncated=rendered.truncated, continue_at=rendered.continue_at,
                          **r.window_fields(rendered.window))


def _validate_node(call: Call, args: a.ValidateNodeArgs) -> BaseModel:
    """The verdict the write of ``node_data`` at ``node_path`` would get now: a dry run of the update where the
    node exists, else of its creation."""
    service = call.service
    version = service.version_of(args.doc_id)
    try:
        result = service.update_node(args.doc_id, args.node_path, args.node_data, version, dry_run=True,
                                     scanned=call.scanned("node_data"), fill_defaults=args.fill_defaults,
                                     report_only=True)
        write = "document_update_node"
    except SchemaDocError as error:
        if error.code != "path-not-found":
            raise
        result = service.create_node(args.doc_id, args.node_path, args.node_data, version, dry_run=True,
                                     scanned=call.scanned("node_data"), fill_defaults=args.fill_defaults,
                                     report_only=True)
        write = "document_create_node"
    return r.ValidateNodeResult(doc_id=result.doc_id, node_path=result.node_path or "/", version=result.version,
                                valid=result.accepted, write=write, validation_report=r.write_report_body(result))


def _reads_node_locally(service: DocumentService, args: a.ReadNodeArgs) -> bool:
    return args.at_version is None and not args.bounded and service.reads_locally(args.doc_id)


def _schema_locally(service: DocumentService, args: a.NodeSchemaArgs) -> bool:
    return args.doc_id is None or service.reads_locally(args.doc_id)


# -- the catalogue -------------------------------------------------------------------------------

_ID = a.EXAMPLE_ID
_WRITE_ERRORS = (400, 404, 408, 409, 413, 422)
_VERSION_NOTE = " Needs the current `version` (refusals: suggested_call)."
_BUDGET_NOTE = " Over 40,000 bytes (text and structured content): stubs or a next page (truncated: true)."
_DOCUMENT = "/documents/{doc_id}"

CATALOGUE: tuple[Operation, ...] = (
    Operation(
        "document_create", "Create a document",
        "Create a document (version 1). Without arguments: from the schema's defaults (required-field-without-default"
        " if a required field has none). With `content` (extension): absent members get defaults, then it is "
        "validated whole.",
        a.CreateDocumentArgs, r.CreateDocumentResult, _create_document, "write",
        (Route("POST", "/documents", summary="Create a document (from the schema's defaults, or from content)",
               status=201),),
        "documents", errors=(400, 413, 422, 500), examples=({"content": {"title": "Draft"}},),
        written=("content",)),
    Operation(
        "document_read_node", "Read a node",
        "Read a node, with the document's `version` for your next write; at_version reads a past version. Big nodes: "
        "max_depth, offset/limit, max_bytes."
        + _BUDGET_NOTE,
        a.ReadNodeArgs, r.ReadNodeResult, _read_node, "read",
        (Route("GET", _DOCUMENT, summary="Read a node, now or at a past version (bounded when asked)",
               defaults={"node_path": "/"}),),
        "documents", examples=({"doc_id": _ID, "node_path": "/chapters/0"},),
        local=_reads_node_locally, rest_result=r.ReadNodeResult | r.BoundedReadNodeResult),
    Operation(
        "document_update_node", "Replace a node",
        "Replace an existing node ('/' = the document); new members and items: document_create_node. "
        "fill_defaults=true fills absent members' defaults."
        + _VERSION_NOTE,
        a.UpdateNodeArgs, r.UpdateNodeResult, _update_node, "replace",
        (Route("PUT", _DOCUMENT, summary="Replace a node"),), "documents", errors=_WRITE_ERRORS,
        examples=({"doc_id": _ID, "node_path": "/title", "node_data": "A New Title", "version": 3},),
        written=("node_data",)),
    Operation(
        "document_create_node", "Create a node",
        "Create a member, an item at an index, or append with '/-'; the parent must exist. Include the members the "
        "node requires (fill_defaults=true adds those with defaults)."
        + _VERSION_NOTE,
        a.CreateNodeArgs, r.CreateNodeResult, _create_node, "write",
        (Route("POST", _DOCUMENT + "/nodes", summary="Create a node (a path ending in /- appends to an array)",
               status=201),),
        "documents", errors=_WRITE_ERRORS,
        examples=({"doc_id": _ID, "node_path": "/chapters/-", "node_data": {"title": "Intro", "pages": 12},
                   "version": 4},), written=("node_data",)),
    Operation(
        "document_delete_node", "Delete a node",
        "Delete a node (a member, or an item: later items shift down); not the root." + _VERSION_NOTE,
        a.DeleteNodeArgs, r.DeleteNodeResult, _delete_node, "replace",
        (Route("DELETE", _DOCUMENT + "/nodes", summary="Delete a node"),), "documents",
        errors=(400, 404, 408, 409, 422), examples=({"doc_id": _ID, "node_path": "/chapters/2", "version": 5},)),
    Operation(
        "document_apply_patch", "Apply a JSON Patch",
        "Apply an RFC 6902 JSON Patch as one atomic write, validated once (changes only valid together)."
        + _VERSION_NOTE,
        a.PatchArgs, r.ApplyPatchResult, _apply_patch, "replace",
        (Route("POST", _DOCUMENT + "/patch", summary="Apply an RFC 6902 JSON Patch atomically", bare="patch"),),
        "documents", errors=_WRITE_ERRORS,
        examples=({"doc_id": _ID, "patch": [{"op": "test", "path": "/title", "value": "Draft"},
                                            {"op": "replace", "path": "/title", "value": "Final"}], "version": 6},),
        written=("patch",)),
    Operation(
        "document_list", "List documents",
        "List documents (filters, order: docs/search.md) a page at a time, each with its label.",
        a.ListArgs, r.ListDocumentsResult, _list_documents, "read",
        (Route("GET", "/documents", summary="List documents"),), "documents", errors=(400,), etag=False,
        examples=({"where": ["/metadata/status eq draft"], "limit": 20},)),
    Operation(
        "schema_get_root", "Get the schema",
        "The JSON Schema every document satisfies (also the resource schema://schema).",
        a.RootSchemaArgs, r.RootSchemaResult, _root_schema, "read",
        (Route("GET", "/schema", summary="The root schema"),), "schema", errors=(400,), etag=False,
        examples=({"dereferenced": True},), local=lambda service, args: True),
    Operation(
        "schema_get_node", "Get a node's schema",
        "The JSON Schema at a node path, even where the document has no node yet; with doc_id, also whether the node "
        "exists.",
        a.NodeSchemaArgs, r.NodeSchemaResult, _node_schema, "read",
        (Route("GET", "/schema/node", summary="The schema of a node", defaults={"node_path": "/"}),), "schema",
        etag=False, examples=({"node_path": "/chapters/0", "doc_id": _ID},), local=_schema_locally),
    Operation(
        "document_history", "List a document's versions",
        "A document's versions, oldest first, page by page (since_version = next_since_version while has_more). Start"
        " with summary=true (version, op, path, time, size); read patches only where needed.",
        a.HistoryArgs, r.HistoryResult, _history, "read",
        (Route("GET", _DOCUMENT + "/history", summary="The journal: one entry per version, oldest first"),),
        "history", examples=({"doc_id": _ID, "summary": True, "limit": 20},)),
    Operation(
        "document_diff", "Compare two versions",
        "The RFC 6902 patch from from_version to to_version (either direction).",
        a.DiffArgs, r.DiffResult, _diff, "read",
        (Route("GET", _DOCUMENT + "/diff",
               summary="An RFC 6902 patch from one version to another (either direction)"),),
        "history", etag=False, examples=({"doc_id": _ID, "from_version": 3, "to_version": 5},)),
    Operation(
        "document_revert", "Revert to an earlier version",
        "Undo: a new version whose content equals to_version; the history is kept. The result's patch is the smallest"
        " that does it." + _VERSION_NOTE,
        a.RevertArgs, r.RevertResult, _revert, "replace",
        (Route("POST", _DOCUMENT + "/revert", summary="Undo: a new version whose content equals a past version",
               description="Nothing in the history is rewritten: the revert is journaled as a new version."),),
        "history", errors=(400, 404, 408, 409, 422), examples=({"doc_id": _ID, "to_version": 4, "version": 7},)),
    Operation(
        "document_merge_patch", "Apply a JSON Merge Patch",
        "Change several members of a node at once with an RFC 7396 merge patch (null removes a member)."
        + _VERSION_NOTE,
        a.MergePatchArgs, r.MergePatchResult, _merge_patch, "replace",
        (Route("PATCH", _DOCUMENT, summary="Apply an RFC 7396 JSON Merge Patch to a node",
               description="The body is the merge patch itself (`Content-Type: application/merge-patch+json`); the "
                           "version comes from `If-Match`. The merge patch is checked against the node's schema and "
                           "the result validated (`validation-failed` lists every violation either finds), then "
                           "journaled as an RFC 6902 patch.",
               whole="merge_patch", media_types=("application/merge-patch+json",), version_only_from_header=True,
               defaults={"node_path": "/"}),
         Route("POST", _DOCUMENT + "/merge", operation_id="document_merge_patch_post",
               summary="Apply an RFC 7396 JSON Merge Patch to a node (JSON body with the version)",
               description="Like PATCH /documents/{doc_id}, for clients that cannot send PATCH or "
                           "application/merge-patch+json.", defaults={"node_path": "/"})),
        "documents", errors=_WRITE_ERRORS,
        examples=({"doc_id": _ID, "node_path": "/metadata", "merge_patch": {"status": "review", "isbn": None},
                   "version": 8},), written=("merge_patch",)),
    Operation(
        "document_delete", "Delete a document",
        "Soft-delete a whole document (document_undelete restores it, document_purge erases it).",
        a.DeleteDocumentArgs, r.DocumentStateResult, _delete_document, "replace",
        (Route("DELETE", _DOCUMENT, summary="Delete a document (restorable with undelete until purged)"),),
        "documents", errors=(400, 404, 408, 409), examples=({"doc_id": _ID, "version": 9},),
        no_dry_run="it can be undone with document_undelete (POST .../undelete)."),
    Operation(
        "document_undelete", "Restore a deleted document",
        "Restore a document deleted with document_delete, with its history, as a new version.",
        a.DocumentArgs, r.DocumentStateResult, _undelete_document, "write",
        (Route("POST", _DOCUMENT + "/undelete", summary="Restore a deleted document with its whole history"),),
        "documents", errors=(400, 404, 408, 409), examples=({"doc_id": _ID},),
        no_dry_run="it can be undone with document_delete (DELETE)."),
    Operation(
        "document_purge", "Erase a deleted document",
        "Erase a deleted document and its history for good (a live one fails with conflict).",
        a.DocumentArgs, r.PurgeResult, _purge_document, "replace",
        (Route("POST", _DOCUMENT + "/purge", summary="Remove a deleted document for good (content, history and all)",
               description="Only a deleted document can be purged (otherwise `conflict`). This cannot be undone."),),
        "documents", errors=(400, 404, 408, 409), etag=False, examples=({"doc_id": _ID},),
        no_dry_run="it cannot be undone, so it is never done by accident."),
    Operation(
        "document_changes", "Changes of all documents",
        "Every committed version of every document after the cursor `since`; pass next_cursor back as since.",
        a.ChangesArgs, r.ChangesResult, _changes, "read",
        (Route("GET", "/changes", summary="Committed versions of every document, in commit order (a polling feed)",
               description="Pass `next_cursor` as `since` to get what was committed after the page: the cursor "
                           "never skips nor repeats a change, also across restarts."),),
        "feeds", errors=(400,), etag=False, examples=({"since": 0, "limit": 50},)),
    Operation(
        "document_outline", "Outline a node",
        "A node's table of contents `depth` levels down: pointer, type, count, size, title and label; no leaf values."
        " Start here on a big document." + _BUDGET_NOTE,
        a.OutlineArgs, r.OutlineResult, _outline, "read",
        (Route("GET", _DOCUMENT + "/outline",
               summary="The table of contents of a node: members and items with type, count, size and title"),),
        "navigation", examples=({"doc_id": _ID, "node_path": "/", "depth": 2},)),
    Operation(
        "document_next_incomplete", "Find what is not finished",
        "Where the document is valid but unfinished, breadth first: made-up values not yet replaced (placeholder), "
        "absent optional members, empty arrays (values equal to their default: include_defaults). Each has "
        "node_schema and, when possible, an example_call: send them in order as given. complete: true when done.",
        a.NextIncompleteArgs, r.NextIncompleteResult, _next_incomplete, "read",
        (Route("GET", _DOCUMENT + "/incomplete",
               summary="Where the document is valid but not finished by the schema, breadth first"),),
        "navigation", examples=({"doc_id": _ID, "limit": 5},)),
    Operation(
        "document_move_node", "Move a node",
        "Move a node (RFC 6902 move), also within an array to reorder it ('/-' appends)." + _VERSION_NOTE,
        a.MoveNodeArgs, r.MoveNodeResult, _move_node, "replace",
        (Route("POST", _DOCUMENT + "/move", summary="Move a node (RFC 6902 move; also reorders inside an array)"),),
        "documents", errors=_WRITE_ERRORS,
        examples=({"doc_id": _ID, "from_path": "/chapters/3", "to_path": "/chapters/0", "version": 7},)),
    Operation(
        "document_search", "Search documents",
        "Ranked full-text search of string values: pointer, snippet, label per hit.",
        a.SearchArgs, r.SearchResult, _search, "read",
        (Route("GET", "/search", summary="Text search over the string values of documents"),), "navigation",
        etag=False, examples=({"query": "lighthouse", "limit": 10},)),
    Operation(
        "document_stats", "Measure a document",
        "A document's size, node counts by type, depth, version and journal length.",
        a.DocumentArgs, r.StatsResult, _stats, "read",
        (Route("GET", _DOCUMENT + "/stats", summary="Size, node counts by type, depth, version and journal length"),),
        "navigation", examples=({"doc_id": _ID},)),
    Operation(
        "document_render", "Render a node as Markdown",
        "Markdown of a node for review: labels from the schema's titles, headings for objects, lists for arrays, in "
        "schema order." + _BUDGET_NOTE,
        a.RenderArgs, r.RenderResult, _render, "read",
        (Route("GET", _DOCUMENT + "/render", summary="A readable Markdown rendering of a node, driven by the schema"),),
        "navigation", examples=({"doc_id": _ID, "node_path": "/chapters/0"},)),
    Operation(
        "document_validate_node", "Check a value before writing it",
        "Check a value at a node without writing: the report the write would get now (see `write`). No version "
        "needed.",
        a.ValidateNodeArgs, r.ValidateNodeResult, _validate_node, "read",
        (Route("POST", _DOCUMENT + "/validate", summary="Check a value at a node without writing it"),),
        "documents", errors=(400, 404, 413),
        examples=({"doc_id": _ID, "node_path": "/metadata/status", "node_data": "review"},),
        written=("node_data",)),
)

BY_NAME: dict[str, Operation] = {operation.name: operation for operation in CATALOGUE}
