"""The one walk of a written argument (ops/limits.py ``scan_argument``): what it finds, and that a write
through either door walks its value once, not once per limit."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from hypothesis import given, settings
from hypothesis import strategies as st
from mcp import Client

from schemadoc.config import Settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.app import build_app, create_service
from schemadoc.interfaces.mcp_door.server import build_mcp_server
from schemadoc.ops import apply as apply_module
from schemadoc.ops import limits as limits_module
from schemadoc.ops.apply import check_written_depth
from schemadoc.ops.limits import scan_argument

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"

TEXT = st.text(alphabet=st.sampled_from(["a", "é", "😀", "~", "/", "\ud800", "\udfff"]), max_size=9)
JSON = st.recursive(st.none() | st.booleans() | st.integers(min_value=-(2**70), max_value=2**70) | TEXT,
                    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
                    max_leaves=30)


def depth_of(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + max(map(depth_of, value.values()), default=0)
    if isinstance(value, list):
        return 1 + max(map(depth_of, value), default=0)
    return 0


def texts_of(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, child in value.items():
            yield key
            yield from texts_of(child)
    elif isinstance(value, list):
        for child in value:
            yield from texts_of(child)


def has_surrogate(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


@settings(max_examples=300, deadline=None)
@given(JSON, st.integers(min_value=0, max_value=10), st.integers(min_value=0, max_value=6),
       st.integers(min_value=0, max_value=6))
def test_the_scan_finds_what_a_walk_per_limit_would(value: Any, max_string_length: int, max_json_depth: int,
                                                    door_depth: int) -> None:
    depth = depth_of(value)
    too_long = any(len(text) > max_string_length for text in texts_of(value))
    surrogate = any(map(has_surrogate, texts_of(value)))
    try:
        text: bytes | None = orjson.dumps({"node_data": value})  # as a REST body carries it
    except TypeError:
        text = None
    for given_text in ([None, text] if text is not None else [None]):
        scan = scan_argument(value, max_json_depth=max_json_depth, max_string_length=max_string_length,
                             surrogates=given_text is None, text=given_text)
        assert scan.value is value
        assert scan.too_long == too_long
        assert scan.surrogate == (surrogate if given_text is None else None)
        assert scan.depth == depth if scan.depth_exact else depth <= scan.depth <= max_json_depth
        assert scan.deeper_than(door_depth) == (depth > door_depth)
        if depth > door_depth:
            with pytest.raises(SchemaDocError) as caught:
                scan.check_depth(door_depth, "node_data")
            assert (caught.value.code, caught.value.details) == (
                "request-too-deep", {"argument": "node_data", "max_json_depth": door_depth})


@pytest.mark.parametrize(("known_depth", "exact", "refused"), [
    (2, True, False), (3, True, True), (2, False, False), (9, False, False), (None, False, False)])
def test_a_written_depth_already_measured_is_not_walked_again(
        known_depth: int | None, exact: bool, refused: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A bound within the room needs no walk; an exact depth over it is refused as the walk would refuse
    it; a bound over the room is checked by walking (the value is 2 deep, the room 2: it fits)."""
    walks: list[Any] = []
    walk = apply_module.deeper_than
    monkeypatch.setattr(apply_module, "deeper_than", lambda node, room: walks.append(node) or walk(node, room))
    value = {"b": [1]}
    document = {"a": value}
    patch = [{"op": "add", "path": "/a", "value": value}]
    known = {} if known_depth is None else {id(value): (known_depth, exact)}
    if refused:  # an exact depth of 3 is a lie here: the refusal shows it was believed, not walked
        with pytest.raises(SchemaDocError) as caught:
            check_written_depth(document, patch, 3, known=known)
        assert caught.value.details == {"path": "/a", "max_json_depth": 3}
    else:
        check_written_depth(document, patch, 3, known=known)
    assert len(walks) == (1 if known_depth is None or (known_depth > 2 and not exact) else 0)


CHAPTER = {"id": "ch-1", "title": "One " * 10, "sections": [{"title": "S", "paragraphs": []}]}


@pytest.fixture
def walks(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many times a write walks a value: the scan's walk, the written-depth walk."""
    counts = {"scan": 0, "written depth": 0}
    scan_walk, depth_walk = limits_module._walk, apply_module.deeper_than

    def counted_scan(*args: Any) -> Any:
        counts["scan"] += 1
        return scan_walk(*args)

    def counted_depth(*args: Any) -> Any:
        counts["written depth"] += 1
        return depth_walk(*args)

    monkeypatch.setattr(limits_module, "_walk", counted_scan)
    monkeypatch.setattr(apply_module, "deeper_than", counted_depth)
    return counts


@pytest.fixture
def app_settings(tmp_path: Path) -> Settings:
    # a string limit below the size of the bodies below, so no cheap exit spares the walk
    return Settings(schema_path=BOOK_SCHEMA, storage_dir=tmp_path, max_string_length=64)


WRITES: list[tuple[str, str, str, Callable[[int], Any]]] = [
    # method, path, tool, body for a version
    ("PUT", "/documents/{}?path=/chapters", "document_update_node",
     lambda version: {"node_path": "/chapters", "node_data": [CHAPTER, CHAPTER], "version": version}),
    ("POST", "/documents/{}/nodes?path=/chapters/-", "document_create_node",
     lambda version: {"node_path": "/chapters/-", "node_data": CHAPTER, "version": version}),
    ("POST", "/documents/{}/patch", "document_apply_patch",
     lambda version: {"patch": [{"op": "add", "path": "/chapters/0", "value": CHAPTER}], "version": version}),
]


def test_a_rest_write_walks_its_value_once(app_settings: Settings, walks: dict[str, int]) -> None:
    with TestClient(build_app(create_service(app_settings), app_settings), base_url="http://127.0.0.1") as client:
        created = client.post("/api/v1/documents").json()
        doc_id, version = created["doc_id"], created["version"]
        for method, path, _, body in WRITES:
            walks.update({"scan": 0, "written depth": 0})
            arguments = {key: value for key, value in body(version).items() if key != "node_path"}
            response = client.request(method, "/api/v1" + path.format(doc_id), content=orjson.dumps(arguments),
                                      headers={"content-type": "application/json"})
            assert response.status_code in (200, 201), response.text
            version = response.json()["version"]
            assert walks == {"scan": 1, "written depth": 0}, path


@pytest.mark.anyio
async def test_an_mcp_write_walks_its_value_once(app_settings: Settings, walks: dict[str, int]) -> None:
    service = create_service(app_settings)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            async with Client(build_mcp_server(service)) as client:
                created = (await client.call_tool("document_create", {})).structured_content
                assert created is not None
                doc_id, version = created["doc_id"], created["version"]
                for _, _, tool, body in WRITES:
                    walks.update({"scan": 0, "written depth": 0})
                    result = await client.call_tool(tool, {"doc_id": doc_id, **body(version)})
                    assert not result.is_error and result.structured_content is not None, result
                    version = result.structured_content["version"]
                    assert walks == {"scan": 1, "written depth": 0}, tool
    finally:
        service.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
