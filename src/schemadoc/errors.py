"""The error catalog: every code the server can return, and the one exception that carries it.

Each :class:`ErrorCode` has a stable kebab-case ``code``, the HTTP status it maps to, a
description, typical causes and a remediation. ``docs/errors.md`` is generated from
:data:`CATALOG` (``python -m schemadoc.errors``) and a test fails when they drift apart or
when a raised code is missing from the catalog.

Validation violations use the keyword codes of :data:`KEYWORD_CODES`; the request-level error
that carries them is ``validation-failed``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CATALOG",
    "KEYWORD_CODES",
    "ErrorCode",
    "SchemaDocError",
    "catalog_markdown",
    "keyword_code",
]


@dataclass(frozen=True)
class ErrorCode:
    """One entry of the catalog."""

    code: str
    status: int
    description: str
    causes: tuple[str, ...]
    remediation: str
    kind: str = "request"  # request | document | validation | server
    extension: str = ""
    """Empty for a code the product specification's catalog names; otherwise why this server adds it."""
    keyword: str = ""
    """The Draft 2020-12 keyword a violation code stands for (:data:`KEYWORD_CODES`)."""

    @property
    def in_spec(self) -> bool:
        return not self.extension

    def as_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "status": self.status,
            "category": str(self.status),
            "kind": self.kind,
            "description": self.description,
            "causes": list(self.causes),
            "remediation": self.remediation,
            "origin": "spec" if self.in_spec else "extension",
            **({"extension": self.extension} if self.extension else {}),
        }


def _e(code: str, status: int, kind: str, description: str, causes: list[str], remediation: str,
       extension: str = "") -> ErrorCode:
    return ErrorCode(code, status, description, tuple(causes), remediation, kind, extension)


# Why the codes beyond the specification's catalog exist: each names a situation the
# specification's codes do not cover. Refinements of a covered situation go into details.
_KEYWORD_EXTENSION = ("a Draft 2020-12 keyword the specification's list does not name: one code per keyword "
                      "lets a client act on the violation without parsing its message")


def _keyword(keyword: str, code: str, description: str, causes: list[str], remediation: str, *,
             spec: bool = False) -> ErrorCode:
    """The violation code of one schema keyword: an extension unless the specification names it (``spec``)."""
    return ErrorCode(code, 422, description, tuple(causes), remediation, "validation",
                     "" if spec else _KEYWORD_EXTENSION, keyword)


