"""The initial document ``document_create`` stores: built only from the schema's defaults.

Rules (FR-009, FR-009a/b, FR-088..090; the same outcome as AJV's ``useDefaults``):

1. A value with an explicit ``default`` takes it, whether the property is required or optional,
   and whether the ``default`` sits on the property, behind its ``$ref`` (the property's own
   ``default`` wins over the target's), or in an ``allOf`` member.
2. An explicit object default is the starting value, not the end: its absent properties are
   filled by these same rules (defaults taken, required objects built), and so are the absent
   properties of the objects it spells out, recursively through ``$ref`` and ``allOf``. What the
   default spells out wins; nothing it contains is replaced.
3. A required property without a default is built from its own schema when that schema is an
   object (``type: object``, or untyped with ``properties``/``required``): its properties are
   filled by these same rules, recursively.
4. Anything else required, absent and without a default is an error:
   ``required-field-without-default`` lists the JSON Pointer of every such field at once
   (``details.paths``). There are no implicit empty strings, zeros or empty arrays.
5. Optional properties without a default are left out.

The document root follows rule 3 (it is required by definition). ``oneOf``/``anyOf`` and
conditionals are never guessed through. Building always terminates on recursive schemas: a
schema met again below itself is not expanded a second time (a default there is taken as
written; a required object without one is reported).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from schemadoc.errors import SchemaDocError
from schemadoc.schema._keywords import format_pointer, type_allows
from schemadoc.schema.refs import Located, SchemaResources

__all__ = ["build_defaults"]


_MISSING: Final = object()

_ANNOTATIONS = frozenset({"$ref", "default", "title", "description", "$comment", "examples", "deprecated"})
"""A schema holding only these is a plain reference: it describes what its target describes."""
_OBJECT_HINTS = ("properties", "required", "additionalProperties", "patternProperties")


@dataclass
class _View:
    """Everything a conjunction of schemas says about defaults, through ``$ref`` and ``allOf``."""

    default: Any = _MISSING
    properties: dict[str, list[Located]] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    types: list[Any] = field(default_factory=list)
    object_hints: bool = False

    def is_buildable_object(self) -> bool:
        if not all(type_allows({"type": declared}, "object") for declared in self.types):
            return False
        return bool(self.types) or self.object_hints


class _Builder:
    def __init__(self, resources: SchemaResources) -> None:
        self._resources = resources
        self.missing: list[str] = []

    def view(self, schemas: Sequence[Located]) -> _View:
        view = _View()
        for located, first in self._resources.in_place(schemas):
            schema = located.schema
            if not first:
                continue
            if "default" in schema and view.default is _MISSING:
                view.default = schema["default"]
            if "type" in schema:
                view.types.append(schema["type"])
            if any(keyword in schema for keyword in _OBJECT_HINTS):
                view.object_hints = True
            properties = schema.get("properties")
            if isinstance(properties, dict):
                for name, subschema in properties.items():
                    view.properties.setdefault(name, []).append(self._resources.sub(located, subschema))
            for name in schema.get("required", ()):
                if name not in view.required:
                    view.required.append(name)
        return view

    def key(self, schemas: Sequence[Located]) -> tuple[int, ...]:
        """Which schemas describe a value, a plain ``{"$ref": ...}`` counted as its target: recursion's mark."""
        ids: list[int] = []
        for located in schemas:
            seen = 0
            while isinstance(located.schema, dict) and _ANNOTATIONS.issuperset(located.schema) and seen < 64:
                ref = located.schema.get("$ref")
                if not isinstance(ref, str):
                    break
                located, seen = self._resources.resolve(located, ref), seen + 1
            ids.append(id(located.schema))
        return tuple(ids)

    def build(
        self, schemas: Sequence[Located], path: tuple[str, ...], chain: frozenset[tuple[int, ...]]
    ) -> Any:
        view = self.view(schemas)
        key = self.key(schemas)
        if view.default is not _MISSING:
            value = copy.deepcopy(view.default)
            if isinstance(value, dict) and key not in chain:
                self.fill(value, view, path, chain | {key})
            return value
        if not view.is_buildable_object() or key in chain:
            self.missing.append(format_pointer(path))
            return _MISSING
        built: dict[str, Any] = {}
        self.fill(built, view, path, chain | {key})
        return built

    def fill(
        self, target: dict[str, Any], view: _View, path: tuple[str, ...], chain: frozenset[tuple[int, ...]]
    ) -> None:
        """Add the absent members of ``target`` that the rules give a value; never replace one."""
        for name, member_schemas in view.properties.items():
            member_path = (*path, name)
            if name in target:
                present = target[name]
                key = self.key(member_schemas)
                if isinstance(present, dict) and key not in chain:
                    self.fill(present, self.view(member_schemas), member_path, chain | {key})
                continue
            required = name in view.required
            if not required and self.key(member_schemas) in chain:
                continue  # an optional member recursing into an object being built: stop here
            if required or self.view(member_schemas).default is not _MISSING:
                value = self.build(member_schemas, member_path, chain)
                if value is not _MISSING:
                    target[name] = value
        for name in view.required:
            if name not in view.properties and name not in target:
                self.missing.append(format_pointer((*path, name)))


def build_defaults(resources: SchemaResources) -> Any:
    """The initial document for the schema; raises ``required-field-without-default``."""
    builder = _Builder(resources)
    document = builder.build([resources.root], (), frozenset())
    if builder.missing:
        paths = builder.missing
        raise SchemaDocError(
            "required-field-without-default",
            f"cannot create a document: {len(paths)} required field(s) have no default: " + ", ".join(paths),
            {"paths": paths},
        )
    return document
