"""A scripted agent that uses only what the tools return: document_next_incomplete and the calls the server
suggests, sent exactly as given (in order). With ``write_real`` it also writes its own content where the server
lists a value it made up (reason ``placeholder``), the way an agent fills in what it was told is a stand-in.

The oracle does not ask the server which values are placeholders: a value is made up when it equals what the
server's example builder makes for that place (:func:`schemadoc.reading.examples.made_up`), and the agent's own
values are chosen never to equal one (strings start with "Real", numbers sit 3 above their minimum).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from schemadoc.reading.examples import made_up_leaves
from schemadoc.schema import LoadedSchema

Send = Callable[[str, dict[str, Any]], Awaitable[tuple[bool, dict[str, Any]]]]
"""One tool call by name: (succeeded, its result or its error object)."""

_PATTERNS = {"^ch-[0-9]+$": "ch-{n}", "^[0-9]{13}$": "9780306406157", "^[a-z]{2}(-[A-Z]{2})?$": "fr",
             "^[A-Z]{2,4}[0-9]{3}$": "PHY101", "^[0-9]{6,}$": "5551234"}
_FORMATS = {"email": "ada@lovelace.test", "uri": "https://lovelace.test/", "date-time": "2024-06-01T09:30:00Z",
            "date": "2024-06-01"}


def real_value(schema: dict[str, Any], n: int) -> Any:
    """Content the agent writes itself where a placeholder stands: never a value the server makes up."""
    for combinator in ("oneOf", "anyOf"):
        if isinstance(schema.get(combinator), list):
            return real_value(schema[combinator][0], n)
    kind = schema.get("type")
    if kind in ("integer", "number"):
        low = schema.get("minimum", 0)
        high = schema.get("maximum")
        return low + 3 if high is None or low + 3 <= high else high
    if kind == "boolean":
        return True
    pattern, fmt = schema.get("pattern"), schema.get("format")
    if isinstance(pattern, str):
        return _PATTERNS[pattern].format(n=n + 100)
    if isinstance(fmt, str):
        return _FORMATS[fmt]
    text = f"Real text {n}"
    return text.ljust(schema.get("minLength", 0), ".")[:schema.get("maxLength", 10_000)]


def made_up_values(document: Any, schema: LoadedSchema) -> list[str]:
    """The pointers of the values in ``document`` that equal what the server makes up there (the oracle)."""
    def at(tokens: Any) -> dict[str, Any] | None:
        try:
            return schema.shared_node_schema([str(t) for t in tokens])
        except Exception:
            return None
    return made_up_leaves(document, [], at)


@dataclass
class Outcome:
    complete: bool = False
    rounds: int = 0
    sent: int = 0
    """Calls sent as the server gave them."""
    written: int = 0
    """Values the agent wrote itself (write_real)."""
    placeholders_listed: int = 0
    reasons: set[str] = field(default_factory=set)
    last: dict[str, Any] = field(default_factory=dict)


async def suggested(send: Send, tool: str, arguments: dict[str, Any], outcome: Outcome) -> dict[str, Any]:
    """Send a call as given; on a refusal, its suggested call as given (once more, as given, if that is refused
    again). The result of the call that succeeded."""
    for _ in range(4):
        ok, body = await send(tool, arguments)
        outcome.sent += 1
        if ok:
            return body
        call = body.get("details", {}).get("suggested_call")
        assert call is not None and "arguments" in call and "omitted" not in call, body
        tool, arguments = call["tool"], call["arguments"]
        if tool == "document_read_node":  # a version conflict where re-sending was not safe: read, then resend
            raise AssertionError(f"an in-order example call went stale: {body}")
    raise AssertionError(f"no suggested call succeeded: {tool} {arguments}")


async def build(send: Send, doc_id: str, *, schema: LoadedSchema, write_real: bool, rounds: int) -> Outcome:
    """Rounds of next_incomplete: every example call sent in order as given, then (``write_real``) real content
    where placeholders stand. Asserts at every round that ``complete`` never comes with a made-up value left."""
    outcome = Outcome()
    for outcome.rounds in range(1, rounds + 1):
        ok, found = await send("document_next_incomplete", {"doc_id": doc_id, "limit": 10})
        assert ok, found
        outcome.last = found
        ok, read = await send("document_read_node", {"doc_id": doc_id, "node_path": "/"})
        assert ok and read["version"] == found["version"], read
        left = made_up_values(read["node_content"], schema)
        if found["complete"]:
            assert not left, f"complete with made-up values at {left}"
            assert "Example text" not in str(read["node_content"])
            outcome.complete = True
            return outcome
        version = found["version"]
        progressed = False
        for item in found["items"]:
            outcome.reasons.add(item["reason"])
            call = item["example_call"]
            if call is not None:
                assert call["arguments"]["version"] == version, "example calls follow each other"
                version = (await suggested(send, call["tool"], call["arguments"], outcome))["version"]
                progressed = True
        placeholders = [item for item in found["items"] if item["reason"] == "placeholder"]
        outcome.placeholders_listed += len(placeholders)
        if write_real:
            for item in placeholders:
                assert item["pointer"] in left, f"{item['pointer']} listed, but it holds no made-up value"
                ok, body = await send("document_update_node", {
                    "doc_id": doc_id, "node_path": item["pointer"], "version": version,
                    "node_data": real_value(item["node_schema"], outcome.written)})
                assert ok, body
                version = body["version"]
                outcome.written += 1
                progressed = True
        if not progressed:  # nothing the agent may send: the made-up values are listed, and the document is not done
            assert placeholders and left
            return outcome
    return outcome
