"""The locations of a document as the incremental walk sees them: the schemas that apply at each one.

A :class:`Node` knows every schema that applies at one location (through ``properties``,
``patternProperties``, ``additionalProperties``, ``prefixItems``, ``items``, ``$ref``, ``allOf``
and ``dependentSchemas``), whether its verdict is local, and its compiled validators; a
:class:`Locations` builds and keeps them (see :mod:`schemadoc.validation.incremental`).
"""

from __future__ import annotations

import threading
from typing import Any, Final

import jsonschema_rs

from schemadoc.schema import LoadedSchema
from schemadoc.schema._keywords import member_subschemas
from schemadoc.schema.refs import Located

__all__ = ["Errors", "Locations", "Node", "PlacedError", "Unsupported"]

# Keywords asserted on a container itself (looking at its members or items as a whole at most).
# The others are either annotations, child keywords, or assert only on strings and numbers,
# which the walk always validates whole.
_SHALLOW: Final = frozenset({"type", "enum", "const", "required", "minProperties", "maxProperties", "dependentRequired",
                             "minItems", "maxItems", "uniqueItems", "minContains", "maxContains"})
_SHALLOW_SUBSCHEMAS: Final = ("contains", "propertyNames")
# Keywords whose verdict can change when something below them changes, in ways no local check
# sees, or that some draft gave a meaning the runtime validator may still honour. Any other
# keyword is an annotation to the runtime validator (it asserts nothing it does not know).
_NON_LOCAL: Final = frozenset({"oneOf", "anyOf", "not", "if", "then", "else", "unevaluatedProperties",
                               "unevaluatedItems", "$dynamicRef", "$recursiveRef", "$recursiveAnchor", "dependencies",
                               "additionalItems", "$vocabulary"})
_SHALLOW_ASSERTED: Final = _SHALLOW | frozenset(_SHALLOW_SUBSCHEMAS)
# Errors carrying their alternatives' errors, whose paths are relative to the validated subtree.
_BRANCHING: Final = frozenset({"oneOf", "anyOf", "anyOfMultipleErrors", "oneOfMultipleValid", "oneOfNotValid"})
_MAX_CHILD_MEMO = 4096
_FAILED: Final = object()  # a validator that cannot be compiled apart (remembered, not retried)


class Unsupported(Exception):
    """Internal: the incremental walk cannot decide here; validate the whole document."""


class PlacedError:
    """A runtime validator's error, placed in the whole document and in the schema's own documents.

    It has what :mod:`schemadoc.validation` reads of an error: ``kind``, ``message``,
    ``instance``, ``instance_path`` (from the document's root) and ``schema_path`` (the keyword's
    location in its schema document, as whole-document validation gives it).
    """

    __slots__ = ("instance", "instance_path", "kind", "message", "schema_path")

    def __init__(self, error: Any, path: tuple[str | int, ...], schema_path: tuple[str | int, ...]) -> None:
        kind = error.kind
        # an error carrying its alternatives' errors (oneOf, anyOf): theirs are placed in the validated
        # subtree too, and their schema paths are already the schema's own
        self.kind = _PlacedKind(kind, path) if kind.name in _BRANCHING or getattr(kind, "context", None) else kind
        self.message: str = error.message
        self.instance = error.instance
        # the runtime validator leaves empty member names out of its instance paths (an error
        # in {"": {"a": 1}} at "/a"): whole-document reports say so, and so must this one
        self.instance_path = (*(token for token in path if token != ""), *error.instance_path)
        self.schema_path = schema_path


class _PlacedKind:
    """The kind of a branching error (``oneOf``, ``anyOf``) with each alternative's errors placed in the whole
    document, as whole-document validation gives them."""

    __slots__ = ("_kind", "context", "name")

    def __init__(self, kind: Any, path: tuple[str | int, ...]) -> None:
        self._kind = kind
        self.name: str = kind.name
        self.context = [[PlacedError(sub, path, tuple(sub.schema_path)) for sub in branch]
                        for branch in getattr(kind, "context", None) or ()]

    def as_dict(self) -> Any:
        return self._kind.as_dict()


