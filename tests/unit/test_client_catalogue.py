"""``schemadoc.client`` covers the operation catalogue exactly.

Every operation of :data:`schemadoc.operations.catalogue.CATALOGUE` has one method on both clients (sync and
async share it), whose parameters are the operation's arguments as REST spells them (``path`` for
``node_path``), required exactly where a REST request must carry them (the arguments model's required ones, less
those the route assumes a default for); and every method names an operation that exists, or is one of the few
routes beside the catalogue. Which parameter feeds which argument is not read from the names: each method is
called with a marker per parameter and the request it asks for is recorded.
"""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from schemadoc.client import AsyncClient, Client, _operations
from schemadoc.client._operations import Endpoint, Operations
from schemadoc.operations.catalogue import BY_NAME, CATALOGUE

BESIDE_THE_CATALOGUE = {
    "health": "GET /health",
    "read_version": "GET /api/v1/documents/{doc_id}/versions/{version} (a past version, raw)",
    "error_catalog": "GET /api/v1/errors",
}
"""Methods for routes that are not operations: they build their request themselves."""

SPELLING = {"node_path": "path"}
"""How REST, and so the client, names an argument."""

RENAMED = {("document_merge_patch", "merge_patch"): "patch"}
"""Where a method names an argument otherwise (``merge_patch(doc_id, patch, version)``)."""


class Marker(str):
    """Stands for one parameter (the text ``<name>``); survives what a method does to a value before sending it
    (``list(value)``, ``str(value).lower()``, a URL quoted, ``int(value)``)."""

    name: str

    def __new__(cls, name: str) -> Marker:
        marker = super().__new__(cls, f"<{name}>")
        marker.name = name
        return marker

    def __iter__(self) -> Iterator[str]:
        return iter([self])

    def __int__(self) -> int:
        return 0


def _source(value: Any) -> str | None:
    """The parameter a value sent came from."""
    if isinstance(value, Marker):
        return value.name
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], Marker):
        return value[0].name
    if isinstance(value, str) and value.startswith("<") and value.endswith(">"):
        return value[1:-1]
    return None


def _endpoints() -> dict[str, Endpoint[Any, Any]]:
    return {name: value for name, value in vars(Operations).items() if isinstance(value, Endpoint)}


def _parameters(endpoint: Endpoint[Any, Any]) -> list[inspect.Parameter]:
    return list(inspect.signature(endpoint._build).parameters.values())[1:]  # self


def _sends(endpoint: Endpoint[Any, Any], monkeypatch: pytest.MonkeyPatch) -> tuple[str, dict[str, Any]] | None:
    """The operation a method asks ``request`` for and the arguments it gives, or None when it asks for none."""
    asked: list[tuple[str, dict[str, Any]]] = []

    def record(operation: str, /, **given: Any) -> object:
        asked.append((operation, given))
        return object()

    monkeypatch.setattr(_operations, "request", record)
    endpoint._build(None, **{parameter.name: Marker(parameter.name) for parameter in _parameters(endpoint)})
    assert len(asked) <= 1
    return asked[0] if asked else None


def _rest_required(operation: str) -> set[str]:
    entry = BY_NAME[operation]
    route = next(route for route in entry.routes if route.whole is None)
    return {name for name, field in entry.args.model_fields.items() if field.is_required()} - set(route.defaults)


@pytest.fixture(scope="module")
def sent() -> Iterator[dict[str, tuple[str, dict[str, Any]] | None]]:
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield {name: _sends(endpoint, monkeypatch) for name, endpoint in _endpoints().items()}


def test_every_operation_has_one_method_and_every_method_names_one(
        sent: dict[str, tuple[str, dict[str, Any]] | None]) -> None:
    by_operation: dict[str, list[str]] = {}
    for method, request in sent.items():
        if request is None:
            assert method in BESIDE_THE_CATALOGUE, f"{method} sends no catalogue operation"
        else:
            assert request[0] in BY_NAME, f"{method} names {request[0]}, which is no operation"
            by_operation.setdefault(request[0], []).append(method)
    assert {name: methods for name, methods in by_operation.items() if len(methods) > 1} == {}
    assert sorted(set(BY_NAME) - set(by_operation)) == []
    assert sorted(name for name in BESIDE_THE_CATALOGUE if sent.get(name, ()) is not None) == []


@pytest.mark.parametrize("operation", [entry.name for entry in CATALOGUE])
def test_a_method_takes_the_arguments_of_its_operation(
        operation: str, sent: dict[str, tuple[str, dict[str, Any]] | None]) -> None:
    method = next(name for name, request in sent.items() if request is not None and request[0] == operation)
    parameters = {parameter.name: parameter for parameter in _parameters(_endpoints()[method])}
    given = sent[method][1]  # type: ignore[index]
    fed = {"node_path" if argument == "path" else argument: _source(value) for argument, value in given.items()}
    arguments = BY_NAME[operation].args.model_fields
    assert sorted(set(fed) - set(arguments)) == []  # sends nothing the operation does not take
    for argument in arguments:
        expected = RENAMED.get((operation, argument), SPELLING.get(argument, argument))
        assert fed.get(argument) == expected, f"{method}: {argument} is not fed by a parameter {expected}"
    assert sorted(set(parameters) - set(fed.values())) == []  # every parameter is sent
    required = {RENAMED.get((operation, name), SPELLING.get(name, name)) for name in _rest_required(operation)}
    assert {name for name, parameter in parameters.items() if parameter.default is inspect.Parameter.empty} == required


def test_both_clients_have_every_method_with_one_signature() -> None:
    transport = httpx.MockTransport(lambda request: httpx.Response(200, json={}))
    sync = Client(http=httpx.Client(transport=transport, base_url="http://test"))
    asynchronous = AsyncClient(http=httpx.AsyncClient(transport=transport, base_url="http://test"))
    for name, endpoint in _endpoints().items():
        assert getattr(Client, name) is getattr(AsyncClient, name) is endpoint
        expected = inspect.signature(endpoint._build)  # the method as declared (self included: functools.wraps)
        assert inspect.signature(getattr(sync, name)) == inspect.signature(getattr(asynchronous, name)) == expected
    assert sync.health() == {}
    waiting = asynchronous.health()
    assert inspect.isawaitable(waiting)
    waiting.close()  # type: ignore[attr-defined]


def test_a_drift_is_found(monkeypatch: pytest.MonkeyPatch) -> None:
    """The checks above see a parameter that feeds nothing, and an argument no parameter feeds."""
    def stats(self: Any, doc_id: str, *, extra: int | None = None) -> Any:
        return _operations.request("document_stats", doc_id=doc_id)

    request = _sends(Endpoint(stats), monkeypatch)
    assert request is not None
    assert {_source(value) for value in request[1].values()} == {"doc_id"}  # "extra" is sent nowhere

    def undelete(self: Any) -> Any:
        return _operations.request("document_undelete")

    assert _sends(Endpoint(undelete), monkeypatch) == ("document_undelete", {})  # doc_id fed by nothing
