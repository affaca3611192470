"""Schema documents, ``$ref`` resolution, and the reference checks done once at load time.

A schema is a root file plus the sibling files its ``$ref`` s name. References resolve
against ``$defs``, anchors, embedded ``$id`` s and files on disk, never the network:

* a ``file://`` URI is read from disk;
* a URI under the base of an already loaded document (its ``$id`` or its file URI) maps to
  the same relative path next to that document's file, so with
  ``"$id": "https://schemadoc.dev/schemas/book.schema.json"`` a ``$ref`` to
  ``chapter.schema.json`` reads ``chapter.schema.json`` next to the book file;
* any other URI is looked up among the ``$id`` s of the ``*.json`` files next to the root.

:class:`SchemaResources` walks every document once at load (:meth:`SchemaResources.check`):
each document is meta-validated, every ``$ref`` must resolve, and no cycle may run only
through in-place applicators (``$ref``, ``allOf``, ``anyOf``, ``oneOf``, ``not``,
``if``/``then``/``else``, ``dependentSchemas``), because such a cycle never reaches the
instance's children and would make validation loop. A ``$ref`` under ``properties`` or
``items`` (a tree) is fine.
"""

from __future__ import annotations

import functools
import json
import os
import posixpath
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, urldefrag, urljoin, urlsplit
from urllib.request import url2pathname

import jsonschema_rs
from jsonschema import Draft202012Validator
from referencing import Registry, Resource
from referencing.exceptions import InvalidAnchor, NoSuchAnchor, NoSuchResource, PointerToNowhere, Unresolvable
from referencing.jsonschema import DRAFT202012

from schemadoc.errors import SchemaDocError
from schemadoc.pointer import format_pointer as fragment_pointer
from schemadoc.schema._keywords import format_pointer, iter_subschemas

if TYPE_CHECKING:
    from referencing._core import Resolver

__all__ = [
    "DRAFT_2020_12",
    "Located",
    "SchemaResources",
    "meta_problems",
    "read_schema_file",
]

DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema"
_DRAFT_2020_12_SPELLINGS = frozenset({DRAFT_2020_12, DRAFT_2020_12 + "#"})

_META_VALIDATOR = Draft202012Validator(
    Draft202012Validator.META_SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER
)
# The runtime validator's own view of the meta-schema: it reads `pattern`s as ECMA-262 regular
# expressions, which rejects some that python's `re` accepts (`\Z`, `a{,3}`, `(?P=name)`).
_RUNTIME_META_VALIDATOR = jsonschema_rs.Draft202012Validator(
    {"$ref": DRAFT_2020_12}, validate_formats=True, offline=True
)


