"""The verdict on a changed document from what the change reaches.

A write turns a valid document ``before`` into ``after`` by a patch applied on a structurally
shared copy: every subtree the patch did not touch is the *same object* in both, and stored
documents are never mutated. So ``after`` is valid if and only if what differs is valid, and
"what differs" is found by identity, walking both documents from the root:

* at each node the walk knows every schema that applies there (the root schema, then what each
  level's ``properties``/``patternProperties``/``additionalProperties``/``prefixItems``/``items``
  say about the child, through ``$ref`` and ``allOf``);
* a node whose schemas are all *local* (each keyword looks at the node alone or at one child at
  a time) is checked by its whole-container keywords (``required``, ``min/maxProperties``,
  ``dependentRequired``, ``propertyNames``, ``min/maxItems``, ``uniqueItems``, ``contains``,
  ``min/maxContains``, ``const``/``enum``, ``type``: compiled once per location without their
  child keywords), then only the children that are not the same object as before are visited;
  a new member or item is validated whole against the schemas of its location;
* an array whose items moved (an insert or a removal) keeps the verdict on its shifted items
  only when no ``prefixItems`` applies (every position has the same schema); otherwise, and at
  every node where a keyword's verdict can change non-locally (``oneOf``, ``anyOf``, ``not``,
  ``if``/``then``/``else``, ``unevaluated*``, ``dependentSchemas`` whose triggers changed, and
  any keyword not known to be local), the whole node is validated against its schemas: the
  smallest enclosing subtree that makes the verdict sound, up to the whole document;
* a schema that uses ``$dynamicRef`` anywhere is always validated whole (its dynamic scope
  depends on the path from the root).

Per-location validators are ``{"$ref": "<document>#<pointer>"}`` compiled against the registry of
every schema document, so each subschema sees its own base URI, anchors and ``$defs``. Nothing
here touches the disk.

The same walk also collects a rejected change's errors (:meth:`ChangeChecker.change_errors`):
since ``before`` was valid, every error of ``after`` lies in what the walk checks, so the errors
of those checks, placed at their node's path (and a shallow keyword at its schema's location),
are the whole document's errors. Where that cannot be told exactly (an error carrying its
alternatives', a false schema, a schema reached twice at one place, embedded ``$id`` s,
``$dynamicRef``, too many errors), the whole document is validated instead.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from itertools import compress, repeat
from itertools import count as count_from
from operator import is_not
from typing import Any, Final, TypeVar
from urllib.parse import unquote, urldefrag

import jsonschema_rs

from schemadoc.errors import SchemaDocError
from schemadoc.pointer import parse
from schemadoc.schema import LoadedSchema
from schemadoc.schema.refs import Located

__all__ = ["ChangeChecker", "PlacedError"]

# Keywords that say which schemas apply to a child (or to the same node): followed by the walk.
_CHILDREN: Final = frozenset(
    {"properties", "patternProperties", "additionalProperties", "prefixItems", "items", "$ref", "allOf",
     "dependentSchemas"}
)
# Keywords asserted on a container itself (looking at its members or items as a whole at most).
# The others are either annotations, child keywords, or assert only on strings and numbers,
# which the walk always validates whole.
_SHALLOW: Final = frozenset(
    {
        "type", "enum", "const", "required", "minProperties", "maxProperties", "dependentRequired",
        "minItems", "maxItems", "uniqueItems", "minContains", "maxContains",
    }
)
_SHALLOW_SUBSCHEMAS: Final = ("contains", "propertyNames")
# Keywords whose verdict can change when something below them changes, in ways no local check
# sees, or that some draft gave a meaning the runtime validator may still honour. Any other
# keyword is an annotation to the runtime validator (it asserts nothing it does not know).
_NON_LOCAL: Final = frozenset(
    {
        "oneOf", "anyOf", "not", "if", "then", "else", "unevaluatedProperties", "unevaluatedItems",
        "$dynamicRef", "$recursiveRef", "$recursiveAnchor", "dependencies", "additionalItems", "$vocabulary",
    }
)
_SHALLOW_ASSERTED: Final = _SHALLOW | frozenset(_SHALLOW_SUBSCHEMAS)
# Errors carrying their alternatives' errors, whose paths are relative to the validated subtree.
_BRANCHING: Final = frozenset({"oneOf", "anyOf", "anyOfMultipleErrors", "oneOfMultipleValid", "oneOfNotValid"})
_MAX_CHILD_MEMO = 4096
_MISSING: Final = object()
_FAILED: Final = object()  # a validator that cannot be compiled apart (remembered, not retried)


class _Unsupported(Exception):
    """Internal: the incremental walk cannot decide here; validate the whole document."""


class _HintMismatch(Exception):
    """Internal: a patch's paths do not exist in the documents it was given with."""


