"""Settings come from flags, then the environment, then the config file, then the defaults."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from schemadoc.config import Settings, load_settings
from schemadoc.errors import SchemaDocError
from schemadoc.service import MAX_JSON_DEPTH


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working directory, so the default ./config.json is absent unless a test writes it."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_config(path: Path, **values: object) -> Path:
    path.write_text(json.dumps(values), encoding="utf-8")
    return path


def load(flags: dict[str, object] | None = None, env: dict[str, str] | None = None) -> Settings:
    return load_settings(flags or {}, env or {})


def error_of(flags: dict[str, object] | None = None, env: dict[str, str] | None = None) -> SchemaDocError:
    with pytest.raises(SchemaDocError) as caught:
        load(flags, env)
    return caught.value


def test_defaults_apply_when_only_the_schema_is_given(workdir: Path) -> None:
    settings = load({"schema_path": "book.json"})
    assert settings.schema_path == Path("book.json")
    assert settings.storage_dir == Path("./data")
    assert (settings.transport, settings.host, settings.port) == ("http", "127.0.0.1", 8080)
    assert settings.log_level == "info"
    assert settings.cors_origins == ()
    assert settings.max_body_bytes == 64 * 1024 * 1024
    assert settings.max_json_depth == MAX_JSON_DEPTH == 128
    assert settings.config_file == Path("./config.json")


def test_a_flag_beats_the_environment_which_beats_the_file(workdir: Path) -> None:
    write_config(workdir / "config.json", schema_path="file.json", port=1111, host="10.0.0.1", log_level="error")
    settings = load({"port": "3333"}, {"PORT": "2222", "HOST": "0.0.0.0", "SCHEMA_PATH": "env.json"})
    assert settings.port == 3333
    assert settings.host == "0.0.0.0"
    assert settings.schema_path == Path("env.json")
    assert settings.log_level == "error"


def test_a_flag_given_as_none_counts_as_not_given(workdir: Path) -> None:
    settings = load({"schema_path": None, "port": None}, {"SCHEMA_PATH": "env.json", "PORT": "2222"})
    assert settings.schema_path == Path("env.json")
    assert settings.port == 2222


def test_every_environment_variable_is_read(workdir: Path) -> None:
    settings = load(env={
        "SCHEMA_PATH": "s.json", "STORAGE_DIR": "store", "LOG_LEVEL": "WARN", "HOST": "::1", "PORT": "9",
        "CORS_ORIGINS": "http://a.example, http://b.example", "TRANSPORT": "stdio",
        "MAX_BODY_BYTES": "1024", "MAX_JSON_DEPTH": "8", "MAX_STRING_LENGTH": "100", "MAX_PATCH_OPERATIONS": "7",
        "MAX_SUBSCRIBERS_PER_DOCUMENT": "3", "MAX_SUBSCRIBERS_TOTAL": "30", "MAX_MCP_SESSIONS": "5",
        "MCP_SESSION_IDLE_SECONDS": "60",
    })
    assert settings == Settings(schema_path=Path("s.json"), storage_dir=Path("store"), transport="stdio",
                                host="::1", port=9, log_level="warning",
                                cors_origins=("http://a.example", "http://b.example"),
                                max_body_bytes=1024, max_json_depth=8, max_string_length=100, max_patch_operations=7,
                                max_subscribers_per_document=3, max_subscribers_total=30, max_mcp_sessions=5,
                                mcp_session_idle_seconds=60)


def test_cors_origins_may_be_a_json_list(workdir: Path) -> None:
    settings = load({"schema_path": "s.json"}, {"CORS_ORIGINS": '["http://localhost:3000", "https://app.example"]'})
    assert settings.cors_origins == ("http://localhost:3000", "https://app.example")


def test_the_config_file_is_read_with_paths_relative_to_it(workdir: Path) -> None:
    folder = workdir / "conf"
    folder.mkdir()
    config = write_config(folder / "server.json", schema_path="schemas/book.json", storage_dir="/abs/data",
                          cors_origins=["http://x.example"], max_json_depth=32)
    settings = load({"config_file": str(config)})
    assert settings.schema_path == folder / "schemas/book.json"
    assert settings.storage_dir == Path("/abs/data")
    assert settings.cors_origins == ("http://x.example",)
    assert settings.max_json_depth == 32
    assert settings.config_file == config


def test_the_config_file_can_be_named_by_the_environment(workdir: Path) -> None:
    config = write_config(workdir / "other.json", schema_path="/s.json", port=4444)
    assert load(env={"CONFIG_FILE": str(config)}).port == 4444


def test_a_missing_default_config_file_is_fine_but_a_named_one_is_an_error(workdir: Path) -> None:
    assert load({"schema_path": "s.json"}).port == 8080
    error = error_of({"schema_path": "s.json", "config_file": str(workdir / "absent.json")})
    assert error.code == "config-invalid"
    assert "absent.json" in error.message


def test_no_schema_anywhere_is_schema_load_failed_saying_how_to_give_one(workdir: Path) -> None:
    error = error_of()
    assert error.code == "schema-load-failed"
    assert "--schema" in (error.remediation or "")
    assert "SCHEMA_PATH" in (error.remediation or "")


def test_the_schema_may_be_left_out_when_not_required(workdir: Path) -> None:
    assert load_settings({}, {}, require_schema=False).schema_path is None


@pytest.mark.parametrize(("flags", "env", "setting"), [
    ({"port": "eighty"}, {}, "port"),
    ({"port": "70000"}, {}, "port"),
    ({}, {"PORT": "-1"}, "port"),
    ({"transport": "carrier-pigeon"}, {}, "transport"),
    ({"log_level": "loud"}, {}, "log_level"),
    ({}, {"MAX_BODY_BYTES": "0"}, "max_body_bytes"),
    ({}, {"MAX_JSON_DEPTH": "deep"}, "max_json_depth"),
    ({}, {"MAX_STRING_LENGTH": "0"}, "max_string_length"),
    ({}, {"MAX_PATCH_OPERATIONS": "many"}, "max_patch_operations"),
    ({}, {"MAX_SUBSCRIBERS_PER_DOCUMENT": "-2"}, "max_subscribers_per_document"),
    ({}, {"MAX_SUBSCRIBERS_TOTAL": "0"}, "max_subscribers_total"),
    ({}, {"MAX_MCP_SESSIONS": "1.5"}, "max_mcp_sessions"),
    ({}, {"MCP_SESSION_IDLE_SECONDS": "0"}, "mcp_session_idle_seconds"),
    ({}, {"CORS_ORIGINS": "[not json"}, "cors_origins"),
    ({}, {"CORS_ORIGINS": "[1, 2]"}, "cors_origins"),
    ({"host": "  "}, {}, "host"),
])
def test_a_bad_value_is_config_invalid_naming_the_setting(workdir: Path, flags: dict[str, object],
                                                          env: dict[str, str], setting: str) -> None:
    error = error_of({"schema_path": "s.json", **flags}, env)
    assert error.code == "config-invalid"
    assert error.details["setting"] == setting
    assert setting in error.message


@pytest.mark.parametrize(("content", "fragment"), [
    ("{not json", "not JSON"),
    ("[1, 2]", "JSON object"),
    ('{"prot": 1}', "prot"),
    ('{"port": true}', "port"),
    ('{"cors_origins": "http://a.example"}', None),
])
def test_a_bad_config_file_is_config_invalid(workdir: Path, content: str, fragment: str | None) -> None:
    (workdir / "config.json").write_text(content, encoding="utf-8")
    if fragment is None:  # a comma-separated string is accepted in the file too
        assert load({"schema_path": "s.json"}).cors_origins == ("http://a.example",)
        return
    error = error_of({"schema_path": "s.json"})
    assert error.code == "config-invalid"
    assert fragment in error.message


def test_log_levels_are_case_insensitive_and_warn_means_warning(workdir: Path) -> None:
    assert load({"schema_path": "s.json", "log_level": "DEBUG"}).log_level == "debug"
    assert load({"schema_path": "s.json", "log_level": "warn"}).log_level_number == 30


def test_the_storage_url_comes_from_flag_environment_or_file_and_files_stay_the_default(workdir: Path) -> None:
    assert load({"schema_path": "s.json"}).storage_url is None
    url = "postgresql://app@db.example:5432/docs"
    assert load({"schema_path": "s.json", "storage_url": url}).storage_url == url
    assert load({"schema_path": "s.json"}, {"STORAGE_URL": "postgres://app@db/docs"}).storage_url == \
        "postgres://app@db/docs"
    write_config(workdir / "config.json", schema_path="s.json", storage_url=url)
    assert load().storage_url == url
    assert load({"storage_url": "postgresql://other@db/x"}, {"STORAGE_URL": "postgresql://env@db/x"}).storage_url \
        == "postgresql://other@db/x"


def test_a_storage_url_that_is_not_postgresql_is_config_invalid_without_echoing_a_password(workdir: Path) -> None:
    error = error_of({"schema_path": "s.json"}, {"STORAGE_URL": "mysql://app:s3cret@db.example/docs"})
    assert error.code == "config-invalid"
    assert error.details["setting"] == "storage_url"
    assert "STORAGE_URL" in error.message
    assert "s3cret" not in str(error.to_dict())
