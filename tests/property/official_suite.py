"""The official JSON-Schema-Test-Suite (draft 2020-12), taken from the python ``jsonschema`` sdist.

The suite is not published as a package of its own for 2020-12, but python ``jsonschema``'s
source distribution on PyPI carries it under ``json/``. The first use downloads that sdist with
pip (the version installed here, so the files never change under a given lock) and keeps
``json/tests/draft2020-12`` and ``json/remotes`` in ``.cache/json-schema-test-suite/<version>``;
``JSON_SCHEMA_TEST_SUITE`` may point at a checkout of the suite instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Group:
    """One schema of the suite with its instances."""

    name: str                           # file/description, for test ids
    schema: Any
    tests: tuple[tuple[str, Any, bool], ...]   # (description, instance, valid)


def suite_root() -> Path:
    """The suite's root (holding ``tests/draft2020-12`` and ``remotes``), downloading it if needed."""
    given = os.environ.get("JSON_SCHEMA_TEST_SUITE")
    if given:
        return Path(given)
    version = metadata.version("jsonschema")
    root = REPO / ".cache" / "json-schema-test-suite" / version
    if (root / "tests" / "draft2020-12").is_dir():
        return root
    with tempfile.TemporaryDirectory() as scratch:
        command = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--no-binary", ":all:",
                   "--no-build-isolation", f"jsonschema=={version}", "-d", scratch]
        done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
        if done.returncode != 0:  # the build backend is missing: let pip fetch it (slower)
            command.remove("--no-build-isolation")
            done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"cannot download the jsonschema sdist: {done.stderr[-2000:]}")
        (archive,) = Path(scratch).glob("jsonschema-*.tar.gz")
        partial = root.with_name(f"{root.name}.partial-{os.getpid()}")  # parallel test workers each have their own
        with tarfile.open(archive) as tar:
            for member in tar.getmembers():
                parts = Path(member.name).parts
                if len(parts) > 2 and parts[1] == "json" and parts[2] in ("tests", "remotes") and member.isfile():
                    if parts[2] == "tests" and (len(parts) < 4 or parts[3] != "draft2020-12"):
                        continue
                    target = partial.joinpath(*parts[2:])
                    target.parent.mkdir(parents=True, exist_ok=True)
                    source = tar.extractfile(member)
                    assert source is not None
                    target.write_bytes(source.read())
        try:
            partial.rename(root)
        except OSError:  # another process finished first: keep its copy (the same files)
            if not (root / "tests" / "draft2020-12").is_dir():
                raise
            shutil.rmtree(partial, ignore_errors=True)
    return root


def groups(root: Path, *, optional: bool = True) -> list[Group]:
    """Every test group of draft 2020-12 (``optional/`` too unless told), in a stable order."""
    base = root / "tests" / "draft2020-12"
    files = sorted(base.glob("*.json"))
    if optional:
        files += sorted((base / "optional").rglob("*.json"))
    out: list[Group] = []
    for file in files:
        name = file.relative_to(base).as_posix().removesuffix(".json")
        for group in json.loads(file.read_text()):
            tests = tuple((test["description"], test["data"], bool(test["valid"])) for test in group["tests"])
            out.append(Group(f"{name}: {group['description']}", group["schema"], tests))
    return out