class PlacedError:
    """A runtime validator's error, placed in the whole document and in the schema's own documents.

    It has what :mod:`schemadoc.validation` reads of an error: ``kind``, ``message``,
    ``instance``, ``instance_path`` (from the document's root) and ``schema_path`` (the keyword's
    location in its schema document, as whole-document validation gives it).
    """

    __slots__ = ("instance", "instance_path", "kind", "message", "schema_path")

    def __init__(self, error: Any, path: tuple[str | int, ...], schema_path: tuple[str | int, ...]) -> None:
        self.kind = error.kind
        self.message: str = error.message
        self.instance = error.instance
        # the runtime validator leaves empty member names out of its instance paths (an error
        # in {"": {"a": 1}} at "/a"): whole-document reports say so, and so must this one
        self.instance_path = (*(token for token in path if token != ""), *error.instance_path)
        self.schema_path = schema_path


class _Errors(list[PlacedError]):
    """Errors collected by the walk; more than ``limit`` of them: report the whole document."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def add(self, error: PlacedError) -> None:
        if len(self) >= self.limit:
            raise _Unsupported
        self.append(error)


class _Hint:
    """Where a patch changed a container: children on its paths, or one member added or removed."""

    __slots__ = ("added", "children", "removed", "whole")

    def __init__(self) -> None:
        self.children: dict[str, _Hint] = {}
        self.whole = False               # replaced here: everything below may differ
        self.added: str | None = None    # one member or item added (or copied) here
        self.removed: str | None = None  # one member or item removed here


def _hint(patch: Sequence[Any]) -> _Hint | None:
    """The places a strict patch changed, or None when it must be found by scanning.

    Replacing values never moves anything, so a patch of ``replace`` (and ``test``) operations
    changed exactly the subtrees at its paths. A single ``add``, ``remove`` or ``copy`` also
    changed one container's membership at one known position. Anything else (several
    operations that insert, remove or move) may shift positions the later paths are written in.
    """
    operations = [operation for operation in patch if operation.get("op") != "test"]
    structural = [operation for operation in operations if operation.get("op") != "replace"]
    if structural and (len(operations) > 1 or structural[0].get("op") not in ("add", "remove", "copy")):
        return None
    root = _Hint()
    for operation in operations:
        try:
            tokens = parse(operation["path"])
        except (KeyError, SchemaDocError):
            return None
        if not tokens:
            root.whole = True
            continue
        hint = root
        for token in tokens[:-1]:
            hint = hint.children.setdefault(token, _Hint())
        if operation["op"] == "replace":
            hint.children.setdefault(tokens[-1], _Hint()).whole = True
        elif operation["op"] == "remove":
            hint.removed = tokens[-1]
        else:
            hint.added = tokens[-1]
    return root


class _Node:
    """Every schema that applies at one location of a document, and what follows from them.

    ``direct`` are the schemas as their parents name them; ``members`` the object schemas they
    amount to through ``$ref`` and ``allOf``. ``local`` says whether the node's verdict is its
    shallow keywords plus its children's verdicts.
    """

    __slots__ = (
        "_by_index", "_by_key", "_checker", "_items", "_whole", "dependent", "direct", "impossible", "local",
        "members", "merged", "prefix_items", "shallow", "unconstrained",
    )

    def __init__(self, checker: ChangeChecker, direct: tuple[Located, ...]) -> None:
        self._checker = checker
        self.direct = direct
        self._whole: tuple[Any, ...] | None = None
        self._by_key: dict[str, _Node] = {}
        self._by_index: dict[int, _Node] = {}
        self._items: _Node | None = None
        members: list[Located] = []
        self.impossible = False
        self.local = True
        self.merged = False  # a schema reached twice here: whole validation evaluates it twice
        seen: set[int] = set()
        pending = list(direct)
        while pending:
            located = pending.pop(0)
            schema = located.schema
            if schema is True:
                continue
            if not isinstance(schema, dict):
                self.impossible = True
                continue
            if id(schema) in seen:
                self.merged = True
                continue
            seen.add(id(schema))
            members.append(located)
            if any(keyword in _NON_LOCAL for keyword in schema):
                self.local = False
            ref = schema.get("$ref")
            if isinstance(ref, str):
                pending.append(checker.resources.resolve(located, ref))
            for member in schema.get("allOf", ()):
                pending.append(checker.resources.sub(located, member))
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

    # -- checks ---------------------------------------------------------------------------

    def validate_whole(self, instance: Any) -> bool:
        """``instance`` against every schema of this location, as a whole."""
        if self.impossible:
            return False
        whole = self._whole
        if whole is None:
            whole = self._whole = tuple(
                self._checker.location_validator(located) for located in self.direct if located.schema is not True
            )
        return all(validator.is_valid(instance) for validator in whole)

    def collect_whole(self, instance: Any, path: tuple[str | int, ...], out: _Errors) -> None:
        """Every error of ``instance`` against the schemas of this location, placed at ``path``."""
        if self.impossible:
            raise _Unsupported  # a false schema: reported whole
        whole = self._whole
        if whole is None:
            whole = self._whole = tuple(
                self._checker.location_validator(located) for located in self.direct if located.schema is not True
            )
        for validator in whole:
            for error in validator.iter_errors(instance):
                if error.kind.name in _BRANCHING or getattr(error.kind, "context", None):
                    raise _Unsupported
                out.add(PlacedError(error, path, tuple(error.schema_path)))

    def collect_shallow(self, instance: Any, path: tuple[str | int, ...], out: _Errors) -> None:
        """The errors of this location's own keywords (see :meth:`ChangeChecker.shallow_validator`)."""
        checker = self._checker
        for member in self.members:
            validator = checker.shallow_validator(member)
            if validator is None:
                continue
            prefix: tuple[str, ...] | None = None
            for error in validator.iter_errors(instance):
                name = error.kind.name
                schema_path = tuple(error.schema_path)
                if name in _BRANCHING or getattr(error.kind, "context", None):
                    raise _Unsupported
                if name == "propertyNames" and isinstance(member.schema.get("propertyNames"), dict):
                    pass  # compiled as a $ref to its own location: the path is the schema's already
                elif schema_path and schema_path[0] in _SHALLOW_ASSERTED:
                    if prefix is None:
                        prefix = checker.pointer(member.schema)
                    schema_path = prefix + schema_path
                else:
                    raise _Unsupported
                out.add(PlacedError(error, path, schema_path))

    # -- children -------------------------------------------------------------------------

    def for_key(self, name: str) -> _Node:
        node = self._by_key.get(name)
        if node is None:
            if len(self._by_key) >= _MAX_CHILD_MEMO:
                self._by_key.clear()
            node = self._by_key[name] = self._checker.node(tuple(self._member_schemas(name)))
        return node

    def for_index(self, index: int) -> _Node:
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

    def with_dependents(self, instance: dict[str, Any]) -> _Node:
        """This location with the ``dependentSchemas`` that ``instance``'s members trigger (and theirs)."""
        node = self
        while True:
            triggered = tuple(located for name, located in node.dependent if name in instance)
            grown = self._checker.node(self.direct + triggered) if triggered else self
            if grown is node:
                return node
            node = grown

    def _member_schemas(self, name: str) -> list[Located]:
        sub = self._checker.resources.sub
        out: list[Located] = []
        for member in self.members:
            schema: dict[str, Any] = member.schema
            matched = False
            properties = schema.get("properties")
            if isinstance(properties, dict) and name in properties:
                out.append(sub(member, properties[name]))
                matched = True
            patterns = schema.get("patternProperties")
            if isinstance(patterns, dict):
                for pattern, subschema in patterns.items():
                    if self._checker.matches(pattern, name):
                        out.append(sub(member, subschema))
                        matched = True
            if not matched and "additionalProperties" in schema:
                out.append(sub(member, schema["additionalProperties"]))
        return out

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


