"""The schema of one node of a document, found by walking the schema along a JSON Pointer.

Walking one token from a schema collects every subschema that applies to that child:

* objects: ``properties``, matching ``patternProperties``, else ``additionalProperties``
  (``false`` allows nothing), else ``unevaluatedProperties`` when nothing else constrained it;
* arrays (the token is a decimal index, ``-`` to append, or ``-1``, ``-2``… from the end):
  ``prefixItems`` at that position, else ``items`` (``false`` allows nothing);
* in place: ``$ref`` targets and ``allOf`` members add to the same conjunction, and each
  ``oneOf``/``anyOf`` alternative is walked separately: alternatives that allow nothing are
  dropped, and several survivors become ``{"anyOf": [...]}``.

The result is a small expression (one subschema, ``allOf``, ``anyOf``) rendered as written or
dereferenced. Dereferencing inlines every ``$ref`` (sibling files too) and drops the
``$defs``/``$id``/``$anchor`` bookkeeping; a ``$ref`` already being expanded further up the
same branch (a recursive schema such as a section holding sections) is left in place as
``{"$ref": <absolute URI>}``, so the output stays finite and its remaining references resolve
through the schema's registry (see :meth:`LoadedSchema.make_validator`).

``if``/``then``/``else`` and ``dependentSchemas`` are conditional and not followed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from schemadoc.errors import SchemaDocError
from schemadoc.pointer import LARGEST_INDEX
from schemadoc.schema._keywords import (
    ANNOTATIONS,
    SUBSCHEMA_LIST,
    SUBSCHEMA_MAP,
    SUBSCHEMA_SINGLE,
    format_pointer,
    member_subschemas,
    type_allows,
)
from schemadoc.schema.refs import Located, SchemaResources

__all__ = ["NodeNavigator", "merge_patch_schema_for"]

_INDEX = re.compile(r"0|[1-9][0-9]*")
_FROM_END = re.compile(r"-[1-9][0-9]*")
_NUMBERISH = re.compile(r"[+-]?[0-9]+")

# Keywords dropped from dereferenced output: what they did is already inlined.
_BOOKKEEPING = frozenset({"$defs", "definitions", "$id", "$anchor", "$schema"})

_OBJECT_KEYWORDS = ("properties", "patternProperties", "additionalProperties", "unevaluatedProperties")
_ARRAY_KEYWORDS = ("prefixItems", "items", "unevaluatedItems")
# Keywords that interact with each other: a $ref target and its siblings touching the same
# group cannot be merged into one object without changing what validates.
_GROUPS: Final = (
    frozenset({*_OBJECT_KEYWORDS, "required", "dependentRequired", "dependentSchemas"}),
    frozenset({*_ARRAY_KEYWORDS, "contains", "minContains", "maxContains"}),
    frozenset({"if", "then", "else"}),
)

_SUBSCHEMA_SINGLE = frozenset(SUBSCHEMA_SINGLE)
_SUBSCHEMA_LIST = frozenset(SUBSCHEMA_LIST)
_SUBSCHEMA_MAP = frozenset(SUBSCHEMA_MAP)


# -- the walk's small expression language ------------------------------------------------


_ANYTHING: Final = None  # no constraint at all (the schema ``true``)


@dataclass(frozen=True, slots=True)
class _Of:
    keyword: str  # allOf | anyOf
    members: tuple[_Expr, ...]


_Expr = Located | _Of | None


class _NotAllowed(Exception):
    """Internal: the schema allows nothing at the next token."""


class _MalformedIndex(Exception):
    """Internal: an array position written with a sign or a leading zero, or beyond the largest index."""

    def __init__(self, token: str, beyond: bool = False) -> None:
        super().__init__(token)
        self.beyond = beyond


def _conjunction(parts: list[_Expr]) -> _Expr:
    parts = [part for part in parts if part is not _ANYTHING]
    if not parts:
        return _ANYTHING
    if len(parts) == 1:
        return parts[0]
    return _Of("allOf", tuple(parts))


def _impossible(expr: _Expr) -> bool:
    """Whether nothing can be valid here (a ``false`` schema, or a conjunction containing one)."""
    if isinstance(expr, Located):
        return expr.schema is False
    if isinstance(expr, _Of):
        return (any if expr.keyword == "allOf" else all)(_impossible(member) for member in expr.members)
    return False


def _leaves(expr: _Expr) -> list[Located]:
    """The schemas of an expression, in order."""
    if isinstance(expr, _Of):
        return [leaf for member in expr.members for leaf in _leaves(member)]
    return [] if expr is None else [expr]


def _array_position(token: str) -> int | str | None:
    """``int`` for an index (negative counts from the end), ``"-"`` to append, None if not one."""
    if _INDEX.fullmatch(token) or _FROM_END.fullmatch(token):
        digits = token.removeprefix("-")
        if len(digits) > len(str(LARGEST_INDEX)) or int(digits) > LARGEST_INDEX:  # int() of 4,301 digits fails
            raise _MalformedIndex(token, beyond=True)
        return int(token)
    if token == "-":
        return "-"
    if _NUMBERISH.fullmatch(token):
        raise _MalformedIndex(token)
    return None


class NodeNavigator:
    """Node schemas of one loaded schema; results are memoised by the caller."""

    def __init__(self, resources: SchemaResources) -> None:
        self._resources = resources

    # -- walking ------------------------------------------------------------------

    def node(self, tokens: Sequence[str], *, dereferenced: bool) -> dict[str, Any]:
        expr: _Expr = self._resources.root
        for depth, token in enumerate(tokens):
            try:
                child = self._child(expr, token)
            except _NotAllowed:
                raise self._not_found(tokens, depth, expr) from None
            except _MalformedIndex as malformed:
                path = format_pointer(tokens)
                if malformed.beyond:
                    raise SchemaDocError(
                        "path-invalid",
                        f"An index in {path[:200]} is beyond the largest array index ({LARGEST_INDEX}).",
                        {"path": path, "token": token[:40], "reason": "beyond the largest array index",
                         "largest": LARGEST_INDEX}) from None
                raise SchemaDocError(
                    "path-invalid",
                    f"{token!r} in {path} is not an array index: write indices without sign or leading zeros "
                    "(use -1, -2, … to count from the end and - to append)",
                    {"path": path, "token": token},
                ) from None
            if _impossible(child):
                raise self._not_found(tokens, depth, expr)
            expr = child
        rendered = self._render(expr, dereferenced=dereferenced)
        if isinstance(rendered, dict):
            return rendered
        return {} if rendered else {"not": {}}

    def _child(self, expr: _Expr, token: str) -> _Expr:
        if isinstance(expr, Located):
            return self._child_of_schema(expr, token)
        if isinstance(expr, _Of) and expr.keyword == "allOf":
            return _conjunction([self._child(member, token) for member in expr.members])
        if isinstance(expr, _Of):
            return self._alternatives(expr.members, token)
        return _ANYTHING

    def _alternatives(self, members: Sequence[_Expr], token: str) -> _Expr:
        survivors: list[_Expr] = []
        for member in members:
            try:
                child = self._child(member, token)
            except _NotAllowed:
                continue
            if not _impossible(child):
                survivors.append(child)
        if not survivors:
            raise _NotAllowed
        if len(survivors) == 1:
            return survivors[0]
        return _Of("anyOf", tuple(survivors))

    def _child_of_schema(self, located: Located, token: str) -> _Expr:
        schema = located.schema
        if schema is True:
            return _ANYTHING
        if not isinstance(schema, dict):  # the false schema
            raise _NotAllowed
        resources = self._resources
        parts: list[_Expr] = []
        ref = schema.get("$ref")
        if isinstance(ref, str):
            parts.append(self._child(resources.resolve(located, ref), token))
        for member in schema.get("allOf", ()):
            parts.append(self._child(resources.sub(located, member), token))
        parts.extend(self._own_child(located, token))
        for keyword in ("oneOf", "anyOf"):
            alternatives = schema.get(keyword)
            if alternatives:
                parts.append(self._alternatives([resources.sub(located, a) for a in alternatives], token))
        result = _conjunction(parts)
        if result is _ANYTHING:
            result = self._unevaluated(located, token)
        return result

    def _own_child(self, located: Located, token: str) -> list[_Expr]:
        """What this schema's own object/array keywords say about the child ``token``."""
        schema: dict[str, Any] = located.schema
        object_ok = type_allows(schema, "object")
        array_ok = type_allows(schema, "array")
        if not object_ok and not array_ok:
            raise _NotAllowed  # a string, number, boolean or null has no children
        if "type" not in schema:
            # Untyped: read the token the way the schema's keywords suggest.
            has_object = any(keyword in schema for keyword in _OBJECT_KEYWORDS)
            has_array = any(keyword in schema for keyword in _ARRAY_KEYWORDS)
            if has_object and not has_array:
                array_ok = False
            elif has_array and not has_object:
                object_ok = False
        as_object: list[_Expr] | None = None
        as_array: list[_Expr] | None = None
        if object_ok:
            try:
                as_object = self._member(located, token)
            except _NotAllowed:
                as_object = None
        if array_ok:
            try:
                position = _array_position(token)
            except _MalformedIndex:
                if not object_ok:
                    raise
                position = None
            if position is not None:
                try:
                    as_array = self._item(located, position)
                except _NotAllowed:
                    as_array = None
        if as_object is None and as_array is None:
            raise _NotAllowed
        if as_array is None:
            return as_object or []
        if as_object is None:
            return as_array
        if not as_object and not as_array:
            return []
        return [_Of("anyOf", (_conjunction(as_object), _conjunction(as_array)))]

    def _member(self, located: Located, name: str) -> list[_Expr]:
        schema: dict[str, Any] = located.schema
        matched: list[_Expr] = [self._resources.sub(located, each)
                                for each in member_subschemas(schema, name, re.search, additional=False)]
        if not matched and "additionalProperties" in schema:
            if schema["additionalProperties"] is False:
                raise _NotAllowed
            matched.append(self._resources.sub(located, schema["additionalProperties"]))
        return matched

    def _item(self, located: Located, position: int | str) -> list[_Expr]:
        schema: dict[str, Any] = located.schema
        sub = self._resources.sub
        prefix = schema.get("prefixItems") or []
        items = schema.get("items")
        if prefix and not (isinstance(position, int) and position >= 0):
            # "-" or counted from the end: any tuple position, or the rest.
            candidates: list[_Expr] = [sub(located, each) for each in prefix]
            if items is not False:
                candidates.append(_ANYTHING if items is None else sub(located, items))
            return [_Of("anyOf", tuple(candidates))]
        if isinstance(position, int) and 0 <= position < len(prefix):
            return [sub(located, prefix[position])]
        if items is False:
            raise _NotAllowed
        return [] if items is None else [sub(located, items)]

    def _unevaluated(self, located: Located, token: str) -> _Expr:
        """``unevaluatedProperties``/``unevaluatedItems`` apply when nothing else constrained the child."""
        schema: dict[str, Any] = located.schema
        for keyword, json_type in (("unevaluatedProperties", "object"), ("unevaluatedItems", "array")):
            if keyword not in schema or not type_allows(schema, json_type):
                continue
            if json_type == "array":
                try:
                    if _array_position(token) is None:
                        continue
                except _MalformedIndex:
                    continue
            if schema[keyword] is False:
                raise _NotAllowed
            return self._resources.sub(located, schema[keyword])
        return _ANYTHING

    # -- diagnostics --------------------------------------------------------------

    def _not_found(self, tokens: Sequence[str], depth: int, parent: _Expr) -> SchemaDocError:
        path = format_pointer(tokens)
        deepest = format_pointer(tokens[:depth])
        allowed = self._allowed(parent)
        return SchemaDocError(
            "path-not-found",
            f"the schema allows nothing at {path}; {deepest} allows "
            + (", ".join(repr(each) for each in allowed) if allowed else "no children"),
            {"path": path, "deepest_valid_path": deepest, "allowed": allowed},
        )

    def _allowed(self, expr: _Expr) -> list[str]:
        """Member names (``pattern:<regex>`` for patternProperties) and ``items`` a node allows."""
        names: list[str] = []
        for located, first in self._resources.in_place(_leaves(expr), ("allOf", "anyOf", "oneOf")):
            schema = located.schema
            if not first:
                continue
            own: list[str] = []
            if type_allows(schema, "object"):
                own += schema.get("properties", {})
                own += [f"pattern:{pattern}" for pattern in schema.get("patternProperties", {})]
            if type_allows(schema, "array") and (
                schema.get("type") == "array" or "items" in schema or "prefixItems" in schema
            ):
                own.append("items")
            names += [name for name in own if name not in names]
        return names

    # -- rendering ----------------------------------------------------------------

    def _render(self, expr: _Expr, *, dereferenced: bool) -> Any:
        if isinstance(expr, Located):
            if dereferenced:
                return self.dereference(expr)
            return expr.schema
        if isinstance(expr, _Of):
            return {expr.keyword: [self._render(member, dereferenced=dereferenced) for member in expr.members]}
        return {}

    def dereference(self, located: Located, chain: tuple[str, ...] = ()) -> Any:
        """``located`` with every ``$ref`` inlined, except those already expanded on ``chain``."""
        schema = located.schema
        if not isinstance(schema, dict):
            return schema
        resources = self._resources
        out: dict[str, Any] = {}
        for key, value in schema.items():
            if key == "$ref":
                continue
            if key in _BOOKKEEPING:
                if key == "$schema" and schema is resources.root_contents:
                    out[key] = value
                continue
            if key in _SUBSCHEMA_SINGLE:
                out[key] = self.dereference(resources.sub(located, value), chain)
            elif key in _SUBSCHEMA_LIST and isinstance(value, list):
                out[key] = [self.dereference(resources.sub(located, each), chain) for each in value]
            elif key in _SUBSCHEMA_MAP and isinstance(value, dict):
                out[key] = {
                    name: self.dereference(resources.sub(located, each), chain)
                    for name, each in value.items()
                }
            else:
                out[key] = value
        ref = schema.get("$ref")
        if not isinstance(ref, str):
            return out
        uri = resources.ref_uri(located, ref)
        if uri in chain:
            target: Any = {"$ref": uri}
        else:
            target = self.dereference(resources.resolve(located, ref), (*chain, uri))
        return _merge_ref(target, out)


