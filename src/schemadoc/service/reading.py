"""Reads: nodes, schemas, and the bounded reads for agents on large documents (logic in :mod:`schemadoc.reading`)."""

from __future__ import annotations

import re
from typing import Any

from schemadoc.errors import SchemaDocError
from schemadoc.pointer import format_pointer, index_token, parse, parse_node_path, resolve
from schemadoc.reading import (
    Incomplete,
    Outline,
    Rendered,
    bounded_view,
    count_nodes,
    next_incomplete,
    outline,
    render_markdown,
)
from schemadoc.search import semantic
from schemadoc.search.text import parse_text_query
from schemadoc.search.units import document_label
from schemadoc.service.checks import check_bounds, check_int, path_arg
from schemadoc.service.history import History
from schemadoc.service.models import NodeRead, NodeSchema, NodeView, SearchPage, Stats
from schemadoc.storage.base import DocumentMeta, check_doc_id
from schemadoc.validation.suggestions import placeholders

_NEGATIVE = re.compile(r"-[1-9][0-9]*")
"""A reference token that, on an array, counts from its end."""

__all__ = ["Reading"]


def _fix_call(fix: list[dict[str, Any]] | None) -> tuple[str, str, Any, bool]:
    """The call that sends a violation's fix: one node written (``document_create_node`` for an ``add``,
    ``document_update_node`` for a ``replace``), else the patch (``document_apply_patch``); none without a fix."""
    if fix and len(fix) == 1 and fix[0].get("op") in ("add", "replace") and "value" in fix[0]:
        tool = "document_create_node" if fix[0]["op"] == "add" else "document_update_node"
        return tool, fix[0]["path"] or "/", fix[0]["value"], True
    return "document_apply_patch", "", fix, bool(fix)

_MAX_OUTLINE_DEPTH = 32
_MAX_INCOMPLETE = 100
_MAX_SEARCH_HITS = 100