_ENTRIES: list[ErrorCode] = [
    # -- request errors -------------------------------------------------------------------
    _e("invalid-request", 400, "request", "The request is malformed: a missing or wrongly typed argument.",
       ["an argument has the wrong JSON type", "a required argument is missing", "the body is not JSON"],
       "Send every required argument with the type the tool or endpoint declares.",
       extension=("the specification's catalog has no code for a malformed request (a missing, wrongly typed or "
                  "unknown argument, a body that is not JSON); FR-070h's 400 Bad Request")),
    _e("filter-not-indexed", 400, "request", "A filter or sort names a member the search index does not hold.",
       ["a pointer into the documents that the schema does not make a scalar or an array of scalars",
        "a member deeper than search_field_depth, or left out of the search_fields setting"],
       "Filter on one of details.indexed (or a metadata key of details.metadata), or add the member to the "
       "search_fields setting and restart.",
       extension="filters on document_list go beyond the specification (docs/search.md)"),
    _e("invalid-doc-id", 400, "request", "The doc_id is not a ULID.",
       ["a doc_id that was not returned by document_create", "a typo or truncated id"],
       "Use a doc_id returned by document_create or document_list (26 Crockford base32 characters)."),
    _e("path-invalid", 400, "request", "The JSON Pointer is malformed (RFC 6901).",
       ["the path does not start with '/'", "'~' not followed by 0 or 1",
        "an array index with a leading zero or a sign"],
       "Write the path as an RFC 6901 JSON Pointer: '/' for the root, '~0' for '~', '~1' for '/'."),
    _e("patch-invalid", 400, "request", "The RFC 6902 patch is malformed.",
       ["an operation without 'op' or 'path'", "an unknown 'op'", "'add'/'replace'/'test' without 'value'",
        "'move'/'copy' without 'from'", "moving a node into one of its own children"],
       "Send a JSON array of RFC 6902 operations, each with the members its 'op' requires.",
       extension=("raw RFC 6902 patches (document_apply_patch) go beyond the specification's tools; a malformed "
                  "patch lists each operation's problem in details")),
    _e("root-not-deletable", 400, "request", "The document root cannot be removed.",
       ["document_delete_node with node_path '/' or ''", "a patch 'remove' of the root"],
       "Delete the members you no longer want, or replace the root with document_update_node.",
       extension='deleting the root is neither a missing path nor a schema violation; refusing it up front says why'),
    _e("request-too-large", 413, "request", "The request is larger than a configured limit; nothing was changed.",
       ["a request body bigger than max_body_bytes",
        "a string value, member name or JSON Pointer in node_data, patch or merge_patch longer than "
        "max_string_length characters (details.at is where, inside details.argument)",
        "a patch of more than max_patch_operations operations, or a merge patch that compiles to more"],
       "Split the change into several smaller writes, or raise the setting details.limit names in the "
       "configuration.",
       extension=("request limits (body size, string length, patch operations) are beyond the specification; "
                  "details.limit names the one exceeded, with its value and details.actual")),
    _e("request-too-deep", 400, "request", "The request JSON is nested deeper than the configured limit.",
       ["node_data nested deeper than max_json_depth levels"],
       "Flatten the data, or raise max_json_depth in the configuration.",
       extension=("the nesting limit protects the parser and keeps every stored document readable by the official "
                  "MCP clients")),
    _e("number-out-of-range", 400, "request", "A number cannot be stored exactly (integers must fit in 64 bits).",
       ["an integer below -2^63 or above 2^64 - 1"],
       "Store very large numbers as strings, or keep integers within 64 bits.",
       extension='an integer JSON can carry but the store cannot hold exactly; refusing beats storing it rounded'),
    _e("method-not-allowed", 405, "request", "The HTTP method is not supported on this endpoint.",
       ["a PATCH or DELETE on an endpoint that does not take it"],
       "See /openapi.json for the methods each endpoint takes.",
       extension='HTTP-level: a wrong method on an existing URL'),
    _e("route-not-found", 404, "request", "No endpoint exists at this URL.",
       ["a typo in the URL", "a missing /api/v1 prefix"],
       "See /openapi.json or /docs for the endpoints.",
       extension='HTTP-level: a URL no endpoint answers (document-not-found would wrongly suggest a missing document)'),
    _e("resource-not-found", 404, "request", "No MCP resource exists at this URI.",
       ["an unknown URI scheme or shape", "a document that does not exist"],
       "List the resources with resources/list; documents are at schema://{doc_id}.",
       extension='MCP-level: resources/read of an unknown URI is a JSON-RPC error (-32602), not a tool error'),
    _e("semantic-search-unavailable", 400, "request",
       "The search asked for a ranking by meaning ('semantic' or 'hybrid'), and this server has no semantic extra.",
       ["document_search with ranking 'semantic' or 'hybrid' on a server installed without schemadoc[semantic]"],
       "Search with the 'text' ranking, or install the extra on the server (pip install 'schemadoc[semantic]') "
       "and restart it.",
       extension="semantic search is an optional extra beyond the specification; details name the install "
                 "command"),
    # -- document errors ------------------------------------------------------------------
    _e("document-not-found", 404, "document", "No document with this doc_id exists.",
       ["the doc_id was never created", "the document was deleted"],
       "Check the doc_id with document_list, or create a new document with document_create."),
    _e("path-not-found", 404, "document", "The path does not exist in the document.",
       ["a member that has not been created yet", "an array index out of range",
        "an intermediate member that is missing",
        "schema_get_node for a path the schema does not define (details.deepest_valid_path is the deepest "
        "path it defines, details.allowed what that node allows)"],
       "Read the deepest existing ancestor (details.deepest_ancestor) and create missing members "
       "one level at a time, starting with details.create_first; for a schema path, pick one of "
       "details.allowed under details.deepest_valid_path."),
    _e("conflict", 409, "document", "Something already exists at the target path.",
       ["document_create_node on an existing object member"],
       "Use document_update_node to change existing content, or delete it first."),
    _e("version-conflict", 409, "document", "The document version has changed since it was read.",
       ["another write landed between your read and your write", "a stale or guessed version"],
       "Re-read the node to get the current version (details.actual_version), reapply your change, "
       "and retry with that version."),
    _e("version-not-found", 404, "document", "The document has no such version.",
       ["a version lower than 1 or higher than the current version"],
       "Use document_history to see the versions that exist.",
       extension='history (past versions, diffs, reverts) goes beyond the specification'),
    _e("patch-test-failed", 409, "document", "A 'test' operation of the patch did not match.",
       ["the document changed since the patch was written", "a wrong expected value in the 'test'"],
       "Re-read the node the 'test' checks and rebuild the patch from the current content.",
       extension="an RFC 6902 'test' operation that does not match: the document changed, but no version conflict"),
    _e("document-too-deep", 422, "document", "The write would nest the document deeper than 255 levels.",
       ["deeply recursive content, e.g. sections inside sections hundreds of levels down"],
       "Flatten the structure; nothing was changed.",
       extension=("the write's result, not the request, would nest deeper than the limit (e.g. a shallow value "
                  "added deep down)")),
    _e("lock-timeout", 408, "document", "The document's write lock was not acquired within 10 seconds.",
       ["another write to the same document is taking long", "another process holds the lock"],
       "Retry after a short delay; look for long writes on very large documents."),
    # -- validation errors ----------------------------------------------------------------
    _e("validation-failed", 422, "validation", "The write would make the document invalid; nothing was changed.",
       ["the new content violates one or more schema constraints",
        "a merge patch with values the node's schema refuses, or whose result it refuses (both are listed)"],
       "Fix every violation in details.violations (each has path, constraint, expected and actual), "
       "then retry."),
    _e("required-field-without-default", 422, "validation",
       "The schema has required fields without defaults, so an empty document cannot be created.",
       ["a required property with no 'default' anywhere (on it, behind its $ref, in an allOf member) that is "
        "not an object whose own members can be built from defaults",
        "a required member of an object default that the default does not spell out and that has no default"],
       "Give every field listed in details.paths a default in the schema, or make it optional."),
    _keyword("type", "type-mismatch", "The value has the wrong JSON type.",
       ["a string where a number is expected", "an object where an array is expected"],
       "Convert the value to the type in 'expected'; check with schema_get_node.", spec=True),
    _keyword("required", "required-missing", "A required property is missing.",
       ["an object created or updated without all its required members", "a required member deleted"],
       "Add the missing property named in the violation.", spec=True),
    _keyword("minLength", "min-length", "The string is shorter than minLength.", ["an empty or too short string"],
       "Lengthen the string to at least the expected length.", spec=True),
    _keyword("maxLength", "max-length", "The string is longer than maxLength.", ["a too long string"],
       "Shorten the string to at most the expected length.", spec=True),
    _keyword("pattern", "pattern-failed", "The string does not match the schema's pattern.",
       ["a wrongly formatted identifier or code"], "Format the string to match the regular expression in 'expected'.",
       spec=True),
    _keyword("format", "format-invalid", "The string is not a valid instance of its format.",
       ["a date-time without time zone", "an email without '@'", "a relative URI where 'uri' is required"],
       "Write the value in the format named in 'expected' (RFC 3339 date-time, RFC 5321 email, RFC 3986 uri, …).",
       spec=True),
    _keyword("enum", "enum-mismatch", "The value is not one of the allowed values.",
       ["a misspelt or differently cased value"], "Use exactly one of the values listed in 'expected'.", spec=True),
    _keyword("const", "const-mismatch", "The value is not the one constant the schema allows.",
       ["a different value where the schema fixes one"], "Use the value in 'expected'."),
    _keyword("minimum", "minimum", "The number is below the minimum.", ["a too small number"],
       "Use a number greater than or equal to 'expected'.", spec=True),
    _keyword("maximum", "maximum", "The number is above the maximum.", ["a too large number"],
       "Use a number less than or equal to 'expected'.", spec=True),
    _keyword("exclusiveMinimum", "exclusive-minimum", "The number is not greater than exclusiveMinimum.",
       ["a number equal to or below the bound"], "Use a number strictly greater than 'expected'."),
    _keyword("exclusiveMaximum", "exclusive-maximum", "The number is not less than exclusiveMaximum.",
       ["a number equal to or above the bound"], "Use a number strictly less than 'expected'."),
    _keyword("multipleOf", "multiple-of", "The number is not a multiple of multipleOf.",
       ["a number off the allowed step"], "Round the number to a multiple of 'expected'."),
    _keyword("minItems", "min-items", "The array has fewer items than minItems.",
       ["deleting the last items of an array that must not be empty"], "Keep at least 'expected' items.", spec=True),
    _keyword("maxItems", "max-items", "The array has more items than maxItems.", ["appending to a full array"],
       "Remove items so that at most 'expected' remain.", spec=True),
    _keyword("uniqueItems", "unique-items", "The array has duplicate items but uniqueItems is true.",
       ["appending a value that is already present"], "Remove the duplicates."),
    _keyword("contains", "contains-failed", "No item of the array matches the 'contains' schema.",
       ["an array missing a required kind of item"], "Add an item that matches the 'contains' schema."),
    _keyword("minContains", "min-contains", "Too few items match the 'contains' schema.",
       ["fewer matching items than minContains"], "Add matching items until there are 'expected'."),
    _keyword("maxContains", "max-contains", "Too many items match the 'contains' schema.",
       ["more matching items than maxContains"], "Remove matching items until at most 'expected' remain."),
    _keyword("minProperties", "min-properties", "The object has fewer members than minProperties.",
       ["deleting members of an object that must keep some"], "Keep at least 'expected' members."),
    _keyword("maxProperties", "max-properties", "The object has more members than maxProperties.",
       ["adding a member to a full object"], "Remove members so that at most 'expected' remain."),
    _keyword("additionalProperties", "additional-properties-forbidden",
       "The object has members the schema does not allow (additionalProperties: false).",
       ["a misspelt member name", "a member from another part of the schema"],
       "Remove the members listed in 'actual'; see schema_get_node for the allowed members.", spec=True),
    _keyword("unevaluatedProperties", "unevaluated-properties",
       "The object has members no subschema evaluated (unevaluatedProperties).",
       ["a member not declared by any applicable subschema"], "Remove the members listed in 'actual'."),
    _keyword("unevaluatedItems", "unevaluated-items", "The array has items no subschema evaluated (unevaluatedItems).",
       ["extra items beyond prefixItems/items/contains"], "Remove the extra items."),
    _keyword("items", "items-forbidden", "The array has items beyond prefixItems where items is false.",
       ["a tuple with too many items"], "Remove the items after the last prefixItems position."),
    _keyword("propertyNames", "property-names", "A member name does not satisfy propertyNames.",
       ["a member name with forbidden characters or length"],
       "Rename the member to satisfy the propertyNames schema."),
    _keyword("dependentRequired", "dependent-required", "A member requires other members that are missing.",
       ["a member present without the members dependentRequired lists for it"],
       "Add the members listed in 'expected', or remove the member that requires them."),
    _keyword("oneOf", "one-of-failed", "The value matches none, or more than one, of the oneOf alternatives.",
       ["a value fitting no alternative", "a value fitting several alternatives at once"],
       "Make the value match exactly one alternative; the violation lists why each one failed."),
    _keyword("anyOf", "any-of-failed", "The value matches none of the anyOf alternatives.",
       ["a value fitting no alternative"], "Make the value match at least one alternative."),
    _keyword("not", "not-failed", "The value matches a schema it must not match ('not').",
       ["a value the schema explicitly excludes"], "Change the value so that it no longer matches the 'not' schema."),
    _keyword("falseSchema", "false-schema", "The schema allows nothing here (the schema is false).",
       ["a member or item where the schema says false"], "Remove the value at this path."),
    _e("schema-constraint", 422, "validation", "A schema constraint without a more specific code failed.",
       ["a keyword added by a newer draft or a custom vocabulary"],
       "Read the message and the schema at 'schema_path'.",
       extension='a keyword with no specific code (newer drafts, custom vocabularies)'),
    # -- server errors --------------------------------------------------------------------
    _e("schema-load-failed", 500, "server", "The JSON Schema could not be loaded.",
       ["no schema configured", "the file is missing or unreadable", "the file is not JSON",
        "the schema is not a valid Draft 2020-12 schema"],
       "Point --schema / SCHEMA_PATH at a readable Draft 2020-12 schema; details list each problem."),
    _e("schema-resolution-failed", 500, "server", "A $ref in the schema cannot be resolved.",
       ["a $ref to a missing $defs entry or file", "a pure reference cycle (A -> B -> A)"],
       "Fix the $ref named in details; a cycle needs a real schema between its references."),
    _e("config-invalid", 500, "server", "The configuration is invalid.",
       ["the config file is not JSON", "a value of the wrong type", "an unknown log level"],
       "Fix the setting named in details; flags override environment variables, which override the file.",
       extension="start-up settings other than the schema (the specification's schema-load-failed covers the schema)"),
    _e("storage-read-failed", 500, "server", "A document could not be read from storage.",
       ["a missing or corrupt content, meta or journal file", "file system permissions"],
       "Check the files named in details; `schemadoc replay DOC_ID` rebuilds a document from its journal."),
    _e("storage-write-failed", 500, "server", "A document could not be written to storage.",
       ["disk full", "permissions", "the storage directory is not writable"],
       "Check free space and permissions of the storage directory; nothing was changed."),
    _e("too-many-subscribers", 503, "server",
       "The document, or the server, already has as many change subscribers as it is configured to serve.",
       ["more than max_subscribers_per_document event streams (REST SSE) and MCP resource subscriptions "
        "following one document", "more than max_subscribers_total of them across all documents"],
       "Close a subscription you no longer need, or retry later (a slot frees when a subscriber disconnects), "
       "or raise the setting details.limit names; existing subscribers are not affected.",
       extension=("a capacity limit on live change feeds, beyond the specification; 503 because the refusal is "
                  "about the server's load, not about the request, and a retry can succeed once a slot frees")),
    _e("subscriber-too-slow", 503, "server", "A change subscriber fell further behind than the server buffers for "
       "it, so its stream was ended; nothing was lost.",
       ["an event-stream reader (or MCP subscriber) that reads slower than the document changes, more than "
        "subscriber_buffer_bytes of unread change events"],
       "Reconnect with Last-Event-ID (details.last_version, the last version delivered) to resume without a gap, "
       "or read the change feed (GET /api/v1/changes) from there.",
       extension=("back-pressure on live change feeds, beyond the specification: a slow reader is cut off with a "
                  "resumable position instead of being buffered in memory")),
    _e("too-many-connections", 503, "server", "The server already holds as many HTTP connections, in total or from "
       "this client address, as it is configured to.",
       ["more than max_connections_per_client open connections from one client address",
        "more than max_connections open connections in total"],
       "Close idle connections (reuse one with keep-alive), or retry later, or raise the setting details.limit "
       "names.",
       extension=("a bound on connections per client and in total, beyond the specification, so one client cannot "
                  "take every connection the server can hold")),
    _e("headers-too-large", 431, "request", "The request line and headers are larger than the server reads.",
       ["request headers (cookies, tokens, many custom headers) over max_header_bytes in total"],
       "Send smaller headers, or raise max_header_bytes.",
       extension="a header size limit, beyond the specification; 431 Request Header Fields Too Large (RFC 6585)"),
    _e("request-timeout", 408, "request", "The client took too long to send its request; the connection is "
       "closed.",
       ["request headers not complete within header_timeout_seconds of their first byte",
        "a request body with no new bytes for body_timeout_seconds"],
       "Send the whole request promptly; raise header_timeout_seconds or body_timeout_seconds for very slow links.",
       extension="read timeouts on partial requests, beyond the specification; 408 Request Timeout (RFC 9110)"),
    _e("unsupported-media-type", 415, "request", "The request body is not declared as JSON; nothing was changed.",
       ["a body sent with a Content-Type other than application/json or a +json type (text/plain, a form, "
        "multipart, XML), or with none"],
       "Send the body with 'Content-Type: application/json'.",
       extension=("415 Unsupported Media Type (RFC 9110) for bodies not declared as JSON: browsers send text/plain "
                  "and forms across origins without a preflight, so they are never read as JSON")),
    _e("session-not-found", 404, "request", "No MCP session with this Mcp-Session-Id is open for the credential "
       "presented.",
       ["a session that ended or expired", "a session opened with another access token (a session is usable and "
        "deletable only with the token that opened it)"],
       "Start a new session (initialize) with your own token.",
       extension=("MCP sessions over HTTP are bound to the access token that opened them, beyond the "
                  "specification; the JSON-RPC error carries the error object in its data")),
    _e("too-many-sessions", 503, "server", "The server already has as many MCP sessions open as it is configured "
       "to serve.",
       ["more than max_mcp_sessions handshake-era MCP sessions (streamable HTTP) open at once"],
       "End sessions you no longer use (HTTP DELETE with Mcp-Session-Id), retry later (idle sessions expire after "
       "mcp_session_idle_seconds), or raise max_mcp_sessions.",
       extension=("a capacity limit on MCP sessions over HTTP, beyond the specification; the JSON-RPC error "
                  "carries the error object in its data")),
    _e("storage-unavailable", 503, "server", "The document store cannot be reached right now; nothing was read or "
       "changed.",
       ["the PostgreSQL server is down, restarting or unreachable", "PostgreSQL refuses the login (a changed "
        "password, a dropped role, pg_hba.conf)", "PostgreSQL refuses new connections (too many clients)"],
       "Retry after the number of seconds in the Retry-After header (details.retry_after_seconds); the server "
       "reconnects by itself once the database accepts connections. GET /health/ready reports the cause.",
       extension=("the specification's storage codes describe a document that cannot be read or written; this is "
                  "the whole store being out of reach for a while, which a client should retry rather than "
                  "report (503 with Retry-After)")),
    _e("commit-outcome-unknown", 503, "server", "The connection to the store was lost while a write was being "
       "committed: it may or may not have happened.",
       ["the PostgreSQL server stopped, restarted or dropped the connection during the commit"],
       "Read the document's version once the store answers again: if it is details.version the write happened, "
       "if it is still details.expected_version it did not and can be sent again.",
       extension=("a write whose outcome cannot be known (the commit was sent, its answer lost); "
                  "storage-write-failed would wrongly say that nothing was changed")),
    _e("host-not-allowed", 421, "request", "The request's Host header names a host this server does not answer for.",
       ["a web page on another site reaching a local server through DNS rebinding",
        "a reverse proxy that does not pass the public host name through",
        "the server's allowed_hosts does not list the name clients use"],
       "Reach the server by a name in allowed_hosts (details.allowed_hosts), or add the name with --allowed-hosts / "
       "ALLOWED_HOSTS.",
       extension=("protection against DNS rebinding, which the specification leaves to the deployment; 421 "
                  "Misdirected Request as the MCP SDK answers")),
    _e("origin-not-allowed", 403, "request", "The request's Origin header names a web origin this server does not "
       "admit.",
       ["a web page on another site calling the server from a browser",
        "an origin that is neither the server's own, a name in allowed_hosts, nor in cors_origins"],
       "Serve the calling page from an allowed host, or add its origin to cors_origins (CORS_ORIGINS or the "
       "config file).",
       extension="protection against cross-site requests from browsers, which the specification leaves to the "
                 "deployment"),
    _e("token-missing", 401, "request", "The request carries no access token, and this server requires one.",
       ["no Authorization header", "an Authorization header that is not 'Bearer <token>'"],
       "Send 'Authorization: Bearer <token>' with a token from the server's tokens file.",
       extension="access tokens (tokens_file), which the specification leaves to an external layer"),
    _e("token-invalid", 401, "request", "The access token is not one this server accepts.",
       ["a mistyped token", "a token removed from the tokens file (revoked)", "a token of another server"],
       "Ask the server's operator for a valid token; the tokens file is re-read when it changes.",
       extension="access tokens (tokens_file), which the specification leaves to an external layer"),
    _e("token-read-only", 403, "request", "The access token is read-only and the request writes.",
       ["a write (REST POST/PUT/PATCH/DELETE, an MCP tool that is not read-only) with a read-only token"],
       "Use a read-write token for writes.",
       extension="access tokens (tokens_file), which the specification leaves to an external layer"),
    _e("shutting-down", 503, "server", "The server is stopping: it no longer accepts requests, and event streams "
       "are ended; nothing was changed.",
       ["a request that arrived after the server received SIGTERM (or SIGINT)",
        "an event stream or MCP subscription open while the server stopped"],
       "Retry against the restarted server (or another one on the same storage); an event stream resumes without "
       "a gap with Last-Event-ID (details.last_version).",
       extension="a clean stop with in-flight writes finished, which the specification does not describe"),
    _e("store-format-unsupported", 500, "server", "The storage was written by a newer schemadoc whose store format "
       "this server does not know.",
       ["starting an older schemadoc on a storage directory (or database) a newer one upgraded"],
       "Run the newer schemadoc (or restore a backup taken before the upgrade).",
       extension="a recorded store format version, so upgrades have something to migrate from"),
    _e("archive-invalid", 400, "request", "The archive given to import is not a schemadoc archive, or it is damaged.",
       ["a file that is not an archive written by schemadoc export", "a checksum that does not match (a truncated "
        "or altered file)", "an archive of a newer format"],
       "Export again with schemadoc export; an archive is imported only whole, so nothing was changed.",
       extension="export and import of every document with its history, beyond the specification"),
    _e("import-conflict", 409, "request", "Documents of the archive already exist in the store, and the import was "
       "told to stop on them.",
       ["importing a backup into the store it was taken from, or twice", "--existing fail (the default)"],
       "Nothing was changed. Say what to do with them: --existing skip keeps the stored ones, --existing replace "
       "puts the archive's in their place (details.doc_ids lists the first of them).",
       extension="export and import of every document with its history, beyond the specification"),
    _e("migration-invalid", 400, "request", "The migration given to migrate-documents cannot be run as written; "
       "nothing was changed.",
       ["a patch template that is not an RFC 6902 patch (wildcards `*` aside)", "a merge patch that is not an "
        "object", "a module:function that cannot be imported or is not callable", "no name for the migration",
        "for one document: the function raised, or returned something that is not JSON (that document is left as "
        "it is; the others go on)"],
       "Fix the migration file (docs/schema-changes.md, 'schemadoc migrate-documents') and run it again.",
       extension="named document migrations after a schema change, which the specification leaves out of scope"),
    _e("internal-error", 500, "server", "An unexpected error happened in the server.",
       ["a bug"], "Report it with the request that caused it; the server log has the details."),
]

