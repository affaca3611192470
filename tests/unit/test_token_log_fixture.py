"""The end-to-end tests' guard against tokens in server logs (``tests/e2e/conftest.py``) fails a test whose
server logged a secret of a tokens file it wrote, and only that test."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

E2E_CONFTEST = Path(__file__).resolve().parents[1] / "e2e" / "conftest.py"

TESTS = '''
import json


def _tokens(path, secret):
    path.write_text(json.dumps({"tokens": [{"name": "ci", "token": secret, "access": "read-write"}]}))


def test_a_server_that_logs_its_token(tmp_path):
    _tokens(tmp_path / "tokens.json", "leaked-0123456789abcdef")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "stderr-8080.txt").write_text('"GET /api/v1/documents?access_token=leaked-0123456789abcdef"')


def test_a_server_that_logs_a_token_later(tmp_path):
    _tokens(tmp_path / "access.json", "late-0123456789abcdef")
    (tmp_path / "server-1.log").write_text("starting\\n")
    (tmp_path / "server-1.log").write_text("starting\\nrefused /api/v1/documents/late-0123456789abcdef\\n")


def test_a_server_that_logs_no_token(tmp_path):
    _tokens(tmp_path / "tokens.json", "kept-0123456789abcdef")
    (tmp_path / "stderr-8081.txt").write_text('"GET /api/v1/documents?access_token=[redacted]"')


def test_a_module_server_logs_cleanly_first(tmp_path_factory):
    shared = tmp_path_factory.getbasetemp() / "module-server"
    shared.mkdir()
    _tokens(shared / "tokens.json", "module-0123456789abcdef")
    (shared / "stderr-9.txt").write_text("clean\\n" * 1000)


def test_then_the_module_server_logs_its_token(tmp_path_factory):
    with (tmp_path_factory.getbasetemp() / "module-server" / "stderr-9.txt").open("a") as log:
        log.write("refused /api/v1/documents/module-0123456789abcdef: token-missing\\n")


def test_a_tokens_file_and_a_log_among_stored_documents(tmp_path):
    (tmp_path / "01ARZ3NDEKTSV4RRFFQ69G5FAV.journal.jsonl").write_text("")
    (tmp_path / "01ARZ3NDEKTSV4RRFFQ69G5FAV.json").write_text('{"tokens": [{"name": "n", "token": "x"}]}')
    _tokens(tmp_path / "tokens.json", "stored-0123456789abcdef")
    (tmp_path / "server.log").write_text("stored-0123456789abcdef")


def test_a_token_in_a_file_that_is_not_a_log(tmp_path):
    _tokens(tmp_path / "tokens.json", "elsewhere-0123456789abcdef")
    (tmp_path / "notes.txt").write_text("elsewhere-0123456789abcdef")
'''


def test_a_logged_token_fails_the_test_that_logged_it(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(E2E_CONFTEST.read_text(encoding="utf-8"))
    pytester.makepyfile(inspector=(E2E_CONFTEST.parent / "inspector.py").read_text(encoding="utf-8"))  # it imports
    pytester.makepyfile(test_servers=TESTS)
    # the logs it leaks go outside this session's temporary directories, which the guard itself looks at
    outside = Path(tempfile.mkdtemp(prefix="token-log-guard-"))
    try:
        result = pytester.runpytest_inprocess("-p", "no:randomly", "-p", "no:cacheprovider", f"--basetemp={outside}")
    finally:
        shutil.rmtree(outside, ignore_errors=True)
    result.assert_outcomes(passed=7, errors=4)
    errors = sorted(line.split("::")[1].split(" ")[0] for line in result.outlines if line.startswith("ERROR "))
    assert errors == ["test_a_server_that_logs_a_token_later", "test_a_server_that_logs_its_token",
                      "test_a_tokens_file_and_a_log_among_stored_documents",
                      "test_then_the_module_server_logs_its_token"]
    for log in ("stderr-8080.txt", "server-1.log", "stderr-9.txt", "server.log"):
        assert f"{log} shows the token" in result.stdout.str()
