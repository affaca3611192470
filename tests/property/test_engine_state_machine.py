"""The engine's invariants under random writes, failures, dry runs and restarts.

A model of every document is kept independently of the engine (plain Python edits). After
every step: memory == disk == journal replay == model, versions grew by exactly one per
success, and failed or dry-run writes changed no byte in the storage directory.
"""

from __future__ import annotations

import copy
import shutil
import tempfile
from pathlib import Path
from typing import Any

import jsonpatch
import orjson
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, invariant, precondition, rule

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry, replay
from schemadoc.schema import load_schema
from schemadoc.service import DocumentService
from schemadoc.snapshotter import SnapshotPolicy
from schemadoc.storage.files import FileDocumentStore

BOOK = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
SCHEMA = load_schema(BOOK)

titles = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=12)


def chapter(number: int, text: str) -> dict[str, Any]:
    return {"id": f"ch-{number}", "title": f"Chapter {number}",
            "sections": [{"title": "Opening", "paragraphs": [{"text": text, "style": "normal"}], "sections": []}]}


def directory_bytes(root: Path) -> dict[str, bytes]:
    """The store's files, but lock files and the search index (derived, written by its own thread as it likes)."""
    return {p.name: p.read_bytes() for p in sorted(root.iterdir())
            if p.is_file() and p.suffix != ".lock" and not p.name.startswith("search-index.")}


