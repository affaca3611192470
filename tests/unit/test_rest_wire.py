"""What the REST door reads from the wire: numbers in a JSON body beyond what the server represents, and the
media type a body must be declared with."""

from __future__ import annotations

import pytest

from schemadoc.errors import SchemaDocError
from schemadoc.interfaces.rest.routes import check_media_type, parse_json


@pytest.mark.parametrize(("number", "reason"), [(b"9" * 4301, "integer too long"),
                                                (b"-" + b"9" * 5000, "integer too long"),
                                                (b"1e999, 123456789012345678901", "number too large")],
                         ids=["4301 digits", "-5000 digits", "1e999"])
def test_a_body_number_the_server_cannot_represent_is_invalid_request(number: bytes, reason: str) -> None:
    with pytest.raises(SchemaDocError) as raised:
        parse_json(b'{"node_data": [' + number + b'], "version": 1}')
    assert (raised.value.code, raised.value.details["argument"], raised.value.details["reason"]) == (
        "invalid-request", "body", reason)


@pytest.mark.parametrize("header", ["application/json", "application/json; charset=utf-8", "APPLICATION/JSON",
                                    "application/merge-patch+json", "application/json-patch+json",
                                    "application/vnd.example.book+json; version=2"])
def test_a_body_declared_as_json_is_read(header: str) -> None:
    check_media_type(header)


@pytest.mark.parametrize("header", [None, "", "text/plain", "text/plain; charset=utf-8",
                                    "application/x-www-form-urlencoded", "multipart/form-data; boundary=x",
                                    "application/xml", "text/json",
                                    "application/jsonp", "application/json+xml", "*/*"])
def test_a_body_not_declared_as_json_is_unsupported_media_type(header: str | None) -> None:
    with pytest.raises(SchemaDocError) as raised:
        check_media_type(header)
    assert (raised.value.code, raised.value.status, raised.value.details["argument"]) == (
        "unsupported-media-type", 415, "Content-Type")
