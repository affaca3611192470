"""Every store answers the same filters, sorts, pages and searches alike (docs/search.md): the memory store
(SQLite in memory), the files store (a SQLite file beside the documents) and PostgreSQL (tables beside its
documents; skipped with the reason when no server answers). Each answer is compared with a plain in-memory
evaluation of the same documents (tests/search_reference.py), so "alike" means "right" on every store."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from pg_support import throwaway_schema, url_with_schema
from search_reference import Doc, expected

from schemadoc.errors import SchemaDocError
from schemadoc.ops.journal import JournalEntry, utc_now
from schemadoc.schema import LoadedSchema, load_schema
from schemadoc.search import queries
from schemadoc.search.backends import PostgresBackend, PostgresTransaction
from schemadoc.search.fields import encode_cursor, parse_query
from schemadoc.service import DocumentService
from schemadoc.storage import store_for
from schemadoc.storage.base import DocumentMeta
from schemadoc.storage.files import FileDocumentStore
from schemadoc.storage.memory import MemoryDocumentStore
from schemadoc.storage.postgres import PostgresDocumentStore

BOOK = Path(__file__).resolve().parents[2] / "src" / "schemadoc" / "examples" / "book.schema.json"
STATUSES = ("draft", "review", "published")
WORDS = ("lighthouse", "harbour", "storm", "lantern", "keeper", "island")

Factory = Callable[[], DocumentService]


@pytest.fixture(scope="module")
def schema() -> LoadedSchema:
    return load_schema(BOOK)


@pytest.fixture(params=["memory", "files", "postgres"])
def open_service(request: pytest.FixtureRequest, schema: LoadedSchema, tmp_path: Path) -> Iterator[Factory]:
    """Opens a service on one store; called again, another service on the same documents (a restart)."""
    opened: list[DocumentService] = []
    memory_store: list[Any] = []

    def factory_for(url: str | None) -> Factory:
        def make() -> DocumentService:
            if request.param == "memory":
                if not memory_store:
                    memory_store.append(MemoryDocumentStore())
                store = memory_store[0]
            else:
                store = store_for(tmp_path / "docs", url)
            service = DocumentService(schema, store, memory_budget=1 << 20)
            service.open()
            opened.append(service)
            return service
        return make

    if request.param == "postgres":
        with throwaway_schema() as url:
            yield factory_for(url)
            for service in opened:
                service.close()
        return
    yield factory_for(None)
    for service in opened:
        service.close()


def book(i: int) -> dict[str, Any]:
    word = WORDS[i % len(WORDS)]
    chapter = {"id": "ch-1", "title": f"The {word} chapter",
               "sections": [{"title": "Opening", "paragraphs": [
                   {"text": f"Keeping a {word} lit through the night, part {i}."},
                   {"text": "Tom & Jerry <script>alert(1)</script> met the keeper" if i == 4 else "Nothing else."}]}]}
    metadata: dict[str, Any] = {"language": "en" if i % 3 else "fr", "status": STATUSES[i % 3], "edition": i % 4 + 1}
    if i % 2:
        metadata["keywords"] = [word, f"k{i % 3}"]
    if i % 5 == 0:
        metadata["isbn"] = f"978{i:010d}"
    return {"title": f"Book {i:02d} of the {word}", "metadata": metadata, "chapters": [chapter],
            "tags": [f"t{i % 4}"] if i % 4 else []}


def corpus(service: DocumentService, count: int = 12) -> dict[str, dict[str, Any]]:
    created = {}
    for i in range(count):
        doc_id = service.create_document(book(i))[0]
        created[doc_id] = book(i)
    return created


def reference(service: DocumentService) -> list[Doc]:
    """The live documents as stored (defaults filled in), read without the index."""
    docs = []
    for meta in service.store.list_metas():
        if meta.deleted_at is None:
            content = service.read_document(meta.doc_id)[0]
            docs.append(Doc(meta.doc_id, content, meta.created_at, meta.modified_at, meta.version,
                            service._valid_now(meta)))
    return docs


QUERIES: list[tuple[list[list[Any]], str]] = [
    ([], "created"),
    ([], "-created"),
    ([["/metadata/status", "eq", "draft"]], "created"),
    ([["/metadata/status", "ne", "draft"]], "-modified"),
    ([["/metadata/edition", "ge", 2], ["/metadata/edition", "lt", 4]], "/metadata/edition"),
    ([["/metadata/edition", "in", [1, 4]]], "-/metadata/edition"),
    ([["/metadata/keywords", "eq", "storm"]], "doc_id"),
    ([["/metadata/keywords", "exists", True]], "/metadata/keywords"),
    ([["/metadata/keywords", "eq", "k1"]], "-/metadata/keywords"),  # its second item: not a range of the walk
    ([["/metadata/edition", "gt", 1], ["/metadata/language", "eq", "en"]], "-/metadata/edition"),
    ([["/metadata/isbn", "exists", False]], "-/metadata/isbn"),
    ([["/title", "prefix", "Book 1"]], "/title"),
    ([["/title", "contains", "light"]], "-version"),
    ([["/tags", "eq", "t1"]], "-/tags"),
    ([["version", "ge", 2]], "version"),
    ([["valid", "eq", True], ["/metadata/language", "eq", "fr"]], "valid"),
    ([["doc_id", "prefix", "0"]], "-doc_id"),
    ([["/metadata/status", "eq", 3]], "created"),
]


def test_filters_sorts_and_pages_match_the_plain_evaluation(open_service: Factory) -> None:
    service = open_service()
    contents = corpus(service)
    ids = list(contents)
    service.update_node(ids[1], "/metadata/status", "published", 1)
    service.update_node(ids[2], "/title", "Zz renamed", 1)
    service.delete_document(ids[3], 1)
    for restart in (False, True):
        if restart:
            service = open_service()
        docs = reference(service)
        for where, sort in QUERIES:
            want = expected(docs, where, sort)
            assert [m.doc_id for m in service.list_documents(where=where, sort=sort, limit=1000).documents] == want, (
                where, sort)
            walked, cursor = [], None
            while True:  # pages of 5 by cursor: every document once, in order
                page = service.list_documents(where=where, sort=sort, limit=5, cursor=cursor)
                assert page.total == len(want)
                walked += [m.doc_id for m in page.documents]
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert walked == want, (where, sort)
            offset_page = service.list_documents(where=where, sort=sort, limit=3, offset=2)
            assert [m.doc_id for m in offset_page.documents] == want[2:5]
            _same_in_both_plans(service, where, sort, want)


def _same_in_both_plans(service: DocumentService, where: list[list[Any]], sort: str, want: list[str]) -> None:
    """A listing finds the same documents whether its pages collect the matches then sort them or walk the order's
    index testing each document (a member's order: its sort index, one kind after the other), which plan a page
    takes depending on how many documents match: pages of 2 by cursor, and a page by offset, in each plan."""
    index = service.search_index
    try:
        for plan in (False, True):
            index.walk_plan = plan
            found: list[str] = []
            cursor = None
            while True:
                page = service.list_documents(where=where, sort=sort, limit=2, cursor=cursor)
                assert page.total == len(want)
                found += [m.doc_id for m in page.documents]
                cursor = page.next_cursor
                if cursor is None:
                    break
            assert found == want, (where, sort, plan)
            offset = service.list_documents(where=where, sort=sort, limit=3, offset=2)
            assert [m.doc_id for m in offset.documents] == want[2:5], (where, sort, plan)
    finally:
        index.walk_plan = None


def test_a_filter_on_a_member_not_indexed_is_refused_with_the_indexed_ones(open_service: Factory) -> None:
    service = open_service()
    with pytest.raises(SchemaDocError) as refused:
        service.list_documents(where=[["/chapters/0/title", "eq", "x"]])
    assert refused.value.code == "filter-not-indexed"
    assert "/metadata/status" in refused.value.details["indexed"]
    with pytest.raises(SchemaDocError) as bad_cursor:
        service.list_documents(cursor="not-a-cursor")
    assert bad_cursor.value.code == "invalid-request"
    page = service.list_documents(where=["/metadata/status eq draft"], limit=1)
    if page.next_cursor:
        with pytest.raises(SchemaDocError):  # a cursor is bound to its query
            service.list_documents(where=["/metadata/status eq review"], cursor=page.next_cursor)
    # a cursor is not signed: one made by hand with the query's digest and values not of its order is refused alike
    query = parse_query([], "/title", service.search_members)
    for values in ([1], [9, 0, "", "x"], ["3", 0, "", "x"], [3, [0], "", "x"], [3, 0, {"a": 1}, "x"],
                   [True, 0, "", "x"]):
        with pytest.raises(SchemaDocError) as forged:
            service.list_documents(sort="/title", cursor=encode_cursor(query, values))
        assert forged.value.code == "invalid-request", values
    assert service.list_documents(sort="/title", cursor=encode_cursor(query, [4, 0, "", "x"])).documents == []


def _hits(service: DocumentService, query: str, **options: Any) -> list[tuple[str, str]]:
    found, cursor = [], None
    while True:
        page = service.search(query, limit=3, cursor=cursor, **options)
        found += [(hit.doc_id, hit.pointer) for hit in page.hits]
        cursor = page.next_cursor
        if cursor is None:
            return found


def test_full_text_search_finds_the_same_units_on_every_store(open_service: Factory) -> None:
    service = open_service()
    contents = corpus(service)
    by_index = list(contents)
    lighthouse = {(by_index[i], p) for i in (0, 6)
                  for p in ("/title", "/chapters/0/title", "/chapters/0/sections/0/paragraphs/0/text")}
    assert set(_hits(service, "lighthouse")) == lighthouse
    assert len(_hits(service, "lighthouse")) == len(lighthouse)  # paging repeats nothing
    assert set(_hits(service, "LIGHT*")) == lighthouse
    assert {d for d, _ in _hits(service, '"keeping a storm"')} == {by_index[2], by_index[8]}
    assert _hits(service, '"storm a keeping"') == []
    assert set(_hits(service, "storm night", node_path="/chapters/0/sections")) == {
        (by_index[i], "/chapters/0/sections/0/paragraphs/0/text") for i in (2, 8)}
    assert set(_hits(service, "storm", doc_ids=[by_index[2]])) == {
        (by_index[2], p) for p in ("/title", "/chapters/0/title", "/chapters/0/sections/0/paragraphs/0/text")}
    best = service.search("keeper", limit=1).hits[0]  # the short title beats the longer paragraph
    assert (best.pointer, best.label) == ("/chapters/0/title", "Book 04 of the keeper")
    script = service.search("script").hits[0]
    assert script.snippet == ("Tom &amp; Jerry &lt;<mark>script</mark>&gt;alert(1)&lt;/<mark>script</mark>&gt; met the "
                              "keeper")
    service.delete_document(by_index[0], 1)
    assert {d for d, _ in _hits(service, "lighthouse")} == {by_index[6]}
    service.update_node(by_index[6], "/chapters/0/title", "Renamed", 1)
    assert (by_index[6], "/chapters/0/title") not in _hits(service, "lighthouse")
    assert (by_index[6], "/chapters/0/title") in _hits(service, "renamed")
    service = open_service()  # a restart finds the same
    assert (by_index[6], "/chapters/0/title") in _hits(service, "renamed")
    assert {d for d, _ in _hits(service, "lighthouse")} == {by_index[6]}


def test_a_search_across_every_document_ranks_its_newest_matches_at_most_and_says_so(
        open_service: Factory, monkeypatch: pytest.MonkeyPatch) -> None:
    """queries.RANKED_MATCHES bounds what a search across every document ranks: its most recently indexed matches;
    its answer says so when more match. A search within documents ranks every match, and says nothing."""
    monkeypatch.setattr(queries, "RANKED_MATCHES", 4)
    service = open_service()
    by_index = list(corpus(service))  # "Keeping" in the first paragraph of each of the 12 books
    page = service.search("keeping", limit=20)
    assert page.note is not None and "more than 4 places" in page.note
    assert {d for d, _ in _hits(service, "keeping")} == set(by_index[-4:])
    newest = service.create_document(book(12))[0]
    assert {d for d, _ in _hits(service, "keeping")} == {*by_index[-3:], newest}
    assert service.search("script").note is None  # one match: ranked with no note
    assert service.search("keeping", doc_ids=by_index[:6]).note is None
    assert {d for d, _ in _hits(service, "keeping", doc_ids=by_index[:6])} == set(by_index[:6])
    assert len(_hits(service, "keeping", node_path="/chapters/0/sections")) == 13  # below a pointer: every match
    # within a document, its units written at creation and those of a later edit (indexed last) are all read
    service.update_node(by_index[0], "/chapters/0/title", "Keeping watch", 1)
    assert set(_hits(service, "keeping", doc_ids=[by_index[0]])) == {
        (by_index[0], "/chapters/0/title"), (by_index[0], "/chapters/0/sections/0/paragraphs/0/text")}


@pytest.mark.parametrize("estimate", [1e9, 1.0])
def test_postgres_finds_the_newest_matches_whatever_the_planner_expects(
        open_service: Factory, monkeypatch: pytest.MonkeyPatch, estimate: float) -> None:
    """PostgreSQL ranks the newest matches from a window of the newest units sized from the planner's estimate of the
    matches: far too many expected (a window of a few units, widened again and again up to the matches) or far too
    few (every unit at once), the same units are ranked, as on the other stores."""
    service = open_service()
    if not isinstance(service.store, PostgresDocumentStore):
        pytest.skip("the window of newest units is PostgreSQL's (FTS5 walks its rowids downwards)")
    monkeypatch.setattr(queries, "RANKED_MATCHES", 4)
    monkeypatch.setattr(PostgresBackend, "_estimate", lambda self, tx, tsquery: 1.0 if "zqxj" in tsquery else estimate)
    with_word = list(corpus(service, 8))
    for i in range(8):  # newer units without the word: the first windows hold none of its matches
        service.create_document({"title": f"Plain {i}", "chapters": [
            {"id": "ch-1", "title": "Plain", "sections": [{"title": "S", "paragraphs": [
                {"text": f"Nothing here {i} {n}"} for n in range(6)], "sections": []}]}]})
    service.create_document({"title": "Lit by night", "chapters": [  # the newest units: two words, never a phrase
        {"id": "ch-1", "title": "Lit", "sections": [{"title": "S", "paragraphs": [
            {"text": f"Lit by night {n}"} for n in range(6)], "sections": []}]}]})
    page = service.search("keeping", limit=20)
    assert page.note is not None and "more than 4 places" in page.note
    assert {d for d, _ in _hits(service, "keeping")} == set(with_word[-4:])
    # several words: the window is the rarest one's (here the first: every estimate is the same), the query a filter
    for words in ('"lit through the night"', "night keeping"):
        assert {d for d, _ in _hits(service, words)} == set(with_word[-4:]), words
    never = service.search('"night lit"')  # its words in the newest units, never so: widened to every unit
    assert never.hits == [] and never.note is None
    assert service.search("script").note is None and len(service.search("script").hits) == 1
    assert service.search("absentword").hits == []


def test_postgres_ranks_the_newest_matches_of_a_common_word_in_memory(open_service: Factory) -> None:
    """A search across every document sorts its window of newest matches (2,000 whole units) and holds its bitmap of
    a word's matches within the read's memory (backends._READ_WORK_MEM): at PostgreSQL's default of 4 MB, a word in
    each of 100,000 books sorted on disk with a lossy bitmap (55 ms; 34 ms in memory)."""
    service = open_service()
    if not isinstance(service.store, PostgresDocumentStore):
        pytest.skip("the window of newest units is PostgreSQL's")
    doc_id = service.create_document({"title": "Lamps", "chapters": []})[0]
    service.search_index.sync()
    with service.search_index.backend.transaction() as tx:  # 6,000 units of half a KB each (not TOASTed)
        tx.execute("INSERT INTO search_units (doc_id, pointer, text, words) SELECT ?, '/u/' || g, t, t FROM "
                   "generate_series(1, 6000) g, LATERAL (SELECT 'keeper ' || string_agg(md5(g::text || '.' || k), ' ') "
                   "AS t FROM generate_series(1, 14) k) w", [doc_id])
        tx.execute("ANALYZE search_units")
    statements: list[tuple[str, list[Any]]] = []
    execute = PostgresTransaction.execute

    def recorded(self: PostgresTransaction, sql: str, params: Any = ()) -> Any:
        statements.append((sql, list(params)))
        return execute(self, sql, params)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(PostgresTransaction, "execute", recorded)
        page = service.search("keeper", limit=5)
    assert page.note is not None and "more than 2,000 places" in page.note
    window = next(s for s in statements if "OVER ()" in s[0])
    with service.search_index.backend.transaction(write=False) as tx:
        plan = tx.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + window[0], window[1])[0][0]
    plan = plan if isinstance(plan, list) else orjson.loads(plan)
    sorts = []
    nodes = [plan[0]["Plan"]]
    while nodes:
        node = nodes.pop()
        nodes += node.get("Plans", [])
        if "Sort Space Type" in node:
            sorts.append((node["Sort Method"], node["Sort Space Type"], node["Sort Space Used"]))
    assert sorts and all(space == "Memory" for _, space, _ in sorts), sorts
    assert max(used for _, _, used in sorts) > 4096, sorts  # more than the default's 4 MB of whole units


def test_postgres_summarises_the_block_ranges_its_build_wrote(open_service: Factory, schema: LoadedSchema) -> None:
    """A build at start-up writes units faster than autovacuum summarises their block ranges, and a window of the
    newest units reads every range not summarised: the build summarises them before it serves. It also marks the
    pages of the documents' and members' rows all-visible (a count of a filter then reads its index alone)."""
    service = open_service()
    if not isinstance(service.store, PostgresDocumentStore):
        pytest.skip("block ranges (BRIN) are PostgreSQL's")
    service.close()
    store = store_for(None, url_with_schema(service.store.schema))  # written past any index: the next start builds
    store.open()
    for i in range(24):
        content = {"title": f"Book {i}", "chapters": [{"id": "ch-1", "title": "One", "sections": [
            {"title": "S", "paragraphs": [{"text": f"Paragraph {n} of book {i}: " + " ".join(
                f"w{i}x{n}x{k}" for k in range(40))} for n in range(120)], "sections": []}]}]}
        data = orjson.dumps(content)
        now = utc_now()
        store.create(DocumentMeta(doc_id=f"01K{i:023d}", version=1, schema_uri=schema.base_uri, created_at=now,
                                  modified_at=now, content_size_bytes=len(data)),
                     JournalEntry(version=1, op="create", patch=[{"op": "add", "path": "", "value": content}], at=now,
                                  info={"seq": 0}), data)
    store.close()
    built = open_service()
    assert built.search("w3x7x5").hits[0].doc_id == f"01K{3:023d}"
    with built.search_index.backend.transaction() as tx:
        pages = tx.execute("SELECT pg_relation_size('search_units') / current_setting('block_size')::int")[0][0]
        assert pages >= 2 * 128  # at least two whole ranges of 128 pages
        assert tx.execute("SELECT brin_summarize_new_values('search_units_recent'::regclass)")[0][0] == 0
        for table in ("search_docs", "search_fields"):  # vacuumed (whether a page is all-visible then depends on
            # the oldest transaction open in the database: another test's, or another server's, may hold it back)
            assert tx.execute("SELECT vacuum_count FROM pg_stat_user_tables WHERE relid = ?::regclass",
                              [table])[0][0] >= 1, table


def test_two_servers_writing_one_document_in_turn_index_every_version(open_service: Factory) -> None:
    """Two services on one store (the files store's directory, or one PostgreSQL database; the memory store has
    one service) write one document in turn: each finds every write, its own and the other's."""
    if not isinstance(open_service().store, FileDocumentStore | PostgresDocumentStore):
        pytest.skip("the memory store lives in one service's process: no other process shares it")
    first = open_service()
    second = open_service()
    doc_id = first.create_document(book(1))[0]
    version = 1
    for turn in range(6):
        writer = (first, second)[turn % 2]
        version = writer.update_node(doc_id, "/metadata/status", STATUSES[turn % 3], version).version
        version = writer.update_node(doc_id, "/title", f"Turn{turn} title", version).version
        other = (second, first)[turn % 2]
        version = other.update_node(doc_id, "/tags", [f"t{turn}"], version).version  # from the writer's version
        writer.search_index.sync()  # what each has applied (milliseconds after its writes) is what the other finds
        other.search_index.sync()
        for reader in (first, second):
            hits = reader.search(f"turn{turn}").hits
            assert [(hit.doc_id, hit.pointer) for hit in hits] == [(doc_id, "/title")], (turn, reader is first)
            listed = reader.list_documents(where=[["/metadata/status", "eq", STATUSES[turn % 3]], ["/tags", "eq",
                                                                                                   f"t{turn}"]])
            assert [meta.doc_id for meta in listed.documents] == [doc_id]


def _listed_everything(service: DocumentService, where: list[list[Any]] | None = None,
                       sort: str | None = None) -> tuple[list[Any], int]:
    """Every page of a listing by cursor (pages of 3): the metas listed with their labels, and the total."""
    listed: list[Any] = []
    cursor, totals = None, set()
    while True:
        page = service.list_documents(limit=3, cursor=cursor, where=where, sort=sort)
        listed += [(meta, page.labels.get(meta.doc_id)) for meta in page.documents]
        totals.add(page.total)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert len(totals) == 1, totals  # every page of one listing counts the same documents
    return listed, totals.pop()


def _as_stored(service: DocumentService) -> dict[str, tuple[Any, Any, str | None]]:
    """What the store says of each live document: its meta, the served schema's verdict, its label."""
    found = {}
    for meta in service.store.list_metas():
        if meta.deleted_at is None:
            content = service.read_document(meta.doc_id)[0]
            title = content.get("title") if isinstance(content, dict) else None
            found[meta.doc_id] = (meta, service.current_verdict(meta), title)
    return found


def test_a_listed_page_is_what_the_store_says_of_each_document(open_service: Factory, schema: LoadedSchema) -> None:
    """Each listed document's meta (version, times, size, snapshot version, digest), verdict and label are the
    store's, page after page, after writes, deletes, undeletes and verdicts recorded by a check."""
    service = open_service()
    for i in range(4):  # written past the service: unchecked under the served schema until a check
        doc_id = f"01K{i:023d}"
        content = book(i)
        data = orjson.dumps(content)
        now = utc_now()
        service.store.create(DocumentMeta(doc_id=doc_id, version=1, schema_uri=schema.base_uri, created_at=now,
                                          modified_at=now, content_size_bytes=len(data)),
                             JournalEntry(version=1, op="create", patch=[{"op": "add", "path": "", "value": content}],
                                          at=now, info={"seq": 0}), data)
    service = open_service()  # a restart indexes them
    ids = list(corpus(service, 7))
    service.update_node(ids[0], "/title", "Retitled", 1)
    service.update_node(ids[1], "/metadata/status", "published", 1)
    service.delete_document(ids[2], 1)
    service.delete_document(ids[3], 1)
    service.undelete_document(ids[3])
    service.check_document("01K" + "0" * 23)
    service.check_document(f"01K{1:023d}")

    def check() -> None:
        stored = _as_stored(service)
        for where, sort in (([], "created"), ([], "-modified"), ([["/metadata/status", "ne", "review"]], "/title"),
                            ([["valid", "eq", True]], "-version")):
            listed, total = _listed_everything(service, where, sort)
            selected = {doc_id for doc_id in stored if doc_id in {meta.doc_id for meta, _ in listed}}
            assert total == len(listed) == len(selected), (where, sort)
            for meta, label in listed:
                stored_meta, verdict, title = stored[meta.doc_id]
                assert meta == stored_meta, (where, sort)
                assert service.current_verdict(meta) == verdict
                assert label == title
        everything, total = _listed_everything(service)
        assert total == len(stored) and {meta.doc_id for meta, _ in everything} == set(stored)

    check()
    service.update_node(ids[4], "/title", "Again", 1)
    service.delete_document(ids[5], 1)
    service.check_document(f"01K{2:023d}")
    check()
    check()  # the same listings again (their totals known): still the store's
    service = open_service()  # and after a restart
    check()


def test_totals_follow_every_write_of_this_server_and_another(open_service: Factory) -> None:
    """A listing's total is kept between pages; a write (this service's, or another's on the same directory or
    database) changes what the next page counts."""
    first = open_service()
    ids = list(corpus(first, 6))
    drafts = [["/metadata/status", "eq", "draft"]]
    assert first.list_documents(where=drafts).total == 2
    assert first.list_documents().total == 6
    first.search_index._counts.clear()
    beyond = first.list_documents(offset=100)  # no row to count on: counted apart
    assert (beyond.documents, beyond.total) == ([], 6)
    first.search_index._counts.clear()
    assert first.list_documents(offset=5, where=drafts).total == 2
    first.create_document(book(3))  # a draft
    assert first.list_documents(where=drafts).total == 3
    first.delete_document(ids[0], 1)  # a draft
    assert first.list_documents(where=drafts).total == 2
    assert first.list_documents().total == 6
    if not isinstance(first.store, FileDocumentStore | PostgresDocumentStore):
        return
    second = open_service()
    second.create_document(book(0))
    second.update_node(ids[1], "/metadata/status", "draft", 1)
    second.search_index.sync()
    assert first.list_documents(where=drafts).total == 4
    assert first.list_documents().total == 7
    assert second.list_documents(where=drafts).total == 4


def test_a_prefix_filter_reads_its_range_and_finds_every_text_starting_so(open_service: Factory) -> None:
    """A prefix is answered from the index's range [prefix, the next text after every one starting with it):
    texts whose last characters are the highest code points, or next to the surrogates, are still found."""
    service = open_service()
    titles = ["Book a", "Book b", "Book \U0010ffff", "Book \U0010ffff\U0010ffff", "Book \ud7ff", "Book \ud7ffx",
              "Book \ue000", "Bool", "Booka", "\U0010ffff", "\U0010ffffz"]
    ids = {}
    for i, title in enumerate(titles):
        ids[service.create_document({**book(i), "title": title})[0]] = title
    for prefix in ("Book ", "Book a", "Book \U0010ffff", "Book \ud7ff", "Boo", "\U0010ffff", "Book \ue000"):
        for where in ([["/title", "prefix", prefix]],):
            listed = service.list_documents(where=where, limit=100)
            assert sorted(ids[meta.doc_id] for meta in listed.documents) == sorted(
                t for t in titles if t.startswith(prefix)), prefix
            assert listed.total == sum(t.startswith(prefix) for t in titles)
    first = min(meta.created_at for meta in service.store.list_metas())
    assert service.list_documents(where=[["created", "prefix", first[:4]]]).total == len(titles)


def test_a_nul_in_a_string_is_indexed_on_every_store(open_service: Factory) -> None:
    """PostgreSQL's text holds no NUL: a document's units go in with it as U+FFFD, the others as they are."""
    service = open_service()
    content = book(1)
    content["chapters"][0]["sections"][0]["paragraphs"][0]["text"] = "The lamp\x00post by the quay"
    content["chapters"][0]["title"] = "Quayside\x00lantern"
    doc_id = service.create_document(content)[0]
    found = {(hit.doc_id, hit.pointer) for hit in service.search("quay").hits}
    assert (doc_id, "/chapters/0/sections/0/paragraphs/0/text") in found
    assert [(hit.doc_id, hit.pointer) for hit in service.search("quayside lantern").hits] == [(doc_id,
                                                                                             "/chapters/0/title")]
