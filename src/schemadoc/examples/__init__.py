"""The example schemas shipped inside the package: ``schemadoc serve --example NAME``.

Each is a file ``NAME.schema.json`` next to this module, so an installed wheel serves them with
nothing from the source repository.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from schemadoc.errors import SchemaDocError

__all__ = ["example_names", "example_path"]

_SUFFIX = ".schema.json"


def example_names() -> list[str]:
    """The names of the bundled example schemas, sorted."""
    return sorted(entry.name[: -len(_SUFFIX)] for entry in resources.files(__name__).iterdir()
                  if entry.name.endswith(_SUFFIX))


def example_path(name: str) -> Path:
    """The file of the bundled example schema ``name``; ``config-invalid`` naming the choices when there is none."""
    names = example_names()
    if name not in names:
        raise SchemaDocError("config-invalid", f"There is no bundled example schema named {name!r}.",
                             {"setting": "example", "value": name, "allowed": names},
                             remediation=f"Use one of: {', '.join(names)} (schemadoc serve --example lists them).")
    return Path(str(resources.files(__name__).joinpath(name + _SUFFIX)))
