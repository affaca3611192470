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
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from schemadoc.errors import SchemaDocError

__all__ = [
    "DEFAULT_CONFIG_FILE",
    "ENVIRONMENT",
    "LOG_LEVELS",
    "SNAPSHOT_POLICIES",
    "TRANSPORTS",
    "Settings",
    "load_settings",
    "parse_size",
    "redacted_url",
]

DEFAULT_CONFIG_FILE = "./config.json"
TRANSPORTS = ("http", "stdio")
SNAPSHOT_POLICIES = ("every-write", "lazy")
LOG_LEVELS = ("debug", "info", "warning", "error")
_LEVEL_ALIASES = {"warn": "warning"}

ENVIRONMENT: dict[str, str] = {
    "SCHEMA_PATH": "schema_path",
    "STORAGE_DIR": "storage_dir",
    "STORAGE_URL": "storage_url",
    "LOG_LEVEL": "log_level",
    "CONFIG_FILE": "config_file",
    "HOST": "host",
    "PORT": "port",
    "CORS_ORIGINS": "cors_origins",
    "TRANSPORT": "transport",
    "MAX_BODY_BYTES": "max_body_bytes",
    "MAX_JSON_DEPTH": "max_json_depth",
    "MAX_STRING_LENGTH": "max_string_length",
    "MAX_PATCH_OPERATIONS": "max_patch_operations",
    "MAX_SUBSCRIBERS_PER_DOCUMENT": "max_subscribers_per_document",
    "MAX_SUBSCRIBERS_TOTAL": "max_subscribers_total",
    "MAX_MCP_SESSIONS": "max_mcp_sessions",
    "MCP_SESSION_IDLE_SECONDS": "mcp_session_idle_seconds",
    "SNAPSHOT_POLICY": "snapshot_policy",
    "SNAPSHOT_INLINE_BELOW_BYTES": "snapshot_inline_below_bytes",
    "SNAPSHOT_LAG_VERSIONS": "snapshot_lag_versions",
    "SNAPSHOT_LAG_BYTES": "snapshot_lag_bytes",
    "SNAPSHOT_INTERVAL_SECONDS": "snapshot_interval_seconds",
    "ALLOWED_HOSTS": "allowed_hosts",
    "TOKENS_FILE": "tokens_file",
    "UNSAFE_NO_AUTH": "unsafe_no_auth",
    "MEMORY_BUDGET": "memory_budget",
}
"""Environment variable -> setting name."""

_FLAGS: dict[str, str] = {
    "schema_path": "--schema",
    "storage_dir": "--storage-dir",
    "storage_url": "--storage-url",
    "log_level": "--log-level",
    "config_file": "--config",
    "host": "--host",
    "port": "--port",
    "transport": "--transport",
    "allowed_hosts": "--allowed-hosts",
    "tokens_file": "--tokens-file",
    "unsafe_no_auth": "--unsafe-no-auth",
    "memory_budget": "--memory-budget",
}


@dataclass(frozen=True)
class Settings:
    """Everything the server is configured with. Build it with :func:`load_settings`."""

    schema_path: Path | None
    storage_dir: Path = Path("./data")
    storage_url: str | None = None
    transport: str = "http"
    host: str = "127.0.0.1"
    port: int = 8080
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
    snapshot_policy: str = "lazy"
    snapshot_inline_below_bytes: int = 0
    snapshot_lag_versions: int = 1000
    snapshot_lag_bytes: int = 64 << 20
    snapshot_interval_seconds: int = 5
    memory_budget: int | None = None
    """Bytes the service keeps resident (documents and their caches); ``None``: a quarter of the machine's memory."""
    config_file: Path = Path(DEFAULT_CONFIG_FILE)
    allowed_hosts: tuple[str, ...] | None = None
    """Host names (``name``, ``name:port``, ``*.domain``, ``*``) the HTTP server answers for; None: loopback
    names on a loopback address, any name elsewhere (:mod:`schemadoc.interfaces.access`)."""
    tokens_file: Path | None = None
    """Named access tokens, read-only or read-write (:mod:`schemadoc.interfaces.access`); None: no tokens."""
    unsafe_no_auth: bool = False
    """Serve a non-loopback address without tokens (refused otherwise)."""

    @property
    def log_level_number(self) -> int:
        """The :mod:`logging` level number of :attr:`log_level`."""
        return {"debug": 10, "info": 20, "warning": 30, "error": 40}[self.log_level]


_NAMES = frozenset(Settings.__dataclass_fields__)


def _invalid(name: str, source: str, message: str, value: Any = None) -> SchemaDocError:
    details: dict[str, Any] = {"setting": name, "source": source}
    if value is not None:
        details["value"] = value if isinstance(value, str | int | float | bool) else repr(value)
    return SchemaDocError("config-invalid", f"{name} ({source}): {message}", details)


def _source_name(name: str, source: str) -> str:
    if source == "flag":
        return f"flag {_FLAGS.get(name, name)}"
    if source == "environment":
        env = next((key for key, value in ENVIRONMENT.items() if value == name), name)
        return f"environment variable {env}"
    return source


def _as_int(name: str, source: str, value: Any, low: int, high: int | None = None) -> int:
    number: int
    if isinstance(value, bool):
        raise _invalid(name, source, f"must be an integer, got {value!r}", value)
    if isinstance(value, int):
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