class ChangeChecker:
    """Decides whether a valid document stays valid after a change, looking only where it changed.

    ``is_valid_change(before, after)`` equals ``is_valid(after)`` of the whole-document validator
    whenever ``before`` is valid and ``after`` shares every unchanged subtree with it (as
    :func:`schemadoc.ops.apply.apply_patch` produces). Compiled validators and the schemas of
    each location are kept for the life of the checker; it is safe to share between threads.
    """

    def __init__(self, schema: LoadedSchema) -> None:
        self.schema = schema
        self.resources = schema.resources
        self._whole = schema.make_validator()
        self._uris = self.resources.location_uris()
        self._dynamic = any(_uses_dynamic_refs(contents) for _, contents in self.resources.all_documents())
        # the runtime validator places an error's keyword from the root of its resource (the
        # innermost $id), the walk from the root of its document: alike without embedded $ids
        self._embedded = any(_embeds_resources(contents) for _, contents in self.resources.all_documents())
        self._lock = threading.Lock()
        self._nodes: dict[tuple[int, ...], _Node] = {}
        self._location_validators: dict[str, Any] = {}
        self._shallow: dict[int, Any] = {}
        self._patterns: dict[tuple[str, str], bool] = {}
        self._root: _Node | None = None

    @property
    def enabled(self) -> bool:
        """False when every change is validated whole (the schema uses ``$dynamicRef``)."""
        return not self._dynamic

    def is_valid_change(self, before: Any, after: Any, patch: Sequence[Any] | None = None) -> bool:
        """Whether ``after`` is valid, given that ``before`` is (see the class docstring).

        ``patch``, the strict RFC 6902 patch that turned ``before`` into ``after``, is optional:
        when it only replaces values, or is one add, remove or copy, it says where the
        differences are, so arrays and objects on its paths are not scanned for them.
        """
        if after is before:
            return True
        if self._dynamic:
            return bool(self._whole.is_valid(after))
        try:
            root = self._root_node()
            return _guided(patch, lambda hint: _check(root, after, before, hint))
        except _Unsupported:
            return bool(self._whole.is_valid(after))

    def change_errors(self, before: Any, after: Any, patch: Sequence[Any] | None = None, *,
                      limit: int) -> list[PlacedError] | None:
        """Every error whole-document validation finds in ``after``, found where it changed.

        ``before`` must be valid (see :meth:`is_valid_change`). The errors are those of the
        places the walk checks: the changed nodes' own keywords and the subtrees it validates
        whole, each error placed in the document and in the schema as whole validation places
        it (the order may differ). None when that cannot be told exactly here, so the whole
        document must be validated: an error
        carrying its alternatives' errors (``oneOf``/``anyOf``), a false schema, a schema
        reached twice at one place, embedded ``$id``s, ``$dynamicRef``, or more than ``limit`` errors.
        """
        if after is before or self._dynamic or self._embedded:
            return None
        def collect(hint: _Hint | None) -> list[PlacedError]:
            out = _Errors(limit)
            _collect(root, after, before, hint, (), out)
            return out

        try:
            root = self._root_node()
            return _guided(patch, collect)
        except _Unsupported:
            return None

    def _root_node(self) -> _Node:
        root = self._root
        if root is None:
            root = self._root = self.node((self.resources.root,))
        return root

    def pointer(self, schema: dict[str, Any]) -> tuple[str, ...]:
        """The tokens of a subschema's location in its schema document."""
        uri = self._uris.get(id(schema))
        if uri is None:
            raise _Unsupported
        fragment = unquote(urldefrag(uri).fragment)
        try:
            tokens = tuple(parse(fragment))
        except SchemaDocError as error:
            raise _Unsupported from error
        if tokens and tokens[0] in _SHALLOW_ASSERTED:
            raise _Unsupported  # its keywords' own paths could not be told from this prefix
        return tokens

    # -- building blocks (used by the walk) -------------------------------------------------

    def node(self, direct: tuple[Located, ...]) -> _Node:
        key = tuple(id(located.schema) if isinstance(located.schema, dict) else int(bool(located.schema))
                    for located in direct)
        node = self._nodes.get(key)
        if node is None:
            try:
                node = _Node(self, direct)
            except _Unsupported:
                raise
            except Exception as error:  # an unresolvable reference the loader did not see
                raise _Unsupported from error
            with self._lock:
                node = self._nodes.setdefault(key, node)
        return node

    def location_validator(self, located: Located) -> Any:
        if located.schema is self.resources.root_contents:
            return self._whole
        if not isinstance(located.schema, dict):
            return _BOOLEAN_VALIDATORS[bool(located.schema)]
        uri = self._uris.get(id(located.schema))
        if uri is None:
            raise _Unsupported
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
                if isinstance(value, bool):
                    shallow[keyword] = value
                else:
                    uri = self._uris.get(id(value))
                    if uri is None:
                        raise _Unsupported
                    shallow[keyword] = {"$ref": uri}
        validator = self._compiled(f"shallow:{key}", shallow) if shallow else None
        with self._lock:
            self._shallow[key] = validator
        return validator

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
            raise _Unsupported
        return validator