@dataclass(frozen=True, slots=True)
class Located:
    """A subschema together with what is needed to resolve the ``$ref`` s inside it."""

    schema: Any  # dict[str, Any] | bool
    resolver: Resolver[Any]
    base_uri: str


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def read_schema_file(path: Path) -> Any:
    """Parse one schema file; ``schema-load-failed`` with ``{"path", "reason"}`` if that fails."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        reason = "the file does not exist"
    except IsADirectoryError:
        reason = "the path is a directory, not a file"
    except OSError as error:
        reason = f"the file cannot be read: {error.strerror or error}"
    else:
        try:
            return json.loads(raw, parse_constant=_reject_constant)
        except UnicodeDecodeError as error:
            reason = f"the file is not UTF-8 text: {error.reason}"
        except ValueError as error:
            reason = f"the file is not JSON: {error}"
    raise SchemaDocError(
        "schema-load-failed",
        f"cannot load the schema file {path.name}: {reason}",
        {"path": str(path), "reason": reason},
    )


def meta_problems(contents: Any) -> list[dict[str, Any]]:
    """Every way ``contents`` is not a Draft 2020-12 schema, as ``{"path", "message"}`` entries.

    ``path`` is a JSON Pointer into the schema document. Problems come from python
    ``jsonschema`` validating against the 2020-12 meta-schema (with format checks, so a
    ``pattern`` must be a valid regular expression), then from ``jsonschema_rs`` doing the same
    (it reads patterns as ECMA-262, like the runtime validator), plus a ``$schema`` naming
    another draft. The verdict depends on the schema alone, so it is kept per process for the last few
    schema texts (every server built on one schema file meta-validates it once: ~6 ms for the bundled book schema).
    """
    return [dict(problem) for problem in _meta_problems(json.dumps(contents, separators=(",", ":")))]


@functools.lru_cache(maxsize=64)
def _meta_problems(text: str) -> tuple[dict[str, Any], ...]:
    contents = json.loads(text)
    problems: list[dict[str, Any]] = []
    seen: set[tuple[str, str]] = set()
    for error in _META_VALIDATOR.iter_errors(contents):
        path = format_pointer([str(token) for token in error.absolute_path])
        if (path, error.message) not in seen:
            seen.add((path, error.message))
            problems.append({"path": path, "message": error.message})
    reported = {path for path, _ in seen}
    for runtime_error in _RUNTIME_META_VALIDATOR.iter_errors(contents):
        path = format_pointer([str(token) for token in runtime_error.instance_path])
        if path not in reported:
            reported.add(path)
            message = runtime_error.message
            if path.endswith("/pattern") or "/patternProperties/" in path:
                message += " (patterns are ECMA-262 regular expressions)"
            problems.append({"path": path, "message": message})
    if isinstance(contents, dict):
        declared = contents.get("$schema")
        if isinstance(declared, str) and declared not in _DRAFT_2020_12_SPELLINGS:
            problems.append({"path": "/$schema",
                             "message": f"only Draft 2020-12 ({DRAFT_2020_12}) is supported, not {declared!r}"})
    return tuple(problems)


def normalize_uri(uri: str) -> str:
    """``x.json#`` and ``x.json`` name the same resource."""
    return uri[:-1] if uri.endswith("#") else uri


def _own_id(contents: Any) -> str | None:
    declared = contents.get("$id") if isinstance(contents, dict) else None
    return declared if isinstance(declared, str) else None


def _base(uri: str, contents: Any) -> str:
    """What relative references in a document read from ``uri`` resolve against: its ``$id``, else ``uri``."""
    own_id = _own_id(contents)
    return urldefrag(urljoin(uri, own_id)).url if own_id else uri