class Errors(list[PlacedError]):
    """Errors collected by the walk; more than ``limit`` of them: report the whole document."""

    def __init__(self, limit: int, *, unexpected: bool = True) -> None:
        super().__init__()
        self.limit = limit
        self.unexpected = unexpected
        """Whether a new member ``additionalProperties: false`` refuses is told as its object's error here (else
        the walk gives up on it: the repair rule compares both directions, and needs every check alike in both)."""

    def add(self, error: PlacedError) -> None:
        if len(self) >= self.limit:
            raise Unsupported
        self.append(error)


class Node:
    """Every schema that applies at one location of a document, and what follows from them.

    ``direct`` are the schemas as their parents name them; ``members`` the object schemas they
    amount to through ``$ref`` and ``allOf``. ``local`` says whether the node's verdict is its
    shallow keywords plus its children's verdicts.
    """

    __slots__ = (
        "_by_index", "_by_key", "_checker", "_items", "_whole", "dependent", "direct", "impossible", "local",
        "members", "merged", "prefix_items", "shallow", "unconstrained",
    )

    def __init__(self, checker: Locations, direct: tuple[Located, ...]) -> None:
        self._checker = checker
        self.direct = direct
        self._whole: tuple[Any, ...] | None = None
        self._by_key: dict[str, Node] = {}
        self._by_index: dict[int, Node] = {}
        self._items: Node | None = None
        members: list[Located] = []
        self.impossible = False
        self.local = True
        self.merged = False  # a schema reached twice here: whole validation evaluates it twice
        for located, first in checker.resources.in_place(direct):
            schema = located.schema
            if schema is True:
                continue
            if not isinstance(schema, dict):
                self.impossible = True
            elif not first:
                self.merged = True
            else:
                members.append(located)
                if any(keyword in _NON_LOCAL for keyword in schema):
                    self.local = False
        self.members = tuple(members)
        self.unconstrained = not members and not self.impossible
        self.dependent: tuple[tuple[str, Located], ...] = tuple(
            (name, checker.resources.sub(member, sub))
            for member in members
            for name, sub in (member.schema.get("dependentSchemas") or {}).items()
        )
        self.prefix_items = any(member.schema.get("prefixItems") for member in members)
        self.shallow: tuple[Any, ...] = tuple(
            validator for member in members if (validator := checker.shallow_validator(member)) is not None
        ) if self.local else ()

    # -- checks: the verdict, or with ``out`` the errors placed at ``path`` ------------------

    def whole(self, instance: Any, path: tuple[str | int, ...], out: Errors | None = None) -> bool:
        """``instance`` against every schema of this location, as a whole."""
        if self.impossible:
            if out is not None:
                raise Unsupported  # a false schema: reported whole
            return False
        whole = self._whole
        if whole is None:
            whole = self._whole = tuple(
                self._checker.location_validator(located) for located in self.direct if located.schema is not True
            )
        if out is None:
            return all(validator.is_valid(instance) for validator in whole)
        for validator in whole:
            for error in validator.iter_errors(instance):
                out.add(PlacedError(error, path, tuple(error.schema_path)))
        return True

    def own(self, instance: Any, path: tuple[str | int, ...], out: Errors | None = None) -> bool:
        """This location's own keywords (see :meth:`Locations.shallow_validator`)."""
        if out is None:
            for validator in self.shallow:  # noqa: SIM110 - all() over a generator costs more on this hot path
                if not validator.is_valid(instance):
                    return False
            return True
        if self.merged:
            raise Unsupported
        checker = self._checker
        for member in self.members:
            validator = checker.shallow_validator(member)
            if validator is None:
                continue
            prefix: tuple[str, ...] | None = None
            for error in validator.iter_errors(instance):
                schema_path = tuple(error.schema_path)
                if error.kind.name == "propertyNames" and isinstance(member.schema.get("propertyNames"), dict):
                    pass  # compiled as a $ref to its own location: the path is the schema's already
                elif schema_path and schema_path[0] in _SHALLOW_ASSERTED:
                    if prefix is None:
                        prefix = checker.pointer(member.schema)
                    schema_path = prefix + schema_path
                else:
                    raise Unsupported
                out.add(PlacedError(error, path, schema_path))
        return True

    def unexpected(self, instance: dict[str, Any], name: str, path: tuple[str | int, ...], out: Errors, *,
                   report: bool) -> None:
        """A new member ``name`` of ``instance`` that this location's ``additionalProperties: false`` refuses: its
        errors placed as whole validation places them, one per such schema on ``instance`` itself, naming every
        unexpected member (``report``: the first such member of ``instance``; the others are in its errors).
        ``Unsupported`` where something else refuses it (a false schema of its own, a schema naming it)."""
        members = self.members
        checker = self._checker
        refused = False
        for member in members:
            schema: dict[str, Any] = member.schema
            if member_subschemas(schema, name, checker.matches, additional=False):
                raise Unsupported  # a schema of its own applies too
            additional = schema.get("additionalProperties", True)
            if additional is not True and additional is not False:
                raise Unsupported
            refused = refused or additional is False
        if not refused:
            raise Unsupported
        if not report:
            return
        for member in members:
            if member.schema.get("additionalProperties") is False:
                prefix = checker.pointer(member.schema)
                for error in checker.additional_validator(member).iter_errors(instance):
                    out.add(PlacedError(error, path, (*prefix, *error.schema_path)))

    # -- children -------------------------------------------------------------------------

    def for_key(self, name: str) -> Node:
        node = self._by_key.get(name)
        if node is None:
            if len(self._by_key) >= _MAX_CHILD_MEMO:
                self._by_key.clear()
            node = self._by_key[name] = self._checker.node(tuple(self._member_schemas(name)))
        return node

    def for_index(self, index: int) -> Node:
        if not self.prefix_items:
            if self._items is None:
                self._items = self._checker.node(tuple(self._item_schemas(index)))
            return self._items
        node = self._by_index.get(index)
        if node is None:
            if len(self._by_index) >= _MAX_CHILD_MEMO:
                self._by_index.clear()
            node = self._by_index[index] = self._checker.node(tuple(self._item_schemas(index)))
        return node

    def with_dependents(self, instance: dict[str, Any]) -> Node:
        """This location with the ``dependentSchemas`` that ``instance``'s members trigger (and theirs)."""
        node = self
        while True:
            triggered = tuple(located for name, located in node.dependent if name in instance)
            grown = self._checker.node(self.direct + triggered) if triggered else self
            if grown is node:
                return node
            node = grown

    def _member_schemas(self, name: str) -> list[Located]:
        checker = self._checker
        return [checker.resources.sub(member, each) for member in self.members
                for each in member_subschemas(member.schema, name, checker.matches)]

    def _item_schemas(self, index: int) -> list[Located]:
        sub = self._checker.resources.sub
        out: list[Located] = []
        for member in self.members:
            schema: dict[str, Any] = member.schema
            prefix = schema.get("prefixItems")
            if isinstance(prefix, list) and index < len(prefix):
                out.append(sub(member, prefix[index]))
            elif "items" in schema:
                out.append(sub(member, schema["items"]))
        return out


