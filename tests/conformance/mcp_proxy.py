"""A black-box MCP stdio server: ``python mcp_proxy.py VARIANT -- COMMAND...`` forwards to ``COMMAND`` (a real
schemadoc serving MCP on stdio) and changes one behaviour on the wire, as another implementation of the spec
might: legal variants (``spec-only``, ``core-tools-only``, ``lower-case-ids``) that the suite must pass, and
broken ones it must catch (``blackbox.py`` lists them all).

It relays newline-delimited JSON-RPC both ways and only looks at ``tools/list``, ``tools/call``,
``resources/list`` and ``resources/read``; the server behind it never knows.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from blackbox import MCP_VARIANTS, McpVariant


class Relay:
    def __init__(self, variant: McpVariant, argv: list[str]) -> None:
        self.variant = variant
        self.child = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.out_lock = threading.Lock()
        self.pending: dict[Any, dict[str, Any]] = {}
        self.pending_lock = threading.Lock()
        self.modern = False

    def to_client(self, message: dict[str, Any]) -> None:
        data = json.dumps(message, ensure_ascii=False) + "\n"
        with self.out_lock:
            sys.stdout.write(data)
            sys.stdout.flush()

    def to_server(self, message: dict[str, Any]) -> None:
        assert self.child.stdin is not None
        self.child.stdin.write((json.dumps(message, ensure_ascii=False) + "\n").encode())
        self.child.stdin.flush()

    def from_client(self) -> None:
        for line in sys.stdin.buffer:
            if not line.strip():
                continue
            message = json.loads(line)
            if "method" in message and "id" in message:
                meta = (message.get("params") or {}).get("_meta") or {}
                self.modern = self.modern or message["method"] == "server/discover" or any(
                    key.endswith("/protocolVersion") for key in meta)
                answer = self.variant.request(message)
                if answer is not None:
                    if self.modern and isinstance(answer.get("result"), dict):
                        answer["result"].setdefault("resultType", "complete")
                    self.to_client({"jsonrpc": "2.0", "id": message["id"], **answer})
                    continue
                with self.pending_lock:
                    self.pending[message["id"]] = message
            self.to_server(message)
        assert self.child.stdin is not None
        self.child.stdin.close()

    def from_server(self) -> None:
        assert self.child.stdout is not None
        for line in self.child.stdout:
            if not line.strip():
                continue
            message = json.loads(line)
            if "method" not in message and "id" in message:
                with self.pending_lock:
                    request = self.pending.pop(message["id"], None)
                if request is not None:
                    message = self.variant.response(request, message)
            self.to_client(message)


def main(argv: list[str]) -> int:
    name, separator, *command = argv
    assert separator == "--", "usage: mcp_proxy.py VARIANT -- COMMAND..."
    relay = Relay(MCP_VARIANTS[name](), command)
    reader = threading.Thread(target=relay.from_server, daemon=True)
    reader.start()
    relay.from_client()
    relay.child.wait()
    reader.join(5)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
