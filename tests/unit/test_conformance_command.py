"""``schemadoc-conformance`` without its extra says how to install it and exits 2; with it, it runs the suite's
command line."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from schemadoc import conformance_command


def test_without_the_extra_it_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: Any) -> Any:
        return None if name in ("pytest", "hypothesis") else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert conformance_command.main(["--url", "http://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err
    assert "needs pytest, hypothesis" in err and "pip install 'schemadoc[conformance]'" in err


def test_with_the_extra_it_is_the_suites_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert conformance_command.missing_modules() == []
    assert conformance_command.main(["--list-clauses"]) == 0
    assert "US" in capsys.readouterr().out
