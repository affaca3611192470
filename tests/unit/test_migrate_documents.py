"""``schemadoc migrate-documents``: each form of migration (patch template with ``*`` and ``test`` guards, merge
patch, Python function) journaled as one named version per document; dry-run counts; malformed migrations;
one document's failure beside the others; a second run skips; a migration version reverts like any other."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import jsonpatch
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.cli.command import main
from schemadoc.ops.migration import parse_migration, plan
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.service.migrating import migrate_document, migrate_documents
from schemadoc.storage.files import FileDocumentStore

CHAPTER = {"type": "object", "additionalProperties": False,
           "properties": {"title": {"type": "string"}, "heading": {"type": "string"},
                          "isbn": {"type": "string", "pattern": "^[0-9-]+$"}}}
SCHEMA = {"$schema": "https://json-schema.org/draft/2020-12/schema", "type": "object", "additionalProperties": False,
          "properties": {"title": {"type": "string", "maxLength": 20}, "status": {"type": "string"},
                         "n": {"type": "integer"}, "chapters": {"type": "array", "items": CHAPTER}}}
ACTOR = "cli:migrate-documents"


@pytest.fixture
def schema_path(tmp_path: Path) -> Path:
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(SCHEMA))
    return path


@pytest.fixture
def storage(tmp_path: Path) -> Path:
    return tmp_path / "data"


@pytest.fixture
def service(schema_path: Path, storage: Path) -> Any:
    svc = DocumentService(load_schema(schema_path), FileDocumentStore(storage))
    svc.open()
    yield svc
    svc.close()


def create(service: DocumentService, content: dict[str, Any]) -> str:
    return service.create_document(content)[0]


def entries(service: DocumentService, doc_id: str) -> list[Any]:
    return service.store.read_journal(doc_id)


def named(service: DocumentService, doc_id: str, name: str) -> list[Any]:
    return [entry for entry in entries(service, doc_id) if entry.info.get("migration") == name]


def run_cli(args: list[str], schema_path: Path, storage: Path, capsys: pytest.CaptureFixture[str]
            ) -> tuple[int, str, str]:
    code = main(["migrate-documents", *args, "--schema", str(schema_path), "--storage-dir", str(storage)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def write_migration(tmp_path: Path, migration: dict[str, Any]) -> str:
    path = tmp_path / f"{migration.get('name', 'unnamed')}.json"
    path.write_text(json.dumps(migration))
    return str(path)


def test_a_template_expands_star_per_document_and_its_test_guard_skips_documents_it_does_not_hold(
        service: DocumentService) -> None:
    draft = create(service, {"title": "A", "status": "draft", "chapters": [{"title": "x"}, {"title": "y"}, {}]})
    final = create(service, {"title": "B", "status": "final", "chapters": [{"title": "z"}]})
    empty = create(service, {"title": "C", "status": "draft", "chapters": []})
    migration = parse_migration({"name": "isbn-1", "patch": [
        {"op": "test", "path": "/status", "value": "draft"},
        {"op": "add", "path": "/chapters/*/isbn", "value": "0-000"}]})
    summary = migrate_documents(service, migration, actor=ACTOR)
    assert summary.counts["valid"] == 1 and summary.counts["not_applicable"] == 1
    assert summary.counts["unchanged"] == 1 and summary.examples["unchanged"] == [empty]
    content, meta = service.read_document(draft)
    assert [chapter.get("isbn") for chapter in content["chapters"]] == ["0-000"] * 3
    [entry] = named(service, draft, "isbn-1")
    assert entry.version == meta.version == 2 and entry.op == "patch" and entry.info["actor"] == ACTOR
    assert [operation["path"] for operation in entry.patch] == ["/chapters/0/isbn", "/chapters/1/isbn",
                                                                "/chapters/2/isbn"]
    assert service.version_of(final) == 1 and service.version_of(empty) == 1
    assert "isbn" not in service.read_document(final)[0]["chapters"][0]


def test_a_move_template_renames_a_member_in_every_item_and_a_star_remove_empties_an_array(
        service: DocumentService) -> None:
    doc = create(service, {"title": "A", "chapters": [{"title": "one"}, {"title": "two"}, {"title": "three"}]})
    rename = parse_migration({"name": "rename", "patch": [
        {"op": "move", "from": "/chapters/*/title", "path": "/chapters/*/heading"}]})
    assert migrate_document(service, rename, doc, actor=ACTOR).outcome == "valid"
    assert service.read_document(doc)[0]["chapters"] == [{"heading": "one"}, {"heading": "two"},
                                                         {"heading": "three"}]
    clear = parse_migration({"name": "clear", "patch": [{"op": "remove", "path": "/chapters/*"}]})
    assert migrate_document(service, clear, doc, actor=ACTOR).outcome == "valid"
    assert service.read_document(doc)[0]["chapters"] == []
    assert [entry.info.get("migration") for entry in entries(service, doc)] == [None, "rename", "clear"]


def test_a_merge_patch_migration_journals_only_what_it_changes(service: DocumentService) -> None:
    doc = create(service, {"title": "A", "status": "draft", "chapters": [{"title": "x"}] * 50})
    migration = parse_migration({"name": "merge", "merge_patch": {"status": None, "n": 7}})
    assert migrate_document(service, migration, doc, actor=ACTOR).outcome == "valid"
    assert service.read_document(doc)[0] == {"title": "A", "n": 7, "chapters": [{"title": "x"}] * 50}
    [entry] = named(service, doc, "merge")
    assert sorted((operation["op"], operation["path"]) for operation in entry.patch) == [("add", "/n"),
                                                                                         ("remove", "/status")]


def test_a_function_migration_through_the_command_journals_the_difference_not_the_document(
        tmp_path: Path, schema_path: Path, storage: Path, service: DocumentService,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    docs = [create(service, {"title": f"book {i}", "chapters": [{"title": "c"}] * 20}) for i in range(3)]
    service.close()
    (tmp_path / "mig_upper.py").write_text(textwrap.dedent("""
        def shout(document):
            document["title"] = document["title"].upper()
            return document
        """))
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli(["--name", "shout", "--function", "mig_upper:shout", "--json"], schema_path, storage,
                           capsys)
    assert code == 0, out
    summary = json.loads(out)
    assert summary["counts"]["valid"] == 3 and summary["ok"] is True and summary["kind"] == "function"
    check = DocumentService(load_schema(schema_path), FileDocumentStore(storage))
    check.open()
    try:
        for i, doc in enumerate(docs):
            assert check.read_document(doc)[0]["title"] == f"BOOK {i}"
            [entry] = named(check, doc, "shout")
            assert entry.patch == [{"op": "replace", "path": "/title", "value": f"BOOK {i}"}]
            assert entry.info["actor"] == ACTOR
    finally:
        check.close()


def test_a_second_run_skips_every_document_the_migration_already_reached(
        tmp_path: Path, schema_path: Path, storage: Path, service: DocumentService,
        capsys: pytest.CaptureFixture[str]) -> None:
    docs = [create(service, {"title": f"t{i}", "n": i}) for i in range(4)]
    service.close()
    counter = write_migration(tmp_path, {"name": "count-up", "patch": [{"op": "replace", "path": "/n",
                                                                           "value": 100}]})
    assert run_cli([counter, "--doc-id", docs[0], "--doc-id", docs[1]], schema_path, storage, capsys)[0] == 0
    code, out, _ = run_cli([counter, "--json"], schema_path, storage, capsys)
    summary = json.loads(out)
    assert code == 0
    assert summary["counts"]["valid"] == 2 and summary["counts"]["already_migrated"] == 2
    assert sorted(summary["examples"]["already_migrated"]) == sorted(docs[:2])
    code, out, _ = run_cli([counter, "--json"], schema_path, storage, capsys)
    assert json.loads(out)["counts"]["already_migrated"] == 4
    check = DocumentService(load_schema(schema_path), FileDocumentStore(storage))
    check.open()
    try:
        assert all(check.version_of(doc) == 2 and len(named(check, doc, "count-up")) == 1 for doc in docs)
    finally:
        check.close()


def test_a_dry_run_counts_each_outcome_exactly_and_writes_nothing(
        tmp_path: Path, schema_path: Path, storage: Path, service: DocumentService,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # title gets " (second edition)" appended: over 20 characters for long titles (refused)
    good = [create(service, {"title": "Ab", "status": "draft"}) for _ in range(3)]
    long = [create(service, {"title": "A long title here", "status": "draft"}) for _ in range(2)]
    final = [create(service, {"title": "Ab", "status": "final"}) for _ in range(4)]
    done = create(service, {"title": "Ab", "status": "draft"})
    service.apply_patch(done, [{"op": "replace", "path": "/title", "value": "Ab 2e"}], 1, migration="edition",
                        actor=ACTOR)
    service.close()
    (tmp_path / "mig_edition.py").write_text(textwrap.dedent("""
        def second(document):
            if document.get("status") == "draft":
                document["title"] += " (second edition)"
            return document
        """))
    function_file = write_migration(tmp_path, {"name": "edition", "function": "mig_edition:second"})
    before = _stored(storage)
    monkeypatch.chdir(tmp_path)
    code, out, _ = run_cli([function_file, "--dry-run", "--json"], schema_path, storage, capsys)
    summary = json.loads(out)
    assert code == 1  # some would be refused
    assert summary["dry_run"] is True and summary["documents"] == 10
    assert summary["counts"] == {"valid": 3, "invalid": 0, "refused": 2, "failed": 0, "not_applicable": 0,
                                 "unchanged": 4, "already_migrated": 1}
    assert sorted(summary["examples"]["valid"]) == sorted(good)
    assert sorted(summary["examples"]["unchanged"]) == sorted(final)
    assert sorted(failure["doc_id"] for failure in summary["failures"]) == sorted(long)
    first = summary["failures"][0]
    assert first["code"] == "validation-failed"
    assert first["first_violation"]["path"] == "/title" and first["first_violation"]["code"] == "max-length"
    after = _stored(storage)
    assert after == before


@pytest.mark.parametrize(("migration", "problem"), [
    ({"patch": [{"op": "add", "path": "/n", "value": 1}]}, "no name"),
    ({"name": "x", "patch": [{"op": "frobnicate", "path": "/n"}]}, "unknown op"),
    ({"name": "x", "patch": [{"op": "add", "path": "n", "value": 1}]}, "operation 0: path"),
    ({"name": "x", "patch": [{"op": "move", "from": "/a", "path": "/chapters/*/b"}]}, "wildcard"),
    ({"name": "x", "patch": [{"op": "add", "path": "/n", "value": 1}], "merge_patch": {}}, "exactly one"),
    ({"name": "x", "merge_patch": [1]}, "merge_patch is a array"),
    ({"name": "x", "function": "no_such_module_here:f"}, "import failed"),
    ({"name": "bad name!", "merge_patch": {}}, "must be 1 to"),
    ({"name": "x", "merge_patch": {}, "nmae": "typo"}, "unknown member"),
])
def test_a_malformed_migration_is_migration_invalid_exit_2_and_nothing_changes(
        tmp_path: Path, schema_path: Path, storage: Path, service: DocumentService,
        capsys: pytest.CaptureFixture[str], migration: dict[str, Any], problem: str) -> None:
    doc = create(service, {"title": "A", "n": 1})
    service.close()
    before = _stored(storage)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(migration))
    code = main(["migrate-documents", str(path), "--json", "--schema", str(schema_path),
                 "--storage-dir", str(storage)])
    error = json.loads(capsys.readouterr().err)["error"]
    assert code == 2
    assert error["code"] == "migration-invalid"
    assert problem in json.dumps(error["details"]["problems"])
    assert _stored(storage) == before
    assert doc in before[f"{doc}.meta.json"].decode()


def test_one_document_s_failure_is_reported_and_the_others_are_migrated(
        tmp_path: Path, schema_path: Path, storage: Path, service: DocumentService,
        capsys: pytest.CaptureFixture[str]) -> None:
    docs = [create(service, {"title": "A", "status": "draft"}) for _ in range(3)]
    untitled = create(service, {"status": "draft"})
    service.close()
    migration = write_migration(tmp_path, {"name": "retitle", "patch": [
        {"op": "replace", "path": "/title", "value": "B"}]})
    code, out, _ = run_cli([migration], schema_path, storage, capsys)
    assert code == 1
    assert f"{untitled}: path-not-found" in out
    assert "migrated, valid" in out and " 3" in out.split("migrated, valid")[1].splitlines()[0]
    check = DocumentService(load_schema(schema_path), FileDocumentStore(storage))
    check.open()
    try:
        assert all(check.read_document(doc)[0]["title"] == "B" for doc in docs)
        assert check.version_of(untitled) == 1
    finally:
        check.close()


def test_where_selects_documents_by_a_pointer_s_value(service: DocumentService) -> None:
    from schemadoc.service.migrating import Where

    drafts = [create(service, {"title": "A", "status": "draft"}) for _ in range(2)]
    final = create(service, {"title": "A", "status": "final"})
    migration = parse_migration({"name": "n1", "merge_patch": {"n": 1}})
    summary = migrate_documents(service, migration, actor=ACTOR, where=[Where("/status", "draft")])
    assert summary.counts["valid"] == 2 and summary.not_selected == 1
    assert sorted(summary.examples["valid"]) == sorted(drafts)
    assert service.version_of(final) == 1


def test_a_document_written_between_read_and_write_is_migrated_from_its_new_version(
        schema_path: Path, storage: Path, service: DocumentService) -> None:
    doc = create(service, {"title": "A", "n": 1})
    other = DocumentService(load_schema(schema_path), FileDocumentStore(storage))  # another process's view
    other.open()
    calls: list[int] = []

    def migrate(document: dict[str, Any]) -> dict[str, Any]:
        calls.append(document["n"])
        if len(calls) == 1:  # someone else writes after this read, before the migration's write
            other.update_node(doc, "/n", 2, 1, actor="rest")
        document["title"] = document["title"] + "!"
        return document

    migration = parse_migration({"name": "bang", "function": "m:f"}, load_function=lambda source: migrate)
    try:
        outcome = migrate_document(service, migration, doc, actor=ACTOR)
    finally:
        other.close()
    assert outcome.outcome == "valid" and outcome.version == 3
    assert calls == [1, 2]
    assert service.read_document(doc)[0] == {"title": "A!", "n": 2}
    assert [entry.info.get("migration") for entry in entries(service, doc)] == [None, None, "bang"]


def test_a_migration_version_is_reverted_like_any_other_and_a_rerun_then_skips_it(
        service: DocumentService) -> None:
    doc = create(service, {"title": "A", "status": "draft"})
    migration = parse_migration({"name": "drop-status", "merge_patch": {"status": None}})
    assert migrate_document(service, migration, doc, actor=ACTOR).version == 2
    result = service.revert(doc, 1, 2, actor="rest")
    assert result.version == 3
    assert service.read_document(doc)[0] == {"title": "A", "status": "draft"}
    assert migrate_document(service, migration, doc, actor=ACTOR).outcome == "already_migrated"
    assert [entry.op for entry in entries(service, doc)] == ["create", "patch", "revert"]


def test_a_function_that_raises_on_one_document_fails_only_that_one(service: DocumentService) -> None:
    docs = [create(service, {"title": title}) for title in ("ok", "boom", "fine")]

    def touchy(document: dict[str, Any]) -> dict[str, Any]:
        if document["title"] == "boom":
            raise ValueError("cannot handle boom")
        return {**document, "n": 1}

    migration = parse_migration({"name": "touchy", "function": "m:touchy"}, load_function=lambda source: touchy)
    summary = migrate_documents(service, migration, docs, actor=ACTOR)
    assert summary.counts["valid"] == 2 and summary.counts["failed"] == 1
    [failure] = summary.failures
    assert failure.doc_id == docs[1] and failure.code == "migration-invalid"
    assert "cannot handle boom" in failure.message


def test_a_function_returning_something_that_is_not_json_is_refused_for_that_document() -> None:
    migration = parse_migration({"name": "sets", "function": "m:f"}, load_function=lambda source: lambda d: {1, 2})
    with pytest.raises(SchemaDocError) as caught:
        plan({"a": 1}, migration)
    assert caught.value.code == "migration-invalid"


ITEMS = st.lists(st.dictionaries(st.sampled_from(["a", "b", "c"]), st.integers(-5, 5), max_size=3), max_size=8)


@settings(max_examples=200, deadline=None)
@given(items=ITEMS, value=st.integers())
def test_a_star_template_equals_the_edit_made_item_by_item_and_replays_with_jsonpatch(
        items: list[dict[str, int]], value: int) -> None:
    document = {"items": items, "keep": {"x": 1}}
    frozen = json.dumps(document)
    migration = parse_migration({"name": "p", "patch": [
        {"op": "test", "path": "/keep/x", "value": 1},
        {"op": "remove", "path": "/items/*/a"} if any("a" in item for item in items) else
        {"op": "test", "path": "/keep", "value": {"x": 1}},
        {"op": "add", "path": "/items/*/z", "value": value}]})
    # removing /items/*/a from an item without "a" fails, so the template only removes when every item has it
    if any("a" in item for item in items) and not all("a" in item for item in items):
        with pytest.raises(SchemaDocError):
            plan(document, migration)
        return
    planned = plan(document, migration)
    assert planned.patch is not None
    expected = {"items": [{**{k: v for k, v in item.items() if k != "a"}, "z": value} for item in items],
                "keep": {"x": 1}}
    assert jsonpatch.apply_patch(json.loads(frozen), planned.patch) == expected
    assert json.dumps(document) == frozen  # the document read is never changed
    assert all("*" not in operation["path"] for operation in planned.patch)
    assert plan(document, parse_migration({"name": "q", "patch": [
        {"op": "test", "path": "/keep/x", "value": 2}]})).patch is None


def test_a_bad_where_is_invalid_request_exit_2(
        tmp_path: Path, schema_path: Path, storage: Path, service: DocumentService,
        capsys: pytest.CaptureFixture[str]) -> None:
    create(service, {"title": "A"})
    service.close()
    migration = write_migration(tmp_path, {"name": "w", "merge_patch": {"n": 1}})
    code, _, err = run_cli([migration, "--where", "/status"], schema_path, storage, capsys)
    assert code == 2 and "invalid-request" in err and "POINTER=JSON" in err
    code, out, _ = run_cli([migration, "--where", '/title="A"', "--json"], schema_path, storage, capsys)
    assert code == 0 and json.loads(out)["counts"]["valid"] == 1


def test_the_progress_bar_is_drawn_on_a_terminal_and_not_otherwise(
        tmp_path: Path, schema_path: Path, storage: Path, service: DocumentService) -> None:
    import os
    import pty
    import subprocess
    import sys

    for i in range(3):
        create(service, {"title": f"t{i}"})
    service.close()
    migration = write_migration(tmp_path, {"name": "bar", "merge_patch": {"n": 1}})
    command = [sys.executable, "-m", "schemadoc", "migrate-documents", migration, "--schema", str(schema_path),
               "--storage-dir", str(storage)]
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    leader, follower = pty.openpty()
    try:
        process = subprocess.run(command, stderr=follower, stdout=subprocess.PIPE, env=environment, timeout=120,
                                 check=False)
        os.close(follower)
        drawn = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the terminal closed: everything was read
                break
            if not chunk:
                break
            drawn += chunk
    finally:
        os.close(leader)
    assert process.returncode == 0
    assert b"bar:" in drawn and b"/3 [" in drawn and b"\r" in drawn
    quiet = subprocess.run(command, capture_output=True, env=environment, timeout=120, check=False)
    assert quiet.returncode == 0 and quiet.stderr == b""
    assert b"already migrated" in quiet.stdout


def test_a_rerun_finds_migrated_documents_without_loading_them(
        service: DocumentService, monkeypatch: pytest.MonkeyPatch) -> None:
    docs = [create(service, {"title": f"t{i}"}) for i in range(5)]
    migration = parse_migration({"name": "once", "merge_patch": {"n": 3}})
    assert migrate_documents(service, migration, actor=ACTOR).counts["valid"] == 5

    def no_load(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a document already migrated was loaded")

    monkeypatch.setattr(service, "read_node", no_load)
    summary = migrate_documents(service, migration, actor=ACTOR)
    assert summary.counts["already_migrated"] == 5 and sorted(summary.examples["already_migrated"]) == sorted(docs)


def test_a_run_that_loses_the_race_to_another_run_skips_the_document(
        schema_path: Path, storage: Path, service: DocumentService, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = create(service, {"title": "A"})
    migration = parse_migration({"name": "race", "merge_patch": {"n": 1}})
    other = DocumentService(load_schema(schema_path), FileDocumentStore(storage))  # another run, another process
    other.open()
    original = service.read_node

    def read_after_the_other_run(doc_id: str, node_path: str, at_version: int | None = None) -> Any:
        if other.version_of(doc_id) == 1:  # the other run migrates it between our journal check and our read
            assert migrate_document(other, migration, doc_id, actor=ACTOR).outcome == "valid"
        return original(doc_id, node_path, at_version)

    monkeypatch.setattr(service, "read_node", read_after_the_other_run)
    try:
        outcome = migrate_document(service, migration, doc, actor=ACTOR)
    finally:
        other.close()
    assert outcome.outcome == "already_migrated" and outcome.version == 2
    assert len(named(service, doc, "race")) == 1 and service.version_of(doc) == 2


def test_a_named_document_that_is_unknown_or_malformed_is_that_document_s_failure(service: DocumentService) -> None:
    doc = create(service, {"title": "A"})
    migration = parse_migration({"name": "named", "merge_patch": {"n": 1}})
    summary = migrate_documents(service, migration, [doc, "01ARZ3NDEKTSV4RRFFQ69G5FAV", "../../etc/passwd"],
                                actor=ACTOR)
    assert summary.counts["valid"] == 1 and summary.counts["failed"] == 2
    assert [failure.code for failure in summary.failures] == ["document-not-found", "invalid-doc-id"]


def test_with_the_repair_rule_a_migration_that_fixes_part_of_what_a_schema_change_broke_is_written_as_invalid(
        tmp_path: Path, storage: Path) -> None:
    """Stored under a loose schema, served a tightened one (a long title, an isbn the pattern refuses): a migration
    that fixes only the isbns adds no violation, so the moderate level writes it and counts the document as still
    invalid (dry run and run alike); strict refuses it; a migration that breaks something more is refused."""
    loose = tmp_path / "loose.json"
    loose.write_text(json.dumps({"$schema": SCHEMA["$schema"], "type": "object"}))
    tight = tmp_path / "tight.json"
    tight.write_text(json.dumps(SCHEMA))
    before = DocumentService(load_schema(loose), FileDocumentStore(storage))
    before.open()
    doc = create(before, {"title": "a title far longer than twenty", "chapters": [{"title": "x", "isbn": "bad"}]})
    before.close()
    fix_isbn = parse_migration({"name": "isbns", "patch": [{"op": "replace", "path": "/chapters/*/isbn",
                                                             "value": "978-0"}]})
    worse = parse_migration({"name": "worse", "patch": [{"op": "add", "path": "/n", "value": "not a number"}]})
    for level, outcome in (("strict", "refused"), ("moderate", "invalid")):
        served = DocumentService(load_schema(tight), FileDocumentStore(storage), validation_level=level)
        served.open()
        try:
            dry = migrate_documents(served, fix_isbn, dry_run=True)
            assert dry.counts[outcome] == 1, (level, dry.counts)
            assert migrate_documents(served, worse, dry_run=True).counts["refused"] == 1
            if level == "moderate":
                summary = migrate_documents(served, fix_isbn)
                assert summary.counts["invalid"] == 1 and len(named(served, doc, "isbns")) == 1
                verdict = served.store.read_meta(doc).verdict
                assert verdict is not None and verdict.violation_count == 1  # the long title is left
        finally:
            served.close()


def _stored(storage: Path) -> dict[str, bytes]:
    """The store's files, but the search index: derived from the documents, kept by whichever service opens them."""
    return {path.name: path.read_bytes() for path in storage.iterdir()
            if path.is_file() and not path.name.startswith("search-index.")}
