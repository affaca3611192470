"""Every operation of schemadoc, declared once: arguments, results, the catalogue both doors walk.

- :mod:`~schemadoc.operations.arguments`: one pydantic model per operation's arguments;
- :mod:`~schemadoc.operations.results`: the result bodies both doors return;
- :mod:`~schemadoc.operations.catalogue`: the :class:`Operation` entries; :mod:`~schemadoc.operations.operation`:
  what an entry is and :func:`invoke`, the one call every door makes;
- :mod:`~schemadoc.operations.budget`: how results are fitted to the MCP result budget;
- :mod:`~schemadoc.operations.reference`: ``docs/tools.md``, generated from the catalogue.

Nothing here imports FastAPI or the MCP SDK: the doors (``schemadoc.interfaces``) do.
"""
