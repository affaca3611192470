"""A real ``schemadoc serve`` process against what a hostile client sends: integers beyond what the server
represents (anywhere: path, query, header, body, an index in a pointer, an MCP argument) and bodies not
declared as JSON.

Every integer is at most a signed 64-bit integer (2^63 - 1): beyond, in a query parameter, a body member,
``If-Match``, ``Last-Event-ID`` or a route's path, is ``invalid-request`` (400) naming the argument, and an
array index beyond it in a node path is ``path-invalid`` (400); never a failure, and nothing changes. A body
must be declared as ``application/json`` or a ``+json`` type, or it is ``unsupported-media-type`` (415) and
nothing happens: a page on another origin cannot write through a no-cors ``text/plain`` fetch.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from http_server import Server

from schemadoc.interfaces.rest.routes import BINDINGS, Binding
from schemadoc.operations.arguments import EXAMPLE_ID

pytestmark = pytest.mark.timeout(180)

BEYOND = str(2**63)
"""One more than the largest integer the server represents."""
HUGE = "9" * 5000
"""Beyond even what Python's int() reads from text (4,300 digits)."""
MODERN = {"mcp-protocol-version": "2026-07-28", "accept": "application/json, text/event-stream",
          "content-type": "application/json"}
META = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
LEGACY = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
NOT_JSON = {"text/plain": b'{"content": {"title": "Blind"}}',
            "application/x-www-form-urlencoded": b'{"content": {"title": "Blind"}}',
            "multipart/form-data; boundary=x":
                b'--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n{}\r\n--x--\r\n',
            "application/xml": b"<content><title>Blind</title></content>",
            "": b'{"content": {"title": "Blind"}}'}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    root = tmp_path_factory.mktemp("hostile")
    running = Server(root / "data", root / "logs")
    try:
        yield running
    finally:
        running.stop()
        assert "Traceback" not in running.stderr, running.stderr[-3000:]  # nothing failed inside


@pytest.fixture
def http(server: Server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=f"{server.url}/api/v1", timeout=60) as client:
        yield client


@pytest.fixture
def doc_id(http: httpx.Client) -> str:
    created = http.post("/documents", json={"content": {"tags": ["a", "b", "c"]}})
    assert created.status_code == 201, created.text
    return str(created.json()["doc_id"])


def _version(http: httpx.Client, doc_id: str) -> int:
    return int(http.get(f"/documents/{doc_id}").json()["version"])


def _count(http: httpx.Client) -> int:
    return int(http.get("/documents", params={"limit": 1}).json()["total_documents"])


def _example(binding: Binding, doc_id: str) -> dict[str, Any]:
    example = binding.operation.examples[0]
    return {name: doc_id if value == EXAMPLE_ID else value for name, value in example.items()}


def _integers(binding: Binding) -> list[str]:
    """The integer arguments of the binding's operation."""
    properties = binding.operation.args.model_json_schema().get("properties", {})
    return [name for name, field in properties.items()
            if any(choice.get("type") == "integer" for choice in field.get("anyOf", [field]))]


def _send(http: httpx.Client, binding: Binding, arguments: dict[str, Any], *, raw: dict[str, str] | None = None,
          headers: dict[str, str] | None = None) -> httpx.Response:
    """The route's request for ``arguments``, each where the route takes it; ``raw``: arguments spelt as given
    (JSON text in a body, text in a query)."""
    route = binding.route
    path = route.path
    params: dict[str, str] = {}
    members: dict[str, bytes] = {}
    spelt = {argument: name for name, (argument, _kind) in binding.query.items()}
    given = {**{name: orjson.dumps(value).decode() for name, value in arguments.items()}, **(raw or {})}
    for name, text in given.items():
        value = arguments.get(name)
        if "{" + name + "}" in path:
            path = path.replace("{" + name + "}", str(value))
        elif name in spelt:
            params[spelt[name]] = value if isinstance(value, str) and name not in (raw or {}) else text
        elif name == "version" and route.version_only_from_header:
            headers = {"if-match": f'"{text}"', **(headers or {})}
        else:
            members[name] = text.encode()
    if route.whole:
        body = members.pop(route.whole, b"{}")
    else:
        body = b"{" + b",".join(orjson.dumps(name) + b":" + text for name, text in members.items()) + b"}"
    content = body if binding.reads_body else None
    sent = {"content-type": route.media_types[0], **(headers or {})} if content is not None else headers
    return http.request(route.method, path, params=params, content=content, headers=sent)


