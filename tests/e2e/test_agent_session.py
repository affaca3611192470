"""docs/agent-session.md is what the server answers today: the script that wrote it runs the session again
(a real stdio server, the MCP SDK's client) and compares."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_agent_session_page_is_what_the_server_answers_now() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "docs" / "generate_agent_session.py"), "--check"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def test_the_page_shows_the_whole_session() -> None:
    page = (ROOT / "docs" / "agent-session.md").read_text(encoding="utf-8")
    order = ["`document_create`", "`document_outline`", "`document_next_incomplete`", "`document_update_node`",
             "Answer (refused: `isError`)", '"suggested_call"', "Send the suggested call", "`document_read_node`"]
    positions = [page.index(marker) for marker in order]
    assert positions == sorted(positions)
    assert page.count("refused: `isError`") == 1