class Reading(History):
    """The read use cases. None takes the write lock: they read the current immutable state."""

    def read_node(self, doc_id: str, node_path: str, at_version: int | None = None) -> NodeRead:
        """The node at ``node_path`` now, or at ``at_version`` (a past version) when given."""
        if at_version is not None:
            return self.read_node_at(doc_id, node_path, at_version)
        return self._read_tokens(doc_id, node_path)[0]

    def read_document(self, doc_id: str) -> tuple[Any, DocumentMeta]:
        """The whole current document (validated on the way out, FR-034) and its meta.

        A document the served schema refuses is returned when its meta explains it (its last write was judged
        by another schema, or left violations a repair allowed): the meta's verdict says so to the reader.
        Otherwise a refusal means its files were edited behind the server's back: ``storage-read-failed``.
        """
        doc_id = check_doc_id(doc_id)
        state = self._state(doc_id)
        report = self.validator.validate(state.content)
        meta, digest = state.meta, self.schema.digest
        explained = meta.schema_digest != digest or (meta.verdict is not None and not meta.verdict.valid)
        if not report.valid and not explained:
            raise SchemaDocError("storage-read-failed",
                                 f"Document {doc_id} on disk no longer validates against the schema.",
                                 {"doc_id": doc_id, "violations": report.to_dict()["errors"][:20]})
        return state.content, state.meta

    def node_schema(self, node_path: str, doc_id: str | None = None, *, dereferenced: bool = True) -> NodeSchema:
        tokens = parse_node_path(path_arg(node_path))
        exists: bool | None = None
        if doc_id is not None:
            state = self._state(check_doc_id(doc_id))
            try:
                tokens = [str(token) for token in resolve(state.content, tokens)[1]]  # negative indices: concrete
                exists = True
            except SchemaDocError as error:
                if error.code != "path-not-found":
                    raise
                exists = False
        schema = self.schema.node_schema(tokens, dereferenced=dereferenced)
        return NodeSchema(format_pointer(tokens), schema, exists)

    def root_schema(self, *, dereferenced: bool = True) -> dict[str, Any]:
        return self.schema.dereferenced_root() if dereferenced else self.schema.root

    def reads_locally(self, doc_id: str) -> bool:
        """Whether reading ``doc_id`` now needs no more than memory and small local files.

        True when its current content is in memory and the store is not shared: such a read
        (``read_node`` without ``at_version``, ``node_schema``) only checks freshness in the small
        meta file and, if another process wrote since, reads the journal lines after the version
        held. An asynchronous caller may run it on its event loop. A shared store (a database)
        answers even that check over the network, and a document not in memory is loaded first.
        """
        return self._shared is None and doc_id in self._states

    def version_of(self, doc_id: str) -> int:
        return self._state(check_doc_id(doc_id)).meta.version

    # -- reads for agents on large documents -------------------------------------------------

    def read_view(self, doc_id: str, node_path: str, *, at_version: int | None = None,
                  max_depth: int | None = None, offset: int = 0, limit: int | None = None,
                  max_bytes: int | None = None) -> NodeView:
        """A bounded read of a node: ``max_depth`` levels, a window of its children, within ``max_bytes``."""
        check_bounds(max_depth=max_depth, offset=offset, limit=limit, max_bytes=max_bytes)
        read = self.read_node(doc_id, node_path, at_version=at_version)
        view = bounded_view(read.node, read.node_path, self._sizes_of(read.doc_id), max_depth=max_depth, offset=offset,
                            limit=limit, max_bytes=max_bytes)
        self._states.settle(read.doc_id)  # the size cache may have grown
        return NodeView(read.doc_id, read.node_path, read.version, view)

    def outline(self, doc_id: str, node_path: str = "/", depth: int = 2, *, offset: int = 0,
                limit: int | None = None, max_bytes: int | None = None) -> tuple[NodeRead, Outline]:
        """The table of contents of a node, ``depth`` levels down, without the leaf values."""
        check_int("depth", depth, 0, _MAX_OUTLINE_DEPTH)
        check_bounds(offset=offset, limit=limit, max_bytes=max_bytes)
        read, tokens = self._read_tokens(doc_id, node_path)
        found = outline(read.node, tokens, read.node_path, self._sizes_of(read.doc_id), self._node_schemas, depth=depth,
                        offset=offset, limit=limit, max_bytes=max_bytes)
        self._states.settle(read.doc_id)  # the size cache may have grown
        return read, found

    def document_label(self, doc_id: str) -> str | None:
        """Something to recognise a document by: its first title-like root member that is text (``title``,
        ``name``, ``label``, ``code``), at most 80 characters; None when it has none or cannot be read."""
        try:
            return document_label(self._state(check_doc_id(doc_id)).content)
        except SchemaDocError:
            return None

    def next_incomplete(self, doc_id: str, node_path: str = "/", limit: int = 10, *,
                        include_defaults: bool = False) -> tuple[NodeRead, list[Incomplete], bool, int]:
        """The next places, breadth first, where the document is not finished by the schema: first, when the
        served schema rejects the document (it changed since the document was written), the places below
        ``node_path`` that violate it (reason ``violation``); then the places left to fill. Returns the read, the
        places, whether there are more, and how many violations the document has anywhere."""
        check_int("limit", limit, 1, _MAX_INCOMPLETE)
        read, tokens = self._read_tokens(doc_id, node_path)
        violations, count = self._violations_below(read.doc_id, read.node_path, limit + 1)
        found = violations[:limit]
        if len(violations) >= limit:
            return read, found, len(violations) > limit or count > len(violations), count
        room = limit - len(found)
        rest, more = next_incomplete(read.node, tokens, read.node_path, self._node_schemas, self._fits,
                                     limit=room, include_defaults=include_defaults)
        made_up = self._placeholders_below(read.doc_id, read.node_path, read.version)
        if made_up:  # breadth first with the rest (a place before a value made up at its depth)
            merged = sorted([*rest, *made_up], key=lambda item: item.pointer.count("/") if item.pointer != "/" else 0)
            more = more or len(merged) > room
            rest = merged[:room]
        return read, [*found, *rest], more, count

    def paths_changed(self, doc_id: str, since_version: int, until_version: int, *,
                      most: int = 64) -> list[str] | None:
        """The pointers the versions after ``since_version`` up to ``until_version`` wrote (each operation's
        ``path`` and ``from``), or None when they are more than ``most`` versions or one changed no content path
        (a delete or undelete of the whole document): what a version-conflict's suggestion weighs."""
        if until_version - since_version > most or since_version < 1:
            return None
        paths: list[str] = []
        for entry in self.store.read_journal(check_doc_id(doc_id), since_version=since_version,
                                             until_version=until_version):
            if not entry.patch:
                return None
            for operation in entry.patch:
                paths.extend(operation[key] for key in ("path", "from") if isinstance(operation.get(key), str))
        return paths

    def _placeholders_below(self, doc_id: str, pointer: str, version: int) -> list[Incomplete]:
        """The values the server made up (in calls sent as given) that the document still holds at or below
        ``pointer``, as unfinished places (``placeholder``): each is the agent's to replace with real content."""
        state = self._state(doc_id)
        if state.meta.version != version:  # a write in between: what was read is what is judged
            return []
        found = []
        for at in self.made_up.of(doc_id, state):
            if pointer and at != pointer and not at.startswith(pointer + "/"):
                continue
            try:
                _, concrete = resolve(state.content, parse(at), allow_negative=False)
            except SchemaDocError:
                continue
            found.append(Incomplete(at, "placeholder", self._node_schemas.get(concrete) or {},
                                    "document_update_node", at))
        return found

    def violation_count(self, doc_id: str) -> int:
        """How many violations the served schema finds in the document now (0: valid); remembered per version."""
        return self.validator.report_of(self._state(check_doc_id(doc_id)).content).count

    def _violations_below(self, doc_id: str, pointer: str, limit: int) -> tuple[list[Incomplete], int]:
        """The first ``limit`` violations of the served schema at or below ``pointer``, as unfinished places
        (``violation``), and how many the document has anywhere."""
        content = self._state(doc_id).content
        report = self.validator.report_of(content)
        if report.valid:
            return [], 0
        below = [violation for violation in report.violations
                 if not pointer or violation.path == pointer or violation.path.startswith(pointer + "/")][:limit]
        found = []
        for violation in self.validator.with_suggestions(below, content):
            fix = violation.suggested_fix
            tool, node_path, example, has_example = _fix_call(fix)
            found.append(Incomplete(violation.path or "/", "violation", violation.schema_excerpt or {}, tool,
                                    node_path, example, has_example,
                                    bool(placeholders(fix or [], self.schema)), code=violation.code,
                                    message=violation.message, fix=fix))
        return found, report.count

    def search(self, query: str, node_path: str | None = None, doc_ids: list[str] | None = None, *,
               limit: int = 20, cursor: str | None = None, ranking: str | None = None) -> SearchPage:
        """The string leaves matching ``query`` (words, "phrases", prefix*; docs/search.md) across documents or in
        ``doc_ids``, at or below ``node_path``, best first, from the search index; a page after ``cursor``."""
        if not isinstance(query, str) or not query:
            raise SchemaDocError("invalid-request", "query must be a non-empty string.", {"argument": "query"})
        check_int("limit", limit, 1, _MAX_SEARCH_HITS)
        text = parse_text_query(query)
        tokens = parse_node_path(path_arg(node_path)) if node_path is not None else []
        below = format_pointer(tokens)
        if doc_ids is not None:
            if not isinstance(doc_ids, list) or not all(isinstance(d, str) for d in doc_ids):
                raise SchemaDocError("invalid-request", "doc_ids must be a list of document ids.",
                                     {"argument": "doc_ids"})
            doc_ids = [check_doc_id(doc_id) for doc_id in doc_ids]
            for doc_id in doc_ids:  # unknown ids fail up front, as any read of them would
                self.store.read_meta(doc_id)
        if any(_NEGATIVE.fullmatch(token) or (len(token) > 18 and token.lstrip("-").isdigit()) for token in tokens):
            doc_ids, below = self._concrete_below(tokens, doc_ids, node_path or "")
        index = self.search_index
        if ranking is None:  # hybrid when the semantic extra ranks by meaning (docs/search.md)
            ranking = "hybrid" if "hybrid" in index.rankings() else "text"
        if ranking not in index.rankings():
            if ranking in semantic.RANKINGS:
                raise semantic.unavailable(ranking)
            raise SchemaDocError("invalid-request", f"Unknown ranking {ranking!r}: this server ranks by "
                                 f"{', '.join(index.rankings())}.", {"argument": "ranking"})
        page = index.search(text, doc_ids=doc_ids, below=below, limit=limit, cursor=cursor, ranking=ranking)
        return SearchPage(page.hits, page.next_cursor, page.note)

    def _concrete_below(self, tokens: list[str], doc_ids: list[str] | None,
                        node_path: str) -> tuple[list[str] | None, str]:
        """A ``node_path`` with negative (or huge) indices, resolved in each of ``doc_ids`` as every read resolves it:
        the documents where it names a node, and the one concrete pointer it names in all of them."""
        if doc_ids is None:
            for token in tokens:  # an index beyond 64 bits is refused as every read refuses it
                if len(token) > 18 and token.lstrip("-").isdigit():
                    index_token(token, 0, node_path, allow_negative=True)
            if not any(_NEGATIVE.fullmatch(token) for token in tokens):
                return None, format_pointer(tokens)
            raise SchemaDocError("invalid-request", "A negative index in node_path counts from the end of an array of "
                                 "one document: give doc_ids.", {"argument": "node_path", "node_path": node_path})
        found: dict[str, list[str]] = {}
        for doc_id in doc_ids:
            try:
                concrete = resolve(self._state(doc_id).content, tokens)[1]
            except SchemaDocError as error:
                if error.code == "path-not-found":  # no such node there: nothing to find
                    continue
                raise
            found.setdefault(format_pointer(concrete), []).append(doc_id)
        if len(found) > 1:
            raise SchemaDocError("invalid-request", f"node_path {node_path!r} names different nodes in the documents "
                                 f"of doc_ids ({', '.join(sorted(found))}): search them one at a time.",
                                 {"argument": "node_path", "node_path": node_path})
        if not found:
            return [], ""
        ((below, ids),) = found.items()
        return ids, below

    def stats(self, doc_id: str) -> Stats:
        """Size, node counts by type, depth, version and journal length of a document."""
        doc_id = check_doc_id(doc_id)
        state = self._state(doc_id)
        entry = self._states.entry(doc_id)
        counted = entry.counts if entry is not None else None
        if counted is None or counted[0] is not state.content:
            counted = (state.content, count_nodes(state.content))
            if entry is not None and entry.state is state:
                entry.counts = counted
        size = self._sizes_of(doc_id).size(state.content)
        self._states.settle(doc_id)  # the size cache may have grown
        return Stats(doc_id, state.meta.version, size, counted[1], state.meta.version)

    def render(self, doc_id: str, node_path: str = "/", format: str = "markdown", *, offset: int = 0,
               limit: int | None = None, max_bytes: int | None = None) -> tuple[NodeRead, Rendered]:
        """A readable rendering of a node driven by the schema (titles as headings, arrays as lists)."""
        if format != "markdown":
            raise SchemaDocError("invalid-request", f"format must be 'markdown', got {format!r}.",
                                 {"argument": "format", "value": repr(format), "accepted": ["markdown"]})
        check_bounds(offset=offset, limit=limit, max_bytes=max_bytes)
        read, tokens = self._read_tokens(doc_id, node_path)
        rendered = render_markdown(read.node, tokens, self._node_schemas, offset=offset,
                                   limit=limit, max_bytes=max_bytes)
        return read, rendered

    def _read_tokens(self, doc_id: str, node_path: str) -> tuple[NodeRead, list[str | int]]:
        """The current node at ``node_path`` and its concrete tokens (array indices as integers)."""
        doc_id = check_doc_id(doc_id)
        state = self._state(doc_id)
        node, concrete = resolve(state.content, parse_node_path(path_arg(node_path)))
        return NodeRead(doc_id, format_pointer(concrete), node, state.meta.version), concrete

    def _fits(self, schema: dict[str, Any], value: Any) -> bool:
        return self.validator.validate_fragment(schema, value).valid