class EngineMachine(RuleBasedStateMachine):
    documents = Bundle("documents")

    def __init__(self) -> None:
        super().__init__()
        self.root = Path(tempfile.mkdtemp(prefix="schemadoc-sm-"))
        self.service = self._new_service()
        self.model: dict[str, tuple[int, Any]] = {}
        self.chapter_numbers = 0

    policy = SnapshotPolicy(mode="every-write")

    def _new_service(self) -> DocumentService:
        service = DocumentService(SCHEMA, FileDocumentStore(self.root), snapshot_policy=self.policy)
        service.open()
        return service

    def _files(self) -> dict[str, bytes]:
        assert self.service.snapshots.wait_idle()  # background snapshots are not what is being checked
        return directory_bytes(self.root)

    def teardown(self) -> None:
        self.service.snapshots.stop()
        shutil.rmtree(self.root, ignore_errors=True)

    # -- successful writes ------------------------------------------------------------------

    @rule(target=documents)
    def create_document(self) -> str:
        doc_id, content, meta, report = self.service.create_document()
        assert meta.version == 1 and report.valid
        self.model[doc_id] = (1, copy.deepcopy(content))
        return doc_id

    @rule(doc_id=documents, title=titles, dry_run=st.booleans())
    def update_title(self, doc_id: str, title: str, dry_run: bool) -> None:
        version, content = self.model[doc_id]
        before = self._files()
        result = self.service.update_node(doc_id, "/title", title, version, dry_run=dry_run)
        assert result.patch == [{"op": "replace", "path": "/title", "value": title}]
        if dry_run:
            assert result.version == version and result.report.valid
            assert self._files() == before
            return
        assert result.version == version + 1
        content = copy.deepcopy(content)
        content["title"] = title
        self.model[doc_id] = (version + 1, content)

    @rule(doc_id=documents, text=st.text(max_size=20))
    def append_chapter(self, doc_id: str, text: str) -> None:
        version, content = self.model[doc_id]
        self.chapter_numbers += 1
        new = chapter(self.chapter_numbers, text)
        result = self.service.create_node(doc_id, "/chapters/-", new, version)
        assert result.node_path == f"/chapters/{len(content['chapters'])}"
        content = copy.deepcopy(content)
        content["chapters"].append(new)
        self.model[doc_id] = (version + 1, content)

    @precondition(lambda self: any(c["chapters"] for _, c in self.model.values()))
    @rule(data=st.data())
    def delete_last_chapter(self, data: st.DataObject) -> None:
        doc_id = data.draw(st.sampled_from(sorted(d for d, (_, c) in self.model.items() if c["chapters"])))
        version, content = self.model[doc_id]
        result = self.service.delete_node(doc_id, "/chapters/-1", version)
        assert result.node == content["chapters"][-1]
        content = copy.deepcopy(content)
        content["chapters"].pop()
        self.model[doc_id] = (version + 1, content)

    # -- writes that must fail and leave no trace --------------------------------------------

    def _fails(self, code: str, call: Any) -> None:
        before = self._files()
        try:
            call()
        except SchemaDocError as error:
            assert error.code == code, error.to_dict()
        else:
            raise AssertionError(f"expected {code}")
        assert self._files() == before

    @rule(doc_id=documents, bad=st.sampled_from(["", 7, None, ["x"]]))
    def invalid_title(self, doc_id: str, bad: Any) -> None:
        version, _ = self.model[doc_id]
        self._fails("validation-failed", lambda: self.service.update_node(doc_id, "/title", bad, version))

    @rule(doc_id=documents, offset=st.sampled_from([-1, 1, 5]))
    def stale_version(self, doc_id: str, offset: int) -> None:
        version, _ = self.model[doc_id]
        if version + offset < 1:
            return
        self._fails("version-conflict",
                    lambda: self.service.update_node(doc_id, "/title", "stale", version + offset))

    @rule(doc_id=documents)
    def create_on_existing_member(self, doc_id: str) -> None:
        version, _ = self.model[doc_id]
        self._fails("conflict", lambda: self.service.create_node(doc_id, "/title", "again", version))

    @rule(doc_id=documents)
    def invalid_dry_run_fails_like_the_write(self, doc_id: str) -> None:
        version, _ = self.model[doc_id]
        before = self._files()
        with pytest.raises(SchemaDocError) as caught:
            self.service.create_node(doc_id, "/chapters/-", {"id": "bad id"}, version, dry_run=True)
        details = caught.value.details
        assert caught.value.code == "validation-failed" and details["dry_run"] is True
        assert {v["code"] for v in details["violations"]} >= {"pattern-failed", "required-missing"}
        assert details["patch"][0]["op"] == "add"
        assert self._files() == before

    @rule(doc_id=documents)
    def patch_that_fails_halfway(self, doc_id: str) -> None:
        version, _ = self.model[doc_id]
        self._fails("patch-test-failed", lambda: self.service.apply_patch(doc_id, [
            {"op": "replace", "path": "/title", "value": "half"},
            {"op": "test", "path": "/title", "value": "not half"},
        ], version))

    @rule()
    def restart(self) -> None:  # without closing: lagging snapshots stay behind, as after a crash
        self.service.snapshots.stop()
        self.service = self._new_service()

    @rule()
    def clean_restart(self) -> None:
        self.service.close()
        for doc_id in self.model:
            assert self.service.store.read_meta(doc_id).snapshot_version == self.model[doc_id][0]
        self.service = self._new_service()

    # -- invariants -------------------------------------------------------------------------

    @invariant()
    def memory_disk_and_journal_agree_with_the_model(self) -> None:
        restarted = FileDocumentStore(self.root)
        for doc_id, (version, expected) in self.model.items():
            content, meta = self.service.read_document(doc_id)
            assert meta.version == version
            assert content == expected
            lines = (self.root / f"{doc_id}.journal.jsonl").read_bytes().splitlines()
            entries = [JournalEntry.from_line(line) for line in lines]
            assert [e.version for e in entries] == list(range(1, version + 1))
            replayed: list[Any] = []
            for entry in entries:
                replayed.append(jsonpatch.apply_patch(replayed[-1] if replayed else {}, entry.patch))
            assert replayed[-1] == expected
            with self.service.store.write_lock(doc_id):  # a background snapshot switches under the lock
                snapshot = orjson.loads((self.root / f"{doc_id}.json").read_bytes())
                meta_file = orjson.loads((self.root / f"{doc_id}.meta.json").read_bytes())
            # on disk = the snapshot (a checkpoint of the journal) + the journal after it
            assert meta_file["version"] == meta_file["snapshot_version"] <= version
            assert snapshot == replayed[meta_file["snapshot_version"] - 1]
            if self.policy.mode == "every-write":
                assert meta_file["version"] == version
            stored = restarted.load(doc_id)
            assert stored.meta.version == version
            assert replay(stored.entries, start=orjson.loads(stored.content),
                          start_version=stored.meta.snapshot_version) == expected


EngineMachine.TestCase.settings = settings(
    max_examples=25, stateful_step_count=20, deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestEngine = EngineMachine.TestCase


class LazyEngineMachine(EngineMachine):
    """The same engine with snapshots written in the background, after a few versions."""

    policy = SnapshotPolicy(mode="lazy", inline_below_bytes=0, lag_versions=3, interval_seconds=3600)


LazyEngineMachine.TestCase.settings = EngineMachine.TestCase.settings
TestLazyEngine = LazyEngineMachine.TestCase
