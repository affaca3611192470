"""FR-009b, FR-088..090: ``document_create`` fills defaults inside defaulted objects, behind ``$ref``,
two levels deep and on recursive schemas, and names every required field that has no default."""

from __future__ import annotations

from pathlib import Path

import pytest

from .doors import door_on_schema, failed, ok

pytestmark = pytest.mark.anyio

async def test_defaults_inside_a_defaulted_object_behind_ref_make_a_valid_document(
    door_name: str, tmp_path: Path
) -> None:
    async with door_on_schema(door_name, "nested_defaults.schema.json", tmp_path / "data") as door:
        created = ok(await door.call("document_create", {}))
        assert created["initial_tree"] == {"metadata": {"title": "Untitled", "language": "en"}}
        assert created["validation_report"]["valid"] is True
        read = ok(await door.call("document_read_node", {"doc_id": created["doc_id"], "node_path": "/metadata"}))
        assert read["node_content"] == {"title": "Untitled", "language": "en"}


async def test_two_levels_deep_the_outer_default_wins_and_recursion_terminates(door_name: str, tmp_path: Path) -> None:
    async with door_on_schema(door_name, "nested_defaults_deep.schema.json", tmp_path / "data") as door:
        created = ok(await door.call("document_create", {}))
        assert created["initial_tree"] == {
            "settings": {"display": {"theme": "dark", "size": 12}, "locale": {"language": "en"}},
            "tree": {"name": "node"},
        }
        child = {"name": "leaf"}
        appended = await door.call(
            "document_create_node",
            {"doc_id": created["doc_id"], "node_path": "/tree/child", "node_data": child, "version": 1},
        )
        assert ok(appended)["version"] == 2


async def test_required_fields_without_any_default_are_all_named(door_name: str, tmp_path: Path) -> None:
    async with door_on_schema(door_name, "nested_defaults_missing.schema.json", tmp_path / "data") as door:
        error = failed(await door.call("document_create", {}), "required-field-without-default")
        assert error["details"]["paths"] == ["/metadata/title", "/metadata/isbn", "/metadata/owner/name"]
