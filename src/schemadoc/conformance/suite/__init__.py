"""The conformance suite: one set of behaviour tests run through every door (REST, MCP) of any server."""
