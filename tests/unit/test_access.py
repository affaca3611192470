"""Who may use the HTTP server: Host/Origin rules, the tokens file, what counts as a write, and the layer in process."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from schemadoc.config import Settings
from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.app import build_app, create_service
from schemadoc.interfaces.http.access import HostPolicy, TokensFile, is_loopback, mcp_message_writes, parse_tokens

BOOK_SCHEMA = Path(__file__).resolve().parents[2] / "schemas" / "book.schema.json"
WRITER = "w" * 8 + "-read-write-token"
READER = "r" * 8 + "-read-only-token!"
MODERN = {"mcp-protocol-version": "2026-07-28", "accept": "application/json, text/event-stream",
          "content-type": "application/json"}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}


# -- Host and Origin -----------------------------------------------------------------------------


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "[::1]", "127.0.0.2"])
def test_loopback_addresses_are_recognised(host: str) -> None:
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "10.1.2.3", "example.com", "::"])
def test_other_addresses_are_not_loopback(host: str) -> None:
    assert not is_loopback(host)


def test_a_loopback_server_answers_only_for_loopback_names_on_any_port() -> None:
    policy = HostPolicy(None, "127.0.0.1")
    for host in ("127.0.0.1:8080", "localhost", "LOCALHOST:1", "[::1]:8080"):
        assert policy.host_allowed(host), host
    for host in ("evil.example:8080", "127.0.0.1.evil.example", "localhost.evil", None, "", "a b"):
        assert not policy.host_allowed(host), host


def test_a_server_on_another_address_answers_any_name_unless_told() -> None:
    assert HostPolicy(None, "0.0.0.0").host_allowed("whatever.example")
    named = HostPolicy(("docs.example.com", "*.internal", "api.example.com:8443"), "0.0.0.0")
    assert named.host_allowed("docs.example.com:8080")
    assert named.host_allowed("a.b.internal")
    assert named.host_allowed("api.example.com:8443")
    assert not named.host_allowed("api.example.com:8080")
    assert not named.host_allowed("internal")
    assert not named.host_allowed("evil.example")


def test_an_origin_is_admitted_when_it_is_the_servers_own_an_allowed_host_or_a_cors_origin() -> None:
    policy = HostPolicy(None, "127.0.0.1", ["https://app.example.com"])
    assert policy.origin_allowed("http://127.0.0.1:8080", "127.0.0.1:8080")
    assert policy.origin_allowed("http://localhost:3000", "127.0.0.1:8080")  # a loopback name
    assert policy.origin_allowed("https://app.example.com", "127.0.0.1:8080")
    # a page on another port of an allowed host may read, not write; the server's own pages and listed ones may
    assert not policy.origin_allowed("http://localhost:3000", "127.0.0.1:8080", writes=True)
    assert not policy.origin_allowed("http://127.0.0.1:8081", "127.0.0.1:8080", writes=True)
    assert policy.origin_allowed("http://127.0.0.1:8080", "127.0.0.1:8080", writes=True)
    assert policy.origin_allowed("https://app.example.com", "127.0.0.1:8080", writes=True)
    assert not policy.origin_allowed("http://evil.example:8080", "127.0.0.1:8080")
    assert not policy.origin_allowed("null", "127.0.0.1:8080")
    anywhere = HostPolicy(None, "0.0.0.0")
    assert anywhere.origin_allowed("https://docs.example.com", "docs.example.com")  # same origin
    assert not anywhere.origin_allowed("https://evil.example", "docs.example.com")


# -- tokens --------------------------------------------------------------------------------------


def _tokens_file(path: Path, *entries: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"tokens": list(entries)}), encoding="utf-8")
    return path


def test_tokens_are_found_by_secret_or_by_digest_with_their_access(tmp_path: Path) -> None:
    digest = hashlib.sha256(READER.encode()).hexdigest()
    tokens = TokensFile(_tokens_file(tmp_path / "tokens.json",
                                     {"name": "ci", "token": WRITER, "access": "read-write"},
                                     {"name": "dash", "sha256": digest, "access": "read-only"}))
    writer, reader = tokens.find(WRITER), tokens.find(READER)
    assert writer is not None and (writer.name, writer.writes) == ("ci", True)
    assert reader is not None and (reader.name, reader.writes) == ("dash", False)
    assert tokens.find(WRITER[:-1]) is None
    assert tokens.find("") is None


@pytest.mark.parametrize(("content", "says"), [
    ("not json", "is not JSON"),
    ('{"tokens": {}}', '{"tokens": [...]}'),
    ('{"tokens": [{"token": "' + WRITER + '", "access": "read-write"}]}', "without a name"),
    ('{"tokens": [{"name": "a", "token": "short", "access": "read-write"}]}', "at least 16"),
    ('{"tokens": [{"name": "a", "token": "' + WRITER + '", "access": "admin"}]}', "read-only or read-write"),
    ('{"tokens": [{"name": "a", "access": "read-only"}]}', "exactly one of token and sha256"),
    ('{"tokens": [{"name": "a", "sha256": "abc", "access": "read-only"}]}', "64 hexadecimal"),
    ('{"tokens": [{"name": "a", "token": "' + WRITER + '", "access": "read-only", "x": 1}]}', "unknown members"),
])
def test_a_bad_tokens_file_is_config_invalid_and_never_shows_a_secret(tmp_path: Path, content: str,
                                                                      says: str) -> None:
    path = tmp_path / "tokens.json"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(SchemaDocError) as raised:
        TokensFile(path)
    assert raised.value.code == "config-invalid"
    assert says in raised.value.message
    assert WRITER not in str(raised.value.to_dict())


def test_a_changed_file_is_read_again_and_a_broken_one_admits_nobody(tmp_path: Path) -> None:
    path = _tokens_file(tmp_path / "tokens.json", {"name": "ci", "token": WRITER, "access": "read-write"})
    tokens = TokensFile(path)
    assert tokens.find(WRITER) is not None
    _tokens_file(path, {"name": "dash", "token": READER, "access": "read-only"})
    os.utime(path, ns=(1, 1))  # a new signature even within the file system's time resolution
    assert tokens.find(WRITER) is None  # revoked
    assert tokens.find(READER) is not None
    path.write_text("{", encoding="utf-8")
    assert tokens.find(READER) is None
    path.unlink()
    assert tokens.find(READER) is None


@given(st.text(min_size=0, max_size=40))
def test_no_other_string_is_taken_for_a_token(presented: str) -> None:
    tokens = parse_tokens(Path("tokens.json"), json.dumps(
        {"tokens": [{"name": "ci", "token": WRITER, "access": "read-write"}]}).encode())
    digest = hashlib.sha256(presented.encode("utf-8", "surrogateescape")).digest()
    assert (digest == tokens[0].digest) == (presented == WRITER)


# -- what writes at /mcp -------------------------------------------------------------------------


READ_TOOLS = frozenset({"document_read_node", "document_list"})


@pytest.mark.parametrize(("message", "writes"), [
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "document_read_node"}}, False),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "document_update_node"}}, True),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "no_such_tool"}}, True),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/call"}, True),
    ({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, False),
    ({"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "schema://x"}}, False),
    ({"jsonrpc": "2.0", "id": 1, "method": "prompts/get", "params": {"name": "x"}}, False),
    ({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}, False),
    ({"jsonrpc": "2.0", "method": "notifications/initialized"}, False),
    ({"jsonrpc": "2.0", "id": 1, "result": {}}, False),
    ({"jsonrpc": "2.0", "id": 1, "method": "something/new"}, True),
    ([{"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
      {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "document_delete"}}], True),
    ([], True),
    ("text", True),
])
def test_an_mcp_message_writes_unless_it_is_known_to_read(message: Any, writes: bool) -> None:
    assert mcp_message_writes(message, READ_TOOLS) is writes


# -- the layer in front of every door, in process --------------------------------------------------


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Any]:
    stack: list[TestClient] = []

    def make(base_url: str = "http://127.0.0.1:8080", **overrides: Any) -> TestClient:
        settings = Settings(schema_path=BOOK_SCHEMA, storage_dir=tmp_path / f"data{len(stack)}", **overrides)
        client = TestClient(build_app(create_service(settings), settings), base_url=base_url)
        client.__enter__()
        stack.append(client)
        return client

    yield make
    for client in reversed(stack):
        client.__exit__(None, None, None)


def _mcp(client: TestClient, method: str, params: dict[str, Any], **headers: str) -> Any:
    extra = {"mcp-method": method, **({"mcp-name": params["name"]} if "name" in params else {})}
    return client.post("/mcp", content=orjson.dumps({"jsonrpc": "2.0", "id": 7, "method": method,
                                                     "params": {**params, "_meta": META}}),
                       headers={**MODERN, **extra, **headers})


def test_a_foreign_host_is_refused_at_rest_events_mcp_and_docs_with_one_code(make_client: Any) -> None:
    client = make_client()
    foreign = {"host": "evil.example:8080"}
    answers = [client.get("/api/v1/documents", headers=foreign),
               client.post("/api/v1/documents", headers=foreign),
               client.get("/api/v1/documents/01JAAAAAAAAAAAAAAAAAAAAAAA/events", headers=foreign),
               _mcp(client, "tools/list", {}, **foreign),
               client.get("/docs", headers=foreign)]
    assert [answer.status_code for answer in answers] == [421] * 5
    codes = [answer.json()["error"]["code"] for answer in answers[:3] + answers[4:]]
    assert codes == ["host-not-allowed"] * 4
    assert answers[3].json()["error"]["data"]["error"]["code"] == "host-not-allowed"  # JSON-RPC, id unknown
    assert client.get("/api/v1/documents").status_code == 200


def test_a_foreign_origin_is_refused_and_a_listed_one_admitted(make_client: Any) -> None:
    client = make_client(cors_origins=("https://app.example.com",))
    evil = {"origin": "http://evil.example:8080"}
    for answer in (client.post("/api/v1/documents", headers=evil), _mcp(client, "tools/list", {}, **evil)):
        assert answer.status_code == 403
        assert "origin-not-allowed" in answer.text
    listed = client.post("/api/v1/documents", headers={"origin": "https://app.example.com"})
    assert listed.status_code == 201
    assert listed.headers["access-control-allow-origin"] == "https://app.example.com"
    assert client.post("/api/v1/documents", headers={"origin": "http://127.0.0.1:8080"}).status_code == 201


def test_allowed_hosts_admit_a_public_name(make_client: Any) -> None:
    client = make_client(base_url="https://docs.example.com", allowed_hosts=("docs.example.com",))
    assert client.get("/api/v1/documents").status_code == 200
    assert client.get("/api/v1/documents", headers={"host": "127.0.0.1"}).status_code == 421


@pytest.fixture
def guarded(make_client: Any, tmp_path: Path) -> TestClient:
    path = _tokens_file(tmp_path / "tokens.json", {"name": "ci", "token": WRITER, "access": "read-write"},
                        {"name": "dash", "token": READER, "access": "read-only"})
    client: TestClient = make_client(tokens_file=path)
    return client


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def test_with_tokens_a_request_without_one_or_with_a_wrong_one_is_401_with_www_authenticate(
        guarded: TestClient) -> None:
    missing = guarded.get("/api/v1/documents")
    assert (missing.status_code, missing.json()["error"]["code"]) == (401, "token-missing")
    assert missing.headers["www-authenticate"] == 'Bearer realm="schemadoc"'
    wrong = guarded.get("/api/v1/documents", headers=_bearer("x" * 20))
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "token-invalid")
    assert 'error="invalid_token"' in wrong.headers["www-authenticate"]
    basic = guarded.get("/api/v1/documents", headers={"authorization": f"Basic {WRITER}"})
    assert basic.json()["error"]["code"] == "token-missing"
    mcp = _mcp(guarded, "tools/list", {})
    assert (mcp.status_code, mcp.json()["error"]["data"]["error"]["code"]) == (401, "token-missing")


def test_health_and_the_docs_pages_need_no_token(guarded: TestClient) -> None:
    for path in ("/health", "/health/live", "/health/ready", "/docs", "/openapi.json"):
        assert guarded.get(path).status_code == 200, path


def test_a_read_only_token_reads_but_cannot_write_at_rest_or_mcp(guarded: TestClient) -> None:
    created = guarded.post("/api/v1/documents", headers=_bearer(WRITER))
    assert created.status_code == 201
    doc_id = created.json()["doc_id"]
    assert guarded.get(f"/api/v1/documents/{doc_id}", headers=_bearer(READER)).status_code == 200
    refused = guarded.put(f"/api/v1/documents/{doc_id}", params={"path": "/title"},
                          json={"node_data": "x", "version": 1}, headers=_bearer(READER))
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "token-read-only")
    assert 'error="insufficient_scope"' in refused.headers["www-authenticate"]
    listed = _mcp(guarded, "tools/list", {}, **_bearer(READER))
    assert listed.status_code == 200, listed.text
    read = _mcp(guarded, "tools/call",
                {"name": "document_read_node", "arguments": {"doc_id": doc_id, "node_path": "/"}}, **_bearer(READER))
    assert read.status_code == 200
    assert '"isError":true' not in read.text and doc_id in read.text
    write = _mcp(guarded, "tools/call", {"name": "document_update_node",
                                         "arguments": {"doc_id": doc_id, "node_path": "/title", "node_data": "x",
                                                       "version": 1}}, **_bearer(READER))
    assert write.status_code == 403
    body = write.json()
    assert body["id"] == 7 and body["error"]["data"]["error"]["code"] == "token-read-only"
    assert guarded.get(f"/api/v1/documents/{doc_id}", headers=_bearer(READER)).json()["version"] == 1


def test_a_read_only_token_may_check_a_value_an_operation_that_posts_but_only_reads(guarded: TestClient) -> None:
    doc_id = guarded.post("/api/v1/documents", headers=_bearer(WRITER)).json()["doc_id"]
    checked = guarded.post(f"/api/v1/documents/{doc_id}/validate", params={"path": "/title"},
                           json={"node_data": "x"}, headers=_bearer(READER))
    assert (checked.status_code, checked.json()["valid"]) == (200, True)
    moved = guarded.post(f"/api/v1/documents/{doc_id}/move", json={"from_path": "/title", "to_path": "/x",
                                                                   "version": 1}, headers=_bearer(READER))
    assert (moved.status_code, moved.json()["error"]["code"]) == (403, "token-read-only")
    tool = _mcp(guarded, "tools/call", {"name": "document_validate_node", "arguments": {
        "doc_id": doc_id, "node_path": "/title", "node_data": "x"}}, **_bearer(READER))
    assert tool.status_code == 200 and '"isError":true' not in tool.text


# -- settings ------------------------------------------------------------------------------------


def test_access_settings_come_from_flags_environment_and_the_config_file(tmp_path: Path) -> None:
    from schemadoc.config import load_settings

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"tokens_file": "tokens.json", "allowed_hosts": ["Docs.Example.com", "*.internal"]}),
                      encoding="utf-8")
    from_file = load_settings({"config_file": str(config)}, {}, require_schema=False)
    assert from_file.tokens_file == tmp_path / "tokens.json"  # relative to the file
    assert from_file.allowed_hosts == ("docs.example.com", "*.internal")
    assert from_file.unsafe_no_auth is False
    from_env = load_settings({}, {"ALLOWED_HOSTS": "a.example, b.example:8443", "UNSAFE_NO_AUTH": "1"},
                             require_schema=False)
    assert (from_env.allowed_hosts, from_env.unsafe_no_auth) == (("a.example", "b.example:8443"), True)
    assert load_settings({"unsafe_no_auth": True}, {"UNSAFE_NO_AUTH": "0"}, require_schema=False).unsafe_no_auth


@pytest.mark.parametrize(("environ", "setting"), [
    ({"UNSAFE_NO_AUTH": "maybe"}, "unsafe_no_auth"),
    ({"ALLOWED_HOSTS": "http://a.example/"}, "allowed_hosts"),
])
def test_bad_access_settings_are_config_invalid(environ: dict[str, str], setting: str) -> None:
    from schemadoc.config import load_settings

    with pytest.raises(SchemaDocError) as raised:
        load_settings({}, environ, require_schema=False)
    assert (raised.value.code, raised.value.details["setting"]) == ("config-invalid", setting)


# -- hostile inputs: one secret twice, headers that are not exactly one host[:port] -------------------


@pytest.mark.parametrize("second", [{"token": WRITER}, {"sha256": hashlib.sha256(WRITER.encode()).hexdigest()}],
                         ids=["token", "sha256"])
def test_one_secret_listed_twice_is_config_invalid_naming_both_entries(tmp_path: Path, second: dict[str, str]) -> None:
    path = _tokens_file(tmp_path / "tokens.json", {"name": "ci", "token": WRITER, "access": "read-write"},
                        {"name": "dash", **second, "access": "read-only"})
    with pytest.raises(SchemaDocError) as raised:
        TokensFile(path)
    assert raised.value.code == "config-invalid"
    assert "'dash'" in raised.value.message and "'ci'" in raised.value.message
    assert WRITER not in str(raised.value.to_dict()) and second.get("sha256", WRITER) not in raised.value.message


@pytest.mark.parametrize("host", ["[::1]evil.com", "localhost:8080:90", "[::1", "127.0.0.1:99999", "evil.com,localhost",
                                  "localhost:", "a b", "user@localhost", "localhost/x", "[::1]:80x", "[evil.com]"])
def test_a_host_that_is_not_exactly_host_and_port_is_malformed_whatever_the_allowed_hosts(host: str) -> None:
    for policy in (HostPolicy(None, "127.0.0.1"), HostPolicy(("*",), "0.0.0.0")):
        assert policy.admits(host, None) == "malformed-host"
        assert not HostPolicy(None, "127.0.0.1").origin_allowed(f"http://{host}", "127.0.0.1:8080")


def test_well_formed_hosts_are_judged_by_the_allowed_hosts() -> None:
    policy = HostPolicy(None, "127.0.0.1")
    assert [policy.admits(host, None) for host in ("[::1]:8080", "LOCALHOST", "127.0.0.1:65535", "evil.example")] == [
        None, None, None, "host"]
    assert policy.admits("127.0.0.1:8080", "http://[::1]evil.com:8080") == "origin"
    assert policy.admits("127.0.0.1:8080", "http://[::1]:8080") is None


def test_the_api_docs_scripts_and_styles_need_no_token(guarded: TestClient) -> None:
    for name in ("swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js", "favicon.png"):
        assert guarded.get(f"/static/docs/{name}").status_code == 200, name
    posted = guarded.post("/static/docs/swagger-ui.css")
    assert (posted.status_code, posted.json()["error"]["code"]) == (401, "token-missing")


def test_under_a_root_path_mcp_messages_are_still_read_strictly_and_the_pages_still_open(tmp_path: Path) -> None:
    path = _tokens_file(tmp_path / "tokens.json", {"name": "dash", "token": READER, "access": "read-only"})
    settings = Settings(schema_path=BOOK_SCHEMA, storage_dir=tmp_path / "data", tokens_file=path)
    # served under a proxy prefix: the paths arrive with it, as uvicorn --root-path gives them
    with TestClient(build_app(create_service(settings), settings), base_url="http://127.0.0.1:8080",
                    root_path="/prefix") as client:
        nan = client.post("/prefix/mcp", headers={**MODERN, **_bearer(READER), "mcp-method": "tools/call",
                                                  "mcp-name": "document_purge"},
                          content=b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"document_purge",'
                                  b'"arguments":{"doc_id":"01JAAAAAAAAAAAAAAAAAAAAAAA"},"_meta":{"x":NaN}}}')
        css = client.get("/prefix/static/docs/swagger-ui.css")
    assert (nan.status_code, nan.json()["error"]["code"]) == (400, -32700)
    assert css.status_code == 200
