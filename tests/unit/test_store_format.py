"""The files store's format version: the marker, upgrades from an unmarked or older directory, the refusal of a
newer one, and processes opening a fresh directory at once."""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
import os
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemadoc.errors import SchemaDocError
from schemadoc.storage import store_format
from schemadoc.storage.files import FileDocumentStore
from schemadoc.storage.store_format import CURRENT_FORMAT, FORMAT_FILE


def files_of(directory: Path) -> dict[str, tuple[bytes, int]]:
    """Every file under ``directory`` with its bytes and modification time."""
    return {str(path.relative_to(directory)): (path.read_bytes(), path.stat().st_mtime_ns)
            for path in sorted(directory.rglob("*")) if path.is_file()}


def write_marker(directory: Path, version: int) -> None:
    (directory / FORMAT_FILE).write_bytes(orjson.dumps({"format": version}))


def marked(directory: Path) -> int:
    return int(orjson.loads((directory / FORMAT_FILE).read_bytes())["format"])


def test_a_fresh_directory_records_the_current_format(tmp_path: Path) -> None:
    store = FileDocumentStore(tmp_path / "data")
    store.open()
    assert marked(tmp_path / "data") == CURRENT_FORMAT
    assert store.store_format == store_format.FormatCheck(None, CURRENT_FORMAT, True)
    again = FileDocumentStore(tmp_path / "data")
    again.open()
    assert again.store_format == store_format.FormatCheck(CURRENT_FORMAT, CURRENT_FORMAT, False)
    assert [name for name in os.listdir(tmp_path / "data") if name.endswith(".tmp")] == []


def test_a_directory_without_the_marker_is_format_1_and_gets_it(tmp_path: Path) -> None:
    directory = tmp_path / "data"
    directory.mkdir()
    (directory / "something-else.txt").write_text("kept")
    FileDocumentStore(directory).open()
    assert marked(directory) == 1
    assert (directory / "something-else.txt").read_text() == "kept"


def test_a_newer_format_is_refused_and_the_directory_left_untouched(tmp_path: Path) -> None:
    directory = tmp_path / "data"
    directory.mkdir()
    write_marker(directory, CURRENT_FORMAT + 1)
    (directory / "01ARZ3NDEKTSV4RRFFQ69G5FAV.journal.jsonl").write_bytes(b'{"torn')  # recovery would cut it
    (directory / "01ARZ3NDEKTSV4RRFFQ69G5FAV.0123456789abcdef.tmp").write_bytes(b"recovery would remove it")
    before = files_of(directory)
    with pytest.raises(SchemaDocError) as raised:
        FileDocumentStore(directory).open()
    assert raised.value.code == "store-format-unsupported"
    assert raised.value.details["found_format"] == CURRENT_FORMAT + 1
    assert raised.value.details["known_format"] == CURRENT_FORMAT
    assert f"format {CURRENT_FORMAT + 1}" in raised.value.message
    assert files_of(directory) == before
    with pytest.raises(SchemaDocError) as read_only:
        store_format.check_readable(directory)
    assert read_only.value.code == "store-format-unsupported"


@pytest.mark.parametrize("body", [b"{", b"[]", b'{"format": "1"}', b'{"format": 0}', b"{}"])
def test_a_damaged_marker_is_a_read_failure_naming_the_file(tmp_path: Path, body: bytes) -> None:
    (tmp_path / FORMAT_FILE).write_bytes(body)
    with pytest.raises(SchemaDocError) as raised:
        FileDocumentStore(tmp_path).open()
    assert raised.value.code == "storage-read-failed"
    assert raised.value.details["file"] == FORMAT_FILE
    assert (tmp_path / FORMAT_FILE).read_bytes() == body