_BOOLEAN_VALIDATORS: Final = {
    True: jsonschema_rs.Draft202012Validator(True),
    False: jsonschema_rs.Draft202012Validator(False),
}


def _check(node: _Node, after: Any, before: Any, hint: _Hint | None = None) -> bool:
    """Whether ``after`` is valid at ``node``, given that ``before`` was.

    Without ``hint`` the children that differ are found by identity; with one, only the
    children it names are visited (it comes from the patch, see :func:`_hint`).
    """
    if hint is not None and hint.whole:
        hint = None
    if after is before or node.unconstrained:
        return True
    if node.impossible:
        return False
    if not node.local or type(after) is not type(before) or not isinstance(after, dict | list):
        return node.validate_whole(after)
    if isinstance(after, dict):
        if node.dependent:
            if after.keys() != before.keys():
                return node.validate_whole(after)
            node = node.with_dependents(after)
            if not node.local:
                return node.validate_whole(after)
        for validator in node.shallow:
            if not validator.is_valid(after):
                return False
        if hint is None:
            previous_values = map(before.get, after, repeat(_MISSING))
            names: Iterable[str] = compress(after, map(is_not, after.values(), previous_values))  # C-level scan
        else:
            names = [*hint.children, *([hint.added] if hint.added is not None else [])]
        for name in names:
            child, previous = after.get(name, _MISSING), before.get(name, _MISSING)
            if child is _MISSING:
                raise _HintMismatch
            sub = node.for_key(name)
            if previous is _MISSING:
                if not sub.unconstrained and not sub.validate_whole(child):
                    return False
            elif not _check(sub, child, previous, hint.children.get(name) if hint is not None else None):
                return False
        return True
    for validator in node.shallow:
        if not validator.is_valid(after):
            return False
    count, previous_count = len(after), len(before)
    if hint is not None and hint.added is None and hint.removed is None:
        if count != previous_count:
            raise _HintMismatch
        for token, below in hint.children.items():
            index = _position(token, count)
            if not _check(node.for_index(index), after[index], before[index], below):
                return False
        return True
    if count == previous_count:  # compare position by position: visit those holding another object
        changed = compress(range(count), map(is_not, after, before))
        return all(_check(node.for_index(index), after[index], before[index]) for index in changed)
    if node.prefix_items:
        return node.validate_whole(after)  # items moved to positions with other schemas
    start, end = _moved_range(after, before, hint)
    for index in range(start, count - end):
        sub = node.for_index(index)
        if not sub.unconstrained and not sub.validate_whole(after[index]):
            return False
    return True