class SchemaResources:
    """The root schema document and every sibling document reachable from it through ``$ref``."""

    def __init__(self, path: Path, root: Any) -> None:
        self.path = path
        self.file_uri = path.as_uri()
        self.base_uri = _base(self.file_uri, root)
        self.root_contents = root
        # uri -> (file, contents) of every document read, the root included.
        self.documents: dict[str, tuple[Path, Any]] = {}
        self._resources: dict[str, Resource[Any]] = {}
        self._bases: list[tuple[str, Path]] = []
        self._id_index: dict[str, Path] | None = None
        self._pending: list[str] = []
        self._load_errors: dict[str, SchemaDocError] = {}
        self._resolved: dict[tuple[str, str], Located] = {}
        self._frozen = False
        # mypy's attrs plugin does not know referencing's `retrieve` alias.
        self.registry: Registry[Any] = Registry(retrieve=self._retrieve)  # type: ignore[call-arg]
        self._add_document(self.file_uri, path, root)
        self._pending.clear()
        self.root = Located(root, self.registry.resolver(self.base_uri), self.base_uri)

    # -- documents --------------------------------------------------------------------

    def _add_document(self, uri: str, path: Path, contents: Any) -> Resource[Any]:
        resource = DRAFT202012.create_resource(contents)
        uris = [uri, _base(uri, contents)] if _own_id(contents) else [uri]
        for each in uris:
            self.documents.setdefault(each, (path, contents))
            self._resources[each] = resource
            self._bases.append((each, path))
        self.registry = self.registry.with_resources((each, resource) for each in uris).crawl()
        self._pending.append(uri)
        return resource

    def _retrieve(self, uri: str) -> Resource[Any]:
        """Registry callback: a document by URI, from disk only."""
        uri = normalize_uri(uri)
        known = self._resources.get(uri)
        if known is not None:
            return known
        if self._frozen:
            raise NoSuchResource(uri)
        path = self._locate(uri)
        if path is None:
            raise NoSuchResource(uri)
        try:
            contents = read_schema_file(path)
        except SchemaDocError as error:
            self._load_errors[uri] = error
            raise
        for same_uri, (same_path, same_contents) in self.documents.items():
            if same_path == path:  # the same file reached under a second URI: one resource
                resource = self._resources[same_uri]
                self._resources[uri] = resource
                self.documents[uri] = (same_path, same_contents)
                self.registry = self.registry.with_resource(uri, resource).crawl()
                return resource
        return self._add_document(uri, path, contents)

    def _locate(self, uri: str) -> Path | None:
        """The file for a URI, or None. Never touches the network."""
        parts = urlsplit(uri)
        if parts.scheme == "file":
            candidate = Path(os.path.normpath(url2pathname(parts.path)))
            return candidate if candidate.is_file() else None
        for base, base_path in self._bases:
            base_parts = urlsplit(base)
            if (base_parts.scheme, base_parts.netloc) != (parts.scheme, parts.netloc):
                continue
            relative = posixpath.relpath(parts.path or "/", posixpath.dirname(base_parts.path) or "/")
            candidate = Path(os.path.normpath(base_path.parent / url2pathname(relative)))
            if candidate.is_file():
                return candidate
        return self._id_index_lookup(uri)

    def _id_index_lookup(self, uri: str) -> Path | None:
        if self._id_index is None:
            index: dict[str, Path] = {}
            for candidate in sorted(self.path.parent.glob("*.json")):
                try:
                    contents = json.loads(candidate.read_bytes())
                except (OSError, ValueError):
                    continue
                own_id = _own_id(contents)
                if own_id:
                    index.setdefault(normalize_uri(urljoin(candidate.as_uri(), own_id)), candidate)
            self._id_index = index
        return self._id_index.get(uri)

    def freeze(self) -> None:
        """After loading: every document is known, nothing is read from disk any more.

        Later resolution starts from the final registry, which holds every document.
        """
        self._frozen = True
        self._resolved.clear()
        self.root = Located(self.root_contents, self.registry.resolver(self.base_uri), self.base_uri)

    def all_documents(self) -> list[tuple[str, Any]]:
        """``(uri, contents)`` for every document, each under every URI it is known by."""
        return [(uri, contents) for uri, (_, contents) in self.documents.items()]

    def locations(self) -> dict[int, tuple[str, tuple[str, ...]]]:
        """``id(subschema) -> ("document-uri#/json/pointer", pointer tokens)`` for every object subschema of every
        document.

        The pointer runs from the document's root (also across an embedded ``$id``), percent-encoded
        as a URI fragment, so ``{"$ref": uri}`` compiled against the registry of every document is
        exactly that subschema in its own context. Schemas are never changed after loading, so
        the ids stay valid as long as this object lives.
        """
        preferred: dict[int, tuple[str, Any]] = {}
        for uri, (_, contents) in self.documents.items():  # a document's $id comes after its file URI
            preferred[id(contents)] = (uri, contents)
        index: dict[int, tuple[str, tuple[str, ...]]] = {}
        for uri, contents in preferred.values():
            stack: list[tuple[tuple[str, ...], Any]] = [((), contents)]
            while stack:
                tokens, schema = stack.pop()
                if not isinstance(schema, dict) or id(schema) in index:
                    continue
                index[id(schema)] = (uri + "#" + quote(fragment_pointer(tokens), safe="/~!$&'()*+,;=:@"), tokens)
                for relative, sub, _ in iter_subschemas(schema):
                    stack.append(((*tokens, *relative), sub))
        return index

    # -- resolution -------------------------------------------------------------------

    def sub(self, parent: Located, schema: Any) -> Located:
        """A subschema of ``parent``; an embedded ``$id`` changes the base URI."""
        if isinstance(schema, dict) and isinstance(schema.get("$id"), str):
            resolver = parent.resolver.in_subresource(DRAFT202012.create_resource(schema))
            return Located(schema, resolver, urldefrag(urljoin(parent.base_uri, schema["$id"])).url)
        return Located(schema, parent.resolver, parent.base_uri)

    def in_place(self, starts: Iterable[Located], keywords: tuple[str, ...] = ("allOf",)
                 ) -> Iterator[tuple[Located, bool]]:
        """``starts`` and every schema they reach through ``$ref`` and ``keywords``, depth first, each with whether it
        is met for the first time (an object schema met again, or a boolean one, is not followed)."""
        seen: set[int] = set()
        stack = list(starts)[::-1]
        while stack:
            located = stack.pop()
            schema = located.schema
            first = isinstance(schema, dict) and id(schema) not in seen
            yield located, first
            if first:
                seen.add(id(schema))
                ref = schema.get("$ref")
                below = [self.resolve(located, ref)] if isinstance(ref, str) else []
                below += [self.sub(located, each) for keyword in keywords for each in schema.get(keyword, ())]
                stack += reversed(below)

    def ref_uri(self, at: Located, ref: str) -> str:
        """The absolute URI a ``$ref`` written in ``at`` points to."""
        return normalize_uri(urljoin(at.base_uri, ref))

    def resolve(self, at: Located, ref: str) -> Located:
        """The target of a ``$ref`` written in ``at``; raises ``referencing`` ``Unresolvable``."""
        key = (at.base_uri, ref)
        hit = self._resolved.get(key)
        if hit is not None:
            return hit
        resolved = at.resolver.lookup(ref)
        # referencing keeps the target's base URI private; it matters for relative refs inside
        # the target (another file, or a subschema with its own $id).
        base = getattr(resolved.resolver, "_base_uri", None)
        if not isinstance(base, str):
            base = urldefrag(urljoin(at.base_uri, ref)).url
        target = Located(resolved.contents, resolved.resolver, base)
        self._resolved[key] = target
        return target

    # -- load-time checks -------------------------------------------------------------

    def _walk(self, start: Located, label: str) -> Iterator[tuple[str, Located]]:
        """Every subschema of a document with its ``uri#pointer`` label (structure only)."""
        stack: list[tuple[tuple[str, ...], Located]] = [((), start)]
        while stack:
            tokens, located = stack.pop()
            yield _label(label, tokens), located
            if isinstance(located.schema, dict):
                children = list(iter_subschemas(located.schema))
                for relative, sub, _ in reversed(children):
                    stack.append(((*tokens, *relative), self.sub(located, sub)))

    def check(self) -> None:
        """Meta-validate every sibling, resolve every ``$ref``, reject in-place cycles."""
        order: list[tuple[str, Located]] = []
        edges: dict[int, tuple[str, Located, str]] = {}  # id of a schema with a $ref -> (uri, target, ref)
        unresolved: list[dict[str, str]] = []
        queue: list[tuple[str, Located]] = [(self.file_uri, self.root)]
        walked: set[int] = set()
        while queue:
            doc_uri, start = queue.pop(0)
            if id(start.schema) in walked:
                continue
            walked.add(id(start.schema))
            if start.schema is not self.root_contents:
                problems = meta_problems(start.schema)
                if problems:
                    raise SchemaDocError(
                        "schema-load-failed",
                        f"the referenced schema {doc_uri} is not a valid Draft 2020-12 schema",
                        {"path": str(self.documents[doc_uri][0]), "uri": doc_uri, "problems": problems},
                    )
            for label, located in self._walk(start, doc_uri):
                order.append((label, located))
                schema = located.schema
                if not isinstance(schema, dict) or not isinstance(schema.get("$ref"), str):
                    continue
                ref = schema["$ref"]
                uri = self.ref_uri(located, ref)
                try:
                    target = self.resolve(located, ref)
                except Unresolvable as error:
                    load_error = self._load_errors.get(urldefrag(uri).url)
                    if load_error is not None:
                        raise load_error from error
                    unresolved.append({"ref": ref, "at": label, "uri": uri, "reason": _reason(error, uri)})
                else:
                    edges[id(schema)] = (uri, target, ref)
                while self._pending:
                    new_uri = self._pending.pop(0)
                    _, contents = self.documents[new_uri]
                    base = _base(new_uri, contents)
                    queue.append((new_uri, Located(contents, self.registry.resolver(base), base)))
        if unresolved:
            first = unresolved[0]
            raise SchemaDocError(
                "schema-resolution-failed",
                f"$ref {first['ref']!r} at {first['at']} cannot be resolved: {first['reason']}",
                {"ref": first["ref"], "chain": [first["at"], first["uri"]], "unresolved": unresolved},
            )
        self._check_cycles(order, edges)

    def _check_cycles(self, order: list[tuple[str, Located]], edges: dict[int, tuple[str, Located, str]]) -> None:
        def successors(label: str, located: Located) -> Iterator[tuple[str, Located, str | None]]:
            schema = located.schema
            if not isinstance(schema, dict):
                return
            if id(schema) in edges:
                yield edges[id(schema)]
            for relative, sub, in_place in iter_subschemas(schema):
                if in_place:
                    yield _label(label, relative), self.sub(located, sub), None

        state: dict[int, int] = {}  # 1: on the current path, 2: done
        path: list[tuple[int, str, str | None]] = []  # (id, label, the $ref that led there) down the current path
        for start_label, start in order:
            stack: list[Iterator[tuple[str, Located, str | None]]] = [iter([(start_label, start, None)])]
            while stack:
                step = next(stack[-1], None)
                if step is None:
                    stack.pop()
                    if stack:
                        state[path.pop()[0]] = 2
                    continue
                label, located, ref = step
                if not isinstance(located.schema, dict):
                    continue
                key = id(located.schema)
                seen = state.get(key)
                if seen == 2:
                    continue
                if seen == 1:
                    at = [each[0] for each in path].index(key)
                    chain = [*(each[1] for each in path[at:]), label]
                    refs = [each for each in [*(each[2] for each in path[at + 1 :]), ref] if each is not None]
                    closing = ref if ref is not None else (refs[-1] if refs else "")
                    raise SchemaDocError(
                        "schema-resolution-failed",
                        "the schema has a reference cycle with nothing in between: " + " -> ".join(chain),
                        {"ref": closing, "chain": chain},
                    )
                state[key] = 1
                path.append((key, label, ref))
                stack.append(successors(label, located))


def _label(uri: str, tokens: tuple[str, ...]) -> str:
    """``uri`` extended by a JSON Pointer: ``x.json`` + (``$defs``, ``a``) is ``x.json#/$defs/a``."""
    if not tokens:
        return uri
    pointer = fragment_pointer(tokens)
    if "#" in uri:
        return uri + pointer if uri.split("#", 1)[1].startswith("/") or uri.endswith("#") else uri
    return uri + "#" + pointer


def _reason(error: Unresolvable, uri: str) -> str:
    document, fragment = urldefrag(uri)
    if isinstance(error, PointerToNowhere):
        return f"{document} has nothing at the JSON Pointer {fragment!r}"
    if isinstance(error, NoSuchAnchor | InvalidAnchor):
        return f"{document} has no anchor {fragment!r}"
    return (
        f"no schema document at {document}: schemadoc reads referenced schemas only from files next to "
        "the schema file (by relative path or by their $id) and never fetches them"
    )