CATALOG: dict[str, ErrorCode] = {entry.code: entry for entry in _ENTRIES}

# Draft 2020-12 assertion keyword -> violation code.
KEYWORD_CODES: dict[str, str] = {entry.keyword: entry.code for entry in _ENTRIES if entry.keyword}


def keyword_code(keyword: str) -> str:
    """The violation code for a schema keyword (``schema-constraint`` when none is specific)."""
    return KEYWORD_CODES.get(keyword, "schema-constraint")


@dataclass
class SchemaDocError(Exception):
    """A catalogued error: what every layer raises and every door translates.

    ``details`` is JSON-serialisable data that lets the caller act without parsing the
    message (the requested path, the current version, every validation violation, …).
    """

    code: str
    message: str
    details: dict[str, Any] = field(default_factory=dict)
    remediation: str | None = None

    def __post_init__(self) -> None:
        if self.code not in CATALOG:
            raise ValueError(f"error code {self.code!r} is not in the catalog")
        Exception.__init__(self, f"{self.code}: {self.message}")

    @property
    def entry(self) -> ErrorCode:
        return CATALOG[self.code]

    @property
    def status(self) -> int:
        return self.entry.status

    def to_dict(self) -> dict[str, Any]:
        """The wire form shared by MCP and REST: ``{"error": {...}}``."""
        return {
            "error": {
                "code": self.code,
                "category": str(self.status),
                "message": self.message,
                "details": self.details,
                "remediation": self.remediation or self.entry.remediation,
            }
        }

    def __str__(self) -> str:
        return f"{self.code}: {self.message}"

    def __hash__(self) -> int:
        return id(self)


