"""The initial document ``document_create`` stores: built only from the schema's defaults.

Rules (FR-009, FR-009a/b, FR-088..090):

1. A value with an explicit ``default`` takes it, as written, whether the property is required or
   optional, and whether the ``default`` sits on the property, behind its ``$ref`` (the
   property's own ``default`` wins over the target's), or in an ``allOf`` member.
2. A required property without a default is built from its own schema when that schema is an
   object (``type: object``, or untyped with ``properties``/``required``): its properties are
   filled by these same rules, recursively.
3. Anything else required and without a default is an error: ``required-field-without-default``
   lists the JSON Pointer of every such field at once (``details.paths``). There are no implicit
   empty strings, zeros or empty arrays.
4. Optional properties without a default are left out.

The document root follows rule 2 (it is required by definition). ``oneOf``/``anyOf`` and
conditionals are never guessed through. A required object that contains itself (directly or
through ``$ref``) cannot be built and is reported, so building always terminates.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from schemadoc.errors import SchemaDocError
from schemadoc.schema._keywords import format_pointer
from schemadoc.schema.refs import Located, SchemaResources

__all__ = ["build_defaults"]


class _Missing:
    __slots__ = ()


_MISSING: Final = _Missing()

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
        for declared in self.types:
            if isinstance(declared, str) and declared != "object":
                return False
            if isinstance(declared, list) and "object" not in declared:
                return False
        return bool(self.types) or self.object_hints


class _Builder:
    def __init__(self, resources: SchemaResources) -> None:
        self._resources = resources
        self.missing: list[str] = []

    def view(self, schemas: Sequence[Located]) -> _View:
        view = _View()
        seen: set[int] = set()
        resources = self._resources

        def visit(located: Located) -> None:
            schema = located.schema
            if not isinstance(schema, dict) or id(schema) in seen:
                return
            seen.add(id(schema))
            if "default" in schema and view.default is _MISSING:
                view.default = schema["default"]
            if "type" in schema:
                view.types.append(schema["type"])
            if any(keyword in schema for keyword in _OBJECT_HINTS):
                view.object_hints = True
            properties = schema.get("properties")
            if isinstance(properties, dict):
                for name, subschema in properties.items():
                    view.properties.setdefault(name, []).append(resources.sub(located, subschema))
            for name in schema.get("required", ()):
                if name not in view.required:
                    view.required.append(name)
            ref = schema.get("$ref")
            if isinstance(ref, str):
                visit(resources.resolve(located, ref))
            for member in schema.get("allOf", ()):
                visit(resources.sub(located, member))

        for each in schemas:
            visit(each)
        return view

    def build(
        self, schemas: Sequence[Located], path: tuple[str, ...], chain: frozenset[tuple[int, ...]]
    ) -> Any:
        view = self.view(schemas)
        if view.default is not _MISSING:
            return copy.deepcopy(view.default)
        key = tuple(id(each.schema) for each in schemas)
        if not view.is_buildable_object() or key in chain:
            self.missing.append(format_pointer(path))
            return _MISSING
        inner_chain = chain | {key}
        built: dict[str, Any] = {}
        for name, member_schemas in view.properties.items():
            member_view = self.view(member_schemas)
            if member_view.default is not _MISSING:
                built[name] = copy.deepcopy(member_view.default)
            elif name in view.required:
                value = self.build(member_schemas, (*path, name), inner_chain)
                if value is not _MISSING:
                    built[name] = value
        for name in view.required:
            if name not in view.properties:
                self.missing.append(format_pointer((*path, name)))
        return built


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