def _merge_ref(target: Any, siblings: dict[str, Any]) -> Any:
    """One schema for ``{"$ref": target, **siblings}``, merged when that is exact, else ``allOf``."""
    if not siblings:
        return target
    if target is True or target == {}:
        return siblings
    if isinstance(target, dict) and "$ref" not in target:
        shared = (set(target) & set(siblings)) - ANNOTATIONS
        clash = any(set(target) & group and set(siblings) & group for group in _GROUPS)
        if not shared and not clash:
            return {**siblings, **{key: value for key, value in target.items() if key not in siblings}}
    merged = dict(siblings)
    merged["allOf"] = [target, *siblings.get("allOf", [])]
    return merged


# -- merge patches --------------------------------------------------------------------------


def _nullable(schema: Any) -> Any:
    if schema is True or schema == {}:
        return schema
    return {"anyOf": [{"type": "null"}, schema]}


# Keywords that say what a whole object must contain; a merge patch carries only the changes.
_WHOLE_OBJECT_ONLY = frozenset({"required", "minProperties", "maxProperties", "dependentRequired", "dependentSchemas",
                                "if", "then", "else"})


def _is_object_schema(schema: dict[str, Any]) -> bool:
    return type_allows(schema, "object") and ("type" in schema
                                              or any(keyword in schema for keyword in _OBJECT_KEYWORDS))


