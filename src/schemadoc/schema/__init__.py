"""The schema a server instance enforces: loading, ``$ref`` checks, node schemas, defaults.

>>> schema = load_schema("schemas/book.schema.json")          # doctest: +SKIP
>>> schema.node_schema(["chapters", "0", "title"])              # doctest: +SKIP
{'type': 'string', 'minLength': 1, 'maxLength': 300}
>>> schema.defaults()["metadata"]                               # doctest: +SKIP
{'language': 'en', 'status': 'draft', 'edition': 1, 'keywords': []}
"""

from __future__ import annotations

from schemadoc.schema.loader import LoadedSchema, load_schema
from schemadoc.schema.nodes import merge_patch_schema_for

__all__ = ["LoadedSchema", "load_schema", "merge_patch_schema_for"]
