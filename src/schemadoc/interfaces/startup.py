"""The service the settings describe: the schema loaded, the store opened (PostgreSQL or files), the snapshot
policy, limits, memory budget and validation level applied. Shared by the application (``app.py``), the
commands (``cli/``) and whoever builds a server in process; it imports neither FastAPI nor mcp, so that
start-up failures are reported sooner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from schemadoc.config import Settings
from schemadoc.errors import SchemaDocError

if TYPE_CHECKING:
    from schemadoc.service import DocumentService

__all__ = ["create_service"]


def create_service(settings: Settings) -> DocumentService:
    """Load the schema, open the store (PostgreSQL at ``settings.storage_url``, else files in
    ``settings.storage_dir``) and return the ready service.

    Raises the catalogued start-up errors: ``schema-load-failed``, ``schema-resolution-failed``,
    ``storage-write-failed`` (a storage directory that cannot be created or written).
    """
    from schemadoc.schema import load_schema
    from schemadoc.service import DocumentService
    from schemadoc.snapshotter import SnapshotPolicy
    from schemadoc.storage import store_for

    if settings.schema_path is None:
        raise SchemaDocError("schema-load-failed", "No schema is configured.", {"setting": "schema_path"},
                             remediation="Give one with --schema PATH, the SCHEMA_PATH environment variable, "
                                         "or \"schema_path\" in the config file.")
    schema = load_schema(settings.schema_path)
    service = DocumentService(schema, store_for(settings.storage_dir, settings.storage_url),
                              snapshot_policy=SnapshotPolicy.from_settings(settings),
                              max_json_depth=settings.max_json_depth, max_string_length=settings.max_string_length,
                              max_patch_operations=settings.max_patch_operations,
                              memory_budget=settings.memory_budget, validation_level=settings.validation_level,
                              search_fields=settings.search_fields, search_field_depth=settings.search_field_depth)
    if settings.semantic_search:  # the rankings by meaning, when the semantic extra is installed
        from schemadoc.search.hybrid import default_extensions

        service.search_extensions.extend(default_extensions())
    service.open()
    return service