def three_formats(monkeypatch: pytest.MonkeyPatch, calls: list[int],
                  failing: int | None = None) -> None:
    """Pretend this server writes format 3, with a step from 1 and one from 2 that record their runs."""

    def step(start: int) -> Callable[[Path], None]:
        def run(directory: Path) -> None:
            calls.append(start)
            assert marked(directory) == start if (directory / FORMAT_FILE).exists() else start == 1
            if start == failing:
                raise OSError(5, "Input/output error")
            (directory / f"step-{start}").write_text("done")

        return run

    monkeypatch.setattr(store_format, "CURRENT_FORMAT", 3)
    monkeypatch.setattr(store_format, "UPGRADES", {1: step(1), 2: step(2)})


def test_an_older_store_is_upgraded_one_step_at_a_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    three_formats(monkeypatch, calls)
    found = store_format.settle(tmp_path)  # unmarked: format 1
    assert calls == [1, 2]
    assert found == store_format.FormatCheck(None, 3, True)
    assert marked(tmp_path) == 3
    assert store_format.settle(tmp_path) == store_format.FormatCheck(3, 3, False)
    assert calls == [1, 2]


def test_an_interrupted_upgrade_resumes_at_the_step_it_was_in(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    three_formats(monkeypatch, calls, failing=2)
    with pytest.raises(OSError):
        store_format.settle(tmp_path)
    assert marked(tmp_path) == 2
    three_formats(monkeypatch, calls)
    assert store_format.settle(tmp_path) == store_format.FormatCheck(2, 3, True)
    assert calls == [1, 2, 2]
    assert marked(tmp_path) == 3


def test_a_read_only_command_refuses_an_older_format_instead_of_upgrading(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    three_formats(monkeypatch, [])
    write_marker(tmp_path, 2)
    with pytest.raises(SchemaDocError) as raised:
        store_format.check_readable(tmp_path)
    assert raised.value.code == "store-format-unsupported"
    assert "schemadoc serve" in (raised.value.remediation or "")
    assert marked(tmp_path) == 2


def _open_at(directory: str, start: multiprocessing.synchronize.Event, results: multiprocessing.Queue[object]) -> None:
    start.wait()
    try:
        store = FileDocumentStore(directory)
        store.open()
        check = store.store_format
        results.put(None if check is None else (check.found, check.format))
    except BaseException as error:  # reported to the test
        results.put(repr(error))


def test_processes_opening_a_fresh_directory_at_once_agree(tmp_path: Path) -> None:
    context = multiprocessing.get_context("fork")
    for attempt in range(12):
        directory = tmp_path / f"data-{attempt}"
        start = context.Event()
        results: multiprocessing.Queue[object] = context.Queue()
        workers = [context.Process(target=_open_at, args=(str(directory), start, results)) for _ in range(3)]
        for worker in workers:
            worker.start()
        start.set()
        found = Counter(results.get(timeout=30) for _ in workers)
        for worker in workers:
            worker.join(timeout=30)
        # exactly one of them found the directory unmarked and recorded the format; the others read it
        assert found == {(None, CURRENT_FORMAT): 1, (CURRENT_FORMAT, CURRENT_FORMAT): 2}
        assert marked(directory) == CURRENT_FORMAT
        assert [name for name in os.listdir(directory) if name.endswith(".tmp")] == []


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(current=st.integers(1, 6), found=st.one_of(st.none(), st.integers(1, 8)))
def test_any_format_ends_at_the_current_one_or_is_refused_untouched(
        tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch, current: int,
        found: int | None) -> None:
    directory = tmp_path_factory.mktemp("store")
    ran: list[int] = []
    monkeypatch.setattr(store_format, "CURRENT_FORMAT", current)
    monkeypatch.setattr(store_format, "UPGRADES", {n: lambda _, n=n: ran.append(n) for n in range(1, current)})
    if found is not None:
        write_marker(directory, found)
    before = files_of(directory)
    if found is not None and found > current:
        with pytest.raises(SchemaDocError) as raised:
            store_format.settle(directory)
        assert raised.value.code == "store-format-unsupported"
        assert files_of(directory) == before
        return
    assert store_format.settle(directory) == store_format.FormatCheck(found, current, found != current)
    assert ran == list(range(found or 1, current))  # each step once, in order, from the format found
    assert marked(directory) == current
    assert [path.name for path in directory.iterdir()] == [FORMAT_FILE]