def _as_size(name: str, source: str, value: Any, low: int) -> int:
    try:
        size = parse_size(value)
    except ValueError as error:
        raise _invalid(name, source, str(error), value) from None
    if size < low:
        raise _invalid(name, source, f"must be at least {low} bytes (1MiB), got {size}", value)
    return size


def _as_str(name: str, source: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _invalid(name, source, f"must be a non-empty string, got {value!r}", value)
    return value.strip()


def _as_path(name: str, source: str, value: Any, base: Path | None) -> Path:
    path = value if isinstance(value, Path) else Path(_as_str(name, source, value)).expanduser()
    if base is not None and not path.is_absolute():
        path = base / path
    return path


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


_POSITIVE_INTS = frozenset({"max_string_length", "max_patch_operations", "max_subscribers_per_document",
                            "max_subscribers_total", "max_mcp_sessions", "mcp_session_idle_seconds"})


def _convert(name: str, source: str, value: Any, base: Path | None) -> Any:
    """One raw value (a string from flags/environment, any JSON from the file) as its setting's type."""
    where = _source_name(name, source)
    if name in ("schema_path", "storage_dir", "config_file"):
        return _as_path(name, where, value, base)
    if name == "transport":
        text = _as_str(name, where, value).lower()
        if text not in TRANSPORTS:
            raise _invalid(name, where, f"must be one of {', '.join(TRANSPORTS)}, got {value!r}", value)
        return text
    if name == "log_level":
        text = _as_str(name, where, value).lower()
        text = _LEVEL_ALIASES.get(text, text)
        if text not in LOG_LEVELS:
            raise _invalid(name, where, f"must be one of debug, info, warn, warning, error, got {value!r}", value)
        return text
    if name == "storage_url":
        return _as_storage_url(name, where, value)
    if name == "host":
        return _as_str(name, where, value)
    if name == "port":
        return _as_int(name, where, value, 0, 65535)
    if name == "cors_origins":
        return _as_origins(name, where, value)
    if name == "allowed_hosts":
        return _as_hosts(name, where, value)
    if name == "tokens_file":
        return _as_path(name, where, value, base)
    if name == "unsafe_no_auth":
        return _as_bool(name, where, value)
    if name == "max_body_bytes":
        return _as_int(name, where, value, 1)
    if name == "max_json_depth":
        return _as_int(name, where, value, 1, 250)  # orjson stores at most 255 levels
    if name in _POSITIVE_INTS:
        return _as_int(name, where, value, 1)
    if name == "snapshot_policy":
        text = _as_str(name, where, value).lower()
        if text not in SNAPSHOT_POLICIES:
            raise _invalid(name, where, f"must be one of {', '.join(SNAPSHOT_POLICIES)}, got {value!r}", value)
        return text
    if name in ("snapshot_inline_below_bytes", "snapshot_lag_bytes"):
        return _as_int(name, where, value, 0)
    if name in ("snapshot_lag_versions", "snapshot_interval_seconds"):
        return _as_int(name, where, value, 1)
    if name == "memory_budget":
        return _as_size(name, where, value, 1 << 20)
    raise _invalid(name, where, "is not a setting")  # pragma: no cover - guarded by the callers


def _from_environment(environ: Mapping[str, str]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for env, name in ENVIRONMENT.items():
        raw = environ.get(env)
        if raw is not None and raw != "":
            values[name] = _convert(name, "environment", raw, None)
    return values


def _from_flags(cli_overrides: Mapping[str, Any]) -> dict[str, Any]:
    values: dict[str, Any] = {}
    for name, raw in cli_overrides.items():
        if raw is None:
            continue
        if name not in _NAMES:
            raise _invalid(name, "flag", "is not a setting")
        values[name] = _convert(name, "flag", raw, None)
    return values


def _read_file(path: Path, explicit: bool) -> dict[str, Any]:
    where = f"config file {path}"
    if not path.exists():
        if explicit:
            raise SchemaDocError("config-invalid", f"The config file {path} does not exist.",
                                 {"setting": "config_file", "path": str(path)},
                                 remediation="Create the file, or name an existing one with --config / CONFIG_FILE.")
        return {}
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise SchemaDocError("config-invalid", f"The config file {path} cannot be read: {error}.",
                             {"setting": "config_file", "path": str(path)}) from None
    except json.JSONDecodeError as error:
        raise SchemaDocError("config-invalid", f"The config file {path} is not JSON: {error}.",
                             {"setting": "config_file", "path": str(path)}) from None
    if not isinstance(raw, dict):
        raise SchemaDocError("config-invalid", f"The config file {path} must hold a JSON object.",
                             {"setting": "config_file", "path": str(path)})
    unknown = sorted(key for key in raw if key not in _NAMES or key == "config_file")
    if unknown:
        raise SchemaDocError("config-invalid",
                             f"The config file {path} has unknown settings: {', '.join(unknown)}.",
                             {"setting": unknown[0], "source": where, "unknown": unknown,
                              "known": sorted(_NAMES - {"config_file"})})
    base = path.parent
    return {name: _convert(name, where, value, base) for name, value in raw.items() if value is not None}


def load_settings(cli_overrides: Mapping[str, Any], environ: Mapping[str, str], *,
                  require_schema: bool = True) -> Settings:
    """The settings from flags (``cli_overrides``, None = not given), the environment and the config file.

    Raises ``config-invalid`` for any bad value or an unreadable config file, and
    ``schema-load-failed`` when ``require_schema`` and no source names a schema.
    """
    flags = _from_flags(cli_overrides)
    env = _from_environment(environ)
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