def _collect(node: _Node, after: Any, before: Any, hint: _Hint | None, path: tuple[str | int, ...],
             out: _Errors) -> None:
    """The walk of :func:`_check`, collecting every error of ``after`` at ``node`` instead of a verdict."""
    if hint is not None and hint.whole:
        hint = None
    if after is before or node.unconstrained:
        return
    if node.impossible:
        raise _Unsupported
    if not node.local or type(after) is not type(before) or not isinstance(after, dict | list):
        node.collect_whole(after, path, out)
        return
    if isinstance(after, dict):
        if node.dependent:
            if after.keys() != before.keys():
                node.collect_whole(after, path, out)
                return
            node = node.with_dependents(after)
            if not node.local:
                node.collect_whole(after, path, out)
                return
        if node.merged:
            raise _Unsupported
        node.collect_shallow(after, path, out)
        if hint is None:
            previous_values = map(before.get, after, repeat(_MISSING))
            names: Iterable[str] = compress(after, map(is_not, after.values(), previous_values))
        else:
            names = [*hint.children, *([hint.added] if hint.added is not None else [])]
        for name in names:
            child, previous = after.get(name, _MISSING), before.get(name, _MISSING)
            if child is _MISSING:
                raise _HintMismatch
            sub = node.for_key(name)
            if previous is _MISSING:
                if not sub.unconstrained:
                    sub.collect_whole(child, (*path, name), out)
            else:
                _collect(sub, child, previous, hint.children.get(name) if hint is not None else None,
                         (*path, name), out)
        return
    count, previous_count = len(after), len(before)
    if count != previous_count and node.prefix_items and not (hint is not None and hint.added is None
                                                              and hint.removed is None):
        node.collect_whole(after, path, out)  # items moved to positions with other schemas
        return
    if node.merged:
        raise _Unsupported
    node.collect_shallow(after, path, out)
    if hint is not None and hint.added is None and hint.removed is None:
        if count != previous_count:
            raise _HintMismatch
        for token, below in hint.children.items():
            index = _position(token, count)
            _collect(node.for_index(index), after[index], before[index], below, (*path, index), out)
        return
    if count == previous_count:
        for index in compress(range(count), map(is_not, after, before)):
            _collect(node.for_index(index), after[index], before[index], None, (*path, index), out)
        return
    start, end = _moved_range(after, before, hint)
    for index in range(start, count - end):
        sub = node.for_index(index)
        if not sub.unconstrained:
            sub.collect_whole(after[index], (*path, index), out)


