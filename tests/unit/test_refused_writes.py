"""A refused write says how many violations there are beyond the ones it lists, and how to go on."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_memory_budget import MIB, book, service_with

from schemadoc.errors import SchemaDocError


def test_a_refused_write_says_how_many_violations_there_are_beyond_the_listed_ones(tmp_path: Path) -> None:
    service = service_with(tmp_path, 64 * MIB)
    doc_id, *_ = service.create_document()
    bad = book(0, 1500)
    for paragraph in bad["chapters"][0]["sections"][0]["paragraphs"]:
        paragraph["style"] = "not-a-style"  # 1,500 violations: more than a report lists
    with pytest.raises(SchemaDocError) as caught:
        service.update_node(doc_id, "", bad, 1)
    details = caught.value.details
    assert len(details["violations"]) == 1000
    assert details["violation_count"] == 1500
    assert details["violations_not_listed"] == "500"
    assert "1500 errors" in caught.value.message
    assert caught.value.remediation is not None and "dry_run" in caught.value.remediation
    service.close()
