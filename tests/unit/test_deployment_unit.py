"""The systemd unit of docs/deployment.md: systemd accepts it, rates its hardening, and gives the stop more time than
the server's grace."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

DEPLOYMENT = Path(__file__).resolve().parents[2] / "docs" / "deployment.md"


def the_unit() -> str:
    text = DEPLOYMENT.read_text()
    found = re.search(r"```ini\n(# /etc/systemd/system/schemadoc.service\n.*?)```", text, re.S)
    assert found is not None, "docs/deployment.md has no systemd unit"
    return found.group(1)


def setting(unit: str, name: str) -> str:
    found = re.search(rf"^{name}=(.*)$", unit, re.M)
    assert found is not None, name
    return found.group(1)


def test_the_stop_timeout_is_longer_than_the_grace() -> None:
    unit = the_unit()
    grace = int(setting(unit, "Environment").removeprefix("SHUTDOWN_GRACE_SECONDS="))
    assert int(setting(unit, "TimeoutStopSec")) > grace + 2
    assert setting(unit, "KillSignal") == "SIGTERM"
    # exit codes of starts that cannot succeed are not restarted (cli_common: 2 usage, 3 schema, 4 storage)
    assert setting(unit, "RestartPreventExitStatus").split() == ["2", "3", "4"]


@pytest.fixture
def unit_file(tmp_path: Path) -> Path:
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not installed")
    program = Path(sys.executable).parent / "schemadoc"
    if not program.exists():
        pytest.skip(f"no schemadoc command beside {sys.executable}")
    path = tmp_path / "schemadoc.service"
    # the unit as documented, its command at this installation's schemadoc (verify checks it is executable)
    path.write_text(the_unit().replace("/opt/schemadoc/venv/bin/schemadoc", str(program)))
    return path


def test_systemd_accepts_the_unit(unit_file: Path) -> None:
    done = subprocess.run(["systemd-analyze", "verify", str(unit_file)], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip() == ""


def test_the_unit_is_hardened(unit_file: Path) -> None:
    done = subprocess.run(["systemd-analyze", "security", "--offline=yes", str(unit_file)], capture_output=True,
                          text=True, timeout=60, check=False)
    found = re.search(r"Overall exposure level for \S+: ([0-9.]+)", done.stdout)
    if found is None:
        pytest.skip(f"this systemd-analyze cannot rate a unit offline: {done.stderr.strip()[:200]}")
    assert float(found.group(1)) <= 2.5, done.stdout[-2000:]
