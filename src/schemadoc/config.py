"""Settings: command-line flags > environment variables > config file > defaults.

:func:`load_settings` merges the four sources and checks every value; any problem is a
``config-invalid`` :class:`~schemadoc.errors.SchemaDocError` whose details name the setting
and where it came from, and a missing schema is ``schema-load-failed`` saying how to give one.

The config file is JSON with the settings' snake_case names as keys::

    {"schema_path": "schemas/book.schema.json", "storage_dir": "data", "port": 8080}

``storage_url`` (``--storage-url``, ``STORAGE_URL``), when set, stores documents in that
PostgreSQL database instead of files under ``storage_dir`` (which is then unused).

Relative paths in the file are relative to the file's own directory; relative paths given as
flags or environment variables are relative to the working directory. The default file,
``./config.json``, may be absent; a file named with ``--config`` or ``CONFIG_FILE`` must exist.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from schemadoc.errors import SchemaDocError

__all__ = [
    "DEFAULT_CONFIG_FILE",
    "ENVIRONMENT",
    "LOG_FORMATS",
    "LOG_LEVELS",
    "SNAPSHOT_POLICIES",
    "TRANSPORTS",
    "VALIDATION_LEVELS",
    "Settings",
    "load_settings",
    "parse_size",
    "redacted_url",
]

DEFAULT_CONFIG_FILE = "./config.json"
TRANSPORTS = ("http", "stdio")
SNAPSHOT_POLICIES = ("every-write", "lazy")
LOG_LEVELS = ("debug", "info", "warning", "error")
LOG_FORMATS = ("text", "json")
VALIDATION_LEVELS = ("moderate", "strict")


@dataclass(frozen=True)
class Settings:
    """Everything the server is configured with. Build it with :func:`load_settings`."""

    schema_path: Path | None
    storage_dir: Path = Path("./data")
    storage_url: str | None = None
    transport: str = "http"
    host: str = "127.0.0.1"
    port: int = 8080
    workers: int = 1
    """HTTP server processes sharing the listening socket (``serve --workers``; docs/deployment.md)."""
    log_level: str = "info"
    cors_origins: tuple[str, ...] = field(default_factory=tuple)
    max_body_bytes: int = 64 * 1024 * 1024
    max_json_depth: int = 128
    max_string_length: int = 1 << 20
    max_patch_operations: int = 1000
    max_subscribers_per_document: int = 100
    max_subscribers_total: int = 1000
    max_mcp_sessions: int = 1000
    mcp_session_idle_seconds: int = 1800
    max_subscribers_per_client: int = 100
    """Event streams and MCP resource subscriptions one client address may hold at once."""
    max_mcp_sessions_per_client: int = 100
    """Handshake-era MCP sessions (streamable HTTP) one client address may hold at once."""
    subscriber_buffer_bytes: int = 8 << 20
    """Change events one subscriber may leave unread (bytes) before it is cut off with a resumable position."""
    max_header_bytes: int = 32 << 10
    """The request line and headers of one HTTP request, at most (``431`` beyond)."""
    header_timeout_seconds: int = 10
    """The longest a client may take to send a request's line and headers once it started."""
    body_timeout_seconds: int = 30
    """The longest a client may leave a request body unfinished without sending more of it."""
    max_connections: int = 512
    """Open HTTP connections the server holds at once, from all clients."""
    max_connections_per_client: int = 64
    """Open HTTP connections one client address may hold at once."""
    log_format: str = "text"
    """``text``: one readable line per record; ``json``: one JSON object per line (docs/operations.md)."""
    slow_request_ms: int = 1000
    """A request (or MCP tool call) slower than this many milliseconds is logged as a warning; 0: never."""
    metrics: bool = True
    """Serve ``/metrics`` (Prometheus text format) and count what it shows."""
    shutdown_grace_seconds: int = 10
    """On SIGTERM, how long in-flight requests may take to finish before the server stops regardless."""
    validation_level: str = "moderate"
    """``moderate``: a write to a document already invalid under the served schema (the schema changed) is
    accepted when it adds no violation; ``strict``: every write must leave the document valid
    (docs/schema-changes.md)."""
    check_documents_on_start: bool = True
    """After start-up, check in the background every document last validated against another schema."""
    semantic_search: bool = True
    """With the semantic extra installed, keep a vector per text unit and rank searches by meaning (``semantic``)
    and by meaning with full text (``hybrid``, then the default ranking); false: neither (docs/search.md)."""
    snapshot_policy: str = "lazy"
    snapshot_inline_below_bytes: int = 0
    snapshot_lag_versions: int = 1000
    snapshot_lag_bytes: int = 64 << 20
    snapshot_interval_seconds: int = 5
    search_fields: tuple[str, ...] | None = None
    """The members ``document_list`` filters and sorts on (JSON Pointers); None: decided from the schema
    (docs/search.md)."""
    search_field_depth: int = 3
    """How many members down the schema's scalars are indexed when ``search_fields`` is not set."""
    memory_budget: int | None = None
    """Bytes the service keeps resident (documents and their caches); ``None``: a quarter of the machine's memory."""
    config_file: Path = Path(DEFAULT_CONFIG_FILE)
    allowed_hosts: tuple[str, ...] | None = None
    """Host names (``name``, ``name:port``, ``*.domain``, ``*``) the HTTP server answers for; None: loopback
    names on a loopback address, any name elsewhere (:mod:`schemadoc.interfaces.http.access`)."""
    tokens_file: Path | None = None
    """Named access tokens, read-only or read-write (:mod:`schemadoc.interfaces.http.access`); None: no tokens."""
    unsafe_no_auth: bool = False
    """Serve a non-loopback address without tokens (refused otherwise)."""

    @property
    def log_level_number(self) -> int:
        """The :mod:`logging` level number of :attr:`log_level`."""
        return {"debug": 10, "info": 20, "warning": 30, "error": 40}[self.log_level]


