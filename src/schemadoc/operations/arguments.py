"""The arguments of every operation, one pydantic model each: types, bounds, descriptions, examples.

These models are the one description of what an operation accepts. The MCP door lists them as
tool input schemas; the REST door documents them as query parameters and request bodies and
feeds every request through them (:func:`schemadoc.operations.catalogue.invoke`), so a bad
argument gets the same ``invalid-request`` at both doors.

Fields are strict: a number is not a string, a string not a boolean. The REST door turns query
strings into the JSON values they spell (``"5"`` into ``5``) before validation, because a query
string has no other way of saying a number; JSON bodies and MCP arguments arrive typed.
The ``pattern`` of pointers and ids is documentation only: the service checks them and answers
with its own codes (``path-invalid``, ``invalid-doc-id``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, WithJsonSchema

from schemadoc.service.checks import LARGEST_INTEGER

EXAMPLE_ID = "01JC6Y0Z8K9M2N3P4Q5R6S7T8V"
ULID_PATTERN = "^[0-7][0-9A-HJKMNP-TV-Za-hjkmnp-tv-z]{25}$"
_TOKEN = "([^~/]|~[01])"  # a reference token: '~' only as '~0' or '~1'
_POINTER = f"^(/{_TOKEN}*)*$"
_NODE_POINTER = f"^/({_TOKEN}+(/{_TOKEN}*)*|(/{_TOKEN}*)+)$"


def _text(description: str, **extra: Any) -> Any:
    return Field(strict=True, description=description, json_schema_extra=extra or None)


def _count(description: str, low: int, high: int | None = None) -> Any:
    """An integer from ``low`` to ``high``; without ``high``, at most :data:`LARGEST_INTEGER` (a signed 64-bit
    integer: a bigger one is ``invalid-request``, never a failure). The OpenAPI document declares that maximum (a
    request above it is not schema-valid); tools/list leaves it out (a 19-digit ``maximum`` on every count would
    only lengthen it: the server's instructions say it once)."""
    return Field(strict=True, ge=low, le=LARGEST_INTEGER if high is None else high, description=description)


DocId = Annotated[str, _text("The document's ULID (from document_create or document_list).", pattern=ULID_PATTERN)]
NodePath = Annotated[str, _text(
    "JSON Pointer (RFC 6901) to the node: '/' is the root, '/chapters/0/title' a member of an item; '~1' escapes "
    "'/', '~0' '~'; '/chapters/-1' is the last item.", pattern=_POINTER)]
NewNodePath = Annotated[str, _text(
    "JSON Pointer of the new node: a member ('/title'), an index to insert at ('/chapters/0'; '/chapters/-1': "
    "before the last) or '/chapters/-' to append. The parent must exist.", pattern=_POINTER)]
DeletedPath = Annotated[str, _text("RFC 6901 JSON Pointer of the node to delete (not the root); '/tags/-1' is the "
                                   "last item.", pattern=_NODE_POINTER)]
NodeData = Annotated[Any, Field(description="The node's JSON value; it must fit the schema at node_path "
                                             "(schema_get_node).")]
Version = Annotated[int, _count("The version of your last read or write; a stale one fails with version-conflict "
                                "(details.actual_version). REST: also as If-Match.", 1)]
DryRun = Annotated[bool, _text("true: answer what the write would (its result or its error, marked dry_run) "
                               "without writing.")]
FillDefaults = Annotated[bool, _text("true (extension): absent members of node_data get the schema's defaults "
                                     "first, as in document_create.")]
def _placeholders_schema(schema: dict[str, Any]) -> None:
    for part in (schema, *schema.get("anyOf", ())):  # tools/list stays short: the bound is checked, not listed
        part.pop("maxItems", None)
        part.pop("title", None)


Placeholders = Annotated[list[str] | None, Field(
    strict=True, max_length=1000, json_schema_extra=_placeholders_schema,
    description="Optional (extension): send it as a suggested or example call gives it. The pointers (relative to "
                "node_data or content; a patch: in the document) of the values the server made up there; "
                "document_next_incomplete lists them (reason placeholder) until they are written over.")]
_OPERATIONS = {"add": ("path", "value"), "remove": ("path",), "replace": ("path", "value"),
               "move": ("from", "path"), "copy": ("from", "path"), "test": ("path", "value")}
_MEMBERS: dict[str, Any] = {"path": {"type": "string", "pattern": _POINTER},
                            "from": {"type": "string", "pattern": _POINTER}, "value": {}}
Patch = Annotated[Any, WithJsonSchema({
    "type": "array",
    "description": "RFC 6902 operations (add, remove, replace, move, copy, test), e.g. {\"op\": \"add\", "
                   "\"path\": \"/tags/-\", \"value\": \"x\"}; applied atomically, validated once. Paths are strict "
                   "RFC 6901: no negative indices.",
    "items": {"oneOf": [{"type": "object", "required": ["op", *members],
                         "properties": {"op": {"const": op}, **{name: _MEMBERS[name] for name in members}}}
                        for op, members in _OPERATIONS.items()]}})]
MergePatch = Annotated[Any, Field(
    description="RFC 7396: members set (objects merge), null removes; a non-object replaces the node.")]
Dereferenced = Annotated[bool, _text("true: resolve $ref so the schema is self-contained (cycles stay as $ref); "
                                     "false: return it as written.")]
AtVersion = Annotated[int | None, _count("A past version to read (1 = as created); leave it out for the current "
                                         "one.", 1)]
MaxDepth = Annotated[int | None, _count("Container levels to show below the node; deeper ones become stubs (type, "
                                        "count, size_bytes, pointer).", 0, 255)]
WindowOffset = Annotated[int, _count("Members, items or characters of the node to skip.", 0)]
WindowLimit = Annotated[int | None, _count("At most this many members, items or characters.", 1)]
MaxBytes = Annotated[int | None, _count("A size cap in bytes of JSON for the node (over MCP at most 40,000).", 512)]


class Arguments(BaseModel):
    """Every operation's arguments: unknown members are refused, nothing is coerced."""

    model_config = ConfigDict(extra="forbid", frozen=True)


class CreateDocumentArgs(Arguments):
    """No arguments: the document is built from the schema's defaults (the spec's create). ``content`` (an
    extension): the document to start from; absent members get their defaults, then it is validated whole."""

    content: Annotated[Any, Field(
        description="Optional (extension): the initial document; absent members get the schema's defaults, then "
                    "every violation is refused at once.")] = None
    placeholders: Placeholders = None


class ListArgs(Arguments):
    limit: Annotated[int, _count("How many documents to return (1-1000).", 1, 1000)] = 100
    offset: Annotated[int, _count("How many documents to skip (for paging).", 0)] = 0
    valid: Annotated[bool | None, _text("Only valid (true) or invalid (false) ones.")] = None
    where: Annotated[list[Any] | None, Field(description=(
        "All must hold: [key, op, value] or 'key op value'. key: indexed pointer|created|modified|version|doc_id|"
        "valid; op: eq|ne|lt|gt|le|ge|in|exists|prefix|contains."))] = None
    sort: Annotated[str | None, _text("A where key (default created); -key: descending.")] = None
    cursor: Annotated[str | None, _text("next_cursor of the last page.")] = None


class RootSchemaArgs(Arguments):
    dereferenced: Dereferenced = True


class NodeSchemaArgs(Arguments):
    node_path: NodePath
    doc_id: Annotated[str | None, _text("Optional document id: when given, the result also says whether the node "
                                        "exists there.", pattern=ULID_PATTERN)] = None
    dereferenced: Dereferenced = True


class DocumentArgs(Arguments):
    doc_id: DocId


class ReadNodeArgs(DocumentArgs):
    node_path: NodePath
    at_version: AtVersion = None
    max_depth: MaxDepth = None
    offset: WindowOffset = 0
    limit: WindowLimit = None
    max_bytes: MaxBytes = None

    @property
    def bounded(self) -> bool:
        """Whether a window, depth or size was asked for."""
        return self.max_depth is not None or self.offset != 0 or self.limit is not None or self.max_bytes is not None


class _Write(DocumentArgs):
    version: Version
    dry_run: DryRun = False


class UpdateNodeArgs(_Write):
    node_path: NodePath
    node_data: NodeData
    fill_defaults: FillDefaults = False
    placeholders: Placeholders = None


class CreateNodeArgs(_Write):
    node_path: NewNodePath
    node_data: NodeData
    fill_defaults: FillDefaults = False
    placeholders: Placeholders = None


class ValidateNodeArgs(DocumentArgs):
    node_path: NewNodePath
    node_data: NodeData
    fill_defaults: FillDefaults = False


class DeleteNodeArgs(_Write):
    node_path: DeletedPath


class PatchArgs(_Write):
    patch: Patch
    placeholders: Placeholders = None


class MoveNodeArgs(_Write):
    from_path: Annotated[str, _text("RFC 6901 JSON Pointer of the node to move (not the root); -1 is the last item.",
                                    pattern=_NODE_POINTER)]
    to_path: Annotated[str, _text("Where it goes: a new member, an array index to insert at (-1: before the last, "
                                  "counted without the moved node), or '/-' to append (inside the same array this "
                                  "reorders).", pattern=_POINTER)]


class MergePatchArgs(_Write):
    node_path: NodePath
    merge_patch: MergePatch


class RevertArgs(_Write):
    to_version: Annotated[int, _count("The earlier version whose content the document should get back (see "
                                      "document_history).", 1)]


class DeleteDocumentArgs(DocumentArgs):
    version: Version


class HistoryArgs(DocumentArgs):
    since_version: Annotated[int, _count("Return the versions after this one (0 = from the first); pass the "
                                         "previous page's next_since_version to get the next page.", 0)] = 0
    limit: Annotated[int, _count("How many versions to return (1-1000).", 1, 1000)] = 100
    summary: Annotated[bool, _text("true: each version's op, path, time and patch size instead of its patch.")] = False
    actor: Annotated[str | None, Field(strict=True, min_length=1, max_length=200,
                                       description="Only the versions this actor made (exact name).")] = None


class DiffArgs(DocumentArgs):
    from_version: Annotated[int, _count("The version the patch applies to (1 or more).", 1)]
    to_version: Annotated[int, _count("The version the patch produces (1 or more).", 1)]


class ChangesArgs(Arguments):
    since: Annotated[int, _count("Return the changes committed after this cursor: 0 for everything, else the "
                                 "next_cursor of your previous call.", 0)] = 0
    limit: Annotated[int, _count("How many changes to return (1-1000).", 1, 1000)] = 100


class OutlineArgs(DocumentArgs):
    node_path: NodePath = "/"
    depth: Annotated[int, _count("How many levels of members and items to list (0-32).", 0, 32)] = 2
    offset: WindowOffset = 0
    limit: WindowLimit = None
    max_bytes: MaxBytes = None


class NextIncompleteArgs(DocumentArgs):
    node_path: NodePath = "/"
    limit: Annotated[int, _count("How many places to return (1-100).", 1, 100)] = 10
    include_defaults: Annotated[bool, _text("true: also list values equal to their schema default (reason "
                                            "default-value).")] = False


class SearchArgs(Arguments):
    query: Annotated[str, Field(strict=True, min_length=1,
                                description='Words (all must match, any case), "a phrase", prefix*.')]
    node_path: Annotated[str | None, _text("Only search below this JSON Pointer (in each document that has it).",
                                           pattern=_POINTER)] = None
    doc_ids: Annotated[list[str] | None, Field(description="Only these documents.")] = None
    limit: Annotated[int, _count("How many hits to return (1-100).", 1, 100)] = 20
    cursor: Annotated[str | None, _text("next_cursor of the last page.")] = None
    ranking: Annotated[str | None, _text("text (BM25), semantic or hybrid (default if installed).")] = None


class RenderArgs(DocumentArgs):
    node_path: NodePath = "/"
    format: Annotated[str, _text("Only 'markdown'.", enum=["markdown"])] = "markdown"
    offset: Annotated[int, _count("Render from this child of the node.", 0)] = 0
    limit: Annotated[int | None, _count("At most this many children of the node.", 1)] = None
    max_bytes: MaxBytes = None

