"""Random sequences of edits through a door, checked against a local model of the document.

Valid edits, invalid edits, stale-version writes and dry runs, in any order. After every step:
the version is the model's (+1 per successful write, unchanged otherwise), and the document
read back through the door equals the model, so a failed or dry-run write left no trace.

The door is async and Hypothesis's state machines are sync: the door lives in a blocking
portal (an event loop in a helper thread) for the whole test, and every call goes through it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from anyio.from_thread import BlockingPortal, start_blocking_portal
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule, run_state_machine_as_test

from .doors import TARGET, Door, Outcome, chapter, offers, open_door, sample_book, supports

STYLES = ["normal", "quote", "code", "aside", "epigraph"]
titles = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=20)

# an invalid edit: (node_path, node_data, the path of the violation it must report)
INVALID_EDITS: list[tuple[str, Any, str]] = [
    ("/title", "", "/title"),
    ("/metadata/edition", 0, "/metadata/edition"),
    ("/metadata/status", "lost", "/metadata/status"),
    ("/tags", ["twice", "twice"], "/tags"),
    ("/chapters/0/id", "chapter-1", "/chapters/0/id"),
    ("/chapters/0/sections", [], "/chapters/0/sections"),
]


def _machine(portal: BlockingPortal, door: Door) -> type[RuleBasedStateMachine]:
    def call(tool: str, args: dict[str, Any]) -> Outcome:
        outcome: Outcome = portal.call(door.call, tool, args)
        return outcome

    # dry runs only where the server offers them (an extension): each write tool asked once, here
    dry_runs = all(portal.call(supports, door, tool, "dry_run")
                   for tool in ("document_update_node", "document_create_node", "document_delete_node"))
    dry = st.booleans() if dry_runs else st.just(False)

    class DocumentMachine(RuleBasedStateMachine):
        def __init__(self) -> None:
            super().__init__()
            created = call("document_create", {})
            assert created.ok, created
            self.doc_id: str = created.body["doc_id"]
            self.version: int = 1
            self.model: Any = sample_book()
            self.next_chapter = 10
            self.write("document_update_node", node_path="/", node_data=self.model, expect_ok=True)

        def write(self, tool: str, *, expect_ok: bool | None = None, version: int | None = None,
                  **args: Any) -> Outcome:
            if not args.get("dry_run", True):
                del args["dry_run"]  # asked only of servers that offer dry runs
            outcome = call(tool, {"doc_id": self.doc_id, "version": self.version if version is None else version,
                                  **args})
            if expect_ok is not None:
                assert outcome.ok is expect_ok, outcome
            if outcome.ok:
                if args.get("dry_run"):
                    assert outcome.body["version"] == self.version, outcome
                else:
                    assert outcome.body["version"] == self.version + 1, outcome
                    self.version += 1
            return outcome

        @rule(title=titles, dry_run=dry)
        def update_title(self, title: str, dry_run: bool) -> None:
            outcome = self.write("document_update_node", node_path="/title", node_data=title, dry_run=dry_run,
                                 expect_ok=True)
            if offers(outcome.body, "patch"):
                assert outcome.body["patch"] == [{"op": "replace", "path": "/title", "value": title}]
            if not dry_run:
                self.model["title"] = title

        @rule(dry_run=dry)
        def append_chapter(self, dry_run: bool) -> None:
            new = chapter(self.next_chapter)
            outcome = self.write("document_create_node", node_path="/chapters/-", node_data=new, dry_run=dry_run,
                                 expect_ok=True)
            assert outcome.body["created_node_path"] == f"/chapters/{len(self.model['chapters'])}"
            if not dry_run:
                self.model["chapters"].append(new)
                self.next_chapter += 1

        @rule(index=st.integers(min_value=-4, max_value=4), dry_run=dry)
        def delete_chapter(self, index: int, dry_run: bool) -> None:
            chapters = self.model["chapters"]
            exists = -len(chapters) <= index < len(chapters)
            outcome = self.write("document_delete_node", node_path=f"/chapters/{index}", dry_run=dry_run)
            if not exists:
                assert outcome.code == "path-not-found", outcome
                return
            assert outcome.ok, outcome
            assert outcome.body["deleted_node"] == chapters[index]
            if not dry_run:
                del chapters[index]

        @rule(which=st.integers(min_value=0, max_value=5), text=titles, style=st.sampled_from([*STYLES, "shouty"]))
        def update_paragraph(self, which: int, text: str, style: str) -> None:
            node_path = f"/chapters/{which}/sections/0/paragraphs/0"
            paragraph = {"text": text, "style": style}
            outcome = self.write("document_update_node", node_path=node_path, node_data=paragraph)
            if which >= len(self.model["chapters"]):
                assert outcome.code == "path-not-found", outcome
                if offers(outcome.details, "array_length"):
                    assert outcome.details["array_length"] == len(self.model["chapters"])
            elif style not in STYLES:
                assert outcome.code == "validation-failed", outcome
                assert [v["code"] for v in outcome.details["violations"]] == ["enum-mismatch"]
            else:
                assert outcome.ok, outcome
                self.model["chapters"][which]["sections"][0]["paragraphs"][0] = paragraph

        @rule(edit=st.sampled_from(INVALID_EDITS), dry_run=dry)
        def invalid_edit(self, edit: tuple[str, Any, str], dry_run: bool) -> None:
            node_path, node_data, violation_path = edit
            outcome = self.write("document_update_node", node_path=node_path, node_data=node_data, dry_run=dry_run)
            if node_path.startswith("/chapters/0") and not self.model["chapters"]:
                assert outcome.code == "path-not-found", outcome
                return
            assert outcome.code == "validation-failed", outcome  # a dry run fails like its write
            assert outcome.details.get("dry_run", False) is dry_run, outcome
            violations = outcome.details["violations"]
            assert violation_path in [v["path"] for v in violations]

        @rule(offset=st.sampled_from([-3, -1, 1, 7]), dry_run=dry)
        def stale_write(self, offset: int, dry_run: bool) -> None:
            version = self.version + offset
            outcome = self.write("document_update_node", node_path="/title", node_data="Stale", dry_run=dry_run,
                                 version=version)
            if version < 1:  # no version at all: schemadoc says invalid-request; the spec names no code
                assert not outcome.ok and (outcome.rpc_error == -32602 or 400 <= outcome.status < 500), outcome
                assert outcome.code in (None, "invalid-request", "version-conflict") or TARGET.spec_only, outcome
            else:
                assert outcome.code == "version-conflict", outcome
                assert outcome.details["actual_version"] == self.version

        @invariant()
        def the_document_is_the_model_at_the_expected_version(self) -> None:
            outcome = call("document_read_node", {"doc_id": self.doc_id, "node_path": "/"})
            assert outcome.ok, outcome
            assert outcome.body["version"] == self.version
            assert outcome.body["node_content"] == self.model

    return DocumentMachine


def test_random_edits_keep_versions_and_content_consistent(door_name: str, tmp_path: Path) -> None:
    with start_blocking_portal(backend="asyncio") as portal, \
            portal.wrap_async_context_manager(open_door(door_name, tmp_path / "data")) as door:
        machine = _machine(portal, door)
        run_state_machine_as_test(machine, settings=settings(
            max_examples=TARGET.examples(15), stateful_step_count=15, deadline=None, derandomize=False,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]))

