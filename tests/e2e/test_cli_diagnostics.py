"""Schema diagnostics of ``schemadoc validate`` and ``serve``: every problem (pointer, keyword, reason) in
text and ``--json``, the same exit code from both commands, a loud warning when ``document_create`` cannot
succeed, and the bundled example schemas (``--example``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_cli import run

from schemadoc.examples import example_names, example_path

BROKEN = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object",
    "properties": {"a": {"type": "strin"}, "b": {"minLength": -1}, "c": {"type": "string", "pattern": "("}},
}
BROKEN_PROBLEMS = [("/properties/a/type", "type"), ("/properties/b/minLength", "minLength"),
                   ("/properties/c/pattern", "pattern")]
NO_CREATE = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "required": ["name", "count"],
    "properties": {"name": {"type": "string"}, "count": {"type": "integer", "minimum": 5, "default": 1}},
}


def write(tmp_path: Path, name: str, schema: object) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(schema))
    return path


@pytest.mark.parametrize("command", ["validate", "serve"])
def test_every_problem_of_a_broken_schema_is_printed_with_pointer_keyword_and_reason(
        tmp_path: Path, command: str) -> None:
    schema = write(tmp_path, "broken.schema.json", BROKEN)
    extra = ["--storage-dir", str(tmp_path / "data")] if command == "serve" else []
    done, _ = run(command, "--schema", str(schema), *extra, cwd=tmp_path)
    assert done.returncode == 3
    first, *problems = done.stderr.strip().splitlines()
    assert first.startswith("schemadoc: schema-load-failed: ") and "3 problem(s)" in first
    assert [line.split()[1:3] for line in problems] == [[pointer, f"[{keyword}]:"] for pointer, keyword in
                                                        BROKEN_PROBLEMS]
    assert all(line.startswith("  broken.schema.json ") and len(line.split(": ", 1)[1]) > 5 for line in problems)
    assert not (tmp_path / "data").exists()

    done, _ = run(command, "--schema", str(schema), *extra, "--json", cwd=tmp_path)
    assert done.returncode == 3
    error = json.loads(done.stderr)["error"]
    assert error["code"] == "schema-load-failed"
    assert [(p["pointer"], p["keyword"]) for p in error["problems"]] == BROKEN_PROBLEMS
    assert all(p["reason"] and p["file"] == str(schema) for p in error["problems"])
    assert sorted((p["path"], p["keyword"]) for p in error["details"]["problems"]) == BROKEN_PROBLEMS


def test_unresolvable_refs_are_each_listed_where_they_are_written(tmp_path: Path) -> None:
    schema = write(tmp_path, "refs.schema.json", {"type": "object", "properties": {
        "a": {"$ref": "#/$defs/missing"}, "b": {"$ref": "absent.schema.json"}}})
    for command in ("validate", "serve"):
        done, _ = run(command, "--schema", str(schema), "--json", cwd=tmp_path)
        assert done.returncode == 3, done.stderr
        problems = json.loads(done.stderr)["error"]["problems"]
        assert [(p["pointer"], p["keyword"]) for p in problems] == [("/properties/a", "$ref"),
                                                                    ("/properties/b", "$ref")]


def test_validate_and_serve_say_loudly_when_document_create_cannot_succeed(tmp_path: Path) -> None:
    schema = write(tmp_path, "nocreate.schema.json", NO_CREATE)
    done, _ = run("validate", "--schema", str(schema), cwd=tmp_path)
    assert done.returncode == 0
    assert "document_create will always fail" in done.stdout
    assert "  /name [required]:" in done.stdout

    done, _ = run("validate", "--schema", str(schema), "--json", cwd=tmp_path)
    verdict = json.loads(done.stdout)
    assert verdict["document_create"]["succeeds"] is False
    assert [p["pointer"] for p in verdict["document_create"]["problems"]] == ["/name"]

    # stdio: the server ends when its standard input does
    done, _ = run("serve", "--schema", str(schema), "--transport", "stdio", "--storage-dir", str(tmp_path / "d"),
                  cwd=tmp_path, stdin="")
    assert done.returncode == 0, done.stderr
    assert "WARNING: document_create (POST /api/v1/documents) will always fail" in done.stderr
    assert "  /name [required]:" in done.stderr

    fixed = write(tmp_path, "fixed.schema.json", {**NO_CREATE, "required": ["count"]})
    done, _ = run("validate", "--schema", str(fixed), cwd=tmp_path)
    assert "document_create will always fail" in done.stdout
    assert "/count [minimum]:" in done.stdout


def test_the_bundled_examples_are_listed_validated_and_exclusive_with_schema(tmp_path: Path) -> None:
    assert {"book", "recipe"} <= set(example_names())
    done, _ = run("serve", "--example", cwd=tmp_path)
    assert done.returncode == 0
    assert [line.split("\t")[0] for line in done.stdout.splitlines()] == example_names()
    for name in example_names():
        done, _ = run("validate", "--example", name, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "a new document built from the schema's defaults is valid" in done.stdout
        assert str(example_path(name)) in done.stdout
    done, _ = run("serve", "--example", "nope", cwd=tmp_path)
    assert done.returncode == 2 and "book" in done.stderr
    done, _ = run("serve", "--example", "book", "--schema", str(example_path("book")), cwd=tmp_path)
    assert done.returncode == 2 and "not both" in done.stderr


NEAR_MISSES = {
    "$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "requird": ["title"],
    "properties": {"title": {"type": "string", "minLenght": 1, "default": "t"},
                   "requird": {"type": "string", "default": "a property's name is the author's, not a keyword"}},
}


def test_validate_and_serve_warn_of_near_misses_of_keywords_with_their_likely_intent(tmp_path: Path) -> None:
    schema = write(tmp_path, "typo.schema.json", NEAR_MISSES)
    done, _ = run("validate", "--schema", str(schema), cwd=tmp_path)
    assert done.returncode == 0, done.stderr  # legal JSON Schema: a warning, not a refusal
    lines = done.stdout.splitlines()
    assert lines[0].startswith("schema ok: ")
    assert lines[1].startswith("warning: 2 member(s) of the schema look like misspelt keywords")
    assert lines[2].startswith("  typo.schema.json /requird [requird]: ") and "did you mean 'required'?" in lines[2]
    assert lines[3].startswith("  typo.schema.json /properties/title/minLenght [minLenght]: ")
    assert "did you mean 'minLength'?" in lines[3]
    assert "/properties/requird" not in done.stdout

    done, _ = run("validate", "--schema", str(schema), "--json", cwd=tmp_path)
    warnings = json.loads(done.stdout)["warnings"]
    assert [(w["pointer"], w["keyword"], w["suggestion"]) for w in warnings] == [
        ("/requird", "requird", "required"), ("/properties/title/minLenght", "minLenght", "minLength")]

    document = write(tmp_path, "doc.json", {"title": ""})  # nothing enforced: the misspelt minLength checks nothing
    done, _ = run("validate", "--schema", str(schema), str(document), "--json", cwd=tmp_path)
    assert done.returncode == 0 and json.loads(done.stdout)["valid"] is True
    assert "did you mean 'minLength'?" in done.stderr

    done, _ = run("serve", "--schema", str(schema), "--transport", "stdio", "--storage-dir", str(tmp_path / "d"),
                  cwd=tmp_path, stdin="")
    assert done.returncode == 0, done.stderr
    assert re.search(r"WARNING.*: 2 member\(s\) of the schema look like misspelt keywords", done.stderr)
    assert "  typo.schema.json /requird [requird]: " in done.stderr