def _invalid(name: str, source: str, message: str, value: Any = None) -> SchemaDocError:
    details: dict[str, Any] = {"setting": name, "source": source}
    if value is not None:
        details["value"] = value if isinstance(value, str | int | float | bool) else repr(value)
    return SchemaDocError("config-invalid", f"{name} ({source}): {message}", details)


def _as_int(name: str, source: str, value: Any, low: int, high: int | None = None) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().lstrip("+").isdigit():
        number = int(value.strip())
    else:
        raise _invalid(name, source, f"must be an integer, got {value!r}", value)
    if number < low or (high is not None and number > high):
        bound = f"from {low} to {high}" if high is not None else f">= {low}"
        raise _invalid(name, source, f"must be an integer {bound}, got {number}", number)
    return number


_SIZE_UNITS = {"": 1, "b": 1, "kb": 10**3, "kib": 1 << 10, "mb": 10**6, "mib": 1 << 20, "gb": 10**9,
               "gib": 1 << 30, "tb": 10**12, "tib": 1 << 40}
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$")


def parse_size(value: Any) -> int:
    """Bytes from ``256MiB``, ``2GiB``, ``1.5GB`` or a plain number of bytes; :exc:`ValueError` otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = _SIZE.match(value) if isinstance(value, str) else None
    unit = match.group(2).lower() if match else None
    if match is None or unit not in _SIZE_UNITS:
        raise ValueError(f"must be a size such as 256MiB or 2GiB (units B, KiB, MiB, GiB, TiB, KB, MB, GB, TB), "
                         f"got {value!r}")
    return int(float(match.group(1)) * _SIZE_UNITS[unit])


def _as_size(name: str, source: str, value: Any) -> int:
    try:
        size = parse_size(value)
    except ValueError as error:
        raise _invalid(name, source, str(error), value) from None
    if size < 1 << 20:
        raise _invalid(name, source, f"must be at least {1 << 20} bytes (1MiB), got {size}", value)
    return size


def _as_str(name: str, source: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _invalid(name, source, f"must be a non-empty string, got {value!r}", value)
    return value.strip()


def _as_path(name: str, source: str, value: Any) -> Path:
    return value if isinstance(value, Path) else Path(_as_str(name, source, value)).expanduser()


def redacted_url(text: str) -> str:
    """A URL as it may be shown: everything between ``://`` and its last ``@`` (user and password) masked."""
    if "@" not in text:
        return text
    scheme, _, rest = text.partition("://")
    return f"{scheme}://***@{rest.rsplit('@', 1)[1]}" if rest else "***@" + text.rsplit("@", 1)[1]


