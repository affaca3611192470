"""The served schema's digest (``LoadedSchema.digest``): the same for the same schema wherever its files live and
however they are formatted, different for any change to it or to a document its ``$ref`` s reach."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from schemadoc.examples import example_path
from schemadoc.schema import load_schema


def _write(folder: Path, files: dict[str, Any], *, indent: int | None = None, reverse: bool = False) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, contents in files.items():
        if reverse and isinstance(contents, dict):
            contents = dict(reversed(list(contents.items())))
        (folder / name).write_text(json.dumps(contents, indent=indent), encoding="utf-8")
    return folder / "root.schema.json"


ROOT = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "properties": {"item": {"$ref": "item.schema.json"}, "name": {"type": "string", "maxLength": 10}}}
ITEM = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
        "properties": {"n": {"type": "integer"}}}


def test_the_digest_ignores_place_formatting_and_member_order(tmp_path: Path) -> None:
    one = load_schema(_write(tmp_path / "a", {"root.schema.json": ROOT, "item.schema.json": ITEM}))
    other = load_schema(_write(tmp_path / "b" / "deeper", {"root.schema.json": ROOT, "item.schema.json": ITEM},
                               indent=4, reverse=True))
    assert one.digest == other.digest
    assert one.digest.startswith("sha256:") and len(one.digest) == len("sha256:") + 64


def test_a_change_to_the_root_or_to_a_referenced_document_changes_the_digest(tmp_path: Path) -> None:
    base = load_schema(_write(tmp_path / "a", {"root.schema.json": ROOT, "item.schema.json": ITEM})).digest
    tighter = {**ROOT, "properties": {**ROOT["properties"], "name": {"type": "string", "maxLength": 3}}}
    assert load_schema(_write(tmp_path / "b", {"root.schema.json": tighter, "item.schema.json": ITEM})).digest != base
    item = {**ITEM, "required": ["n"]}
    assert load_schema(_write(tmp_path / "c", {"root.schema.json": ROOT, "item.schema.json": item})).digest != base
    described = {**ROOT, "description": "a book"}
    assert load_schema(_write(tmp_path / "d", {"root.schema.json": described,
                                               "item.schema.json": ITEM})).digest != base


def test_the_bundled_examples_have_distinct_stable_digests() -> None:
    book, recipe = load_schema(example_path("book")), load_schema(example_path("recipe"))
    assert book.digest != recipe.digest
    assert load_schema(example_path("book")).digest == book.digest
