"""The command line: ``schemadoc`` and its subcommands (``command.py``: the parser, ``serve``, ``validate``;
``common.py``: exit codes, failure reports, logging; one module per group of subcommands)."""

from __future__ import annotations

from schemadoc.interfaces.cli.command import main

__all__ = ["main"]