def _as_storage_url(name: str, source: str, value: Any) -> str:
    text = _as_str(name, source, value)
    shown = redacted_url(text)  # never echo a password
    if not text.startswith(("postgresql://", "postgres://")):
        raise _invalid(name, source, "must be a PostgreSQL URL (postgresql://user@host:5432/dbname); "
                       "leave it unset to store documents in files under storage_dir", shown)
    authority = text.split("://", 1)[1].split("/", 1)[0].split("?", 1)[0]
    problem = None
    if authority.count("@") > 1:
        problem = "has an unencoded '@' in its user or password: write it as %40"
    elif "#" in text:
        problem = "has an unencoded '#': write it as %23 (a '#' starts a fragment, which a PostgreSQL URL has none of)"
    else:
        try:
            parts = urlsplit(text)
            parts.port  # noqa: B018 - parses the port
        except ValueError as error:
            problem = f"is not a valid URL ({error}); percent-encode special characters in the user and password"
    if problem is not None:
        raise _invalid(name, source, problem, shown)
    return text


def _as_bool(name: str, source: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if isinstance(value, str) and value.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise _invalid(name, source, f"must be true or false, got {value!r}", value)


def _as_hosts(name: str, source: str, value: Any) -> tuple[str, ...]:
    hosts = _as_origins(name, source, value)
    for host in hosts:
        if any(char in host for char in "/@ ") or not host.strip():
            raise _invalid(name, source, f"must be host names (name, name:port, *.domain or *), got {host!r}", host)
    return tuple(host.strip().lower() for host in hosts)


def _as_pointers(name: str, source: str, value: Any) -> tuple[str, ...]:
    pointers = _as_origins(name, source, value)
    for pointer in pointers:
        if not pointer.startswith("/"):
            raise _invalid(name, source, f"must be JSON Pointers into the documents, got {pointer!r}", pointer)
    return pointers


def _as_origins(name: str, source: str, value: Any) -> tuple[str, ...]:
    items: Any = value
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                items = json.loads(text)
            except json.JSONDecodeError as error:
                raise _invalid(name, source, f"is not a JSON list: {error}", value) from None
        else:
            items = [part.strip() for part in text.split(",") if part.strip()]
    if not isinstance(items, list | tuple) or not all(isinstance(item, str) and item for item in items):
        raise _invalid(name, source, f"must be a list of origins (strings), got {value!r}", value)
    return tuple(items)


_Convert = Callable[[str, str, Any], Any]
"""One raw value (a string from flags or the environment, any JSON from the file) as its setting's type,
from the setting's name, where the value came from and the value."""


def _int(low: int, high: int | None = None) -> _Convert:
    return lambda name, source, value: _as_int(name, source, value, low, high)


def _choice(choices: tuple[str, ...], shown: str, aliases: Mapping[str, str] | None = None) -> _Convert:
    def convert(name: str, source: str, value: Any) -> str:
        text = _as_str(name, source, value).lower()
        text = (aliases or {}).get(text, text)
        if text not in choices:
            raise _invalid(name, source, f"must be one of {shown}, got {value!r}", value)
        return text

    return convert


_SETTINGS: dict[str, tuple[_Convert, str | None]] = {
    "schema_path": (_as_path, "--schema"),
    "storage_dir": (_as_path, "--storage-dir"),
    "storage_url": (_as_storage_url, "--storage-url"),
    "log_level": (_choice(LOG_LEVELS, "debug, info, warn, warning, error", {"warn": "warning"}), "--log-level"),
    "config_file": (_as_path, "--config"),
    "host": (_as_str, "--host"),
    "port": (_int(0, 65535), "--port"),
    "workers": (_int(1, 64), "--workers"),
    "cors_origins": (_as_origins, None),
    "transport": (_choice(TRANSPORTS, ", ".join(TRANSPORTS)), "--transport"),
    "max_body_bytes": (_int(1), None),
    "max_json_depth": (_int(1, 250), None),  # orjson stores at most 255 levels
    "max_string_length": (_int(1), None),
    "max_patch_operations": (_int(1), None),
    "max_subscribers_per_document": (_int(1), None),
    "max_subscribers_total": (_int(1), None),
    "max_mcp_sessions": (_int(1), None),
    "mcp_session_idle_seconds": (_int(1), None),
    "max_subscribers_per_client": (_int(1), None),
    "max_mcp_sessions_per_client": (_int(1), None),
    "subscriber_buffer_bytes": (_as_size, None),
    "max_header_bytes": (_int(1024), None),
    "header_timeout_seconds": (_int(1), None),
    "body_timeout_seconds": (_int(1), None),
    "max_connections": (_int(1), None),
    "max_connections_per_client": (_int(1), None),
    "log_format": (_choice(LOG_FORMATS, ", ".join(LOG_FORMATS)), "--log-format"),
    "slow_request_ms": (_int(0), None),
    "metrics": (_as_bool, None),
    "shutdown_grace_seconds": (_int(1), None),
    "validation_level": (_choice(VALIDATION_LEVELS, ", ".join(VALIDATION_LEVELS)), "--validation-level"),
    "check_documents_on_start": (_as_bool, None),
    "semantic_search": (_as_bool, None),
    "snapshot_policy": (_choice(SNAPSHOT_POLICIES, ", ".join(SNAPSHOT_POLICIES)), None),
    "snapshot_inline_below_bytes": (_int(0), None),
    "snapshot_lag_versions": (_int(1), None),
    "snapshot_lag_bytes": (_int(0), None),
    "snapshot_interval_seconds": (_int(1), None),
    "allowed_hosts": (_as_hosts, "--allowed-hosts"),
    "tokens_file": (_as_path, "--tokens-file"),
    "unsafe_no_auth": (_as_bool, "--unsafe-no-auth"),
    "memory_budget": (_as_size, "--memory-budget"),
    "search_fields": (_as_pointers, None),
    "search_field_depth": (_int(1), None),
}
"""Every setting (a field of :class:`Settings`): how its value is read, and its command-line flag if it has one.
Its environment variable is its name in capitals."""

ENVIRONMENT: dict[str, str] = {name.upper(): name for name in _SETTINGS}
"""Environment variable -> setting name."""


def _convert(name: str, source: str, value: Any) -> Any:
    if source == "flag":
        if name not in _SETTINGS:
            raise _invalid(name, source, "is not a setting")
        source = f"flag {_SETTINGS[name][1] or name}"
    elif source == "environment":
        source = f"environment variable {name.upper()}"
    return _SETTINGS[name][0](name, source, value)


def _read_file(path: Path, explicit: bool) -> dict[str, Any]:
    def unusable(problem: str, remediation: str | None = None) -> SchemaDocError:
        return SchemaDocError("config-invalid", f"The config file {path} {problem}",
                              {"setting": "config_file", "path": str(path)}, remediation=remediation)

    if not path.exists():
        if explicit:
            raise unusable("does not exist.", "Create the file, or name an existing one with --config / CONFIG_FILE.")
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise unusable(f"cannot be read: {error}.") from None
    except json.JSONDecodeError as error:
        raise unusable(f"is not JSON: {error}.") from None
    if not isinstance(raw, dict):
        raise unusable("must hold a JSON object.")
    where = f"config file {path}"
    known = sorted(_SETTINGS.keys() - {"config_file"})
    unknown = sorted(key for key in raw if key not in known)
    if unknown:
        raise SchemaDocError("config-invalid",
                             f"The config file {path} has unknown settings: {', '.join(unknown)}.",
                             {"setting": unknown[0], "source": where, "unknown": unknown, "known": known})
    values = {name: _convert(name, where, value) for name, value in raw.items() if value is not None}
    # relative paths in the file are relative to the file's own directory
    return {name: path.parent / value if isinstance(value, Path) else value for name, value in values.items()}


def load_settings(cli_overrides: Mapping[str, Any], environ: Mapping[str, str], *,
                  require_schema: bool = True) -> Settings:
    """The settings from flags (``cli_overrides``, None = not given), the environment and the config file.

    Raises ``config-invalid`` for any bad value or an unreadable config file, and
    ``schema-load-failed`` when ``require_schema`` and no source names a schema.
    """
    flags = {name: _convert(name, "flag", raw) for name, raw in cli_overrides.items() if raw is not None}
    env = {name: _convert(name, "environment", environ[key]) for key, name in ENVIRONMENT.items() if environ.get(key)}
    if "config_file" in flags:
        config_file, explicit = flags["config_file"], True
    elif "config_file" in env:
        config_file, explicit = env["config_file"], True
    else:
        config_file, explicit = Path(DEFAULT_CONFIG_FILE), False
    merged: dict[str, Any] = {**_read_file(config_file, explicit), **env, **flags}
    merged["config_file"] = config_file
    if "schema_path" not in merged:
        if require_schema:
            raise SchemaDocError(
                "schema-load-failed", "No schema is configured.",
                {"setting": "schema_path"},
                remediation="Give one with --schema PATH, the SCHEMA_PATH environment variable, "
                            "or \"schema_path\" in the config file.")
        merged["schema_path"] = None
    return Settings(**merged)
