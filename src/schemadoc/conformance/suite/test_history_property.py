"""Hypothesis through the interface: after random edits, every version is what the journal says.

A random sequence of writes of every kind (valid or not, some dry runs, some reverts) goes
through a door. Then, for the versions it made: the diff between any two versions, applied to
the first, gives the second, in both directions; replaying the journal's patches rebuilds each
version; the change feed lists exactly the committed versions; and a revert to any version
brings back its content.

The door is async and Hypothesis is sync: the door lives in a blocking portal (an event loop in
a helper thread) for the whole test, as in ``test_state_machine.py``.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import jsonpatch
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ..readings import same_id
from .doors import TARGET, Door, Outcome, chapter, not_applicable, open_door, sample_book, unsupported

texts = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=0, max_size=12)
merges = st.fixed_dictionaries({}, optional={
    "status": st.sampled_from(["draft", "review", "published", "lost"]),
    "edition": st.one_of(st.integers(min_value=0, max_value=101), st.none()),
    "isbn": st.sampled_from([None, "9780306406157", "123"]),
    "keywords": st.one_of(st.none(), st.lists(st.sampled_from(["a", "b", "c"]), max_size=3)),
})
edits = st.one_of(
    st.tuples(st.just("title"), texts),
    st.tuples(st.just("append"), st.integers(min_value=4, max_value=99)),
    st.tuples(st.just("delete"), st.integers(min_value=-4, max_value=4)),
    st.tuples(st.just("merge"), merges),
    st.tuples(st.just("move"), st.integers(min_value=0, max_value=3)),
    st.tuples(st.just("revert"), st.integers(min_value=1, max_value=12)),
)


def _write(edit: tuple[str, Any], doc_id: str, version: int, dry_run: bool) -> tuple[str, dict[str, Any]]:
    kind, value = edit
    args: dict[str, Any] = {"doc_id": doc_id, "version": version, "dry_run": dry_run}
    if kind == "title":
        return "document_update_node", {**args, "node_path": "/title", "node_data": value}
    if kind == "append":
        return "document_create_node", {**args, "node_path": "/chapters/-", "node_data": chapter(value)}
    if kind == "delete":
        return "document_delete_node", {**args, "node_path": f"/chapters/{value}"}
    if kind == "merge":
        return "document_merge_patch", {**args, "node_path": "/metadata", "merge_patch": value}
    if kind == "move":
        return "document_apply_patch", {**args, "patch": [{"op": "move", "from": f"/chapters/{value}",
                                                           "path": "/chapters/0"}]}
    return "document_revert", {**args, "to_version": value}


def test_diffs_journal_feed_and_reverts_agree_with_every_version(door_name: str, tmp_path: Path) -> None:
    with start_blocking_portal(backend="asyncio") as portal, \
            portal.wrap_async_context_manager(open_door(door_name, tmp_path / "data")) as door:
        # asked before Hypothesis starts, and answered outside the portal (a skip inside it is an error)
        missing = portal.call(unsupported, door, ("document_update_node", "dry_run"), ("document_merge_patch",),
                              ("document_apply_patch",), ("document_revert",), ("document_history",),
                              ("document_diff",), ("document_changes",))
        if missing is None:

            def call(tool: str, args: dict[str, Any]) -> Outcome:
                outcome: Outcome = portal.call(door.call, tool, args)
                return outcome

            def ok(outcome: Outcome) -> dict[str, Any]:
                assert outcome.ok, outcome
                return outcome.body

            seen = [0]
            # the feed's cursor as far as this test has read it (a remote server's feed may be long)

            def tail() -> int:
                while True:
                    body = ok(call("document_changes", {"since": seen[0], "limit": 1000}))
                    if not body["changes"]:
                        return seen[0]
                    seen[0] = body["next_cursor"]

            @settings(max_examples=TARGET.examples(20), deadline=None, derandomize=False,
                      suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
            @given(steps=st.lists(st.tuples(edits, st.booleans()), min_size=1, max_size=7), data=st.data())
            def check(steps: list[tuple[tuple[str, Any], bool]], data: st.DataObject) -> None:
                start = tail()
                doc_id = ok(call("document_create", {}))["doc_id"]
                version = ok(call("document_update_node", {"doc_id": doc_id, "node_path": "/",
                                                           "node_data": sample_book(), "version": 1}))["version"]
                for edit, dry_run in steps:
                    outcome = call(*_write(edit, doc_id, version, dry_run))
                    if outcome.ok and not dry_run:
                        assert outcome.body["version"] == version + 1, outcome
                        version += 1
                    else:
                        assert outcome.ok or outcome.status < 500, outcome

                versions = {n: _read(portal, door, doc_id, n) for n in range(1, version + 1)}
                history = ok(call("document_history", {"doc_id": doc_id, "limit": 1000}))["entries"]
                assert [entry["version"] for entry in history] == list(versions)
                content: Any = {}
                for entry in history:
                    content = jsonpatch.apply_patch(content, entry["patch"])
                    assert content == versions[entry["version"]], f"journal replay at version {entry['version']}"

                feed = ok(call("document_changes", {"since": start, "limit": 1000}))["changes"]
                assert [(c["version"], c["op"]) for c in feed if same_id(c["doc_id"], doc_id)] == [
                    (entry["version"], entry["op"]) for entry in history], "the feed lists exactly the commits"

                pairs = data.draw(st.lists(st.tuples(st.sampled_from(list(versions)), st.sampled_from(list(versions))),
                                           min_size=1, max_size=3), label="pairs")
                for source, target in pairs:
                    for a, b in ((source, target), (target, source)):
                        diff = {"doc_id": doc_id, "from_version": a, "to_version": b}
                        patch = ok(call("document_diff", diff))["patch"]
                        assert jsonpatch.apply_patch(copy.deepcopy(versions[a]), patch) == versions[b], f"diff {a}->{b}"

                back = data.draw(st.sampled_from(list(versions)), label="revert to")
                ok(call("document_revert", {"doc_id": doc_id, "to_version": back, "version": version}))
                now = ok(call("document_read_node", {"doc_id": doc_id, "node_path": "/"}))
                assert (now["version"], now["node_content"]) == (version + 1, versions[back])

            check()

    if missing is not None:
        not_applicable(missing)


def _read(portal: Any, door: Door, doc_id: str, version: int) -> Any:
    outcome: Outcome = portal.call(door.read_version, doc_id, version)
    assert outcome.ok, outcome
    return outcome.body["document"]
