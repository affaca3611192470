"""No token ever reaches a server's log: after every test here, every token secret of every tokens file a test
has written (under pytest's temporary directories) is looked for in every server log kept there (the
``stderr-*``/``stdout-*`` files of :class:`http_server.Server`, and ``*.log``), and the test fails if one
appears; once more when the session ends, after the last server stopped. A test that starts a server with
tokens is covered by writing its tokens file and its log where its other temporary files go (in a storage
directory, a tokens file counts only when its name says ``token``). Directories are listed again only when
they change, and logs read on from where the last look stopped, so a look costs a few milliseconds.

A token given in its file only as a SHA-256 digest has no secret to look for: the test that sends it checks.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from inspector import installed_inspector

_MAX_TOKENS_FILE_BYTES = 64 * 1024
_STORAGE_MARKS = (".journal.jsonl", ".lock")  # the files that make a directory a storage directory
_OVERLAP = 1024  # a log is read again from this far before where the last reading stopped


def _is_log(name: str) -> bool:
    return name.endswith(".log") or (name.endswith(".txt") and name.startswith(("stderr-", "stdout-")))


class _Leaks:
    """What this process's tests have written so far: the secrets seen, the tokens files and logs read."""

    def __init__(self) -> None:
        self.secrets: set[str] = set()
        self.files_seen: dict[Path, tuple[int, int]] = {}
        self.logs_read: dict[Path, int] = {}  # how far each log was read
        self.reported: set[Path] = set()
        self.listings: dict[str, tuple[int, list[str], list[Path], list[Path]]] = {}

    def check(self, base: Path) -> list[str]:
        """Collect the secrets of the tokens files under ``base``, then look for them in its logs: each log that
        shows one (once per log), with the first characters of the secret."""
        files, logs = self._files(base)
        for path in files:
            self._collect(path)
        return [leak for path in logs if (leak := self._leak(path)) is not None] if self.secrets else []

    def _files(self, base: Path) -> tuple[list[Path], list[Path]]:
        """The JSON files and the logs under ``base``; a directory is listed again only when it changed."""
        found_json: list[Path] = []
        found_logs: list[Path] = []
        pending = [str(base)]
        while pending:
            directory = pending.pop()
            try:
                changed = os.stat(directory).st_mtime_ns
            except OSError:
                continue
            listing = self.listings.get(directory)
            if listing is None or listing[0] != changed:
                listing = self.listings[directory] = self._list(directory, changed)
            pending += listing[1]
            found_json += listing[2]
            found_logs += listing[3]
        return found_json, found_logs

    @staticmethod
    def _list(directory: str, changed: int) -> tuple[int, list[str], list[Path], list[Path]]:
        """A directory's subdirectories, JSON files and logs. In a storage directory (one holding a journal or a
        lock) only the JSON files named for tokens count, and its history checkpoints are not looked into."""
        listing: tuple[int, list[str], list[Path], list[Path]] = (changed, [], [], [])
        storage = False
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    storage = storage or entry.name.endswith(_STORAGE_MARKS)
                    if entry.is_dir(follow_symlinks=False):
                        listing[1].append(entry.path)
                    elif entry.name.endswith(".json"):
                        listing[2].append(Path(entry.path))
                    elif _is_log(entry.name):
                        listing[3].append(Path(entry.path))
        except OSError:
            pass
        if storage:
            listing[1][:] = [path for path in listing[1] if os.path.basename(path) != "checkpoints"]
            listing[2][:] = [path for path in listing[2] if "token" in path.name.lower()]
        return listing

    def _collect(self, path: Path) -> None:
        """The ``token`` of every entry of a tokens file (a JSON object whose ``tokens`` list holds objects with a
        ``name`` and an ``access``)."""
        try:
            status = path.stat()
        except OSError:
            return
        signature = (status.st_mtime_ns, status.st_size)
        if self.files_seen.get(path) == signature or status.st_size > _MAX_TOKENS_FILE_BYTES:
            return
        self.files_seen[path] = signature
        try:
            data = path.read_bytes()
            entries = json.loads(data).get("tokens") if b'"tokens"' in data else None
        except (OSError, ValueError, AttributeError):
            return
        for entry in entries if isinstance(entries, list) else ():
            if isinstance(entry, dict) and {"name", "access"} <= entry.keys() and isinstance(entry.get("token"), str):
                self.secrets.add(entry["token"])

    def _leak(self, path: Path) -> str | None:
        if path in self.reported:
            return None
        read = self.logs_read.get(path, 0)
        start = max(0, read - _OVERLAP)
        try:
            if path.stat().st_size == read:
                return None
            with path.open("rb") as log:
                log.seek(start)
                data = log.read()
        except OSError:
            return None
        self.logs_read[path] = start + len(data)
        text = data.decode(errors="replace")
        shown = [secret for secret in self.secrets if secret in text]
        if not shown:
            return None
        self.reported.add(path)
        return f"{path.name} shows the token {shown[0][:4]}… ({len(shown)} token(s))"


_LEAKS = _Leaks()


@pytest.fixture(scope="session", autouse=True)
def _no_token_in_any_log_at_the_end(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield
    leaks = _LEAKS.check(tmp_path_factory.getbasetemp())
    assert not leaks, "a token secret was logged: " + "; ".join(leaks)


@pytest.fixture(autouse=True)
def _no_token_in_any_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    base = tmp_path_factory.getbasetemp()
    leaks = _LEAKS.check(base)  # before the test too: it may rewrite a tokens file (a revoked token)
    yield
    leaks += _LEAKS.check(base)
    assert not leaks, "a token secret was logged: " + "; ".join(leaks)


@pytest.fixture(scope="session")
def inspector_command() -> list[str]:
    """The pinned MCP Inspector's command (``node``, its script), installed on first use (``inspector.py``);
    skipped, saying why, without node or npm or when npm cannot install it."""
    command, why = installed_inspector()
    if command is None:
        pytest.skip(why)
    return command
