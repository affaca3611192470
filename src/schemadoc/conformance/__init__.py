"""The conformance suite as a product: the wire contract's behaviour tests, runnable against any implementation.

``schemadoc-conformance`` (:mod:`schemadoc.conformance.cli`) runs the suite (:mod:`schemadoc.conformance.suite`)
against a REST base URL, an MCP streamable HTTP URL or an MCP server started by a command over stdio, and
reports every contract clause (:mod:`schemadoc.conformance.clauses`) as passed, failed (with the request and
the response that failed) or not applicable. Interface-level: it drives servers over the wire only.
"""
