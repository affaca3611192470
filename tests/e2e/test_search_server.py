"""The search index of a real server survives ``kill -9`` (docs/search.md): each round writes through the REST door,
kills the server with SIGKILL right after the last write was acknowledged (the index applies writes a few
milliseconds later, so some rounds kill it behind), starts it again on the same directory, and asks the filters
and the full-text search: every acknowledged write is found, through the Python client over HTTP."""

from __future__ import annotations

from pathlib import Path

from http_server import Server

from schemadoc.client import Client

ROUNDS = 4
DOCUMENTS = 3


def test_filters_and_search_find_every_acknowledged_write_after_kill_9(tmp_path: Path) -> None:
    storage, logs = tmp_path / "docs", tmp_path / "logs"
    statuses: dict[str, str] = {}
    titles: dict[str, str] = {}
    versions: dict[str, int] = {}
    for round_ in range(ROUNDS):
        server = Server(storage, logs)
        try:
            with Client(server.url) as client:
                # what the rounds before acknowledged is all there
                for status in ("draft", "review", "published"):
                    listed = client.list_documents(where=[f"/metadata/status eq {status}"], limit=1000)
                    assert sorted(d.doc_id for d in listed.documents) == sorted(
                        d for d, s in statuses.items() if s == status), (round_, status)
                for doc_id, title in titles.items():
                    hits = client.search(f'"{title}"', doc_ids=[doc_id]).hits
                    assert [hit.pointer for hit in hits] == ["/title"], (round_, title)
                if round_ == 0:
                    for _ in range(DOCUMENTS):
                        doc_id = client.create_document().doc_id
                        statuses[doc_id], titles[doc_id], versions[doc_id] = "draft", "Untitled", 1
                for n, doc_id in enumerate(sorted(statuses)):
                    status = ("draft", "review", "published")[(round_ + n) % 3]
                    title = f"lighthouse round{round_} book{n}"
                    versions[doc_id] = client.update_node(doc_id, "/metadata/status", status,
                                                          versions[doc_id]).version
                    versions[doc_id] = client.update_node(doc_id, "/title", title, versions[doc_id]).version
                    statuses[doc_id], titles[doc_id] = status, title
        finally:
            server.kill()
    server = Server(storage, logs)
    try:
        with Client(server.url) as client:
            hits = client.search("lighthouse round3").hits
            assert sorted(hit.doc_id for hit in hits) == sorted(statuses)
            assert all("<mark>lighthouse</mark>" in hit.snippet for hit in hits)
            newest = client.list_documents(sort="-version", limit=1)
            assert newest.documents[0].version == max(versions.values())
            assert newest.next_cursor is not None and newest.total_documents == DOCUMENTS
    finally:
        server.stop()