def merge_patch_schema_for(schema: Any) -> Any:
    """The schema an RFC 7396 merge patch must satisfy to be applied where ``schema`` holds.

    Object schemas become partial: ``required`` (and the other whole-object keywords above) are
    dropped, every declared property also accepts ``null`` (delete it), and property values are
    themselves merge patches (recursively). ``additionalProperties: false`` stays, so unknown
    members are still rejected. Arrays and scalars are replaced wholesale by a merge patch, so
    they keep their full schema. ``oneOf`` becomes ``anyOf`` because partial alternatives may
    overlap. A recursive ``$ref`` left in place keeps the full schema of its target. The result
    only pre-checks a patch: the patched document is still validated as a whole.
    """
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    object_schema = _is_object_schema(schema)
    for key, value in schema.items():
        if object_schema and key in _WHOLE_OBJECT_ONLY:
            continue
        if object_schema and key in ("properties", "patternProperties") and isinstance(value, dict):
            out[key] = {name: _nullable(merge_patch_schema_for(each)) for name, each in value.items()}
        elif object_schema and key == "additionalProperties" and value is not False:
            out[key] = _nullable(merge_patch_schema_for(value))
        elif key in ("allOf", "anyOf") and isinstance(value, list):
            out[key] = [merge_patch_schema_for(each) for each in value]
        elif key == "oneOf" and isinstance(value, list):
            continue
        else:
            out[key] = value
    alternatives = schema.get("oneOf")
    if isinstance(alternatives, list):
        relaxed = [merge_patch_schema_for(each) for each in alternatives]
        if "anyOf" in out:
            out["allOf"] = [*out.get("allOf", []), {"anyOf": relaxed}]
        else:
            out["anyOf"] = relaxed
    return out
