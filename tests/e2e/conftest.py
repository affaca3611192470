"""No token ever reaches a server's log: after every test here, every token secret of every tokens file a test
has written (under pytest's temporary directories) is looked for in every server log kept there (the
``stderr-*``/``stdout-*`` files of :class:`http_server.Server`, and ``*.log``), and the test fails if one
appears; once more when the session ends, after the last server stopped. A test that starts a server with
tokens is covered by writing its tokens file and its log where its other temporary files go.

A token given in its file only as a SHA-256 digest has no secret to look for: the test that sends it checks.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

_MAX_TOKENS_FILE_BYTES = 64 * 1024
_LOG_PATTERNS = ("stderr-*.txt", "stdout-*.txt", "*.log")


class _Leaks:
    """What this process's tests have written so far: the secrets seen, the logs read (by their signature)."""

    def __init__(self) -> None:
        self.secrets: set[str] = set()
        self.files_seen: dict[Path, tuple[int, int]] = {}
        self.logs_read: dict[Path, tuple[int, int]] = {}
        self.reported: set[Path] = set()

    def _changed(self, path: Path, seen: dict[Path, tuple[int, int]]) -> bool:
        try:
            status = path.stat()
        except OSError:
            return False
        signature = (status.st_mtime_ns, status.st_size)
        if seen.get(path) == signature:
            return False
        seen[path] = signature
        return True

    def collect_secrets(self, base: Path) -> None:
        """The ``token`` of every entry of every tokens file under ``base`` (a JSON object whose ``tokens`` list
        holds objects with a ``name`` and an ``access``)."""
        for path in base.rglob("*.json"):
            if not self._changed(path, self.files_seen) or self.files_seen[path][1] > _MAX_TOKENS_FILE_BYTES:
                continue
            try:
                data = path.read_bytes()
                entries = json.loads(data).get("tokens") if b'"tokens"' in data else None
            except (OSError, ValueError, AttributeError):
                continue
            for entry in entries if isinstance(entries, list) else ():
                if isinstance(entry, dict) and {"name", "access"} <= entry.keys() and isinstance(entry.get("token"),
                                                                                                   str):
                    self.secrets.add(entry["token"])

    def leaks(self, base: Path) -> list[str]:
        """Each log under ``base`` that holds a secret (once per log), with the secret's name in the tokens file."""
        found = []
        if not self.secrets:
            return found
        for pattern in _LOG_PATTERNS:
            for path in base.rglob(pattern):
                if path in self.reported or not self._changed(path, self.logs_read):
                    continue
                text = path.read_text(errors="replace")
                shown = [secret for secret in self.secrets if secret in text]
                if shown:
                    self.reported.add(path)
                    found.append(f"{path.name} shows the token {shown[0][:4]}… ({len(shown)} token(s))")
        return found


_LEAKS = _Leaks()


@pytest.fixture(scope="session", autouse=True)
def _no_token_in_any_log_at_the_end(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    yield
    base = tmp_path_factory.getbasetemp()
    _LEAKS.collect_secrets(base)
    leaks = _LEAKS.leaks(base)
    assert not leaks, "a token secret was logged: " + "; ".join(leaks)


@pytest.fixture(autouse=True)
def _no_token_in_any_log(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    base = tmp_path_factory.getbasetemp()
    _LEAKS.collect_secrets(base)  # before the test too: it may rewrite a tokens file (a revoked token)
    yield
    _LEAKS.collect_secrets(base)
    leaks = _LEAKS.leaks(base)
    assert not leaks, "a token secret was logged: " + "; ".join(leaks)