class Locations:
    """The schemas of each location of a document and their compiled validators, built once and shared.

    A location is known by the schemas that apply there (:class:`Node`); its validators are
    ``{"$ref": "<document>#<pointer>"}`` compiled against the registry of every schema document,
    so each subschema sees its own base URI, anchors and ``$defs``. Safe to share between threads.
    """

    def __init__(self, schema: LoadedSchema) -> None:
        self.schema = schema
        self.resources = schema.resources
        self.whole = schema.make_validator()
        """The whole schema's validator (the root location's, and the walk's fallback)."""
        self._locations = self.resources.locations()
        self._lock = threading.Lock()
        self._nodes: dict[tuple[int, ...], Node] = {}
        self._location_validators: dict[str, Any] = {}
        self._shallow: dict[int, Any] = {}
        self._patterns: dict[tuple[str, str], bool] = {}
        self._root: Node | None = None

    def root(self) -> Node:
        root = self._root
        if root is None:
            root = self._root = self.node((self.resources.root,))
        return root

    def pointer(self, schema: dict[str, Any]) -> tuple[str, ...]:
        """The tokens of a subschema's location in its schema document."""
        tokens = self._locate(schema)[1]
        if tokens and tokens[0] in _SHALLOW_ASSERTED:
            raise Unsupported  # its keywords' own paths could not be told from this prefix
        return tokens

    def _locate(self, schema: Any) -> tuple[str, tuple[str, ...]]:
        location = self._locations.get(id(schema))
        if location is None:
            raise Unsupported
        return location

    def node(self, direct: tuple[Located, ...]) -> Node:
        key = tuple(id(located.schema) if isinstance(located.schema, dict) else int(bool(located.schema))
                    for located in direct)
        node = self._nodes.get(key)
        if node is None:
            try:
                node = Node(self, direct)
            except Exception as error:  # an unresolvable reference the loader did not see (or Unsupported)
                raise Unsupported from error
            with self._lock:
                node = self._nodes.setdefault(key, node)
        return node

    def location_validator(self, located: Located) -> Any:
        if located.schema is self.resources.root_contents:
            return self.whole
        if not isinstance(located.schema, dict):
            return _BOOLEAN_VALIDATORS[bool(located.schema)]
        uri = self._locate(located.schema)[0]
        return self._compiled(uri, {"$ref": uri})

    def shallow_validator(self, located: Located) -> Any | None:
        """The node's own assertions without its child keywords, or None when it has none."""
        schema: dict[str, Any] = located.schema
        key = id(schema)
        if key in self._shallow:
            return self._shallow[key]
        shallow = {keyword: value for keyword, value in schema.items() if keyword in _SHALLOW}
        for keyword in _SHALLOW_SUBSCHEMAS:
            if keyword in schema:
                value = schema[keyword]
                shallow[keyword] = value if isinstance(value, bool) else {"$ref": self._locate(value)[0]}
        validator = self._compiled(f"shallow:{key}", shallow) if shallow else None
        with self._lock:
            self._shallow[key] = validator
        return validator

    def additional_validator(self, located: Located) -> Any:
        """``additionalProperties: false`` of an object schema alone, with the names and patterns it allows."""
        schema: dict[str, Any] = located.schema
        properties, patterns = schema.get("properties"), schema.get("patternProperties")
        return self._compiled(f"additional:{id(schema)}", {
            "properties": dict.fromkeys(properties if isinstance(properties, dict) else (), True),
            "patternProperties": dict.fromkeys(patterns if isinstance(patterns, dict) else (), True),
            "additionalProperties": False})

    def matches(self, pattern: str, name: str) -> bool:
        """``patternProperties`` matching exactly as the runtime validator does it (ECMA-262)."""
        key = (pattern, name)
        hit = self._patterns.get(key)
        if hit is None:
            if len(self._patterns) >= _MAX_CHILD_MEMO * 4:
                self._patterns.clear()
            validator = self._compiled("pattern:" + pattern, {"pattern": pattern})
            hit = self._patterns[key] = bool(validator.is_valid(name))
        return hit

    def _compiled(self, key: str, schema: dict[str, Any]) -> Any:
        validator = self._location_validators.get(key)
        if validator is None:
            try:
                validator = self.schema.make_validator(schema)
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException:  # cannot be compiled apart (jsonschema-rs may even panic): stay whole
                validator = _FAILED
            with self._lock:
                validator = self._location_validators.setdefault(key, validator)
        if validator is _FAILED:
            raise Unsupported
        return validator


_BOOLEAN_VALIDATORS: Final = {
    True: jsonschema_rs.Draft202012Validator(True),
    False: jsonschema_rs.Draft202012Validator(False),
}