def catalog_markdown() -> str:
    """``docs/errors.md``: the catalog as a page."""
    lines = [
        "# Error codes",
        "",
        "Generated from `src/schemadoc/errors.py` by `python -m schemadoc.errors > docs/errors.md`;",
        "do not edit by hand. Every error has the same shape on MCP and REST:",
        "",
        "```json",
        '{"error": {"code": "version-conflict", "category": "409", "message": "...",',
        '           "details": {"expected_version": 5, "actual_version": 7}, "remediation": "..."}}',
        "```",
        "",
        "Validation failures are `validation-failed` with `details.violations`: one entry per",
        "violation, each with `code` (one of the validation codes below), `message`, `path`,",
        "`constraint`, `expected`, `actual` and `schema_path`.",
        "",
        "The *origin* column says whether the product specification's error catalog names the code",
        "(`spec`) or this server adds it (`extension`). A code is added only for a situation the",
        "specification's codes do not cover; a refinement of a covered situation goes into `details`",
        "(a path the schema does not define is `path-not-found` with `details.deepest_valid_path` and",
        "`details.allowed`; a refused merge patch is `validation-failed` listing every violation).",
        "Each extension's section says why it exists. `schema://errors` (MCP) carries the same",
        "`origin` and `extension` members.",
        "",
        "| code | HTTP | kind | origin | description |",
        "|---|---|---|---|---|",
    ]
    for entry in _ENTRIES:
        origin = "spec" if entry.in_spec else "extension"
        lines.append(f"| `{entry.code}` | {entry.status} | {entry.kind} | {origin} | {entry.description} |")
    lines.append("")
    for entry in _ENTRIES:
        lines += [f"## `{entry.code}`", "", f"HTTP {entry.status} ({entry.kind}). {entry.description}", ""]
        if entry.extension:
            lines += [f"Extension: {entry.extension}.", ""]
        lines.append("Causes:")
        lines += [f"- {cause}" for cause in entry.causes]
        lines += ["", f"Remediation: {entry.remediation}", ""]
    keywords = ", ".join(f"`{k}` → `{v}`" for k, v in KEYWORD_CODES.items())
    lines += ["## Schema keywords and their codes", "", keywords, ""]
    return "\n".join(lines)


if __name__ == "__main__":  # pragma: no cover - generator entry point
    print(catalog_markdown(), end="")
