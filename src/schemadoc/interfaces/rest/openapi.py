"""The whole OpenAPI document of the REST door, made exact (:func:`refine_openapi`); each route's own parameters and
body come from its arguments model (``routes.py``)."""

from __future__ import annotations

from typing import Any

__all__ = ["refine_openapi"]

_BODY_METHODS = ("post", "put", "patch", "delete")
_EVERYWHERE = {
    413: "request-too-large: a body over max_body_bytes (any request that may carry a body)",
    415: "unsupported-media-type: a body not declared as JSON (Content-Type application/json or a +json type)",
    500: "internal-error, storage-read-failed, storage-write-failed",
}


def refine_openapi(spec: dict[str, Any]) -> None:
    """Make the generated OpenAPI document say exactly what the routes accept and answer.

    - An optional query or header parameter is absent or a string, never JSON ``null``: FastAPI
      writes ``anyOf: [T, {"type": "null"}]`` for ``T | None``, which a client generator reads as
      "send null" (and a fuzzer sends the text ``null``).
    - ``PATCH /documents/{doc_id}`` takes its version only from If-Match: the header is required.
    - Every operation may answer 500 (a storage failure), every one that may carry a body 413
      (the body limit is checked before routing) and 415 (a body not declared as JSON).
    - ``POST /documents`` links to every operation on the new document: its ``doc_id``, and its
      ETag as If-Match where the operation takes one (stateful clients and fuzzers follow them).
    """
    error_body = {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}
    links: dict[str, Any] = {}
    created: dict[str, Any] | None = None
    for operations in spec.get("paths", {}).values():
        for operation in operations.values():
            if operation.get("operationId") == "document_create":
                created = operation.get("responses", {}).get("201")
            names = {(parameter.get("in"), parameter.get("name")) for parameter in operation.get("parameters", ())}
            if ("path", "doc_id") in names and len([n for n in names if n[0] == "path"]) == 1:
                link: dict[str, Any] = {"operationId": operation["operationId"],
                                        "parameters": {"path.doc_id": "$response.body#/doc_id"}}
                if ("header", "if-match") in names:
                    link["parameters"]["header.if-match"] = "$response.header.ETag"
                links[operation["operationId"]] = link
    if created is not None:  # the new document's id (and version, as its ETag) for every operation on it
        created["links"] = links
        created["headers"] = {
            "ETag": {"description": 'The version, quoted: "1".', "required": True,
                     "schema": {"type": "string", "pattern": '^"[1-9][0-9]*"$'}},
            "Location": {"description": "The new document's URL.", "required": True,
                         "schema": {"type": "string"}}}
    for operations in spec.get("paths", {}).values():
        for method, operation in operations.items():
            for parameter in operation.get("parameters", ()):
                schema = parameter.get("schema", {})
                choices = schema.get("anyOf")
                if isinstance(choices, list) and {"type": "null"} in choices:
                    rest = [choice for choice in choices if choice != {"type": "null"}]
                    del schema["anyOf"]
                    if len(rest) == 1:
                        parameter["schema"] = {**rest[0], **schema}
                    else:
                        schema["anyOf"] = rest
                if operation.get("operationId") == "document_merge_patch" and parameter.get("name") == "if-match":
                    parameter["required"] = True
            responses = operation.setdefault("responses", {})
            for status, text in _EVERYWHERE.items():
                if status in (413, 415) and method not in _BODY_METHODS:
                    continue
                responses.setdefault(str(status), {"description": text, "content": error_body})
