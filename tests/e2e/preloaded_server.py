"""Forks ``schemadoc serve`` processes from one that has already imported what they need.

A cold ``python -m schemadoc serve`` spends 1 to 3 s importing (FastAPI, pydantic models, the
MCP SDK) on a busy 2-core machine before it listens; a child forked from this process runs the
same entry point (``schemadoc.interfaces.cli.command.main``) from argument parsing on (its own socket,
storage recovery, snapshot thread and HTTP server) and serves after about 0.4 s. The crash test
uses it for most of its restarts.

Protocol, one JSON object per line on stdin, one answer per line on stdout:
``{"argv": [...], "env": {...}, "log": PATH}`` forks a server (stderr to PATH), answers
``{"pid": N}``; ``{"wait": N}`` reaps that child, answers ``{"pid": N, "exit": CODE}`` (a negative
code is the signal that ended it). The process stays single-threaded, so forking is safe.
"""

from __future__ import annotations

import json
import os
import sys

import httptools  # noqa: F401 - preloaded for the children
import uvicorn  # noqa: F401

import schemadoc.interfaces.app
import schemadoc.schema
import schemadoc.service
import schemadoc.snapshotter
import schemadoc.storage  # noqa: F401
from schemadoc.interfaces.cli import command as cli


def _serve(argv: list[str], env: dict[str, str], log: str) -> None:
    """In the child: standard streams away from the protocol pipes, then the command; never returns."""
    code = 70
    try:
        quiet = os.open(os.devnull, os.O_RDWR)
        os.dup2(quiet, 0)
        os.dup2(quiet, 1)
        os.dup2(os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644), 2)
        os.environ.clear()
        os.environ.update(env)
        code = cli.main(argv)
    finally:
        os._exit(code)


def main() -> None:
    for line in sys.stdin:
        request = json.loads(line)
        if "wait" in request:
            pid, status = os.waitpid(request["wait"], 0)
            answer = {"pid": pid, "exit": os.waitstatus_to_exitcode(status)}
        else:
            pid = os.fork()
            if pid == 0:
                _serve(request["argv"], request["env"], request["log"])
            answer = {"pid": pid}
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
