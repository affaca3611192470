"""Load the one JSON Schema a server instance uses, check it, and answer questions about it.

:func:`load_schema` reads the file, meta-validates it against Draft 2020-12, reads the sibling
files its ``$ref`` s name, checks that every ``$ref`` resolves and that no reference cycle is
empty (see :mod:`schemadoc.schema.refs`), and compiles the runtime validator. The returned
:class:`LoadedSchema` is immutable and safe to share between threads.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jsonschema_rs
import orjson
from jsonschema import Draft202012Validator

from schemadoc.errors import SchemaDocError
from schemadoc.schema._keywords import format_pointer
from schemadoc.schema.defaults import build_defaults
from schemadoc.schema.near_misses import near_misses
from schemadoc.schema.nodes import NodeNavigator, merge_patch_schema_for
from schemadoc.schema.refs import SchemaResources, meta_problems, read_schema_file

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["LoadedSchema", "load_schema", "schema_problems"]

_NODE_CACHE_SIZE = 4096


def _no_network(uri: str) -> Any:
    """jsonschema_rs retriever: every document is in the registry, nothing is fetched."""
    raise ValueError(f"{uri} is not part of the loaded schema and schemadoc never fetches schemas")


def load_schema(path: str | os.PathLike[str]) -> LoadedSchema:
    """Load and check the schema file at ``path``.

    Raises :class:`~schemadoc.errors.SchemaDocError`:

    * ``schema-load-failed``: the file (or a sibling it references) is missing, unreadable or not
      JSON (``details: {"path", "reason"}``), or is not a valid Draft 2020-12 schema
      (``details: {"path", "problems": [{"path", "message"}, ...]}`` listing every problem,
      each ``path`` a JSON Pointer into that schema file; ``uri`` too for a sibling file);
    * ``schema-resolution-failed``: a ``$ref`` does not resolve (``details: {"ref", "chain":
      [where it is written, what it points to], "unresolved": [every such ref]}``), or a cycle
      of references with nothing in between, such as A -> B -> A (``details: {"ref", "chain"}``
      where ``chain`` lists the URIs around the cycle, first and last the same).

    ``$ref`` s resolve against ``$defs``, anchors and files next to the schema, never the network.
    """
    file = Path(os.path.abspath(Path(path).expanduser()))
    try:
        root = read_schema_file(file)
        problems = meta_problems(root)
        if not problems and not isinstance(root, dict):
            problems = [{"path": "/", "message": "the root schema must be a JSON object, not a boolean"}]
        if problems:
            raise SchemaDocError(
                "schema-load-failed",
                f"{file.name} is not a valid Draft 2020-12 schema ({len(problems)} problem(s))",
                {"path": str(file), "problems": problems},
            )
        resources = SchemaResources(file, root)
        resources.check()
        resources.freeze()
        return LoadedSchema(resources)
    except SchemaDocError as error:
        for problem in error.details.get("problems") or ():
            if isinstance(problem, dict) and "keyword" not in problem:
                problem["keyword"] = _keyword_at(str(problem.get("path", "")))
        raise


# members of these keywords are names or positions chosen by the schema's author, not keywords
_AUTHORS_MEMBERS = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas",
                              "dependentRequired", "allOf", "anyOf", "oneOf", "prefixItems", "enum", "examples",
                              "required", "type"})


def _keyword_at(pointer: str) -> str | None:
    """The schema keyword a problem at ``pointer`` sits in: the last token of the pointer that is a keyword
    (``/properties/title/minLength`` -> ``minLength``, ``/properties/title`` -> ``properties``)."""
    tokens = [token.replace("~1", "/").replace("~0", "~") for token in pointer.split("/")[1:] if pointer]
    keyword: str | None = None
    parent: str | None = None
    for token in tokens:
        if parent not in _AUTHORS_MEMBERS and token != "":
            keyword = token
        parent = None if parent in _AUTHORS_MEMBERS else token
    return keyword


def schema_problems(error: SchemaDocError) -> list[dict[str, Any]]:
    """Every problem a schema failure (``schema-load-failed``, ``schema-resolution-failed``) names, each as
    ``{"file", "pointer", "keyword", "reason"}``: ``pointer`` is a JSON Pointer into ``file``, ``keyword`` the
    schema keyword at fault (None when the problem is the file itself). Other errors give ``[]``."""
    details = error.details
    file = str(details.get("path") or details.get("uri") or "")
    if error.code == "schema-load-failed":
        problems = details.get("problems")
        if isinstance(problems, list):
            listed = [{"file": file, "pointer": str(p.get("path", "")), "keyword": p.get("keyword"),
                       "reason": str(p.get("message", ""))} for p in problems if isinstance(p, dict)]
            return sorted(listed, key=lambda problem: (problem["pointer"], problem["reason"]))
        return [{"file": file, "pointer": "", "keyword": None, "reason": str(details.get("reason") or error.message)}]
    if error.code == "schema-resolution-failed":
        unresolved = details.get("unresolved")
        if isinstance(unresolved, list) and unresolved:
            out: list[dict[str, Any]] = []
            for u in unresolved:
                if isinstance(u, dict):
                    where, _, pointer = str(u.get("at", "")).partition("#")
                    out.append({"file": where.removeprefix("file://"), "pointer": pointer, "keyword": "$ref",
                                "reason": f"$ref {u.get('ref')!r} cannot be resolved: {u.get('reason')}"})
            return out
        chain = [str(link) for link in details.get("chain") or ()]
        where, _, pointer = (chain[0] if chain else "").partition("#")
        return [{"file": where.removeprefix("file://"), "pointer": pointer, "keyword": "$ref",
                 "reason": "a reference cycle with nothing in between: " + " -> ".join(chain)}]
    return []


class LoadedSchema:
    """A checked schema: validators, node schemas, defaults and merge-patch schemas.

    Attributes:
        path: the schema file (absolute).
        uri: the ``file://`` URI of that file.
        base_uri: what relative ``$ref`` s in the root resolve against: the root's ``$id``
            (made absolute against ``uri``) or ``uri`` when it has none.
        root: the root schema exactly as loaded; do not modify it.
        schema_version: the root's ``version``, ``x-version`` or ``$comment``, else None.
        resource_uris: the URIs of every schema document in play (root and siblings).
        resources: those documents and ``$ref`` resolution (frozen: nothing is read any more).

    Methods returning schemas or documents return fresh objects the caller may keep or change.
    """

    def __init__(self, resources: SchemaResources) -> None:
        self.resources = resources
        self.path: Path = resources.path
        self.uri: str = resources.file_uri
        self.base_uri: str = resources.base_uri
        self.root: dict[str, Any] = resources.root_contents
        self.schema_version: str | None = _schema_version(self.root)
        self.resource_uris: tuple[str, ...] = tuple(uri for uri, _ in resources.all_documents())
        self._navigator = NodeNavigator(resources)
        self._rs_registry = jsonschema_rs.Registry(resources.all_documents(), retriever=_no_network)
        self._node_cached = functools.lru_cache(maxsize=_NODE_CACHE_SIZE)(self._navigator.node)
        try:
            self._validator = self._compile(self.root, root=True)
        except jsonschema_rs.ValidationError as error:  # meta-validation should have caught it
            path = format_pointer([str(token) for token in error.instance_path])
            problem = {"path": path, "message": error.message}
            raise SchemaDocError(
                "schema-load-failed",
                f"{self.path.name} cannot be compiled: {error.message}",
                {"path": str(self.path), "problems": [problem]},
            ) from error

    def __repr__(self) -> str:
        return f"LoadedSchema(uri={self.uri!r}, base_uri={self.base_uri!r})"

    @functools.cached_property
    def digest(self) -> str:
        """``sha256:<hex>`` of the schema as it validates: the root document and every document its ``$ref`` s
        reach, each as canonical JSON (sorted members, no spaces), named by its path relative to the root's
        folder. Where the files live, their formatting and member order do not change it; any change to a
        keyword, a description included, does."""
        folder = self.path.parent
        files = {os.path.relpath(file, folder).replace(os.sep, "/"): contents
                 for file, contents in self.resources.documents.values()}
        canonical = orjson.dumps({"root": os.path.relpath(self.path, folder), "documents": files},
                                 option=orjson.OPT_SORT_KEYS)
        return f"sha256:{hashlib.sha256(canonical).hexdigest()}"

    @functools.cached_property
    def near_misses(self) -> list[dict[str, str]]:
        """Members of the schema's objects that are not keywords but look like one (``requird``, ``minLenght``):
        legal, ignored by validation, and most likely a mistake (:mod:`schemadoc.schema.near_misses`). Each is
        ``{"file", "pointer", "keyword", "suggestion", "reason"}``, the root file's first."""
        files = {str(path): contents for path, contents in self.resources.documents.values()}
        return near_misses(files.items())

    # -- validators -------------------------------------------------------------------

    def _compile(self, schema: Any, *, root: bool) -> jsonschema_rs.Draft202012Validator:
        return jsonschema_rs.Draft202012Validator(
            schema,
            validate_formats=True,
            registry=self._rs_registry,
            base_uri=self.base_uri if root else None,
            offline=True,
        )

    def make_validator(
        self, schema: dict[str, Any] | bool | None = None
    ) -> jsonschema_rs.Draft202012Validator:
        """The compiled (jsonschema_rs) validator, formats asserted, every sibling document in its registry: for
        the whole schema the one compiled at load (immutable, thread-safe), else for ``schema`` (e.g. from
        :meth:`merge_patch_schema`, whose remaining ``$ref`` s are absolute URIs)."""
        if schema is None:
            return self._validator
        return self._compile(schema, root=False)

    def make_reference_validator(self, schema: dict[str, Any] | bool | None = None) -> Validator:
        """A python ``jsonschema`` Draft 2020-12 validator for the same schema: the test oracle.

        It shares the loaded documents through a ``referencing`` registry (no network) and
        asserts formats with ``Draft202012Validator.FORMAT_CHECKER``.
        """
        if schema is None:
            schema = self.root
            if "$id" not in schema:  # so that relative refs resolve against the file's URI
                schema = {**schema, "$id": self.uri}
        validator: Validator = Draft202012Validator(
            schema,
            registry=self.resources.registry,
            format_checker=Draft202012Validator.FORMAT_CHECKER,
        )
        return validator

    # -- node schemas -----------------------------------------------------------------

    def node_schema(self, tokens: Sequence[str], *, dereferenced: bool = True) -> dict[str, Any]:
        """The schema for the node at the decoded pointer ``tokens`` (the root is ``[]``).

        Array positions are decimal indices, ``-`` (append) or ``-1``, ``-2``… (from the end).
        Where ``oneOf``/``anyOf`` alternatives lead to different schemas the result is
        ``{"anyOf": [...]}`` of them all; a node that is itself a ``oneOf`` comes back whole.
        ``dereferenced`` inlines every ``$ref`` except recursive ones, which stay as
        ``{"$ref": <absolute URI>}``; otherwise the subschema is returned as written.

        Raises ``path-not-found`` (``details: {"path", "deepest_valid_path", "allowed"}``)
        when the schema allows nothing there, and ``path-invalid`` for an array position with a
        sign or leading zero.
        """
        return copy.deepcopy(self._node_cached(tuple(tokens), dereferenced=dereferenced))

    def shared_node_schema(self, tokens: Sequence[str]) -> dict[str, Any]:
        """:meth:`node_schema` (dereferenced) without the copy: a cached object the caller must not modify.

        For read-side walks that look up the schema of many nodes (outline, next-incomplete, render).
        """
        schema: dict[str, Any] = self._node_cached(tuple(tokens), dereferenced=True)
        return schema

    def dereferenced_root(self) -> dict[str, Any]:
        """``node_schema([], dereferenced=True)``."""
        return self.node_schema((), dereferenced=True)

    def merge_patch_schema(self, tokens: Sequence[str]) -> dict[str, Any]:
        """The schema an RFC 7396 merge patch applied at ``tokens`` must satisfy (derived from the node schema by
        :func:`schemadoc.schema.nodes.merge_patch_schema_for`); compile it with :meth:`make_validator`."""
        result: dict[str, Any] = copy.deepcopy(merge_patch_schema_for(self.shared_node_schema(tokens)))
        return result

    # -- defaults ---------------------------------------------------------------------

    def defaults(self) -> Any:
        """A fresh initial document built from the schema's defaults (rules in
        :mod:`schemadoc.schema.defaults`); raises ``required-field-without-default`` listing
        every required field without one in ``details.paths``. Callers still validate it."""
        document, failure = self._defaults
        if failure is not None:
            raise SchemaDocError(failure.code, failure.message, copy.deepcopy(failure.details))
        return copy.deepcopy(document)

    @functools.cached_property
    def _defaults(self) -> tuple[Any, SchemaDocError | None]:
        try:
            return build_defaults(self.resources), None
        except SchemaDocError as error:
            return None, error


def _schema_version(root: dict[str, Any]) -> str | None:
    for key in ("version", "x-version", "$comment"):
        value = root.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
    return None
