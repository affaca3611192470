"""What the suite runs against: in process (our own test run), or a server reached by URL or started by a command.

The ``schemadoc-conformance`` command sets these environment variables before it runs the suite, so
``pytest`` alone can be pointed at a server the same way:

==================================== ================================================================
``SCHEMADOC_CONFORMANCE_URL``         one server: REST at ``<url>/api/v1``, MCP at ``<url>/mcp``
``SCHEMADOC_CONFORMANCE_REST_URL``    a REST base URL (the API under ``<url>/api/v1``)
``SCHEMADOC_CONFORMANCE_MCP_URL``     an MCP streamable HTTP endpoint
``SCHEMADOC_CONFORMANCE_MCP_COMMAND`` a command that serves MCP on stdio; ``{schema}`` and
                                      ``{storage_dir}`` are replaced by the schema's path and a fresh
                                      directory, so the suite can start it again on the same storage
``SCHEMADOC_CONFORMANCE_MCP_MODES``   MCP protocol eras to drive: ``auto`` (default), ``legacy`` or
                                      ``auto,legacy``
``SCHEMADOC_CONFORMANCE_THOROUGH``    ``1``: five times the property-based examples
``SCHEMADOC_CONFORMANCE_PROFILE``     ``spec``: the spec's clauses only, judged on the spec's tools,
                                      arguments, result members and codes; ``full`` (default): also
                                      schemadoc's extensions, each where the server offers it
==================================== ================================================================
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

__all__ = ["BOOK_SCHEMA", "ENV", "IN_PROCESS_DOORS", "PROFILES", "Target", "current"]

ENV = {
    "url": "SCHEMADOC_CONFORMANCE_URL",
    "rest_url": "SCHEMADOC_CONFORMANCE_REST_URL",
    "mcp_url": "SCHEMADOC_CONFORMANCE_MCP_URL",
    "mcp_command": "SCHEMADOC_CONFORMANCE_MCP_COMMAND",
    "mcp_modes": "SCHEMADOC_CONFORMANCE_MCP_MODES",
    "thorough": "SCHEMADOC_CONFORMANCE_THOROUGH",
    "profile": "SCHEMADOC_CONFORMANCE_PROFILE",
}

BOOK_SCHEMA = Path(str(resources.files("schemadoc.conformance") / "book.schema.json"))
"""The schema every server under test serves (shipped with the package)."""

IN_PROCESS_DOORS = ("rest", "mcp-auto", "mcp-legacy")
MODES = ("auto", "legacy")
PROFILES = ("spec", "full")


@dataclass(frozen=True)
class Target:
    """The server(s) under test. Nothing set: fresh in-process schemadoc servers."""

    rest_url: str = ""
    mcp_url: str = ""
    mcp_command: str = ""
    mcp_modes: tuple[str, ...] = ("auto",)
    shared: bool = False
    """True when the REST and MCP URLs are one server (``SCHEMADOC_CONFORMANCE_URL``)."""
    thorough: bool = False
    profile: str = "full"
    """``spec``: the spec's clauses, judged on what the spec says only; ``full``: schemadoc's extensions too."""

    @property
    def spec_only(self) -> bool:
        """True under ``--profile spec``: nothing beyond the spec is asked for or judged."""
        return self.profile == "spec"

    @property
    def in_process(self) -> bool:
        return not (self.rest_url or self.mcp_url or self.mcp_command)

    @property
    def door_names(self) -> list[str]:
        if self.in_process:
            return list(IN_PROCESS_DOORS)
        names = ["remote-rest"] if self.rest_url else []
        names += [f"remote-mcp-{mode}" for mode in self.mcp_modes] if self.mcp_url else []
        names += [f"stdio-mcp-{mode}" for mode in self.mcp_modes] if self.mcp_command else []
        return names

    @property
    def one_server_doors(self) -> list[str]:
        """The doors known to reach ONE server (the ``doors`` fixture): every in-process door, REST and MCP
        of one URL, or the first door otherwise (two stdio processes are two servers)."""
        if self.in_process:
            return list(IN_PROCESS_DOORS)
        if self.shared:
            return [name for name in self.door_names if name.startswith("remote-")]
        return self.door_names[:1]

    def examples(self, default: int) -> int:
        """How many property-based examples to run: ``default``, five times as many when thorough."""
        return default * 5 if self.thorough else default


def current() -> Target:
    """The target the environment describes."""
    url = os.environ.get(ENV["url"], "").rstrip("/")
    rest_url = os.environ.get(ENV["rest_url"], "").rstrip("/") or url
    mcp_url = os.environ.get(ENV["mcp_url"], "").rstrip("/") or (f"{url}/mcp" if url else "")
    modes = tuple(mode.strip() for mode in os.environ.get(ENV["mcp_modes"], "").split(",") if mode.strip())
    unknown = [mode for mode in modes if mode not in MODES]
    if unknown:
        raise ValueError(f"{ENV['mcp_modes']}: unknown MCP mode(s) {unknown}; use {', '.join(MODES)}")
    default_modes = ("auto", "legacy") if url else ("auto",)
    profile = os.environ.get(ENV["profile"], "").strip() or "full"
    if profile not in PROFILES:
        raise ValueError(f"{ENV['profile']}: unknown profile {profile!r}; use {', '.join(PROFILES)}")
    return Target(
        rest_url=rest_url, mcp_url=mcp_url, mcp_command=os.environ.get(ENV["mcp_command"], "").strip(),
        mcp_modes=modes or default_modes, shared=bool(url),
        thorough=os.environ.get(ENV["thorough"], "") not in ("", "0"), profile=profile,
    )