def _moved_range(after: list[Any], before: list[Any], hint: _Hint | None) -> tuple[int, int]:
    """``(start, end)``: items ``after[start:len(after) - end]`` are new at their positions.

    With a ``hint`` (one item added or removed at a known position) the rest only moved;
    without one, the same objects before the first difference and after the last one (each
    found by C-level scans) keep their verdict.
    """
    count, previous_count = len(after), len(before)
    if hint is not None:
        start = _position(hint.added if hint.added is not None else hint.removed, max(count, previous_count))
        end = count - start - (1 if hint.added is not None else 0)
        if end < 0 or count - previous_count != (1 if hint.added is not None else -1):
            raise _HintMismatch
        return start, end
    shortest = min(count, previous_count)
    start = next(compress(count_from(), map(is_not, after, before)), shortest)
    end = next(compress(count_from(), map(is_not, reversed(after), reversed(before))), shortest)
    return start, min(end, shortest - start)


_T = TypeVar("_T")


def _guided(patch: Sequence[Any] | None, walk: Callable[[_Hint | None], _T]) -> _T:
    """``walk`` guided by what ``patch`` says changed, or, without a usable patch, scanning."""
    hint = _hint(patch) if patch is not None else None
    if hint is not None:
        try:
            return walk(hint)
        except _HintMismatch:  # the patch does not describe these documents: scan instead
            pass
    return walk(None)


def _position(token: str | None, length: int) -> int:
    if token is None or not token.isdigit() or int(token) >= length:
        raise _HintMismatch
    return int(token)


def _uses_dynamic_refs(schema: Any) -> bool:
    stack = [schema]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if "$dynamicRef" in value or "$recursiveRef" in value:
                return True
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def _embeds_resources(schema: Any) -> bool:
    """Whether a schema document has a subschema with its own ``$id`` (or anything that looks like one)."""
    stack = [value for value in schema.values()] if isinstance(schema, dict) else []
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if isinstance(value.get("$id"), str):
                return True
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False
