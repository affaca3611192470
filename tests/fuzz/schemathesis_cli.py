"""``make fuzz``: the schemathesis command line against a real ``schemadoc serve`` process.

Starts a server on a free loopback port with a fresh storage directory, runs
``schemathesis run http://127.0.0.1:PORT/openapi.json --checks all`` (every phase, stateful links
included, with ``schemathesis.toml``) plus the arguments given to this script, stops the server and
exits with schemathesis' status. Example: ``python tests/fuzz/schemathesis_cli.py --max-examples 40``.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))

from e2e.http_server import Server  # noqa: E402


def main(arguments: list[str]) -> int:
    with tempfile.TemporaryDirectory(prefix="schemadoc-fuzz-") as scratch:
        server = Server(Path(scratch) / "data", Path(scratch) / "logs")
        try:
            command = [str(Path(sys.executable).with_name("schemathesis")), "run", f"{server.url}/openapi.json",
                       "--checks", "all", *arguments]
            print("$", " ".join(command), flush=True)
            return subprocess.call(command, cwd=ROOT)
        finally:
            server.stop()
            if "internal-error" in server.stderr or "Traceback" in server.stderr:
                print("the server logged an unexpected error:\n" + server.stderr[-5000:], file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