def _refused(response: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert response.status_code == status, (response.request.method, response.request.url, response.text[:500])
    error: dict[str, Any] = response.json()["error"]
    assert error["code"] == code, error
    return error


# -- integers beyond 64 bits -------------------------------------------------------------------------------


@pytest.mark.parametrize("binding", [b for b in BINDINGS if _integers(b)], ids=lambda b: b.operation_id)
def test_an_integer_argument_beyond_64_bits_is_invalid_request_naming_it(http: httpx.Client, doc_id: str,
                                                                         binding: Binding) -> None:
    before = _version(http, doc_id)
    for name in _integers(binding):
        if name == "version" and binding.route.version_only_from_header:
            continue  # If-Match: below
        for number in (BEYOND, HUGE):
            error = _refused(_send(http, binding, _example(binding, doc_id), raw={name: number}), 400,
                             "invalid-request")
            in_body = binding.route.carries(name) == "body"
            named = "body" if in_body and number == HUGE else name  # a 5,000-digit number is refused as it is read
            assert error["details"]["argument"] == named, (name, number[:20], error)
    assert _version(http, doc_id) == before


@pytest.mark.parametrize("binding", [b for b in BINDINGS if b.takes_version], ids=lambda b: b.operation_id)
def test_if_match_beyond_64_bits_is_invalid_request(http: httpx.Client, doc_id: str, binding: Binding) -> None:
    before = _version(http, doc_id)
    arguments = {name: value for name, value in _example(binding, doc_id).items() if name != "version"}
    for number in (BEYOND, HUGE, "0" * 5000 + "1" + "0" * 19):
        for header in (f'"{number}"', f'W/"{number}"', number):
            response = _send(http, binding, arguments, headers={"if-match": header})
            error = _refused(response, 400, "invalid-request")
            assert error["details"]["argument"] == "If-Match", error
    assert _version(http, doc_id) == before


def test_versions_and_event_positions_beyond_64_bits_are_invalid_request(http: httpx.Client, doc_id: str) -> None:
    for number in (BEYOND, HUGE):
        _refused(http.get(f"/documents/{doc_id}/versions/{number}"), 400, "invalid-request")
        for since, last_event_id in ((number, None), (None, number), ("0", number)):
            params = {} if since is None else {"since": since}
            headers = {} if last_event_id is None else {"last-event-id": last_event_id}
            error = _refused(http.get(f"/documents/{doc_id}/events", params=params, headers=headers), 400,
                             "invalid-request")
            assert error["details"]["argument"] == ("since" if last_event_id is None else "Last-Event-ID"), error
    assert http.get(f"/documents/{doc_id}/versions/1").status_code == 200


@pytest.mark.parametrize("sign", ["", "-"], ids=["huge", "minus-huge"])
def test_an_index_beyond_64_bits_is_path_invalid_on_every_route(http: httpx.Client, doc_id: str, sign: str) -> None:
    before = _version(http, doc_id)
    tried = 0
    for binding in BINDINGS:
        paths = [name for name in binding.operation.fields if name.endswith("_path")]
        for name in paths:
            for index in (sign + BEYOND, sign + HUGE):
                arguments = {**_example(binding, doc_id), name: f"/tags/{index}"}
                arguments.pop("doc_ids", None)
                if name == "to_path":
                    arguments["from_path"] = "/tags/0"
                if "version" in arguments:
                    arguments["version"] = before
                _refused(_send(http, binding, arguments), 400, "path-invalid")
                tried += 1
    patch = [{"op": "replace", "path": f"/tags/{sign}{HUGE}", "value": "x"}]
    _refused(http.post(f"/documents/{doc_id}/patch", json={"patch": patch, "version": before}), 400, "path-invalid")
    assert tried >= 28 and _version(http, doc_id) == before  # 14 node-path arguments of the routes, 2 indices


def _modern(server: Server, name: str, arguments: bytes) -> httpx.Response:
    body = (b'{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":' + orjson.dumps(name)
            + b',"arguments":' + arguments + b',"_meta":' + orjson.dumps(META) + b"}}")
    headers = {**MODERN, "mcp-method": "tools/call", "mcp-name": name}
    return httpx.post(f"{server.url}/mcp", content=body, headers=headers, timeout=60)


def _tool_error(response: httpx.Response) -> dict[str, Any]:
    assert response.status_code == 200, response.text[:500]
    text = response.text
    data = text.split("data: ", 1)[1] if text.startswith("event:") else text
    result = orjson.loads(data)["result"]
    assert result["isError"] is True, result
    error: dict[str, Any] = orjson.loads(result["content"][0]["text"])["error"]
    return error


def _legacy_session(server: Server) -> dict[str, str]:
    initialize = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "1"}}}
    opened = httpx.post(f"{server.url}/mcp", content=orjson.dumps(initialize), headers=LEGACY, timeout=60)
    assert opened.status_code == 200, opened.text
    session = {**LEGACY, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    httpx.post(f"{server.url}/mcp", content=b'{"jsonrpc":"2.0","method":"notifications/initialized"}',
               headers=session, timeout=60)
    return session


def _legacy(server: Server, session: dict[str, str], name: str, arguments: bytes) -> httpx.Response:
    body = (b'{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":' + orjson.dumps(name)
            + b',"arguments":' + arguments + b"}}")
    return httpx.post(f"{server.url}/mcp", content=body, headers=session, timeout=60)


def test_mcp_arguments_beyond_64_bits_are_refused_in_both_eras(server: Server, http: httpx.Client,
                                                               doc_id: str) -> None:
    session = _legacy_session(server)
    eras = {"2026-07-28": lambda name, arguments: _modern(server, name, arguments),
            "2025-11-25": lambda name, arguments: _legacy(server, session, name, arguments)}
    for era, call in eras.items():
        update = b'{"doc_id":"%s","node_path":"/title","node_data":"x","version":' % doc_id.encode()
        error = _tool_error(call("document_update_node", update + BEYOND.encode() + b"}"))
        assert (error["code"], error["details"]["argument"]) == ("invalid-request", "version"), (era, error)
        read = b'{"doc_id":"%s","node_path":"/","at_version":%s}' % (doc_id.encode(), BEYOND.encode())
        assert _tool_error(call("document_read_node", read))["details"]["argument"] == "at_version", era
        path = b'{"doc_id":"%s","node_path":"/tags/%s"}' % (doc_id.encode(), HUGE.encode())
        assert _tool_error(call("document_read_node", path))["code"] == "path-invalid", era
        unreadable = call("document_update_node", update + HUGE.encode() + b"}")  # no JSON parser reads it
        assert unreadable.status_code == 400 and b"-32700" in unreadable.content, (era, unreadable.text[:300])
    assert _version(http, doc_id) == 1


# -- bodies not declared as JSON ---------------------------------------------------------------------------


def test_a_no_cors_text_plain_post_creates_nothing(server: Server, http: httpx.Client) -> None:
    """What a page on another localhost port can send without a preflight: a text/plain body (its Origin may be
    refused before; either way nothing is created)."""
    before = _count(http)
    for origin in ({}, {"origin": "http://localhost:1"}):
        for media, body in NOT_JSON.items():
            response = httpx.post(f"{server.url}/api/v1/documents", content=body, timeout=60,
                                  headers={"content-type": media, **origin} if media else origin)
            assert 400 <= response.status_code < 500, (media, origin, response.text)
            if not origin:
                _refused(response, 415, "unsupported-media-type")
    assert _count(http) == before
    # nor a write without a body, which needs no type: a page on another port may read, never write
    foreign = {"origin": "http://localhost:1"}
    bodiless = httpx.post(f"{server.url}/api/v1/documents", headers=foreign, timeout=60)
    _refused(bodiless, 403, "origin-not-allowed")
    assert httpx.get(f"{server.url}/api/v1/documents", headers=foreign, timeout=60).status_code == 200
    own = httpx.post(f"{server.url}/api/v1/documents", headers={"origin": server.url}, timeout=60)
    assert own.status_code == 201, own.text  # the page at /ui, served by this server, writes
    before += 1
    assert _count(http) == before
    # a request without a body needs no type; a JSON body may say so with parameters, or as a +json type
    created = [httpx.post(f"{server.url}/api/v1/documents", timeout=60),  # curl -X POST: no body, no type
               httpx.post(f"{server.url}/api/v1/documents", content=b"", timeout=60,  # curl -d '': an empty form
                          headers={"content-type": "application/x-www-form-urlencoded"}),
               http.post("/documents", content=b"{}", headers={"content-type": "application/json; charset=utf-8"}),
               http.post("/documents", content=b"{}", headers={"content-type": "Application/JSON"}),
               http.post("/documents", content=b"{}", headers={"content-type": "application/vnd.example+json"})]
    assert [response.status_code for response in created] == [201] * len(created), [r.text for r in created]
    doc_id = created[0].json()["doc_id"]
    merged = http.patch(f"/documents/{doc_id}", params={"path": "/"}, content=b'{"title": "Merged"}',
                        headers={"content-type": "application/merge-patch+json", "if-match": '"1"'})
    assert merged.status_code == 200, merged.text
    assert _count(http) == before + len(created)


@pytest.mark.parametrize("binding", [b for b in BINDINGS if b.route.method != "GET"], ids=lambda b: b.operation_id)
def test_a_body_not_declared_as_json_is_415_and_changes_nothing(http: httpx.Client, doc_id: str,
                                                                binding: Binding) -> None:
    arguments = _example(binding, doc_id)
    if "version" in arguments:
        arguments["version"] = 1
    documents = _count(http)
    for media in NOT_JSON:
        body = orjson.dumps({name: value for name, value in arguments.items() if name in binding.body_members})
        route = binding.route
        url = route.path.replace("{doc_id}", doc_id)
        params = {"path": arguments["node_path"]} if "node_path" in arguments else {}
        headers = {"content-type": media} if media else {}
        if route.version_only_from_header:
            headers["if-match"] = '"1"'
        _refused(http.request(route.method, url, params=params, content=body or b"{}", headers=headers), 415,
                 "unsupported-media-type")
    assert _version(http, doc_id) == 1 and _count(http) == documents


@pytest.mark.parametrize("media", [media for media in NOT_JSON if media], ids=lambda media: media.split(";")[0])
def test_mcp_over_http_refuses_a_body_not_declared_as_json_and_changes_nothing(
        server: Server, http: httpx.Client, doc_id: str, media: str) -> None:
    session = _legacy_session(server)
    update = b'{"doc_id":"%s","node_path":"/title","node_data":"Blind","version":1}' % doc_id.encode()
    body = b'{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"document_update_node","arguments":%s%s}}'
    modern = body % (update, b',"_meta":' + orjson.dumps(META))
    answers = [httpx.post(f"{server.url}/mcp", content=modern, timeout=60, headers={
                   **MODERN, "content-type": media, "mcp-method": "tools/call", "mcp-name": "document_update_node"}),
               httpx.post(f"{server.url}/mcp", content=body % (update, b""), timeout=60,
                          headers={**session, "content-type": media})]
    assert [400 <= answer.status_code < 500 for answer in answers] == [True, True], [a.text for a in answers]
    assert _version(http, doc_id) == 1


def test_mcp_over_http_answers_a_body_not_declared_as_json_with_415(server: Server, doc_id: str) -> None:
    session = _legacy_session(server)
    body = b'{"jsonrpc":"2.0","id":6,"method":"tools/list","params":{%s}}'
    answers = [httpx.post(f"{server.url}/mcp", content=body % (b'"_meta":' + orjson.dumps(META)), timeout=60,
                          headers={**MODERN, "content-type": "text/plain", "mcp-method": "tools/list"}),
               httpx.post(f"{server.url}/mcp", content=body % b"", timeout=60,
                          headers={**session, "content-type": "text/plain"})]
    assert [answer.status_code for answer in answers] == [415, 415], [answer.text for answer in answers]
    assert all(b"unsupported-media-type" in answer.content for answer in answers)


def test_a_negative_index_is_one_rule_at_every_route_over_the_wire(http: httpx.Client, doc_id: str) -> None:
    """Reads, replaces, inserts, moves and deletes count a negative index from the end alike (they were half
    supported: read, update and delete took it, create and move refused it); an RFC 6902 patch stays strict;
    the journal holds only concrete indices."""
    def tags() -> list[str]:
        return list(http.get(f"/documents/{doc_id}", params={"path": "/tags"}).json()["node_content"])

    assert http.get(f"/documents/{doc_id}", params={"path": "/tags/-1"}).json()["node_content"] == "c"
    steps = [
        ("PUT", f"/documents/{doc_id}", {"path": "/tags/-1"}, {"node_data": "C"}, ["a", "b", "C"]),
        ("POST", f"/documents/{doc_id}/nodes", {"path": "/tags/-1"}, {"node_data": "x"}, ["a", "b", "x", "C"]),
        ("POST", f"/documents/{doc_id}/move", {}, {"from_path": "/tags/0", "to_path": "/tags/-1"},
         ["b", "x", "a", "C"]),
        ("DELETE", f"/documents/{doc_id}/nodes", {"path": "/tags/-2"}, {}, ["b", "x", "C"]),
    ]
    for method, path, params, body, expected in steps:
        answer = http.request(method, path, params=params, json={**body, "version": _version(http, doc_id)})
        assert answer.status_code in (200, 201), (method, path, answer.text)
        assert tags() == expected, (method, path)
    version = _version(http, doc_id)
    strict = http.post(f"/documents/{doc_id}/patch", json={"version": version, "patch": [
        {"op": "replace", "path": "/tags/-1", "value": "z"}]})
    _refused(strict, 400, "path-invalid")
    assert _version(http, doc_id) == version
    entries = http.get(f"/documents/{doc_id}/history", params={"since": 1}).json()["entries"]
    paths = [operation[key] for entry in entries for operation in entry["patch"] for key in ("path", "from")
             if key in operation]
    assert paths and not any(segment.startswith("-") for path in paths for segment in path.split("/")), paths
