"""What the README says about the program, checked against the program: the MCP tool list names every tool of the
operation catalogue (and no other), and the command-line summary names every flag of every command (as
``schemadoc COMMAND --help`` lists them), so neither can fall behind the code."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from schemadoc.operations.catalogue import CATALOGUE

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")


def section(title: str) -> str:
    """The README's text from the heading ``title`` to the next heading of the same or a higher level."""
    start = README.index(f"\n{title}\n")
    level = title.split(" ", 1)[0]
    ends = [match.start() for match in re.finditer(r"\n(#+) ", README[start + 1:])
            if len(match.group(1)) <= len(level)]
    return README[start:start + 1 + ends[0]] if ends else README[start:]


def test_the_mcp_section_names_every_tool_of_the_catalogue_and_no_other() -> None:
    text = section("## MCP")
    text = text[:text.index("\n### ")]  # the tools and resources, not the client snippets
    named = set(re.findall(r"`((?:document|schema)_[a-z_]+)`", text))
    assert named == {operation.name for operation in CATALOGUE}


def _help(command: str) -> str:
    done = subprocess.run([sys.executable, "-m", "schemadoc", command, "--help"], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return done.stdout


def _summary() -> dict[str, str]:
    """Each command's lines in the README's command-line summary (a line starting ``schemadoc COMMAND`` and the
    indented lines after it)."""
    text = section("## The command line")
    block = text[text.index("```\n") + 4:]
    block = block[:block.index("```")]
    lines: dict[str, str] = {}
    command = ""
    for line in block.splitlines():
        if line.startswith("schemadoc "):
            command = line.split()[1]
        lines[command] = lines.get(command, "") + line.split("  #")[0] + "\n"
    return lines


COMMANDS = ("serve", "validate", "check", "migrate-documents", "replay", "migrate", "export", "import")


def test_the_summary_lists_every_command() -> None:
    listed = set(_summary()) - {"--version"}
    assert listed == set(COMMANDS)


@pytest.mark.parametrize("command", COMMANDS)
def test_the_command_line_summary_names_every_flag(command: str) -> None:
    flags = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]+)", _help(command))) - {"--help"}
    summary = _summary()[command]
    assert sorted(flag for flag in flags if flag not in summary) == []
