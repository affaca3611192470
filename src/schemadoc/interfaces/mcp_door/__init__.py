"""The MCP door: ``server.py`` (the server and its resources), ``tools.py`` (one tool per catalogue
operation), ``notify.py`` (change notices), ``prompts.py``, ``sessions.py`` (sessions bound to tokens).

Not named ``mcp``: its modules import the MCP SDK (``mcp``), and a package of that name would make
those imports read, to people and to tools (ruff sorts them as first-party), as imports of itself."""
