"""Backup, restore and moving documents between stores: ``schemadoc export`` and ``schemadoc import``
(``docs/backup.md``).

- :mod:`~schemadoc.archive.format`: the archive (a tar stream of JSON members, a manifest and
  ``SHA256SUMS``), written and read one document at a time, checked whole when read;
- :mod:`~schemadoc.archive.export`: every document of a live store at its current version;
- :mod:`~schemadoc.archive.importing`: an archive into a store, verified before anything is written.
"""

from __future__ import annotations

from schemadoc.archive.export import ExportSummary, export_store
from schemadoc.archive.importing import EXISTING, ImportSummary, import_archive

__all__ = ["EXISTING", "ExportSummary", "ImportSummary", "export_store", "import_archive"]
