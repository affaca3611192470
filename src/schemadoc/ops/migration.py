"""Named document migrations (``schemadoc migrate-documents``): what one migration is, and the RFC 6902 patch it
makes of one document. Pure: nothing here reads or writes a store (:mod:`schemadoc.service.migrating` does).

A migration is one of three forms (docs/schema-changes.md):

- ``{"name": ..., "patch": [...]}``: an RFC 6902 patch *template*. A reference token that is exactly ``*``
  stands for every item of an array (every member of an object) found there when the operation applies, so
  ``/chapters/*/isbn`` becomes ``/chapters/0/isbn``, ``/chapters/1/isbn``, ... (nothing at all when there is no
  array there). In ``move`` and ``copy`` the wildcards of ``from`` are expanded and the same items fill the
  wildcards of ``path``, in order. ``remove`` and ``move`` expansions run from the last item to the first, so the
  indices of the items still to come do not shift. ``test`` operations are guards: when one fails, the migration
  does not apply to that document (it is left as it is and reported "not applicable").
- ``{"name": ..., "merge_patch": {...}}``: an RFC 7396 merge patch of the whole document.
- ``{"name": ..., "function": "module:function"}``: a Python function, given a copy of the document, returning
  the new document (or ``None`` after changing its argument in place); its difference with the document is the
  patch (:func:`schemadoc.ops.history.diff`: only what changed, concrete indices).

Whatever the form, the result is one strict RFC 6902 patch against the document as read, journaled by the service
as one version whose ``info.migration`` is the migration's name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final, Literal

import orjson

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch, check_patch, json_equal
from schemadoc.ops.history import compile_merge_patch, diff
from schemadoc.pointer import format_pointer, json_type, parse, resolve

__all__ = ["MAX_NAME_LENGTH", "WILDCARD", "Migration", "MigrationKind", "Planned", "parse_migration", "plan"]

WILDCARD: Final = "*"
MAX_NAME_LENGTH: Final = 128
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:/+@-]*")
_KINDS: Final = ("patch", "merge_patch", "function")
_ALLOWED_MEMBERS: Final = frozenset({"name", "description", *_KINDS})

MigrationKind = Literal["patch", "merge_patch", "function"]
Function = Callable[[Any], Any]


@dataclass(frozen=True)
class Migration:
    """One named migration, checked: exactly one of ``patch`` (a template), ``merge_patch`` or ``function``."""

    name: str
    kind: MigrationKind
    patch: list[dict[str, Any]] | None = None
    merge_patch: dict[str, Any] | None = None
    function: Function | None = None
    source: str = ""   # the function's ``module:function``, for messages
    description: str = ""


@dataclass(frozen=True)
class Planned:
    """What a migration makes of one document: ``patch`` (strict RFC 6902, possibly empty: nothing to change), or
    ``None`` with ``reason`` when a ``test`` guard failed (the migration does not apply to it)."""

    patch: list[dict[str, Any]] | None
    reason: str = ""


def _invalid(message: str, problems: list[str]) -> SchemaDocError:
    return SchemaDocError("migration-invalid", message, {"problems": problems})


def parse_migration(data: Any, *, load_function: Callable[[str], Function] | None = None) -> Migration:
    """A :class:`Migration` from its JSON form, or ``migration-invalid`` naming every problem found.

    ``load_function`` turns ``module:function`` into the callable (the command imports it); without it a
    ``function`` migration is refused."""
    if not isinstance(data, dict):
        raise _invalid("A migration is a JSON object with a name and one of patch, merge_patch, function.",
                       [f"got a {json_type(data)}"])
    problems: list[str] = []
    unknown = sorted(set(data) - _ALLOWED_MEMBERS)
    if unknown:
        problems.append(f"unknown member(s) {', '.join(unknown)} (allowed: {', '.join(sorted(_ALLOWED_MEMBERS))})")
    name = data.get("name")
    if not isinstance(name, str) or not name:
        problems.append("no name: give \"name\", which is recorded in every version the migration writes")
    elif len(name) > MAX_NAME_LENGTH or not _NAME.fullmatch(name):
        problems.append(f"the name {name[:MAX_NAME_LENGTH]!r} must be 1 to {MAX_NAME_LENGTH} letters, digits or "
                        "._:/+@- (starting with a letter or digit)")
    description = data.get("description", "")
    if not isinstance(description, str):
        problems.append("description must be a string")
    kinds = [kind for kind in _KINDS if kind in data]
    if len(kinds) != 1:
        problems.append("give exactly one of patch, merge_patch, function" +
                        (f" (got {', '.join(kinds)})" if kinds else ""))
    if problems:
        raise _invalid("The migration cannot be run as written.", problems)
    assert isinstance(name, str) and isinstance(description, str)
    kind: MigrationKind = kinds[0]  # type: ignore[assignment]
    if kind == "patch":
        return Migration(name, kind, patch=_check_template(data["patch"]), description=description)
    if kind == "merge_patch":
        if not isinstance(data["merge_patch"], dict):
            raise _invalid("The merge patch must be a JSON object (RFC 7396, applied to the whole document).",
                           [f"merge_patch is a {json_type(data['merge_patch'])}"])
        return Migration(name, kind, merge_patch=data["merge_patch"], description=description)
    source = data["function"]
    if not isinstance(source, str) or source.count(":") != 1 or not all(source.split(":")):
        raise _invalid("The function must be named as module:function.", [f"function is {source!r}"])
    if load_function is None:
        raise _invalid("A function migration needs the function loaded.", [f"cannot load {source}"])
    return Migration(name, kind, function=load_function(source), source=source, description=description)


def _check_template(template: Any) -> list[dict[str, Any]]:
    try:
        checked = check_patch(template)
    except SchemaDocError as error:
        found = error.details.get("problems") or [error.details]
        raise _invalid(f"The patch template is not an RFC 6902 patch: {error.message}",
                       [f"operation {problem.get('index', '?')}: {problem.get('reason')}" for problem in found]
                       ) from None
    if not checked:
        raise _invalid("The patch template is empty.", ["patch has no operation"])
    problems: list[str] = []
    for index, operation in enumerate(checked):
        for member in ("path", "from"):
            if member in operation:
                try:
                    parse(operation[member])
                except SchemaDocError as error:
                    problems.append(f"operation {index}: {member} {operation[member]!r}: {error.message}")
        if problems:
            continue
        if operation["op"] in ("move", "copy"):
            sources = parse(operation["from"]).count(WILDCARD)
            targets = parse(operation["path"]).count(WILDCARD)
            if targets > sources:
                problems.append(f"operation {index}: path has {targets} wildcard(s) but from has {sources}: each "
                                "wildcard of path takes the item of the same wildcard of from")
    if problems:
        raise _invalid("The patch template cannot be expanded.", problems)
    return checked


def plan(document: Any, migration: Migration) -> Planned:
    """The patch ``migration`` makes of ``document`` (never mutated), or not applicable (a failed ``test``).

    Raises the error of an operation that cannot apply (``path-not-found``, ...) and ``migration-invalid`` when
    the function raises or returns something that is not JSON."""
    if migration.kind == "patch":
        assert migration.patch is not None
        return _expand_template(document, migration.patch)
    if migration.kind == "merge_patch":
        return Planned(compile_merge_patch(document, migration.merge_patch, []))
    return Planned(diff(document, _call(document, migration)))


def _call(document: Any, migration: Migration) -> Any:
    assert migration.function is not None
    argument = orjson.loads(orjson.dumps(document))  # the function may change it in place: never the stored one
    try:
        result = migration.function(argument)
    except Exception as error:  # the user's code: any exception is this document's failure
        raise SchemaDocError("migration-invalid", f"{migration.source} raised {type(error).__name__}: {error}",
                             {"function": migration.source, "reason": type(error).__name__}) from None
    if result is None:
        result = argument
    try:
        return orjson.loads(orjson.dumps(result))
    except (TypeError, orjson.JSONEncodeError) as error:
        raise SchemaDocError("migration-invalid", f"{migration.source} returned a value that is not JSON: {error}",
                             {"function": migration.source, "reason": "not JSON"}) from None


def _expand_template(document: Any, template: Sequence[dict[str, Any]]) -> Planned:
    current = document
    out: list[dict[str, Any]] = []
    for operation in template:
        concrete = list(_concrete(current, operation))
        for one in concrete:
            if one["op"] == "test" and not _passes(current, one):
                return Planned(None, f"test failed at {one['path'] or '/'}")
        writes = [one for one in concrete if one["op"] != "test"]
        if writes:
            applied = apply_patch(current, writes)
            current = applied.document
            out.extend(applied.patch)
    return Planned(out)


def _passes(document: Any, test: dict[str, Any]) -> bool:
    try:
        node, _ = resolve(document, parse(test["path"]), allow_negative=False)
    except SchemaDocError:
        return False
    return json_equal(node, test["value"])


def _concrete(document: Any, operation: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """``operation`` once per item its wildcards address in ``document`` (as it is when the operation applies)."""
    key = "from" if operation["op"] in ("move", "copy") else "path"
    expanded = list(_expand(document, parse(operation[key])))
    if operation["op"] in ("remove", "move"):
        expanded.reverse()  # the last item first: removing one does not shift those still to come
    for tokens, items in expanded:
        one = {**operation, key: format_pointer(tokens)}
        if key == "from":
            one["path"] = _fill(parse(operation["path"]), items)
        yield one


def _expand(document: Any, tokens: list[str]) -> Iterator[tuple[list[str], tuple[str, ...]]]:
    found: list[tuple[list[str], tuple[str, ...], Any]] = [([], (), document)]
    for token in tokens:
        following: list[tuple[list[str], tuple[str, ...], Any]] = []
        for prefix, items, node in found:
            if token != WILDCARD:
                following.append(([*prefix, token], items, _child(node, token)))
            elif isinstance(node, list):
                following += [([*prefix, str(i)], (*items, str(i)), child) for i, child in enumerate(node)]
            elif isinstance(node, dict):
                following += [([*prefix, name], (*items, name), child) for name, child in node.items()]
        found = following
    for prefix, items, _ in found:
        yield prefix, items


_MISSING: Final = object()


def _child(node: Any, token: str) -> Any:
    if isinstance(node, dict):
        return node.get(token, _MISSING)
    if isinstance(node, list) and token.isdigit() and int(token) < len(node):
        return node[int(token)]
    return _MISSING


def _fill(tokens: list[str], items: tuple[str, ...]) -> str:
    taken = iter(items)
    return format_pointer([next(taken) if token == WILDCARD else token for token in tokens])
