"""The search-quality benchmark's harness (benchmarks/search_quality.py) counts what it says: recall at k on
known cases, and a corpus whose paraphrased queries really do not share the words of their section.

These tests judge the measuring instrument, not the quality measured (no threshold on recall).
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

import search_quality as sq

# words too common to carry a topic (a full-text index would match them, but they say nothing of meaning)
_COMMON = {"a", "an", "the", "of", "in", "on", "at", "to", "for", "and", "or", "how", "is", "it", "its", "each",
           "every", "after", "by", "with", "into", "who", "has", "your", "own", "first", "when", "we", "so"}


def words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z]+", text.lower()) if w not in _COMMON}


def test_recall_at_k_on_known_cases() -> None:
    assert sq.recall_at_k([["a", "b", "c"]], [{"c"}], k=3) == 1.0
    assert sq.recall_at_k([["a", "b", "c"]], [{"c"}], k=2) == 0.0
    # two relevant items, one found in the top 2
    assert sq.recall_at_k([["x", "a", "b"]], [{"a", "b"}], k=2) == 0.5
    # an item ranked twice (two hits in one section) is counted once: "c" is the 3rd distinct item
    assert sq.recall_at_k([["a", "a", "b", "b", "c"]], [{"c"}], k=3) == 1.0
    # the mean over queries
    assert sq.recall_at_k([["a"], ["b"], [], ["d", "e"]], [{"a"}, {"a"}, {"a"}, {"e"}], k=5) == 0.5
    assert sq.recall_at_k([], [], k=5) == 0.0
    with pytest.raises(ValueError):
        sq.recall_at_k([["a"]], [], k=5)


def test_a_hit_counts_for_the_section_it_lies_in() -> None:
    assert sq.section_of("/chapters/1/sections/0/paragraphs/0/text") == "/chapters/1/sections/0"
    assert sq.section_of("/chapters/1/sections/0/title") == "/chapters/1/sections/0"
    assert sq.section_of("/chapters/1/title") == "/chapters/1/title"
    assert sq.section_of("/title") == "/title"


def test_measure_reads_the_hits_of_each_mode() -> None:
    corpus = sq.make_corpus(books=3, seed=1)
    ids = ["A", "B", "C"]
    first = corpus.queries[0]

    def search(query: str, mode: str) -> list[tuple[str, str]]:
        if mode == "perfect":
            q = next(q for q in corpus.queries if q.text == query)
            return [("X", "/title"), (ids[q.book], q.section + "/paragraphs/0/text")]
        return [(ids[first.book], first.section + "/title")] if query == first.text else []

    results = sq.measure(search, ids, corpus, ["perfect", "one"])
    assert results["perfect", "all"] == (1.0, [])
    recall, missed = results["one", "all"]
    assert recall == pytest.approx(1 / len(corpus.queries))
    assert len(missed) == len(corpus.queries) - 1 and first.text not in missed


def test_each_target_is_asked_for_once_in_other_words_and_once_in_its_own() -> None:
    corpus = sq.make_corpus()
    assert len(corpus.queries) == 2 * len(sq.TARGETS)
    for target in sq.TARGETS:
        section = words(target.title) | words(target.text)
        assert words(target.paraphrase) & section == set(), target.paraphrase
        assert len(words(target.lexical) & section) >= 2, target.lexical
    for query in corpus.queries:  # the pointer names the section the target was dealt to
        book = corpus.books[query.book]
        _, _, chapter, _, section = query.section.split("/")
        held = book["chapters"][int(chapter)]["sections"][int(section)]
        target = next(t for t in sq.TARGETS if query.text in (t.paraphrase, t.lexical))
        assert held == {"title": target.title, "paragraphs": [{"text": target.text}]}
