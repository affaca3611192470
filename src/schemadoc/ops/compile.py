"""Compile node requests (update, create, delete, move) into strict RFC 6902 patches.

The document is needed to compile: negative indices become concrete ones (where a node is
inserted, ``-k`` is the position ``len - k``, as in ``list.insert``), ``-`` becomes the array's
length, a create on an existing member is a ``conflict``, and a missing ancestor is a
``path-not-found`` that names what to create first. What comes out is what the journal keeps.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from schemadoc.errors import SchemaDocError
from schemadoc.ops.apply import apply_patch
from schemadoc.pointer import format_pointer, index_token, json_type, parse_node_path, resolve

__all__ = ["CompiledWrite", "compile_create", "compile_delete", "compile_move", "compile_update"]


@dataclass(frozen=True)
class CompiledWrite:
    patch: list[dict[str, Any]]
    node_path: str          # the concrete RFC 6901 pointer of the node written ("" for the root)


def _existing(document: Any, tokens: list[str]) -> str:
    """The concrete pointer of the existing node at ``tokens`` (``path-not-found`` when there is none)."""
    return format_pointer(resolve(document, tokens)[1])


def compile_update(document: Any, node_path: str, value: Any) -> CompiledWrite:
    """``replace`` at an existing node (the root may be replaced)."""
    pointer = _existing(document, parse_node_path(node_path))
    return CompiledWrite([{"op": "replace", "path": pointer, "value": value}], pointer)


def compile_delete(document: Any, node_path: str) -> CompiledWrite:
    """``remove`` of an existing node; the root cannot be removed."""
    tokens = parse_node_path(node_path)
    if not tokens:
        raise SchemaDocError("root-not-deletable", "The document root cannot be deleted.",
                             {"path": node_path},
                             remediation="Delete members one by one, or replace the root with document_update_node.")
    pointer = _existing(document, tokens)
    return CompiledWrite([{"op": "remove", "path": pointer}], pointer)


def compile_create(document: Any, node_path: str, value: Any) -> CompiledWrite:
    """``add`` of a new node: a new object member, an array insert at index <= length, or ``-`` to append.

    An existing object member is a ``conflict``; the parent must exist (``path-not-found``).
    """
    tokens = parse_node_path(node_path)
    if not tokens:
        raise SchemaDocError("conflict", "The document root always exists; it cannot be created.",
                             {"path": node_path},
                             remediation="Use document_update_node with node_path '/' to replace the root.")
    parent, concrete_parent = resolve(document, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        pointer = format_pointer([*concrete_parent, last])
        if last in parent:
            raise SchemaDocError(
                "conflict", f"{pointer} already exists.", {"path": pointer, "existing_type": json_type(parent[last])},
                remediation=f"Use document_update_node to change {pointer}, or delete it first.")
        return CompiledWrite([{"op": "add", "path": pointer, "value": value}], pointer)
    if isinstance(parent, list):
        parent_pointer = format_pointer(concrete_parent)
        if last == "-":
            index = len(parent)
        else:
            index = index_token(last, len(parent), node_path, allow_negative=True)
            if index > len(parent):
                raise SchemaDocError(
                    "path-not-found",
                    f"Cannot insert at index {index}: the array at {parent_pointer or '/'} has {len(parent)} items.",
                    {"path": node_path, "deepest_ancestor": parent_pointer or "/", "array_length": len(parent),
                     "create_first": format_pointer([*concrete_parent, str(len(parent))])},
                    remediation=f"Insert at an index from 0 to {len(parent)}, or use {parent_pointer}/- to append.")
        pointer = format_pointer([*concrete_parent, str(index)])
        return CompiledWrite([{"op": "add", "path": pointer, "value": value}], pointer)
    parent_pointer = format_pointer(concrete_parent) or "/"
    raise SchemaDocError(
        "path-not-found",
        f"Cannot create {node_path}: {parent_pointer} is a {json_type(parent)}, which has no members.",
        {"path": node_path, "deepest_ancestor": parent_pointer, "create_first": parent_pointer},
        remediation=f"Replace {parent_pointer} with an object or array first.")


def compile_move(document: Any, from_path: str, to_path: str) -> list[dict[str, Any]]:
    """``move`` of an existing node (not the root), its paths made concrete: the move RFC 6902 would apply.

    A negative index in ``from_path`` counts in the document as it is; in ``to_path``, in the document
    the ``add`` half of the move sees (the node already gone from its place, as RFC 6902 says), and
    where the node is inserted ``-k`` is the position ``len - k``, as in :func:`compile_create`.
    ``to_path`` may end in ``-`` (appended: the journal gets the index).
    """
    _, source = resolve(document, parse_node_path(from_path))  # path-not-found names what is missing
    source_pointer = format_pointer(source)
    tokens = parse_node_path(to_path)
    if not any(token[:1] == "-" and token[1:].isascii() and token[1:].isdigit() for token in tokens):
        return [{"op": "move", "from": source_pointer, "path": format_pointer(tokens)}]
    if tokens[:len(source)] == [str(token) for token in source]:
        return [{"op": "move", "from": source_pointer, "path": format_pointer(tokens)}]  # into itself: refused
    moved = apply_patch(document, [{"op": "remove", "path": source_pointer}]).document
    parent, concrete = resolve(moved, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, list) and last != "-":
        last = str(index_token(last, len(parent), to_path, allow_negative=True))
    return [{"op": "move", "from": source_pointer, "path": format_pointer([*concrete, last])}]
